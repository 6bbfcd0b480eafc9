package pyharness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// The fixture package: scale is the target, re-exported by the package,
// aliased (rescale), kept as a class attribute (Tools.scale), and called
// by the library itself (pipeline); shift is its sibling.
var fixtureFiles = map[string]string{
	"fixpkg/__init__.py": `from ._impl import scale, shift, pipeline, Tools, Grid
from . import _impl

rescale = scale
`,
	"fixpkg/extra.py": `def unrelated():
    return 0
`,
	"fixpkg/_impl.py": `def scale(xs, factor=2):
    """Multiply each item by factor."""
    return [x * factor for x in xs]


def shift(xs, by=1):
    """Add by to each item."""
    return [x + by for x in xs]


def pipeline(xs, factor):
    """Scale, the library's own way."""
    return scale(xs, factor)


def plot(xs):
    """Needs an optional dependency the environment lacks."""
    import optional_plotting_dep
    return optional_plotting_dep.plot(xs)


class Tools:
    scale = staticmethod(scale)


class Grid:
    def __init__(self, n):
        self.n = n

    def cells(self):
        return self.n * self.n
`,
}

func fixtureTask() Task {
	return Task{
		Target:     Target{ID: "fixpkg._impl:scale", Paths: []string{"fixpkg.scale", "fixpkg.rescale", "fixpkg._impl.scale"}},
		Example:    "fixture",
		Difficulty: Easy,
		Prelude:    "DATA = [1, 2, 3]",
		Signature:  "def solve(xs, k):",
		Reference:  "from fixpkg import scale\nys = scale(xs, factor=k * 10)\nreturn sum(ys) + len(ys)",
		Inputs:     []string{"(DATA, 2)", "([4, 5], 3)"},
	}
}

// python is the interpreter the tests run: the system's, which the
// sandbox mounts with /usr.
func python(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		need(t, "python3 is not installed")
	}
	return p
}

// need skips locally and fails in CI.
func need(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPED LOUDLY: " + msg)
}

// worldDir is a directory that uid 65534 can read (the sandbox's user
// when the tests run as root) and that the sandbox can mount: /var/tmp
// where it exists (the sandbox keeps /tmp and /work for itself), else
// os.TempDir.
func worldDir(t testing.TB) string {
	t.Helper()
	parent := ""
	if fi, err := os.Stat("/var/tmp"); err == nil && fi.IsDir() {
		parent = "/var/tmp"
	}
	dir, err := os.MkdirTemp(parent, "lacuna-pyharness-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

type fixture struct {
	runner *Runner
	sb     *sandbox.Sandbox
	pkg    string // the directory holding fixpkg
}

func newFixture(t testing.TB, parallel int) fixture {
	t.Helper()
	py := python(t)
	sb, err := sandbox.New()
	if err != nil {
		t.Fatal(err)
	}
	pkg := worldDir(t)
	for name, src := range fixtureFiles {
		p := filepath.Join(pkg, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := NewRunner(sb, Config{
		Python: py, Paths: []string{pkg}, ReadOnly: []string{pkg},
		Limits: sandbox.Limits{Wall: 30 * time.Second, Memory: 1 << 30}, Parallel: parallel, Dir: worldDir(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return fixture{runner: r, sb: sb, pkg: pkg}
}

func needBubblewrap(t *testing.T, sb *sandbox.Sandbox) {
	t.Helper()
	if sb.Isolation() != "bubblewrap" {
		need(t, "bubblewrap is not installed: no isolation to test")
	}
}

// expectation derives the fixture task's expectation from three runs of
// the reference.
func (f fixture) expectation(t *testing.T, task Task) Expectation {
	t.Helper()
	var runs []Run
	for i := 0; i < 3; i++ {
		runs = append(runs, f.run(t, task, task.Reference))
	}
	exp, err := Derive(runs)
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

func (f fixture) run(t *testing.T, task Task, solution string) Run {
	t.Helper()
	r, err := f.runner.Run(context.Background(), Sample{Task: task, Solution: solution})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
