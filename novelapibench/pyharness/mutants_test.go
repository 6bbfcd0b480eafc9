package pyharness

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
)

// TestEveryMutantKindHasAnExpectedClass builds every kind of mutant (a
// reference with an import of the package, a final return, literal
// expected values and a parameter of the call whose
// change changes the outcome) and checks that each kind has the
// class it stands for by construction, the same as goharness's for the
// kinds both ecosystems have; that MutantOf gives back each mutant as
// Mutants built it (a calibration sample read back is audited as built);
// and that the fast path is left to decide exactly perturb, exit and
// throwaway.
func TestEveryMutantKindHasAnExpectedClass(t *testing.T) {
	task := Task{
		Target:    Target{ID: "fixpkg._impl:scale", Paths: []string{"fixpkg.scale"}},
		Signature: "def solve(xs, k):",
		Reference: "from fixpkg import scale\nreturn scale(xs, k)",
		Inputs:    []string{"([1, 2], 3)", "([1, 2], 4)"},
	}
	exp := Expectation{Expected: []Expected{
		{Value: json.RawMessage(`{"t": "int", "type": "builtins.int", "v": "9"}`), Exact: true},
		{Value: json.RawMessage(`{"t": "int", "type": "builtins.int", "v": "12"}`), Exact: true},
	}}
	var kinds []string
	undecided := map[string]bool{}
	for _, m := range Mutants(task, "shift", exp) {
		kinds = append(kinds, m.Kind)
		if m.Class == "" {
			undecided[m.Kind] = true
		}
		if got := MutantOf(m.Kind, m.Code); got != m {
			t.Errorf("MutantOf(%s) = %+v, want %+v", m.Kind, got, m)
		}
	}
	all := []string{MutantNull, MutantSibling, MutantImport, MutantPerturb, MutantSyntax, MutantExit, MutantThrowaway}
	if len(kinds) != len(all) {
		t.Fatalf("kinds built %v, want %v", kinds, all)
	}
	for i, k := range append([]string{"reference"}, all...) {
		c, ok := ExpectedClass(k)
		if !ok || c == "" {
			t.Errorf("%s: no expected class", k)
		}
		if i > 0 && kinds[i-1] != k {
			t.Errorf("kind %d is %s, want %s", i-1, kinds[i-1], k)
		}
		if g, ok := goharness.ExpectedClass(k); ok && g != c {
			t.Errorf("%s: expected %s, goharness's %s", k, c, g)
		}
	}
	if len(undecided) != 3 || !undecided[MutantPerturb] || !undecided[MutantExit] || !undecided[MutantThrowaway] {
		t.Errorf("left to the LLM judge: %v, want perturb, exit, throwaway", undecided)
	}
	if _, ok := ExpectedClass("model"); ok {
		t.Errorf("a model's sample has an expected class")
	}
}

// TestPerturbChangesATellingParameterOfTheCall: the perturb mutant
// changes a direct argument of a call of the target that is a parameter
// (Cut lifts the call's literals into parameters), by the type of its
// value on the first input, when an input changing only that parameter
// has another expected outcome. The call is found as TargetCalls finds
// it: under an imported alias, and never in a string or a comment. It is
// not built when only a literal (nothing shows its change matters: a flag
// the inputs do not exercise), a nested argument, an argument of another
// type or a parameter that does not change the outcome is there to
// change.
func TestPerturbChangesATellingParameterOfTheCall(t *testing.T) {
	for _, tc := range []struct {
		sig    string
		inputs []string
		outs   []int // the expected outcome on each input
		code   string
		want   string
	}{
		{"def solve(xs, factor):", []string{"([1, 2], 3)", "([2, 3], 3)", "([1, 2], 4)"}, []int{9, 15, 12}, "return scale(xs, factor)", "return scale(xs, (factor + 1))"},
		{"def solve(xs, factor):", []string{"([1, 2], 2.5)", "([1, 2], 3.5)"}, []int{1, 2}, "return scale(xs, factor=factor)", "return scale(xs, factor=(factor + 1))"},
		{"def solve(xs, factor):", []string{"([1, 2], -3)", "([1, 2], -2)"}, []int{1, 2}, "return m.scale(xs, factor = factor)", "return m.scale(xs, factor = (factor + 1))"},
		{"def solve(xs, unit):", []string{"([1], 'cm')", "([1], 'cmx')"}, []int{1, 2}, "return scale(xs, unit=unit)", `return scale(xs, unit=(unit + "x"))`},
		{"def solve(xs, raw):", []string{`([1], b"ab")`, `([1], b"abx")`}, []int{1, 2}, "return scale(xs, raw)", `return scale(xs, (raw + b"x"))`},
		{"def solve(xs, raw):", []string{`([1], rb"ab")`, `([1], rb"abx")`}, []int{1, 2}, "return scale(xs, raw)", `return scale(xs, (raw + b"x"))`},
		{"def solve(n):", []string{"(4,)", "(5,)"}, []int{1, 2}, "return scale(n)", "return scale((n + 1))"},
		{"def solve(n):", []string{"4", "5"}, []int{1, 2}, "return scale(n)", "return scale((n + 1))"},
		// clamp(5, 0, 3): a larger v or lo leaves 3, a larger hi does not.
		{"def solve(v, lo, hi):", []string{"(5, 0, 3)", "(6, 0, 3)", "(5, 1, 3)", "(5, 0, 4)"}, []int{3, 3, 3, 4}, "import m\nreturn m.clamp(v, lo, hi)", "import m\nreturn m.clamp(v, lo, (hi + 1))"},
		{"def solve(s, n):", []string{"('a,b', 2)", "('a,b', 3)"}, []int{1, 2}, `return scale(f(s, ","), n)`, `return scale(f(s, ","), (n + 1))`},
		{"def solve(s, n):", []string{"('a', 2)", "('a', 3)"}, []int{1, 2}, `return scale("(,", n)`, `return scale("(,", (n + 1))`},
		// The call under an imported alias; a call in a comment, in a
		// string or of another name ending in the target's is none.
		{"def solve(xs, k):", []string{"([1], 2)", "([1], 3)"}, []int{1, 2}, "from fixpkg import scale as s\nreturn s(xs, k)", "from fixpkg import scale as s\nreturn s(xs, (k + 1))"},
		{"def solve(xs, k):", []string{"([1], 2)", "([1], 3)"}, []int{1, 2}, "# scale(k) below\nlabel = 'scale(k)'\nrescale(k)\nreturn scale(xs, k)", "# scale(k) below\nlabel = 'scale(k)'\nrescale(k)\nreturn scale(xs, (k + 1))"},
		// A later call of the target when the first has no telling argument.
		{"def solve(xs, k):", []string{"([1], 2)", "([1], 3)"}, []int{1, 2}, "ys = scale(xs)\nreturn scale(ys, k)", "ys = scale(xs)\nreturn scale(ys, (k + 1))"},
		// Nothing to change: a literal (no input shows its change
		// matters), a nested literal, an expression, a list, a name that
		// is no parameter, a parameter whose change leaves the outcome or
		// that no input changes alone, a boolean, a call only in a string.
		{"def solve(xs):", []string{"([1, 2],)"}, []int{1}, "return scale(xs, 3)", ""},
		{"def solve(xs):", []string{"([1, 2],)"}, []int{1}, "return scale(xs, 'a')", ""},
		{"def solve(xs):", []string{"([1, 2],)", "([2, 3],)"}, []int{1, 2}, "return scale(xs, flag=False)", ""},
		{"def solve(xs, k):", []string{"(DATA, 2)", "(DATA, 3)"}, []int{1, 2}, "return scale(xs, factor=k * 10)", ""},
		{"def solve(xs):", []string{"([1, 2],)"}, []int{1}, "return scale(len('ab'), xs)", ""},
		{"def solve(xs):", []string{"([1, 2],)", "([2, 3],)"}, []int{1, 2}, "return scale(xs)", ""},
		{"def solve(xs):", []string{"(DATA,)"}, []int{1}, "return scale(xs, DATA)", ""},
		{"def solve(v):", []string{"(3,)", "(4,)"}, []int{1, 1}, "return scale(v) is not None", ""},
		{"def solve(xs, k):", []string{"([1], 2)", "([2], 3)"}, []int{1, 2}, "return scale(xs, k)", ""},
		{"def solve(xs, flag):", []string{"([1], True)", "([2], True)"}, []int{1, 2}, "return scale(xs, flag=flag)", ""},
		{"def solve(xs, v2):", []string{"([1], 2)", "([1], 3)"}, []int{1, 2}, "y = other(v2)\nreturn y", ""},
		{"def solve(xs, k):", []string{"([1], 2)", "([1], 3)"}, []int{1, 2}, "y = 'scale(xs, k)'\nreturn other(xs, k)", ""},
	} {
		task := Task{Target: Target{ID: "fixpkg._impl:" + map[bool]string{true: "clamp", false: "scale"}[strings.Contains(tc.code, "clamp")]},
			Signature: tc.sig, Reference: tc.code, Inputs: tc.inputs}
		var exp Expectation
		for _, n := range tc.outs {
			exp.Expected = append(exp.Expected, Expected{Value: json.RawMessage(fmt.Sprintf(`{"t": "int", "type": "builtins.int", "v": "%d"}`, n)), Exact: true})
		}
		got := ""
		for _, m := range Mutants(task, "", exp) {
			if m.Kind == MutantPerturb {
				got = m.Code
			}
		}
		if got != tc.want {
			t.Errorf("%s on %v: perturb(%q) = %q, want %q", tc.sig, tc.inputs, tc.code, got, tc.want)
		}
	}
}

// TestExitMutantCallsTheTargetFirst: the exit mutant makes the target's
// calls the reference makes (it stands for WrongLogic: the right calls,
// then ended early), for a return of the call itself as for a call
// before the return, and ends the process after them. Where every input
// raises it is not built: it would raise as the reference does, before
// its exit, and pass.
func TestExitMutantCallsTheTargetFirst(t *testing.T) {
	tg := Target{ID: "fixpkg._impl:scale", Paths: []string{"fixpkg.scale"}}
	for _, ref := range []string{
		"from fixpkg import scale\nreturn scale(xs, k)",
		"import fixpkg\nreturn fixpkg.scale(xs, factor=k)",
		"from fixpkg import scale as s\nreturn sum(s(xs, k)) + len(xs)",
		"from fixpkg import scale\nys = scale(xs, k)\nreturn sum(ys)",
		"from fixpkg import scale\nreturn scale(xs, k), scale(xs, 1)",
	} {
		task := Task{Target: tg, Signature: "def solve(xs, k):", Reference: ref, Inputs: []string{"([1], 2)"}}
		var exit string
		returns := Expectation{Expected: []Expected{{Value: json.RawMessage(`{"t": "int", "type": "builtins.int", "v": "3"}`), Exact: true}}}
		for _, m := range Mutants(task, "", returns) {
			if m.Kind == MutantExit {
				exit = m.Code
			}
		}
		raises := Expectation{Expected: []Expected{{Raises: "ValueError", Exact: true}}}
		for _, m := range Mutants(task, "", raises) {
			if m.Kind == MutantExit {
				t.Errorf("reference %q raising on every input: exit mutant %q built", ref, m.Code)
			}
		}
		want := TargetCalls(ref, tg)
		got := TargetCalls(exit, tg)
		if exit == "" || len(got) != len(want) || !strings.HasSuffix(exit, "_lacuna_os._exit(0)") || strings.Contains(exit, "return") {
			t.Errorf("reference %q: exit mutant %q calls %v, want %v and then exit", ref, exit, got, want)
		}
	}
}
