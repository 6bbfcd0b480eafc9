package engine

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
)

// artifactRef is the value a node reference evaluates to: an opaque
// capsule naming the producing instance. Configs receive it as nodes.Ref;
// it cannot be forged from strings, and it compares and hashes by address
// so that toset() and distinct() work on references.
type artifactRef struct{ addr string }

var refType = cty.CapsuleWithOps("artifact", reflect.TypeOf(artifactRef{}), &cty.CapsuleOps{
	GoString:     func(v any) string { return "artifact(" + v.(*artifactRef).addr + ")" },
	TypeGoString: func(reflect.Type) string { return "artifact" },
	Equals: func(a, b any) cty.Value {
		return cty.BoolVal(a.(*artifactRef).addr == b.(*artifactRef).addr)
	},
	RawEquals: func(a, b any) bool { return a.(*artifactRef).addr == b.(*artifactRef).addr },
	HashKey:   func(v any) string { return v.(*artifactRef).addr },
})

func refVal(addr string) cty.Value { return cty.CapsuleVal(refType, &artifactRef{addr}) }

// Options are the inputs of Expand besides the files.
type Options struct {
	// Vars are --var values, as given on the command line.
	Vars map[string]string
	// VarFiles are --var-file paths (HCL or JSON attribute files).
	VarFiles []string
}

// eachVals are the each.key / each.value of one for_each instance.
type eachVals struct {
	key   string
	value cty.Value
}

type evaluator struct {
	cfg      *Config
	funcs    map[string]function.Function
	vars     map[string]cty.Value
	locals   map[string]cty.Value
	blocks   map[string]cty.Value
	nodeVals map[string]*nodeValue // by node block address
	// instances by address, for resolving references to inputs.
	instances map[string]*Instance
	// expanded counts the instances of the for_each blocks seen so far,
	// against MaxInstances.
	expanded int
}

// vertex is one declaration in the static graph that orders evaluation:
// exactly one field is set.
type vertex struct {
	variable *Variable
	local    *Local
	node     *NodeDecl
	block    *Block
}

func (v vertex) declRange() hcl.Range {
	switch {
	case v.variable != nil:
		return v.variable.DeclRange
	case v.local != nil:
		return v.local.DeclRange
	case v.node != nil:
		return v.node.DeclRange
	default:
		return v.block.DeclRange
	}
}

// refCheck validates the references of an expression and returns the
// vertices it depends on.
type refCheck struct {
	allowEach  bool
	allowNodes bool
	extraRoots []string
	context    string // for messages: "for_each", "a variable validation", ...
}

func (c *Config) references(expr hcl.Expression, rc refCheck) ([]string, hcl.Diagnostics) {
	var deps []string
	var diags hcl.Diagnostics
	for _, tr := range expr.Variables() {
		dep, d := c.reference(tr, rc)
		diags = append(diags, d...)
		if dep != "" {
			deps = append(deps, dep)
		}
	}
	return deps, diags
}

func attrStep(tr hcl.Traversal, i int) (string, bool) {
	if i >= len(tr) {
		return "", false
	}
	switch s := tr[i].(type) {
	case hcl.TraverseAttr:
		return s.Name, true
	case hcl.TraverseIndex:
		if s.Key.Type() == cty.String && s.Key.IsKnown() && !s.Key.IsNull() {
			return s.Key.AsString(), true
		}
	}
	return "", false
}

func (c *Config) reference(tr hcl.Traversal, rc refCheck) (string, hcl.Diagnostics) {
	root := tr.RootName()
	rng := tr.SourceRange()
	bad := func(summary, detail string) (string, hcl.Diagnostics) {
		return "", hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: &rng}}
	}
	for _, r := range rc.extraRoots {
		if root == r {
			return "", nil
		}
	}
	switch root {
	case "var":
		name, ok := attrStep(tr, 1)
		if !ok {
			return bad("Invalid reference", "A reference to a variable is written var.NAME.")
		}
		if _, ok := c.Variables[name]; !ok {
			return bad("Reference to undeclared input variable", fmt.Sprintf("No variable %q is declared.%s", name, didYouMean(name, slices.Sorted(maps.Keys(c.Variables)))))
		}
		return "var." + name, nil
	case "local":
		name, ok := attrStep(tr, 1)
		if !ok {
			return bad("Invalid reference", "A reference to a local value is written local.NAME.")
		}
		if _, ok := c.Locals[name]; !ok {
			return bad("Reference to undeclared local value", fmt.Sprintf("No local value %q is declared.%s", name, didYouMean(name, slices.Sorted(maps.Keys(c.Locals)))))
		}
		return "local." + name, nil
	case "model", "library", "runner":
		name, ok := attrStep(tr, 1)
		if !ok {
			return bad("Invalid reference", fmt.Sprintf("A reference to a %s block is written %s.NAME.", root, root))
		}
		if _, ok := c.Blocks[root+"."+name]; !ok {
			var names []string
			for k, b := range c.Blocks {
				if b.Kind == root {
					names = append(names, k[len(root)+1:])
				}
			}
			return bad("Reference to undeclared "+root, fmt.Sprintf("No %s %q is declared.%s", root, name, didYouMean(name, names)))
		}
		return root + "." + name, nil
	case "node":
		typ, ok1 := attrStep(tr, 1)
		name, ok2 := attrStep(tr, 2)
		if !ok1 || !ok2 {
			return bad("Invalid reference", "A reference to a node is written node.TYPE.NAME.")
		}
		addr := "node." + typ + "." + name
		if _, ok := c.Nodes[addr]; !ok {
			var names []string
			for k := range c.Nodes {
				names = append(names, k)
			}
			return bad("Reference to undeclared node", fmt.Sprintf("No node %s is declared.%s", addr, didYouMean(addr, names)))
		}
		if !rc.allowNodes {
			return bad("Invalid reference to a node", fmt.Sprintf("%s cannot refer to node outputs: they are not known until the pipeline runs.", rc.context))
		}
		return addr, nil
	case "each":
		if !rc.allowEach {
			return bad("Reference to \"each\" in context without for_each", "each.key and each.value are only available in a node block that sets for_each.")
		}
		if step, ok := attrStep(tr, 1); !ok || (step != "key" && step != "value") {
			return bad("Invalid each reference", "Use each.key or each.value.")
		}
		return "", nil
	case "path":
		if step, ok := attrStep(tr, 1); !ok || step != "root" {
			return bad("Invalid path reference", "The only path attribute is path.root, the pipeline directory.")
		}
		return "", nil
	}
	roots := append([]string{"var", "local", "node", "model", "library", "runner", "path", "each"}, rc.extraRoots...)
	return bad("Unknown variable", fmt.Sprintf("There is no variable named %q.%s", root, didYouMean(root, roots)))
}

func didYouMean(given string, candidates []string) string {
	if s := Suggest(given, candidates); s != "" {
		return fmt.Sprintf(" Did you mean %q?", s)
	}
	return ""
}

// evalExpr evaluates an expression with a context holding exactly what it
// references, so that evaluating one node of ten thousand costs what its
// own references cost.
func (e *evaluator) evalExpr(expr hcl.Expression, each *eachVals) (cty.Value, hcl.Diagnostics) {
	ctx, diags := e.ctxFor(expr.Variables(), each)
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	return expr.Value(ctx)
}

func (e *evaluator) ctxFor(traversals []hcl.Traversal, each *eachVals) (*hcl.EvalContext, hcl.Diagnostics) {
	flat := map[string]map[string]cty.Value{}
	nodeVals := map[string]map[string]cty.Value{}
	vars := map[string]cty.Value{}
	var diags hcl.Diagnostics
	for _, tr := range traversals {
		root := tr.RootName()
		switch root {
		case "var", "local", "model", "library", "runner":
			name, ok := attrStep(tr, 1)
			if !ok {
				continue
			}
			var v cty.Value
			var found bool
			switch root {
			case "var":
				v, found = e.vars[name]
			case "local":
				v, found = e.locals[name]
			default:
				v, found = e.blocks[root+"."+name]
			}
			if !found {
				v = cty.DynamicVal
			}
			if flat[root] == nil {
				flat[root] = map[string]cty.Value{}
			}
			flat[root][name] = v
		case "node":
			typ, ok1 := attrStep(tr, 1)
			name, ok2 := attrStep(tr, 2)
			if !ok1 || !ok2 {
				continue
			}
			v := cty.DynamicVal
			if nv, found := e.nodeVals["node."+typ+"."+name]; found {
				v = nv.value()
			}
			if nodeVals[typ] == nil {
				nodeVals[typ] = map[string]cty.Value{}
			}
			nodeVals[typ][name] = v
		case "each":
			if each != nil {
				vars["each"] = cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(each.key), "value": each.value})
			}
		case "path":
			vars["path"] = cty.ObjectVal(map[string]cty.Value{"root": cty.StringVal(e.cfg.Dir)})
		}
	}
	for root, m := range flat {
		vars[root] = cty.ObjectVal(m)
	}
	if len(nodeVals) > 0 {
		m := map[string]cty.Value{}
		for t, ns := range nodeVals {
			m[t] = cty.ObjectVal(ns)
		}
		vars["node"] = cty.ObjectVal(m)
	}
	return &hcl.EvalContext{Variables: vars, Functions: e.funcs}, diags
}

// convertTo converts v to ty, with the error text users should read.
func convertTo(v cty.Value, ty cty.Type) (cty.Value, error) {
	if ty == cty.DynamicPseudoType {
		return v, nil
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		return cty.NilVal, fmt.Errorf("%s", convertMessage(err))
	}
	return cv, nil
}

func convertMessage(err error) string {
	msg := err.Error()
	if pe, ok := err.(cty.PathError); ok && len(pe.Path) > 0 {
		return fmt.Sprintf("at %s: %s", formatPath(pe.Path), msg)
	}
	return msg
}

func formatPath(p cty.Path) string {
	var b strings.Builder
	for _, s := range p {
		switch s := s.(type) {
		case cty.GetAttrStep:
			b.WriteString("." + s.Name)
		case cty.IndexStep:
			if s.Key.Type() == cty.String {
				b.WriteString("[" + strconv.Quote(s.Key.AsString()) + "]")
			} else if s.Key.Type() == cty.Number {
				b.WriteString("[" + s.Key.AsBigFloat().Text('f', -1) + "]")
			}
		}
	}
	return strings.TrimPrefix(b.String(), ".")
}

func typeName(v cty.Value) string {
	if v.Type() == refType {
		return "an artifact reference"
	}
	return v.Type().FriendlyName()
}

func typeMismatch(attr *hcl.Attribute, want cty.Type, got cty.Value, err error) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Incorrect attribute value type",
		Detail:   fmt.Sprintf("Inappropriate value for attribute %q: %s required, got %s (%s).", attr.Name, typeexpr.TypeString(want), typeName(got), err),
		Subject:  attr.Expr.Range().Ptr(),
	}
}

// exprText is an expression's tokens with spaces and comments removed, so
// that reformatting a pipeline does not change any key.
func exprText(cfg *Config, expr hcl.Expression) string {
	rng := expr.Range()
	f, ok := cfg.Files[rng.Filename]
	if !ok || rng.End.Byte > len(f.Bytes) || rng.Start.Byte > rng.End.Byte {
		return ""
	}
	src := f.Bytes[rng.Start.Byte:rng.End.Byte]
	toks, _ := hclsyntax.LexExpression(src, rng.Filename, rng.Start)
	var b strings.Builder
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenNewline, hclsyntax.TokenComment, hclsyntax.TokenEOF:
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.Write(t.Bytes)
	}
	return b.String()
}
