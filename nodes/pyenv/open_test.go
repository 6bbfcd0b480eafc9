package pyenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes"
	rpyenv "github.com/lacuna-dev/lacuna/runners/pyenv"
)

// logRun is the part of a node's run Open uses: its log.
type logRun struct {
	nodes.Run
	logs []string
}

func (r *logRun) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// writeEnv lays out, under cache, what an environment of lock with no
// packages is made of (the lock inside, the interpreter link, pyvenv.cfg,
// an empty site-packages), and keeps its lock.
func writeEnv(t *testing.T, cache string, lock *rpyenv.Lock) {
	t.Helper()
	env := filepath.Join(cache, "envs", lock.Digest())
	site := filepath.Join(env, "lib", "python3.11", "site-packages")
	for _, d := range []string{site, filepath.Join(env, "bin"), filepath.Join(cache, "locks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, text := range map[string]string{
		filepath.Join(env, "lacuna-lock.txt"):        lock.Text(),
		filepath.Join(env, "pyvenv.cfg"):             "home = /usr/bin\n",
		filepath.Join(cache, "locks", lock.Digest()): lock.Text(),
	} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/usr/bin/python3", filepath.Join(env, "bin", "python")); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRefusesWhatCannotBeTheEnvironmentSayingHowToRebuildIt: an
// environment, or a kept lock to rebuild it from, made with another
// interpreter than the pinned one (upgraded in place), and a damaged kept
// lock, fail Open with the advice to run the surface_diff again; an
// environment of the pinned interpreter is opened as it is.
func TestOpenRefusesWhatCannotBeTheEnvironmentSayingHowToRebuildIt(t *testing.T) {
	pinned := &rpyenv.Python{Path: "/usr/bin/python3", Implementation: "cpython", Version: "3.11.7", Platform: "linux-x86_64"}
	lock := func(python string) *rpyenv.Lock {
		return &rpyenv.Lock{Python: python, Installer: "pip 23.2.1", Root: "py-stats==2.0.0"}
	}
	advice := []string{"py-stats==2.0.0: environment ", "upstream of node.filter.x", "lacuna run --recompute node.surface_diff."}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, cache string) string // returns the digest
		want  []string
		is    error
	}{
		{"environment of an older interpreter", func(t *testing.T, cache string) string {
			l := lock("cpython 3.11.6 linux-x86_64")
			writeEnv(t, cache, l)
			return l.Digest()
		}, append([]string{"cannot be used", "cpython 3.11.6", "cpython 3.11.7"}, advice...), rpyenv.ErrToolsChanged},
		{"lock of an older interpreter, environment deleted", func(t *testing.T, cache string) string {
			l := lock("cpython 3.11.6 linux-x86_64")
			writeEnv(t, cache, l)
			if err := os.RemoveAll(filepath.Join(cache, "envs")); err != nil {
				t.Fatal(err)
			}
			return l.Digest()
		}, append([]string{"cannot be rebuilt from its lock", "cpython 3.11.6"}, advice...), rpyenv.ErrToolsChanged},
		{"damaged lock, environment deleted", func(t *testing.T, cache string) string {
			l := lock("cpython 3.11.7 linux-x86_64")
			writeEnv(t, cache, l)
			if err := os.RemoveAll(filepath.Join(cache, "envs")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(cache, "locks", l.Digest()), []byte("lacuna-pyenv-lock-v1\npython x\n\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return l.Digest()
		}, append([]string{"its kept lock is damaged"}, advice...), nil},
		{"environment of the pinned interpreter", func(t *testing.T, cache string) string {
			l := lock("cpython 3.11.7 linux-x86_64")
			writeEnv(t, cache, l)
			return l.Digest()
		}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := t.TempDir()
			digest := tc.setup(t, cache)
			p := &Python{Cache: &rpyenv.Cache{Dir: cache, Python: pinned}}
			env, err := p.Open(context.Background(), &logRun{}, digest, "py-stats", "2.0.0", "node.filter.x")
			if tc.want == nil {
				if err != nil || env.Digest() != digest {
					t.Fatalf("Open = %v, %v; want the environment", env, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Open = %v, want an error", env)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want %q", err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
		})
	}
}
