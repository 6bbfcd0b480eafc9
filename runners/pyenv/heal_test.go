package pyenv

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestParseLockRefusesBadTextWithoutPanicking(t *testing.T) {
	head := "lacuna-pyenv-lock-v1\npython x\ninstaller y\nroot z\n"
	h := " sha256:" + strings.Repeat("a", 64)
	for _, text := range []string{
		"",
		"\n",
		"lacuna-pyenv-lock-v1",
		"lacuna-pyenv-lock-v1\npython x\ninstaller y\n",
		"lacuna-pyenv-lock-v1\ninstaller y\npython x\nroot z\n",
		head + "\n",
		head + "   \n",
		head + "\n\n",
		head + "alpha==1.0" + h + "\n\n",
		head + "alpha==1.0\n",
		head + "alpha" + h + "\n",
		head + "==1.0" + h + "\n",
		head + "alpha==" + h + "\n",
		head + "alpha==1.0 sha256:\n",
		head + "alpha==1.0 sha256:" + strings.Repeat("A", 64) + "\n",
		head + "alpha==1.0" + h + " x\n",
		head + "al pha==1.0" + h + "\n",
		head + "alpha==1.0==2" + h + "\n",
		head + "\x00" + h + "\n",
	} {
		if l, err := ParseLock(text); err == nil {
			t.Errorf("ParseLock(%q) = %+v, want an error", text, l)
		}
	}
}

// FuzzParseLock: ParseLock never panics, and what it accepts round-trips
// through Text.
func FuzzParseLock(f *testing.F) {
	h := " sha256:" + strings.Repeat("a", 64)
	for _, s := range []string{
		"lacuna-pyenv-lock-v1\npython x\ninstaller y\nroot z\n",
		"lacuna-pyenv-lock-v1\npython x\ninstaller y\nroot z\nalpha==1.0" + h + "\n",
		"lacuna-pyenv-lock-v1\npython x\ninstaller y\nroot z\n\n",
		"lacuna-pyenv-lock-v1\npython x\ninstaller y\nroot z\n \t \n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		l, err := ParseLock(text)
		if err != nil {
			return
		}
		back, err := ParseLock(l.Text())
		if err != nil || back.Digest() != l.Digest() {
			t.Errorf("ParseLock(%q) = %q, which reads back as %v, %v", text, l.Text(), back, err)
		}
	})
}

// breakages damage an environment the way an interrupted rm -rf (or a
// stray hand) may: each must make Get refuse it as incomplete.
var breakages = []struct {
	name string
	path func(t *testing.T, env string) string // what is moved away
}{
	{"a module file", func(t *testing.T, env string) string {
		return filepath.Join(sitePackages(t, env), "alpha", "__init__.py")
	}},
	{"a RECORD", func(t *testing.T, env string) string { return filepath.Join(distInfo(t, env, "beta"), "RECORD") }},
	{"a METADATA", func(t *testing.T, env string) string { return filepath.Join(distInfo(t, env, "beta"), "METADATA") }},
	{"a whole dist-info", func(t *testing.T, env string) string { return distInfo(t, env, "beta") }},
	{"the interpreter link", func(t *testing.T, env string) string { return filepath.Join(env, "bin", "python") }},
	{"pyvenv.cfg", func(t *testing.T, env string) string { return filepath.Join(env, "pyvenv.cfg") }},
	{"the lock file", func(t *testing.T, env string) string { return filepath.Join(env, lockFile) }},
}

func sitePackages(t *testing.T, env string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(env, "lib", "python*", "site-packages"))
	if len(m) != 1 {
		t.Fatalf("%s: site-packages %v", env, m)
	}
	return m[0]
}

func distInfo(t *testing.T, env, name string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(sitePackages(t, env), name+"-*.dist-info"))
	if len(m) != 1 {
		t.Fatalf("%s: %s dist-info %v", env, name, m)
	}
	return m[0]
}

// TestPartlyDeletedEnvironmentIsRebuiltNotUsed: an environment missing
// any of its files is not handed out by Get (it is os.ErrNotExist, so the
// caller rebuilds from the lock), and Install replaces it with a whole
// one, also when its lock file is the part that is gone.
func TestPartlyDeletedEnvironmentIsRebuiltNotUsed(t *testing.T) {
	c := pipCache(t)
	ix := standardIndex(t)
	ctx := context.Background()
	first, err := c.Create(ctx, Spec{Name: "alpha", Version: "1.0", IndexURL: ix.URL(), ExcludeNewer: day("2020-07-01")})
	if err != nil {
		t.Fatal(err)
	}
	digest := first.Digest()
	files := siteFiles(t, first)
	for _, b := range breakages {
		t.Run(b.name, func(t *testing.T) {
			p := b.path(t, first.Dir)
			aside := filepath.Join(t.TempDir(), "aside")
			if err := os.Rename(p, aside); err != nil {
				t.Fatal(err)
			}
			_, err := c.Get(digest)
			if err := os.Rename(aside, p); err != nil {
				t.Fatal(err)
			}
			if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "is incomplete") {
				t.Errorf("Get without %s: %v, want incomplete (not exist)", b.name, err)
			}
			if _, err := c.Get(digest); err != nil {
				t.Errorf("Get once %s is back: %v", b.name, err)
			}
		})
	}

	// An extra distribution is not the lock's environment either.
	extra := filepath.Join(sitePackages(t, first.Dir), "stray-1.0.dist-info")
	if err := os.Mkdir(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(extra, "METADATA"), []byte("Metadata-Version: 2.1\nName: stray\nVersion: 1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(extra, "RECORD"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(digest); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Get with a distribution the lock lacks: %v, want incomplete", err)
	}
	if err := os.RemoveAll(extra); err != nil {
		t.Fatal(err)
	}

	lock, err := c.Lock(digest)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"a module file", "the lock file"} {
		t.Run("install over "+b, func(t *testing.T) {
			for _, br := range breakages {
				if br.name == b {
					if err := os.RemoveAll(br.path(t, first.Dir)); err != nil {
						t.Fatal(err)
					}
				}
			}
			again, err := c.Install(ctx, lock, ix.URL())
			if err != nil {
				t.Fatalf("Install over an environment without %s: %v", b, err)
			}
			if again.Dir != first.Dir {
				t.Errorf("rebuilt at %s, want %s", again.Dir, first.Dir)
			}
			if got := siteFiles(t, again); !reflect.DeepEqual(got, files) {
				t.Errorf("rebuilt site-packages\n got %v\nwant %v", got, files)
			}
			pyRun(t, again, "import alpha, beta")
			if _, err := c.Get(digest); err != nil {
				t.Errorf("Get after the rebuild: %v", err)
			}
		})
	}
	if left, _ := os.ReadDir(filepath.Join(c.Dir, "tmp")); len(left) != 0 {
		t.Errorf("tmp/ keeps %d entries after the rebuilds", len(left))
	}
}

// TestGetAndInstallRefuseAnotherInterpretersEnvironment: an environment
// made with another interpreter than the cache's (the base interpreter
// upgraded in place) is ErrToolsChanged from Get and Install, not used; a
// lock made by another installer is ErrToolsChanged when it must be
// built. A damaged kept lock is ErrBadLock, and Get writes the right one
// back.
func TestGetAndInstallRefuseAnotherInterpretersEnvironment(t *testing.T) {
	c := pipCache(t)
	ix := standardIndex(t)
	ctx := context.Background()
	env, err := c.Create(ctx, Spec{Name: "alpha", Version: "1.0", IndexURL: ix.URL(), ExcludeNewer: day("2020-07-01")})
	if err != nil {
		t.Fatal(err)
	}
	digest := env.Digest()

	upgraded := *c.Python
	upgraded.Version += "1"
	other := &Cache{Dir: c.Dir, Python: &upgraded, Installer: c.Installer}
	if _, err := other.Get(digest); !errors.Is(err, ErrToolsChanged) || !strings.Contains(err.Error(), upgraded.ID()) {
		t.Errorf("Get with an upgraded interpreter: %v, want ErrToolsChanged naming %s", err, upgraded.ID())
	}
	if _, err := other.Install(ctx, env.Lock, ix.URL()); !errors.Is(err, ErrToolsChanged) {
		t.Errorf("Install with an upgraded interpreter: %v, want ErrToolsChanged", err)
	}
	byUV := *env.Lock
	byUV.Installer = "uv 0.13.9"
	if _, err := c.Install(ctx, &byUV, ix.URL()); !errors.Is(err, ErrToolsChanged) || !strings.Contains(err.Error(), "uv 0.13.9") {
		t.Errorf("Install of another installer's lock: %v, want ErrToolsChanged", err)
	}

	for _, bad := range []string{"garbage", "lacuna-pyenv-lock-v1\npython x\ninstaller y\nroot z\n"} {
		if err := os.WriteFile(c.lockPath(digest), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Lock(digest); !errors.Is(err, ErrBadLock) {
			t.Errorf("Lock of %q: %v, want ErrBadLock", bad, err)
		}
		if _, err := c.Get(digest); err != nil {
			t.Fatal(err)
		}
		if l, err := c.Lock(digest); err != nil || l.Text() != env.Lock.Text() {
			t.Errorf("Lock after Get = %v, %v; want the environment's lock written back", l, err)
		}
	}
}

// TestEnvironmentIsReadableByAllWhateverTheUmask: a build under umask 077
// still gives every directory and file to everyone to read (the sandbox
// runs library code as another user).
func TestEnvironmentIsReadableByAllWhateverTheUmask(t *testing.T) {
	c := pipCache(t)
	ix := standardIndex(t)
	old := syscall.Umask(0o077)
	env, err := c.Create(context.Background(), Spec{Name: "alpha", Version: "1.0", IndexURL: ix.URL(), ExcludeNewer: day("2020-07-01")})
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	err = filepath.WalkDir(env.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o444)
		if d.IsDir() {
			want = 0o555
		}
		if fi.Mode().Perm()&want != want {
			bad = append(bad, p+" "+fi.Mode().Perm().String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("%d entries others cannot read, e.g. %v", len(bad), bad[:min(len(bad), 5)])
	}
	if fi, err := os.Stat(c.lockPath(env.Digest())); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("kept lock: %v, %v; want 0644", fi, err)
	}
}

// TestCheckEnvComparesDistributionsWhateverTheirNamesSort: the lock lists
// its packages by name, site-packages is read in any order, and a name
// that prefixes another ("pydantic", "pydantic-core") sorts differently
// as a NAME==VERSION string; checkEnv must accept an environment holding
// exactly the locked distributions (it refused pydantic's real one).
func TestCheckEnvComparesDistributionsWhateverTheirNamesSort(t *testing.T) {
	dir := t.TempDir()
	site := filepath.Join(dir, "lib", "python3.11", "site-packages")
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("bin/python", "")
	write("pyvenv.cfg", "home = /usr/bin\n")
	lock := &Lock{Python: "cpython 3.11.7 linux-x86_64", Installer: "uv 0.13.9", Root: "pydantic==2.7.2"}
	for _, d := range []struct{ name, dist, version string }{
		{"pydantic", "pydantic", "2.7.2"},
		{"pydantic-core", "pydantic_core", "2.18.3"},
	} {
		info := filepath.Join("lib", "python3.11", "site-packages", d.dist+"-"+d.version+".dist-info")
		write(filepath.Join(info, "METADATA"), "Metadata-Version: 2.1\nName: "+d.name+"\nVersion: "+d.version+"\n\n")
		write(filepath.Join(info, "RECORD"), d.dist+"/__init__.py,,\n"+d.dist+"-"+d.version+".dist-info/METADATA,,\n")
		write(filepath.Join("lib", "python3.11", "site-packages", d.dist, "__init__.py"), "")
		lock.Packages = append(lock.Packages, Package{Name: d.name, Version: d.version, SHA256: []string{strings.Repeat("a", 64)}})
	}
	if err := checkEnv(dir, lock); err != nil {
		t.Fatalf("checkEnv of an environment holding exactly the locked distributions: %v", err)
	}
	if err := os.Remove(filepath.Join(site, "pydantic_core", "__init__.py")); err != nil {
		t.Fatal(err)
	}
	if err := checkEnv(dir, lock); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("checkEnv with a RECORDed file gone = %v, want it missing", err)
	}
}
