package gotool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A test binary that dies inside a test (here a panic in a goroutine)
// never ends that test: the test is reported failed with what it printed,
// the panic included, and the package's failure names it, so a sample
// batched after it is not left with a bare "FAIL pkg 0.005s".
func TestABinaryThatDiesKeepsItsReason(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/crash\n\ngo 1.22\n",
		"c_test.go": `package crash

import (
	"fmt"
	"testing"
	"time"
)

func TestA(t *testing.T) { fmt.Println("a runs") }

func TestB(t *testing.T) {
	fmt.Println("b starts")
	go func() { panic("boom in a goroutine") }()
	time.Sleep(10 * time.Second)
}

func TestC(t *testing.T) { fmt.Println("c runs") }
`,
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tc, err := NewToolchain(t.TempDir(), Options{Environ: os.Environ(), GoCache: sharedBuildCache(t)})
	if err != nil {
		t.Skip(err)
	}
	run, err := tc.Test(context.Background(), dir, TestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]TestResult{}
	for _, tr := range run.Tests {
		byName[tr.Test] = tr
	}
	if a := byName["TestA"]; !a.Passed {
		t.Errorf("TestA: %+v", a)
	}
	b, ok := byName["TestB"]
	if !ok || b.Passed || !strings.Contains(b.Output, "boom in a goroutine") || !strings.Contains(b.Output, BinaryDied) {
		t.Errorf("TestB, where the binary died: %+v", b)
	}
	if _, ran := byName["TestC"]; ran {
		t.Errorf("TestC never ran, yet has a result")
	}
	if f := run.Failed["example.com/crash"]; !strings.HasPrefix(f, "the test binary died during TestB\n") {
		t.Errorf("package failure %q does not name the test it died in", f)
	}
}

// In a batch, a sample whose goroutine crashes the binary later must not
// decide its neighbours' verdicts: the unit the binary died in and the
// units that never ran are run again, each alone.
func TestACrashInABatchDecidesNoOtherVerdict(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	tc, ws, mod := workspace(t)
	unit := func(body string) Unit {
		return Unit{Group: "g", Source: func(pkg string, declared map[string]string) string {
			src := "package " + pkg + "\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nvar _ = time.Second\n\n"
			return src + body
		}}
	}
	units := []Unit{
		unit("func Test_u0(t *testing.T) {}\n"),
		// Leaves a goroutine that kills the binary while a later test runs.
		unit("func Test_u1(t *testing.T) { go func() { time.Sleep(300 * time.Millisecond); panic(\"left behind\") }() }\n"),
		unit("func Test_u2(t *testing.T) { time.Sleep(time.Second) }\n"),
		unit("func Test_u3(t *testing.T) {}\n"),
	}
	res, err := tc.RunBatch(context.Background(), mod, units, ws.BatchOptions(TestOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2, 3} {
		tr, ran := res[i].Tests[UnitName("Test", i)]
		if !ran || !tr.Passed {
			t.Errorf("unit %d, innocent, got %+v (package failure %q)", i, tr, res[i].PackageFailure)
		}
	}
}
