package goharness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/goapi"
	"github.com/lacuna-dev/lacuna/runners/gotool"
)

// TestSpyCountsDirectAndIndirectCalls builds harness tests against the
// fixture with the spy overlay: the solver's call (the line the hook
// names) and the context's, a substituted call (its result replaced by
// one of the same shape, each element one more) with the arguments the
// harness receives, a call through a sibling API, a generic method.
func TestSpyCountsDirectAndIndirectCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	abs, _ := filepath.Abs(fixtureNew)
	apis, err := goapi.Surface(abs)
	if err != nil {
		t.Fatal(err)
	}
	var targets []goapi.API
	for _, a := range apis {
		if a.ID == "example.com/shapes.Scale" || a.ID == "example.com/shapes.Stack.Push" {
			targets = append(targets, a)
		}
	}
	work := t.TempDir()
	spy, err := NewSpy(abs, "example.com/shapes", targets, work)
	if err != nil {
		t.Fatal(err)
	}
	scale, push := spy.Access["example.com/shapes.Scale"], spy.Access["example.com/shapes.Stack.Push"]
	mod := filepath.Join(work, "m")
	files := map[string]string{
		"go.mod": "module lacuna.harness/m\n\ngo 1.22\n\nrequire example.com/shapes v1.1.0\n\nreplace example.com/shapes => " + abs + "\n",
		"h/h_test.go": `package h

import (
	"fmt"
	"runtime"
	"testing"

	"example.com/shapes"
)

func report(name string, d, i int64) { fmt.Printf("SPY %s direct=%d indirect=%d\n", name, d, i) }

// solverLine is the line the hook attributes to the solver.
var solverLine int

func init() {
	shapes.LacunaSpyHook = func(file string, line int) (bool, bool) { return line == solverLine, false }
}

func TestDirect(t *testing.T) {
	shapes.Scale([]int{1, 2}, 3) // another line: the context's
	_, _, solverLine, _ = runtime.Caller(0); shapes.Scale([]int{1, 2}, 3)
	report("direct", ` + scale + `.Direct.Load(), ` + scale + `.Indirect.Load())
	report("context", ` + scale + `.Context.Load(), 0)
}

func TestSubstituted(t *testing.T) {
	hook := shapes.LacunaSpyHook
	shapes.LacunaSpyHook = func(string, int) (bool, bool) { return true, true }
	shapes.LacunaSpyCall = func(_ int, args []interface{}) bool { fmt.Printf("SPY args %v\n", args); return true }
	defer func() { shapes.LacunaSpyHook, shapes.LacunaSpyCall = hook, nil }()
	fmt.Printf("SPY substituted %v\n", shapes.Scale([]int{1, 2}, 3))
}

func TestIndirect(t *testing.T) {
	before := ` + scale + `.Direct.Load()
	shapes.ScaleErr([]float64{1}, 2)
	report("indirect", ` + scale + `.Direct.Load()-before, ` + scale + `.Indirect.Load())
}

func TestGenericMethod(t *testing.T) {
	var s shapes.Stack[string]
	_, _, solverLine, _ = runtime.Caller(0); s.Push("x"); s.Push("y")
	report("push", ` + push + `.Direct.Load(), ` + push + `.Indirect.Load())
}
`,
	}
	for name, src := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(mod, name)), 0o755)
		if err := os.WriteFile(filepath.Join(mod, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tc, err := gotool.NewToolchain(t.TempDir(), gotool.Options{Environ: os.Environ(), GoCache: sharedBuildCache(t)})
	if err != nil {
		t.Fatal(err)
	}
	run, err := tc.Test(context.Background(), mod, gotool.TestOptions{Args: []string{"-overlay", spy.Overlay}})
	if err != nil {
		t.Fatal(err)
	}
	if len(run.BuildErrors) > 0 {
		t.Fatalf("build: %v", run.BuildErrors)
	}
	out := ""
	for _, r := range run.Tests {
		out += r.Output
	}
	for _, want := range []string{"SPY direct direct=1 indirect=0", "SPY context direct=1 indirect=0", "SPY substituted [4 7]", "SPY args [[1 2] 3]", "SPY indirect direct=0 indirect=1", "SPY push direct=2 indirect=0"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	// The tree itself is untouched.
	if b, _ := os.ReadFile(filepath.Join(abs, "shapes.go")); strings.Contains(string(b), "lacunaSpyHit") {
		t.Error("the spy edited the module tree")
	}
}

// TestSpyCompilesEveryShape: the spy's edits compile for the function
// shapes real modules have (a parameter shadowing a result's type, named
// and blank results, unnamed and blank parameters and receivers,
// generics, variadics, methods of generic types, function and channel
// results) and a substituted call returns values of the same shape:
// a sequence yielding other values, a struct's exported fields changed,
// a slice changed in place where the target returned its input, a
// function that returns nothing, or a builder that returns its receiver,
// run on substituted copies of its arguments, errors and channels kept.
func TestSpyCompilesEveryShape(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go program")
	}
	mod := t.TempDir()
	files := map[string]string{
		"go.mod":     "module example.com/shape\n\ngo 1.23\n",
		"use/go.mod": "module example.com/use\n\ngo 1.23\n\nrequire example.com/shape v0.0.0\n\nreplace example.com/shape => ../\n",
		"shape.go": `package shape

import (
	"errors"
	"iter"
	"net/url"
	"time"
)

var ErrBad = errors.New("bad 1")

func Fail(x int) (int, error) { return x, ErrBad }
func Later(t time.Time) time.Time { return t }
func Drain(seq iter.Seq[int], f func(int)) { for x := range seq { f(x) } }

func Parse(url string) (*url.URL, error) { return nil, nil }
func After(time time.Duration) time.Duration { return time }
func Max(int int) int { return int }
func Named() (n int, _ error) { n = 1; return }
func Gen[T any](xs ...T) T { return xs[0] }
func Seq(xs []int) iter.Seq[int] { return func(yield func(int) bool) { for _, x := range xs { if !yield(x) { return } } } }
func Chan() <-chan int { c := make(chan int, 1); c <- 1; return c }
func Nothing(f func(int) int) { f(1) }
func Unnamed(int, string) bool { return true }
func Blank(_ int, s string) string { return s }
func Reverse(xs []int) []int { for i, j := 0, len(xs)-1; i < j; i, j = i+1, j-1 { xs[i], xs[j] = xs[j], xs[i] }; return xs }
func Fill(xs []int) { for i := range xs { xs[i] = 7 } }
func Each(xs []string, f func(string, int)) { for i, x := range xs { f(x, i) } }

type Pair struct {
	A int
	B string
	c float64
}

func MakePair(a int) (Pair, error) { return Pair{A: a, B: "ab9", c: 1}, nil }

type Box[T any] struct{ v T }

func (b *Box[T]) Get() T { return b.v }
func (Box[T]) Zero() (t T) { return }

type Builder struct {
	Parts []string
	n     int
}

func (b *Builder) Add(s string) *Builder { b.Parts = append(b.Parts, s); b.n++; return b }
`,
		"use/main_test.go": `package use

import (
	"errors"
	"slices"
	"testing"
	"time"

	"example.com/shape"
)

func TestSubstituted(t *testing.T) {
	shape.LacunaSpyHook = func(string, int) (bool, bool) { return true, true }
	var args [][]interface{}
	shape.LacunaSpyCall = func(_ int, a []interface{}) bool { args = append(args, a); return true }
	if got := slices.Collect(shape.Seq([]int{1, 2})); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("Seq: %v", got)
	}
	if v, ok := <-shape.Chan(); !ok || v != 1 {
		t.Errorf("Chan: %v %v", v, ok)
	}
	if n, err := shape.Named(); n != 2 || err != nil {
		t.Errorf("Named: %v %v", n, err)
	}
	if p, err := shape.MakePair(1); p.A != 2 || p.B != "bc0" || err != nil {
		t.Errorf("MakePair: %+v %v", p, err)
	}
	xs := []int{1, 2, 3}
	if ys := shape.Reverse(xs); !slices.Equal(ys, []int{4, 3, 2}) || !slices.Equal(xs, ys) {
		t.Errorf("Reverse: %v, its input %v", ys, xs)
	}
	zs := []int{1, 2}
	if shape.Fill(zs); !slices.Equal(zs, []int{1, 2}) { // it filled a substituted copy
		t.Errorf("Fill: %v", zs)
	}
	var seen []string
	shape.Each([]string{"a", "z"}, func(s string, i int) { seen = append(seen, s) })
	if !slices.Equal(seen, []string{"b", "a"}) {
		t.Errorf("Each handed its callback %v", seen)
	}
	if shape.Unnamed(1, "x") {
		t.Error("Unnamed: not flipped")
	}
	if got := shape.Blank(1, "x"); got != "y" {
		t.Errorf("Blank: %q", got)
	}
	shape.Parse("x")
	shape.After(1)
	shape.Max(1)
	shape.Gen(1, 2)
	shape.Nothing(func(int) int { return 0 })
	var b shape.Box[string]
	b.Get()
	b.Zero()
	if n, err := shape.Fail(1); n != 2 || err == nil || err.Error() != "cbe 2" || !errors.Is(err, shape.ErrBad) {
		t.Errorf("Fail: %v %v", n, err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := shape.Later(t0); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("Later: %v", got)
	}
	var drained []int
	shape.Drain(slices.Values([]int{1, 2}), func(x int) { drained = append(drained, x) })
	if !slices.Equal(drained, []int{2, 3}) { // a sequence argument yields substituted values
		t.Errorf("Drain: %v", drained)
	}
	var bl shape.Builder
	if bl.Add("x").Add("y"); !slices.Equal(bl.Parts, []string{"y", "z"}) { // a builder: its arguments substituted
		t.Errorf("Builder: %v", bl.Parts)
	}
	if len(args) == 0 || len(args[0]) != 1 {
		t.Errorf("args %v", args)
	}
}
`,
	}
	for name, src := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(mod, name)), 0o755)
		if err := os.WriteFile(filepath.Join(mod, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	apis, err := goapi.Surface(mod)
	if err != nil {
		t.Fatal(err)
	}
	var targets []goapi.API
	for _, a := range apis {
		if a.Kind == "func" || a.Kind == "method" {
			targets = append(targets, a)
		}
	}
	if len(targets) < 9 {
		t.Fatalf("targets %v", targets)
	}
	spy, err := NewSpy(mod, "example.com/shape", targets, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "test", "-count=1", "-overlay", spy.Overlay, ".")
	cmd.Dir = filepath.Join(mod, "use") // another module: its calls are direct
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
