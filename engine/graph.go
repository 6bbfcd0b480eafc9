package engine

import (
	"fmt"
	"strings"

	"github.com/lacuna-dev/lacuna/addrs"
	"github.com/zclconf/go-cty/cty"

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
	Runner string
	// runnerBlock is that runner block's value (Graph.RunnerBlocks), what
	// the instance's Resolve and Run read through nodes.RunnerEnv; nil
	// when there is none. One value per runner, shared by its instances.
	runnerBlock *cty.Value
	dependants  []*Instance
	index       int
}

// Type is the instance's node type.
func (i *Instance) Type() nodes.Type { return i.Decl.Type }

// Graph is an expanded pipeline: instances in a topological order (every
// instance after its inputs), and the runners' concurrency limits.
type Graph struct {
	Config    *Config
	Instances []*Instance
	Runners   map[string]int
	// RunnerBlocks are the runner blocks' values by name, every
	// attribute present (null when not set): what the CLI builds a
	// runner's Remote or container engine from.
	RunnerBlocks map[string]cty.Value
	byAddr       map[string]*Instance
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
	var roots []*Instance
	mark := func(i *Instance) { roots = append(roots, i) }
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
	want := upstream(roots)
	var out []*Instance
	for _, i := range g.Instances {
		if want[i] {
			out = append(out, i)
		}
	}
	return out, nil
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
