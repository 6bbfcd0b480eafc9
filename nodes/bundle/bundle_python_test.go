package bundle_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/bundle"
	_ "github.com/lacuna-dev/lacuna/nodes/generic" // concat
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/runners/pypi/pypitest"
)

// pyCalc are the releases of the fixture project "py-calc" (package
// pycalc, MIT). 2.0.0 adds scale (a numpydoc docstring, a doctest that
// passes, the private helper _mul to inline), mean (a doctest that fails),
// clamp (no doctest; the shipped docs/usage.md calls it) and total (no
// example at all).
var pyCalc = map[string]map[string]string{
	"1.0.0": {
		"pycalc/__init__.py": `"""Calc: a fixture package for bundles."""
from pycalc._core import add

__all__ = ["add"]
`,
		"pycalc/_core.py": `def add(a, b):
    """Return the sum of a and b, for any two numbers."""
    return a + b
`,
	},
	"2.0.0": {
		"pycalc/__init__.py": `"""Calc: a fixture package for bundles."""
from pycalc._core import add, scale, mean, clamp, total

__all__ = ["add", "scale", "mean", "clamp", "total"]
`,
		"pycalc/_core.py": `def add(a, b):
    """Return the sum of a and b, for any two numbers."""
    return a + b


def scale(xs, k: int = 2, *, clip: bool = False) -> list:
    """Multiply every number of a list by the factor k.

    Parameters
    ----------
    xs : list
        The numbers to scale.
    k : int
        The factor.
    clip : bool
        Clip negative results to zero.

    Returns
    -------
    list
        The scaled numbers, in order.

    Examples
    --------
    >>> scale([1, 2, 3])
    [2, 4, 6]
    """
    return [_mul(x, k, clip) for x in xs]


def _mul(x, k, clip):
    y = x * k
    return max(y, 0) if clip else y


def mean(xs):
    """Return the arithmetic mean of a non-empty list of numbers.

    >>> mean([1, 2])
    2
    """
    return sum(xs) / len(xs)


def clamp(v, lo, hi):
    """Limit the value v to the closed interval from lo to hi."""
    return max(lo, min(v, hi))


def total(xs):
    """Return the sum of all the numbers of a list, zero when empty."""
    return sum(xs)
`,
		"pycalc/docs/usage.md": "# Usage\n\n```pycon\n>>> import pycalc\n>>> pycalc.clamp(5, 0, 3)\n3\n```\n",
	},
}

// pyGPL are the releases of "py-gpl" (package pygpl, GPL-3.0-or-later):
// 2.0.0 adds twice, with a doctest that passes.
var pyGPL = map[string]map[string]string{
	"1.0.0": {"pygpl/__init__.py": `def one():
    """Return the number one, always and in every release."""
    return 1
`},
	"2.0.0": {"pygpl/__init__.py": `def one():
    """Return the number one, always and in every release."""
    return 1


def twice(x):
    """Return x added to itself, for numbers and strings alike.

    >>> twice("ab")
    'abab'
    """
    return x + x
`},
}

const pyPipeline = `
model "m" {
  id     = "example/model"
  cutoff = "2024-06-01"
}
library "calc" {
  ecosystem = "python"
  name      = "py-calc"
}
library "gpl" {
  ecosystem = "python"
  name      = "py-gpl"
}
node "version_resolve" "calc" {
  library = library.calc
  cutoff  = model.m.cutoff
}
node "version_resolve" "gpl" {
  library = library.gpl
  cutoff  = model.m.cutoff
}
node "surface_diff" "calc" {
  versions  = node.version_resolve.calc
  ecosystem = "python"
}
node "surface_diff" "gpl" {
  versions  = node.version_resolve.gpl
  ecosystem = "python"
}
node "concat" "apis" {
  inputs = [node.surface_diff.calc, node.surface_diff.gpl]
}
node "bundle" "py" {
  apis      = node.concat.apis
  ecosystem = "python"
  EXTRA
}
`

func publish(t *testing.T, ix *pypitest.Index, name string, files map[string]map[string]string, meta string) {
	t.Helper()
	var rs []pypitest.Release
	for v, day := range map[string]string{"1.0.0": "2024-01-10", "2.0.0": "2024-09-01"} {
		rs = append(rs, pypitest.Release{Version: v, Uploaded: pypitest.Day(day), Files: files[v], Metadata: []string{meta}})
	}
	if err := ix.Publish(name, rs...); err != nil {
		t.Fatal(err)
	}
}

func offlinePython(t *testing.T) {
	ix := pypitest.NewIndex()
	publish(t, ix, "py-calc", pyCalc, "License-Expression: MIT")
	publish(t, ix, "py-gpl", pyGPL, "License-Expression: GPL-3.0-or-later")
	nodetest.OfflinePython(t, ix)
}

func ptr(s string) *string { return &s }

// TestPythonBundlesFromVersionResolveThroughSurfaceDiff runs the Python
// chain on a loopback index: the bundles are scale, clamp (its example is
// the shipped usage.md's) and twice; mean's doctest fails and total has
// none, so both are dropped.
func TestPythonBundlesFromVersionResolveThroughSurfaceDiff(t *testing.T) {
	offlinePython(t)
	dir := nodetest.StoreDir(t)
	src := strings.Replace(pyPipeline, "EXTRA", "", 1)
	run := nodetest.Run(t, dir, src)
	got := map[string]bundle.Row{}
	for _, b := range nodetest.Read[bundle.Row](t, run, "node.bundle.py") {
		got[b.Qualified] = b
	}
	if names := keys(got); !reflect.DeepEqual(sorted(names), []string{"pycalc.clamp", "pycalc.scale", "pygpl.twice"}) {
		t.Fatalf("bundles %v, want pycalc.clamp, pycalc.scale, pygpl.twice; notes %q", sorted(names), run.Notes(engine.EventDone))
	}
	want := map[string]bundle.Row{
		"pycalc.scale": {
			Library: "py-calc", Ecosystem: "python", Module: "py-calc", Version: "2.0.0", APIID: "pycalc._core:scale", ImportPath: "pycalc", Qualified: "pycalc.scale",
			Kind: "function", Family: "pycalc._core:scale", FamilyRep: true,
			Signature: "def scale(xs, k: int = 2, *, clip: bool = False) -> list",
			Params: []bundle.Param{
				{Name: "xs", Type: "list", Doc: "The numbers to scale.", Kind: "positional_or_keyword"},
				{Name: "k", Type: "int", Doc: "The factor.", Kind: "positional_or_keyword", Default: ptr("2")},
				{Name: "clip", Type: "bool", Doc: "Clip negative results to zero.", Kind: "keyword_only", Default: ptr("False")},
			},
			Results: []bundle.Param{{Type: "list", Doc: "The scaled numbers, in order."}},
			Examples: []bundle.Example{{Name: "pycalc._core:scale", Kind: bundle.KindExample, File: "pycalc/_core.py", Code: "scale([1, 2, 3])\n", Output: "[2, 4, 6]\n",
				Status: "passed", Valid: true, Module: "pycalc._core", Steps: `[{"source":"scale([1, 2, 3])\n","want":"[2, 4, 6]\n"}]`}},
			ValidExamples: 1,
			MProse:        "Multiply every number of a list by the factor k.\n\nParameters\n----------\nxs : list\n    The numbers to scale.\nk : int\n    The factor.\nclip : bool\n    Clip negative results to zero.\n\nReturns\n-------\nlist\n    The scaled numbers, in order.",
			MProseTier:    "doc",
			MCode:         "def scale(xs, k: int = 2, *, clip: bool = False) -> list:\n    return [_mul(x, k, clip) for x in xs]\n\ndef _mul(x, k, clip):\n    y = x * k\n    return max(y, 0) if clip else y",
			MCodeHelpers:  []string{"_mul"}, MCodeOmitted: []string{},
			License: "MIT", LicenseFile: "License-Expression",
		},
		"pygpl.twice": {
			Library: "py-gpl", Ecosystem: "python", Module: "py-gpl", Version: "2.0.0", APIID: "pygpl:twice", ImportPath: "pygpl", Qualified: "pygpl.twice",
			Kind: "function", Family: "pygpl:twice", FamilyRep: true,
			Signature: "def twice(x)",
			Params:    []bundle.Param{{Name: "x", Kind: "positional_or_keyword"}},
			Results:   []bundle.Param{},
			Examples: []bundle.Example{{Name: "pygpl:twice", Kind: bundle.KindExample, File: "pygpl/__init__.py", Code: "twice(\"ab\")\n", Output: "'abab'\n",
				Status: "passed", Valid: true, Module: "pygpl", Steps: `[{"source":"twice(\"ab\")\n","want":"'abab'\n"}]`}},
			ValidExamples: 1,
			MProse:        "Return x added to itself, for numbers and strings alike.",
			MProseTier:    "doc",
			MCode:         "def twice(x):\n    return x + x",
			MCodeHelpers:  []string{}, MCodeOmitted: []string{},
			License: "GPL-3.0-or-later", LicenseFile: "License-Expression", Copyleft: true,
		},
	}
	for name, w := range want {
		g := got[name]
		if g.VNewEnv == "" {
			t.Errorf("bundle %s: v_new_env %q, want the environment's digest", name, g.VNewEnv)
		}
		g.VNewEnv = ""
		if !reflect.DeepEqual(g, w) {
			t.Errorf("bundle %s\n got %+v\nwant %+v", name, g, w)
		}
	}
	clamp := got["pycalc.clamp"]
	if len(clamp.Examples) != 1 || clamp.Examples[0].File != "pycalc/docs/usage.md" || clamp.Examples[0].Kind != bundle.KindReadme || !clamp.Examples[0].Valid || clamp.Examples[0].Output != "3\n" {
		t.Errorf("clamp's example from the shipped docs: %+v", clamp.Examples)
	}
	notes := run.Notes(engine.EventDone)
	wantNote := "py-calc 2.0.0: 4 kept, 2 with validated examples, 2 bundles (examples: failed 1, passed 2; 2 passed with output checked); " +
		"py-gpl 2.0.0: 1 kept, 1 with validated examples, 1 bundles (examples: passed 1; 1 passed with output checked)"
	if n := notes["node.bundle.py"]; n != wantNote {
		t.Errorf("note\n%q\nwant\n%q", n, wantNote)
	}

	// A second run computes nothing and still reports.
	again := nodetest.Run(t, dir, src)
	for addr, r := range again.Nodes {
		if r.State != "cached" {
			t.Errorf("second run: %s %s", addr, r.State)
		}
	}
	if n := again.Notes(engine.EventCached)["node.bundle.py"]; n != wantNote {
		t.Errorf("cached note %q", n)
	}
}

// pyCalcTests is the test suite of py-calc 2.0.0's source distribution:
// total (no doctest) and mean (a failing doctest) are exercised by tests
// that pass, total also by a longer one and by one that fails; a test
// that needs a fixture it cannot inline is not an example.
var pyCalcTests = map[string]string{
	"tests/test_core.py": `import unittest
import pytest
from pycalc import total, mean


class TotalTests(unittest.TestCase):
    def test_total(self):
        self.assertEqual(total([1, 2]), 3)

    def test_total_long(self):
        xs = [1, 2, 3, 4]
        self.assertEqual(total(xs), 10)
        self.assertEqual(total([]), 0)

    def test_total_wrong(self):
        self.assertEqual(total([10, 20, 30]), 70)


def test_mean():
    assert mean([1, 2]) == 1.5


def test_needs_a_fixture(tmp_path):
    assert total([1]) == 1
`,
}

// TestPythonBundleTakesExamplesFromTheSdistsTests: py-calc 2.0.0 is
// published with a source distribution whose tests call total and mean;
// those become E entries of kind "test" (file the test file, validated in
// the sandbox, a failing one kept invalid), so total and mean have bundles
// now, with at most max_mined tests each, the shortest first. py-gpl has
// no sdist: its bundle is as before.
func TestPythonBundleTakesExamplesFromTheSdistsTests(t *testing.T) {
	ix := pypitest.NewIndex()
	var rs []pypitest.Release
	for v, day := range map[string]string{"1.0.0": "2024-01-10", "2.0.0": "2024-09-01"} {
		r := pypitest.Release{Version: v, Uploaded: pypitest.Day(day), Files: pyCalc[v], Metadata: []string{"License-Expression: MIT"}}
		if v == "2.0.0" {
			r.Sdist = pyCalcTests
		}
		rs = append(rs, r)
	}
	if err := ix.Publish("py-calc", rs...); err != nil {
		t.Fatal(err)
	}
	publish(t, ix, "py-gpl", pyGPL, "License-Expression: GPL-3.0-or-later")
	nodetest.OfflinePython(t, ix)
	run := nodetest.Run(t, nodetest.StoreDir(t), strings.Replace(pyPipeline, "EXTRA", "max_mined = 2", 1))
	got := map[string]bundle.Row{}
	for _, b := range nodetest.Read[bundle.Row](t, run, "node.bundle.py") {
		got[b.Qualified] = b
	}
	if names := sorted(keys(got)); !reflect.DeepEqual(names, []string{"pycalc.clamp", "pycalc.mean", "pycalc.scale", "pycalc.total", "pygpl.twice"}) {
		t.Fatalf("bundles %v; notes %q", names, run.Notes(engine.EventDone))
	}
	type ex struct {
		name, kind, status string
		valid              bool
	}
	want := map[string][]ex{
		"pycalc.total": {
			{"tests/test_core.py::TotalTests::test_total", "test", "passed", true},
			{"tests/test_core.py::TotalTests::test_total_wrong", "test", "runtime_error", false},
		},
		"pycalc.mean": {
			{"pycalc._core:mean", "example", "failed", false},
			{"tests/test_core.py::test_mean", "test", "passed", true},
		},
		"pygpl.twice": {{"pygpl:twice", "example", "passed", true}},
	}
	for api, w := range want {
		var g []ex
		for _, e := range got[api].Examples {
			g = append(g, ex{e.Name, e.Kind, e.Status, e.Valid})
			if e.Kind == bundle.KindTest && (e.File != "tests/test_core.py" || e.Module != "" || !strings.Contains(e.Code, "from pycalc import ")) {
				t.Errorf("%s: test example %s: file %q module %q code\n%s", api, e.Name, e.File, e.Module, e.Code)
			}
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s's examples %+v, want %+v", api, g, w)
		}
	}
	if e := got["pycalc.total"].Examples[0]; e.Code != "from pycalc import total\n\nassert total([1, 2]) == 3\n" {
		t.Errorf("total's test made a program:\n%s", e.Code)
	}
	a, err := run.Store.GetAction(run.Nodes["node.bundle.py"].Key)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"py-calc==2.0.0: 4 test functions of py_calc-2.0.0.tar.gz", "not standalone: fixture 1", "py-gpl==2.0.0: no test examples"} {
		if !strings.Contains(a.Logs, line) {
			t.Errorf("log lacks %q:\n%s", line, a.Logs)
		}
	}
}

// TestPythonBundleKeepsAPIsWithoutValidExamplesWhenAsked: with
// require_example = false, mean's failing doctest is in its bundle with
// the verdict and what it printed, and total has an empty E. Then, with
// the environments deleted from the store's cache, a bundle that runs
// again rebuilds them from their kept locks and gives the same bundles;
// with the locks deleted too, it fails, stores nothing and says how to
// rebuild them.
func TestPythonBundleKeepsAPIsWithoutValidExamplesWhenAsked(t *testing.T) {
	offlinePython(t)
	dir := nodetest.StoreDir(t)
	run := nodetest.Run(t, dir, strings.Replace(pyPipeline, "EXTRA", "require_example = false", 1))
	got := map[string]bundle.Row{}
	for _, b := range nodetest.Read[bundle.Row](t, run, "node.bundle.py") {
		got[b.Qualified] = b
	}
	if names := sorted(keys(got)); !reflect.DeepEqual(names, []string{"pycalc.clamp", "pycalc.mean", "pycalc.scale", "pycalc.total", "pygpl.twice"}) {
		t.Fatalf("bundles %v", names)
	}
	mean := got["pycalc.mean"]
	if len(mean.Examples) != 1 || mean.Examples[0].Status != "failed" || strings.TrimSpace(mean.Examples[0].Got) != "1.5" || mean.ValidExamples != 0 {
		t.Errorf("mean's example: %+v", mean.Examples)
	}
	if e := got["pycalc.total"].Examples; len(e) != 0 {
		t.Errorf("total's examples: %+v", e)
	}

	// The environments deleted from the store's cache: a bundle that runs
	// again rebuilds v_new's from its kept lock, to the same digest.
	cache := filepath.Join(dir, ".lacuna", "cache", "python")
	if err := os.RemoveAll(filepath.Join(cache, "envs")); err != nil {
		t.Fatal(err)
	}
	healed := nodetest.Run(t, dir, strings.Replace(pyPipeline, "EXTRA", "require_example = false\n  max_code_bytes = 9000", 1))
	if s := healed.Nodes["node.surface_diff.calc"].State; s != engine.StateCached {
		t.Errorf("surface_diff %s, want cached", s)
	}
	res := healed.Nodes["node.bundle.py"]
	if res.State != engine.StateDone {
		t.Fatalf("bundle after deleting the environments: %s, want done", res.State)
	}
	again := map[string]bundle.Row{}
	for _, b := range nodetest.Read[bundle.Row](t, healed, "node.bundle.py") {
		again[b.Qualified] = b
	}
	if !reflect.DeepEqual(again, got) {
		t.Errorf("bundles from the rebuilt environments differ:\n got %+v\nwant %+v", again, got)
	}
	a, err := healed.Store.GetAction(res.Key)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []bundle.Row{got["pycalc.scale"], got["pygpl.twice"]} {
		line := fmt.Sprintf("rebuilding environment %s==2.0.0 (%.12s) from its lock", b.Library, b.VNewEnv)
		if !strings.Contains(a.Logs, line) {
			t.Errorf("log lacks %q:\n%s", line, a.Logs)
		}
		if _, err := os.Stat(filepath.Join(cache, "envs", b.VNewEnv)); err != nil {
			t.Errorf("%s's environment was not rebuilt under its digest: %v", b.Library, err)
		}
	}

	// With the locks deleted too, a bundle that runs again fails, stores
	// nothing and says how to rebuild them.
	for _, d := range []string{"envs", "locks"} {
		if err := os.RemoveAll(filepath.Join(cache, d)); err != nil {
			t.Fatal(err)
		}
	}
	gone := nodetest.RunErr(t, dir, strings.Replace(pyPipeline, "EXTRA", "require_example = false\n  max_code_bytes = 9001", 1))
	if s := gone.Nodes["node.surface_diff.calc"].State; s != "cached" {
		t.Errorf("surface_diff %s, want cached", s)
	}
	res = gone.Nodes["node.bundle.py"]
	if res.State != "failed" || res.Err == nil {
		t.Fatalf("bundle without environments: %s %v, want failed", res.State, res.Err)
	}
	for _, want := range []string{"is no longer in the store's Python cache, nor its lock", "lacuna run --recompute node.surface_diff.", "upstream of node.concat.apis"} {
		if !strings.Contains(res.Err.Error(), want) {
			t.Errorf("error %q, want %q", res.Err, want)
		}
	}
	if _, err := gone.Store.GetAction(res.Key); !errors.Is(err, artifacts.ErrNotFound) {
		t.Errorf("a failed bundle stored a result")
	}
}

// TestPythonBundlesOnRealPyPI bundles attrs and more-itertools across the
// cutoff 2024-06-01 on pypi.org. Opt-in: it needs the network
// (LACUNA_TEST_NET=1). attrs' kept APIs have no doctest, so its bundle
// keeps APIs without examples (require_example = false); more-itertools'
// docstrings are doctests, so its bundles have validated examples. It
// checks there are bundles, not how many.
func TestPythonBundlesOnRealPyPI(t *testing.T) {
	if os.Getenv("LACUNA_TEST_NET") == "" {
		t.Skip("set LACUNA_TEST_NET=1 to use pypi.org")
	}
	nodetest.NeedPython(t)
	nodetest.ReachablePython(t)
	nodetest.UseIndex(t, "")
	t.Setenv("LACUNA_PY_INSTALLER", "")
	src := `
model "m" {
  id     = "example/model"
  cutoff = "2024-06-01"
}
`
	for _, l := range []struct{ name, dist, extra string }{{"attrs", "attrs", "require_example = false"}, {"mi", "more-itertools", ""}} {
		src += strings.NewReplacer("NAME", l.name, "DIST", l.dist, "EXTRA", l.extra).Replace(`
library "NAME" {
  ecosystem = "python"
  name      = "DIST"
}
node "version_resolve" "NAME" {
  library = library.NAME
  cutoff  = model.m.cutoff
}
node "surface_diff" "NAME" {
  versions  = node.version_resolve.NAME
  ecosystem = "python"
}
node "bundle" "NAME" {
  apis      = node.surface_diff.NAME
  ecosystem = "python"
  EXTRA
}
`)
	}
	run := nodetest.Run(t, nodetest.StoreDir(t), src)
	for _, name := range []string{"attrs", "mi"} {
		rows := nodetest.Read[bundle.Row](t, run, "node.bundle."+name)
		note := run.Notes(engine.EventDone)["node.bundle."+name]
		if len(rows) == 0 {
			t.Errorf("%s: no bundles; note %q", name, note)
		}
		for _, b := range rows {
			if b.MCode == "" || b.License != "MIT" || b.Copyleft || name == "mi" && b.ValidExamples == 0 {
				t.Errorf("%s: %d valid examples, M_code %d bytes, licence %s copyleft %v", b.Qualified, b.ValidExamples, len(b.MCode), b.License, b.Copyleft)
			}
		}
		t.Logf("%s: %s", name, note)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// TestBundleRejectsAnUnknownEcosystemAtItsAttribute: the error names the
// file, line and column of the attribute.
func TestBundleRejectsAnUnknownEcosystemAtItsAttribute(t *testing.T) {
	dir := t.TempDir()
	src := strings.Replace(pyPipeline, "ecosystem = \"python\"\n  EXTRA", "ecosystem = \"rust\"", 1)
	_, diags := engine.ExpandSource(filepath.Join(dir, "p.hcl"), []byte(src), dir, engine.Options{})
	if got := diags.Error(); !diags.HasErrors() || !strings.Contains(got, "p.hcl:35,15-21") || !strings.Contains(got, `not "rust"`) {
		t.Errorf("diagnostics %q, want the ecosystem attribute's position and the value", got)
	}
}
