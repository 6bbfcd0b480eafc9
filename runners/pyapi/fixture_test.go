package pyapi

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// python returns the real interpreter (not a shim that needs the user's
// environment): LACUNA_TEST_PYTHON when set, else python3 on PATH.
// Missing, it skips, or fails under CI=true.
func python(t testing.TB) string {
	t.Helper()
	py := os.Getenv("LACUNA_TEST_PYTHON")
	if py == "" {
		py = "python3"
	}
	out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		msg := "no Python interpreter (" + py + "): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return strings.TrimSpace(string(out))
}

func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.TrimLeft(content, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// shapesFiles are both versions of the fixture package "shapes". From 1.0
// to 2.0: Point moves to a private module and stays re-exported; Coord is
// a new alias of Point; geo.manhattan moves to metric.taxicab and stays as
// an alias; geo.scale moves to metric.scale without an alias;
// geo.chebyshev, left out of geo's __all__, is exported; area gains
// a keyword; the rest of 2.0's public API is new (a deprecated function in
// each of three ways, a thin docstring, a dict subclass without docs, a
// doctest with a private helper, a class with every kind of member, a
// dataclass, a function made by exec without source). broken.py raises at import in both, noisy.py prints, quits.py
// calls sys.exit, slow.py sleeps past the module timeout (2.0 only).
var shapesFiles = map[string]map[string]string{
	"1.0": {
		"shapes/__init__.py": `
"""Shapes: a fixture package."""
from shapes._geometry import area, Point
from shapes import geo

__all__ = ["area", "Point", "geo"]
`,
		"shapes/_geometry.py": `
def area(w: float, h: float = 1.0) -> float:
    """Area of a w by h rectangle, in square units."""
    return w * h


def internal_only(x):
    """A public name in a private module, never re-exported."""
    return x


class Point:
    """A point in the plane, with x and y coordinates."""

    def __init__(self, x: float = 0.0, y: float = 0.0):
        self.x, self.y = x, y

    def norm(self) -> float:
        """Euclidean distance of the point from the origin."""
        return (self.x ** 2 + self.y ** 2) ** 0.5
`,
		"shapes/geo.py": `
__all__ = ["manhattan", "scale"]


def chebyshev(a, b):
    """Chebyshev distance between the two points a and b."""
    return max(abs(a.x - b.x), abs(a.y - b.y))


def manhattan(a, b):
    """Manhattan distance between the two points a and b."""
    return abs(a.x - b.x) + abs(a.y - b.y)


def scale(p, k: float):
    """Scale the point p by the factor k around the origin."""
    return type(p)(p.x * k, p.y * k)
`,
		"shapes/broken.py": `
def fragile(x: int = 1) -> int:
    """Return x unchanged; this module fails at import time."""
    return x

raise RuntimeError("no backend available")
`,
		"shapes/tests/__init__.py": "",
		"shapes/tests/test_geo.py": "import pytest\n",
	},
	"2.0": {
		"shapes/__init__.py": `
"""Shapes: a fixture package."""
from shapes._geometry import area, double, nop, Registry, Canvas, Box
from shapes._geometry import perimeter_v0, half_area, quarter_area
from shapes._point import Point
from shapes import geo, metric

Coord = Point

__all__ = ["area", "double", "nop", "Registry", "Canvas", "Box", "Point", "Coord",
           "perimeter_v0", "half_area", "quarter_area", "geo", "metric"]
`,
		"shapes/_compat.py": `
def deprecated(msg):
    """Marks an object as deprecated, as warnings.deprecated does."""
    def wrap(f):
        f.__deprecated__ = msg
        return f
    return wrap
`,
		"shapes/_point.py": `
class Point:
    """A point in the plane, with x and y coordinates."""

    def __init__(self, x: float = 0.0, y: float = 0.0):
        self.x, self.y = x, y

    def norm(self) -> float:
        """Euclidean distance of the point from the origin."""
        return (self.x ** 2 + self.y ** 2) ** 0.5
`,
		"shapes/_geometry.py": `
import dataclasses
import warnings

from shapes._compat import deprecated

SENTINEL = object()


def area(w: float, h: float = 1.0, *, unit: str = "m") -> float:
    """Area of a w by h rectangle, in square units."""
    return w * h


def internal_only(x):
    """A public name in a private module, never re-exported."""
    return x


def _twice(x):
    return x + x


def double(x, missing=SENTINEL):
    """Return twice the number x, for any numeric type.

    >>> double(2)
    4
    """
    return _twice(x)


def nop():
    """Nothing."""


@deprecated("use area")
def perimeter_v0(w, h):
    """Perimeter of a w by h rectangle, in units."""
    return 2 * (w + h)


def half_area(w, h):
    """Half the area of a w by h rectangle, in square units."""
    warnings.warn("half_area is deprecated", DeprecationWarning, stacklevel=2)
    return w * h / 2


def quarter_area(w, h):
    """Quarter of the area of a w by h rectangle.

    .. deprecated:: 2.0
       Use area(w, h) / 4.
    """
    return w * h / 4


class Registry(dict):
    def get(self, key, default=None):
        return super().get(key, default)


class Canvas:
    """A drawing surface that shapes are drawn onto, in order."""

    def draw(self, shape, *, color: str = "black") -> None:
        """Draw the shape onto the canvas in the given color."""

    @classmethod
    def blank(cls, size: int = 10) -> "Canvas":
        """A new empty canvas of the given size in pixels."""
        return cls()

    @staticmethod
    def units() -> list[str]:
        """The units a canvas can be measured in, as names."""
        return ["px"]

    @property
    def size(self) -> int:
        """The size of the canvas in pixels, on each side."""
        return 10


@dataclasses.dataclass
class Box:
    """A box with a width, to hold shapes that are drawn later."""
    w: float = 1.0
`,
		"shapes/metric.py": `
def taxicab(a, b):
    """Manhattan distance between the two points a and b."""
    return abs(a.x - b.x) + abs(a.y - b.y)


def scale(p, k: float):
    """Scale the point p by the factor k around the origin."""
    return type(p)(p.x * k, p.y * k)
`,
		"shapes/geo.py": `
from shapes.metric import taxicab as manhattan


def chebyshev(a, b):
    """Chebyshev distance between the two points a and b."""
    return max(abs(a.x - b.x), abs(a.y - b.y))
`,
		"shapes/broken.py": `
def fragile(x: int = 1) -> int:
    """Return x unchanged; this module fails at import time."""
    return x


def sturdy() -> None:
    """New in 2.0, in a module that fails at import time."""

raise RuntimeError("no backend available")
`,
		"shapes/noisy.py": `
import os
import sys
print("hello from noisy")
sys.stdout.write("more noise\n")
os.write(1, b"raw noise on fd 1\n")


def loud() -> str:
    """A function in a module that prints at import time."""
    return "loud"
`,
		"shapes/quits.py": `
import sys
sys.exit(3)
`,
		"shapes/tests/__init__.py": "",
		"shapes/tests/test_geo.py": "import pytest\n",
		"shapes/generated.py": `
exec("def made(x):\n    'Made at import time by exec, so no file holds its source.'\n    return x\n")
`,
		"shapes/slow.py": `
import time
time.sleep(60)


def late():
    """Never seen by introspection: the import times out."""
`,
	},
}

// fixture writes one version of shapes into a temporary directory and
// returns its surface.
func fixture(t *testing.T, version string) *PackageSurface {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, shapesFiles[version])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Surface(ctx, python(t), []string{dir}, "shapes", WithModuleTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
