package pyapi

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestBundlePiecesFromTheSurfaceOfTheShapesFixture runs every bundle piece
// on what Surface found in shapes 2.0: the doctest of double passes in the
// sandbox, its M_code inlines the private _twice, a property's M_code is
// its getter, and S and M_prose come from the surface's rows.
func TestBundlePiecesFromTheSurfaceOfTheShapesFixture(t *testing.T) {
	py := python(t)
	root := outsideTmp(t)
	files := map[string]string{}
	for name, content := range shapesFiles["2.0"] {
		if name != "shapes/slow.py" { // its import timeout is tested elsewhere
			files[name] = content
		}
	}
	files["shapes/_geometry.py"] += `

class Sized:
    @property
    def side(self) -> int:
        """The side."""
        return self._side

    @side.setter
    def side(self, v):
        self._side = v
`
	writeTree(t, root, files)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Surface(ctx, py, []string{root}, "shapes")
	if err != nil {
		t.Fatal(err)
	}
	apis := byID(s)
	pick := []API{apis["shapes._geometry:double"], apis["shapes._geometry:Canvas.size"], apis["shapes._geometry:Sized.side"], apis["shapes._geometry:area"]}
	for _, a := range pick {
		if a.ID == "" {
			t.Fatalf("the surface lacks one of the APIs: %+v", pick)
		}
	}
	codes, errs, err := APICode(ctx, py, []string{root}, append(pick, API{ID: "shapes.generated:made", NoSource: true}), 8000)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{
		"shapes._geometry:double":      "def double(x, missing=SENTINEL):\n    return _twice(x)\n\ndef _twice(x):\n    return x + x",
		"shapes._geometry:Canvas.size": "@property\ndef size(self) -> int:\n    return 10",
		"shapes._geometry:Sized.side":  "@property\ndef side(self) -> int:\n    return self._side",
		"shapes._geometry:area":        "def area(w: float, h: float = 1.0, *, unit: str = \"m\") -> float:\n    return w * h",
	} {
		if c := codes[id]; c == nil || c.Source != want {
			t.Errorf("%s: M_code %+v (err %v), want\n%s", id, c, errs[id], want)
		}
	}
	if errs["shapes.generated:made"] == nil {
		t.Errorf("an API without source has M_code")
	}
	if got := Signature(apis["shapes._geometry:area"]).Text(); got != "def area(w: float, h: float = 1.0, *, unit: str = 'm') -> float\n\nParameters:\n- w float\n- h float = 1.0\n- unit str = 'm'\n\nResults:\n- float" {
		t.Errorf("S of area:\n%s", got)
	}
	if got := Prose(apis["shapes._geometry:double"]); got != "Return twice the number x, for any numeric type." {
		t.Errorf("M_prose of double: %q", got)
	}
	exs, _, err := Doctests(ctx, py, pick)
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != 1 || exs[0].APIID != "shapes._geometry:double" {
		t.Fatalf("doctests %+v, want double's", exs)
	}
	v, err := sandboxFor(t, py, root).Run(ctx, exs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !v.Valid() || len(v.Steps) != 1 || v.Steps[0].Got != "4\n" {
		t.Errorf("double's doctest: %+v", v)
	}
	if strings.Contains(codes["shapes._geometry:double"].Source, ">>>") {
		t.Errorf("M_code of double keeps its doctest")
	}
}
