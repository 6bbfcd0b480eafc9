package discovery_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/discovery"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/runners/pypi/pypitest"
)

// pyShapes are the two releases of the fixture project "py-shapes"
// (module pyshapes). From 1.0.0 to 2.0.0: area gains a keyword (a
// signature change, not novel); geo.manhattan moves to metric.taxicab and
// stays as an alias (not novel); geo.scale moves to metric.scale without
// an alias (not novel: moved); Point is re-exported from metric too (not
// novel); new are perimeter and Point.dist (kept), old_area (deprecated),
// tiny (thin docstring), internal_only (private), and broken.crashy, whose
// module raises at import.
var pyShapes = map[string]map[string]string{
	"1.0.0": {
		"pyshapes/__init__.py": `"""Shapes: a fixture package."""
from pyshapes._geometry import area, Point
from pyshapes import geo

__all__ = ["area", "Point", "geo"]
`,
		"pyshapes/_geometry.py": `def area(w: float, h: float = 1.0) -> float:
    """Area of a w by h rectangle, in square units."""
    return w * h


class Point:
    """A point in the plane, with x and y coordinates."""

    def __init__(self, x: float = 0.0, y: float = 0.0):
        self.x, self.y = x, y

    def norm(self) -> float:
        """Euclidean distance of the point from the origin."""
        return (self.x ** 2 + self.y ** 2) ** 0.5
`,
		"pyshapes/geo.py": `def manhattan(a, b):
    """Manhattan distance between two points in the plane."""
    return abs(a.x - b.x) + abs(a.y - b.y)


def scale(p, k: float):
    """Scale a point by the factor k around the origin."""
    return type(p)(p.x * k, p.y * k)
`,
	},
	"2.0.0": {
		"pyshapes/__init__.py": `"""Shapes: a fixture package."""
from pyshapes._geometry import area, perimeter, old_area, tiny, Point
from pyshapes import geo, metric

__all__ = ["area", "perimeter", "old_area", "tiny", "Point", "geo", "metric"]
`,
		"pyshapes/_geometry.py": `import warnings


def area(w: float, h: float = 1.0, *, unit: str = "m") -> float:
    """Area of a w by h rectangle, in square units."""
    return w * h


def perimeter(w: float, h: float) -> float:
    """Perimeter of a w by h rectangle, in the units of its sides."""
    return 2 * (w + h)


def old_area(w, h):
    """Area of a rectangle, kept for callers of the first release.

    .. deprecated:: 2.0
       Use area.
    """
    warnings.warn("use area", DeprecationWarning, stacklevel=2)
    return w * h


def tiny(x):
    """Tiny helper."""
    return x


def internal_only(x):
    """A public name in a private module, never re-exported anywhere."""
    return x


class Point:
    """A point in the plane, with x and y coordinates."""

    def __init__(self, x: float = 0.0, y: float = 0.0):
        self.x, self.y = x, y

    def norm(self) -> float:
        """Euclidean distance of the point from the origin."""
        return (self.x ** 2 + self.y ** 2) ** 0.5

    def dist(self, other: "Point") -> float:
        """Euclidean distance between this point and another point."""
        return ((self.x - other.x) ** 2 + (self.y - other.y) ** 2) ** 0.5
`,
		"pyshapes/metric.py": `from pyshapes._geometry import Point


def taxicab(a, b):
    """Manhattan distance between two points in the plane."""
    return abs(a.x - b.x) + abs(a.y - b.y)


def scale(p, k: float):
    """Scale a point by the factor k around the origin."""
    return type(p)(p.x * k, p.y * k)
`,
		"pyshapes/geo.py": `from pyshapes.metric import taxicab as manhattan
`,
		"pyshapes/broken.py": `raise RuntimeError("boom at import")


def crashy(x):
    """A function in a module that cannot be imported at all."""
    return x
`,
	},
}

const pySurfacePipeline = `
model "m" {
  id     = "example/model"
  cutoff = "2024-06-01"
}
library "shapes" {
  ecosystem = "python"
  name      = "py-shapes"
}
node "version_resolve" "shapes" {
  library = library.shapes
  cutoff  = model.m.cutoff
}
node "surface_diff" "shapes" {
  versions  = node.version_resolve.shapes
  ecosystem = "python"
}
`

// needPython skips the test without python3, or fails it under CI=true.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 not found: %v", err)
		}
		t.Skipf("python3 not found: %v (the test fails instead under CI=true)", err)
	}
}

// storeDir is a directory for the test's store outside /tmp (bubblewrap
// mounts the environments at their paths, and /tmp is the sandbox's own)
// that the sandbox's uid can reach: /var/tmp.
func storeDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "lacuna-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func publishShapes(t *testing.T, ix *pypitest.Index, version, day string) {
	t.Helper()
	if err := ix.Publish("py-shapes", pypitest.Release{Version: version, Uploaded: pypitest.Day(day), Files: pyShapes[version]}); err != nil {
		t.Fatal(err)
	}
}

// TestSurfaceDiffPythonClassifiesEveryAPIOfTheNewRelease runs
// version_resolve and surface_diff on a loopback index: 1.0.0 (2024-01-10)
// before the cutoff, 2.0.0 (2024-09-01) after it.
func TestSurfaceDiffPythonClassifiesEveryAPIOfTheNewRelease(t *testing.T) {
	needPython(t)
	ix := pypitest.NewIndex()
	publishShapes(t, ix, "1.0.0", "2024-01-10")
	publishShapes(t, ix, "2.0.0", "2024-09-01")
	index := pypitest.Serve(t, ix)
	useIndex(t, index)
	t.Setenv("LACUNA_PY_INSTALLER", "pip") // the fixture index holds no uv
	dir := storeDir(t)
	run := nodetest.Run(t, dir, pySurfacePipeline)
	rows := nodetest.Read[discovery.APIRow](t, run, "node.surface_diff.shapes")

	byID := map[string]discovery.APIRow{}
	var novel []string
	for _, a := range rows {
		if a.ID == "" {
			t.Errorf("library or package row %+v", a)
			continue
		}
		byID[a.ID] = a
		if a.Novel {
			novel = append(novel, a.ID)
		}
		if a.Library != "py-shapes" || a.Module != "py-shapes" || a.VOld != "1.0.0" || a.VNew != "2.0.0" ||
			!strings.HasPrefix(a.VNewHash, "sha256:") || len(a.VNewEnv) != 64 {
			t.Errorf("%s: library columns %+v", a.ID, a)
		}
	}
	sort.Strings(novel)
	wantNovel := []string{
		"pyshapes._geometry:Point.dist", "pyshapes._geometry:internal_only", "pyshapes._geometry:old_area",
		"pyshapes._geometry:perimeter", "pyshapes._geometry:tiny", "pyshapes.broken:crashy",
	}
	if strings.Join(novel, " ") != strings.Join(wantNovel, " ") {
		t.Errorf("novel\n%v\nwant\n%v", novel, wantNovel)
	}
	for _, c := range []struct {
		id, path string
		keep     bool
		reason   string // the reasons, exactly
	}{
		{"pyshapes._geometry:perimeter", "pyshapes.perimeter", true, ""},
		{"pyshapes._geometry:Point.dist", "pyshapes.Point.dist", true, ""},
		{"pyshapes._geometry:old_area", "pyshapes.old_area", false, "deprecated (DeprecationWarning in the body)"},
		{"pyshapes._geometry:tiny", "pyshapes.tiny", false, "thin docstring (2 words < 5)"},
		{"pyshapes._geometry:internal_only", "pyshapes._geometry.internal_only", false, "private: no public path (underscore names, or left out of __all__)"},
		{"pyshapes.broken:crashy", "pyshapes.broken.crashy", false, "defining module fails to import"},
		{"pyshapes._geometry:area", "pyshapes.area", false, "not novel: in the old version"},
		{"pyshapes.metric:taxicab", "pyshapes.metric.taxicab", false, "not novel: reachable at the old path pyshapes.geo.manhattan (re-export or alias)"},
		{"pyshapes.metric:scale", "pyshapes.metric.scale", false, "not novel: moved: same kind, class, name and signature, old identity gone"},
		{"pyshapes._geometry:Point", "pyshapes.Point", false, "not novel: in the old version"},
	} {
		a, ok := byID[c.id]
		if !ok {
			t.Errorf("%s missing", c.id)
			continue
		}
		if a.Path != c.path || a.Keep != c.keep || a.Reasons != c.reason {
			t.Errorf("%s: path %q keep %v reasons %q; want %q %v %q", c.id, a.Path, a.Keep, a.Reasons, c.path, c.keep, c.reason)
		}
	}
	if a := byID["pyshapes._geometry:area"]; a.OldSignature == "" || !strings.Contains(a.Signature, "unit") {
		t.Errorf("area: signature %q, old %q: want the change recorded", a.Signature, a.OldSignature)
	}
	if a := byID["pyshapes._geometry:Point"]; !strings.Contains(a.Paths, "pyshapes.metric.Point") {
		t.Errorf("Point: paths %q, want the re-export from metric", a.Paths)
	}
	if a := byID["pyshapes._geometry:Point.dist"]; a.Receiver != "Point" || a.Kind != "method" || a.Package != "pyshapes._geometry" {
		t.Errorf("Point.dist: receiver %q kind %q package %q", a.Receiver, a.Kind, a.Package)
	}
	if a := byID["pyshapes.broken:crashy"]; !a.ImportError {
		t.Errorf("crashy: import_error not set")
	}

	// A second run: everything cached.
	again := nodetest.Run(t, dir, pySurfacePipeline)
	for _, n := range []string{"node.version_resolve.shapes", "node.surface_diff.shapes"} {
		if s := again.Nodes[n].State; s != "cached" {
			t.Errorf("second run: %s %s, want cached", n, s)
		}
	}
	// Another index, dating the releases alike: version_resolve stays
	// cached, surface_diff runs again, as its environments come from the
	// index (which is in its key).
	useIndex(t, pypitest.Serve(t, ix))
	other := nodetest.Run(t, dir, pySurfacePipeline)
	for n, want := range map[string]string{"node.version_resolve.shapes": "cached", "node.surface_diff.shapes": "done"} {
		if s := other.Nodes[n].State; string(s) != want {
			t.Errorf("another index: %s %s, want %s", n, s, want)
		}
	}
	useIndex(t, index)
	// A pre-release changes the page, so version_resolve runs again and
	// picks the same versions; its row's why counts the new release, so
	// surface_diff runs again, on the cached environments, and writes the
	// same artifact: nothing below it re-runs.
	pyShapes["2.1.0rc1"] = pyShapes["2.0.0"]
	publishShapes(t, ix, "2.1.0rc1", "2024-10-01")
	pre := nodetest.Run(t, dir, pySurfacePipeline)
	if vr := pre.Nodes["node.version_resolve.shapes"].State; vr != "done" {
		t.Errorf("after a pre-release: version_resolve %s, want done", vr)
	}
	if before, after := run.Nodes["node.surface_diff.shapes"].Output.Digest, pre.Nodes["node.surface_diff.shapes"].Output.Digest; before != after {
		t.Errorf("after a pre-release: surface_diff wrote %s, before %s: want the same artifact", after, before)
	}
	// A final release moves v_new: surface_diff runs on it.
	pyShapes["2.1.0"] = pyShapes["2.0.0"]
	publishShapes(t, ix, "2.1.0", "2024-11-01")
	moved := nodetest.Run(t, dir, pySurfacePipeline)
	if sd := moved.Nodes["node.surface_diff.shapes"].State; sd != "done" {
		t.Errorf("after 2.1.0: surface_diff %s, want done", sd)
	}
	if rows := nodetest.Read[discovery.APIRow](t, moved, "node.surface_diff.shapes"); len(rows) == 0 || rows[0].VNew != "2.1.0" {
		t.Errorf("after 2.1.0: rows of v_new %v", rows[0].VNew)
	}
}

// TestSurfaceDiffPythonOnRealPyPI diffs attrs across the cutoff
// 2024-06-01 on pypi.org, with uv bootstrapped into the store. Opt-in:
// it needs the network (LACUNA_TEST_NET=1). It checks the counts are
// sane, not what they are.
func TestSurfaceDiffPythonOnRealPyPI(t *testing.T) {
	if os.Getenv("LACUNA_TEST_NET") == "" {
		t.Skip("set LACUNA_TEST_NET=1 to use pypi.org")
	}
	needPython(t)
	useIndex(t, "")
	t.Setenv("LACUNA_PY_INSTALLER", "")
	src := strings.NewReplacer(`"py-shapes"`, `"attrs"`).Replace(pySurfacePipeline)
	run := nodetest.Run(t, storeDir(t), src)
	rows := nodetest.Read[discovery.APIRow](t, run, "node.surface_diff.shapes")
	novel, kept := 0, 0
	for _, a := range rows {
		if a.ID == "" {
			t.Errorf("not analysed: %s %s: %s", a.Kind, a.Package, a.Reasons)
		}
		if a.Novel {
			novel++
		}
		if a.Keep {
			kept++
		}
	}
	if len(rows) == 0 || novel == 0 || novel >= len(rows) || kept == 0 || kept > novel {
		t.Errorf("attrs: %d APIs, %d novel, %d kept: want 0 < kept <= novel < APIs", len(rows), novel, kept)
	}
	t.Logf("attrs %s → %s: %d APIs, %d novel, %d kept", rows[0].VOld, rows[0].VNew, len(rows), novel, kept)
}

// TestSurfaceDiffPythonContainsAnImportThatKillsTheInterpreter: 2.0.0's
// package pycrash calls os._exit at import, which kills the helper. That
// package becomes one row with the reason; the distribution's other
// package is diffed as usual.
func TestSurfaceDiffPythonContainsAnImportThatKillsTheInterpreter(t *testing.T) {
	needPython(t)
	ok := func(extra string) string {
		return `def known(x):
    """Return x unchanged, as the first release already did."""
    return x
` + extra
	}
	ix := pypitest.NewIndex()
	if err := ix.Publish("py-crash",
		pypitest.Release{Version: "1.0.0", Uploaded: pypitest.Day("2024-01-10"), Files: map[string]string{
			"pycrash/__init__.py":    "",
			"pycrash_ok/__init__.py": ok(""),
		}},
		pypitest.Release{Version: "2.0.0", Uploaded: pypitest.Day("2024-09-01"), Files: map[string]string{
			"pycrash/__init__.py": "import os\nos._exit(3)\n",
			"pycrash_ok/__init__.py": ok(`

def added(x):
    """Return x doubled, new in the second release of the package."""
    return 2 * x
`),
		}},
	); err != nil {
		t.Fatal(err)
	}
	useIndex(t, pypitest.Serve(t, ix))
	t.Setenv("LACUNA_PY_INSTALLER", "pip")
	src := strings.NewReplacer(`"py-shapes"`, `"py-crash"`).Replace(pySurfacePipeline)
	run := nodetest.Run(t, storeDir(t), src)
	rows := nodetest.Read[discovery.APIRow](t, run, "node.surface_diff.shapes")
	var got []string
	for _, a := range rows {
		switch {
		case a.ID == "" && a.Kind == "package" && a.Package == "pycrash" && strings.Contains(a.Reasons, "py-crash==2.0.0 could not be listed") && strings.Contains(a.Reasons, "exit status 3"):
			got = append(got, "package pycrash failed")
		case a.ID != "":
			got = append(got, fmt.Sprintf("%s novel=%v keep=%v", a.ID, a.Novel, a.Keep))
		default:
			t.Errorf("unexpected row %+v", a)
		}
	}
	sort.Strings(got)
	want := []string{"package pycrash failed", "pycrash_ok:added novel=true keep=true", "pycrash_ok:known novel=false keep=false"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSurfaceDiffPythonListsReExportsOfSiblingPackages: a distribution
// with two top-level packages, as attrs installs attr and attrs. 2.0.0's
// front package exports core's new Props, which core itself leaves private:
// it is public through front, and core's define gains the path
// front.define.
func TestSurfaceDiffPythonListsReExportsOfSiblingPackages(t *testing.T) {
	needPython(t)
	impl := `def define(cls):
    """Decorate a class with the generated methods of the package."""
    return cls
`
	ix := pypitest.NewIndex()
	if err := ix.Publish("py-twin",
		pypitest.Release{Version: "1.0.0", Uploaded: pypitest.Day("2024-01-10"), Files: map[string]string{
			"core/__init__.py":  "from core._impl import define\n__all__ = [\"define\"]\n",
			"core/_impl.py":     impl,
			"front/__init__.py": "from core._impl import define\n__all__ = [\"define\"]\n",
		}},
		pypitest.Release{Version: "2.0.0", Uploaded: pypitest.Day("2024-09-01"), Files: map[string]string{
			"core/__init__.py": "from core._impl import define\n__all__ = [\"define\"]\n",
			"core/_impl.py": impl + `

class Props:
    """The properties of a decorated class, as inspect returns them."""
`,
			"front/__init__.py": "from core._impl import Props, define\n__all__ = [\"Props\", \"define\"]\n",
		}},
	); err != nil {
		t.Fatal(err)
	}
	useIndex(t, pypitest.Serve(t, ix))
	t.Setenv("LACUNA_PY_INSTALLER", "pip")
	src := strings.NewReplacer(`"py-shapes"`, `"py-twin"`).Replace(pySurfacePipeline)
	run := nodetest.Run(t, storeDir(t), src)
	var got []string
	for _, a := range nodetest.Read[discovery.APIRow](t, run, "node.surface_diff.shapes") {
		got = append(got, fmt.Sprintf("%s paths=%q internal=%v novel=%v keep=%v", a.ID, a.Paths, a.Internal, a.Novel, a.Keep))
	}
	sort.Strings(got)
	want := []string{
		`core._impl:Props paths="core._impl.Props front.Props" internal=false novel=true keep=true`,
		`core._impl:define paths="core._impl.define core.define front.define" internal=false novel=false keep=false`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSurfaceDiffPythonFailsOnAnUnavailableFileHost: while the file host
// answers 503, surface_diff fails naming the release and saying a re-run
// retries, and stores nothing; once it answers, a re-run diffs.
func TestSurfaceDiffPythonFailsOnAnUnavailableFileHost(t *testing.T) {
	needPython(t)
	ix := pypitest.NewIndex()
	publishShapes(t, ix, "1.0.0", "2024-01-10")
	publishShapes(t, ix, "2.0.0", "2024-09-01")
	var down atomic.Bool
	down.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() && strings.HasPrefix(r.URL.Path, "/files/") {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		ix.ServeHTTP(w, r)
	}))
	defer srv.Close()
	useIndex(t, srv.URL+"/simple/")
	t.Setenv("LACUNA_PY_INSTALLER", "pip")
	t.Setenv("PIP_RETRIES", "0") // pip's own retries only slow the test
	dir := storeDir(t)
	failed := nodetest.RunErr(t, dir, pySurfacePipeline)
	sd := failed.Nodes["node.surface_diff.shapes"]
	if sd == nil || sd.State != "failed" || sd.Err == nil {
		t.Fatalf("surface_diff with the file host answering 503: %+v, want failed", sd)
	}
	for _, want := range []string{"py-shapes==1.0.0", "transient", "a re-run retries", "503"} {
		if !strings.Contains(sd.Err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, sd.Err)
		}
	}
	t.Log(sd.Err)
	down.Store(false)
	again := nodetest.Run(t, dir, pySurfacePipeline)
	if s := again.Nodes["node.surface_diff.shapes"].State; s != "done" {
		t.Errorf("re-run with the file host back: surface_diff %s, want done (nothing was stored)", s)
	}
	var apis int
	for _, a := range nodetest.Read[discovery.APIRow](t, again, "node.surface_diff.shapes") {
		if a.ID == "" {
			t.Errorf("re-run: library or package row %+v", a)
		}
		apis++
	}
	if apis == 0 {
		t.Error("re-run: no rows")
	}
}
