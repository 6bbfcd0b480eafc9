package pyapi

import "testing"

func TestSignatureTextHasParametersDefaultsTypesAndDocs(t *testing.T) {
	for _, tc := range []struct {
		name string
		api  API
		want string
	}{
		{name: "numpydoc function", api: API{Kind: "function", Signature: "area(w: float, h=1.0, *rest, **kw) -> float", Returns: "float",
			Params: []Param{{Name: "w", Kind: "positional_or_keyword", Annotation: "float"}, {Name: "h", Kind: "positional_or_keyword", Default: "1.0", HasDefault: true},
				{Name: "rest", Kind: "var_positional"}, {Name: "kw", Kind: "var_keyword"}},
			Doc: "Area.\n\nParameters\n----------\nw : float\n    Width.\nh : int, optional\n    Height.\n*rest\n    Ignored.\n\nReturns\n-------\nfloat\n    The area,\n    in square units.\n"},
			want: "def area(w: float, h=1.0, *rest, **kw) -> float\n\nParameters:\n- w float: Width.\n- h int, optional = 1.0: Height.\n- *rest: Ignored.\n- **kw\n\nResults:\n- float: The area, in square units."},
		{name: "method drops self; Google returns give the type", api: API{Kind: "method", Signature: "norm(self, p=2)",
			Params: []Param{{Name: "self", Kind: "positional_or_keyword"}, {Name: "p", Kind: "positional_or_keyword", Default: "2", HasDefault: true}},
			Doc:    "Norm.\n\nArgs:\n    p (int): The order.\n\nReturns:\n    float: The norm.\n"},
			want: "def norm(self, p=2)\n\nParameters:\n- p int = 2: The order.\n\nResults:\n- float: The norm."},
		{name: "class has no result; sphinx fields", api: API{Kind: "class", Signature: "Point(x: float = 0.0)",
			Params: []Param{{Name: "x", Kind: "positional_or_keyword", Annotation: "float", Default: "0.0", HasDefault: true}},
			Doc:    "A point.\n\n:param x: The abscissa.\n:returns: nothing\n"},
			want: "class Point(x: float = 0.0)\n\nParameters:\n- x float = 0.0: The abscissa."},
		{name: "classmethod drops cls; sphinx rtype", api: API{Kind: "classmethod", Signature: "blank(cls, size: int = 10)",
			Params: []Param{{Name: "cls", Kind: "positional_or_keyword"}, {Name: "size", Kind: "positional_or_keyword", Annotation: "int", Default: "10", HasDefault: true}},
			Doc:    "Blank canvas.\n\n:param size: Side.\n:returns: A canvas\n    of that size.\n:rtype: Canvas\n"},
			want: "def blank(cls, size: int = 10)\n\nParameters:\n- size int = 10: Side.\n\nResults:\n- Canvas: A canvas of that size."},
		{name: "inherited doc when none of its own", api: API{Kind: "property", Signature: "size(self) -> int", Returns: "int",
			Params: []Param{{Name: "self", Kind: "positional_or_keyword"}}, InheritedDoc: "Size.\n\nReturns:\n    The size in cells."},
			want: "@property\ndef size(self) -> int\n\nResults:\n- int: The size in cells."},
	} {
		if got := Signature(tc.api).Text(); got != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

func TestProseDropsDoctestsAndTheirEmptyHeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		api  API
		want string
	}{
		{name: "numpydoc examples section", api: API{Doc: "Double x.\n\nParameters\n----------\nx : int\n    The value.\n\nExamples\n--------\n>>> double(2)\n4\n\nNotes\n-----\nFast."},
			want: "Double x.\n\nParameters\n----------\nx : int\n    The value.\n\nNotes\n-----\nFast."},
		{name: "Google examples at the end", api: API{Doc: "Double x.\n\nExamples:\n    >>> double(2)\n    4\n"}, want: "Double x."},
		{name: "prose between examples stays", api: API{Doc: "Double x.\n\nExample:\n\n>>> double(2)\n4\n\nNegative values too:\n\n>>> double(-1)\n-2"},
			want: "Double x.\n\nExample:\n\nNegative values too:"},
		{name: "stdlib-inherited doc is not quoted", api: API{InheritedDoc: "dict() -> new empty dictionary", StdlibDoc: true}, want: ""},
	} {
		if got := Prose(tc.api); got != tc.want {
			t.Errorf("%s:\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
}
