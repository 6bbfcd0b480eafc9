package pyenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rpyenv "github.com/lacuna-dev/lacuna/runners/pyenv"
	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

func TestIndexFollowsPipThenUv(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "https://pypi.org/simple/"},
		{map[string]string{"UV_DEFAULT_INDEX": "https://c/simple"}, "https://c/simple"},
		{map[string]string{"UV_INDEX_URL": "https://b/simple", "UV_DEFAULT_INDEX": "https://c/simple"}, "https://b/simple"},
		{map[string]string{"PIP_INDEX_URL": "https://a/simple", "UV_INDEX_URL": "https://b/simple"}, "https://a/simple"},
	} {
		if got := Index(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("%v: %s, want %s", c.env, got, c.want)
		}
	}
}

func TestIndexIDDropsCredentials(t *testing.T) {
	for in, want := range map[string]string{
		"https://pypi.org/simple/":                      "https://pypi.org/simple/",
		"https://user:s3cret@mirror.example/simple/":    "https://mirror.example/simple/",
		"https://token@mirror.example:8443/pypi/simple": "https://mirror.example:8443/pypi/simple",
		"http://127.0.0.1:5000/simple/":                 "http://127.0.0.1:5000/simple/",
	} {
		if got := IndexID(in); got != want {
			t.Errorf("IndexID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestInterpreterIsLookedUpInTheRunsPath(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "python3")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notexec"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env     map[string]string
		want    string
		wantErr bool
	}{
		{env: map[string]string{"PATH": "/nonexistent:" + dir}, want: exe},
		{env: map[string]string{"PATH": dir, "LACUNA_PYTHON": "/opt/py/bin/python3.12"}, want: "/opt/py/bin/python3.12"},
		{env: map[string]string{"PATH": dir, "LACUNA_PYTHON": "notexec"}, wantErr: true},
		{env: map[string]string{"PATH": ""}, wantErr: true},
	} {
		got, err := interpreter(func(k string) string { return c.env[k] })
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("%v: %q, %v; want %q (error %v)", c.env, got, err, c.want, c.wantErr)
		}
	}
}

func TestBaseInstallIsMountedUnlessTheSystemHasIt(t *testing.T) {
	for exe, want := range map[string]string{
		"/usr/bin/python3.11":                         "",
		"/usr/local/bin/python3":                      "",
		"/root/.pyenv/versions/3.11.7/bin/python3.11": "/root/.pyenv/versions/3.11.7",
		"/opt/conda/bin/python3":                      "/opt/conda",
	} {
		if got := baseInstall(exe); got != want {
			t.Errorf("baseInstall(%s) = %q, want %q", exe, got, want)
		}
	}
}

// TestLibraryCodeRunsSandboxedWithTheEnvironmentReadOnly imports a module
// of an environment through RunPython: it sees its package, cannot write
// into the environment and has no network.
func TestLibraryCodeRunsSandboxedWithTheEnvironmentReadOnly(t *testing.T) {
	sb, err := sandbox.New()
	if err != nil {
		t.Fatal(err)
	}
	if sb.Isolation() != "bubblewrap" {
		t.Skip("bubblewrap is not installed")
	}
	// The system's interpreter, and python3 of the PATH: on a machine
	// with pyenv that one lives under a private /root, which the sandbox
	// mounts as root while the library runs as uid 65534.
	exes := map[string]bool{}
	for _, name := range []string{"/usr/bin/python3", "python3"} {
		if p, err := exec.LookPath(name); err == nil {
			exes[p] = true
		}
	}
	if len(exes) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("no python3")
		}
		t.Skip("no python3 (the test fails instead under CI=true)")
	}
	for exe := range exes {
		t.Run(exe, func(t *testing.T) { runSandboxedProbe(t, sb, exe) })
	}
}

func runSandboxedProbe(t *testing.T, sb *sandbox.Sandbox, exe string) {
	ctx := context.Background()
	py, err := rpyenv.FindPython(ctx, exe, rpyenv.Options{Environ: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "lacuna-pyenv-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	env := &rpyenv.Env{Dir: filepath.Join(dir, "env")}
	if out, err := exec.Command(py.Path, "-m", "venv", "--without-pip", env.Dir).CombinedOutput(); err != nil {
		t.Fatalf("venv: %v\n%s", err, out)
	}
	site, _ := filepath.Glob(filepath.Join(env.Dir, "lib", "python*", "site-packages"))
	if len(site) != 1 {
		t.Fatalf("site-packages: %v", site)
	}
	probe := `import os, socket
here = os.path.dirname(__file__)
try:
    open(os.path.join(here, "written"), "w").write("x")
    print("wrote")
except OSError as e:
    print("read-only", e.errno)
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    print("network")
except OSError:
    print("no network")
`
	if err := os.WriteFile(filepath.Join(site[0], "probe.py"), []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &Python{Cache: &rpyenv.Cache{Dir: dir, Python: py}, Sandbox: sb, Limits: sandbox.Limits{Wall: time.Minute}}
	if p.Unsandboxed = unsandboxed(sb, dir, baseInstall(py.Path)); p.Unsandboxed != "" {
		t.Fatalf("unsandboxed: %s", p.Unsandboxed)
	}
	res, err := p.RunPython(ctx, env, "-I", "-c", "import probe")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(res.Stdout)); res.ExitCode != 0 || len(got) < 3 || got[0] != "read-only" || strings.Join(got[len(got)-2:], " ") != "no network" {
		t.Errorf("exit %d, stdout %q, stderr %q: want read-only and no network", res.ExitCode, res.Stdout, res.Stderr)
	}
	if _, err := os.Stat(filepath.Join(site[0], "written")); err == nil {
		t.Error("the library wrote into its environment")
	}
}

func TestUnsandboxedNamesWhatTheSandboxCannotMount(t *testing.T) {
	sb, err := sandbox.New()
	if err != nil {
		t.Fatal(err)
	}
	if sb.Isolation() != "bubblewrap" {
		t.Skip("bubblewrap is not installed")
	}
	if got := unsandboxed(sb, "/tmp/store/cache/python", ""); !strings.Contains(got, "is under /tmp") {
		t.Errorf("store under /tmp: %q", got)
	}
	private, err := os.MkdirTemp("/var/tmp", "lacuna-private-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(private) })
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	inPrivate := filepath.Join(private, "python")
	if err := os.Mkdir(inPrivate, 0o755); err != nil {
		t.Fatal(err)
	}
	got := unsandboxed(sb, "/var/tmp", private)
	if os.Geteuid() == 0 && !strings.Contains(got, "uid 65534") {
		t.Errorf("a private base install as root: %q", got)
	}
	if os.Geteuid() != 0 && got != "" {
		t.Errorf("not root: %q, want none", got)
	}
	// A readable installation under a private directory (pyenv's under
	// /root): bubblewrap mounts it as root.
	if got := unsandboxed(sb, "/var/tmp", inPrivate); got != "" {
		t.Errorf("a readable base install under a private directory: %q, want none", got)
	}
}

// resolve is the part of nodes.Resolve that Resolve uses.
type resolve struct {
	env   map[string]string
	cache string
}

func (r resolve) Config() any                     { return nil }
func (r resolve) Node() string                    { return "node.test.py" }
func (r resolve) Dir() string                     { return "." }
func (r resolve) Getenv(k string) string          { return r.env[k] }
func (r resolve) CacheDir(string) (string, error) { return r.cache, os.MkdirAll(r.cache, 0o755) }
func (r resolve) Environ() []string {
	var env []string
	for k, v := range r.env {
		env = append(env, k+"="+v)
	}
	return env
}

// TestResolveRefusesToRunUnsandboxedUnlessAskedTo: a store under /tmp
// cannot be mounted by bubblewrap: Resolve fails, naming
// LACUNA_PY_UNSANDBOXED=1, and with it pins "sandbox" = "none" (and
// the index, as every Resolve does).
func TestResolveRefusesToRunUnsandboxedUnlessAskedTo(t *testing.T) {
	sb, err := sandbox.New()
	if err != nil {
		t.Fatal(err)
	}
	if sb.Isolation() != "bubblewrap" {
		t.Skip("bubblewrap is not installed")
	}
	exe, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("%v (the test fails instead under CI=true)", err)
	}
	cache, err := os.MkdirTemp("/tmp", "lacuna-pyenv-store-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(cache) })
	r := resolve{env: map[string]string{"LACUNA_PYTHON": exe, "LACUNA_PY_INSTALLER": "pip", "PATH": os.Getenv("PATH")}, cache: filepath.Join(cache, "python")}
	if _, err := Resolve(context.Background(), r, sandbox.Limits{}); err == nil || !strings.Contains(err.Error(), "set LACUNA_PY_UNSANDBOXED=1") || !strings.Contains(err.Error(), "under /tmp") {
		t.Errorf("a store under /tmp: %v, want a refusal naming LACUNA_PY_UNSANDBOXED=1", err)
	}
	r.env["LACUNA_PY_UNSANDBOXED"] = "1"
	r.env["PIP_INDEX_URL"] = "https://user:s3cret@mirror.example/simple/"
	pin, err := Resolve(context.Background(), r, sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if pin.Identity["sandbox"] != "none" || pin.Value.(*Python).Unsandboxed == "" {
		t.Errorf("opted in: identity %v, unsandboxed %q", pin.Identity, pin.Value.(*Python).Unsandboxed)
	}
	// The index makes the environments: it is in the key, without its
	// credentials.
	if got := pin.Identity["index"]; got != "https://mirror.example/simple/" {
		t.Errorf("identity index %q, want the index without credentials", got)
	}
}

// TestHostUnreachableNamesAPrivateDirectoryOnTheWay: the store's cache
// or the base installation under a directory others cannot enter is
// named; reachable ones are not.
func TestHostUnreachableNamesAPrivateDirectoryOnTheWay(t *testing.T) {
	open, err := os.MkdirTemp("/var/tmp", "lacuna-reach-") // t.TempDir's parent is private
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(open) })
	private := filepath.Join(open, "private")
	cache := filepath.Join(private, "cache", "python")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ cache, base, want string }{
		{cache, "", private + " is -rwx------"},
		{open, cache, private + " is -rwx------"},
		{open, "", ""},
	} {
		got := hostUnreachable(c.cache, c.base)
		if c.want == "" && got != "" || c.want != "" && (!strings.Contains(got, c.want) || !strings.Contains(got, "uid 65534")) {
			t.Errorf("hostUnreachable(%s, %s) = %q, want %q", c.cache, c.base, got, c.want)
		}
	}
}
