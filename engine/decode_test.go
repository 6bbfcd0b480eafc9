package engine

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/zclconf/go-cty/cty"
)

func TestEachValueMatchesOrdinaryEvaluation(t *testing.T) {
	each := &eachVals{key: "k1", value: cty.ObjectVal(map[string]cty.Value{
		"model": cty.StringVal("m"),
		"cells": cty.ListVal([]cty.Value{cty.NumberIntVal(3), cty.NumberIntVal(4)}),
		"by":    cty.MapVal(map[string]cty.Value{"a": cty.True}),
	})}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(each.key), "value": each.value}), "var": cty.ObjectVal(map[string]cty.Value{"x": cty.StringVal("v")})}}
	for _, tc := range []struct {
		src  string
		fast bool // answered without a context
	}{
		{"each.key", true},
		{"each.value", true},
		{"each.value.model", true},
		{"each.value.cells[1]", true},
		{`each.value.by["a"]`, true},
		{"each.value.missing", false}, // an error: evaluated the ordinary way
		{"each.other", false},
		{"var.x", false},
		{`"${each.key}-x"`, false},
		{"each.value.cells[0] + 1", false},
	} {
		expr, diags := hclsyntax.ParseExpression([]byte(tc.src), "t.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		got, ok := eachValue(expr, each)
		if ok != tc.fast {
			t.Errorf("%s: answered without a context = %v, want %v", tc.src, ok, tc.fast)
			continue
		}
		if !ok {
			continue
		}
		want, diags := expr.Value(ctx)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if !got.RawEquals(want) {
			t.Errorf("%s = %#v, want %#v", tc.src, got, want)
		}
	}
	if _, ok := eachValue(&hclsyntax.ScopeTraversalExpr{Traversal: hcl.Traversal{hcl.TraverseRoot{Name: "each"}, hcl.TraverseAttr{Name: "key"}}}, nil); ok {
		t.Error("each.key outside a for_each was answered")
	}
}

// TestNullLeavesAnOptionalReferenceUnset: an optional reference set to
// null, directly or by a conditional's other branch, is the attribute
// left out: no input, the same canonical config (and key).
func TestNullLeavesAnOptionalReferenceUnset(t *testing.T) {
	h := newHarness(t)
	digest := func(string) artifacts.Digest { return "0123456789abcdef" }
	var want string
	for i, attr := range []string{"", "input = null", "input = false ? node.keydoc.x : null", "input = true ? node.keydoc.x : null"} {
		g := h.graph("node \"keydoc\" \"x\" { text = \"x\" }\nnode \"keydoc\" \"y\" {\n  text = \"y\"\n  " + attr + "\n}\n")
		for _, inst := range g.Instances {
			if inst.Addr != "node.keydoc.y" {
				continue
			}
			cfg, err := canonicalConfig(inst, digest)
			if err != nil {
				t.Fatal(err)
			}
			set := inst.Config.(*keydocConfig).Input.Node != ""
			switch {
			case i == 0:
				want = string(cfg)
			case i == 3:
				if !set || len(inst.Inputs) != 1 || string(cfg) == want {
					t.Errorf("%q: input %q, %d inputs, config %s: want node.keydoc.x", attr, inst.Config.(*keydocConfig).Input.Node, len(inst.Inputs), cfg)
				}
			case set || len(inst.Inputs) != 0 || string(cfg) != want:
				t.Errorf("%q: input %q, %d inputs, config %s, want those of no input: %s", attr, inst.Config.(*keydocConfig).Input.Node, len(inst.Inputs), cfg, want)
			}
		}
	}
}
