package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/zclconf/go-cty/cty"
)

// keydocConfig holds every kind of key material STORE.md describes.
type keydocConfig struct {
	Text    string            `hcl:"text"`
	Count   int64             `hcl:"count,optional"`
	Ratio   *float64          `hcl:"ratio,optional"`
	Big     float64           `hcl:"big,optional"`
	Flag    bool              `hcl:"flag,optional"`
	Missing *string           `hcl:"missing,optional"`
	List    []string          `hcl:"list,optional"`
	Empty   []int64           `hcl:"empty,optional"`
	Labels  map[string]string `hcl:"labels,optional"`
	Input   nodes.Ref         `hcl:"input,optional"`
	Inputs  []nodes.Ref       `hcl:"inputs,optional"`
	Extra   cty.Value         `hcl:"extra,optional"`
	Where   nodes.Expr        `hcl:"where,optional" roots:"row"`
	// Attributes added later, absent from the key while unset.
	Later   *bool   `hcl:"later,optional" key:"omitnull"`
	LaterOn *string `hcl:"later_on,optional" key:"omitnull"`
}

type keydocType struct{}

func (keydocType) Name() string    { return "keydoc" }
func (keydocType) Version() string { return "3" }
func (keydocType) NewConfig() any  { return &keydocConfig{} }
func (keydocType) Run(context.Context, nodes.Run) error {
	return errors.New("keydoc only computes keys")
}

func init() { nodes.Register(keydocType{}) }

// docNumber is a number already written as STORE.md says HCL numbers are.
type docNumber string

// docJSON encodes v by STORE.md's rules for canonical configs. It is
// written from the document, apart from the production encoder.
func docJSON(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		if v {
			return "true"
		}
		return "false"
	case string:
		var b strings.Builder
		b.WriteByte('"')
		for _, c := range []byte(v) {
			switch {
			case c == '"':
				b.WriteString(`\"`)
			case c == '\\':
				b.WriteString(`\\`)
			case c <= 0x1f:
				fmt.Fprintf(&b, `\u%04x`, c)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('"')
		return b.String()
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		if v == 0 {
			return "0"
		}
		return new(big.Float).SetFloat64(v).Text('f', -1) // shortest at float64 precision
	case docNumber:
		return string(v)
	case []any:
		parts := make([]string, len(v))
		for i, el := range v {
			parts[i] = docJSON(el)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[string]any:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, docJSON(k)+":"+docJSON(v[k]))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	panic(fmt.Sprintf("docJSON: %T", v))
}

// docKey is the action key by STORE.md's rules.
func docKey(nodeType, version, config string, identity map[string]string) artifacts.Digest {
	s := "lacuna-action-v2\x00" + nodeType + "\x00" + version + "\x00" + config + "\x00"
	for _, k := range slices.Sorted(maps.Keys(identity)) {
		s += k + "=" + identity[k] + "\x00"
	}
	return artifacts.Digest(fmt.Sprintf("%016x", xxhash.Sum64String(s)))
}

func TestActionKeyFollowsStoreDocument(t *testing.T) {
	const src = `
variable "min" { default = 0.25 }
locals { tiers = toset(["b", "a", "c"]) }
node "rows" "a" { values = [1, 2] }
node "rows" "b" { values = [3] }
node "keydoc" "k" {
  text   = "quote \" backslash \\ nl \n tab \t bell \u0007 lt < gt > amp & ls \u2028 ps \u2029 del \u007f é 日本 😀"
  count  = -42
  ratio  = 1e-7
  big    = 1e21
  flag   = true
  list   = ["x", "", "y\"z"]
  empty  = []
  labels = { b = "2", a = "1 <&>", "é" = "3", B = "4" }
  input  = node.rows.a
  inputs = [node.rows.b, node.rows.a]
  extra  = {
    name     = "lib <&> \u2028"
    versions = ["1.0", "2.0"]
    n        = 0.1
    neg      = -0
    pi       = 3.14159
    big      = 12345678901234567890
    ok       = false
    none     = null
    tiers    = local.tiers
  }
  where = row.score >= var.min || length(local.tiers) > 0 # the captured values count
  later_on = "set"
}
`
	dir := t.TempDir()
	g, diags := ExpandSource(filepath.Join(dir, "p.hcl"), []byte(src), dir, Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var inst *Instance
	for _, i := range g.Instances {
		if i.Addr == "node.keydoc.k" {
			inst = i
		}
	}
	digests := map[string]artifacts.Digest{"node.rows.a": "aaaaaaaaaaaaaaaa", "node.rows.b": "bbbbbbbbbbbbbbbb"}
	got, err := canonicalConfig(inst, func(addr string) artifacts.Digest { return digests[addr] })
	if err != nil {
		t.Fatal(err)
	}

	ref := func(d string) any { return map[string]any{"artifact": d} }
	tagged := func(typ, val any) any { return map[string]any{"type": typ, "value": val} }
	tiers := []any{"a", "b", "c"} // a set of strings: byte order
	want := docJSON(map[string]any{
		"text":    "quote \" backslash \\ nl \n tab \t bell \a lt < gt > amp & ls \u2028 ps \u2029 del \x7f é 日本 😀",
		"count":   int64(-42),
		"ratio":   1e-7,
		"big":     1e21,
		"flag":    true,
		"missing": nil,
		"list":    []any{"x", "", `y"z`},
		"empty":   []any{},
		"labels":  map[string]any{"b": "2", "a": "1 <&>", "é": "3", "B": "4"},
		"input":   ref("aaaaaaaaaaaaaaaa"),
		"inputs":  []any{ref("bbbbbbbbbbbbbbbb"), ref("aaaaaaaaaaaaaaaa")},
		"extra": tagged(
			[]any{"object", map[string]any{
				"name": "string", "versions": []any{"tuple", []any{"string", "string"}}, "n": "number",
				"neg": "number", "pi": "number", "big": "number", "ok": "bool", "none": "dynamic",
				"tiers": []any{"set", "string"},
			}},
			map[string]any{
				"name": "lib <&> \u2028", "versions": []any{"1.0", "2.0"}, "n": docNumber("0.1"),
				"neg": docNumber("0"), "pi": docNumber("3.14159"), "big": docNumber("12345678901234567890"),
				"ok": false, "none": nil, "tiers": tiers,
			}),
		"later_on": "set", // later, unset, is absent
		"where": map[string]any{
			"expr": "row . score >= var . min || length ( local . tiers ) > 0",
			"with": map[string]any{
				"local": tagged([]any{"object", map[string]any{"tiers": []any{"set", "string"}}}, map[string]any{"tiers": tiers}),
				"var":   tagged([]any{"object", map[string]any{"min": "number"}}, map[string]any{"min": docNumber("0.25")}),
			},
		},
	})
	if string(got) != want {
		t.Fatalf("canonical config differs from STORE.md's rules:\n code: %s\n doc:  %s", got, want)
	}
	// The rules themselves, spelled out: one escaping for every string.
	for _, frag := range []string{`nl \u000a tab \u0009 bell \u0007 lt < gt > amp & ls ` + "\u2028", `"a":"1 <&>"`, `"name":"lib <&> ` + "\u2028" + `"`, `"big":1000000000000000000000`, `"ratio":0.0000001`} {
		if !strings.Contains(string(got), frag) {
			t.Errorf("canonical config lacks %s:\n%s", frag, got)
		}
	}

	identity := map[string]string{"go": "go1.26.8", "file": "0123456789abcdef", "a=b": "c"}
	if key, doc := actionKey(inst, got, identity), docKey("keydoc", "3", want, identity); key != doc {
		t.Errorf("action key %s, STORE.md's rules give %s", key, doc)
	}
}
