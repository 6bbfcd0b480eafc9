package engine

import (
	"fmt"
	"testing"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// The linear conversions must give what go-cty's general ones give.
func TestCollectionConversionsMatchGoCty(t *testing.T) {
	strs := cty.TupleVal([]cty.Value{cty.StringVal("b"), cty.StringVal("a"), cty.StringVal("b")})
	mixed := cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NumberIntVal(1)})
	objs := cty.TupleVal([]cty.Value{
		cty.ObjectVal(map[string]cty.Value{"m": cty.StringVal("x")}),
		cty.ObjectVal(map[string]cty.Value{"m": cty.StringVal("y")}),
	})
	attrs := cty.ObjectVal(map[string]cty.Value{"a": cty.NumberIntVal(1), "b": cty.NumberIntVal(2)})
	mixedAttrs := cty.ObjectVal(map[string]cty.Value{"a": cty.NumberIntVal(1), "b": cty.StringVal("2")})
	list := cty.ListVal([]cty.Value{cty.StringVal("x")})
	funcs := functions(".")
	for _, c := range []struct {
		fn   string
		want cty.Type
		arg  cty.Value
	}{
		{"toset", cty.Set(cty.DynamicPseudoType), strs},
		{"toset", cty.Set(cty.DynamicPseudoType), mixed},
		{"toset", cty.Set(cty.DynamicPseudoType), objs},
		{"toset", cty.Set(cty.DynamicPseudoType), list},
		{"toset", cty.Set(cty.DynamicPseudoType), cty.EmptyTupleVal},
		{"tolist", cty.List(cty.DynamicPseudoType), strs},
		{"tolist", cty.List(cty.DynamicPseudoType), mixed},
		{"tomap", cty.Map(cty.DynamicPseudoType), attrs},
		{"tomap", cty.Map(cty.DynamicPseudoType), mixedAttrs},
		{"tomap", cty.Map(cty.DynamicPseudoType), cty.EmptyObjectVal},
		{"toset", cty.Set(cty.DynamicPseudoType), cty.UnknownVal(cty.Tuple([]cty.Type{cty.String}))},
	} {
		t.Run(fmt.Sprintf("%s(%s)", c.fn, c.arg.GoString()), func(t *testing.T) {
			want, werr := stdlib.MakeToFunc(c.want).Call([]cty.Value{c.arg})
			got, gerr := funcs[c.fn].Call([]cty.Value{c.arg})
			if (werr != nil) != (gerr != nil) {
				t.Fatalf("error %v, go-cty's %v", gerr, werr)
			}
			if werr == nil && !got.RawEquals(want) {
				t.Errorf("got %#v, go-cty gives %#v", got, want)
			}
		})
	}
}

func TestSetProductMatchesGoCtyAndIsBounded(t *testing.T) {
	a := cty.TupleVal([]cty.Value{cty.StringVal("m1"), cty.StringVal("m2")})
	b := cty.ListVal([]cty.Value{cty.StringVal("c1"), cty.StringVal("c2"), cty.StringVal("c3")})
	want, err := stdlib.SetProductFunc.Call([]cty.Value{a, b})
	if err != nil {
		t.Fatal(err)
	}
	got, err := setProductFunc.Call([]cty.Value{a, b})
	if err != nil || !got.RawEquals(want) {
		t.Errorf("setproduct = %#v, %v; go-cty gives %#v", got, err, want)
	}
	big, _ := rangeFunc.Call([]cty.Value{cty.NumberIntVal(1001)})
	if _, err := setProductFunc.Call([]cty.Value{big, big}); err == nil {
		t.Error("setproduct of 1001 × 1001 elements was built")
	}
}

// BenchmarkForEachSpellings expands a 100,000-instance sweep spelled in
// each way a pipeline may: every one must stay linear.
func BenchmarkForEachSpellings(b *testing.B) {
	const n = 100000
	for name, fe := range map[string]string{
		"range":        fmt.Sprintf("range(%d)", n),
		"toset_tuple":  fmt.Sprintf(`toset([for i in range(%d) : "k-${i}"])`, n),
		"toset_list":   fmt.Sprintf(`toset(formatlist("k-%%d", range(%d)))`, n),
		"for_map":      fmt.Sprintf(`{for i in range(%d) : "k-${i}" => i}`, n),
		"tomap_object": fmt.Sprintf(`tomap({for i in range(%d) : "k-${i}" => i})`, n),
		"setproduct":   `setproduct([for i in range(316) : "a${i}"], [for i in range(316) : "b${i}"])`,
	} {
		src := fmt.Sprintf("node \"import\" \"a\" {\n  for_each = %s\n  path = \"x.jsonl\"\n}\n", fe)
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, diags := ExpandSource("b.hcl", []byte(src), b.TempDir(), Options{}); diags.HasErrors() {
					b.Fatal(diags.Error())
				}
			}
		})
	}
}
