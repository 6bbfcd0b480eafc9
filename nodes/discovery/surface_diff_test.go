package discovery_test

import (
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/discovery"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
)

const shapesPipeline = nodetest.ShapesHead + `node "surface_diff" "shapes" {
  versions = node.version_resolve.shapes
  EXTRA
}
`

func surfaceDiff(t *testing.T, extra string) (map[string]discovery.APIRow, *nodetest.Result) {
	t.Helper()
	nodetest.OfflineShapes(t)
	run := nodetest.Run(t, t.TempDir(), strings.Replace(shapesPipeline, "EXTRA", extra, 1))
	rows := nodetest.Read[discovery.APIRow](t, run, "node.surface_diff.shapes")
	if len(rows) == 0 {
		t.Fatal("surface_diff wrote no rows")
	}
	byID := map[string]discovery.APIRow{}
	for _, a := range rows {
		byID[strings.TrimPrefix(a.ID, "example.com/shapes")] = a
	}
	return byID, run
}

// TestSurfaceDiffClassifiesEveryAPIOfTheNewVersion runs version_resolve and
// surface_diff on the offline fixture (v1.0.0 → v1.1.0): every API of
// v1.1.0 gets novel, keep and the reasons it is not kept.
func TestSurfaceDiffClassifiesEveryAPIOfTheNewVersion(t *testing.T) {
	byID, run := surfaceDiff(t, "")
	for _, c := range []struct {
		id     string
		novel  bool
		keep   bool
		reason string // a part of reasons ("" when kept)
	}{
		{".Scale", true, true, ""},
		{".Stack.Pop", true, true, ""},
		{".Clamp", true, true, ""},
		{".Area", false, false, "not novel: in the old version"},
		{".Coord", false, false, "not novel: alias of an API of the old version"},
		{"/metric.Rect", false, false, "not novel: moved"},
		{"/metric.Manhattan", false, false, "not novel: moved"},
		{".OldArea", true, false, "deprecated"},
		{".Tiny", true, false, "thin doc (3 words < 5)"},
		{"/internal/calc.Add", true, false, "internal"},
	} {
		t.Run(c.id, func(t *testing.T) {
			a, ok := byID[c.id]
			if !ok {
				t.Fatalf("%s missing from surface_diff", c.id)
			}
			if a.Novel != c.novel || a.Keep != c.keep || !strings.Contains(a.Reasons, c.reason) || (c.keep && a.Reasons != "") {
				t.Errorf("novel=%v keep=%v reasons %q, want novel=%v keep=%v with %q", a.Novel, a.Keep, a.Reasons, c.novel, c.keep, c.reason)
			}
			if a.VOld != "v1.0.0" || a.VNew != "v1.1.0" || a.Module != "example.com/shapes" || !strings.HasPrefix(a.VNewHash, "h1:") {
				t.Errorf("versions %s → %s@%s (%s)", a.VOld, a.Module, a.VNew, a.VNewHash)
			}
		})
	}
	if n := run.Notes(engine.EventDone)["node.surface_diff.shapes"]; !strings.Contains(n, "v1.0.0→v1.1.0") || !strings.Contains(n, "12 kept") {
		t.Errorf("note %q", n)
	}
}

// TestSurfaceDiffThinDocThreshold: min_doc_words decides which docs are
// thin, and only that.
func TestSurfaceDiffThinDocThreshold(t *testing.T) {
	for _, c := range []struct {
		name, extra string
		tinyKeep    bool
	}{
		{"default", "", false},               // 5 words: "Tiny does little." is thin
		{"three", "min_doc_words = 3", true}, // three words are enough
	} {
		t.Run(c.name, func(t *testing.T) {
			byID, _ := surfaceDiff(t, c.extra)
			if a := byID[".Tiny"]; a.Keep != c.tinyKeep || a.ThinDoc == c.tinyKeep {
				t.Errorf("Tiny: keep=%v thin=%v reasons %q", a.Keep, a.ThinDoc, a.Reasons)
			}
			if !byID[".Scale"].Keep {
				t.Error("Scale is no longer kept")
			}
		})
	}
}

func TestSurfaceDiffRejectsANegativeThreshold(t *testing.T) {
	src := strings.Replace(shapesPipeline, "EXTRA", "min_doc_words = -1", 1)
	cfg, diags := engine.LoadSource("p.hcl", []byte(src), t.TempDir())
	if !diags.HasErrors() {
		_, diags = engine.Expand(cfg, engine.Options{})
	}
	if len(diags) != 1 || diags[0].Summary != "Invalid threshold" || diags[0].Subject == nil || diags[0].Subject.Start.Line != 16 {
		t.Errorf("diagnostics %v", diags)
	}
}
