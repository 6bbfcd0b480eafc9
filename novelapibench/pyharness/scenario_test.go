package pyharness

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// fixScenario is a scenario about fixpkg's scale (the fixture package):
// a helper and data before the span, the package's receiver-free setup,
// the span, then code that prints what it computed.
const fixScenario = `import math
from fixpkg import scale, shift


def label(v):
    return "total %d" % v


readings = [3, 1, 4]
factor = 10
base = shift(readings, 1)
unused = shift([0], 5)
# <MASK>
grown = scale(base, factor)
count = len(grown)
# </MASK>
print(label(count), grown)
print(math.sqrt(count))
`

// TestScenariosBecomeTasksOfCutShape reads scenario scripts into tasks:
// the plain code before the span is the prelude, the package's code the
// span needs moves into the body before it, the prelude's variables the
// body reads are solve's parameters (perturbed where literal), and what
// the rest of the script reads of the span is returned. Malformed
// scenarios are refused with their reason.
func TestScenariosBecomeTasksOfCutShape(t *testing.T) {
	py := python(t)
	cases := []struct {
		name    string
		api     string // apiScale or apiCounter
		script  string
		want    Task   // Prelude, Signature, Reference, Inputs, Site.Setup, Site.Returns, Site.Args, Site.Recv
		refused string // a part of the reason, when refused
	}{
		{name: "setup and prelude", api: "scale", script: fixScenario, want: Task{
			Prelude:   "import math\ndef label(v):\n    return 'total %d' % v\nreadings = [3, 1, 4]\nfactor = 10",
			Signature: "def solve(factor, readings):",
			Reference: "from fixpkg import scale, shift\nbase = shift(readings, 1)\ngrown = scale(base, factor)\ncount = len(grown)\nreturn (count, grown)",
			Inputs:    []string{"(factor, readings)", "(11, readings)", "(factor, [4, 2, 5])"},
			Site:      Site{Args: []string{"base", "factor"}, Setup: []string{"base = shift(readings, 1)"}, Returns: "(count, grown)"},
		}},
		{name: "module import, a variable the span fills", api: "scale", script: `import fixpkg as fp

out = []
# <MASK>
for x in (1, 2):
    out.append(fp.scale([x], 3))
# </MASK>
print(out)
`, want: Task{
			Prelude:   "out = []",
			Signature: "def solve(out):",
			Reference: "import fixpkg as fp\nfor x in (1, 2):\n    out.append(fp.scale([x], 3))\nreturn out",
			Inputs:    []string{"(out,)", "([],)"},
			Site:      Site{Args: []string{"[x]", "3"}, Returns: "out"},
		}},
		{name: "a method on a receiver built before", api: "counter", script: `from fixpkg import Counter

c = Counter()
# <MASK>
c.add(5)
# </MASK>
print(c.total)
`, want: Task{
			Signature: "def solve():",
			Reference: "from fixpkg import Counter\nc = Counter()\nc.add(5)\nreturn c",
			Inputs:    []string{"()"},
			Site:      Site{Args: []string{"5"}, Recv: "c", Setup: []string{"c = Counter()"}, Returns: "c"},
		}},
		{name: "no markers", api: "scale", script: strings.NewReplacer("# <MASK>\n", "", "# </MASK>\n", "").Replace(fixScenario), refused: "marks no span"},
		{name: "closed first", api: "scale", script: strings.NewReplacer("# <MASK>", "# </MASK>", "# </MASK>", "# <MASK>").Replace(fixScenario), refused: "closes its span"},
		{name: "two spans", api: "scale", script: fixScenario + "# <MASK>\n", refused: "marks two spans"},
		{name: "inside a block", api: "scale", script: "from fixpkg import scale\nif True:\n    # <MASK>\n    y = scale([1])\n    # </MASK>\nprint(y)\n", refused: "inside a statement (line 2)"},
		{name: "empty span", api: "scale", script: "from fixpkg import scale\ny = scale([1])\n# <MASK>\n# </MASK>\nprint(y)\n", refused: "empty span"},
		{name: "span without the call", api: "scale", script: strings.Replace(fixScenario, "grown = scale(base, factor)", "grown = shift(base, factor)", 1), refused: "never calls fixpkg.scale"},
		{name: "context names it", api: "scale", script: strings.Replace(fixScenario, "unused = shift([0], 5)", "unused = scale([0], 5)", 1), refused: "names scale outside its span (line 12)"},
		{name: "returns", api: "scale", script: strings.Replace(fixScenario, "count = len(grown)", "count = len(grown)\nreturn count", 1), refused: "has a return statement"},
		{name: "nothing read later", api: "scale", script: strings.Replace(fixScenario, "print(label(count), grown)\nprint(math.sqrt(count))", "print('done')", 1), refused: "sets nothing the rest of the script reads"},
		{name: "does not parse", api: "scale", script: strings.Replace(fixScenario, "count = len(grown)", "count = len(grown", 1), refused: "does not parse"},
	}
	items := make([]Scenario, len(cases))
	for i, c := range cases {
		a := apiScale
		if c.api == "counter" {
			a = apiCounter
		}
		items[i] = Scenario{API: a, Script: c.script, Difficulty: Medium}
	}
	got, err := TasksFromScenarios(context.Background(), py, items)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		g := got[i]
		if c.refused != "" {
			if !strings.Contains(g.Refused, c.refused) {
				t.Errorf("%s: refused %q, want %q", c.name, g.Refused, c.refused)
			}
			continue
		}
		if g.Refused != "" {
			t.Errorf("%s: refused: %s", c.name, g.Refused)
			continue
		}
		tk := g.Task
		site := Site{Args: tk.Site.Args, Recv: tk.Site.Recv, Returns: tk.Site.Returns}
		if len(tk.Site.Setup) > 0 {
			site.Setup = tk.Site.Setup
		}
		if tk.Prelude != c.want.Prelude || tk.Signature != c.want.Signature || tk.Reference != c.want.Reference ||
			!reflect.DeepEqual(tk.Inputs, c.want.Inputs) || !reflect.DeepEqual(site, c.want.Site) {
			t.Errorf("%s: got\nprelude %q\nsignature %q\nreference %q\ninputs %q\nsite %+v", c.name, tk.Prelude, tk.Signature, tk.Reference, tk.Inputs, site)
		}
		if tk.Difficulty != Medium || tk.Target.ID != items[i].API.ID || tk.Example != "" || tk.Validate() != nil {
			t.Errorf("%s: difficulty %q target %q example %q: %v", c.name, tk.Difficulty, tk.Target.ID, tk.Example, tk.Validate())
		}
		if NamesTarget(tk.Context(), tk.Target) {
			t.Errorf("%s: the context names the target:\n%s", c.name, tk.Context())
		}
	}
}

// TestScenarioTaskPassesItsHarnessAndRejectsMutants runs the scenario
// task of fixScenario in the sandbox as a cut task runs: its reference's
// expectation depends on the target on every input kept, the reference
// passes, and C1 keeps it (every mutant rejected with its class).
func TestScenarioTaskPassesItsHarnessAndRejectsMutants(t *testing.T) {
	f := newFixture(t, 2)
	needBubblewrap(t, f.sb)
	got, err := TasksFromScenarios(context.Background(), python(t), []Scenario{{API: apiScale, Script: fixScenario, Difficulty: Hard}})
	if err != nil || got[0].Refused != "" {
		t.Fatalf("%v %s", err, got[0].Refused)
	}
	task := got[0].Task
	task.Target.Paths = []string{"fixpkg.scale", "fixpkg.rescale", "fixpkg._impl.scale"}
	exp := f.expectation(t, task)
	task, exp, dropped := UsableInputs(task, exp)
	if len(task.Inputs) != 3 || len(dropped) != 0 || !reflect.DeepEqual(exp.Dependent, []bool{true, true, true}) {
		t.Fatalf("inputs %q dropped %q dependent %v", task.Inputs, dropped, exp.Dependent)
	}
	audit, err := Calibrate(context.Background(), f.runner, task, "shift", exp)
	if err != nil {
		t.Fatal(err)
	}
	if keep, why := C1(exp, audit); !keep {
		t.Errorf("C1 drops the scenario task: %s", why)
	}
}
