package pyenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// UVVersion is the uv that BootstrapUV installs: the newest on PyPI when
// this was written (0.13.9, uploaded 2026-11-17).
const UVVersion = "0.13.9"

// UV is the uv installer. Resolution is `uv pip compile --format
// pylock.toml --exclude-newer` for the base interpreter, wheels first
// (--only-binary :all:, and only when that fails, sdists allowed: uv has
// no --prefer-binary); the lock takes each distribution's files that uv
// lists for this interpreter (the wheels that fit it, else the sdist).
// Installation is `uv pip sync --require-hashes` of those files.
type UV struct {
	bin     string
	version string // "uv 0.13.9"
	cache   string
	env     []string
	client  *http.Client
}

var _ Installer = (*UV)(nil)

// NewUV uses the uv executable at bin, caching its downloads in cache.
func NewUV(ctx context.Context, bin, cache string, py *Python, opt Options) (*UV, error) {
	env := py.environ
	if opt.CertFile != "" {
		env = append(append([]string(nil), env...), "SSL_CERT_FILE="+opt.CertFile)
	}
	out, err := run(ctx, env, "", bin, "--version")
	if err != nil {
		return nil, fmt.Errorf("pyenv: uv --version: %w", err)
	}
	f := strings.Fields(string(out)) // uv 0.13.9 (x86_64-unknown-linux-gnu)
	if len(f) < 2 || f[0] != "uv" {
		return nil, fmt.Errorf("pyenv: uv --version said %q", out)
	}
	client, err := httpClient(opt.CertFile)
	if err != nil {
		return nil, err
	}
	return &UV{bin: bin, version: "uv " + f[1], cache: cache, env: env, client: client}, nil
}

// BootstrapUV installs uv UVVersion from index (the default index when
// empty) into dir/uv-VERSION with `python -m venv` and that venv's pip,
// unless it is there already, and returns it with its cache in
// dir/uv-cache. It needs the index to be reachable (PyPI, or a mirror
// holding uv's wheel).
func BootstrapUV(ctx context.Context, dir, index string, py *Python, opt Options) (*UV, error) {
	if index == "" {
		index = DefaultIndex
	}
	venv := filepath.Join(dir, "uv-"+UVVersion)
	bin := filepath.Join(venv, "bin", "uv")
	// The uv executable is self-contained: moving its venv is fine.
	err := toolVenv(ctx, venv, py, func(python string) error {
		args := []string{"-m", "pip", "install", "--quiet", "--no-cache-dir", "--index-url", index, "--only-binary", ":all:", "uv==" + UVVersion}
		if opt.CertFile != "" {
			args = append(args, "--cert", opt.CertFile)
		}
		if _, err := run(ctx, py.environ, filepath.Dir(python), python, args...); err != nil {
			return fmt.Errorf("install uv %s from %s: %w", UVVersion, index, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pyenv: bootstrap uv: %w", err)
	}
	return NewUV(ctx, bin, filepath.Join(dir, "uv-cache"), py, opt)
}

// NewInstaller is the default installer: uv (bootstrapped into dir from
// index), or pip when uv cannot be had; then fallback says why.
func NewInstaller(ctx context.Context, dir, index string, py *Python, opt Options) (inst Installer, fallback error, err error) {
	uv, uerr := BootstrapUV(ctx, dir, index, py, opt)
	if uerr == nil {
		return uv, nil, nil
	}
	pip, err := NewPip(ctx, dir, py, opt)
	if err != nil {
		return nil, uerr, err
	}
	return pip, uerr, nil
}

func (u *UV) String() string { return u.version }

func (u *UV) common(index string) []string {
	return []string{"--index-url", index, "--cache-dir", u.cache, "--no-config", "--quiet"}
}

// pylock is the part of a pylock.toml (PEP 751) read, as JSON.
type pylock struct {
	Packages []struct {
		Name    string   `json:"name"`
		Version string   `json:"version"`
		Sdist   *pyFile  `json:"sdist"`
		Wheels  []pyFile `json:"wheels"`
	} `json:"packages"`
}

type pyFile struct {
	URL    string            `json:"url"`
	Name   string            `json:"name"`
	Hashes map[string]string `json:"hashes"`
}

const tomlToJSON = `import json, sys, tomllib
json.dump(tomllib.load(sys.stdin.buffer), sys.stdout, default=str)`

func (u *UV) resolve(ctx context.Context, py *Python, spec Spec, work string) ([]Package, error) {
	in := filepath.Join(work, "requirements.in")
	if err := os.WriteFile(in, []byte(spec.Name+"=="+spec.Version+"\n"), 0o644); err != nil {
		return nil, err
	}
	out := filepath.Join(work, "pylock.toml")
	// uv applies --exclude-newer itself; the loopback index applies it
	// too, so that files with no upload time are dropped as under pip,
	// and records what the upstream index answered.
	ix, err := startCutoffIndex(spec.index(), spec.ExcludeNewer, u.client)
	if err != nil {
		return nil, err
	}
	defer ix.Close()
	args := append([]string{"pip", "compile", in, "-o", out, "--format", "pylock.toml", "--python", py.Path, "--no-header"},
		u.common(ix.URL())...)
	if !spec.ExcludeNewer.IsZero() {
		args = append(args, "--exclude-newer", spec.ExcludeNewer.UTC().Format("2006-01-02T15:04:05Z"))
	}
	wheelsOnly := true
	if _, err := run(ctx, u.env, work, u.bin, append(args, "--only-binary", ":all:")...); err != nil {
		wheelsOnly = false
		if _, err := run(ctx, u.env, work, u.bin, args...); err != nil {
			return nil, indexError(fmt.Sprintf("pyenv: resolve %s with %s", spec, u), err, ix)
		}
	}
	f, err := os.Open(out)
	if err != nil {
		return nil, fmt.Errorf("pyenv: resolve %s: %w", spec, err)
	}
	defer f.Close()
	cmd := []string{"-I", "-c", tomlToJSON}
	js, err := runStdin(ctx, py.environ, f, py.Path, cmd...)
	if err != nil {
		return nil, fmt.Errorf("pyenv: resolve %s: read uv's pylock.toml: %w", spec, err)
	}
	var l pylock
	if err := json.Unmarshal(js, &l); err != nil {
		return nil, fmt.Errorf("pyenv: resolve %s: uv's pylock.toml: %w", spec, err)
	}
	var pkgs []Package
	for _, p := range l.Packages {
		files := p.Wheels
		if len(files) == 0 && !wheelsOnly && p.Sdist != nil {
			files = []pyFile{*p.Sdist}
		}
		pkg := Package{Name: Normalize(p.Name), Version: p.Version}
		for _, f := range files {
			if h := f.Hashes["sha256"]; h != "" {
				pkg.SHA256 = append(pkg.SHA256, h)
				name := f.Name
				if name == "" {
					name = path.Base(f.URL)
				}
				pkg.Files = append(pkg.Files, name)
			}
		}
		pkgs = append(pkgs, pkg)
	}
	return pkgs, nil
}

func (u *UV) install(ctx context.Context, lock *Lock, index, target, work string) error {
	req := filepath.Join(work, "requirements.txt")
	if err := os.WriteFile(req, []byte(requirements(lock)), 0o644); err != nil {
		return err
	}
	ix, err := startCutoffIndex(index, time.Time{}, u.client)
	if err != nil {
		return err
	}
	defer ix.Close()
	args := append([]string{"pip", "sync", req, "--python", target, "--require-hashes", "--compile-bytecode"}, u.common(ix.URL())...)
	if _, err := run(ctx, u.env, work, u.bin, args...); err != nil {
		return indexError("uv pip sync", err, ix)
	}
	return nil
}
