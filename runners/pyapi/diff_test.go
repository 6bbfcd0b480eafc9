package pyapi

import (
	"reflect"
	"testing"
)

func TestDiffReconcilesReExportsAliasesAndMoves(t *testing.T) {
	changes := Diff(fixture(t, "1.0"), fixture(t, "2.0"))
	got := map[string]Change{}
	for _, c := range changes {
		got[c.ID] = c
	}
	for _, tc := range []struct {
		id             string
		novel          bool
		sameAs         string
		oldPath        string
		oldSignature   string
		oldImportError bool
	}{
		// Point moved to a private module, re-exported at its old path;
		// its new alias Coord is a path of the same object.
		{id: "shapes._point:Point", sameAs: "shapes._geometry:Point"},
		{id: "shapes._point:Point.norm", sameAs: "shapes._geometry:Point.norm"},
		// Renamed and moved; the old name is an alias: canonical-path drift.
		{id: "shapes.metric:taxicab", sameAs: "shapes.geo:manhattan", oldPath: "shapes.geo.manhattan"},
		// Moved without an alias: same name and signature, old identity gone.
		{id: "shapes.metric:scale", sameAs: "shapes.geo:scale", oldPath: "shapes.geo.scale"},
		// Same identity, a new keyword.
		{id: "shapes._geometry:area", oldSignature: "area(w: float, h: float = 1.0) -> float"},
		{id: "shapes._geometry:internal_only"},
		// Left out of __all__ in 1.0 (unlisted, private), exported in 2.0.
		{id: "shapes.geo:chebyshev"},
		// Read from the syntax tree in both versions (broken at import).
		{id: "shapes.broken:fragile"},
		{id: "shapes.broken:sturdy", novel: true, oldImportError: true},
		{id: "shapes._geometry:double", novel: true},
		{id: "shapes._geometry:nop", novel: true},
		{id: "shapes._geometry:perimeter_v0", novel: true},
		{id: "shapes._geometry:Registry", novel: true},
		{id: "shapes._geometry:Registry.get", novel: true},
		{id: "shapes._geometry:Canvas.size", novel: true},
		{id: "shapes._geometry:Box", novel: true},
		{id: "shapes.noisy:loud", novel: true},
	} {
		c, ok := got[tc.id]
		if !ok {
			t.Errorf("%s: not in the diff", tc.id)
			continue
		}
		if c.Novel != tc.novel || c.SameAs != tc.sameAs || c.OldPath != tc.oldPath || c.OldSignature != tc.oldSignature || (c.OldImportError != "") != tc.oldImportError {
			t.Errorf("%s: novel=%v same_as=%q (%s) old_path=%q old_signature=%q old_import_error=%q,\nwant novel=%v same_as=%q old_path=%q old_signature=%q old_import_error=%v",
				tc.id, c.Novel, c.SameAs, c.How, c.OldPath, c.OldSignature, c.OldImportError, tc.novel, tc.sameAs, tc.oldPath, tc.oldSignature, tc.oldImportError)
		}
	}
}

func TestFilterGivesEveryReason(t *testing.T) {
	changes := Diff(fixture(t, "1.0"), fixture(t, "2.0"))
	got := map[string]Filters{}
	for _, c := range changes {
		got[c.ID] = Filter(c, DefaultMinDocWords)
	}
	for _, tc := range []struct {
		id      string
		reasons []string
	}{
		{"shapes._geometry:double", nil}, // its doctest is not counted, its prose is enough
		{"shapes._geometry:Canvas", nil},
		{"shapes._geometry:Canvas.size", nil},
		{"shapes._geometry:Box", nil},
		{"shapes.noisy:loud", nil},
		{"shapes._geometry:area", []string{"not novel: in the old version"}},
		{"shapes._geometry:nop", []string{"thin docstring (1 words < 5)"}},
		{"shapes._geometry:perimeter_v0", []string{"deprecated (__deprecated__ set (warnings.deprecated))"}},
		{"shapes._geometry:half_area", []string{"deprecated (DeprecationWarning in the body)"}},
		{"shapes._geometry:quarter_area", []string{"deprecated (deprecated in the docstring)"}},
		{"shapes._geometry:Registry", []string{"docstring inherited from the standard library (builtins.dict)"}},
		{"shapes._geometry:Registry.get", []string{"docstring inherited from the standard library (builtins.dict.get)"}},
		{"shapes.generated:made", []string{"no retrievable Python source"}},
		{"shapes._compat:deprecated", []string{"private: no public path (underscore names, or left out of __all__)"}},
		{"shapes.slow:late", []string{"defining module fails to import"}},
		{"shapes.broken:sturdy", []string{"defining module fails to import",
			"novelty uncertain: the module failed to import in the old version (RuntimeError: no backend available (shapes/broken.py:5))"}},
	} {
		f, ok := got[tc.id]
		if !ok {
			t.Errorf("%s: not in the diff", tc.id)
			continue
		}
		if !reflect.DeepEqual(f.Reasons, tc.reasons) || f.Keep != (len(tc.reasons) == 0) {
			t.Errorf("%s: keep=%v reasons %q, want %q", tc.id, f.Keep, f.Reasons, tc.reasons)
		}
	}
}
