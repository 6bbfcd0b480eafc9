package goapi

import (
	"slices"
	"strings"
	"testing"
)

func TestFencedGoFindsTheGoBlocks(t *testing.T) {
	md := "# t\n\n```go\na := 1\n```\n\n  ~~~golang\n  b := 2\n  ~~~\n\n```sh\nls\n```\n\n````go title\nc := \"```\"\n````\n"
	got := FencedGo(md)
	want := []Block{{3, "a := 1"}, {7, "b := 2"}, {15, "c := \"```\""}}
	if !slices.Equal(got, want) {
		t.Errorf("blocks %+v, want %+v", got, want)
	}
}

func TestMineDocsMakesBlocksStandalone(t *testing.T) {
	c := fixtureChecker(t)
	got, err := MineDocs(mineFixture, c)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Example{}
	for _, e := range got {
		byName[e.Name] = e
	}
	for _, tc := range []struct {
		name  string
		ok    bool
		calls []string
		has   []string
		lacks []string
	}{
		// A result shown in a comment is used as _; the second d is
		// another variable; the module's package is imported.
		{"README.md:5", true, []string{"example.com/mine.Double"}, []string{`"example.com/mine"`, "d := mine.Double(4)\n\t_ = d\n\t// 8", "d2 := mine.Double(5)"}, nil},
		// Declarations before the statements stay at the top level; fmt
		// is imported.
		{"README.md:15", true, []string{"example.com/mine.Join"}, []string{"type word string", "func (w word) String() string", "func main() {", `"fmt"`}, nil},
		// The block's import line, and a package it leaves out.
		{"README.md:26", true, []string{"example.com/mine.Double", "example.com/mine/geom.Square"}, []string{`sq "example.com/mine/geom"`, `"example.com/mine"`}, nil},
		{"README.md:34", false, nil, nil, nil}, // a signature only
		// value is declared elsewhere, not in the block before it
		{"README.md:40", false, nil, nil, nil},
		{"README.md:46", true, []string{"example.com/mine.Bag.Add", "example.com/mine.Bag.Len"}, []string{"func main() {"}, nil},
		{"README.md:62", false, nil, nil, nil}, // not Go
		// Names first assigned with = are declared there; a name declared
		// again for a value of another type is another variable.
		{"README.md:70", true, []string{"example.com/mine.Double", "example.com/mine.Join"}, []string{`word, n := mine.Join("a", "b"), mine.Double(1)`, `v2 := mine.Join("x")`}, nil},
		// Cut before the statement that does not type-check, its
		// comment kept.
		{"README.md:79", true, []string{"example.com/mine.Double"}, []string{"n := mine.Double(3)\n\t_ = n\n\t// 6\n}"}, []string{"three"}},
		// A bare name of the root package is the package's.
		{"README.md:88", true, []string{"example.com/mine.Join"}, []string{`s := mine.Join("a", "b")`, `"example.com/mine"`}, nil},
		{"README.md:94", true, []string{"example.com/mine.Bag.Add"}, []string{`b.Add("x")`}, nil},
		// Goes on with the block before it: the two together.
		{"README.md:99", true, []string{"example.com/mine.Bag.Add", "example.com/mine.Bag.Len"}, []string{"var b mine.Bag[string]\n\tb.Add(\"x\")\n\n\tfmt.Println(b.Len())"}, nil},
		// An error in the first statement is left to the compiler.
		{"README.md:105", true, []string{"example.com/mine.Double", "example.com/mine.Join"}, []string{"w := mine.Join(1)", "n := mine.Double(2)"}, nil},
	} {
		e, ok := byName[tc.name]
		if ok != tc.ok {
			t.Errorf("%s mined %v, want %v (%v)", tc.name, ok, tc.ok, e.Program)
			continue
		}
		if !ok {
			continue
		}
		if e.Kind != KindReadme || e.File != "README.md" || e.Package != "example.com/mine" {
			t.Errorf("%s: kind %q file %q package %q", tc.name, e.Kind, e.File, e.Package)
		}
		if !slices.Equal(e.Calls, tc.calls) {
			t.Errorf("%s calls %q, want %q", tc.name, e.Calls, tc.calls)
		}
		for _, s := range tc.has {
			if !strings.Contains(e.Program, s) {
				t.Errorf("%s lacks %q:\n%s", tc.name, s, e.Program)
			}
		}
		for _, s := range tc.lacks {
			if strings.Contains(e.Program, s) {
				t.Errorf("%s has %q:\n%s", tc.name, s, e.Program)
			}
		}
	}
	if len(got) != 10 {
		t.Errorf("%d blocks mined, want 10", len(got))
	}
}

func TestCheckerCallsNamesTheModulesFunctionsOnly(t *testing.T) {
	c := fixtureChecker(t)
	exs, err := Examples(mineFixture)
	if err != nil || len(exs) != 1 {
		t.Fatal(exs, err)
	}
	calls, err := c.Calls(exs[0].Program)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"example.com/mine.Double", "example.com/mine/geom.Square"}; !slices.Equal(calls, want) {
		t.Errorf("ExampleDouble calls %q, want %q", calls, want)
	}
}
