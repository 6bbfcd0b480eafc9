package engine

import (
	"cmp"
	"runtime"
	"slices"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/zclconf/go-cty/cty"
)

// nodeValue is what node.TYPE.NAME evaluates to: an artifact reference
// for a block without for_each, a map of them by each.key for a for_each
// block. The map of a large sweep costs two Go maps of its size to build,
// and most pipelines only read it through values(node.TYPE.NAME), which
// newInstance answers from the instances themselves (fanIn): it is built
// when an expression first needs it. Safe for concurrent use once
// expandNode has made it.
type nodeValue struct {
	single cty.Value // a block without for_each

	// A for_each block: its instances and their keys, in the block's
	// order.
	forEach bool
	insts   []*Instance
	keys    []string

	mapOnce sync.Once
	mapVal  cty.Value

	fanOnce sync.Once
	fan     *fanIn
}

// value is the cty value of the reference.
func (nv *nodeValue) value() cty.Value {
	if !nv.forEach {
		return nv.single
	}
	nv.mapOnce.Do(func() {
		if len(nv.insts) == 0 {
			nv.mapVal = cty.MapValEmpty(refType)
			return
		}
		vals := make(map[string]cty.Value, len(nv.insts))
		for k, inst := range nv.insts {
			vals[nv.keys[k]] = refVal(inst.Addr)
		}
		nv.mapVal = cty.MapVal(vals)
	})
	return nv.mapVal
}

// fanIn is values(node.TYPE.NAME) of a for_each block, as a []nodes.Ref
// field receives it: refs in the order values() lists them (by key, as
// cty iterates a map: sorted by Go string comparison), and the same
// instances sorted by address (Instance.Inputs' order).
type fanIn struct {
	refs   []nodes.Ref // nil for no instances, as assign leaves it
	byAddr []*Instance
}

// fanIn is the fan-in of a for_each block's value.
func (nv *nodeValue) fanIn() *fanIn {
	nv.fanOnce.Do(func() {
		type keyed struct {
			key  string
			inst *Instance
		}
		ks := make([]keyed, len(nv.insts))
		for k, inst := range nv.insts {
			ks[k] = keyed{nv.keys[k], inst}
		}
		sortParallel(ks, func(a, b keyed) int { return cmp.Compare(a.key, b.key) })
		f := &fanIn{byAddr: make([]*Instance, len(ks))}
		if len(ks) > 0 {
			f.refs = make([]nodes.Ref, len(ks))
		}
		for k, x := range ks {
			f.refs[k] = nodes.Ref{Node: x.inst.Addr}
			f.byAddr[k] = x.inst
		}
		// Keys that need no quoting sort as their addresses do; others
		// (a key with a byte below '"') may not.
		if !slices.IsSortedFunc(f.byAddr, byAddr) {
			slices.SortFunc(f.byAddr, byAddr)
		}
		nv.fan = f
	})
	return nv.fan
}

// fanInOf returns the for_each block whose values() expr is, when expr is
// exactly values(node.TYPE.NAME) of such a block: newInstance then
// assigns its references without evaluating the call. Anything else
// (another function, a block without for_each, an unknown block) is
// evaluated as usual, with its diagnostics.
func (e *evaluator) fanInOf(expr hcl.Expression) *nodeValue {
	call, ok := expr.(*hclsyntax.FunctionCallExpr)
	if !ok || call.Name != "values" || len(call.Args) != 1 || call.ExpandFinal {
		return nil
	}
	st, ok := call.Args[0].(*hclsyntax.ScopeTraversalExpr)
	if !ok || len(st.Traversal) != 3 || st.Traversal.RootName() != "node" {
		return nil
	}
	typ, ok1 := st.Traversal[1].(hcl.TraverseAttr)
	name, ok2 := st.Traversal[2].(hcl.TraverseAttr)
	if !ok1 || !ok2 {
		return nil
	}
	nv := e.nodeVals["node."+typ.Name+"."+name.Name]
	if nv == nil || !nv.forEach {
		return nil
	}
	return nv
}

// sortParallel sorts s, whose elements compare distinct (compare never
// 0 between two of them), on two goroutines: halves sorted at once, then
// merged.
func sortParallel[T any](s []T, compare func(a, b T) int) {
	if runtime.GOMAXPROCS(0) < 2 || len(s) < 4096 {
		slices.SortFunc(s, compare)
		return
	}
	mid := len(s) / 2
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		slices.SortFunc(s[:mid], compare)
	}()
	slices.SortFunc(s[mid:], compare)
	wg.Wait()
	out := make([]T, 0, len(s))
	a, b := s[:mid], s[mid:]
	for len(a) > 0 && len(b) > 0 {
		if compare(b[0], a[0]) < 0 {
			out = append(out, b[0])
			b = b[1:]
		} else {
			out = append(out, a[0])
			a = a[1:]
		}
	}
	out = append(append(out, a...), b...)
	copy(s, out)
}
