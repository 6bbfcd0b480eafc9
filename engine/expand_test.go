package engine

import (
	"fmt"
	"reflect"
	"strings"
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

// for_each = toset(LIST) is read without building the set; its instances,
// their order, keys and values must be those of the set itself (reached
// here through a local, which takes go-cty's path).
func TestForEachOverTosetMatchesTheSet(t *testing.T) {
	for _, list := range []string{
		`["b", "a", "b", "c"]`,
		`[for i in range(30) : "k-${i % 7}"]`,
		`[]`,
		`["x", 1]`, // not all strings: toset converts, the generic path
		`["é", "e\u0301", "Z", ""]`,
	} {
		t.Run(list, func(t *testing.T) {
			instances := func(forEach string) []string {
				t.Helper()
				src := `
locals { set = toset(` + list + `) }
node "import" "f" {
  for_each = ` + forEach + `
  path     = "${each.key}|${each.value}.jsonl"
}`
				g, diags := loadAndExpand("t.hcl", []byte(src), Options{})
				if diags.HasErrors() {
					t.Fatal(diagText(diags))
				}
				var out []string
				for _, i := range g.Instances {
					out = append(out, fmt.Sprintf("%s %+v", i.Addr, i.Config))
				}
				return out
			}
			fast, generic := instances("toset("+list+")"), instances("local.set")
			if strings.Join(fast, "\n") != strings.Join(generic, "\n") {
				t.Errorf("toset(...) gives\n%s\nthe set gives\n%s", strings.Join(fast, "\n"), strings.Join(generic, "\n"))
			}
		})
	}
}
