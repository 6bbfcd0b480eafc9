package pyharness

import (
	"encoding/json"
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
