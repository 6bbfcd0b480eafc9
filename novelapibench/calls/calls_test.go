package calls

import (
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	ref := []string{"[]int []int{1, 2}" + Sep + "int 2"}
	for _, tc := range []struct {
		name string
		got  []string
		more bool
		want string // a part of the message; "" for agreement
	}{
		{"the same", ref, false, ""},
		{"another call besides", append([]string{"[]int []int{7}" + Sep + "int 1"}, ref...), false, "not the task's: ([]int []int{7}, int 1)"},
		{"another call, a whole program's", append([]string{"[]int []int{7}" + Sep + "int 1"}, ref...), true, ""},
		{"never the task's data", []string{"[]int []int{7}" + Sep + "int 1"}, true, "never called on the task's data: ([]int []int{1, 2}, int 2)"},
		{"no call", nil, false, "never called"},
	} {
		got := Diff(ref, tc.got, tc.more)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if s := Show([]string{"a", "b", "c", "d", "e"}); s != "(a); (b); (c); and 2 more" {
		t.Errorf("Show: %q", s)
	}
}
