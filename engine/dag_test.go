package engine

import (
	"slices"
	"testing"
)

func TestOrderSortsDependenciesFirstAndFindsCycles(t *testing.T) {
	for _, c := range []struct {
		name      string
		ids       []string
		deps      map[string][]string
		want      []string
		wantCycle []string
	}{
		{"declaration order breaks ties", []string{"c", "a", "b"}, nil, []string{"c", "a", "b"}, nil},
		{"dependencies first", []string{"c", "b", "a"}, map[string][]string{"c": {"b"}, "b": {"a"}}, []string{"a", "b", "c"}, nil},
		{"diamond", []string{"d", "b", "c", "a"}, map[string][]string{"d": {"b", "c"}, "b": {"a"}, "c": {"a"}}, []string{"a", "b", "c", "d"}, nil},
		{"cycle", []string{"x", "a", "b"}, map[string][]string{"a": {"b"}, "b": {"a"}}, []string{"x"}, []string{"a", "b", "a"}},
		{"self loop", []string{"a"}, map[string][]string{"a": {"a"}}, []string{}, []string{"a", "a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, cycle := order(c.ids, c.deps)
			if !slices.Equal(got, c.want) || !slices.Equal(cycle, c.wantCycle) {
				t.Errorf("order = %v, cycle %v; want %v, cycle %v", got, cycle, c.want, c.wantCycle)
			}
		})
	}
}

func TestUpstreamClosesOverInputs(t *testing.T) {
	a := &Instance{Addr: "a"}
	b := &Instance{Addr: "b", Inputs: []*Instance{a}}
	c := &Instance{Addr: "c", Inputs: []*Instance{b, a}}
	other := &Instance{Addr: "other"}
	got := upstream([]*Instance{c})
	if len(got) != 3 || !got[a] || !got[b] || !got[c] || got[other] {
		t.Errorf("upstream(c) = %v", got)
	}
	// A long chain: iterative, no deep recursion.
	prev := a
	for k := 0; k < 200000; k++ {
		prev = &Instance{Inputs: []*Instance{prev}}
	}
	if n := len(upstream([]*Instance{prev})); n != 200001 {
		t.Errorf("chain closure has %d instances, want 200001", n)
	}
}
