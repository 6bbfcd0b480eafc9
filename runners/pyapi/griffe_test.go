package pyapi

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
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

// TestNovelSetAgreesWithGriffe compares Diff's novel set on the fixture
// with the griffe-based differ's, and logs the agreement. The one
// expected difference is a move without an alias, which Diff reconciles
// by kind, name and signature and an alias-target diff cannot; any other
// difference fails.
func TestNovelSetAgreesWithGriffe(t *testing.T) {
	gpy := griffePython(t)
	script, err := filepath.Abs("testdata/griffe_surface.py")
	if err != nil {
		t.Fatal(err)
	}
	surfaces := map[string]*PackageSurface{}
	objects := map[string][]griffeObject{}
	version := ""
	for _, v := range []string{"1.0", "2.0"} {
		dir := t.TempDir()
		writeTree(t, dir, shapesFiles[v])
		s, err := Surface(t.Context(), python(t), []string{dir}, "shapes", WithModuleTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		surfaces[v] = s
		out, err := exec.Command(gpy, script, dir, "shapes").Output()
		if err != nil {
			t.Fatalf("griffe %s: %v", v, err)
		}
		var dump struct {
			Griffe  string         `json:"griffe"`
			Objects []griffeObject `json:"objects"`
		}
		if err := json.Unmarshal(out, &dump); err != nil {
			t.Fatal(err)
		}
		objects[v], version = dump.Objects, dump.Griffe
	}
	theirs := griffeNovel(objects["1.0"], objects["2.0"])
	ours := map[string]bool{}
	for _, c := range Diff(surfaces["1.0"], surfaces["2.0"]) {
		if c.Novel {
			ours[c.Module()+"."+c.QualName()] = true
		}
	}
	expected := map[string]string{
		"shapes.metric.scale": "moved without an alias: only Diff reconciles it (same kind, name and signature)",
	}
	var both, onlyOurs, onlyTheirs []string
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
	t.Logf("griffe %s: %d novel in both, %d only lacuna %v, %d only griffe %v", version, len(both), len(onlyOurs), onlyOurs, len(onlyTheirs), onlyTheirs)
	for _, id := range append(onlyOurs, onlyTheirs...) {
		if why, ok := expected[id]; ok && !ours[id] {
			t.Logf("%s: %s", id, why)
			continue
		}
		t.Errorf("%s: novel=%v for lacuna, %v for griffe", id, ours[id], theirs[id])
	}
	if len(both) == 0 || !strings.HasPrefix(both[0], "shapes.") {
		t.Errorf("no novel API in common: %v", both)
	}
}
