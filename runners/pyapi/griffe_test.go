package pyapi

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"
)

// griffePython returns an interpreter that imports griffe: the test
// Python when it has it, or (LACUNA_TEST_NET=1 only) a virtual
// environment made in a temporary directory with griffe installed from
// the package index. Otherwise the test skips: the check is opt-in.
func griffePython(t *testing.T) string {
	t.Helper()
	py := python(t)
	if exec.Command(py, "-c", "import griffe").Run() == nil {
		return py
	}
	if os.Getenv("LACUNA_TEST_NET") != "1" {
		t.Skip("griffe is not importable by " + py + "; set LACUNA_TEST_NET=1 to install it into a temporary venv")
	}
	venv := filepath.Join(t.TempDir(), "venv")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, py, "-m", "venv", venv).CombinedOutput(); err != nil {
		t.Fatalf("venv: %v\n%s", err, out)
	}
	vpy := filepath.Join(venv, "bin", "python")
	if out, err := exec.CommandContext(ctx, vpy, "-m", "pip", "install", "-q", "griffe").CombinedOutput(); err != nil {
		t.Fatalf("pip install griffe: %v\n%s", err, out)
	}
	return vpy
}

type griffeObject struct {
	Canonical string   `json:"canonical"`
	Kind      string   `json:"kind"`
	Paths     []string `json:"paths"`
}

// griffeNovel is an independent differ: griffe's static surfaces of both
// versions diffed by alias target. An object of the new version is novel
// when neither its canonical path nor any path it is reachable at was a
// path of the old version.
func griffeNovel(old, new []griffeObject) map[string]bool {
	oldPaths := map[string]bool{}
	for _, o := range old {
		oldPaths[o.Canonical] = true
		for _, p := range o.Paths {
			oldPaths[p] = true
		}
	}
	out := map[string]bool{}
	for _, o := range new {
		novel := !oldPaths[o.Canonical]
		for _, p := range o.Paths {
			if oldPaths[p] {
				novel = false
			}
		}
		if novel {
			out[o.Canonical] = true
		}
	}
	return out
}

// agreement diffs the package pkg installed under oldDir and newDir with
// Diff and with the griffe-based differ, and returns the novel canonical
// paths (module.qualname) both, only Diff and only griffe find.
func agreement(t *testing.T, gpy, pkg, oldDir, newDir string) (version string, both, onlyOurs, onlyTheirs []string) {
	t.Helper()
	script, err := filepath.Abs("testdata/griffe_surface.py")
	if err != nil {
		t.Fatal(err)
	}
	var surfaces []*PackageSurface
	var objects [][]griffeObject
	for _, dir := range []string{oldDir, newDir} {
		s, err := Surface(t.Context(), python(t), []string{dir}, pkg, WithModuleTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		surfaces = append(surfaces, s)
		out, err := exec.Command(gpy, script, dir, pkg).Output()
		if err != nil {
			t.Fatalf("griffe %s: %v", dir, err)
		}
		var dump struct {
			Griffe  string         `json:"griffe"`
			Objects []griffeObject `json:"objects"`
		}
		if err := json.Unmarshal(out, &dump); err != nil {
			t.Fatal(err)
		}
		objects, version = append(objects, dump.Objects), dump.Griffe
	}
	theirs := griffeNovel(objects[0], objects[1])
	ours := map[string]bool{}
	for _, c := range Diff(surfaces[0], surfaces[1]) {
		if c.Novel {
			ours[c.Module()+"."+c.QualName()] = true
		}
	}
	for id := range ours {
		if theirs[id] {
			both = append(both, id)
		} else {
			onlyOurs = append(onlyOurs, id)
		}
	}
	for id := range theirs {
		if !ours[id] {
			onlyTheirs = append(onlyTheirs, id)
		}
	}
	sort.Strings(both)
	sort.Strings(onlyOurs)
	sort.Strings(onlyTheirs)
	t.Logf("%s, griffe %s: %d novel for both, %d only for Diff %v, %d only for griffe %v", pkg, version, len(both), len(onlyOurs), onlyOurs, len(onlyTheirs), onlyTheirs)
	return version, both, onlyOurs, onlyTheirs
}

// checkAgreement fails on every difference not explained in expected.
func checkAgreement(t *testing.T, both, onlyOurs, onlyTheirs []string, expected map[string]string) {
	t.Helper()
	for _, id := range slices.Concat(onlyOurs, onlyTheirs) {
		if why, ok := expected[id]; ok {
			t.Logf("%s: %s", id, why)
			continue
		}
		t.Errorf("%s: novel for only one of Diff (%v) and griffe", id, slices.Contains(onlyOurs, id))
	}
	if len(both) == 0 {
		t.Error("no novel API in common")
	}
}

// TestNovelSetAgreesWithGriffe compares Diff's novel set on the fixture
// with the griffe-based differ's. The expected differences: a move
// without an alias, which Diff reconciles by kind, name and signature and
// an alias-target diff cannot, and a function made by exec, which a
// static reader cannot see.
func TestNovelSetAgreesWithGriffe(t *testing.T) {
	gpy := griffePython(t)
	dirs := map[string]string{}
	for _, v := range []string{"1.0", "2.0"} {
		dirs[v] = t.TempDir()
		writeTree(t, dirs[v], shapesFiles[v])
	}
	_, both, onlyOurs, onlyTheirs := agreement(t, gpy, "shapes", dirs["1.0"], dirs["2.0"])
	checkAgreement(t, both, onlyOurs, onlyTheirs, map[string]string{
		"shapes.metric.scale":   "moved without an alias: only Diff reconciles it (same kind, name and signature)",
		"shapes.generated.made": "made by exec at import time: only introspection sees it",
	})
}

// TestNovelSetAgreesWithGriffeOnPyPI installs two releases each of
// networkx and pydantic from the package index (LACUNA_TEST_NET=1 only)
// and compares the novel sets. The differences expected are explained:
// griffe reads statically, so it cannot see pydantic's lazy top-level
// exports (module __getattr__), and the griffe differ here skips
// underscore names that a module's __all__ exports.
func TestNovelSetAgreesWithGriffeOnPyPI(t *testing.T) {
	if os.Getenv("LACUNA_TEST_NET") != "1" {
		t.Skip("set LACUNA_TEST_NET=1 to install releases from the package index")
	}
	gpy := griffePython(t)
	for _, tc := range []struct {
		pkg, old, new string
		expected      map[string]string
	}{
		{"networkx", "3.1", "3.2", map[string]string{
			"networkx.utils.backends._dispatch": "an underscore name in __all__: exported but private, filtered by Diff's rows",
		}},
		{"pydantic", "2.4.2", "2.5.3", map[string]string{
			"pydantic.validate_call_decorator.validate_call": "re-exported lazily at pydantic.validate_call (module __getattr__), which only introspection sees",
		}},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			dirs := []string{t.TempDir(), t.TempDir()}
			for i, v := range []string{tc.old, tc.new} {
				cmd := exec.Command(gpy, "-m", "pip", "install", "-q", "--no-compile", "--target", dirs[i], tc.pkg+"=="+v)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("pip install %s==%s: %v\n%s", tc.pkg, v, err, out)
				}
			}
			_, both, onlyOurs, onlyTheirs := agreement(t, gpy, tc.pkg, dirs[0], dirs[1])
			checkAgreement(t, both, onlyOurs, onlyTheirs, tc.expected)
		})
	}
}
