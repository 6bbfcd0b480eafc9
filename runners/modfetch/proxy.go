// Package modfetch fetches Go modules as the go command's modfetch does:
// the module proxy protocol (https:// and file:// proxies, chained as
// GOPROXY chains them), version resolution against a date, and verified
// downloads (the checksum database, module zip rules). It knows nothing of
// Go source beyond go.mod; the environment it works in is passed in (Env),
// never read from the process.
package modfetch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
)

// Info is a version's .info document.
type Info struct {
	Version string
	Time    time.Time
}

// ErrNotFound is a proxy's 404 or 410: the proxy does not have it.
var ErrNotFound = errors.New("not found")

// Proxy is a chain of module proxies as GOPROXY lists them. With ","
// between entries the next one is tried only when a proxy does not have
// the module (404/410); with "|" also after any other error, as the go
// command does. "direct" (fetching from version control) is not supported:
// lacuna resolves through proxies only.
type Proxy struct {
	entries []proxyEntry
	client  *http.Client
}

type proxyEntry struct {
	base          string // https://... or file:///...
	fallOnAnyFail bool   // "|" after this entry
}

// Env is the environment module fetching works in, under the names the
// go command gives it. The zero value is the go command's defaults. The
// caller fills it (the CLI, from the process environment); this package
// reads no environment variables.
type Env struct {
	Proxy   string // GOPROXY; "" is https://proxy.golang.org,direct
	SumDB   string // GOSUMDB; "" is sum.golang.org, "off" checks nothing
	NoSumDB string // GONOSUMDB; "" falls back to Private
	Private string // GOPRIVATE
}

// NewProxy builds the proxy chain of env.Proxy (default: the go
// command's, https://proxy.golang.org,direct).
func NewProxy(env Env) (*Proxy, error) {
	v := env.Proxy
	if v == "" {
		v = "https://proxy.golang.org,direct"
	}
	return ParseGOPROXY(v)
}

// ParseGOPROXY parses a GOPROXY value.
func ParseGOPROXY(v string) (*Proxy, error) {
	p := &Proxy{client: &http.Client{Timeout: 60 * time.Second}}
	for v != "" {
		i := strings.IndexAny(v, ",|")
		entry, sep := v, byte(0)
		if i >= 0 {
			entry, sep, v = v[:i], v[i], v[i+1:]
		} else {
			v = ""
		}
		entry = strings.TrimSpace(entry)
		switch {
		case entry == "":
		case entry == "off":
			p.entries = append(p.entries, proxyEntry{base: "off"})
		case entry == "direct":
			// Not supported; a chain that ends in direct ends here.
		case strings.HasPrefix(entry, "https://"), strings.HasPrefix(entry, "http://"), strings.HasPrefix(entry, "file://"):
			p.entries = append(p.entries, proxyEntry{base: strings.TrimSuffix(entry, "/"), fallOnAnyFail: sep == '|'})
		default:
			return nil, fmt.Errorf("GOPROXY entry %q: want an https://, http:// or file:// URL, direct or off", entry)
		}
	}
	if len(p.entries) == 0 {
		return nil, errors.New("GOPROXY names no proxy lacuna can use (direct mode is not supported): set GOPROXY to a module proxy")
	}
	return p, nil
}

// get fetches a path under a module's proxy directory, trying the chain.
func (p *Proxy) get(ctx context.Context, mod, rest string) ([]byte, error) {
	esc, err := module.EscapePath(mod)
	if err != nil {
		return nil, fmt.Errorf("module path %q: %w", mod, err)
	}
	var last error = ErrNotFound
	for _, e := range p.entries {
		if e.base == "off" {
			return nil, fmt.Errorf("%s: module lookup disabled by GOPROXY=off", mod)
		}
		b, err := p.fetch(ctx, e.base+"/"+esc+"/"+rest)
		if err == nil {
			return b, nil
		}
		last = err
		if !errors.Is(err, ErrNotFound) && !e.fallOnAnyFail {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%s/%s: %w", mod, rest, last)
}

func (p *Proxy) fetch(ctx context.Context, u string) ([]byte, error) {
	if strings.HasPrefix(u, "file://") {
		pu, err := url.Parse(u)
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(filepath.FromSlash(pu.Path))
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", u, ErrNotFound)
		}
		return b, err
	}
	var last error
	for attempt := 0; attempt < 4; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(1<<attempt) * 250 * time.Millisecond):
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		resp, err := p.client.Do(req)
		if err != nil {
			last = err
			continue
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 512<<20))
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
			return nil, fmt.Errorf("%s: %w", u, ErrNotFound)
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			last = fmt.Errorf("%s: %s", u, resp.Status)
			continue
		case resp.StatusCode != http.StatusOK:
			return nil, fmt.Errorf("%s: %s", u, resp.Status)
		case err != nil:
			last = err
			continue
		}
		return b, nil
	}
	return nil, last
}

// List returns the module's tagged versions as the proxy lists them.
func (p *Proxy) List(ctx context.Context, mod string) ([]string, error) {
	b, err := p.get(ctx, mod, "@v/list")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out, nil
}

// Info returns a version's time.
func (p *Proxy) Info(ctx context.Context, mod, version string) (Info, error) {
	ev, err := module.EscapeVersion(version)
	if err != nil {
		return Info{}, err
	}
	b, err := p.get(ctx, mod, "@v/"+ev+".info")
	if err != nil {
		return Info{}, err
	}
	var info Info
	if err := json.Unmarshal(b, &info); err != nil {
		return Info{}, fmt.Errorf("%s@%s .info: %w", mod, version, err)
	}
	return info, nil
}

// Mod returns a version's go.mod.
func (p *Proxy) Mod(ctx context.Context, mod, version string) ([]byte, error) {
	ev, err := module.EscapeVersion(version)
	if err != nil {
		return nil, err
	}
	return p.get(ctx, mod, "@v/"+ev+".mod")
}
