package goharness

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/goapi"
	"github.com/lacuna-dev/lacuna/runners/gotool"
	"github.com/lacuna-dev/lacuna/runners/modfetch"
	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// spiedFixture is the shapes fixture with the spy on one API, and what a
// harness batch against it needs.
type spiedFixture struct {
	tc     *gotool.Toolchain
	mod    *modfetch.Module
	opts   gotool.BatchOptions
	work   string
	access string
	tg     Target
	// supervise runs units under the supervisor (with bubblewrap).
	supervise bool
	unitWall  time.Duration // RunConfig.UnitWall
}

func newSpiedFixture(tb testing.TB, tg Target) spiedFixture {
	tb.Helper()
	abs, _ := filepath.Abs(fixtureNew)
	apis, err := goapi.Surface(abs)
	if err != nil {
		tb.Fatal(err)
	}
	var targets []goapi.API
	for _, a := range apis {
		if a.ID == tg.ID {
			targets = append(targets, a)
		}
	}
	work := tb.TempDir()
	spy, err := NewSpy(abs, "example.com/shapes", targets, work)
	if err != nil {
		tb.Fatal(err)
	}
	tc, err := gotool.NewToolchain(tb.TempDir(), gotool.Options{Environ: os.Environ(), GoCache: sharedBuildCache(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	sb, err := sandbox.New()
	if err != nil {
		tb.Fatal(err)
	}
	ws, err := tc.NewWorkspace(sb, "harness", sandbox.Limits{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ws.Close() })
	return spiedFixture{tc: tc, mod: &modfetch.Module{Path: "example.com/shapes", Version: "v1.1.0", Dir: abs},
		opts: ws.BatchOptions(gotool.TestOptions{Args: []string{"-overlay", spy.Overlay}}), work: ws.Dir, access: spy.Access[tg.ID], tg: tg,
		supervise: ws.Isolation == "bubblewrap"}
}

// unit is one solution of a task for run.
func (f spiedFixture) unit(task Task, solution string, runs int) UnitSpec {
	imports, span := SplitAnswer(solution)
	u := UnitSpec{Task: task, Solution: span, SolverImports: imports, SpyAccess: f.access, SpyImport: f.tg.Package, Module: "example.com/shapes", Runs: runs}
	if prog, span, ok := task.AsProgram(solution); ok {
		prog, span, _ = task.WithContext(prog, span)
		u.Task, u.Solution, u.SolverImports, u.SolverDecls = prog, span, nil, true
	}
	return u
}

// run runs units, each alone, and returns what each gave.
func (f spiedFixture) run(tb testing.TB, specs ...UnitSpec) []UnitRun {
	tb.Helper()
	units := make([]Unit, len(specs))
	for i, u := range specs {
		u.Index = i
		units[i] = Harness(u)
		if u.SolverDecls {
			units[i].Group = "alone" + string(rune('a'+i))
		}
	}
	runs, _, err := RunUnits(context.Background(), f.tc, f.mod, units, f.opts, RunConfig{Dir: f.work, Parallel: 2, Supervise: f.supervise, UnitWall: f.unitWall})
	if err != nil {
		tb.Fatal(err)
	}
	return runs
}

// observe runs a task's reference as the tasks node does and returns its
// expectation.
func (f spiedFixture) observe(t *testing.T, task Task) *Expectation {
	t.Helper()
	u := f.unit(task, task.ReferenceAnswer(), 10)
	u.Perturbed, _ = PerturbBefore(task)
	run := f.run(t, u)[0]
	if run.Record == nil {
		t.Fatalf("no record: %+v %v %+v", run, run.Err, run.Process)
	}
	e, err := Derive(run.Record)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// check runs solutions once each (and on the second input when e has
// one) and returns the failing layers of each ("compile" when it did
// not compile, "no record: ..." when the process left none).
func (f spiedFixture) check(t *testing.T, task Task, e *Expectation, solutions ...string) [][]string {
	t.Helper()
	var specs []UnitSpec
	for _, s := range solutions {
		if !strings.HasPrefix(s, "package ") && !strings.HasPrefix(s, "import ") {
			s = task.Answer(s) // the import lines it needs, as a solver writes them
		}
		u := f.unit(task, s, 1)
		if e.Perturbed != nil && u.Task.Before != "" {
			u.Perturbed, _ = PerturbBefore(u.Task)
		}
		if u.SolverDecls {
			e.SubstitutionFor(&u)
		}
		specs = append(specs, u)
	}
	var out [][]string
	for i, run := range f.run(t, specs...) {
		switch {
		case run.CompileError != "":
			out = append(out, []string{"compile"})
		case run.Err != nil:
			out = append(out, []string{"no record: " + run.Err.Error()})
		default:
			exp := e
			if specs[i].SolverDecls {
				exp = e.WithProbes(specs[i].Task.Probes)
				if specs[i].Perturbed == "" {
					exp.Perturbed = nil
				}
			}
			out = append(out, Layers(Check(exp, run.Record)))
		}
	}
	return out
}

var scaleTask = Task{
	Difficulty: Easy, Imports: []string{`fmt "fmt"`, `shapes "example.com/shapes"`},
	Before: "\n\txs := []int{1, 2, 3}", Keep: []string{"xs"}, Mask: "\tys := shapes.Scale(xs, 2)", After: "\tfmt.Println(ys)", Probes: []string{"ys"},
}

// TestHarnessObservesThenChecks runs the execute-then-assert cycle on
// the fixture: observe the reference (ten runs, the counterfactual, the
// second input), then check solutions, each in its own process, outside
// it.
func TestHarnessObservesThenChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	f := newSpiedFixture(t, Target{ID: "example.com/shapes.Scale", Package: "example.com/shapes", Name: "Scale"})
	e := f.observe(t, scaleTask)
	if e.Output != "[2 4 6]\n" || e.Runs != 10 || e.Probes["ys"].Mode != ModeExact || e.Perturbed == nil || e.Perturbed.Output != "[4 6 8]\n" {
		t.Fatalf("expectation %+v (perturbed %+v)", e, e.Perturbed)
	}
	if !reflect.DeepEqual(e.Dependent, []string{EndPrefix + "ys", "ys", OutputKey}) {
		t.Fatalf("dependent %v", e.Dependent)
	}
	cases := []struct {
		code   string
		layers []string
	}{
		{scaleTask.Mask, []string{}},
		{"\tvar ys []int\n\tfor _, x := range xs {\n\t\tys = append(ys, shapes.Scale([]int{x}, 2)...)\n\t}", []string{"input"}},                          // right, but the target never gets the task's data as the reference passes it (a known false reject)
		{"\tys := shapes.Scale[int](xs, 2)", []string{}},                                                                                                 // explicit type parameters
		{"\tys := reflect.ValueOf(shapes.Scale[int]).Call([]reflect.Value{reflect.ValueOf(xs), reflect.ValueOf(2)})[0].Interface().([]int)", []string{}}, // through reflect: the solver's call
		{"\tys := shapes.Scale(xs, 3)", []string{"input", "comparative"}},                                                                                // perturbed argument
		{"\tys := []int{2, 4, 6}", []string{"spy"}},                                                                                                      // right values, target never called
		{"\tys, _ := shapes.ScaleErr(xs, 2)", []string{"spy"}},                                                                                           // a sibling that calls it indirectly
		{"\t_ = shapes.Scale([]int{9}, 9)\n\tys := []int{2, 4, 6}", []string{"input"}},                                                                   // throwaway call on other data
		{"\tys := shapes.Scale(xs, 2)\n\tys = []int{2, 4, 6}", []string{"attribution", "perturbed"}},                                                     // the result discarded
		{"\tys := []int{2, 4, 6}\n\tif len(shapes.Scale(xs, 2)) > 0 {\n\t\tys = []int{2, 4, 6}\n\t}", []string{"attribution", "perturbed"}},              // used, but not for the values
		{"\tys := shapes.Scale(xs, 2)\n\tif xs[0] == 1 {\n\t\tys = []int{2, 4, 6}\n\t}", []string{"attribution"}},                                        // right on the first input only
		{"\tys := shapes.Scale([]int{1, 2, 3}, 2)", []string{"perturbed"}},                                                                               // ignores the input
		{"\tys := shapes.Scale(xs, 2)\n\tfmt.Println(\"[2 4 6]\")\n\tos.Exit(0)", []string{"runtime"}},                                                   // exits early: -test.paniconexit0 makes it a panic
		{"\tys := shapes.Scale(xs, 2)\n\tgo func() { panic(\"boom\") }()\n\tselect {}", []string{"no record: " + ErrNoRecord.Error()}},
		{"\tys := shapes.Scale(xs, 2)\n\tgo func() { select {} }()", []string{"runtime"}}, // leftover goroutine
		{"\tys := shapes.Scale(xs, 2)\n\truntime.Goexit()", []string{"runtime"}},          // leaves the scenario
		{"\tys := shapes.Scale(xs, 2", []string{"compile"}},                               // syntax break
		// Defensive code: it no longer dies on a zero result.
		{"\tys := shapes.Scale(xs, 2)\n\tif len(ys) == 0 {\n\t\tpanic(\"no result\")\n\t}", []string{}},
		{"\tys := shapes.Scale(xs, 2)\n\tif ys == nil {\n\t\tos.Exit(1)\n\t}", []string{}},
		{"\tys := shapes.Scale(xs, 2)\n\tfmt.Fprintln(os.Stderr, \"first:\", ys[0])", []string{}},
		// Guards on the target's result, then the values hard-coded.
		{"\tok := len(shapes.Scale([]int{7}, 1)) > 0\n\tys := []int{0, 0, 0}\n\tif ok {\n\t\tys = []int{2, 4, 6}\n\t}", []string{"input"}},
		{"\tok := len(shapes.Scale(xs, 2)) == 3\n\tys := []int{}\n\tif ok {\n\t\tys = []int{2, 4, 6}\n\t}", []string{"attribution", "perturbed"}},
		{"\tk := shapes.Scale(xs, 2)[0] / 2\n\tys := []int{2 * k, 4 * k, 6 * k}", []string{"attribution", "perturbed"}},
		{"\tfunc() {\n\t\tdefer func() { recover() }()\n\t\t_ = shapes.Scale(xs, 2)\n\t}()\n\tys := []int{2, 4, 6}", []string{"attribution", "perturbed"}},
		// Telling runs apart through process or sandbox state: every
		// variant runs in a fresh process, in a reset sandbox.
		{"\tvar ys []int\n\tif os.Getenv(\"SEEN\") != \"\" {\n\t\tys = shapes.Scale(xs, 2)\n\t} else {\n\t\tos.Setenv(\"SEEN\", \"1\")\n\t\t_ = shapes.Scale(xs, 2)\n\t\tys = []int{2, 4, 6}\n\t}", []string{"attribution", "perturbed"}},
		{"\tvar ys []int\n\tif _, err := os.Stat(\"seen\"); err == nil {\n\t\tys = shapes.Scale(xs, 2)\n\t} else {\n\t\tos.WriteFile(\"seen\", nil, 0o644)\n\t\t_ = shapes.Scale(xs, 2)\n\t\tys = []int{2, 4, 6}\n\t}", []string{"attribution", "perturbed"}},
		{"package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/shapes\"\n)\n\nfunc double(xs []int) []int { return shapes.Scale(xs, 2) }\n\nfunc main() {\n\tfmt.Println(double([]int{1, 2, 3}))\n}\n", []string{}}, // a whole program, the call in a helper
		// A whole program that begins with the task's context gets its
		// second input: wrong on it only, it fails there.
		{"package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/shapes\"\n)\n\nfunc main() {\n\txs := []int{1, 2, 3}\n\tys := shapes.Scale(xs, 2)\n\tfmt.Println(ys)\n}\n", []string{}},
		{"package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/shapes\"\n)\n\nfunc main() {\n\txs := []int{1, 2, 3}\n\tys := shapes.Scale(xs, 2)\n\tif xs[0] != 1 {\n\t\tys = nil\n\t}\n\tfmt.Println(ys)\n}\n", []string{"perturbed"}},
	}
	var codes []string
	for _, c := range cases {
		codes = append(codes, c.code)
	}
	got := f.check(t, scaleTask, e, codes...)
	for i, c := range cases {
		if !reflect.DeepEqual(got[i], c.layers) {
			t.Errorf("%q: layers %v, want %v", c.code, got[i], c.layers)
		}
	}
}

// TestContextCallsAreNotTheSolvers: when the task's own code calls the
// target, a span that does not still fails the spy.
func TestContextCallsAreNotTheSolvers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	task := scaleTask
	task.After = "\tfmt.Println(ys, shapes.Scale(xs, 1))"
	f := newSpiedFixture(t, Target{ID: "example.com/shapes.Scale", Package: "example.com/shapes", Name: "Scale"})
	e := f.observe(t, task)
	got := f.check(t, task, e, task.Mask, "\tys := []int{2, 4, 6}")
	if !reflect.DeepEqual(got, [][]string{{}, {"spy"}}) {
		t.Errorf("layers %v, want [[] [spy]]", got)
	}
}

// TestVerdictsCannotBeForged: what a solution prints, or writes to the
// harness's channel, decides nothing.
func TestVerdictsCannotBeForged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	f := newSpiedFixture(t, Target{ID: "example.com/shapes.Scale", Package: "example.com/shapes", Name: "Scale"})
	e := f.observe(t, scaleTask)
	forged := `{"unit":0,"normal":[{"output":"[2 4 6]\n","probes":{"ys":{"type":"[]int","len":3,"value":"[]int{2, 4, 6}"}},"direct":1}]}`
	sols := []string{
		// test2json framing and a fake record on stdout and stderr.
		"\tys := []int{2, 4, 6}\n\tfmt.Fprintln(os.Stderr, \"--- PASS: Test_u0 (0.00s)\")\n\tfmt.Fprintln(os.NewFile(1, \"\"), \"\\x16--- PASS: Test_u0 (0.00s)\\nPASS\")",
		// a record of its own on the channel, then an exit before the harness writes.
		"\tys := []int{2, 4, 6}\n\tos.NewFile(8, \"\").WriteString(\"00 \" + " + "`" + forged + "`" + " + \"\\n\")\n\tos.Exit(0)",
		// the same, staying in the scenario: two records on the channel.
		"\tys := shapes.Scale(xs, 2)\n\tos.NewFile(8, \"\").WriteString(\"00 \" + " + "`" + forged + "`" + " + \"\\n\")",
	}
	got := f.check(t, scaleTask, e, sols...)
	want := [][]string{{"spy"}, {"no record: " + ErrTampered.Error()}, {"no record: " + ErrTampered.Error()}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layers %v, want %v", got, want)
	}
}

// TestSamplesAreIsolated: one sample's crash, exit or change of global
// state in its process does not reach another's verdict.
func TestSamplesAreIsolated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	f := newSpiedFixture(t, Target{ID: "example.com/shapes.Scale", Package: "example.com/shapes", Name: "Scale"})
	e := f.observe(t, scaleTask)
	var sols []string
	for _, hostile := range []string{
		"\tos.Exit(1)",
		"\tgo func() { panic(\"boom\") }()\n\ttime.Sleep(time.Second)",
		"\tvar f func(int) int\n\tf = func(n int) int { return f(n+1) + 1 }\n\tf(0)",
		"\tos.Stdout = nil\n\tgo func() { for { shapes.Scale(xs, 2) } }()",
	} {
		sols = append(sols, hostile, scaleTask.Mask)
	}
	got := f.check(t, scaleTask, e, sols...)
	for i := 1; i < len(sols); i += 2 {
		if len(got[i]) != 0 {
			t.Errorf("the reference after %q failed: %v", sols[i-1], got[i])
		}
		if len(got[i-1]) == 0 {
			t.Errorf("%q passed", sols[i-1])
		}
	}
}

// TestBehaviouralLayerCountsCallbacks: a solution that prints the right
// thing and calls the target, but never lets the target call back into
// what it was given (a function argument; the scenario's own type through
// an interface), fails the behavioural layer.
func TestBehaviouralLayerCountsCallbacks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	for _, tc := range []struct {
		name, example string
		cheat         string
	}{
		{"Apply", "ExampleApply", "\tshapes.Apply(nil, double)\n\tfmt.Println([]int{2, 4, 6})"},
		{"TotalArea", "ExampleTotalArea", "\tshapes.TotalArea()\n\tfmt.Println(square{1}.Area() + square{2}.Area())"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := Target{ID: "example.com/shapes." + tc.name, Package: "example.com/shapes", Name: tc.name}
			tasks, _, err := TasksFromExample(fixtureExample(t, tc.example), tg)
			if err != nil {
				t.Fatal(err)
			}
			task := tasks[0]
			f := newSpiedFixture(t, tg)
			e := f.observe(t, task)
			if !e.Callbacks {
				t.Fatalf("expectation %+v: no callbacks", e)
			}
			got := f.check(t, task, e, task.Mask, tc.cheat)
			if len(got[0]) != 0 || !slicesContain(got[1], "behavioural") {
				t.Errorf("layers %v: want the reference to pass and the cheat to fail the behavioural layer", got)
			}
		})
	}
}

// expectedProbes are an expectation's values as Mutants takes them.
func expectedProbes(e *Expectation) (map[string]Probe, string) {
	probes := map[string]Probe{}
	for k, x := range e.Probes {
		probes[k] = Probe{Type: x.Type, Len: x.Len, Nil: x.Nil, Value: x.Value}
	}
	return probes, e.Output
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestCalibrationMutantsFailAndTheJudgeClassifiesThem: every mutant of a
// real task fails its harness, and the judge's fast path puts each in its
// class.
func TestCalibrationMutantsFailAndTheJudgeClassifiesThem(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	tg := Target{ID: "example.com/shapes.Scale", Package: "example.com/shapes", Name: "Scale"}
	tasks, _, err := TasksFromExample(fixtureExample(t, "ExampleScale"), tg)
	if err != nil {
		t.Fatal(err)
	}
	task := tasks[0]
	f := newSpiedFixture(t, tg)
	e := f.observe(t, task)
	p, _ := goapi.LoadPackage(f.mod.Dir, "example.com/shapes")
	sib := p.Siblings("Scale")
	if len(sib) == 0 || sib[0] != "ScaleErr" {
		t.Fatalf("siblings of Scale: %v", sib)
	}
	probes, output := expectedProbes(e)
	mutants := Mutants(task, tg, sib[0], probes, output)
	if len(mutants) < 5 {
		t.Fatalf("mutants %+v", mutants)
	}
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
	runs := f.run(t, specs...)
	for i, m := range mutants {
		run := runs[i]
		if run.Record != nil && len(Check(e, run.Record)) == 0 {
			t.Errorf("%s mutant passed the harness:\n%s", m.Kind, m.Code)
		}
		mt := specs[i].Task
		s := Sample{Program: mt.Program(m.Code), Solution: m.Code, CompileError: run.CompileError, Ran: run.Record != nil}
		if run.Record != nil && len(run.Record.Normal) > 0 {
			s.Direct = run.Record.Normal[0].Direct
		}
		class, rule := Judge(s, tg, "shapes")
		want := map[string]string{MutantNull: ClassWrongAPISelection, MutantSibling: ClassWrongAPISelection, MutantImport: ClassWrongImport,
			MutantPerturb: ClassNeedsLLM, MutantSyntax: ClassWrongSyntax,
			MutantHardcoded: ClassWrongAPISelection, MutantDiscarded: ClassNeedsLLM, MutantExit: ClassNeedsLLM, MutantGoexit: ClassNeedsLLM}[m.Kind]
		if want != "" && class != want {
			t.Errorf("%s mutant judged %s (%s), want %s; compile error %q", m.Kind, class, rule, want, run.CompileError)
		}
	}
}

// TestSupervisedSandboxIsResetBetweenSamples: under the supervisor,
// samples share a sandbox one after another; what one leaves (files,
// processes, a System V shared memory segment, a changed program) or does
// to the supervisor itself never
// reaches the next one's verdict.
func TestSupervisedSandboxIsResetBetweenSamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	f := newSpiedFixture(t, Target{ID: "example.com/shapes.Scale", Package: "example.com/shapes", Name: "Scale"})
	if !f.supervise {
		t.Skip("the supervisor needs bubblewrap")
	}
	e := f.observe(t, scaleTask)
	// The reference, failing if it sees anything a sample before it left.
	check := "\tif _, err := os.Stat(\"/work/leak\"); err == nil {\n\t\tpanic(\"a file left by another sample\")\n\t}\n" +
		"\tif _, err := os.Stat(\"/tmp/leak\"); err == nil {\n\t\tpanic(\"a temporary file left by another sample\")\n\t}\n" +
		"\tif b, _ := os.ReadFile(\"/proc/sysvipc/shm\"); strings.Count(string(b), \"\\n\") > 1 {\n\t\tpanic(\"a shared memory segment left by another sample\")\n\t}\n" +
		"\tif ents, _ := os.ReadDir(\"/proc\"); len(ents) > 0 {\n\t\tfor _, p := range ents {\n\t\t\tif b, _ := os.ReadFile(\"/proc/\" + p.Name() + \"/comm\"); strings.TrimSpace(string(b)) == \"sleep\" {\n\t\t\t\tpanic(\"a process left by another sample\")\n\t\t\t}\n\t\t}\n\t}\n" +
		scaleTask.Mask
	hostile := []string{
		"\tos.WriteFile(\"/work/leak\", []byte(\"x\"), 0o644)\n\tos.WriteFile(\"/tmp/leak\", []byte(\"x\"), 0o644)",
		"\tcmd := exec.Command(\"/bin/sleep\", \"100\")\n\tcmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}\n\tcmd.Start()\n\ttime.Sleep(100 * time.Millisecond)",
		"\tos.WriteFile(\"/work/prog\", []byte(\"#!/bin/sh\\nexit 0\\n\"), 0o755)",
		// A System V segment outlives its creator, and counts against
		// the memory the sandbox's next units share.
		"\tif id, _, errno := syscall.Syscall(syscall.SYS_SHMGET, 0, 1<<20, 0o1600); errno != 0 || int(id) < 0 {\n\t\tpanic(\"shmget: \" + errno.Error())\n\t}",
		"\tsyscall.Kill(os.Getppid(), syscall.SIGSTOP)",
		"\tsyscall.Kill(os.Getppid(), syscall.SIGKILL)",
	}
	f.unitWall = 3 * time.Second // a stopped supervisor is given up on after 13 s
	var sols []string
	for _, h := range hostile {
		sols = append(sols, "import \"os/exec\"\nimport \"syscall\"\n\n\tvar ys []int\n\t_, _ = exec.Command, syscall.Kill\n"+h, check)
	}
	got := f.check(t, scaleTask, e, sols...)
	for i := 0; i < len(sols); i += 2 {
		if slicesContain(got[i], "compile") || len(got[i]) == 0 {
			t.Errorf("hostile sample %q: %v, want it to run and fail", hostile[i/2], got[i])
		}
	}
	for i := 1; i < len(sols); i += 2 {
		if len(got[i]) != 0 {
			t.Errorf("the reference after %q failed: %v", hostile[i/2], got[i])
		}
	}
}

// TestInitTimeCodeRunsUnderTheScenarioClock: a whole program's variable
// initialisers run before its main, outside any scenario; they are timed
// by the scenario's clock, not only by the unit's wall.
func TestInitTimeCodeRunsUnderTheScenarioClock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	f := newSpiedFixture(t, Target{ID: "example.com/shapes.Scale", Package: "example.com/shapes", Name: "Scale"})
	f.unitWall = 5 * time.Minute
	const stall = "package main\n\nimport (\n\t\"fmt\"\n\t\"time\"\n\n\t\"example.com/shapes\"\n)\n\nvar stalled = func() int { time.Sleep(time.Hour); return 1 }()\n\nfunc main() {\n\txs := []int{1, 2, 3}\n\tys := shapes.Scale(xs, 2)\n\tfmt.Println(ys, stalled)\n}\n"
	start := time.Now()
	run := f.run(t, f.unit(scaleTask, stall, 1))[0]
	took := time.Since(start)
	if run.Err == nil || !strings.Contains(run.Err.Error()+run.Process.Output, "initialisation ran past the scenario's limit") {
		t.Fatalf("a stalled initialiser: err %v, output %q", run.Err, run.Process.Output)
	}
	// Two variants (normal, substituted), each ten seconds, and the build.
	if took > 2*time.Minute {
		t.Errorf("took %v: the initialisers were not under the scenario's clock", took)
	}
}
