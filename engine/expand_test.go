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

// for_each = range(...) of whole numbers is expanded without building the
// list; its instances, their order, keys and values must be those of the
// list itself (reached here through a local, which takes go-cty's path),
// and what the fast path does not take (fractions, empty, errors) must
// read the same too.
func TestForEachOverRangeMatchesTheList(t *testing.T) {
	for _, args := range []string{
		"5", "2, 7", "10, 0, -3", "-3", "3, 3", "0", "0, 1, 0.25", "1.5, 4",
		"0, 10, 0", "0, 2000000", `"4"`, "var.n", "var.n, 0, -1",
	} {
		t.Run(args, func(t *testing.T) {
			instances := func(forEach string) string {
				t.Helper()
				src := `
variable "n" { default = 4 }
node "import" "f" {
  for_each = ` + forEach + `
  path     = "${each.key}|${each.value}.jsonl"
}`
				if forEach == "local.r" {
					src += "\nlocals { r = range(" + args + ") }\n"
				}
				g, diags := loadAndExpand("t.hcl", []byte(src), Options{})
				if diags.HasErrors() {
					return diagText(diags)
				}
				var out []string
				for _, i := range g.Instances {
					out = append(out, fmt.Sprintf("%s %+v", i.Addr, i.Config))
				}
				return strings.Join(out, "\n")
			}
			fast, generic := instances("range("+args+")"), instances("local.r")
			// An error names the expression it is in: the same
			// message at another line.
			if strings.Contains(generic, "Error in function call") {
				fast, generic = fast[strings.Index(fast, ":"):], generic[strings.Index(generic, ":"):]
			}
			if fast != generic {
				t.Errorf("range(...) gives\n%s\nthe list gives\n%s", fast, generic)
			}
		})
	}
}

// A value every instance of a sweep shares is converted once and copied:
// each instance still gets its own copy (a pointer field its own target),
// so a node that changes its config changes no other instance's.
func TestSharedValuesAreCopiedPerInstance(t *testing.T) {
	src := `
node "import" "data" { path = "data.jsonl" }
node "sample" "s" {
  for_each = range(3)
  input    = node.import.data
  n        = 5
  by       = "id"
  seed     = each.value
}`
	g, diags := loadAndExpand("t.hcl", []byte(src), Options{})
	if diags.HasErrors() {
		t.Fatal(diagText(diags))
	}
	seen := map[uintptr]bool{}
	for _, i := range g.Instances[1:] {
		cfg := reflect.ValueOf(i.Config).Elem()
		n := cfg.FieldByName("N")
		if n.IsNil() || n.Elem().Int() != 5 || cfg.FieldByName("By").String() != "id" {
			t.Fatalf("%s: %+v", i.Addr, i.Config)
		}
		if seen[n.Pointer()] {
			t.Errorf("%s shares its n with another instance", i.Addr)
		}
		seen[n.Pointer()] = true
	}
}
