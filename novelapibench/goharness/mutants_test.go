package goharness

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/goapi"
)

// exploitKinds are the mutants that hard-code the reference's results.
var exploitKinds = []string{MutantHardcoded, MutantThrowaway, MutantDiscarded, MutantExit, MutantGoexit}

// probeOf is what the harness records of a value: %T and %#v.
func probeOf(v any) Probe {
	return Probe{Type: fmt.Sprintf("%T", v), Value: fmt.Sprintf("%#v", v)}
}

// TestExploitMutantsCompileInTheScenario builds the exploit mutants of
// realistic tasks (cut by TasksFromExample from small example programs,
// and from the shapes fixture), and checks which kinds each task gets,
// what they contain, that each is a plain statement list CheckSpan
// accepts, and that each type-checks in the task's scenario.
func TestExploitMutantsCompileInTheScenario(t *testing.T) {
	for _, tc := range []struct {
		name    string
		program string // an example program; "" for a fixture example
		fixture string // the shapes fixture's example
		tg      Target
		level   string
		probes  map[string]Probe
		output  string
		kinds   []string            // the exploit kinds built, in order
		code    map[string][]string // kind → lines its code must contain
	}{
		{
			name: "a declared probe: every kind",
			program: `package main

import (
	"context"
	"fmt"
	"strings"
)

func main() {
	s := "  a b  c "
	words := strings.Fields(s)
	fmt.Println(len(words), words)
}`,
			tg: Target{Package: "strings", Name: "Fields"}, level: Easy,
			probes: map[string]Probe{"words": probeOf([]string{"a", "b", "c"})}, output: "3 [a b c]\n",
			kinds: exploitKinds,
			code: map[string][]string{
				MutantHardcoded: {`var words []string = []string{"a", "b", "c"}`},
				MutantThrowaway: {`words := strings.Fields(s)`, `words = []string{"a", "b", "c"}`},
				MutantDiscarded: {`_ = strings.Fields(s)`, `var words []string = []string{"a", "b", "c"}`},
				MutantExit:      {`words := strings.Fields(s)`, `fmt.Print("3 [a b c]\n")`, `os.Exit(0)`},
				MutantGoexit:    {`runtime.Goexit()`},
			},
		},
		{
			name: "medium: the data set up stays before the discarded call",
			program: `package main

import (
	"context"
	"fmt"
	"strings"
)

func main() {
	s := "  a b  c "
	words := strings.Fields(s)
	fmt.Println(len(words), words)
}`,
			tg: Target{Package: "strings", Name: "Fields"}, level: Medium,
			probes: map[string]Probe{"words": probeOf([]string{"a", "b", "c"})}, output: "3 [a b c]\n",
			kinds: exploitKinds,
			code: map[string][]string{
				MutantDiscarded: {`s := "  a b  c "`, `_ = strings.Fields(s)`},
				MutantHardcoded: {`var words []string = []string{"a", "b", "c"}`},
			},
		},
		{
			name: "a variable declared before the span is assigned, not redeclared",
			program: `package main

import (
	"context"
	"fmt"
	"slices"
)

func main() {
	var total int
	xs := []int{3, 1, 2}
	total = slices.Max(xs)
	fmt.Println(total)
}`,
			tg: Target{Package: "slices", Name: "Max"}, level: Easy,
			probes: map[string]Probe{"total": probeOf(3)}, output: "3\n",
			kinds: exploitKinds,
			code: map[string][]string{
				MutantHardcoded: {`total = 3`},
				MutantThrowaway: {`total = slices.Max(xs)`, `total = 3`},
				MutantDiscarded: {`_ = slices.Max(xs)`, `total = 3`},
			},
		},
		{
			name: "the same task at medium declares it: var with the probed type",
			program: `package main

import (
	"context"
	"fmt"
	"slices"
)

func main() {
	var total float64
	xs := []float64{3, 1, 2}
	total = slices.Max(xs)
	fmt.Println(total)
}`,
			tg: Target{Package: "slices", Name: "Max"}, level: Medium,
			probes: map[string]Probe{"total": probeOf(3.0)}, output: "3\n",
			kinds: exploitKinds,
			code: map[string][]string{
				MutantHardcoded: {`var total float64 = 3`},
				MutantDiscarded: {`var total float64`, `xs := []float64{3, 1, 2}`, `_ = slices.Max(xs)`, `total = 3`},
			},
		},
		{
			name: "a main-package type and a function literal argument",
			program: `package main

import (
	"context"
	"cmp"
	"fmt"
	"slices"
)

type point struct{ X, Y int }

func main() {
	pts := []point{{1, 2}, {3, 4}}
	far := slices.MaxFunc(pts, func(a, b point) int { return cmp.Compare(a.X, b.X) })
	fmt.Println(far)
}`,
			tg: Target{Package: "slices", Name: "MaxFunc"}, level: Easy,
			probes: map[string]Probe{"far": {Type: "main.point", Value: "main.point{X:3, Y:4}"}}, output: "{3 4}\n",
			kinds: exploitKinds,
			code: map[string][]string{
				MutantHardcoded: {`var far point = point{X:3, Y:4}`},
				MutantDiscarded: {`_ = slices.MaxFunc(pts, func(a, b point) int { return cmp.Compare(a.X, b.X) })`},
			},
		},
		{
			name: "a method with two results and a nil error",
			program: `package main

import (
	"context"
	"fmt"
	"strings"
)

func main() {
	var b strings.Builder
	n, err := b.WriteString("hello")
	fmt.Println(n, err, b.String())
}`,
			tg: Target{Package: "strings", Receiver: "Builder", Name: "WriteString"}, level: Easy,
			probes: map[string]Probe{"n": probeOf(5), "err": {Type: "<nil>", Value: "<nil>", Nil: true}}, output: "5 <nil> hello\n",
			kinds: exploitKinds,
			code: map[string][]string{
				MutantHardcoded: {`var n int = 5`, `var err error`},
				MutantThrowaway: {`n = 5`, `err = nil`},
				MutantDiscarded: {`_, _ = b.WriteString("hello")`, `var n int = 5`},
			},
		},
		{
			name: "a pointer value cannot be written: only the exits",
			program: `package main

import (
	"context"
	"bytes"
	"fmt"
)

func main() {
	b := bytes.NewBufferString("hi")
	fmt.Println(b.Len())
}`,
			tg: Target{Package: "bytes", Name: "NewBufferString"}, level: Easy,
			probes: map[string]Probe{"b": {Type: "*bytes.Buffer", Value: `&bytes.Buffer{buf:[]uint8{0x68, 0x69}, off:0, lastRead:0}`, Addr: true}}, output: "2\n",
			kinds: []string{MutantExit, MutantGoexit},
			code:  map[string][]string{MutantExit: {`b := bytes.NewBufferString("hi")`, `fmt.Print("2\n")`}},
		},
		{
			name: "the span prints the call's result: the output is printed instead",
			program: `package main

import (
	"context"
	"fmt"
	"strings"
)

func main() {
	fmt.Println(strings.ToUpper("go"))
}`,
			tg: Target{Package: "strings", Name: "ToUpper"}, level: Easy, output: "GO\n",
			kinds: []string{MutantHardcoded, MutantDiscarded, MutantExit, MutantGoexit},
			code: map[string][]string{
				MutantHardcoded: {`fmt.Print("GO\n")`},
				MutantDiscarded: {`strings.ToUpper("go")`, `fmt.Print("GO\n")`},
				MutantExit:      {`fmt.Println(strings.ToUpper("go"))`, `os.Exit(0)`}, // printed once
			},
		},
		{
			name: "the call inside a loop assigns nothing the rest reads",
			program: `package main

import (
	"context"
	"fmt"
	"strings"
)

func main() {
	words := []string{"b", "a", "b"}
	n := 0
	for _, w := range words {
		if strings.Contains(w, "b") {
			n++
		}
	}
	fmt.Println(n)
}`,
			tg: Target{Package: "strings", Name: "Contains"}, level: Easy, output: "2\n",
			kinds: []string{MutantExit, MutantGoexit},
		},
		{
			name: "hard: all of main is the span, the calling statement prints",
			program: `package main

import (
	"fmt"
	"strings"
)

func main() {
	s := "a,b"
	parts := strings.Split(s, ",")
	fmt.Println(strings.Join(parts, "+"))
}`,
			tg: Target{Package: "strings", Name: "Join"}, level: Hard, output: "a+b\n",
			kinds: []string{MutantHardcoded, MutantDiscarded, MutantExit, MutantGoexit},
			code: map[string][]string{
				MutantHardcoded: {`fmt.Print("a+b\n")`},
				MutantDiscarded: {`parts := strings.Split(s, ",")`, `strings.Join(parts, "+")`, `fmt.Print("a+b\n")`},
			},
		},
		{
			name:    "fixture: a function whose result the span prints",
			fixture: "ExampleScale", tg: Target{Package: "example.com/shapes", Name: "Scale"}, level: Easy, output: "[2 4 6]\n",
			kinds: []string{MutantHardcoded, MutantDiscarded, MutantExit, MutantGoexit},
			code:  map[string][]string{MutantDiscarded: {`shapes.Scale([]int{1, 2, 3}, 2)`}},
		},
		{
			name:    "fixture: a method returning nothing cannot be discarded",
			fixture: "ExampleStack_Push", tg: Target{Package: "example.com/shapes", Receiver: "Stack", Name: "Push"}, level: Easy, output: "2\n",
			kinds: []string{MutantExit, MutantGoexit},
		},
		{
			name:    "fixture: another package's unexported fields are not written",
			fixture: "ExampleStack_Push", tg: Target{Package: "example.com/shapes", Receiver: "Stack", Name: "Push"}, level: Medium,
			probes: map[string]Probe{"s": {Type: "shapes.Stack[string]", Value: `shapes.Stack[string]{items:[]string{"a"}}`}}, output: "2\n",
			kinds: []string{MutantExit, MutantGoexit},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ex goapi.Example
			if tc.fixture != "" {
				ex = fixtureExample(t, tc.fixture)
			} else {
				ex = goapi.Example{Name: "Example", Program: tc.program, Output: tc.output}
			}
			tasks, _, err := TasksFromExample(ex, tc.tg)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(tasks, func(x Task) bool { return x.Difficulty == tc.level })
			if i < 0 {
				t.Fatalf("no %s task in %+v", tc.level, tasks)
			}
			task := tasks[i]
			var kinds []string
			for _, m := range Mutants(task, tc.tg, "", tc.probes, tc.output) {
				// The answer's import lines are the harness's business
				// (ImportsFor); what is checked here is the span.
				_, m.Code = SplitAnswer(m.Code)
				if !slices.Contains(exploitKinds, m.Kind) {
					if m.Kind == MutantNull || m.Kind == MutantPerturb {
						if err := typeCheck(task, m); err != nil {
							t.Errorf("%s mutant does not compile: %v\n%s", m.Kind, err, m.Code)
						}
					}
					continue
				}
				kinds = append(kinds, m.Kind)
				if err := CheckSpan(m.Code); err != nil {
					t.Errorf("%s mutant is not a plain span: %v\n%s", m.Kind, err, m.Code)
				}
				if err := typeCheck(task, m); err != nil {
					t.Errorf("%s mutant does not compile: %v\n%s", m.Kind, err, m.Code)
				}
				var got []string
				for _, l := range strings.Split(m.Code, "\n") {
					got = append(got, strings.TrimSpace(l))
				}
				for _, line := range tc.code[m.Kind] {
					if !slices.Contains(got, line) {
						t.Errorf("%s mutant lacks the line %q:\n%s", m.Kind, line, m.Code)
					}
				}
				// Only the hard-coded mutant does without the call.
				if calls := callsTarget(task.Program(m.Code), m.Code, importNameOf(task, tc.tg), tc.tg); calls != (m.Kind != MutantHardcoded) {
					t.Errorf("%s mutant calls the target: %v\n%s", m.Kind, calls, m.Code)
				}
			}
			if !slices.Equal(kinds, tc.kinds) {
				t.Errorf("kinds %v, want %v", kinds, tc.kinds)
			}
		})
	}
}

// TestLiteralsWriteWhatTheScenarioCanCompile: a probed rendering becomes
// source only when the scenario can compile it.
func TestLiteralsWriteWhatTheScenarioCanCompile(t *testing.T) {
	l := newLiterals(Task{
		Imports: []string{`fmt "fmt"`, `lo "github.com/samber/lo"`, `shapes "example.com/shapes"`},
		Decls:   "type point struct{ X, Y int }\n\nfunc f() {}",
		Before:  "\n\ttype pair struct{ a, b int }",
	})
	for _, tc := range []struct {
		in, out string // out "": cannot be written
	}{
		{"main.point{X:1, Y:2}", "point{X:1, Y:2}"},
		{"[]main.point{main.point{X:1, Y:2}}", "[]point{point{X:1, Y:2}}"},
		{"map[string]main.pair{\"k\":main.pair{a:1, b:2}}", "map[string]pair{\"k\":pair{a:1, b:2}}"},
		{"(*main.point)(nil)", "(*point)(nil)"},
		{`"main.point"`, `"main.point"`},
		{"lo.Tuple2[int,string]{A:1, B:\"a\"}", "lo.Tuple2[int,string]{A:1, B:\"a\"}"},
		{"[]interface {}{1, \"a\", interface {}(nil)}", "[]interface {}{1, \"a\", interface {}(nil)}"},
		{"struct { A int; b string }{A:1, b:\"x\"}", "struct { A int; b string }{A:1, b:\"x\"}"},
		{"time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)", "time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)"},
		{"[]uint8{0x61, 0x62}", "[]uint8{0x61, 0x62}"},
		{"map[bool]int{false:1, true:2}", "map[bool]int{false:1, true:2}"},
		{"main.missing{}", ""},                            // declared nowhere the scenario sees
		{`shapes.Stack[string]{items:[]string{"a"}}`, ""}, // another package's unexported field
		{`&errors.errorString{s:"x"}`, ""},                // ... and type
		{"yaml.Node{}", ""},                               // a package the scenario does not import
		{"NaN", ""},
		{"+Inf", ""},
		{"<nil>", ""},
		{"(func(int) int)(0x47e0a0)", ""}, // not even parsed as a conversion of a constant
		{`time.Date(2024, time.January, 1, 0, 0, 0, 0, time.Location("Europe/Paris"))`, ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := l.expr(tc.in)
			if ok != (tc.out != "") || got != tc.out {
				t.Errorf("expr(%q) = %q, %v; want %q", tc.in, got, ok, tc.out)
			}
		})
	}
}

// TestLiteralsDeclareOrAssign: a declaration carries the probed type, so
// an untyped constant does not take its default type; without a writable
// type only a typed value is declared.
func TestLiteralsDeclareOrAssign(t *testing.T) {
	l := newLiterals(Task{Decls: "type point struct{ X int }"})
	for _, tc := range []struct {
		name    string
		pr      Probe
		declare bool
		want    string // "": cannot be written
	}{
		{"a float that prints as an integer", probeOf(3.0), true, "var x float64 = 3"},
		{"an assignment needs no type", probeOf(3.0), false, "x = 3"},
		{"a typed value without a writable type", Probe{Type: "main.point[github.com/a/b.T]", Value: "main.point{X:1}"}, true, "x := point{X:1}"},
		{"an untyped constant without a writable type", Probe{Type: "main.celsius[github.com/a/b.T]", Value: "1.5"}, true, ""},
		{"a nil interface assigned", Probe{Type: "<nil>", Value: "<nil>", Nil: true}, false, "x = nil"},
		{"a nil interface declared: its type is unknown", Probe{Type: "<nil>", Value: "<nil>", Nil: true}, true, ""},
		{"an address-bearing value", Probe{Type: "*int", Value: "(*int)(0xc000012345)", Addr: true}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := l.set("x", tc.pr, tc.declare)
			if ok != (tc.want != "") || got != tc.want {
				t.Errorf("set = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

func importNameOf(t Task, tg Target) string {
	for _, im := range t.Imports {
		name, path, _ := strings.Cut(im, " ")
		if strings.Trim(path, `"`) == tg.Package {
			return name
		}
	}
	return ""
}

// typeCheck type-checks the scenario a mutant runs in, rendered as the
// harness renders it (the imports the code uses, standard ones added on
// use; the kept and probed variables read after the span), against the
// standard library and the shapes fixture.
func typeCheck(t Task, m Mutant) error {
	imports := t.Imports
	if m.Imports != nil {
		imports = m.Imports
	}
	body := "func main() {" + t.Before + "\n" + m.Code + "\n"
	for _, v := range append(append([]string(nil), t.Keep...), t.Probes...) {
		body += "\t_ = " + v + "\n"
	}
	body += t.After + "\n}\n"
	code := t.Decls + "\n" + body
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+code, 0)
	if err != nil {
		return err
	}
	roots := goapi.SelectorRoots(f)
	var b bytes.Buffer
	b.WriteString("package main\n\n")
	for _, im := range append(imports, stdImports(imports, code)...) {
		if name, _, _ := strings.Cut(im, " "); roots[name] {
			b.WriteString("import " + im + "\n")
		}
	}
	b.WriteString(code)
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "main.go", b.String(), 0)
	if err != nil {
		return err
	}
	conf := types.Config{Importer: scenarioImporter()}
	_, err = conf.Check("main", fset, []*ast.File{file}, nil)
	return err
}

var shared *fixtureImporter

// scenarioImporter imports the standard library from source and the
// shapes fixture's packages from its tree, one importer for the test run
// (it caches what it read). Tests using it do not run in parallel: the
// source importer is not safe for concurrent use.
func scenarioImporter() types.Importer {
	if shared == nil {
		shared = &fixtureImporter{std: importer.ForCompiler(token.NewFileSet(), "source", nil), pkgs: map[string]*types.Package{}}
	}
	return shared
}

type fixtureImporter struct {
	std  types.Importer
	pkgs map[string]*types.Package
}

func (f *fixtureImporter) Import(path string) (*types.Package, error) {
	rest, ok := strings.CutPrefix(path, "example.com/shapes")
	if !ok {
		return f.std.Import(path)
	}
	if p, ok := f.pkgs[path]; ok {
		return p, nil
	}
	dir := filepath.Join(fixtureNew, rest)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			return nil, err
		}
		files = append(files, file)
	}
	conf := types.Config{Importer: f}
	p, err := conf.Check(path, fset, files, nil)
	if err != nil {
		return nil, err
	}
	f.pkgs[path] = p
	return p, nil
}

// TestExploitMutantsFailTheHarness runs the reference and every mutant of
// fixture tasks through the real harness: the reference passes, every
// mutant fails. (The throwaway and discarded mutants call the target and
// reproduce its values: only a harness that attributes the checked values
// to the call rejects them — issue 9, item 1.)
func TestExploitMutantsFailTheHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	scale := Target{ID: "example.com/shapes.Scale", Package: "example.com/shapes", Name: "Scale"}
	apply := Target{ID: "example.com/shapes.Apply", Package: "example.com/shapes", Name: "Apply"}
	for _, tc := range []struct {
		name    string
		tg      Target
		example string // a fixture example to cut the task from, or
		task    Task   // the task
		sibling string
	}{
		{name: "a probed result", tg: scale, sibling: "ScaleErr", task: Task{
			Difficulty: Easy, Imports: []string{`fmt "fmt"`, `shapes "example.com/shapes"`},
			Before: "\n\txs := []int{1, 2, 3}", Keep: []string{"xs"}, Mask: "\tys := shapes.Scale(xs, 2)", After: "\tfmt.Println(ys)", Probes: []string{"ys"},
		}},
		{name: "a printed result", tg: scale, example: "ExampleScale", sibling: "ScaleErr"},
		{name: "a result computed through a callback", tg: apply, example: "ExampleApply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := tc.task
			if tc.example != "" {
				tasks, _, err := TasksFromExample(fixtureExample(t, tc.example), tc.tg)
				if err != nil {
					t.Fatal(err)
				}
				task = tasks[0]
			}
			f := newSpiedFixture(t, tc.tg)
			e := f.observe(t, task)
			probes, output := expectedProbes(e)
			mutants := append([]Mutant{{Kind: "reference", Code: task.ReferenceAnswer()}}, Mutants(task, tc.tg, tc.sibling, probes, output)...)
			var specs []UnitSpec
			for _, m := range mutants {
				mt := task
				if m.Imports != nil {
					mt.Imports = m.Imports
				}
				u := f.unit(mt, m.Code, 1)
				u.Perturbed, _ = PerturbBefore(mt)
				specs = append(specs, u)
			}
			for i, run := range f.run(t, specs...) {
				passed := run.Record != nil && len(Check(e, run.Record)) == 0
				if passed != (mutants[i].Kind == "reference") {
					t.Errorf("%s: passed the harness = %v\n%s\n%v %v", mutants[i].Kind, passed, mutants[i].Code, run.CompileError, run.Err)
				}
			}
		})
	}
}
