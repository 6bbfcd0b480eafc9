package container

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Pinned is an image identified by its content. Its String is what a key
// holds; the other fields say where it came from and how to fetch it.
type Pinned struct {
	// Ref is the reference as it was resolved (a tag, or a digest), the
	// name Moved compares.
	Ref string `json:"ref"`
	// Repo is the repository, fully qualified
	// ("index.docker.io/library/python", "127.0.0.1:5000/tool"); empty for
	// a Local pin.
	Repo string `json:"repo,omitempty"`
	// Digest is "sha256:<hex>": the manifest's (or index's) digest, or the
	// engine's image ID for a Local pin.
	Digest string `json:"digest"`
	// Local says that no registry holds the image: Digest is an image ID
	// in one engine's store.
	Local bool `json:"local,omitempty"`
	// Insecure says that the image is pulled from a loopback registry
	// without TLS verification (see InsecureLoopback). It is not part of
	// the identity.
	Insecure bool `json:"insecure,omitempty"`
}

// String is the pin's identity: "repo@sha256:…", or for a Local pin the
// image ID "sha256:…". It is also what Run hands the engine.
func (p Pinned) String() string {
	if p.Local || p.Repo == "" {
		return p.Digest
	}
	return p.Repo + "@" + p.Digest
}

func (p Pinned) describe() string {
	if p.Local {
		return "local image " + p.Digest
	}
	return p.Digest
}

// Moved reports whether cur, a new resolve of the reference prev was
// resolved from, names other content; msg then says
// "tag X moved from A to B". Pins of different references never moved.
func Moved(prev, cur Pinned) (msg string, moved bool) {
	if prev.Ref != cur.Ref || prev.String() == cur.String() {
		return "", false
	}
	return fmt.Sprintf("tag %s moved from %s to %s", cur.Ref, prev.describe(), cur.describe()), true
}

// LocalImages is an engine's image store as Resolve sees it: the image ID
// ("sha256:<hex>") it holds under a reference. *Engine is one.
type LocalImages interface {
	ImageID(ctx context.Context, ref string) (string, error)
}

// Option configures Resolve.
type Option func(*resolveOptions)

type resolveOptions struct {
	local    LocalImages
	keychain authn.Keychain
	rt       http.RoundTripper
	insecure bool
}

// WithLocal makes Resolve pin an image no registry holds by its ID in
// images (an Engine).
func WithLocal(images LocalImages) Option {
	return func(o *resolveOptions) { o.local = images }
}

// WithKeychain authenticates to registries with k (anonymous by default).
func WithKeychain(k authn.Keychain) Option {
	return func(o *resolveOptions) { o.keychain = k }
}

// WithTransport sends registry requests through rt (http.DefaultTransport
// by default).
func WithTransport(rt http.RoundTripper) Option {
	return func(o *resolveOptions) { o.rt = rt }
}

// InsecureLoopback allows plain HTTP, and pulls without TLS verification,
// for registries on loopback hosts (127.0.0.0/8, ::1, localhost): a test
// registry, or a registry mirror on this machine. Other hosts are not
// affected.
func InsecureLoopback() Option {
	return func(o *resolveOptions) { o.insecure = true }
}

// Resolve pins ref to the content it names now (see the package comment):
// a digest as given, a tag through its registry, or, failing that, the
// image ID in the engine given by WithLocal. The error says why each way
// failed.
func Resolve(ctx context.Context, ref string, opts ...Option) (Pinned, error) {
	var o resolveOptions
	for _, opt := range opts {
		opt(&o)
	}
	p, regErr := resolveRemote(ctx, ref, o)
	if regErr == nil {
		return p, nil
	}
	if ctx.Err() != nil {
		return Pinned{}, fmt.Errorf("resolve %s: %w", ref, ctx.Err())
	}
	if o.local == nil {
		return Pinned{}, fmt.Errorf("resolve %s: %w", ref, regErr)
	}
	id, localErr := o.local.ImageID(ctx, ref)
	if localErr != nil {
		return Pinned{}, fmt.Errorf("resolve %s: not in a registry (%v) nor in the engine (%v)", ref, regErr, localErr)
	}
	return Pinned{Ref: ref, Digest: id, Local: true}, nil
}

func resolveRemote(ctx context.Context, ref string, o resolveOptions) (Pinned, error) {
	var nameOpts []name.Option
	insecure := false
	if o.insecure {
		r, err := name.ParseReference(ref)
		if err != nil {
			return Pinned{}, err
		}
		if isLoopback(r.Context().RegistryStr()) {
			nameOpts, insecure = append(nameOpts, name.Insecure), true
		}
	}
	r, err := name.ParseReference(ref, nameOpts...)
	if err != nil {
		return Pinned{}, err
	}
	p := Pinned{Ref: ref, Repo: r.Context().Name(), Insecure: insecure}
	if d, ok := r.(name.Digest); ok {
		p.Digest = d.DigestStr()
		return p, nil
	}
	ropts := []remote.Option{remote.WithContext(ctx)}
	if o.keychain != nil {
		ropts = append(ropts, remote.WithAuthFromKeychain(o.keychain))
	}
	if o.rt != nil {
		ropts = append(ropts, remote.WithTransport(o.rt))
	}
	desc, headErr := remote.Head(r, ropts...)
	if headErr == nil {
		p.Digest = desc.Digest.String()
		return p, nil
	}
	// Some registries refuse HEAD on manifests; GET is what a pull does.
	full, err := remote.Get(r, ropts...)
	if err != nil {
		if err.Error() == headErr.Error() {
			return Pinned{}, err
		}
		return Pinned{}, errors.Join(headErr, err)
	}
	p.Digest = full.Digest.String()
	return p, nil
}

// isLoopback reports whether a registry host[:port] is this machine.
func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
