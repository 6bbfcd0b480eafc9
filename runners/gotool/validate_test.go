package gotool

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/goapi"
	"github.com/lacuna-dev/lacuna/runners/modfetch"
	"github.com/lacuna-dev/lacuna/runners/modfetch/proxytest"
	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

var fixtureNew = proxytest.Shapes("v1.1.0")

// TestRunExamplesInTheSandbox compiles the fixture's examples with the go
// command and runs them through the sandbox wrapper.
func TestRunExamplesInTheSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	exs, err := goapi.Examples(fixtureNew)
	if err != nil {
		t.Fatal(err)
	}
	// A program that does not compile costs only itself.
	broken := exs[0]
	broken.Name, broken.Program = "ExampleBroken", strings.Replace(exs[0].Program, "func main() {", "func main() {\n\tundefinedThing()", 1)
	exs = append(exs, broken)
	tc, ws, mod := workspace(t)
	res, err := tc.RunExamples(context.Background(), mod, exs, ws.BatchOptions(TestOptions{}))
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

// workspace is a toolchain and a sandboxed workspace for the shapes
// fixture's v1.1.0, removed when the test ends.
func workspace(t testing.TB) (*Toolchain, *Workspace, *modfetch.Module) {
	t.Helper()
	sb, err := sandbox.New()
	if err != nil {
		t.Fatal(err)
	}
	tc, err := NewToolchain(t.TempDir(), Options{Environ: os.Environ(), GoCache: sharedBuildCache(t)})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := tc.NewWorkspace(sb, "validate", sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return tc, ws, &modfetch.Module{Path: "example.com/shapes", Version: "v1.1.0", Dir: fixtureNew}
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

// TestCompileBombIsACompileErrorOfItsOwn: the go command compiling
// generated code runs under BuildLimits (here 1 GiB), so a program whose
// constants take gigabytes to compile fails as a compile error of its own
// instead of taking the host's memory, and the other programs still run.
func TestCompileBombIsACompileErrorOfItsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	exs, err := goapi.Examples(fixtureNew)
	if err != nil {
		t.Fatal(err)
	}
	var ok goapi.Example
	for _, e := range exs {
		if e.Name == "ExampleScale" {
			ok = e
		}
	}
	var b strings.Builder
	b.WriteString("const c0 = \"xxxxxxxxxxxxxxxx\"\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "const c%d = c%d + c%d\n", i, i-1, i-1)
	}
	bomb := ok
	bomb.Name = "ExampleBomb"
	bomb.Program = strings.Replace(ok.Program, "func main() {", b.String()+"\nfunc main() {\n\tprintln(len(c30))", 1)
	tc, ws, mod := workspace(t)
	res, err := tc.RunExamples(context.Background(), mod, []goapi.Example{ok, bomb}, ws.BatchOptions(TestOptions{Build: sandbox.Limits{Memory: 1 << 30}}))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Status != ExamplePassed {
		t.Errorf("the example beside the bomb: %s (%s)", res[0].Status, res[0].Error)
	}
	if res[1].Status != ExampleCompileError || !strings.Contains(res[1].Error, "out of memory") {
		t.Errorf("the bomb: %s (%.300s), want a compile error saying out of memory", res[1].Status, res[1].Error)
	}
}

// TestMinedExamplesRunToTheirEnd: a mined example (a test, a benchmark, a
// README block) has no output to compare; it is valid when it runs to its
// end, and what it printed is kept. A failed check (log.Fatal), a panic
// or an os.Exit(0) make it invalid; an Example function without
// // Output: is still compiled only.
func TestMinedExamplesRunToTheirEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	prog := func(body string, imports ...string) string {
		var b strings.Builder
		b.WriteString("package main\n\nimport (\n\t\"example.com/shapes\"\n")
		for _, im := range imports {
			fmt.Fprintf(&b, "\t%q\n", im)
		}
		b.WriteString(")\n\nfunc main() {\n\txs := shapes.Scale([]int{1, 2}, 2)\n" + body + "\n}\n")
		return b.String()
	}
	exs := []goapi.Example{
		{Name: "TestPrints", Kind: goapi.KindTest, Package: "example.com/shapes", Program: prog(`fmt.Println(xs)`, "fmt")},
		{Name: "TestCheckFails", Kind: goapi.KindTest, Package: "example.com/shapes", Program: prog(`if xs[0] != 3 { log.Fatalf("got %v", xs) }`, "log")},
		{Name: "README.md:3", Kind: goapi.KindReadme, Package: "example.com/shapes", Program: prog(`panic(xs)`)},
		{Name: "BenchmarkExits", Kind: goapi.KindBenchmark, Package: "example.com/shapes", Program: prog(`_ = xs; os.Exit(0)`, "os")},
		{Name: "ExampleSilent", Kind: goapi.KindExample, Package: "example.com/shapes", Program: prog(`_ = xs`)},
	}
	tc, ws, mod := workspace(t)
	res, err := tc.RunExamples(context.Background(), mod, exs, ws.BatchOptions(TestOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ExamplePassed, ExampleRuntimeError, ExampleRuntimeError, ExampleRuntimeError, ExampleNoOutput}
	for i, e := range exs {
		if res[i].Status != want[i] {
			t.Errorf("%s: %s (%.300s), want %s", e.Name, res[i].Status, res[i].Error, want[i])
		}
	}
	if res[0].Output != "[2 4]\n" {
		t.Errorf("TestPrints kept output %q, want %q", res[0].Output, "[2 4]\n")
	}
	if !strings.Contains(res[1].Error, "got [2 4]") {
		t.Errorf("the failed check's message is lost: %q", res[1].Error)
	}
}
