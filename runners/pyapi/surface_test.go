package pyapi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func byID(s *PackageSurface) map[string]API {
	out := map[string]API{}
	for _, a := range s.APIs {
		out[a.ID] = a
	}
	return out
}

func TestSurfaceListsPublicAPIWithIdentityAndFacts(t *testing.T) {
	s := fixture(t, "2.0")
	apis := byID(s)
	for _, tc := range []struct {
		id, path, kind, signature string
		private, static           bool
		deprecated                string // a substring of the reason, "" when not deprecated
	}{
		{id: "shapes._geometry:area", path: "shapes.area", kind: "function", signature: "area(w: float, h: float = 1.0, *, unit: str = 'm') -> float"},
		{id: "shapes._point:Point", path: "shapes.Point", kind: "class", signature: "Point(x: float = 0.0, y: float = 0.0)"},
		{id: "shapes._point:Point.norm", path: "shapes.Point.norm", kind: "method", signature: "norm(self) -> float"},
		{id: "shapes._geometry:Canvas.blank", path: "shapes.Canvas.blank", kind: "classmethod", signature: "blank(cls, size: int = 10) -> 'Canvas'"},
		{id: "shapes._geometry:Canvas.units", path: "shapes.Canvas.units", kind: "staticmethod", signature: "units() -> list[str]"},
		{id: "shapes._geometry:Canvas.size", path: "shapes.Canvas.size", kind: "property", signature: "size(self) -> int"},
		{id: "shapes._geometry:Canvas.draw", path: "shapes.Canvas.draw", kind: "method", signature: "draw(self, shape, *, color: str = 'black') -> None"},
		{id: "shapes._geometry:Box", path: "shapes.Box", kind: "class", signature: "Box(w: float = 1.0)"},                  // dataclass: introspected
		{id: "shapes._geometry:double", path: "shapes.double", kind: "function", signature: "double(x, missing=SENTINEL)"}, // default as written
		{id: "shapes.metric:taxicab", path: "shapes.metric.taxicab", kind: "function", signature: "taxicab(a, b)"},
		{id: "shapes._geometry:internal_only", path: "shapes._geometry.internal_only", kind: "function", signature: "internal_only(x)", private: true},
		{id: "shapes._geometry:perimeter_v0", path: "shapes.perimeter_v0", kind: "function", signature: "perimeter_v0(w, h)", deprecated: "__deprecated__"},
		{id: "shapes._geometry:half_area", path: "shapes.half_area", kind: "function", signature: "half_area(w, h)", deprecated: "DeprecationWarning"},
		{id: "shapes._geometry:quarter_area", path: "shapes.quarter_area", kind: "function", signature: "quarter_area(w, h)", deprecated: "docstring"},
		{id: "shapes.broken:sturdy", path: "shapes.broken.sturdy", kind: "function", signature: "sturdy() -> None", static: true},
		{id: "shapes.slow:late", path: "shapes.slow.late", kind: "function", signature: "late()", static: true},
		{id: "shapes.noisy:loud", path: "shapes.noisy.loud", kind: "function", signature: "loud() -> str"},
	} {
		a, ok := apis[tc.id]
		if !ok {
			t.Errorf("%s: not in the surface", tc.id)
			continue
		}
		if a.Path != tc.path || a.Kind != tc.kind || a.Signature != tc.signature || a.Private != tc.private || a.Static != tc.static {
			t.Errorf("%s: path %q kind %q signature %q private=%v static=%v, want %q %q %q %v %v",
				tc.id, a.Path, a.Kind, a.Signature, a.Private, a.Static, tc.path, tc.kind, tc.signature, tc.private, tc.static)
		}
		if (tc.deprecated == "") != (a.Deprecated == "") || !strings.Contains(a.Deprecated, tc.deprecated) {
			t.Errorf("%s: deprecated %q, want %q", tc.id, a.Deprecated, tc.deprecated)
		}
		if a.File == "" || a.Line == 0 || a.NoSource {
			t.Errorf("%s: source %s:%d (no_source=%v), want a file and line", tc.id, a.File, a.Line, a.NoSource)
		}
	}
	for id := range apis {
		if strings.Contains(id, "_twice") || strings.Contains(id, "tests") || strings.HasSuffix(id, ":SENTINEL") {
			t.Errorf("%s: private helpers, test modules and constants are not API", id)
		}
	}
	if p := apis["shapes._point:Point"].Paths; strings.Join(p, " ") != "shapes.Coord shapes.Point shapes._point.Point" {
		t.Errorf("Point paths %v, want its alias, its re-export and its definition", p)
	}
	if a := apis["shapes._geometry:Box"]; a.File != "shapes/_geometry.py" {
		t.Errorf("Box file %q, want shapes/_geometry.py (relative to the path entry)", a.File)
	}
	reg, get := apis["shapes._geometry:Registry"], apis["shapes._geometry:Registry.get"]
	if reg.Doc != "" || !reg.StdlibDoc || reg.DocFrom != "builtins.dict" || !strings.HasPrefix(reg.InheritedDoc, "dict()") {
		t.Errorf("Registry: doc %q inherited from %q (stdlib=%v), want dict's docstring", reg.Doc, reg.DocFrom, reg.StdlibDoc)
	}
	if get.Doc != "" || !get.StdlibDoc || get.DocFrom != "builtins.dict.get" {
		t.Errorf("Registry.get: doc %q inherited from %q (stdlib=%v), want dict.get's docstring", get.Doc, get.DocFrom, get.StdlibDoc)
	}
	if d := apis["shapes._geometry:area"]; d.StdlibDoc || d.InheritedDoc != "" {
		t.Errorf("area has a docstring of its own, inherited %q", d.InheritedDoc)
	}
	if p := apis["shapes._geometry:Canvas.draw"].Params; len(p) != 3 || p[2] != (Param{Name: "color", Kind: "keyword_only", Default: "'black'", HasDefault: true, Annotation: "str"}) {
		t.Errorf("draw params %+v", p)
	}
}

func TestSurfaceReportsImportFailuresPerModule(t *testing.T) {
	s := fixture(t, "2.0")
	want := map[string]string{
		"shapes.broken":         "RuntimeError: no backend available",
		"shapes.quits":          "SystemExit: 3",
		"shapes.slow":           "import timed out",
		"shapes.noisy":          "", // prints at import: its output does not corrupt ours
		"shapes.tests.test_geo": "",
	}
	got := map[string]Module{}
	for _, m := range s.Modules {
		got[m.Name] = m
	}
	for name, prefix := range want {
		m, ok := got[name]
		if !ok {
			t.Errorf("%s: not listed", name)
			continue
		}
		if (prefix == "") != (m.Error == "") || !strings.HasPrefix(m.Error, prefix) {
			t.Errorf("%s: error %q, want %q", name, m.Error, prefix)
		}
	}
	if got["shapes.tests.test_geo"].Skipped != "test module" {
		t.Errorf("test module: skipped %q", got["shapes.tests.test_geo"].Skipped)
	}
	if n := len(s.ImportErrors()); n != 3 {
		t.Errorf("%d import errors, want 3", n)
	}
	if s.Python == "" {
		t.Error("interpreter version missing")
	}
}

func TestSurfaceOfMissingPackageIsAnError(t *testing.T) {
	_, err := Surface(t.Context(), python(t), []string{t.TempDir()}, "no_such_package_here")
	if err == nil || !strings.Contains(err.Error(), "no_such_package_here") {
		t.Fatalf("err = %v, want one naming the package", err)
	}
}

func TestSurfaceNamesTheModuleWhenTheInterpreterDiesOrHangs(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"dies/__init__.py":  "",
		"dies/hard.py":      "import os\nos._exit(7)\n",
		"hangs/__init__.py": "",
		// The module timer cannot interrupt it: only ctx can.
		"hangs/forever.py": "import signal, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])\ntime.sleep(600)\n",
	})
	_, err := Surface(t.Context(), python(t), []string{dir}, "dies")
	var unfinished *UnfinishedError
	if !errors.As(err, &unfinished) || unfinished.Module != "dies.hard" || unfinished.Stage != "importing" || !strings.Contains(err.Error(), "exit status 7") {
		t.Errorf("err = %v, want one naming dies.hard and its exit status", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	_, err = Surface(ctx, python(t), []string{dir}, "hangs", WithModuleTimeout(time.Second))
	if !errors.As(err, &unfinished) || unfinished.Module != "hangs.forever" || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the deadline, while importing hangs.forever", err)
	}
}

func TestParseOutputRejectsGarbageAndTruncation(t *testing.T) {
	for _, tc := range []struct {
		name, out  string
		unfinished bool
	}{
		{"not JSON", "hello\n", false},
		{"no last line", `{"type": "start", "stage": "importing", "module": "m"}` + "\n", true},
		{"empty", "", true},
		{"package not found", `{"type": "error", "error": "ModuleNotFoundError: no module named 'x'"}` + "\n", false},
	} {
		_, err := ParseOutput("m", []byte(tc.out))
		var unfinished *UnfinishedError
		if err == nil || errors.As(err, &unfinished) != tc.unfinished {
			t.Errorf("%s: err = %v, want an error (unfinished=%v)", tc.name, err, tc.unfinished)
		}
	}
}

func TestSurfaceKeepsNamesLeftOutOfAllAsUnlisted(t *testing.T) {
	apis := byID(fixture(t, "1.0"))
	a := apis["shapes.geo:chebyshev"]
	if !a.Private || len(a.Paths) != 0 || strings.Join(a.UnlistedPaths, " ") != "shapes.geo.chebyshev" || a.Path != "shapes.geo.chebyshev" {
		t.Errorf("chebyshev: private=%v paths %v unlisted %v path %q, want private, unlisted at shapes.geo.chebyshev", a.Private, a.Paths, a.UnlistedPaths, a.Path)
	}
	if m := apis["shapes.geo:manhattan"]; m.Private || len(m.UnlistedPaths) != 0 {
		t.Errorf("manhattan: private=%v unlisted %v, want exported", m.Private, m.UnlistedPaths)
	}
}

// TestSurfaceListsCompiledFunctionsAndLambdaPropertiesApart: a compiled
// function (Cython's cython_function_or_method: callable, with __code__,
// neither a Python function nor a builtin; made here in Python with the
// attributes Cython gives it, as the fixture cannot compile Cython) is a
// function, at module level and in a class; properties built from lambdas
// each get their own identity (the class and the attribute), not the one
// Cls.<lambda> they share by __qualname__.
func TestSurfaceListsCompiledFunctionsAndLambdaPropertiesApart(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"compiled/__init__.py": `
"""A package with compiled-like functions and lambda properties."""
from compiled._impl import fast, Vec
`,
		"compiled/_impl.py": `
class cython_function_or_method:
    """What Cython makes of a def: callable, with the function's
    attributes, but neither a Python function nor a builtin."""

    def __init__(self, f):
        for a in ("__name__", "__qualname__", "__module__", "__doc__", "__code__",
                  "__defaults__", "__kwdefaults__", "__annotations__"):
            setattr(self, a, getattr(f, a))

    def __call__(self, *args, **kwargs):
        return None

    def __get__(self, obj, cls=None):
        return self


def _fast(x, n=2):
    """Return x raised to the power n, computed in compiled code."""
    return x ** n


fast = cython_function_or_method(_fast)
fast.__qualname__ = fast.__name__ = "fast"


def _scale(self, k):
    """Return the vector scaled by k, computed in compiled code."""
    return self


class Vec:
    """A two-dimensional vector with properties made from lambdas."""

    x = property(lambda self: 1.0, doc="The first coordinate of the vector.")
    y = property(lambda self: 2.0, doc="The second coordinate of the vector.")
    scale = cython_function_or_method(_scale)
    scale.__qualname__ = "Vec.scale"
`,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Surface(ctx, python(t), []string{dir}, "compiled", WithModuleTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	apis := byID(s)
	for _, tc := range []struct{ id, path, kind, signature string }{
		{"compiled._impl:fast", "compiled.fast", "function", "fast(x, n=2)"},
		{"compiled._impl:Vec.scale", "compiled.Vec.scale", "method", "scale(self, k)"},
		{"compiled._impl:Vec.x", "compiled.Vec.x", "property", "x(self)"},
		{"compiled._impl:Vec.y", "compiled.Vec.y", "property", "y(self)"},
	} {
		a, ok := apis[tc.id]
		if !ok {
			t.Errorf("%s: not in the surface", tc.id)
			continue
		}
		if a.Path != tc.path || a.Kind != tc.kind || a.Signature != tc.signature {
			t.Errorf("%s: path %q kind %q signature %q, want %q %q %q", tc.id, a.Path, a.Kind, a.Signature, tc.path, tc.kind, tc.signature)
		}
	}
	for id := range apis {
		if strings.Contains(id, "<lambda>") {
			t.Errorf("%s: a lambda's qualname as an identity", id)
		}
	}
}

// TestSurfaceListsSiblingPackagesReExports: a distribution with two
// top-level packages (as attrs installs attr and attrs), one re-exporting
// the other's objects, some of them only there. Without WithSiblings those
// objects are foreign to the re-exporting package and left out; with it
// they are listed at its paths, and another package's objects still are
// not.
func TestSurfaceListsSiblingPackagesReExports(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"core/__init__.py": `
from core._impl import define
__all__ = ["define"]
`,
		"core/_impl.py": `
def define(cls):
    "Decorate a class."
    return cls

class Props:
    "Only the front package exports this."
`,
		"front/__init__.py": `
import json
from json import dumps
from core._impl import Props, define
__all__ = ["Props", "define", "dumps"]
`,
	})
	for _, tc := range []struct {
		name     string
		opts     []Option
		want     map[string]string // id -> its paths, joined
		absentID []string
	}{
		{"alone", nil, map[string]string{}, []string{"core._impl:Props", "core._impl:define", "json:dumps"}},
		{"with its sibling", []Option{WithSiblings("core")}, map[string]string{
			"core._impl:Props":  "front.Props",
			"core._impl:define": "front.define",
		}, []string{"json:dumps"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Surface(t.Context(), python(t), []string{dir}, "front", tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			apis := byID(s)
			for id, paths := range tc.want {
				a, ok := apis[id]
				if !ok {
					t.Errorf("%s not listed; got %v", id, apis)
					continue
				}
				if got := strings.Join(a.Paths, " "); got != paths || a.Private {
					t.Errorf("%s: paths %q private %v, want %q, public", id, got, a.Private, paths)
				}
			}
			for _, id := range tc.absentID {
				if _, ok := apis[id]; ok {
					t.Errorf("%s listed, want it left out", id)
				}
			}
		})
	}
}

// TestSurfaceFindsAnEnumClassInItsOwnFile: an Enum subclass's dict holds
// functions enum.py made (_generate_next_value_, ...); its source is its
// own module's, nested in a class or not.
func TestSurfaceFindsAnEnumClassInItsOwnFile(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"tones/__init__.py": `
import enum

class Color(enum.Enum):
    "The colours a tone can take."
    RED = 1

class Props:
    "Properties of a tone."

    class Kind(enum.Enum):
        "Whether a tone is warm or cold."
        WARM = 1
`,
	})
	s, err := Surface(t.Context(), python(t), []string{dir}, "tones")
	if err != nil {
		t.Fatal(err)
	}
	apis := byID(s)
	for id, line := range map[string]int{"tones:Color": 3, "tones:Props.Kind": 10} {
		a, ok := apis[id]
		if !ok {
			t.Errorf("%s not listed", id)
			continue
		}
		if a.File != "tones/__init__.py" || a.Line != line || a.NoSource {
			t.Errorf("%s: file %q line %d no_source %v, want tones/__init__.py:%d", id, a.File, a.Line, a.NoSource, line)
		}
	}
}
