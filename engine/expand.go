package engine

import (
	"fmt"
	"maps"
	"math"
	"math/big"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/lacuna-dev/lacuna/addrs"
	"github.com/lacuna-dev/lacuna/nodes"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Expand evaluates a loaded pipeline: variables (defaults, --var-file,
// --var), locals and configuration blocks in dependency order, then every
// node block, expanding for_each into instances and decoding each
// instance's config. One bad declaration yields its own diagnostics; what
// depends on it is skipped silently rather than reported again.
func Expand(cfg *Config, opts Options) (*Graph, hcl.Diagnostics) {
	e := &evaluator{
		cfg:      cfg,
		funcs:    functions(cfg.Dir),
		vars:     map[string]cty.Value{},
		locals:   map[string]cty.Value{},
		blocks:   map[string]cty.Value{},
		nodeVals: map[string]*nodeValue{},

		instances: map[string]*Instance{},
	}
	diags := e.setVariables(opts)

	// Dependencies of every vertex, from its expressions' references.
	var ids []string
	deps := map[string][]string{}
	vertices := map[string]vertex{}
	for _, name := range slices.Sorted(maps.Keys(cfg.Variables)) {
		id := "var." + name
		ids = append(ids, id)
		vertices[id] = vertex{variable: cfg.Variables[name]}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Locals)) {
		id := "local." + name
		ids = append(ids, id)
		vertices[id] = vertex{local: cfg.Locals[name]}
		d, dd := cfg.references(cfg.Locals[name].Expr, refCheck{context: "A local value"})
		deps[id], diags = d, append(diags, dd...)
	}
	for _, id := range cfg.order {
		ids = append(ids, id)
		if b, ok := cfg.Blocks[id]; ok {
			vertices[id] = vertex{block: b}
			for _, a := range sortedAttrs(b.Attrs) {
				d, dd := cfg.references(a.Expr, refCheck{context: "A " + b.Kind + " block"})
				deps[id], diags = append(deps[id], d...), append(diags, dd...)
			}
			continue
		}
		n := cfg.Nodes[id]
		vertices[id] = vertex{node: n}
		if n.ForEach != nil {
			d, dd := cfg.references(n.ForEach, refCheck{context: "for_each"})
			deps[id], diags = append(deps[id], d...), append(diags, dd...)
		}
		if n.Runner != nil {
			dd := checkRunnerRef(cfg, n.Runner)
			diags = append(diags, dd...)
		}
		roots := exprRoots(n.Type)
		for _, a := range sortedAttrs(n.Attrs) {
			d, dd := cfg.references(a.Expr, refCheck{allowEach: n.ForEach != nil, allowNodes: true, extraRoots: roots[a.Name], context: "This attribute"})
			deps[id], diags = append(deps[id], d...), append(diags, dd...)
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	sorted, cycle := order(ids, deps)
	if cycle != nil {
		rng := vertices[cycle[0]].declRange()
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cycle in pipeline",
			Detail:   "These blocks refer to each other in a loop: " + strings.Join(cycle, " → ") + ".",
			Subject:  &rng,
		})
		return nil, diags
	}

	// byAddr is the evaluator's index: newInstance resolves references
	// through it while the blocks expand.
	g := &Graph{Config: cfg, Runners: map[string]int{}, RunnerBlocks: map[string]cty.Value{}, byAddr: e.instances}
	failed := map[string]bool{}
	for _, id := range sorted {
		skip := false
		for _, d := range deps[id] {
			skip = skip || failed[d]
		}
		if skip {
			failed[id] = true
			continue
		}
		var d hcl.Diagnostics
		switch vx := vertices[id]; {
		case vx.variable != nil:
			d = e.validateVariable(vx.variable)
		case vx.local != nil:
			var v cty.Value
			v, d = e.evalExpr(vx.local.Expr, nil)
			e.locals[vx.local.Name] = v
		case vx.node != nil:
			d = e.expandNode(g, vx.node)
		default:
			var v cty.Value
			v, d = e.evalBlock(vx.block)
			e.blocks[id] = v
		}
		diags = append(diags, d...)
		if d.HasErrors() {
			failed[id] = true
		}
	}
	for id, b := range cfg.Blocks {
		if b.Kind != "runner" || failed[id] {
			continue
		}
		limit := 0
		if v := e.blocks[id].GetAttr("concurrency"); !v.IsNull() {
			f, _ := v.AsBigFloat().Int64()
			limit = int(f)
		}
		g.Runners[b.Name] = limit
		g.RunnerBlocks[b.Name] = e.blocks[id]
	}
	runnerBlocks := make(map[string]*cty.Value, len(g.RunnerBlocks))
	for name, v := range g.RunnerBlocks {
		runnerBlocks[name] = &v
	}
	// Dependants are counted first: a fan-out of 100,000 gets its slice
	// in one allocation.
	dependants := make([]int32, len(g.Instances))
	for i, inst := range g.Instances {
		inst.index = i
		if inst.Runner != "" {
			inst.runnerBlock = runnerBlocks[inst.Runner]
		}
		for _, in := range inst.Inputs {
			dependants[in.index]++
		}
	}
	for _, inst := range g.Instances {
		for _, in := range inst.Inputs {
			if in.dependants == nil {
				in.dependants = make([]*Instance, 0, dependants[in.index])
			}
			in.dependants = append(in.dependants, inst)
		}
	}
	diags = append(diags, checkRowExprs(g)...)
	diags = append(diags, checkContainerRunners(g)...)
	return g, diags
}

// checkContainerRunners refuses a node on a container runner whose type
// does not run its work in one (nodes.ContainerType): its work would run
// on this machine, outside the image the key names.
func checkContainerRunners(g *Graph) hcl.Diagnostics {
	var diags hcl.Diagnostics
	seen := map[*NodeDecl]bool{}
	for _, inst := range g.Instances {
		n := inst.Decl
		if inst.Runner == "" || seen[n] || n.Runner == nil {
			continue
		}
		seen[n] = true
		v := g.RunnerBlocks[inst.Runner]
		if v.IsNull() || !v.IsKnown() || !v.Type().IsObjectType() || !v.Type().HasAttribute("kind") {
			continue
		}
		k := v.GetAttr("kind")
		if k.IsNull() || !k.IsKnown() || k.AsString() != "container" {
			continue
		}
		if ct, ok := n.Type.(nodes.ContainerType); ok && ct.RunsInContainers() {
			continue
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Node type does not run in containers",
			Detail:   fmt.Sprintf("runner.%s is a container runner, but %s nodes run their work in lacuna's own process, not in the image: give them a runner of kind local (for its concurrency), or run the work in the image with a command node.", inst.Runner, n.TypeName),
			Subject:  n.Runner.Range().Ptr(),
		})
	}
	return diags
}

func sortedAttrs(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Range.Start.Byte < out[j].Range.Start.Byte })
	return out
}

func checkRunnerRef(cfg *Config, expr hcl.Expression) hcl.Diagnostics {
	name, ok := runnerName(expr)
	if !ok {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid runner", Detail: "runner must be a reference to a runner block: runner = runner.NAME.", Subject: expr.Range().Ptr()}}
	}
	if _, ok := cfg.Blocks["runner."+name]; !ok {
		var names []string
		for _, b := range cfg.Blocks {
			if b.Kind == "runner" {
				names = append(names, b.Name)
			}
		}
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Reference to undeclared runner", Detail: fmt.Sprintf("No runner %q is declared.%s", name, didYouMean(name, names)), Subject: expr.Range().Ptr()}}
	}
	return nil
}

func runnerName(expr hcl.Expression) (string, bool) {
	tr, d := hcl.AbsTraversalForExpr(expr)
	if d.HasErrors() || len(tr) != 2 || tr.RootName() != "runner" {
		return "", false
	}
	return attrStep(tr, 1)
}

// setVariables assigns every variable its value: --var beats --var-file
// beats default. A variable without a value is an error.
func (e *evaluator) setVariables(opts Options) hcl.Diagnostics {
	var diags hcl.Diagnostics
	given := map[string]cty.Value{}
	givenAt := map[string]*hcl.Range{}
	for _, path := range opts.VarFiles {
		src, err := os.ReadFile(path)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read variables file", Detail: err.Error()})
			continue
		}
		p := hclparse.NewParser()
		var f *hcl.File
		var d hcl.Diagnostics
		if strings.HasSuffix(path, ".json") {
			f, d = p.ParseJSON(src, path)
		} else {
			f, d = p.ParseHCL(src, path)
		}
		for name, file := range p.Files() {
			e.cfg.Files[name] = file
		}
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		attrs, d := f.Body.JustAttributes()
		diags = append(diags, d...)
		for _, a := range attrs {
			v, d := a.Expr.Value(nil)
			diags = append(diags, d...)
			if _, ok := e.cfg.Variables[a.Name]; !ok {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value for undeclared variable", Detail: fmt.Sprintf("The pipeline declares no variable %q.%s", a.Name, didYouMean(a.Name, slices.Sorted(maps.Keys(e.cfg.Variables)))), Subject: a.NameRange.Ptr()})
				continue
			}
			given[a.Name], givenAt[a.Name] = v, a.Expr.Range().Ptr()
		}
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Vars)) {
		raw := opts.Vars[name]
		v, ok := e.cfg.Variables[name]
		if !ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value for undeclared variable", Detail: fmt.Sprintf("--var %s: the pipeline declares no variable %q.%s", name, name, didYouMean(name, slices.Sorted(maps.Keys(e.cfg.Variables))))})
			continue
		}
		if v.Type == cty.String {
			given[name] = cty.StringVal(raw)
			continue
		}
		expr, d := hclsyntax.ParseExpression([]byte(raw), "--var "+name, hcl.InitialPos)
		if d.HasErrors() {
			if v.Type == cty.DynamicPseudoType {
				given[name] = cty.StringVal(raw)
				continue
			}
			diags = append(diags, d...)
			continue
		}
		val, d := expr.Value(nil)
		if d.HasErrors() {
			if v.Type == cty.DynamicPseudoType { // a bare word: a string
				given[name] = cty.StringVal(raw)
				continue
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for --var " + name, Detail: fmt.Sprintf("%q is not a %s literal.", raw, typeexpr.TypeString(v.Type))})
			continue
		}
		given[name] = val
	}
	for _, name := range slices.Sorted(maps.Keys(e.cfg.Variables)) {
		v := e.cfg.Variables[name]
		val, ok := given[name]
		if !ok {
			if v.Default == cty.NilVal {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No value for required variable", Detail: fmt.Sprintf("Variable %q has no default; set it with --var %s=VALUE or in a --var-file.", name, name), Subject: v.DeclRange.Ptr()})
				continue
			}
			e.vars[name] = v.Default
			continue
		}
		cv, err := convertTo(val, v.Type)
		if err != nil {
			subject := givenAt[name]
			if subject == nil {
				subject = v.DeclRange.Ptr()
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable " + name, Detail: fmt.Sprintf("The value does not match the variable's type %s: %s.", typeexpr.TypeString(v.Type), err), Subject: subject})
			continue
		}
		e.vars[name] = cv
	}
	return diags
}

func (e *evaluator) validateVariable(v *Variable) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if _, ok := e.vars[v.Name]; !ok {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Variable has no value", Subject: v.DeclRange.Ptr()}}
	}
	for _, val := range v.Validations {
		for _, tr := range val.Condition.Variables() {
			if name, ok := attrStep(tr, 1); tr.RootName() != "var" || !ok || name != v.Name {
				rng := tr.SourceRange()
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid reference in variable validation", Detail: fmt.Sprintf("A validation condition may only refer to var.%s.", v.Name), Subject: &rng})
			}
		}
		if diags.HasErrors() {
			continue
		}
		ok, d := e.evalExpr(val.Condition, nil)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		if ok.Type() != cty.Bool || ok.IsNull() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid validation condition", Detail: "The condition must be true or false.", Subject: val.Condition.Range().Ptr()})
			continue
		}
		if ok.True() {
			continue
		}
		msg := "The value is not valid."
		if m, d := e.evalExpr(val.ErrorMessage, nil); !d.HasErrors() && m.Type() == cty.String && !m.IsNull() {
			msg = m.AsString()
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable " + v.Name, Detail: msg, Subject: val.Condition.Range().Ptr()})
	}
	return diags
}

// expandNode creates the instances of a node block.
func (e *evaluator) expandNode(g *Graph, n *NodeDecl) hcl.Diagnostics {
	runner := ""
	if n.Runner != nil {
		runner, _ = runnerName(n.Runner)
	}
	// One context for the whole block: every instance shares what its
	// expressions reference except each, which a child context adds.
	// Attributes written values(node.TYPE.NAME) into a []Ref field take
	// their references from the instances (fanIn): the context leaves the
	// sweep's map out.
	shared := newBlockValues(n)
	fields, _ := configFields(n.Type)
	var trs []hcl.Traversal
	for _, f := range fields {
		a, ok := n.Attrs[f.Name]
		if !ok {
			continue
		}
		if f.Type == refsGoType && f.Removed == "" {
			if nv := e.fanInOf(a.Expr); nv != nil {
				shared.fanIn[f.Name] = nv.fanIn()
				continue
			}
		}
		trs = append(trs, exprTraversals(a.Expr, f.Roots)...)
	}
	base, diags := e.ctxFor(trs, nil)
	if diags.HasErrors() {
		return diags
	}
	if n.ForEach == nil {
		inst, d := e.newInstance(n, n.Address().Instance(addrs.NoKey), nil, runner, base, shared)
		if inst != nil {
			g.add(inst)
			e.nodeVals[n.Addr()] = &nodeValue{single: refVal(inst.Addr)}
		}
		return d
	}
	tooMany := func(count int) bool { e.expanded += count; return e.expanded > MaxInstances }
	each, ok := e.eachOfRange(n.ForEach)
	if ok && tooMany(len(each)) {
		return append(diags, e.tooManyInstances(n))
	}
	if !ok {
		fe, d := e.evalForEach(n.ForEach)
		diags = append(diags, d...)
		if diags.HasErrors() {
			return diags
		}
		if fe.IsKnown() && !fe.IsNull() && fe.CanIterateElements() && tooMany(fe.LengthInt()) {
			return append(diags, e.tooManyInstances(n))
		}
		if each, d = eachOf(fe, n.ForEach.Range()); d.HasErrors() {
			return append(diags, d...)
		}
	}
	g.Instances = slices.Grow(g.Instances, len(each))
	if len(each) > 2*len(e.instances) {
		// Sized once for the sweep rather than grown through it.
		m := make(map[string]*Instance, len(e.instances)+len(each))
		maps.Copy(m, e.instances)
		e.instances, g.byAddr = m, m
	}
	insts, ds := e.newInstances(n, each, runner, base, shared)
	nv := &nodeValue{forEach: true, insts: make([]*Instance, 0, len(each)), keys: make([]string, 0, len(each))}
	for k, inst := range insts {
		d := ds[k]
		diags = append(diags, d...)
		if inst != nil {
			g.add(inst)
			nv.insts = append(nv.insts, inst)
			nv.keys = append(nv.keys, each[k].key)
		}
		if d.HasErrors() {
			// Every instance shares the block's expressions: one
			// instance's errors are the block's errors.
			return diags
		}
	}
	e.nodeVals[n.Addr()] = nv
	return diags
}

func (e *evaluator) tooManyInstances(n *NodeDecl) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Too many instances",
		Detail:   fmt.Sprintf("This for_each brings the pipeline to %d instances; a pipeline may have at most %d. Split the sweep into several pipelines, or sample it.", e.expanded, MaxInstances),
		Subject:  n.ForEach.Range().Ptr(),
	}
}

// eachOfRange is eachOf(range(...)) for for_each = range(ARGS) whose
// values are whole numbers (the usual spelling of a numbered sweep),
// without building the list and reading its numbers back: the values are
// those rangeFunc makes (cty.NumberFloatVal of the same float64 steps),
// their keys those eachKey gives a whole number, and no key repeats (the
// sequence is monotonic). ok is false for anything else (other
// expressions, arguments that are not known numbers, a range rangeFunc
// refuses, empty, or with a fraction), which the caller evaluates as
// usual, with its diagnostics.
func (e *evaluator) eachOfRange(expr hcl.Expression) (each []eachVals, ok bool) {
	call, isCall := expr.(*hclsyntax.FunctionCallExpr)
	if !isCall || call.Name != "range" || call.ExpandFinal || len(call.Args) < 1 || len(call.Args) > 3 {
		return nil, false
	}
	nums := make([]float64, len(call.Args))
	for k, a := range call.Args {
		v, diags := e.evalExpr(a, nil)
		if diags.HasErrors() || v.Type() != cty.Number || !v.IsKnown() || v.IsNull() || v.IsMarked() {
			return nil, false
		}
		nums[k], _ = v.AsBigFloat().Float64()
	}
	start, end, step, err := rangeBounds(nums)
	if err != nil {
		return nil, false
	}
	each = make([]eachVals, 0, int(max(math.Ceil((end-start)/step), 0)))
	for v := start; (step > 0 && v < end) || (step < 0 && v > end); v += step {
		if v != math.Trunc(v) || math.Abs(v) >= 1<<53 {
			return nil, false
		}
		each = append(each, eachVals{key: strconv.FormatInt(int64(v), 10), value: cty.NumberFloatVal(v)})
	}
	return each, len(each) > 0
}

// newInstances decodes the instances of a for_each block: the first alone
// (it evaluates the attributes every instance shares), the rest on every
// CPU, since they only read the evaluator from then on. Results are in
// the order of each.
func (e *evaluator) newInstances(n *NodeDecl, each []eachVals, runner string, base *hcl.EvalContext, shared *blockValues) ([]*Instance, []hcl.Diagnostics) {
	insts := make([]*Instance, len(each))
	ds := make([]hcl.Diagnostics, len(each))
	build := func(k int) {
		insts[k], ds[k] = e.newInstance(n, n.Address().Instance(addrs.StringKey(each[k].key)), &each[k], runner, base, shared)
	}
	if len(each) == 0 {
		return nil, nil
	}
	build(0)
	if ds[0].HasErrors() {
		return insts[:1], ds[:1]
	}
	workers := min(runtime.GOMAXPROCS(0), len(each)/1000+1)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 1 + w; k < len(each); k += workers {
				build(k)
			}
		}()
	}
	wg.Wait()
	return insts, ds
}

// add appends i to g's instances and indexes it by address (what
// newInstance resolves references through).
func (g *Graph) add(i *Instance) {
	g.Instances = append(g.Instances, i)
	g.byAddr[i.Addr] = i
}

// eachOf turns a for_each value into keyed elements. Maps and objects key
// by their keys; lists and sets by their elements (composite elements, as
// from setproduct, by their leaves joined with ",").
func eachOf(v cty.Value, rng hcl.Range) ([]eachVals, hcl.Diagnostics) {
	bad := func(detail string) ([]eachVals, hcl.Diagnostics) {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid for_each argument", Detail: detail, Subject: &rng}}
	}
	if v.IsNull() {
		return bad("for_each must not be null.")
	}
	if !v.IsKnown() {
		return bad("for_each must be known before the pipeline runs.")
	}
	ty := v.Type()
	var out []eachVals
	switch {
	case ty.IsMapType() || ty.IsObjectType():
		for it := v.ElementIterator(); it.Next(); {
			k, val := it.Element()
			out = append(out, eachVals{key: k.AsString(), value: val})
		}
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		seen := map[string]bool{}
		for it := v.ElementIterator(); it.Next(); {
			_, val := it.Element()
			k, err := eachKey(val)
			if err != "" {
				return bad(err)
			}
			if seen[k] {
				return bad(fmt.Sprintf("for_each produces the key %q twice; instance keys must be unique (use toset() or a map).", k))
			}
			seen[k] = true
			out = append(out, eachVals{key: k, value: val})
		}
	default:
		return bad(fmt.Sprintf("for_each needs a map, a set or a list; got %s.", ty.FriendlyName()))
	}
	return out, nil
}

// evalForEach evaluates a for_each expression. `toset(LIST)` of strings,
// the usual spelling of a sweep over names, is read as LIST's distinct
// strings in the order a set of them iterates in (sorted), without building
// the set: go-cty sorts a set's elements with a generic comparison every
// time it is iterated, which costs seconds at 100,000 instances. The
// instances, their keys and values are those of the set.
func (e *evaluator) evalForEach(expr hcl.Expression) (cty.Value, hcl.Diagnostics) {
	call, ok := expr.(*hclsyntax.FunctionCallExpr)
	if !ok || call.Name != "toset" || len(call.Args) != 1 || call.ExpandFinal {
		return e.evalExpr(expr, nil)
	}
	arg, diags := e.evalExpr(call.Args[0], nil)
	if diags.HasErrors() || !arg.IsWhollyKnown() || arg.IsNull() || !(arg.Type().IsTupleType() || arg.Type().IsListType()) {
		return e.evalExpr(expr, nil)
	}
	strs := make([]string, 0, arg.LengthInt())
	for it := arg.ElementIterator(); it.Next(); {
		_, v := it.Element()
		if v.IsNull() || v.Type() != cty.String || v.IsMarked() {
			return e.evalExpr(expr, nil)
		}
		strs = append(strs, v.AsString())
	}
	sort.Strings(strs)
	strs = slices.Compact(strs)
	vals := make([]cty.Value, len(strs))
	for i, s := range strs {
		vals[i] = cty.StringVal(s)
	}
	if len(vals) == 0 {
		return cty.ListValEmpty(cty.String), nil
	}
	return cty.ListVal(vals), nil
}

func eachKey(v cty.Value) (string, string) {
	if !v.IsKnown() {
		return "", "for_each must be known before the pipeline runs."
	}
	if v.IsNull() {
		return "", "for_each elements must not be null."
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		return v.AsString(), ""
	case ty == cty.Number:
		f := v.AsBigFloat()
		if i, acc := f.Int64(); acc == big.Exact {
			return strconv.FormatInt(i, 10), ""
		}
		return f.Text('f', -1), ""
	case ty == cty.Bool:
		return strconv.FormatBool(v.True()), ""
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType() || ty.IsMapType() || ty.IsObjectType():
		var parts []string
		if ty.IsObjectType() || ty.IsMapType() {
			m := v.AsValueMap()
			for _, k := range slices.Sorted(maps.Keys(m)) {
				p, err := eachKey(m[k])
				if err != "" {
					return "", err
				}
				parts = append(parts, p)
			}
		} else {
			for it := v.ElementIterator(); it.Next(); {
				_, el := it.Element()
				p, err := eachKey(el)
				if err != "" {
					return "", err
				}
				parts = append(parts, p)
			}
		}
		return strings.Join(parts, ","), ""
	}
	return "", fmt.Sprintf("cannot make an instance key from %s.", ty.FriendlyName())
}
