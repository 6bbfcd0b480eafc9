package container

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Kind is which engine's command line an Engine speaks.
type Kind string

const (
	Podman Kind = "podman"
	Docker Kind = "docker"
)

// Engine is a container engine's command-line client. It is immutable and
// safe for concurrent use; make one with NewEngine.
type Engine struct {
	kind Kind
	path string
	args []string
}

// Runner runs a container to completion. *Engine is one.
type Runner interface {
	Run(ctx context.Context, spec Spec) (Result, error)
}

var (
	_ Runner      = (*Engine)(nil)
	_ LocalImages = (*Engine)(nil)
)

// EngineOption configures NewEngine.
type EngineOption func(*Engine)

// WithArgs adds global arguments that precede every subcommand, such as
// podman's --runtime=runc or --root.
func WithArgs(args ...string) EngineOption {
	return func(e *Engine) { e.args = append(e.args, args...) }
}

// WithKind says which command line the client speaks when its name does
// not (a docker-compatible wrapper around podman, say).
func WithKind(k Kind) EngineOption {
	return func(e *Engine) { e.kind = k }
}

// NewEngine finds a container engine's client: name is "" (podman on PATH,
// else docker), "podman" or "docker" (looked up on PATH), or a path to
// either client, whose base name tells which unless WithKind does.
func NewEngine(name string, opts ...EngineOption) (*Engine, error) {
	e := &Engine{}
	var err error
	switch {
	case name == "":
		for _, k := range []Kind{Podman, Docker} {
			if e.path, err = exec.LookPath(string(k)); err == nil {
				e.kind = k
				break
			}
		}
		if e.path == "" {
			return nil, errors.New("container: neither podman nor docker is on PATH")
		}
	default:
		if e.path, err = exec.LookPath(name); err != nil {
			return nil, fmt.Errorf("container: engine %s: %w", name, err)
		}
		base := filepath.Base(e.path)
		switch {
		case strings.HasPrefix(base, "podman"):
			e.kind = Podman
		case strings.HasPrefix(base, "docker"):
			e.kind = Docker
		}
	}
	for _, o := range opts {
		o(e)
	}
	if e.kind != Podman && e.kind != Docker {
		return nil, fmt.Errorf("container: cannot tell whether %s is podman or docker (say so with WithKind)", e.path)
	}
	return e, nil
}

// Kind is the command line the engine speaks.
func (e *Engine) Kind() Kind { return e.kind }

// Path is the client's executable.
func (e *Engine) Path() string { return e.path }

var imageID = regexp.MustCompile(`^(sha256:)?([0-9a-f]{64})$`)

// ImageID is the ID ("sha256:<hex>") of the image the engine's store holds
// under ref, which may be a short name the engine completes.
func (e *Engine) ImageID(ctx context.Context, ref string) (string, error) {
	out, err := e.output(ctx, "image", "inspect", "--format", "{{.Id}}", ref)
	if err != nil {
		return "", err
	}
	m := imageID.FindStringSubmatch(strings.TrimSpace(out))
	if m == nil {
		return "", fmt.Errorf("%s image inspect %s: not an image ID: %q", e.kind, ref, out)
	}
	return "sha256:" + m[2], nil
}

// output runs a short engine command and returns its stdout; the error
// carries its stderr.
func (e *Engine) output(ctx context.Context, args ...string) (string, error) {
	if e == nil || e.path == "" {
		return "", errors.New("container: engine not set up (use NewEngine)")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, e.path, append(append([]string{}, e.args...), args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", e.kind, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
