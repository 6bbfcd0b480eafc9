package goapi

import "testing"

func TestExampleTargetReadsSuffixesAsGodocDoes(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"Map", "p.Map"},
		{"Set_Add", "p.Set.Add"},
		// A lower-case last part is a suffix: another example of the
		// same function or method.
		{"Find_notFound", "p.Find"},
		{"Set_Add_second", "p.Set.Add"},
		{"Set_second", "p.Set"},
		// The package's examples, and a name godoc associates with
		// nothing.
		{"", ""},
		{"_second", ""},
		{"A_B_C", ""},
	} {
		if got := exampleTarget("p", tc.name); got != tc.want {
			t.Errorf("exampleTarget(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
