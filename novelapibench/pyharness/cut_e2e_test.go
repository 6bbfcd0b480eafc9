package pyharness

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/pyapi"
	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// cutpkg documents its APIs with doctests of every shape Cut takes: a
// function, a multi-step example composed with another function, a class
// constructor, a method on an instance, a side effect a later step shows,
// a perturbed input the function refuses, and a side effect only (no
// task); and with fenced blocks as pydantic writes them: a call in a for
// loop with "#> " output, one in a with statement stating no output, a
// block of another language and one that does not parse; a call in a
// class's body, the class's values then printed (the class is the span),
// and one in a try statement that prints the error it catches; a call in
// the body of a class whose base registers each subclass's name once (a
// second definition raises: the task keeps the first input only).
var cutpkgFiles = map[string]string{
	"cutpkg/__init__.py": "from ._core import scale, shift, Grid, reset, parse_int, Counter, windows, Record, field, Named, label\n",
	"cutpkg/_core.py": `def scale(xs, factor=2):
    """Multiply each item of xs by factor.

    >>> scale([1, 2], 3)
    [3, 6]
    """
    return [x * factor for x in xs]


def shift(xs, by=1):
    """Add by to each item.

    >>> data = [1, 2]
    >>> ys = scale(data, 2)
    >>> shift(ys, 1)
    [3, 5]
    """
    return [x + by for x in xs]


class Grid:
    """A square grid of n by n cells.

    >>> Grid(3).n
    3
    """

    def __init__(self, n):
        self.n = n

    def cells(self):
        """Count the cells.

        >>> g = Grid(4)
        >>> g.cells()
        16
        """
        return self.n * self.n


class Counter:
    def __init__(self):
        self.total = 0

    def add(self, n):
        """Add n to the total.

        >>> c = Counter()
        >>> c.add(5)
        >>> c.total
        5
        """
        self.total += n


def parse_int(text):
    """Read a decimal number.

    >>> parse_int('42')
    42
    """
    return int(text)


def reset(state):
    """Clear state in place.

    >>> s = {'a': 1}
    >>> reset(s)
    """
    state.clear()
` + strings.ReplaceAll(`

def windows(xs, n):
    """Consecutive runs of n items.

    FENCEpython
    from cutpkg import windows

    for w in windows([1, 2, 3], 2):
        print(w)
        #> [1, 2]
        #> [2, 3]
    FENCE

    FENCEpython
    import contextlib
    from cutpkg import windows

    with contextlib.nullcontext([4, 5, 6]) as data:
        ws = list(windows(data, 3))
    print(ws)
    FENCE

    FENCEbash
    pip install cutpkg
    FENCE

    FENCEpython
    windows(
    FENCE
    """
    return [xs[i:i + n] for i in range(len(xs) - n + 1)]


class _Default:
    def __init__(self, value):
        if value < 0:
            raise ValueError("a default must not be negative: %d" % value)
        self.value = value


class Record:
    """Keyword-built values over class-level defaults."""

    def __init__(self, **kw):
        defaults = {k: v.value for k, v in vars(type(self)).items() if isinstance(v, _Default)}
        self._values = {**defaults, **kw}

    def values(self):
        return dict(self._values)


def field(value):
    """Declare a Record attribute with a default value.

    FENCEpython
    from cutpkg import Record, field

    class Point(Record):
        x = field(2)
        y = field(5)

    p = Point(y=1)
    print(p.values())
    #> {'x': 2, 'y': 1}
    FENCE

    FENCEpython
    from cutpkg import field

    try:
        field(-1)
    except ValueError as e:
        print(e)
        #> a default must not be negative: -1
    FENCE
    """
    return _Default(value)


_names = set()


class Named:
    """A base that registers each subclass's name, once."""

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.__name__ in _names:
            raise ValueError("%s is already registered" % cls.__name__)
        _names.add(cls.__name__)


def label(text):
    """Make the label of a Named class.

    FENCEpython
    from cutpkg import Named, label

    class Point(Named):
        tag = label('pt')

    print(Point.tag)
    #> <pt>
    FENCE
    """
    return "<" + text + ">"
`, "FENCE", "```"),
}

// TestCutTasksOfAPackagePassCalibrationAndC1 runs the slice end to end
// on a fixture package: its surface and doctests (runners/pyapi), the
// doctests validated in the sandbox, Cut, then each task's expectation
// from three sandboxed runs of its reference, the calibration mutants and
// C1. Every task is kept but field's whose call sits in a try: the target
// raises on the example's input and its result is thrown away on the
// perturbed one, and an exception is raised unchanged under substitution,
// so no outcome depends on the target and C1 drops it. The class
// constructor's (Grid: its result read off the instance) is kept: under
// substitution it is constructed on perturbed arguments, which the
// throwaway mutant's literals do not follow.
func TestCutTasksOfAPackagePassCalibrationAndC1(t *testing.T) {
	py := python(t)
	sb, err := sandbox.New()
	if err != nil {
		t.Fatal(err)
	}
	needBubblewrap(t, sb)
	pkg := worldDir(t)
	for name, src := range cutpkgFiles {
		p := filepath.Join(pkg, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	surf, err := pyapi.Surface(ctx, py, []string{pkg}, "cutpkg")
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]pyapi.API{}
	for _, a := range surf.APIs {
		byID[a.ID] = a
	}
	examples, bad, err := pyapi.Doctests(ctx, py, surf.APIs)
	if err != nil || len(bad) != 1 || !strings.Contains(bad["cutpkg._core:windows#fenced-3"], "does not parse") {
		t.Fatalf("doctests: %v %v, want only windows' third Python block skipped, that does not parse", err, bad)
	}
	x := &pyapi.Executor{Sandbox: sb, Python: py, Paths: []string{pkg}, Limits: sandbox.Limits{Wall: 20 * time.Second}}
	var items []Cuttable
	for _, ex := range examples {
		v, err := x.Run(ctx, ex)
		if err != nil {
			t.Fatal(err)
		}
		if !v.Valid() {
			t.Fatalf("example %s: %s %s %s", ex.Name, v.Status, v.Error, v.Got)
		}
		items = append(items, Cuttable{API: byID[ex.APIID], Example: ex})
		if ex.APIID == "cutpkg._core:windows" && ex.Origin != pyapi.OriginFenced {
			t.Errorf("example %s: origin %q, want fenced", ex.Name, ex.Origin)
		}
	}
	res, err := CutAll(ctx, py, items)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, task := range res.Tasks {
		got = append(got, task.Target.QualName()+"/"+task.Difficulty)
	}
	sort.Strings(got)
	want := "Counter.add/easy Counter.add/hard Grid.cells/easy Grid.cells/hard Grid/easy field/easy field/easy label/easy parse_int/easy scale/easy shift/easy shift/hard shift/medium windows/easy windows/easy"
	if strings.Join(got, " ") != want {
		t.Errorf("tasks %v, want %s", got, want)
	}
	var noTask []string
	for _, s := range res.Skipped {
		if s.Level == "" {
			noTask = append(noTask, s.Example+": "+s.Reason)
		}
	}
	if len(noTask) != 1 || !strings.HasPrefix(noTask[0], "cutpkg._core:reset: ") || !strings.Contains(noTask[0], "side effect only") {
		t.Errorf("examples without a task %q, want reset's, a side effect only", noTask)
	}

	r, err := NewRunner(sb, Config{
		Python: py, Paths: []string{pkg}, ReadOnly: []string{pkg},
		Limits: sandbox.Limits{Wall: 30 * time.Second, Memory: 1 << 30}, Parallel: 2, Dir: worldDir(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, task := range res.Tasks {
		t.Run(task.Target.QualName()+"/"+task.Difficulty, func(t *testing.T) {
			if d, ok := Describe(task, byID[task.Target.ID].Doc); !ok {
				t.Errorf("the description names the target:\n%s", d)
			}
			samples := []Sample{{task, task.Reference}, {task, task.Reference}, {task, task.Reference}}
			runs, err := r.RunAll(ctx, samples)
			if err != nil {
				t.Fatal(err)
			}
			exp, err := Derive(runs)
			if err != nil {
				t.Fatalf("%v\n%s\n%s", err, task.Context(), task.Reference)
			}
			task, exp, dropped := UsableInputs(task, exp)
			switch task.Target.QualName() {
			case "parse_int":
				// '42x' is no number: the reference raises there.
				if len(task.Inputs) != 1 || len(dropped) != 1 || !strings.Contains(dropped[0], "raises ValueError") {
					t.Errorf("inputs %q, dropped %q; want the perturbed one dropped: the reference raises", task.Inputs, dropped)
				}
			case "scale", "shift":
				if len(dropped) != 0 || len(task.Inputs) < 2 {
					t.Errorf("inputs %q, dropped %q; want every perturbed input kept", task.Inputs, dropped)
				}
			case "label":
				// Named refuses a class's second definition; each input
				// runs in a process of its own, so the class is defined
				// once in each and the repeat of the example's own input
				// computes the same: it alone is dropped.
				if len(task.Inputs) != 2 || len(dropped) != 1 || !strings.Contains(dropped[0], "repeats the example's own input") || !slices.Equal(exp.Dependent, []bool{true, true}) {
					t.Errorf("inputs %q, dropped %q, dependent %v; want the example's and the perturbed input, both dependent", task.Inputs, dropped, exp.Dependent)
				}
			case "field":
				// The class's defaults and its call's keyword are
				// parameters: each perturbed one changes the values but
				// y's default, which the call overrides; the repeat of
				// the example's own input computes the same (the class
				// defined again), and goes.
				if task.Site.Around == "class" && (len(task.Inputs) != 3 || len(dropped) != 2 || !strings.Contains(dropped[0], "repeats the example's own input") || !strings.HasPrefix(dropped[1], "input 2 ")) {
					t.Errorf("inputs %q, dropped %q; want the example's and 2 perturbed ones, the repeat and y's default's dropped", task.Inputs, dropped)
				}
				if task.Site.Around != "class" && task.Site.Around != "try" {
					t.Errorf("field's task: around %q, want class or try", task.Site.Around)
				}
			}
			sibling := "shift"
			switch task.Target.QualName() {
			case "shift", "parse_int":
				sibling = "scale"
			case "Grid.cells", "Counter.add":
				sibling = "" // no sibling method
			}
			audit, err := Calibrate(ctx, r, task, sibling, exp)
			if err != nil {
				t.Fatal(err)
			}
			keep, why := C1(exp, audit)
			if task.Target.QualName() == "field" && task.Site.Around == "try" {
				if keep || !strings.Contains(why, "no outcome depends on the target") {
					t.Errorf("C1 keeps %v (%s), want it dropped: the target's only effect is its exception, which substitution leaves", keep, why)
				}
				return
			}
			if !keep {
				t.Errorf("dropped by C1: %s\nprogram:\n%s", why, func() string { s, _, _ := task.ReferenceProgram(); return s }())
			}
			if len(task.Inputs) > 1 && !exp.Expected[0].Exact {
				t.Errorf("the example's own outcome is not stable: %+v", exp.Expected)
			}
		})
	}
}
