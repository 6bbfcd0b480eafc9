package engine

import (
	"errors"
	"fmt"
	"github.com/lacuna-dev/lacuna/addrs"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"
)

// A configField is one `hcl:"..."` field of a node type's config struct.
type configField struct {
	Name     string
	Index    int
	Optional bool
	Roots    []string // extra variables of a nodes.Expr field
	Removed  string   // `removed:"..."`: setting it is an error with this detail
	// OmitNull (`key:"omitnull"` on a pointer field) leaves the field out
	// of the canonical config while it is nil, so that adding an
	// attribute to a type keeps the keys of every config without it.
	OmitNull bool
	// Path (`path:"file"` or `path:"dir"` on a string field) says the
	// value names a regular file or a directory, relative to the
	// pipeline's directory, that must exist: CheckFiles reports one that
	// does not at the attribute.
	Path string
	Type reflect.Type
	cty  cty.Type // the cty type values convert to (for plain Go fields)
}

var (
	refGoType   = reflect.TypeOf(nodes.Ref{})
	refsGoType  = reflect.TypeOf([]nodes.Ref{})
	refPtrType  = reflect.TypeOf(&nodes.Ref{})
	exprGoType  = reflect.TypeOf(nodes.Expr{})
	ctyGoType   = reflect.TypeOf(cty.Value{})
	modelGoType = reflect.TypeOf(nodes.Model{})
	fieldCache  sync.Map // node type name → []configField
)

// configFields reads a node type's config struct tags.
func configFields(t nodes.Type) ([]configField, error) {
	if f, ok := fieldCache.Load(t.Name()); ok {
		return f.([]configField), nil
	}
	cfg := t.NewConfig()
	rt := reflect.TypeOf(cfg)
	if rt == nil || rt.Kind() != reflect.Pointer || rt.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("node type %s: NewConfig must return a pointer to a struct, not %v", t.Name(), rt)
	}
	rt = rt.Elem()
	var out []configField
	for i := 0; i < rt.NumField(); i++ {
		sf := rt.Field(i)
		tag, ok := sf.Tag.Lookup("hcl")
		if !ok {
			continue
		}
		name, opt, _ := strings.Cut(tag, ",")
		if metaArgs[name] {
			return nil, fmt.Errorf("node type %s: %q is a meta-argument", t.Name(), name)
		}
		f := configField{Name: name, Index: i, Optional: opt == "optional", Type: sf.Type}
		base := sf.Type
		if base.Kind() == reflect.Pointer {
			base = base.Elem()
		}
		if ty, err := gocty.ImpliedType(reflect.New(base).Interface()); err == nil {
			f.cty = ty
		}
		f.Removed = sf.Tag.Get("removed")
		if k := sf.Tag.Get("key"); k != "" {
			if k != "omitnull" || sf.Type.Kind() != reflect.Pointer || !f.Optional {
				return nil, fmt.Errorf("node type %s: field %s: key:%q: the one key tag is \"omitnull\", on an optional pointer field", t.Name(), sf.Name, k)
			}
			f.OmitNull = true
		}
		if p := sf.Tag.Get("path"); p != "" {
			if p != "file" && p != "dir" || sf.Type.Kind() != reflect.String && (sf.Type.Kind() != reflect.Pointer || sf.Type.Elem().Kind() != reflect.String) {
				return nil, fmt.Errorf("node type %s: field %s: path:%q: the path tag is \"file\" or \"dir\", on a string or *string field", t.Name(), sf.Name, p)
			}
			f.Path = p
		}
		if r := sf.Tag.Get("roots"); r != "" {
			f.Roots = strings.Split(r, ",")
		}
		out = append(out, f)
	}
	fieldCache.Store(t.Name(), out)
	return out, nil
}

func configSchema(t nodes.Type) (*hcl.BodySchema, error) {
	fields, err := configFields(t)
	if err != nil {
		return nil, err
	}
	s := &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "for_each"}, {Name: "runner"}}}
	for _, f := range fields {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: f.Name, Required: !f.Optional})
	}
	return s, nil
}

func exprRoots(t nodes.Type) map[string][]string {
	fields, _ := configFields(t)
	m := map[string][]string{}
	for _, f := range fields {
		m[f.Name] = f.Roots
	}
	return m
}

// blockValues holds the values of a block's attributes that do not refer
// to each: the same for every instance, so evaluated once per block; and
// the attributes written values(node.TYPE.NAME) of a for_each block
// (fanIn), assigned without evaluating them. Once newInstances runs its
// workers, only vals is written, under the first instance alone.
type blockValues struct {
	vals    map[string]cty.Value
	perInst map[string]bool // attributes that refer to each
	fanIn   map[string]*fanIn
	// goVals are the shared values of scalar fields as assigned (a copy):
	// later instances copy them rather than convert the cty value again.
	goVals map[string]reflect.Value
}

func newBlockValues(n *NodeDecl) *blockValues {
	b := &blockValues{vals: map[string]cty.Value{}, perInst: map[string]bool{}, fanIn: map[string]*fanIn{}, goVals: map[string]reflect.Value{}}
	for name, a := range n.Attrs {
		b.perInst[name] = refersTo(a.Expr, "each")
	}
	return b
}

// newInstance decodes one instance's config and resolves its inputs.
// base is the block's evaluation context (see expandNode); shared caches
// the values that do not depend on each and holds the block's fan-ins.
func (e *evaluator) newInstance(n *NodeDecl, addr addrs.Instance, each *eachVals, runner string, base *hcl.EvalContext, shared *blockValues) (*Instance, hcl.Diagnostics) {
	fields, _ := configFields(n.Type)
	cfg := n.Type.NewConfig()
	rv := reflect.ValueOf(cfg).Elem()
	var inputs []string       // addresses referenced, with repeats
	var fanInputs []*Instance // the fan-ins' instances, each fan-in sorted by address
	var diags hcl.Diagnostics
	var eachCtx *hcl.EvalContext // base with each, made when first needed
	evalCtx := func() *hcl.EvalContext {
		if each == nil {
			return base
		}
		if eachCtx == nil {
			eachCtx = base.NewChild()
			eachCtx.Variables = map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(each.key), "value": each.value})}
		}
		return eachCtx
	}
	for _, f := range fields {
		attr, ok := n.Attrs[f.Name]
		if !ok {
			continue
		}
		if f.Removed != "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: f.Name + " was removed", Detail: f.Removed, Subject: attr.Expr.Range().Ptr()})
			continue
		}
		fv := rv.Field(f.Index)
		if f.Type == exprGoType {
			ectx, d := e.ctxFor(exprTraversals(attr.Expr, f.Roots), each)
			diags = append(diags, d...)
			fv.Set(reflect.ValueOf(nodes.Expr{Expr: attr.Expr, Ctx: ectx, Text: exprText(e.cfg, attr.Expr)}))
			continue
		}
		if fi := shared.fanIn[f.Name]; fi != nil {
			fv.Set(reflect.ValueOf(slices.Clone(fi.refs)))
			if len(fanInputs) == 0 {
				fanInputs = fi.byAddr
			} else {
				fanInputs = append(slices.Clip(fanInputs), fi.byAddr...)
			}
			continue
		}
		if gv, ok := shared.goVals[f.Name]; ok {
			setCopy(fv, gv)
			continue
		}
		v, cached := shared.vals[f.Name]
		first := !cached && !shared.perInst[f.Name] // this instance fills shared
		if !cached {
			if ev, ok := eachValue(attr.Expr, each); ok {
				v = ev
			} else {
				var d hcl.Diagnostics
				v, d = attr.Expr.Value(evalCtx())
				diags = append(diags, d...)
				if d.HasErrors() {
					continue
				}
				if !shared.perInst[f.Name] {
					shared.vals[f.Name] = v
				}
			}
		}
		if v.IsNull() && f.Optional && fv.Type() == refGoType {
			continue // null leaves an optional reference unset, as it does a pointer field
		}
		if err := assign(fv, v, &inputs, f.cty); err != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Incorrect attribute value type",
				Detail:   fmt.Sprintf("Inappropriate value for attribute %q: %s.", f.Name, err),
				Subject:  attr.Expr.Range().Ptr(),
			})
		} else if first && scalarType(fv.Type()) {
			gv := reflect.New(fv.Type()).Elem()
			setCopy(gv, fv)
			shared.goVals[f.Name] = gv
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	if v, ok := n.Type.(nodes.Validator); ok {
		if err := v.Validate(cfg); err != nil {
			diags = append(diags, configErrors(n, err)...)
			return nil, diags
		}
	}
	inst := &Instance{Address: addr, Addr: addr.String(), Decl: n, Config: cfg, Runner: runner}
	slices.Sort(inputs)
	inputs = slices.Compact(inputs)
	if len(inputs)+len(fanInputs) > 0 {
		inst.Inputs = make([]*Instance, 0, len(inputs)+len(fanInputs))
	}
	for _, a := range inputs {
		inst.Inputs = append(inst.Inputs, e.instanceByAddr(a))
	}
	if len(fanInputs) > 0 {
		inst.Inputs = append(inst.Inputs, fanInputs...)
		if !slices.IsSortedFunc(inst.Inputs, byAddr) {
			slices.SortFunc(inst.Inputs, byAddr)
		}
		inst.Inputs = slices.Compact(inst.Inputs)
	}
	return inst, diags
}

// scalarType reports whether a config field of type t holds a bool,
// number or string, or a pointer to one: what setCopy copies without
// sharing anything between instances.
func scalarType(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// setCopy sets dst (settable, of a scalarType) to src's value; a pointer
// gets a new target of its own.
func setCopy(dst, src reflect.Value) {
	if src.Kind() != reflect.Pointer {
		dst.Set(src)
		return
	}
	if src.IsNil() {
		dst.SetZero()
		return
	}
	p := reflect.New(src.Type().Elem())
	p.Elem().Set(src.Elem())
	dst.Set(p)
}

// eachValue evaluates an expression that is only a traversal of each
// (each.key, each.value, each.value.x, each.value["k"]) without building
// an evaluation context: the per-instance attributes of most sweeps. ok
// is false for any other expression, and when the traversal fails (the
// caller then evaluates it the ordinary way, for the diagnostics).
func eachValue(expr hcl.Expression, each *eachVals) (v cty.Value, ok bool) {
	st, isTraversal := expr.(*hclsyntax.ScopeTraversalExpr)
	if each == nil || !isTraversal || len(st.Traversal) < 2 || st.Traversal.RootName() != "each" {
		return cty.NilVal, false
	}
	step, isAttr := st.Traversal[1].(hcl.TraverseAttr)
	switch {
	case !isAttr:
		return cty.NilVal, false
	case step.Name == "key":
		v = cty.StringVal(each.key)
	case step.Name == "value":
		v = each.value
	default:
		return cty.NilVal, false
	}
	v, diags := st.Traversal[2:].TraverseRel(v)
	if diags.HasErrors() {
		return cty.NilVal, false
	}
	return v, true
}

func (e *evaluator) instanceByAddr(addr string) *Instance { return e.instances[addr] }

// byAddr orders instances by address (Instance.Inputs' order).
func byAddr(a, b *Instance) int { return strings.Compare(a.Addr, b.Addr) }

// refersTo reports whether expr refers to the root variable name.
func refersTo(expr hcl.Expression, name string) bool {
	for _, tr := range expr.Variables() {
		if tr.RootName() == name {
			return true
		}
	}
	return false
}

// exprTraversals are an Expr field's references minus its run-time roots.
func exprTraversals(expr hcl.Expression, roots []string) []hcl.Traversal {
	var out []hcl.Traversal
outer:
	for _, tr := range expr.Variables() {
		for _, r := range roots {
			if tr.RootName() == r {
				continue outer
			}
		}
		out = append(out, tr)
	}
	return out
}

func configErrors(n *NodeDecl, err error) hcl.Diagnostics {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var diags hcl.Diagnostics
	for _, err := range errs {
		d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid node configuration", Detail: err.Error(), Subject: n.DeclRange.Ptr()}
		var ce *nodes.ConfigError
		if errors.As(err, &ce) {
			d.Summary, d.Detail = ce.Summary, ce.Detail
			if r, ok := n.AttrRange(ce.Attr); ok {
				d.Subject = r.Ptr()
			}
		}
		diags = append(diags, d)
	}
	return diags
}

// AttrError is a node type's nodes.ConfigError (from Validate, Resolve,
// PlanCalls or Run) placed at the attribute at fault, or at the node
// block when the attribute is not written in it. Its Error reads
// "FILE:LINE:COL: SUMMARY: DETAIL", one line per problem.
type AttrError struct {
	Diags hcl.Diagnostics
	err   error
}

func (e *AttrError) Error() string {
	lines := make([]string, len(e.Diags))
	for n, d := range e.Diags {
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		if d.Subject != nil {
			msg = fmt.Sprintf("%s:%d:%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, msg)
		}
		lines[n] = msg
	}
	return strings.Join(lines, "\n")
}

func (e *AttrError) Unwrap() error { return e.err }

// located turns an error holding nodes.ConfigErrors into an AttrError
// naming their positions in n; other errors are returned as they are.
func located(n *NodeDecl, err error) error {
	var ce *nodes.ConfigError
	if err == nil || !errors.As(err, &ce) {
		return err
	}
	var ae *AttrError
	if errors.As(err, &ae) {
		return err
	}
	return &AttrError{Diags: configErrors(n, err), err: err}
}

// assign stores a cty value in a config field, converting as gocty does,
// with artifact references becoming nodes.Ref. A []Ref field takes any
// nesting of lists, sets, tuples, maps and objects of references, so that
// node.x.y (a for_each map), values(node.x.y), node.x.y[*] and
// [for k, v in node.x.y : v] all work.
func assign(fv reflect.Value, v cty.Value, inputs *[]string, ty cty.Type) error {
	if !v.IsWhollyKnown() {
		return errors.New("the value is not known before the run")
	}
	switch fv.Type() {
	case ctyGoType:
		fv.Set(reflect.ValueOf(v))
		if containsRef(v) {
			return errors.New("artifact references are not allowed here")
		}
		return nil
	case refGoType:
		if v.Type() != refType {
			if refs := flattenRefs(v); len(refs) > 1 {
				return fmt.Errorf("one artifact required, got %d (%s); pick one instance, e.g. node.TYPE.NAME[\"key\"]", len(refs), describeRefs(refs))
			}
			return fmt.Errorf("an artifact reference (node.TYPE.NAME) required, got %s", typeName(v))
		}
		if v.IsNull() {
			return errors.New("an artifact reference required, got null")
		}
		addr := v.EncapsulatedValue().(*artifactRef).addr
		*inputs = append(*inputs, addr)
		fv.Set(reflect.ValueOf(nodes.Ref{Node: addr}))
		return nil
	case refPtrType:
		// An optional input (trained = cond ? node.x.y : null).
		if v.IsNull() {
			return nil
		}
		p := reflect.New(refGoType)
		if err := assign(p.Elem(), v, inputs, ty); err != nil {
			return err
		}
		fv.Set(p)
		return nil
	case refsGoType:
		var refs []nodes.Ref
		var bad error
		walkValue(v, func(el cty.Value) {
			if el.Type() == refType && !el.IsNull() {
				addr := el.EncapsulatedValue().(*artifactRef).addr
				*inputs = append(*inputs, addr)
				refs = append(refs, nodes.Ref{Node: addr})
			} else if bad == nil {
				bad = fmt.Errorf("a list of artifact references required, found %s", typeName(el))
			}
		})
		if bad != nil {
			return bad
		}
		fv.Set(reflect.ValueOf(refs))
		return nil
	}
	if containsRef(v) {
		return errors.New("artifact references are only allowed in input attributes")
	}
	if v.IsNull() {
		return nil
	}
	if fv.Kind() == reflect.Pointer {
		p := reflect.New(fv.Type().Elem())
		if err := assign(p.Elem(), v, inputs, ty); err != nil {
			return err
		}
		fv.Set(p)
		return nil
	}
	if ty == cty.NilType {
		var err error
		if ty, err = gocty.ImpliedType(fv.Addr().Interface()); err != nil {
			return err
		}
	}
	cv, err := convertTo(v, ty)
	if err != nil {
		return fmt.Errorf("%s required: %s", ty.FriendlyName(), err)
	}
	if err := gocty.FromCtyValue(cv, fv.Addr().Interface()); err != nil {
		return fmt.Errorf("%s", convertMessage(err))
	}
	return nil
}

// walkValue calls fn for every non-collection leaf of v.
func walkValue(v cty.Value, fn func(cty.Value)) {
	ty := v.Type()
	if !v.IsNull() && (ty.IsListType() || ty.IsSetType() || ty.IsTupleType() || ty.IsMapType() || ty.IsObjectType()) {
		for it := v.ElementIterator(); it.Next(); {
			_, el := it.Element()
			walkValue(el, fn)
		}
		return
	}
	fn(v)
}

func flattenRefs(v cty.Value) []string {
	var out []string
	walkValue(v, func(el cty.Value) {
		if el.Type() == refType && !el.IsNull() {
			out = append(out, el.EncapsulatedValue().(*artifactRef).addr)
		}
	})
	sort.Strings(out)
	return out
}

func describeRefs(refs []string) string {
	if len(refs) > 3 {
		return strings.Join(refs[:3], ", ") + ", ..."
	}
	return strings.Join(refs, ", ")
}

func containsRef(v cty.Value) bool {
	found := false
	walkValue(v, func(el cty.Value) { found = found || el.Type() == refType })
	return found
}

func reflectElem(cfg any) reflect.Value { return reflect.ValueOf(cfg).Elem() }
