package pyharness

import (
	"context"
	"strings"
	"testing"
)

const scaleDoc = "Multiply each item of xs by factor; scale keeps the order.\n\nExamples\n--------\n>>> scale([1], 2)\n[2]"

// cutTasks cuts the named case of cutCases, by level.
func cutTasks(t *testing.T, name string) map[string]Task {
	t.Helper()
	for _, c := range cutCases {
		if c.name == name {
			tasks, _, err := Cut(context.Background(), python(t), c.api, c.ex)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]Task{}
			for _, task := range tasks {
				out[task.Difficulty] = task
			}
			return out
		}
	}
	t.Fatalf("no case %q", name)
	return nil
}

func TestDescribeWritesTheTaskPromptWithoutTheTargetsName(t *testing.T) {
	easy := cutTasks(t, "a function of a docstring, its globals unimported")[Easy]
	d, ok := Describe(easy, scaleDoc)
	want := "Complete the body of `solve` with the library fixpkg. What it must do: Multiply each item of xs by factor; it keeps the order.\n" +
		"The library call that does it takes `xs` and `factor`.\n" +
		"`solve` returns the call's result.\n" +
		"Answer with the body of `solve`, the import lines your code needs first (the program imports only what its own code uses); a whole definition of `solve` is accepted too.\n" +
		"For the example's input, solve([1, 2], 3), the result displays as:\n[3, 6]"
	if !ok || d != want {
		t.Errorf("ok %v, description:\n%s\nwant:\n%s", ok, d, want)
	}
}

func TestDescribeFollowsTheLevels(t *testing.T) {
	method := cutTasks(t, "a method on an instance built from the prelude's data")
	multi := cutTasks(t, "several steps with intermediate variables and another call of the package")
	for _, c := range []struct {
		name       string
		task       Task
		has, lacks []string
	}{
		{"easy method: the receiver's construction is quoted", method[Easy],
			[]string{"Complete the body of `solve` with", "Before the call, the body runs this code (its imports are yours to write):\ng = Grid(len(rows))", "takes no arguments, called on `g`.", "For the example's input, solve(rows), the result displays as:\n9"},
			[]string{"The input data", "Start from this data"}},
		{"medium: the data is quoted", multi[Medium],
			[]string{"build the input data, then use the library fixpkg", "The input data, as Python:\nxs = [1, 2, 3]", "takes `xs` and `factor=factor`."},
			[]string{"Before the call", "displays as"}},
		{"hard: the plain data, no receiver, the last result", method[Hard],
			[]string{"Write the body of `solve` with the library fixpkg", "Start from this data:\nrows = [4, 5, 6]", "returns what the example computes last", "the import lines your code needs first; a whole"},
			[]string{"called on", "Before the call"}},
		{"a side effect: what it changed is returned", cutTasks(t, "a side effect a later step shows")[Easy],
			[]string{"takes `n`, called on `c`.", "The call returns nothing to use: `solve` returns `c.total` after it, which the call changes.", "solve(2), the result displays as:\n2"},
			[]string{"returns the call's result"}},
		{"print: the value is the printed one", cutTasks(t, "a call nested in print")[Easy],
			[]string{"returns the call's result (the value the example prints).", "solve(['a'], 2), the result prints as:\n['aa']"},
			nil},
		{"a loop: what it prints, collected", cutTasks(t, "a call inside a loop: the loop is the span, what it prints the result")[Easy],
			[]string{"`solve` returns a list of what the example's for statement around the call prints, each print's argument in order.", "solve([1]), those values print as:\n[1]\n[2]"},
			[]string{"returns the call's result"}},
		{"a loop's counter: the variable it leaves", cutTasks(t, "a loop's counter bound before it moves into the body with it")[Easy],
			[]string{"Before the call, the body runs this code (its imports are yours to write):\nn = 0", "`solve` returns `n` as the for statement around the call leaves it."},
			[]string{"returns the call's result"}},
		{"a class: it is defined with the call, the code after it quoted, what it shows returned", cutTasks(t, "a call in a class body: the class is the span, what a later step shows of it the result")[Easy],
			[]string{"The call sits in the body of a class the example defines: `solve` defines that class with it, as this code shows, the call written `<the call>`",
				"class Model:\n    xs = <the call>\n\n    def __init__(self, by):\n        self.total = sum(self.xs) + by\nThen it runs this code (it uses the class):\nm = Model(by=by_)\nprint(m.total)",
				"`solve` returns `m.total`, computed from the class as the example does (the value the example prints).", "solve([1, 2], 3, 1), the result prints as:\n10"},
			[]string{"returns the call's result", "which the call changes", "scale"}},
		{"a class shown by a try: its prints collected", cutTasks(t, "a call in a class's Annotated metadata, its behaviour shown by a try that prints the error")[Easy],
			[]string{"class Model:\n    x: Annotated[list, <the call>]\nThen it runs this code (it uses the class):\ntry:\n    Model.check(arg3)", "`solve` returns a list of what the try statement after the class prints, each print's argument in order."},
			[]string{"around the call", "scale"}},
		{"a class calling the target twice: quoted, the name hidden in both calls", cutTasks(t, "a class span calling the target twice: the other call is quoted as <it>(...)")[Easy],
			[]string{"class Model:\n    xs = <the call>\n    ys: list = <it>(arg3, arg4)\nThen it runs this code"},
			[]string{"scale"}},
		{"a try: what it prints, collected", cutTasks(t, "a call in a try statement: the try is the span, what it prints the result")[Easy],
			[]string{"`solve` returns a list of what the example's try statement around the call prints"},
			[]string{"class"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, ok := Describe(c.task, scaleDoc)
			if !ok {
				t.Errorf("names the target:\n%s", d)
			}
			for _, h := range c.has {
				if !strings.Contains(d, h) {
					t.Errorf("lacks %q:\n%s", h, d)
				}
			}
			for _, l := range c.lacks {
				if strings.Contains(d, l) {
					t.Errorf("has %q:\n%s", l, d)
				}
			}
		})
	}
}

func TestDescribeRefusesATextThatNamesTheTarget(t *testing.T) {
	task := cutTasks(t, "a class constructor, its literal lifted under the parameter's name")[Easy]
	if _, ok := Describe(task, "Make a grid."); !ok {
		t.Fatal("a plain description is refused")
	}
	// The example's shown result is a repr naming the class.
	task.Site.Want = "Grid(n=3)\n"
	if d, ok := Describe(task, "Make a grid."); ok {
		t.Errorf("accepted a description naming Grid:\n%s", d)
	}
}

// TestDescribeRefusesCodeNamingTheTargetsAlias: an alias the example
// binds the target to (from fixpkg import scale as T) is the target's
// name too: quoted code naming it, as a name or in a string annotation,
// makes the description refused; the class quoting every reference to it
// as <it> is accepted, and a prose word equal to a short alias ("s" of
// "example's") names nothing.
func TestDescribeRefusesCodeNamingTheTargetsAlias(t *testing.T) {
	task := cutTasks(t, "a class span naming the target's alias uncalled: each reference is quoted as <it>")[Easy]
	d, ok := Describe(task, scaleDoc)
	if !ok || !strings.Contains(d, "f = functools.partial(<it>, factor=3)") {
		t.Fatalf("ok %v, the class with its references hidden refused or not quoted:\n%s", ok, d)
	}
	for _, class := range []string{
		"class Model:\n    xs = <the call>\n    f = functools.partial(T, factor=3)",
		"class Model:\n    xs = <the call>\n    f: 'list[T]' = None",
	} {
		named := task
		named.Site.Class = class
		if d, ok := Describe(named, scaleDoc); ok {
			t.Errorf("accepted a description quoting the alias T:\n%s", d)
		}
	}
	short := task
	short.Site.Aliases = []string{"s"}
	if d, ok := Describe(short, scaleDoc); !ok || !strings.Contains(d, "example's") {
		t.Errorf("ok %v: an alias s refused for prose:\n%s", ok, d)
	}
}

func TestGlossTakesTheFirstSentenceOfTheSummary(t *testing.T) {
	for doc, want := range map[string]string{
		"Multiply each item. More words.":       "Multiply each item.",
		"scale the items by scale.\n\n>>> x":    "the items by it.",
		"Summary over\ntwo lines\n\nParameters": "Summary over two lines",
		"":                                      "what the library's function is documented to do.",
		"Returns\n-------\nndarray":             "what the library's function is documented to do.",
	} {
		if got := glossOf(doc, "scale"); got != want {
			t.Errorf("glossOf(%q) = %q, want %q", doc, got, want)
		}
	}
}
