// Package pyenv is what the Python node families share: the interpreter,
// the installer and the index that environments for PyPI releases are made
// with (runners/pyenv), the store's Python cache ("python": the
// environments under envs/DIGEST, their locks under locks/DIGEST, the
// installers and their caches; see Open for what deleting them costs) and
// the sandbox a library's code runs in, resolved once per execution and
// pinned (nodes.Resolver), the way nodes/goenv does it for Go. Its
// functions are safe for concurrent use.
//
// What it reads of the run's environment (nodes.Resolve.Getenv):
//
//   - LACUNA_PYTHON: the base interpreter environments are made from (a
//     path, or a name looked up in the run's PATH); default python3.
//   - LACUNA_PY_INSTALLER: "uv" (bootstrapped into the cache from the
//     index; an error when that fails), "pip" (the interpreter's bundled
//     pip), or empty: uv, else pip (the fallback is logged).
//   - PIP_INDEX_URL, UV_INDEX_URL, UV_DEFAULT_INDEX: the index (Index).
//   - SSL_CERT_FILE: the certificate authorities to trust, when set.
//   - LACUNA_PY_UNSANDBOXED=1: run library code outside the sandbox when
//     the sandbox cannot mount the environments (see Resolve); without it
//     Resolve fails instead.
//
// The key holds the interpreter (implementation, exact version,
// platform), the installer's name and version, the sandbox and the index
// URL (without its credentials): an environment's lock depends on what
// the index serves, and the locks themselves cannot be in the key (see
// Resolve).
//
// A library's code (its import-time code, its examples) is untrusted: it
// runs in the sandbox (runners/sandbox) with the environment and the base
// interpreter's installation mounted read-only, no network, an empty
// /work of its own and, when lacuna runs as root, uid 65534 with no
// capabilities (sandbox.Spec.MountAsRoot, so an interpreter under a private
// /root can be mounted). It cannot write the host's file system, reach
// the network, read lacuna's environment or see host paths beyond the
// system's directories, the environment and the interpreter. Without
// bubblewrap it has resource limits only (the sandbox's Warning is
// logged).
package pyenv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lacuna-dev/lacuna/nodes"
	rpyenv "github.com/lacuna-dev/lacuna/runners/pyenv"
	"github.com/lacuna-dev/lacuna/runners/pypi"
	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// Index is the index a user's installer uses: PIP_INDEX_URL, then
// UV_INDEX_URL, then UV_DEFAULT_INDEX (uv's newer name), else pypi.org.
// version_resolve reads releases from it and environments install from
// it.
func Index(getenv func(string) string) string {
	for _, k := range []string{"PIP_INDEX_URL", "UV_INDEX_URL", "UV_DEFAULT_INDEX"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return pypi.DefaultIndex
}

// IndexID is index as a key holds it: without the user name and password
// a URL may carry (https://user:token@host/simple), which must not reach
// the store's action entries.
func IndexID(index string) string {
	u, err := url.Parse(index)
	if err != nil || u.User == nil {
		return index
	}
	u.User = nil
	return u.String()
}

// Python is what a Python node runs on, fixed by Resolve and handed to
// Run with From.
type Python struct {
	// Cache makes and holds the environments (its Python and Installer
	// are the pinned ones).
	Cache *rpyenv.Cache
	// Index is the index environments are resolved and installed from.
	Index string
	// Sandbox runs a library's code; Limits are the node's.
	Sandbox *sandbox.Sandbox
	Limits  sandbox.Limits
	// Unsandboxed says why library code runs outside the sandbox (as a
	// tool of lacuna's user: resource limits, a wall clock and a minimal
	// environment only; the user opted in with LACUNA_PY_UNSANDBOXED=1);
	// "" when it runs inside. See Resolve.
	Unsandboxed string
	// Fallback says why pip is used when uv was asked for by default and
	// could not be had; nil otherwise.
	Fallback error
}

// Resolve prepares the store's Python cache for r's node and pins the
// interpreter, the installer and the sandbox that runs library code under
// lim (the node's limits): the identity holds "python" (cpython 3.11.7
// linux-x86_64), "installer" (uv 0.13.9, pip 23.2.1), "index" (IndexID),
// "sandbox" and "sandbox.*" (sandbox.Identity). Environments themselves
// are resolved in Run (Environment): their releases come from the node's
// inputs, which nodes.Resolve does not expose (the engine also resolves
// before the inputs exist, when it plans), so their locks cannot be in the
// key; the key holds the inputs' digests, and each environment is
// resolved as of its release's own time, so the same input, interpreter,
// installer and index give the same lock as long as the index keeps
// serving the same files for that day. What it does not pin: an index
// that later removes, yanks or replaces a file of a past day (the rows
// record each environment's lock digest, so such a drift shows there).
//
// When the sandbox cannot run the environments (the store or the
// interpreter under /tmp, which is the sandbox's own; or, without
// bubblewrap as root, paths uid 65534 cannot reach) Resolve fails, saying
// why, unless LACUNA_PY_UNSANDBOXED=1: then library code runs as a tool
// of lacuna's user, with its network and file system, and "sandbox" is
// "none".
func Resolve(ctx context.Context, r nodes.Resolve, lim sandbox.Limits) (*nodes.Pinned, error) {
	dir, err := r.CacheDir("python")
	if err != nil {
		return nil, err
	}
	opt := rpyenv.Options{Environ: r.Environ(), CertFile: r.Getenv("SSL_CERT_FILE")}
	exe, err := interpreter(r.Getenv)
	if err != nil {
		return nil, err
	}
	py, err := rpyenv.FindPython(ctx, exe, opt)
	if err != nil {
		return nil, err
	}
	p := &Python{Index: Index(r.Getenv), Limits: lim}
	var inst rpyenv.Installer
	switch choice := r.Getenv("LACUNA_PY_INSTALLER"); choice {
	case "":
		inst, p.Fallback, err = rpyenv.NewInstaller(ctx, dir, p.Index, py, opt)
	case "uv":
		inst, err = rpyenv.BootstrapUV(ctx, dir, p.Index, py, opt)
	case "pip":
		inst, err = rpyenv.NewPip(ctx, dir, py, opt)
	default:
		return nil, fmt.Errorf("LACUNA_PY_INSTALLER=%q: want uv, pip or nothing", choice)
	}
	if err != nil {
		return nil, err
	}
	p.Cache = &rpyenv.Cache{Dir: dir, Python: py, Installer: inst}
	if p.Sandbox, err = sandbox.New(); err != nil {
		return nil, err
	}
	p.Unsandboxed = unsandboxed(p.Sandbox, dir, baseInstall(py.Path))
	if p.Unsandboxed != "" && r.Getenv("LACUNA_PY_UNSANDBOXED") != "1" {
		return nil, fmt.Errorf("python: library code cannot run in the sandbox: %s; to run it anyway outside the sandbox, as your user with your network and files (resource limits only), set LACUNA_PY_UNSANDBOXED=1", p.Unsandboxed)
	}
	id := map[string]string{"python": py.ID(), "installer": inst.String(), "index": IndexID(p.Index)}
	for k, v := range p.Sandbox.Identity(lim) {
		if k != "sandbox" {
			k = "sandbox." + k
		}
		id[k] = v
	}
	if p.Unsandboxed != "" {
		id["sandbox"] = "none"
	}
	return &nodes.Pinned{Identity: id, Value: p}, nil
}

// interpreter is LACUNA_PYTHON or python3, a bare name looked up in the
// run's PATH (not lacuna's own).
func interpreter(getenv func(string) string) (string, error) {
	name := getenv("LACUNA_PYTHON")
	if name == "" {
		name = "python3"
	}
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, d := range filepath.SplitList(getenv("PATH")) {
		if d == "" {
			continue
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("python: %q not found in the run's PATH (set LACUNA_PYTHON to an interpreter)", name)
}

// From is the Python environment Resolve pinned for r's execution. It
// logs the sandbox's warning and why pip replaced uv, if they apply.
func From(r nodes.Run) (*Python, error) {
	p, ok := r.Pinned().(*Python)
	if !ok || p == nil {
		return nil, fmt.Errorf("%s: no Python environment was resolved for this node (its type must call pyenv.Resolve)", r.Node())
	}
	if w := p.Sandbox.Warning(); w != "" {
		r.Logf("%s", w)
	}
	if p.Unsandboxed != "" {
		r.Logf("WARNING: library code runs outside the sandbox, with resource limits only: %s", p.Unsandboxed)
	}
	if p.Fallback != nil {
		r.Logf("installing with %s: uv could not be had: %v", p.Cache.Installer, p.Fallback)
	}
	return p, nil
}

// Environment returns the environment of release name==version uploaded
// at released, made as of that day (runners/pyenv.ExcludeNewerFor): its
// lock is resolved, then installed unless the cache holds it.
func (p *Python) Environment(ctx context.Context, name, version string, released time.Time) (*rpyenv.Env, error) {
	lock, err := p.Cache.Resolve(ctx, rpyenv.Spec{Name: name, Version: version, IndexURL: p.Index, ExcludeNewer: rpyenv.ExcludeNewerFor(released)})
	if err != nil {
		return nil, err
	}
	return p.Cache.Install(ctx, lock, p.Index)
}

// RunPython runs env's interpreter with args in the sandbox under
// p.Limits: the environment and the base interpreter's installation are
// mounted read-only at their paths, the working directory is an empty
// /work, and the environment holds only PATH, HOME, TMPDIR and LC_ALL;
// as root, bubblewrap mounts them as root and the program runs as uid
// 65534 (sandbox.Spec.MountAsRoot). Without bubblewrap it runs with
// resource limits only, in a temporary directory (From logs the sandbox's
// warning); when the user opted in to p.Unsandboxed it runs as a tool of
// lacuna's user (sandbox.RunTool: the same limits, no isolation).
func (p *Python) RunPython(ctx context.Context, env *rpyenv.Env, args ...string) (*sandbox.Result, error) {
	work, err := os.MkdirTemp("", "lacuna-py-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	home := "/work"
	if p.Sandbox.Isolation() != "bubblewrap" {
		home = work
	}
	argv := append([]string{env.Python()}, args...)
	if p.Unsandboxed != "" {
		return p.Sandbox.RunTool(ctx, sandbox.Tool{Argv: argv, Dir: work, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + work, "TMPDIR=" + work, "LC_ALL=C.UTF-8"}, Limits: p.Limits})
	}
	return p.Sandbox.Run(ctx, sandbox.Spec{
		Argv:        argv,
		Dir:         work,
		Env:         []string{"PATH=/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + home, "LC_ALL=C.UTF-8"},
		ReadOnly:    p.Mounts(env),
		MountAsRoot: true,
		Limits:      p.Limits,
	})
}

// Mounts are the host paths a sandboxed run of env's interpreter needs
// read-only: the environment and, when it is outside the system
// directories, the base interpreter's installation. As root, uid 65534
// may not reach them on the host (a pyenv under /root): run with
// sandbox.Spec.MountAsRoot, as RunPython does.
func (p *Python) Mounts(env *rpyenv.Env) []string {
	ro := []string{env.Dir}
	if base := baseInstall(p.Cache.Python.Path); base != "" {
		ro = append(ro, base)
	}
	return ro
}

// unsandboxed says why the sandbox cannot run an environment of the
// cache dir made from the installation base ("" when it can). Under
// bubblewrap it mounts them at their paths, which must be outside /tmp
// (the sandbox's own), and as root it mounts them as root
// (sandbox.Spec.MountAsRoot): the program, uid 65534, then needs only to
// read the installation itself. Without bubblewrap, as root, the program
// runs as uid 65534 on the host, which must be able to reach them (a
// pyenv interpreter under a private /root is not).
func unsandboxed(sb *sandbox.Sandbox, cache, base string) string {
	paths := []string{cache}
	if base != "" {
		paths = append(paths, base)
	}
	for _, d := range paths {
		if sb.Isolation() == "bubblewrap" {
			for _, own := range []string{"/tmp", "/work", "/proc", "/dev"} {
				if d == own || strings.HasPrefix(d, own+"/") {
					return fmt.Sprintf("%s is under %s, which is the sandbox's own (keep the store elsewhere)", d, own)
				}
			}
		}
		if os.Geteuid() != 0 {
			continue
		}
		var err error
		if sb.Isolation() == "bubblewrap" {
			if d == base {
				err = othersRead(d)
			}
		} else {
			err = othersReach(d)
		}
		if err != nil {
			return fmt.Sprintf("the sandbox runs library code as uid 65534, which %v (use an interpreter and a store others may read: LACUNA_PYTHON=/usr/bin/python3)", err)
		}
	}
	return ""
}

// HostUnreachable says why uid 65534 cannot reach, on the host, the
// store's Python cache or the base interpreter's installation ("" when it
// can, and when lacuna is not root). It matters to a node that runs
// library code with novelapibench/pyharness: as root, its runner drops to
// uid 65534 before the sandbox starts (sandbox.ExecWrapper), so the
// interpreter, the environments and the runner's files must be reachable
// by that user on the host, not only readable once mounted as RunPython
// needs (Resolve checks only that).
func (p *Python) HostUnreachable() string {
	if os.Geteuid() != 0 {
		return ""
	}
	return hostUnreachable(p.Cache.Dir, baseInstall(p.Cache.Python.Path))
}

func hostUnreachable(cache, base string) string {
	for _, d := range []string{cache, base} {
		if d == "" {
			continue
		}
		if err := othersReach(d); err != nil {
			return fmt.Sprintf("the sandbox runs library code as uid 65534, which %v", err)
		}
	}
	return ""
}

// othersRead checks that a user who owns nothing (the sandbox's uid) can
// list and enter dir.
func othersRead(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cannot reach %s: %w", dir, err)
	}
	if fi.Mode().Perm()&0o005 != 0o005 {
		return fmt.Errorf("cannot read %s (it is %s)", dir, fi.Mode().Perm())
	}
	return nil
}

// othersReach checks that a user who owns nothing on the way (the
// sandbox's uid) can traverse every directory down to dir and read it.
func othersReach(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("cannot reach %s: %w", dir, err)
		}
		need := fs.FileMode(0o001)
		if d == dir {
			need = 0o005
		}
		if fi.Mode().Perm()&need != need {
			return fmt.Errorf("cannot reach %s (%s is %s)", dir, d, fi.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// baseInstall is the installation the interpreter at exe belongs to
// (PREFIX of PREFIX/bin/python3.11), which an environment's interpreter
// links to; "" when the sandbox mounts it anyway (under /usr).
func baseInstall(exe string) string {
	prefix := filepath.Dir(filepath.Dir(exe))
	for _, sys := range []string{"/usr", "/bin", "/lib", "/lib64", "/sbin"} {
		if prefix == "/" || prefix == sys || strings.HasPrefix(prefix, sys+"/") {
			return ""
		}
	}
	return prefix
}

// Open returns the environment of digest (lib==version's, recorded by a
// surface_diff upstream of upstream, the node's input) from the store's
// Python cache, checked whole (runners/pyenv.Cache.Get) on every call.
// An environment deleted from the cache (envs/ or envs/DIGEST, by hand;
// nothing collects them today), or left incomplete by a deletion
// interrupted half-way, whose lock is kept (locks/DIGEST) is made again
// from the lock through p.Index, logged on r ("rebuilding environment
// NAME==VERSION (DIGEST) from its lock: WHY"): exactly the locked files,
// hash-checked, so the same digest and files
// (runners/pyenv.Cache.Install); concurrent nodes and processes healing
// the same digest are safe, one build wins. With the lock gone too (the
// whole cache deleted) it is EnvGone; a damaged lock fails with the same
// advice. An environment or lock
// made with another interpreter than the pinned one (the base
// interpreter upgraded in place), or a lock made by another installer
// when the environment must be rebuilt, is an error naming both, with
// the same advice as EnvGone: the surface_diff must resolve it again.
// Every error fails the node, storing nothing, so that it runs again once
// the environment can be had.
func (p *Python) Open(ctx context.Context, r nodes.Run, digest, lib, version, upstream string) (*rpyenv.Env, error) {
	env, err := p.Cache.Get(digest)
	if err == nil {
		return env, nil
	}
	if errors.Is(err, rpyenv.ErrToolsChanged) {
		return nil, fmt.Errorf("%s==%s: environment %.12s cannot be used: %w; %s", lib, version, digest, err, rebuildAdvice(upstream))
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s==%s: %w", lib, version, err)
	}
	why := err
	lock, err := p.Cache.Lock(digest)
	if errors.Is(err, os.ErrNotExist) {
		return nil, EnvGone(digest, lib, version, upstream)
	}
	if errors.Is(err, rpyenv.ErrBadLock) {
		return nil, fmt.Errorf("%s==%s: environment %.12s is no longer in the store's Python cache and its kept lock is damaged (%v); %s", lib, version, digest, err, rebuildAdvice(upstream))
	}
	if err != nil {
		return nil, fmt.Errorf("%s==%s: %w", lib, version, err)
	}
	r.Logf("rebuilding environment %s (%.12s) from its lock: %v", lock.Root, digest, why)
	start := time.Now()
	env, err = p.Cache.Install(ctx, lock, p.Index)
	if errors.Is(err, rpyenv.ErrToolsChanged) {
		return nil, fmt.Errorf("%s==%s: environment %.12s is missing from the store's Python cache (or incomplete) and cannot be rebuilt from its lock: %w; %s", lib, version, digest, err, rebuildAdvice(upstream))
	}
	if err != nil {
		return nil, fmt.Errorf("%s==%s: environment %.12s is missing from the store's Python cache (or incomplete) and cannot be rebuilt from its lock: %w", lib, version, digest, err)
	}
	r.Logf("rebuilt environment %s (%.12s): %d packages in %s", lock.Root, digest, len(lock.Packages), time.Since(start).Round(time.Millisecond))
	return env, nil
}

// EnvGone is the error of a node whose input names environment digest
// (lib==version's, recorded by a surface_diff) when neither it nor its
// lock is in the store's Python cache any more (the cache was deleted),
// so Open cannot make it again. The node fails, storing nothing, so that
// it runs again once the environment is back; upstream is the address of
// the node's input, on the way from that surface_diff.
func EnvGone(digest, lib, version, upstream string) error {
	return fmt.Errorf("%s==%s: environment %.12s is no longer in the store's Python cache, nor its lock; %s", lib, version, digest, rebuildAdvice(upstream))
}

// rebuildAdvice is how to have an environment that Open cannot: resolve
// it again, by the surface_diff upstream of upstream.
func rebuildAdvice(upstream string) string {
	return fmt.Sprintf("to rebuild it, run the surface_diff that made it again (upstream of %s): lacuna run --recompute node.surface_diff.NAME FILE.hcl, then run this node again", upstream)
}
