package engine

import "sort"

// The graph algorithms, apart from the walk that runs a graph: ordering
// the static graph of blocks (with cycle detection) and closing a
// selection of instances over their inputs.

// order sorts vertices so that each comes after its dependencies (Kahn's
// algorithm, ties broken by declaration order). When a cycle remains it
// returns one cycle as a path a → b → ... → a.
func order(ids []string, deps map[string][]string) ([]string, []string) {
	indeg := map[string]int{}
	users := map[string][]string{}
	pos := map[string]int{}
	for i, id := range ids {
		pos[id] = i
		indeg[id] += 0
		for _, d := range deps[id] {
			indeg[id]++
			users[d] = append(users[d], id)
		}
	}
	var ready []string
	for _, id := range ids {
		if indeg[id] == 0 {
			ready = append(ready, id)
		}
	}
	out := make([]string, 0, len(ids))
	for len(ready) > 0 {
		id := ready[0]
		ready = ready[1:]
		out = append(out, id)
		var next []string
		for _, u := range users[id] {
			indeg[u]--
			if indeg[u] == 0 {
				next = append(next, u)
			}
		}
		sort.Slice(next, func(a, b int) bool { return pos[next[a]] < pos[next[b]] })
		ready = append(ready, next...)
	}
	if len(out) == len(ids) {
		return out, nil
	}
	// Walk from a vertex still blocked along blocked dependencies until one
	// repeats: that stretch is a cycle.
	var start string
	for _, id := range ids {
		if indeg[id] > 0 {
			start = id
			break
		}
	}
	seen := map[string]int{}
	var path []string
	cur := start
	for {
		if at, ok := seen[cur]; ok {
			cycle := append([]string{}, path[at:]...)
			return out, append(cycle, cur)
		}
		seen[cur] = len(path)
		path = append(path, cur)
		next := ""
		for _, d := range deps[cur] {
			if indeg[d] > 0 {
				next = d
				break
			}
		}
		if next == "" {
			return out, []string{start}
		}
		cur = next
	}
}

// upstream is roots and everything they need, transitively (iteratively:
// a chain of a million instances must not grow the stack).
func upstream(roots []*Instance) map[*Instance]bool {
	want := map[*Instance]bool{}
	stack := append([]*Instance(nil), roots...)
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if want[i] {
			continue
		}
		want[i] = true
		stack = append(stack, i.Inputs...)
	}
	return want
}
