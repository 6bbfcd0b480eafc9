package tasks

import (
	"reflect"
	"testing"
)

// TestPythonSiblingsAreOfTheSameKindAndParent: a function's sibling is
// another function of its module, a method's another method of its class,
// a class's another class; a target alone of its kind and parent has none,
// and a target with several tasks is never its own sibling.
func TestPythonSiblingsAreOfTheSameKindAndParent(t *testing.T) {
	tasks := []Row{
		{Qualified: "pkg.scale", Kind: "function"},
		{Qualified: "pkg.Pair.swap", Kind: "method"},
		{Qualified: "pkg.Pair", Kind: "class"},
		{Qualified: "pkg.box", Kind: "function"},
		{Qualified: "pkg.Pair.flip", Kind: "method"},
		{Qualified: "pkg.Grid.rows", Kind: "method"},
		{Qualified: "pkg.sub.only", Kind: "function"},
		{Qualified: "pkg.Grid", Kind: "class"},
		{Qualified: "pkg.scale", Kind: "function"},
		{Qualified: "pkg.Pair.size", Kind: "property"},
	}
	want := []string{"box", "flip", "Grid", "scale", "swap", "", "", "Pair", "box", ""}
	if got := PySiblings(tasks); !reflect.DeepEqual(got, want) {
		t.Errorf("siblings\n got %q\nwant %q", got, want)
	}
}
