package engine

import (
	"fmt"
	"reflect"
	"testing"
)

// A large for_each is decoded on several goroutines (run with -race): every
// instance must still get its own each and the block's shared values.
func TestLargeForEachDecodesEveryInstanceWithItsOwnKey(t *testing.T) {
	const n = 5000
	src := fmt.Sprintf(`
locals { prefix = "p" }
node "import" "a" {
  for_each = toset([for i in range(%d) : "k-${i}"])
  path     = "${local.prefix}-${each.key}.jsonl"
  format   = "jsonl"
}
`, n)
	g, diags := ExpandSource("big.hcl", []byte(src), t.TempDir(), Options{})
	if diags.HasErrors() {
		t.Fatal(diagText(diags))
	}
	if len(g.Instances) != n {
		t.Fatalf("%d instances, want %d", len(g.Instances), n)
	}
	for _, i := range g.Instances {
		k, _ := i.Address.Key.Value()
		cfg := reflect.ValueOf(i.Config).Elem()
		if path := cfg.FieldByName("Path").String(); path != "p-"+k+".jsonl" {
			t.Fatalf("%s: path %q", i.Addr, path)
		}
		if f := cfg.FieldByName("Format").String(); f != "jsonl" {
			t.Fatalf("%s: format %q", i.Addr, f)
		}
	}
}
