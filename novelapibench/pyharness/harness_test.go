package pyharness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

func TestReferencePassesAndIsCountedOnlyFromItsOwnLines(t *testing.T) {
	f := newFixture(t, 1)
	task := fixtureTask()
	exp := f.expectation(t, task)
	if !exp.Dependent[0] || !exp.Dependent[1] {
		t.Errorf("dependent %v: both outcomes come from the target", exp.Dependent)
	}
	run := f.run(t, task, task.Reference)
	if v := Check(exp, run); !v.Passed {
		t.Fatalf("reference fails: %+v\n%s", v, run.Output)
	}
	if run.Record.Direct != 2 {
		t.Errorf("direct calls %d, want 2 (one per input)", run.Record.Direct)
	}
	if run.Record.Patched < 4 {
		t.Errorf("patched %d places, want at least 4 (fixpkg.scale, fixpkg.rescale, fixpkg._impl.scale, Tools.scale)", run.Record.Patched)
	}
	if len(run.Record.Calls) == 0 || run.Record.Calls[0].Args != 1 || len(run.Record.Calls[0].Kwargs) != 1 || run.Record.Calls[0].Kwargs[0] != "factor" {
		t.Errorf("call shapes %+v, want one positional and factor=", run.Record.Calls)
	}
}

func TestEveryAliasOfTheTargetCounts(t *testing.T) {
	f := newFixture(t, 1)
	task := fixtureTask()
	exp := f.expectation(t, task)
	for name, sol := range map[string]string{
		"alias":           "import fixpkg\nys = fixpkg.rescale(xs, factor=k * 10)\nreturn sum(ys) + len(ys)",
		"defining module": "from fixpkg._impl import scale as s\nys = s(xs, k * 10)\nreturn sum(ys) + len(ys)",
		"class attribute": "from fixpkg import Tools\nys = Tools.scale(xs, factor=k * 10)\nreturn sum(ys) + len(ys)",
		"whole function":  "import fixpkg\n\ndef helper(v, k):\n    return fixpkg.scale(v, k * 10)\n\ndef solve(xs, k):\n    ys = helper(xs, k)\n    return sum(ys) + len(ys)",
		"callback":        "import fixpkg\nys = list(map(fixpkg.scale, [xs], [k * 10]))[0]\nreturn sum(ys) + len(ys)",
	} {
		t.Run(name, func(t *testing.T) {
			run := f.run(t, task, sol)
			if v := Check(exp, run); !v.Passed {
				t.Errorf("%+v\n%s", v, run.Output)
			}
		})
	}
}

// TestMutantsAreRejectedWithTheirClasses calibrates the fixture task with
// its reference returning the target's call and passing it a parameter
// (as Cut lifts a literal), and an input changing only that parameter
// (as Cut perturbs one): every kind is built, the perturb mutant changing
// that parameter and the exit mutant calling the target before it ends
// the process.
func TestMutantsAreRejectedWithTheirClasses(t *testing.T) {
	f := newFixture(t, 2)
	task := fixtureTask()
	task.Reference = "from fixpkg import scale\nreturn sum(scale(xs, factor=k)) + len(xs)"
	task.Inputs = append(task.Inputs, "(DATA, 3)")
	exp := f.expectation(t, task)
	audit, err := Calibrate(t.Context(), f.runner, task, "shift", exp)
	if err != nil {
		t.Fatal(err)
	}
	if !audit.Reference.Passed {
		t.Fatalf("reference: %+v", audit.Reference)
	}
	want := map[string]struct{ layer, class string }{
		MutantNull:      {LayerStructural, ClassWrongAPISelection},
		MutantSibling:   {LayerStructural, ClassWrongAPISelection},
		MutantImport:    {LayerStructural, ClassWrongImport},
		MutantPerturb:   {LayerComparative, ClassUndecided},
		MutantSyntax:    {LayerRun, ClassWrongSyntax},
		MutantExit:      {LayerIntegrity, ClassUndecided},
		MutantThrowaway: {LayerSubstitution, ClassUndecided},
	}
	seen := map[string]bool{}
	for _, m := range audit.Mutants {
		seen[m.Kind] = true
		w := want[m.Kind]
		if m.Verdict.Passed || m.Verdict.Layer != w.layer || m.Judgement.Class != w.class || !m.OK {
			t.Errorf("%s: verdict %+v, judged %s (%s); want rejected at %s, %s\n%s", m.Kind, m.Verdict, m.Judgement.Class, m.Judgement.Rule, w.layer, w.class, m.Code)
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("no %s mutant built", k)
		}
	}
	if keep, why := C1(exp, audit); !keep {
		t.Errorf("C1 drops the fixture task: %s", why)
	}
}

func TestJudgeFastPathOnPythonErrors(t *testing.T) {
	f := newFixture(t, 1)
	task := fixtureTask()
	exp := f.expectation(t, task)
	for _, tc := range []struct {
		name, sol, class string
	}{
		{"syntax", "return scale(xs,", ClassWrongSyntax},
		{"indentation", "x = 1\n  return x", ClassWrongSyntax},
		{"missing module", "import fixpkg_nope\nreturn fixpkg_nope.scale(xs, k)", ClassWrongImport},
		{"name not in package", "from fixpkg import scal\nreturn scal(xs, k)", ClassWrongImport},
		{"package never imported", "return sum(fixpkg.scale(xs, k * 10)) + len(xs)", ClassWrongImport},
		{"hallucinated attribute", "import fixpkg\nreturn fixpkg.multiply(xs, k)", ClassWrongAPISelection},
		{"missing submodule", "import fixpkg.other_missing_path as m\nreturn m.scale(xs, k)", ClassWrongImport},
		{"right name, wrong module", "import fixpkg.extra\nreturn fixpkg.extra.scale(xs, k)", ClassWrongImport},
		{"right name, never imported", "return sum(scale(xs, k * 10)) + len(xs)", ClassWrongImport},
		{"unrelated name, never defined", "return sum(multiply(xs, k * 10)) + len(xs)", ClassWrongAPISelection},
		{"crashes before its call", "y = undefined_thing\nfrom fixpkg import scale\nreturn sum(scale(xs, k * 10)) + len(xs)", ClassUndecided},
		{"target at a wrong path", "import fixpkg\nreturn fixpkg.Grid.scale(xs, k)", ClassUndecided},
		{"never calls it", "return sum(x * k * 10 for x in xs) + len(xs)", ClassWrongAPISelection},
		{"wrong value", "from fixpkg import scale\nreturn sum(scale(xs, k)) + len(xs)", ClassUndecided},
		{"raises inside", "from fixpkg import scale\nreturn sum(scale(None, k))", ClassUndecided},
		{"a library's optional dependency is missing", "from fixpkg import scale\nfrom fixpkg._impl import plot\nreturn plot(scale(xs, factor=k * 10))", ClassUndecided},
		{"imports a missing module inside its function", "from fixpkg import scale\ndef helper():\n    import numpy_nope\nhelper()\nreturn sum(scale(xs, k))", ClassWrongImport},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := f.run(t, task, tc.sol)
			v := Check(exp, run)
			if v.Passed {
				t.Fatalf("passed")
			}
			j := Judge(task.Target, tc.sol, exp, v, run)
			if j.Class != tc.class {
				t.Errorf("judged %s (%s), want %s; verdict %+v", j.Class, j.Rule, tc.class, v)
			}
			if j.Class == ClassUndecided && j.Evidence == "" {
				t.Error("undecided without evidence")
			}
		})
	}
}

func TestMethodAndClassTargets(t *testing.T) {
	f := newFixture(t, 2)
	for _, tc := range []struct {
		name string
		task Task
		// wrong never calls the target but computes the same values.
		wrong string
	}{
		{"method", Task{
			Target:    Target{ID: "fixpkg._impl:Grid.cells", Paths: []string{"fixpkg.Grid.cells"}},
			Signature: "def solve(n):", Reference: "from fixpkg import Grid\nreturn Grid(n).cells()", Inputs: []string{"3", "5"},
		}, "from fixpkg import Grid\ng = Grid(n)\nreturn g.n * g.n"},
		{"class", Task{
			Target:    Target{ID: "fixpkg._impl:Grid", Paths: []string{"fixpkg.Grid"}},
			Signature: "def solve(n):", Reference: "from fixpkg import Grid\ng = Grid(n)\nreturn g.cells()", Inputs: []string{"3", "5"},
		}, "return n * n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp := f.expectation(t, tc.task)
			if !exp.Dependent[0] {
				t.Errorf("the outcome does not depend on the %s", tc.name)
			}
			runs, err := f.runner.RunAll(t.Context(), []Sample{{Task: tc.task, Solution: tc.task.Reference}, {Task: tc.task, Solution: tc.wrong}})
			if err != nil {
				t.Fatal(err)
			}
			if v := Check(exp, runs[0]); !v.Passed {
				t.Errorf("reference: %+v", v)
			}
			if v := Check(exp, runs[1]); v.Passed || v.Layer != LayerStructural {
				t.Errorf("a solution that never calls it: %+v", v)
			}
		})
	}
}

func TestBatchGivesTheVerdictsOfSingleRuns(t *testing.T) {
	f := newFixture(t, 4)
	task := fixtureTask()
	exp := f.expectation(t, task)
	samples := []Sample{{Task: task, Solution: task.Reference}}
	for _, m := range Mutants(task, "shift", exp) {
		samples = append(samples, Sample{Task: task, Solution: m.Code})
	}
	samples = append(samples, Sample{Task: task, Solution: "import fixpkg\nfixpkg.scale = lambda *a, **k: []\nreturn 0"}, Sample{Task: task, Solution: task.Reference})
	runs, err := f.runner.RunAll(t.Context(), samples)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range samples {
		batch := Check(exp, runs[i])
		alone := Check(exp, f.run(t, s.Task, s.Solution))
		if batch != alone {
			t.Errorf("sample %d: batch %+v, alone %+v", i, batch, alone)
		}
	}
	if v := Check(exp, runs[len(runs)-1]); !v.Passed {
		t.Errorf("the reference after a sample that patched the library: %+v", v)
	}
}

func TestALibraryThatFailsToLoadIsTheTasksFault(t *testing.T) {
	f := newFixture(t, 1)
	task := fixtureTask()
	task.Target.ID = "fixpkg._impl:no_such_function"
	run := f.run(t, task, task.Reference)
	if run.Record == nil || run.Record.Stage != "load" {
		t.Fatalf("record %+v, want stage load", run.Record)
	}
	j := Judge(task.Target, task.Reference, Expectation{}, Check(Expectation{}, run), run)
	if j.Class != ClassNotRun || !strings.Contains(j.Rule, "did not load") {
		t.Errorf("judged %s (%s): a task that does not load is not the solution's failure", j.Class, j.Rule)
	}
}

func TestValuesThatVaryBetweenRunsAreAssertedByTypeOnly(t *testing.T) {
	f := newFixture(t, 1)
	task := fixtureTask()
	task.Reference = "import os\nfrom fixpkg import scale\nys = scale(xs, factor=k * 10)\nreturn [sum(ys), os.urandom(8).hex(), {str(v) for v in ys}]"
	exp := f.expectation(t, task)
	for i, e := range exp.Expected {
		if e.Exact {
			t.Errorf("input %d asserted exactly: the reference's value varies between runs", i)
		}
	}
	if v := Check(exp, f.run(t, task, task.Reference)); !v.Passed {
		t.Errorf("the reference fails its own varying expectation: %+v", v)
	}
	if v := Check(exp, f.run(t, task, "from fixpkg import scale\nreturn sum(scale(xs, k))")); v.Passed {
		t.Error("a value of another type passes")
	}
}

// TestARandomPickAmongTypesPassesLaterRuns: the reference returns the
// target's items among items of other types in a random order (as
// more_itertools.interleave_randomly does); expected from three runs, it
// passes every later run too, and a value of another length does not.
func TestARandomPickAmongTypesPassesLaterRuns(t *testing.T) {
	f := newFixture(t, 2)
	task := fixtureTask()
	task.Prelude += "\nimport random"
	task.Reference = "from fixpkg import scale\nitems = scale(xs, factor=k) + ['a', None, 2.5, (1,), b'x']\nrandom.shuffle(items)\nreturn items"
	exp := f.expectation(t, task)
	var samples []Sample
	for i := 0; i < 6; i++ {
		samples = append(samples, Sample{Task: task, Solution: task.Reference})
	}
	runs, err := f.runner.RunAll(context.Background(), samples)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range runs {
		if v := Check(exp, r); !v.Passed {
			t.Errorf("later run %d of the reference fails: %+v", i, v)
		}
	}
	short := "from fixpkg import scale\nitems = scale(xs, factor=k) + ['a']\nrandom.shuffle(items)\nreturn items"
	if v := Check(exp, f.run(t, task, short)); v.Passed || v.Layer != LayerComparative {
		t.Errorf("a list of another length: %+v, want rejected at %s", v, LayerComparative)
	}
}

// TestRunsInAVirtualEnvironmentMountedReadOnly: the library installed in
// a venv's site-packages (as runners/pyenv installs it), nothing on
// Paths, the venv mounted through InterpreterMounts.
func TestRunsInAVirtualEnvironmentMountedReadOnly(t *testing.T) {
	py := python(t)
	dir := worldDir(t)
	venv := filepath.Join(dir, "venv")
	if out, err := exec.Command(py, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		need(t, "python3 -m venv: "+err.Error()+"\n"+string(out))
	}
	site, err := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	if err != nil || len(site) != 1 {
		t.Fatalf("site-packages: %v %v", site, err)
	}
	for name, src := range fixtureFiles {
		p := filepath.Join(site[0], name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mounts, err := InterpreterMounts(filepath.Join(venv, "bin", "python"))
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) == 0 || mounts[0] != venv {
		t.Errorf("mounts %v, want the venv first", mounts)
	}
	sb, err := sandbox.New()
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(sb, Config{Python: filepath.Join(venv, "bin", "python"), ReadOnly: mounts,
		Limits: sandbox.Limits{Wall: 30 * time.Second, Memory: 1 << 30}, Dir: worldDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	task := fixtureTask()
	var runs []Run
	for i := 0; i < 3; i++ {
		run, err := r.Run(t.Context(), Sample{Task: task, Solution: task.Reference})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	exp, err := Derive(runs)
	if err != nil {
		t.Fatal(err)
	}
	if v := Check(exp, runs[0]); !v.Passed {
		t.Errorf("reference in the venv: %+v", v)
	}
}

func TestNewRunnerRefusesPathsTheSandboxUserCannotReach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the check applies when lacuna runs as root")
	}
	dir := worldDir(t)
	private := filepath.Join(dir, "private")
	if err := os.MkdirAll(filepath.Join(private, "env"), 0o700); err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewRunner(sb, Config{Python: python(t), ReadOnly: []string{filepath.Join(private, "env")}, Dir: worldDir(t)}); err == nil {
		t.Error("accepted a read-only path below a directory of mode 0700")
	}
}

// TestValuesWithoutPublicStateAreComparedByValue: an Enum member, the
// standard library's value types (no __dict__: datetime, Decimal,
// Fraction, Path) and an object whose state is all private are compared
// by what they hold, so a wrong value of the right type fails.
func TestValuesWithoutPublicStateAreComparedByValue(t *testing.T) {
	f := newFixture(t, 2)
	call := "from fixpkg import scale\nn = sum(scale(xs, factor=k * 10))\n"
	for _, tc := range []struct {
		name, prelude, ref, wrong string
	}{
		{"enum member", "import enum\nclass Color(enum.Enum):\n    RED = 1\n    BLUE = 2",
			"return Color.RED if n > 0 else Color.BLUE", "return Color.BLUE if n > 0 else Color.RED"},
		{"date", "import datetime", "return datetime.date(2000, 1, 1) + datetime.timedelta(days=n)",
			"return datetime.date(2000, 1, 1) + datetime.timedelta(days=n + 1)"},
		{"datetime", "import datetime", "return datetime.datetime(2000, 1, 1) + datetime.timedelta(seconds=n)",
			"return datetime.datetime(2000, 1, 1) + datetime.timedelta(seconds=n + 1)"},
		{"decimal", "import decimal", "return decimal.Decimal(n) / 7", "return decimal.Decimal(n + 1) / 7"},
		{"fraction", "import fractions", "return fractions.Fraction(n, 7)", "return fractions.Fraction(n + 1, 7)"},
		{"path", "import pathlib", "return pathlib.PurePosixPath('/d') / str(n)", "return pathlib.PurePosixPath('/d') / str(n + 1)"},
		{"object with private state only", "class Box:\n    def __init__(self, v):\n        self._v = v",
			"return Box(n)", "return Box(n + 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := fixtureTask()
			task.Prelude += "\n" + tc.prelude
			task.Reference = call + tc.ref
			exp := f.expectation(t, task)
			if v := Check(exp, f.run(t, task, task.Reference)); !v.Passed {
				t.Fatalf("the reference fails: %+v", v)
			}
			if v := Check(exp, f.run(t, task, call+tc.wrong)); v.Passed || v.Layer != LayerComparative {
				t.Errorf("a wrong value of the right type: %+v, want rejected at %s", v, LayerComparative)
			}
		})
	}
}

// TestOneVaryingPartLeavesTheRestExact: the reference's dict is built
// from a set of strings (its order varies with hash randomisation) beside
// a random token; the dict is still asserted exactly.
func TestOneVaryingPartLeavesTheRestExact(t *testing.T) {
	f := newFixture(t, 2)
	task := fixtureTask()
	task.Prelude += "\nimport os"
	task.Reference = "from fixpkg import scale\nys = scale(xs, factor=k * 10)\nreturn ({s: len(s) for s in {'v' * (1 + y % 7) + str(y) for y in ys}}, os.urandom(4).hex())"
	exp := f.expectation(t, task)
	if v := Check(exp, f.run(t, task, task.Reference)); !v.Passed {
		t.Fatalf("the reference fails: %+v", v)
	}
	wrong := "from fixpkg import scale\nys = scale(xs, factor=k * 10)\nreturn ({s: 0 for s in {'v' * (1 + y % 7) + str(y) for y in ys}}, os.urandom(4).hex())"
	if v := Check(exp, f.run(t, task, wrong)); v.Passed || v.Layer != LayerComparative {
		t.Errorf("a dict of wrong values: %+v, want rejected at %s", v, LayerComparative)
	}
}

// TestJudgeIgnoresTheExceptionsTheReferenceRaisesToo: the reference
// raises ModuleNotFoundError on its second input; a solution that raises
// it there too and is wrong on the first is not a WrongImport.
func TestJudgeIgnoresTheExceptionsTheReferenceRaisesToo(t *testing.T) {
	f := newFixture(t, 1)
	task := fixtureTask()
	task.Inputs = []string{"(DATA, 2)", "([4, 5], -1)"}
	task.Reference = "from fixpkg import scale\nif k < 0:\n    import fixpkg_missing\nreturn sum(scale(xs, factor=k * 10)) + len(xs)"
	exp := f.expectation(t, task)
	if exp.Expected[1].Raises != "ModuleNotFoundError" {
		t.Fatalf("expectation %+v: the reference should raise on input 1", exp.Expected[1])
	}
	if v := Check(exp, f.run(t, task, task.Reference)); !v.Passed {
		t.Fatalf("the reference fails: %+v", v)
	}
	wrong := strings.Replace(task.Reference, "k * 10", "k * 100", 1)
	run := f.run(t, task, wrong)
	v := Check(exp, run)
	if v.Passed {
		t.Fatal("a wrong value passes")
	}
	if j := Judge(task.Target, wrong, exp, v, run); j.Class != ClassUndecided {
		t.Errorf("judged %s (%s), want %s: the import error is the reference's own", j.Class, j.Rule, ClassUndecided)
	}
}
