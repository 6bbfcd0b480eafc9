package goharness

import "testing"

func TestPerturbBefore(t *testing.T) {
	for _, tc := range []struct{ before, want string }{
		{"\n\txs := []int{1, 2, 3}", "\n\txs := []int{2, 3, 4}"},
		{"\n\ts := \"ab\"\n\tf := 1.5\n\tc := 'a'", "\n\ts := \"abx\"\n\tf := (1.5 + 1)\n\tc := ('a' + 1)"},
		{"\n\tvar a [3]int\n\tconst n = 2\n\tb := a[n:]", "\n\tvar a [3]int\n\tconst n = 2\n\tb := a[n:]"},
		{"\n\tm := map[string]int{`k`: 7}", "\n\tm := map[string]int{\"kx\": 8}"},
		{"\n\tdouble := func(x int) int { return 2 * x }", "\n\tdouble := func(x int) int { return 2 * x }"},
	} {
		got, ok := PerturbBefore(Task{Before: tc.before})
		if tc.want == tc.before {
			if ok {
				t.Errorf("%q: perturbed to %q, want nothing to change", tc.before, got)
			}
			continue
		}
		if !ok || got != tc.want {
			t.Errorf("%q: got %q (ok %v), want %q", tc.before, got, ok, tc.want)
		}
	}
	if _, ok := PerturbBefore(Task{}); ok {
		t.Error("an empty context has no second input")
	}
}
