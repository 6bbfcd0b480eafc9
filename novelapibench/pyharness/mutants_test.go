package pyharness

import (
	"encoding/json"
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
// changes a direct argument of the target's first call, a literal or a
// parameter by the type of its value on the first input (Cut lifts the
// call's literals into parameters), and is not built when only a nested
// literal or an argument of another type is there to change.
func TestPerturbChangesTheFirstDirectArgumentOfTheCall(t *testing.T) {
	for _, tc := range []struct{ sig, input, code, want string }{
		{"def solve(xs, factor):", "([1, 2], 3)", "return scale(xs, factor)", "return scale(xs, (factor + 1))"},
		{"def solve(xs, factor):", "([1, 2], 2.5)", "return scale(xs, factor=factor)", "return scale(xs, factor=(factor + 1))"},
		{"def solve(xs, factor):", "([1, 2], -3)", "return m.scale(xs, factor = factor)", "return m.scale(xs, factor = (factor + 1))"},
		{"def solve(xs, unit):", "([1], 'cm')", "return scale(xs, unit=unit)", `return scale(xs, unit=(unit + "x"))`},
		{"def solve(xs, raw):", `([1], b"ab")`, "return scale(xs, raw)", `return scale(xs, (raw + b"x"))`},
		{"def solve(xs, flag):", "([1], True)", "return scale(xs, flag=flag)", "return scale(xs, flag=(not flag))"},
		{"def solve(n):", "(4,)", "return scale(n)", "return scale((n + 1))"},
		{"def solve(n):", "4", "return scale(n)", "return scale((n + 1))"},
		{"def solve(xs):", "([1, 2],)", "return scale(xs, 3)", "return scale(xs, (3 + 1))"},
		{"def solve(xs):", "([1, 2],)", "return scale(xs, 'a')", "return scale(xs, 'ax')"},
		{"def solve(xs):", "([1, 2],)", "return scale(xs, flag=False)", "return scale(xs, flag=True)"},
		{"def solve(s, n):", "('a,b', 2)", `return scale(f(s, ","), n)`, `return scale(f(s, ","), (n + 1))`},
		{"def solve(s, n):", "('a,b', 2)", `return scale("(,", n)`, `return scale("(,x", n)`},
		// Nothing direct to change: a nested literal, an expression, a
		// list, a name that is no parameter.
		{"def solve(xs, k):", "(DATA, 2)", "return scale(xs, factor=k * 10)", ""},
		{"def solve(xs):", "([1, 2],)", "return scale(len('ab'), xs)", ""},
		{"def solve(xs):", "([1, 2],)", "return scale(xs)", ""},
		{"def solve(xs):", "(DATA,)", "return scale(xs, DATA)", ""},
		{"def solve(xs, v2):", "([1], 2)", "y = other(1)\nreturn y", ""},
	} {
		task := Task{Target: Target{ID: "fixpkg._impl:scale"}, Signature: tc.sig, Reference: tc.code, Inputs: []string{tc.input}}
		got := ""
		for _, m := range Mutants(task, "", Expectation{}) {
			if m.Kind == MutantPerturb {
				got = m.Code
			}
		}
		if got != tc.want {
			t.Errorf("%s on %s: perturb(%q) = %q, want %q", tc.sig, tc.input, tc.code, got, tc.want)
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
