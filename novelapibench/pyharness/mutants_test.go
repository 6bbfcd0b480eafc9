package pyharness

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
)

// TestEveryMutantKindHasAnExpectedClass builds every kind of mutant (a
// reference with a literal argument, an import of the package, a final
// return and a literal expected value) and checks that each kind has the
// class it stands for by construction, the same as goharness's for the
// kinds both ecosystems have; that MutantOf gives back each mutant as
// Mutants built it (a calibration sample read back is audited as built);
// and that the fast path is left to decide exactly perturb, exit and
// throwaway.
func TestEveryMutantKindHasAnExpectedClass(t *testing.T) {
	task := Task{
		Target:    Target{ID: "fixpkg._impl:scale", Paths: []string{"fixpkg.scale"}},
		Signature: "def solve(xs):",
		Reference: "from fixpkg import scale\nreturn scale(xs, 3)",
		Inputs:    []string{"([1, 2],)"},
	}
	exp := Expectation{Expected: []Expected{{Value: json.RawMessage(`{"t": "int", "type": "builtins.int", "v": "9"}`), Exact: true}}}
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

// TestPerturbChangesTheFirstDirectArgumentOfTheCall: the perturb mutant
// changes a direct argument of the target's first call: a literal, or a
// parameter (Cut lifts the call's literals into parameters) by the type
// of its value on the first input, when an input changing only that
// parameter has another expected outcome. It is not built when only a
// nested literal, an argument of another type or a parameter that does
// not change the outcome is there to change.
func TestPerturbChangesTheFirstDirectArgumentOfTheCall(t *testing.T) {
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
		{"def solve(n):", []string{"(4,)", "(5,)"}, []int{1, 2}, "return scale(n)", "return scale((n + 1))"},
		{"def solve(n):", []string{"4", "5"}, []int{1, 2}, "return scale(n)", "return scale((n + 1))"},
		// clamp(5, 0, 3): a larger v or lo leaves 3, a larger hi does not.
		{"def solve(v, lo, hi):", []string{"(5, 0, 3)", "(6, 0, 3)", "(5, 1, 3)", "(5, 0, 4)"}, []int{3, 3, 3, 4}, "import m\nreturn m.clamp(v, lo, hi)", "import m\nreturn m.clamp(v, lo, (hi + 1))"},
		{"def solve(s, n):", []string{"('a,b', 2)", "('a,b', 3)"}, []int{1, 2}, `return scale(f(s, ","), n)`, `return scale(f(s, ","), (n + 1))`},
		{"def solve(xs):", []string{"([1, 2],)"}, []int{1}, "return scale(xs, 3)", "return scale(xs, (3 + 1))"},
		{"def solve(xs):", []string{"([1, 2],)"}, []int{1}, "return scale(xs, 'a')", "return scale(xs, 'ax')"},
		{"def solve(xs):", []string{"([1, 2],)"}, []int{1}, "return scale(xs, flag=False)", "return scale(xs, flag=True)"},
		{"def solve(s, n):", []string{"('a', 2)"}, []int{1}, `return scale("(,", n)`, `return scale("(,x", n)`},
		// Nothing direct to change: a nested literal, an expression, a
		// list, a name that is no parameter, a parameter whose change
		// leaves the outcome or that no input changes alone, a boolean.
		{"def solve(xs, k):", []string{"(DATA, 2)", "(DATA, 3)"}, []int{1, 2}, "return scale(xs, factor=k * 10)", ""},
		{"def solve(xs):", []string{"([1, 2],)"}, []int{1}, "return scale(len('ab'), xs)", ""},
		{"def solve(xs):", []string{"([1, 2],)", "([2, 3],)"}, []int{1, 2}, "return scale(xs)", ""},
		{"def solve(xs):", []string{"(DATA,)"}, []int{1}, "return scale(xs, DATA)", ""},
		{"def solve(v):", []string{"(3,)", "(4,)"}, []int{1, 1}, "return scale(v) is not None", ""},
		{"def solve(xs, k):", []string{"([1], 2)", "([2], 3)"}, []int{1, 2}, "return scale(xs, k)", ""},
		{"def solve(xs, flag):", []string{"([1], True)", "([2], True)"}, []int{1, 2}, "return scale(xs, flag=flag)", ""},
		{"def solve(xs, v2):", []string{"([1], 2)", "([1], 3)"}, []int{1, 2}, "y = other(v2)\nreturn y", ""},
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
// before the return, and ends the process after them.
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
		for _, m := range Mutants(task, "", Expectation{}) {
			if m.Kind == MutantExit {
				exit = m.Code
			}
		}
		want := TargetCalls(ref, tg)
		got := TargetCalls(exit, tg)
		if exit == "" || len(got) != len(want) || !strings.HasSuffix(exit, "_lacuna_os._exit(0)") || strings.Contains(exit, "return") {
			t.Errorf("reference %q: exit mutant %q calls %v, want %v and then exit", ref, exit, got, want)
		}
	}
}
