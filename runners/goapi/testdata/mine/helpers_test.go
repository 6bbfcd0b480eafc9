package mine_test

import "testing"

// cases are TestDoubleTable's, in a file of their own.
var cases = []struct {
	name     string
	in, want int
}{{"one", 1, 2}, {"two", 2, 4}}

func check(t *testing.T, v int) {
	if v == 0 {
		t.Fatal("zero")
	}
}
