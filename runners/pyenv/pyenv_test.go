package pyenv

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// The offline tests install with pip from the interpreter's own ensurepip
// (python3 -m venv works offline) from a fixture index on loopback.

var shared struct {
	once sync.Once
	dir  string
	py   *Python
	pip  *Pip
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// missing skips the test, or fails it under CI=true.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format+" (the test fails instead under CI=true)", args...)
}

// testOptions passes the environment the tools need (PATH, HOME, TLS
// settings); cleanEnviron removes what must not leak in.
func testOptions() Options { return Options{Environ: os.Environ()} }

// pipCache is a cache in a new directory using the pip installer, which is
// prepared once for the whole test binary.
func pipCache(t *testing.T) *Cache {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		missing(t, "python3 not found: %v", err)
	}
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "pyenv-test-")
		if shared.err != nil {
			return
		}
		ctx := context.Background()
		if shared.py, shared.err = FindPython(ctx, "python3", testOptions()); shared.err != nil {
			return
		}
		shared.pip, shared.err = NewPip(ctx, shared.dir, shared.py, testOptions())
	})
	if shared.err != nil {
		missing(t, "python3 with venv and ensurepip is needed: %v", shared.err)
	}
	return &Cache{Dir: t.TempDir(), Python: shared.py, Installer: shared.pip}
}

func pyRun(t *testing.T, e *Env, code string) string {
	t.Helper()
	out, err := exec.Command(e.Python(), "-I", "-c", code).CombinedOutput()
	if err != nil {
		t.Fatalf("%s -c %q: %v\n%s", e.Python(), code, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestEachVersionGetsItsPeriodsDependencies(t *testing.T) { checkPeriodDependencies(t, pipCache(t)) }

// checkPeriodDependencies installs both alphas, each as of its release.
func checkPeriodDependencies(t *testing.T, c *Cache) {
	ix := standardIndex(t)
	ctx := context.Background()
	for _, tc := range []struct {
		version  string
		released time.Time
		beta     string
	}{
		{"1.0", day("2020-06-01"), "1.0"}, // beta 1.1 came later
		{"2.0", day("2021-06-01"), "1.1"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			spec := Spec{Name: "alpha", Version: tc.version, IndexURL: ix.URL(), ExcludeNewer: ExcludeNewerFor(tc.released)}
			env, err := c.Create(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := pyRun(t, env, "import alpha, beta; print(alpha.__version__, beta.__version__)"); got != tc.version+" "+tc.beta {
				t.Errorf("alpha, beta versions = %q, want %q", got, tc.version+" "+tc.beta)
			}
			want := []Package{
				{Name: "alpha", Version: tc.version, SHA256: []string{ix.file("alpha-" + tc.version + "-py3-none-any.whl").sha256()}},
				{Name: "beta", Version: tc.beta, SHA256: []string{ix.file("beta-" + tc.beta + "-py3-none-any.whl").sha256()}},
			}
			if len(env.Lock.Packages) != len(want) {
				t.Fatalf("lock packages = %+v, want %+v", env.Lock.Packages, want)
			}
			for i, p := range env.Lock.Packages {
				if p.Name != want[i].Name || p.Version != want[i].Version || strings.Join(p.SHA256, ",") != want[i].SHA256[0] {
					t.Errorf("lock package %d = %+v, want %+v", i, p, want[i])
				}
			}
			if env.Lock.Root != "alpha=="+tc.version || env.Lock.Python != c.Python.ID() || env.Lock.Installer != c.Installer.String() {
				t.Errorf("lock header = %q %q %q", env.Lock.Root, env.Lock.Python, env.Lock.Installer)
			}
			if env.Dir != filepath.Join(c.Dir, "envs", env.Digest()) {
				t.Errorf("environment at %s, want under its digest %s", env.Dir, env.Digest())
			}
		})
	}
}

func TestWithoutCutoffTheNewestDependencyIsChosen(t *testing.T) {
	c := pipCache(t)
	ix := standardIndex(t)
	l, err := c.Resolve(context.Background(), Spec{Name: "alpha", Version: "1.0", IndexURL: ix.URL()})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Packages[1].Name + "==" + l.Packages[1].Version; got != "beta==1.1" {
		t.Errorf("dependency = %s, want beta==1.1", got)
	}
	// Without a cutoff a file with no upload time is fine.
	if _, err := c.Resolve(context.Background(), Spec{Name: "zeta", Version: "1.0", IndexURL: ix.URL()}); err != nil {
		t.Errorf("zeta without a cutoff: %v", err)
	}
}

func TestInstallReusesTheCachedEnvironment(t *testing.T) {
	c := pipCache(t)
	ix := standardIndex(t)
	ctx := context.Background()
	spec := Spec{Name: "alpha", Version: "1.0", IndexURL: ix.URL(), ExcludeNewer: day("2020-07-01")}
	lock, err := c.Resolve(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.Install(ctx, lock, ix.URL())
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(first.Dir, "marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := ix.requests.Load()
	again, err := c.Install(ctx, lock, "http://127.0.0.1:1/unreachable/")
	if err != nil {
		t.Fatal(err)
	}
	if again.Dir != first.Dir || ix.requests.Load() != before {
		t.Errorf("second install: dir %s (first %s), %d index requests; want the cached one, none", again.Dir, first.Dir, ix.requests.Load()-before)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the cached environment was rebuilt: %v", err)
	}
	got, err := c.Get(lock.Digest())
	if err != nil || got.Lock.Text() != lock.Text() {
		t.Errorf("Get = %v, %v; want the lock back", got, err)
	}
}

func TestConcurrentCreatesShareOneEnvironment(t *testing.T) {
	c := pipCache(t)
	ix := standardIndex(t)
	spec := Spec{Name: "alpha", Version: "2.0", IndexURL: ix.URL()}
	var wg sync.WaitGroup
	envs := make([]*Env, 3)
	errs := make([]error, 3)
	for i := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			envs[i], errs[i] = c.Create(context.Background(), spec)
		}()
	}
	wg.Wait()
	for i := range envs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if envs[i].Dir != envs[0].Dir {
			t.Errorf("caller %d got %s, caller 0 %s", i, envs[i].Dir, envs[0].Dir)
		}
		pyRun(t, envs[i], "import alpha, beta")
	}
	if ds, _ := c.List(); len(ds) != 1 {
		t.Errorf("cache holds %v, want one environment", ds)
	}
	if left, _ := os.ReadDir(filepath.Join(c.Dir, "tmp")); len(left) != 0 {
		t.Errorf("tmp/ keeps %d entries after the builds", len(left))
	}
}

func TestRemoveDeletesOneEnvironment(t *testing.T) {
	c := pipCache(t)
	ix := standardIndex(t)
	ctx := context.Background()
	a, err := c.Create(ctx, Spec{Name: "alpha", Version: "1.0", IndexURL: ix.URL(), ExcludeNewer: day("2020-07-01")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Create(ctx, Spec{Name: "alpha", Version: "2.0", IndexURL: ix.URL()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(a.Digest()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(a.Digest()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Get after Remove: %v, want not exist", err)
	}
	if l, err := c.Lock(a.Digest()); err != nil || l.Text() != a.Lock.Text() {
		t.Errorf("Lock after Remove = %v, %v; want the lock kept", l, err)
	}
	if ds, _ := c.List(); len(ds) != 1 || ds[0] != b.Digest() {
		t.Errorf("List = %v, want [%s]", ds, b.Digest())
	}
	if err := c.Remove(a.Digest()); err != nil {
		t.Errorf("removing an absent environment: %v", err)
	}
	if err := c.Remove("../x"); err == nil {
		t.Error("Remove accepted a name that is not a digest")
	}
}

func TestBadInputFailsNamingTheRelease(t *testing.T) { checkBadInput(t, pipCache(t)) }

// checkBadInput makes environments that cannot be made.
func checkBadInput(t *testing.T, c *Cache) {
	ix := standardIndex(t)
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", pep691)
		w.Write([]byte("<html>not json"))
	}))
	defer garbage.Close()
	for _, tc := range []struct {
		name, spec string
		cutoff     time.Time
		want       []string
		index      string
	}{
		{"index answers garbage", "alpha==1.0", time.Time{}, []string{"alpha==1.0", "bad JSON"}, garbage.URL + "/simple/"},
		{"no upload time under a cutoff", "zeta==1.0", day("2030-01-01"), []string{"zeta==1.0", "no such release"}, ""},
		{"no wheel and the sdist fails", "gamma==1.0", time.Time{}, []string{"gamma==1.0", "building from the sdist failed", "gamma cannot be built here"}, ""},
		{"index 404", "nosuch==1.0", time.Time{}, []string{"nosuch==1.0", "404"}, ""},
		{"dependency conflict", "delta==1.0", time.Time{}, []string{"delta==1.0", "conflicting dependencies", "beta"}, ""},
		{"no such version", "alpha==9.9", time.Time{}, []string{"alpha==9.9", "no such release"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, ver, _ := strings.Cut(tc.spec, "==")
			if tc.index == "" {
				tc.index = ix.URL()
			}
			_, err := c.Create(context.Background(), Spec{Name: name, Version: ver, IndexURL: tc.index, ExcludeNewer: tc.cutoff})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
			t.Log(err)
			if ds, _ := c.List(); len(ds) != 0 {
				t.Errorf("a failed create left environments %v", ds)
			}
		})
	}
}

func TestLockTextRoundTripsAndDigestIgnoresFileNames(t *testing.T) {
	l := &Lock{Python: "cpython 3.11.7 linux-x86_64", Installer: "uv 0.13.9", Root: "alpha==1.0", Packages: []Package{
		{Name: "alpha", Version: "1.0", SHA256: []string{strings.Repeat("b", 64), strings.Repeat("a", 64)}, Files: []string{"x.whl", "y.whl"}},
		{Name: "beta", Version: "1.1", SHA256: []string{strings.Repeat("c", 64)}},
	}}
	back, err := ParseLock(l.Text())
	if err != nil {
		t.Fatal(err)
	}
	if back.Text() != l.Text() || back.Digest() != l.Digest() {
		t.Errorf("round trip changed the lock:\n%s\n%s", l.Text(), back.Text())
	}
	renamed := *l
	renamed.Packages = append([]Package(nil), l.Packages...)
	renamed.Packages[0].Files = nil
	if renamed.Digest() != l.Digest() {
		t.Error("file names changed the digest")
	}
	for _, change := range []func(*Lock){
		func(l *Lock) { l.Python = "cpython 3.11.8 linux-x86_64" },
		func(l *Lock) { l.Installer = "pip 23.2.1" },
		func(l *Lock) { l.Packages[1].Version = "1.0" },
		func(l *Lock) { l.Packages[1].SHA256 = []string{strings.Repeat("d", 64)} },
	} {
		c := *l
		c.Packages = []Package{l.Packages[0], l.Packages[1]}
		change(&c)
		if c.Digest() == l.Digest() {
			t.Errorf("a change left the digest: %s", c.Text())
		}
	}
	if _, err := ParseLock("lacuna-pyenv-lock-v1\npython x\ninstaller y\nroot z\nalpha==1.0 md5:00\n"); err == nil {
		t.Error("ParseLock accepted a bad hash")
	}
	if _, err := ParseLock("lacuna-pyenv-lock-v1\npython x\ninstaller y\nroot z\n--index-url==1.0 sha256:" + strings.Repeat("a", 64) + "\n"); err == nil {
		t.Error("ParseLock accepted an option for a name")
	}
}

func TestResolveRefusesWhatIsNotANameAndVersion(t *testing.T) {
	c := &Cache{Dir: t.TempDir()} // refused before any tool runs
	for _, s := range []Spec{
		{Name: "", Version: "1.0"},
		{Name: "alpha", Version: ""},
		{Name: "--index-url=http://evil/", Version: "1.0"},
		{Name: "alpha", Version: "1.0 --no-deps"},
		{Name: "alpha; os_name == 'posix'", Version: "1.0"},
		{Name: "alpha", Version: "-1"},
	} {
		if _, err := c.Resolve(context.Background(), s); err == nil || !strings.Contains(err.Error(), "not a project name and version") {
			t.Errorf("Resolve(%q==%q) = %v, want a refusal", s.Name, s.Version, err)
		}
	}
}

func TestCleanEnvironDropsInstallerSettings(t *testing.T) {
	env := cleanEnviron([]string{"PATH=/bin", "PIP_FIND_LINKS=/opt/wheels", "UV_INDEX_URL=x", "PYTHONPATH=/p", "VIRTUAL_ENV=/v", "HOME=/h"})
	got := strings.Join(env, " ")
	for _, bad := range []string{"PIP_FIND_LINKS", "UV_INDEX_URL", "PYTHONPATH", "VIRTUAL_ENV"} {
		if strings.Contains(got, bad) {
			t.Errorf("%s kept: %s", bad, got)
		}
	}
	for _, good := range []string{"PATH=/bin", "HOME=/h", "PIP_CONFIG_FILE=/dev/null", "UV_NO_CONFIG=1"} {
		if !strings.Contains(got, good) {
			t.Errorf("%s missing: %s", good, got)
		}
	}
}

func TestGCKeepsWhatIsAskedAndWhatLiveProcessesBuild(t *testing.T) {
	c := pipCache(t)
	ix := standardIndex(t)
	ctx := context.Background()
	a, err := c.Create(ctx, Spec{Name: "alpha", Version: "1.0", IndexURL: ix.URL(), ExcludeNewer: day("2020-07-01")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Create(ctx, Spec{Name: "alpha", Version: "2.0", IndexURL: ix.URL()})
	if err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(c.Dir, "tmp", "env-999999999-1") // above any pid_max
	live, err := c.tempDir("env-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dead, 0o755); err != nil {
		t.Fatal(err)
	}
	removed, err := c.GC(func(d string) bool { return d == b.Digest() })
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != a.Digest() {
		t.Errorf("removed %v, want [%s]", removed, a.Digest())
	}
	if ds, _ := c.List(); len(ds) != 1 || ds[0] != b.Digest() {
		t.Errorf("left %v, want [%s]", ds, b.Digest())
	}
	if _, err := c.Lock(a.Digest()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lock of a collected environment: %v, want removed", err)
	}
	if _, err := c.Lock(b.Digest()); err != nil {
		t.Errorf("the lock of a kept environment: %v", err)
	}
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dead process's build is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("this process's build was removed: %v", err)
	}
}

func TestDefaultInstallerFallsBackToPipWithoutUV(t *testing.T) {
	c := pipCache(t)
	ix := standardIndex(t) // holds no uv
	inst, fallback, err := NewInstaller(context.Background(), shared.dir, ix.URL(), c.Python, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(inst.String(), "pip ") {
		t.Errorf("installer = %s, want pip", inst)
	}
	if fallback == nil || !strings.Contains(fallback.Error(), "uv "+UVVersion) {
		t.Errorf("fallback reason = %v, want one naming uv %s", fallback, UVVersion)
	}
}

// BenchmarkCreate measures a cold environment (resolve, venv, install,
// check) of alpha 2.0 and beta from the fixture index with pip.
func BenchmarkCreate(b *testing.B) {
	if _, err := exec.LookPath("python3"); err != nil {
		b.Skip("python3 not found")
	}
	ix := standardIndex(b).URL()
	py, err := FindPython(context.Background(), "python3", testOptions())
	if err != nil {
		b.Fatal(err)
	}
	pip, err := NewPip(context.Background(), b.TempDir(), py, testOptions())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		c := &Cache{Dir: b.TempDir(), Python: py, Installer: pip}
		if _, err := c.Create(context.Background(), Spec{Name: "alpha", Version: "2.0", IndexURL: ix}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCancelStopsTheInstaller(t *testing.T) {
	c := pipCache(t)
	// An index that never answers: pip waits until the context ends.
	asked := make(chan struct{}, 1)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	}))
	defer hang.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Resolve(ctx, Spec{Name: "alpha", Version: "1.0", IndexURL: hang.URL + "/simple/"})
		done <- err
	}()
	select {
	case <-asked:
	case err := <-done:
		t.Fatalf("resolve ended before asking the index: %v", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled resolve: %v, want it killed", err)
	}
}

// siteFiles maps each file of e's site-packages, but the bytecode, to its
// sha256.
func siteFiles(t *testing.T, e *Env) map[string]string {
	t.Helper()
	site := pyRun(t, e, "import sysconfig; print(sysconfig.get_paths()['purelib'])")
	out := map[string]string{}
	err := filepath.WalkDir(site, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".pyc") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(site, p)
		out[rel] = fmt.Sprintf("%x", sha256.Sum256(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDeletedEnvironmentIsRebuiltExactlyFromItsKeptLock(t *testing.T) {
	c := pipCache(t)
	ix := standardIndex(t)
	ctx := context.Background()
	first, err := c.Create(ctx, Spec{Name: "alpha", Version: "1.0", IndexURL: ix.URL(), ExcludeNewer: day("2020-07-01")})
	if err != nil {
		t.Fatal(err)
	}
	digest := first.Digest()
	files := siteFiles(t, first)
	if files["alpha/__init__.py"] == "" || files["beta/__init__.py"] == "" {
		t.Fatalf("site-packages holds %v, want the alpha and beta packages", files)
	}
	kept, err := c.Lock(digest)
	if err != nil || kept.Text() != first.Lock.Text() {
		t.Fatalf("Lock = %v, %v; want the environment's lock", kept, err)
	}

	// The environments deleted by hand: the lock makes the same one again.
	if err := os.RemoveAll(filepath.Join(c.Dir, "envs")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(digest); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Get after deleting envs/: %v, want not exist", err)
	}
	lock, err := c.Lock(digest)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Install(ctx, lock, ix.URL())
	if err != nil {
		t.Fatal(err)
	}
	if again.Dir != first.Dir || again.Digest() != digest {
		t.Errorf("rebuilt %s (%s), want %s (%s)", again.Dir, again.Digest(), first.Dir, digest)
	}
	if got := siteFiles(t, again); !reflect.DeepEqual(got, files) {
		t.Errorf("rebuilt site-packages\n got %v\nwant %v", got, files)
	}
	pyRun(t, again, "import alpha, beta")

	// Get keeps the lock of an environment whose lock was deleted.
	if err := os.RemoveAll(filepath.Join(c.Dir, "locks")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lock(digest); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Lock after deleting locks/: %v, want not exist", err)
	}
	if _, err := c.Get(digest); err != nil {
		t.Fatal(err)
	}
	if l, err := c.Lock(digest); err != nil || l.Text() != first.Lock.Text() {
		t.Errorf("Lock after Get = %v, %v; want the lock kept again", l, err)
	}

	// A mirror serving another file under a locked name: the rebuild
	// fails on the hash and leaves no environment.
	if err := c.Remove(digest); err != nil {
		t.Fatal(err)
	}
	for i := range ix.files {
		if strings.HasPrefix(ix.files[i].filename, "beta-1.0-") {
			ix.files[i].data = append(append([]byte(nil), ix.files[i].data...), 0)
		}
	}
	if _, err := c.Install(ctx, lock, ix.URL()); err == nil {
		t.Error("rebuilt from a file whose hash is not the locked one")
	}
	if ds, _ := c.List(); len(ds) != 0 {
		t.Errorf("the failed rebuild left %v", ds)
	}

	// A lock file holding another lock is refused.
	other, err := c.Resolve(ctx, Spec{Name: "alpha", Version: "2.0", IndexURL: ix.URL()})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "locks", digest), []byte(other.Text()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lock(digest); err == nil || !strings.Contains(err.Error(), "holds the lock of "+other.Digest()) {
		t.Errorf("Lock of a swapped file: %v", err)
	}
	if _, err := c.Lock("../x"); err == nil {
		t.Error("Lock accepted a name that is not a digest")
	}
}
