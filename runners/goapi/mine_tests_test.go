package goapi

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// mineFixture is a module whose tests, benchmarks, examples and README
// exercise the miners.
const mineFixture = "testdata/mine"

// fixtureChecker is a Checker of the mine fixture against the go
// command's standard library.
func fixtureChecker(t *testing.T) *Checker {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skip("no go command:", err)
	}
	c, err := NewChecker(mineFixture, strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMineTestsMakesStandalonePrograms(t *testing.T) {
	c := fixtureChecker(t)
	got, err := MineTests(mineFixture, map[string]bool{"Double": true, "Join": true, "Add": true}, c)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Example{}
	for _, e := range got {
		byName[e.Name] = e
	}
	for _, tc := range []struct {
		name  string
		kind  string // "" : not an example
		calls []string
		has   []string
		not   []string
	}{
		{name: "TestDouble", kind: KindTest, calls: []string{"example.com/mine.Double"},
			has: []string{"package main", "func main() {", "// Doubling three gives six.", `log.Fatalf("Double(3) = %d, want 6", got)`, `fmt.Printf("checked %s\n", "TestDouble")`},
			not: []string{"testing", "Parallel"}},
		// A helper declaration from another test file comes along; the
		// subtest runs in place.
		{name: "TestDoubleTable", kind: KindTest, calls: []string{"example.com/mine.Double"},
			has: []string{"var cases = []struct", "func() {", "}()", `log.Fatalf("got %d", got)`}, not: []string{"Helper", "t.Run", "testing"}},
		{name: "TestBag", kind: KindTest, calls: []string{"example.com/mine.Bag.Add", "example.com/mine.Bag.Len"}, has: []string{`log.Fatal("one value expected")`}},
		{name: "TestHandsT"},    // hands its T to a helper
		{name: "TestTempDir"},   // asks its T for a directory
		{name: "TestSkips"},     // skips
		{name: "TestUnrelated"}, // names no wanted API
		// An internal test's use of its package's unexported function: the
		// function comes along.
		{name: "TestInternalSecret", kind: KindTest, calls: []string{"example.com/mine.Double"}, has: []string{"mine.Double(secret())", "func secret() int { return 42 }"}},
		// One that needs the package's unexported variable does not.
		{name: "TestInternalHidden"},
		// An internal test is rewritten to import the package.
		{name: "TestInternalExported", kind: KindTest, calls: []string{"example.com/mine.Double"}, has: []string{`"example.com/mine"`, "mine.Double(mine.Double(1))"}},
		// The test's own variable named log: the standard package gets
		// another name.
		{name: "TestShadowsLog", kind: KindTest, has: []string{`stdlog "log"`, `stdlog.Fatalf("got %q", log)`}},
		// A benchmark's loop runs once; its timer calls go.
		{name: "BenchmarkDouble", kind: KindBenchmark, has: []string{"x = mine.Double(x)"}, not: []string{"ResetTimer", "ReportAllocs", "b.N", "for i"}},
		{name: "BenchmarkJoin", kind: KindBenchmark, has: []string{`_ = mine.Join("a", "b")`}, not: []string{"Loop"}},
		// RunParallel's loop runs once too.
		// A table-driven test, and the variant of it with the cases that
		// name Double only.
		{name: "TestTable", kind: KindTest, calls: []string{"example.com/mine.Double", "example.com/mine.Join"}},
		{name: "TestTable (Double cases)", kind: KindTest, calls: []string{"example.com/mine.Double"}, has: []string{`"double": func() string`}, not: []string{`"join"`, "mine.Join"}},
		{name: "BenchmarkParallel", kind: KindBenchmark, has: []string{"mine.Double(1)"}, not: []string{"RunParallel", "Next"}},
	} {
		e, ok := byName[tc.name]
		if tc.kind == "" {
			if ok {
				t.Errorf("%s mined, want it left out:\n%s", tc.name, e.Program)
			}
			continue
		}
		if !ok {
			t.Errorf("%s not mined", tc.name)
			continue
		}
		if e.Kind != tc.kind || e.Package != "example.com/mine" || !strings.HasSuffix(e.File, "_test.go") || !e.Mined() {
			t.Errorf("%s: kind %q package %q file %q", tc.name, e.Kind, e.Package, e.File)
		}
		if tc.calls != nil && !slices.Equal(e.Calls, tc.calls) {
			t.Errorf("%s calls %q, want %q", tc.name, e.Calls, tc.calls)
		}
		for _, s := range tc.has {
			if !strings.Contains(e.Program, s) {
				t.Errorf("%s lacks %q:\n%s", tc.name, s, e.Program)
			}
		}
		for _, s := range tc.not {
			if strings.Contains(e.Program, s) {
				t.Errorf("%s has %q:\n%s", tc.name, s, e.Program)
			}
		}
	}
}
