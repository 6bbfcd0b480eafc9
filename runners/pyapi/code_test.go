package pyapi

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// codeFiles: geo.py calls helpers of its own (transitively, recursively,
// through a private constant and a private method) and an imported
// _shared of the same name as a helper of other.py.
var codeFiles = map[string]string{
	"pkg/geo.py": `
"""Geometry."""
from pkg.other import _shared

__all__ = ["area", "Point", "countdown", "shadow", "bare", "oneliner", "big"]

_SCALE = 2  # a private constant


def area(w, h=1.0):
    """Area of a rectangle.

    >>> area(2, 3)
    6.0
    """
    # the comment stays
    return _mul(w, h) + _shared(w)


def _mul(a, b):
    """Multiply, scaled."""
    return _scale(a) * b


def _scale(x):
    return x * _SCALE if x else _mul(1, 1)


def countdown(n):
    """Recursive, calling an unexported public-named helper."""
    return 0 if n == 0 else countdown(n - 1) + unlisted(n)


def unlisted(n):
    return n


def shadow(_mul):
    """A parameter shadows the helper."""
    return _mul(1)


class Point:
    """A point."""

    def __init__(self, x):
        self.x = x

    def norm(self):
        """Norm of the point."""
        return self._check(abs(self.x))

    def _check(self, v):
        """Check."""
        return _mul(v, 1)


class bare(Exception):
    """Only a docstring."""


def oneliner(): "doc"; return _SCALE


def big():
    return _large()


def _large():
    return """` + strings.Repeat("x", 400) + `"""
`,
	"pkg/other.py": `
def _shared(x):
    """Never inlined into geo: geo imports it."""
    return x
`,
	"pkg/__init__.py": "",
}

func TestSourceCodeStripsDocstringsAndInlinesSameModuleHelpers(t *testing.T) {
	py := python(t)
	dir := t.TempDir()
	writeTree(t, dir, codeFiles)
	file := filepath.Join(dir, "pkg", "geo.py")
	for _, tc := range []struct {
		qualname string
		max      int
		helpers  []string
		omitted  []string
		source   string // exact when set
		has      []string
		hasNot   []string
		unparsed bool
	}{
		{qualname: "area", max: 8000, helpers: []string{"_SCALE", "_mul", "_scale"},
			source: "def area(w, h=1.0):\n    # the comment stays\n    return _mul(w, h) + _shared(w)\n\n" +
				"_SCALE = 2  # a private constant\n\n" +
				"def _mul(a, b):\n    return _scale(a) * b\n\n" +
				"def _scale(x):\n    return x * _SCALE if x else _mul(1, 1)"},
		{qualname: "countdown", max: 8000, helpers: []string{"unlisted"}, has: []string{"countdown(n - 1)"}},
		{qualname: "shadow", max: 8000, helpers: []string{}},
		{qualname: "Point.norm", max: 8000, helpers: []string{"_SCALE", "_mul", "_scale", "Point._check"},
			has: []string{"def norm(self):\n    return self._check(abs(self.x))\n\n_SCALE", "\n\ndef _check(self, v):\n    return _mul(v, 1)"}},
		{qualname: "Point", max: 8000, helpers: []string{"_SCALE", "_mul", "_scale"}, hasNot: []string{"A point.", "Norm of", "Check."}, has: []string{"class Point:\n    def __init__"}},
		{qualname: "bare", max: 8000, helpers: []string{}, source: "class bare(Exception):\n    pass"},
		{qualname: "oneliner", max: 8000, helpers: []string{"_SCALE"}, unparsed: true, hasNot: []string{"doc"}},
		{qualname: "big", max: 200, helpers: []string{}, omitted: []string{"_large"}, source: "def big():\n    return _large()"},
	} {
		codes, errs, err := SourceCode(context.Background(), py, file, []string{tc.qualname}, tc.max)
		if err != nil {
			t.Fatal(err)
		}
		if errs[tc.qualname] != nil {
			t.Errorf("%s: %v", tc.qualname, errs[tc.qualname])
			continue
		}
		c := codes[tc.qualname]
		if c.Helpers == nil {
			c.Helpers = []string{}
		}
		if !reflect.DeepEqual(c.Helpers, tc.helpers) {
			t.Errorf("%s: helpers %q, want %q", tc.qualname, c.Helpers, tc.helpers)
		}
		if !reflect.DeepEqual(c.Omitted, tc.omitted) || c.Truncated != (len(tc.omitted) > 0) {
			t.Errorf("%s: omitted %q truncated %v, want %q", tc.qualname, c.Omitted, c.Truncated, tc.omitted)
		}
		if tc.source != "" && c.Source != tc.source {
			t.Errorf("%s: source\n%s\nwant\n%s", tc.qualname, c.Source, tc.source)
		}
		for _, s := range tc.has {
			if !strings.Contains(c.Source, s) {
				t.Errorf("%s: source lacks %q:\n%s", tc.qualname, s, c.Source)
			}
		}
		for _, s := range append(tc.hasNot, `"""Never inlined`, "def _shared") {
			if strings.Contains(c.Source, s) {
				t.Errorf("%s: source has %q:\n%s", tc.qualname, s, c.Source)
			}
		}
		if c.Unparsed != tc.unparsed {
			t.Errorf("%s: unparsed %v, want %v", tc.qualname, c.Unparsed, tc.unparsed)
		}
	}
}

func TestSourceCodeReportsUnknownNamesAndUnparsableFiles(t *testing.T) {
	py := python(t)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"m.py": "def f():\n    return 1\n", "bad.py": "def f(:\n"})
	_, errs, err := SourceCode(context.Background(), py, filepath.Join(dir, "m.py"), []string{"f", "g"}, 8000)
	if err != nil || errs["f"] != nil || errs["g"] == nil || !strings.Contains(errs["g"].Error(), "no def or class g") {
		t.Errorf("errs %v, err %v; want an error for g only", errs, err)
	}
	if _, _, err := SourceCode(context.Background(), py, filepath.Join(dir, "bad.py"), []string{"f"}, 8000); err == nil || !strings.Contains(err.Error(), "SyntaxError") {
		t.Errorf("unparsable file: err %v, want a SyntaxError", err)
	}
}
