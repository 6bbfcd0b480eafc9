package golang

import (
	"context"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

const fixtureNew = "testdata/shapes/v1.1.0"

func TestCodeInlinesSamePackageHelpers(t *testing.T) {
	p, err := LoadPackage(fixtureNew, "example.com/shapes")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		helpers []string
		has     []string
		hasNot  []string
	}{
		{"Scale", []string{"mulAll"}, []string{"func Scale[T Number]", "func mulAll", "// scale one element"}, []string{"Scale multiplies", "mulAll multiplies in place", "func Area"}},
		{"Stack.Pop", []string{"Stack.top"}, []string{"func (s *Stack[T]) Pop()", "func (s *Stack[T]) top()"}, []string{"removes and returns"}},
		{"ScaleErr", []string{"errZero", "zeroError"}, []string{"var errZero = zeroError{}", "type zeroError struct{}"}, nil},
		{"Clamp", nil, []string{"func Clamp"}, nil},
	} {
		c, err := p.Code(tc.name, 8000)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c.Helpers, tc.helpers) && !(len(c.Helpers) == 0 && len(tc.helpers) == 0) {
			t.Errorf("%s: helpers %q, want %q", tc.name, c.Helpers, tc.helpers)
		}
		for _, s := range tc.has {
			if !strings.Contains(c.Source, s) {
				t.Errorf("%s: M_code lacks %q:\n%s", tc.name, s, c.Source)
			}
		}
		for _, s := range tc.hasNot {
			if strings.Contains(c.Source, s) {
				t.Errorf("%s: M_code has %q (doc comments are stripped, unrelated code left out):\n%s", tc.name, s, c.Source)
			}
		}
	}
	// The bound leaves helpers out and names them.
	c, err := p.Code("Scale", 150)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Truncated || len(c.Omitted) != 1 || c.Omitted[0] != "mulAll" || strings.Contains(c.Source, "func mulAll") {
		t.Errorf("bounded code: %+v", c)
	}
	params, results, ok := p.Signature("Scale")
	if !ok || len(params) != 2 || params[0].Name != "xs" || params[0].Type != "[]T" || len(results) != 1 || results[0].Type != "[]T" {
		t.Fatalf("Scale signature: %+v %+v", params, results)
	}
	// "xs" is named by the doc; the one-letter "k" counts only in backquotes.
	if !strings.Contains(params[0].Doc, "every element of xs") || params[1].Doc != "" {
		t.Errorf("per-parameter docs: %+v", params)
	}
}

func TestExamplesAreMadeStandalone(t *testing.T) {
	exs, err := Examples(fixtureNew)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Example{}
	for _, e := range exs {
		byName[e.Name] = e
	}
	const m = "example.com/shapes"
	for name, id := range map[string]string{
		"ExampleScale": m + ".Scale", "ExampleStack_Push": m + ".Stack.Push", "ExampleStack_Pop": m + ".Stack.Pop",
		"ExampleClamp": m + ".Clamp", "ExampleScaleErr": m + ".ScaleErr",
	} {
		if byName[name].ID != id {
			t.Errorf("%s documents %q, want %q", name, byName[name].ID, id)
		}
	}
	// An internal-test example: the package is imported and the same-file
	// helper comes along.
	clamp := byName["ExampleClamp"].Program
	for _, s := range []string{"package main", `"example.com/shapes"`, "shapes.Clamp(15, 0, 10)", "func describe(v int) string"} {
		if !strings.Contains(clamp, s) {
			t.Errorf("ExampleClamp program lacks %q:\n%s", s, clamp)
		}
	}
	if e := byName["ExampleScaleErr"]; e.Program != "" || !strings.Contains(e.Why, "unexported shapes.errZero") {
		t.Errorf("ExampleScaleErr uses an unexported name: program %q, why %q", e.Program, e.Why)
	}
}

// TestRunExamplesInTheSandbox compiles the fixture's examples with the go
// command and runs them through the sandbox wrapper.
func TestRunExamplesInTheSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	exs, err := Examples(fixtureNew)
	if err != nil {
		t.Fatal(err)
	}
	// A program that does not compile costs only itself.
	broken := exs[0]
	broken.Name, broken.Program = "ExampleBroken", strings.Replace(exs[0].Program, "func main() {", "func main() {\n\tundefinedThing()", 1)
	exs = append(exs, broken)
	sb, err := sandbox.New()
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	wrapper, err := sb.ExecWrapper(work, sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := NewToolchain(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tc.BuildCache = sharedBuildCache(t)
	abs, _ := os.Getwd()
	mod := &Module{Path: "example.com/shapes", Version: "v1.1.0", Dir: abs + "/" + fixtureNew}
	res, err := tc.RunExamples(context.Background(), mod, exs, BatchOptions{Exec: wrapper, WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ExampleScale": ExamplePassed, "ExampleStack_Push": ExamplePassed, "ExampleStack_Len": ExamplePassed,
		"ExampleClamp": ExamplePassed, "ExampleApply": ExamplePassed, "ExampleTotalArea": ExamplePassed, "ExampleStack_Pop": ExampleFailed, "ExampleScaleErr": ExampleNotStandalone,
		"ExampleBroken": ExampleCompileError,
	}
	for i, e := range exs {
		if res[i].Status != want[e.Name] {
			t.Errorf("%s: %s (%s), want %s", e.Name, res[i].Status, res[i].Error, want[e.Name])
		}
		if e.Name == "ExampleStack_Pop" && strings.TrimSpace(res[i].Got) != "7 true" {
			t.Errorf("ExampleStack_Pop got %q, want the real output 7 true", res[i].Got)
		}
		if e.Name == "ExampleBroken" && !strings.Contains(res[i].Error, "undefinedThing") {
			t.Errorf("compile error message: %q", res[i].Error)
		}
	}
}

// sharedBuildCache is the user's own GOCACHE: tests then do not rebuild
// the standard library in a fresh cache.
func sharedBuildCache(t testing.TB) string {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return t.TempDir()
	}
	return strings.TrimSpace(string(out))
}
