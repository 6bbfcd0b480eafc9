package engine

import (
	"fmt"
	"github.com/lacuna-dev/lacuna/addrs"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/nodes"
)

// Instance is one node instance: a node block, or one element of its
// for_each. Its inputs are the instances its config refers to.
type Instance struct {
	Address addrs.Instance
	Addr    string // Address.String(), computed once
	Decl    *NodeDecl
	Config  any
	// Inputs are the producing instances, sorted by address, deduplicated.
	Inputs []*Instance
	// Runner names the runner block limiting this instance ("" for none).
	Runner     string
	dependants []*Instance
	index      int
}

// Type is the instance's node type.
func (i *Instance) Type() nodes.Type { return i.Decl.Type }

// Graph is an expanded pipeline: instances in a topological order (every
// instance after its inputs), and the runners' concurrency limits.
type Graph struct {
	Config    *Config
	Instances []*Instance
	Runners   map[string]int
	byAddr    map[string]*Instance
}

// Lookup finds an instance by address.
func (g *Graph) Lookup(addr string) (*Instance, bool) {
	i, ok := g.byAddr[addr]
	return i, ok
}

// Select returns the named instances and everything they need, in
// topological order. An address of a for_each node selects all its
// instances.
func (g *Graph) Select(targets []string) ([]*Instance, error) {
	if len(targets) == 0 {
		return g.Instances, nil
	}
	want := map[*Instance]bool{}
	var mark func(i *Instance)
	mark = func(i *Instance) {
		if want[i] {
			return
		}
		want[i] = true
		for _, in := range i.Inputs {
			mark(in)
		}
	}
	for _, t := range targets {
		found := false
		if i, ok := g.byAddr[t]; ok {
			mark(i)
			found = true
		} else if a, err := addrs.ParseInstance(t); err == nil {
			if _, keyed := a.Key.Value(); !keyed {
				for _, i := range g.Instances {
					if i.Address.Node == a.Node {
						mark(i)
						found = true
					}
				}
			}
		}
		if !found {
			var addrs []string
			for _, i := range g.Instances {
				addrs = append(addrs, i.Addr)
			}
			return nil, fmt.Errorf("no node %s in this pipeline.%s", t, didYouMean(t, addrs))
		}
	}
	var out []*Instance
	for _, i := range g.Instances {
		if want[i] {
			out = append(out, i)
		}
	}
	return out, nil
}

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

// DOT renders the instance graph for Graphviz.
func (g *Graph) DOT() string {
	var b strings.Builder
	b.WriteString("digraph lacuna {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n")
	for _, i := range g.Instances {
		fmt.Fprintf(&b, "  %q [label=%q];\n", i.Addr, i.Address.Label())
	}
	for _, i := range g.Instances {
		for _, in := range i.Inputs {
			fmt.Fprintf(&b, "  %q -> %q;\n", in.Addr, i.Addr)
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// Mermaid renders the instance graph as a Mermaid flowchart.
func (g *Graph) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	for _, i := range g.Instances {
		fmt.Fprintf(&b, "  n%d[\"%s\"]\n", i.index, strings.ReplaceAll(i.Address.Label(), `"`, "#quot;"))
	}
	for _, i := range g.Instances {
		for _, in := range i.Inputs {
			fmt.Fprintf(&b, "  n%d --> n%d\n", in.index, i.index)
		}
	}
	return b.String()
}
