package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
)

// values(node.TYPE.NAME) of a for_each block is assigned from the
// instances without evaluating the call (fanIn). Spelled so that go-cty
// evaluates it (inside concat), every instance must get the same
// references in the same order, the same inputs and the same key: keys
// that sort differently from their quoted addresses ("a!" before "a" as
// addresses), numbers, unicode, an empty sweep, a fan-in beside a direct
// reference into the same sweep, and a fan-in on every instance of
// another sweep.
func TestValuesFanInMatchesTheEvaluatedCall(t *testing.T) {
	for _, tc := range []struct{ name, forEach, concat string }{
		{"awkward keys", `toset(["a", "a!", "a\"b", "a b", "10", "9", "é", "Z", ""])`, `inputs = %s`},
		{"range", `range(300)`, `inputs = %s`},
		{"a map", `{ x = 1, y = 2, w = 3 }`, `inputs = %s`},
		{"no instances", `toset([])`, `inputs = concat(%s, [node.import.g])`},
		{"beside a direct reference", `toset(["a", "a!", "b"])`, `inputs = concat(%s, [node.import.f["a!"]])`},
		{"on every instance of a sweep", `toset(["p", "q!", "q"])`, "for_each = toset([\"1\", \"2\"])\n  inputs = %s"},
		{"no instances (an error of concat's)", `toset([])`, `inputs = %s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			graph := func(values string) []string {
				t.Helper()
				src := `
node "import" "f" {
  for_each = ` + tc.forEach + `
  path     = "${each.key}.jsonl"
}
node "import" "g" { path = "g.jsonl" }
node "concat" "all" {
  ` + fmt.Sprintf(tc.concat, values) + `
}`
				g, diags := loadAndExpand("t.hcl", []byte(src), Options{})
				if diags.HasErrors() {
					return []string{diagText(diags)}
				}
				digest := func(addr string) artifacts.Digest { return artifacts.Digest(fmt.Sprintf("%016x", len(addr)*7919)) }
				var out []string
				for _, i := range g.Instances {
					var in []string
					for _, x := range i.Inputs {
						in = append(in, x.Addr)
					}
					cfg, err := canonicalConfig(i, digest)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, fmt.Sprintf("%s %+v inputs=%q key=%s", i.Addr, i.Config, in, actionKey(i, cfg, nil)))
				}
				return out
			}
			fast, generic := graph("values(node.import.f)"), graph("concat(values(node.import.f))")
			if strings.Join(fast, "\n") != strings.Join(generic, "\n") {
				t.Errorf("values(...) gives\n%s\nevaluated, it gives\n%s", strings.Join(fast, "\n"), strings.Join(generic, "\n"))
			}
		})
	}
}

// values() of a block without for_each is not a fan-in: the call is
// evaluated and its error reported at the attribute, as before.
func TestValuesOfASingleNodeIsAnError(t *testing.T) {
	src := `
node "import" "one" { path = "a.jsonl" }
node "import" "g" { path = "g.jsonl" }
node "concat" "all" { inputs = values(node.import.one) }`
	_, diags := loadAndExpand("t.hcl", []byte(src), Options{})
	if !diags.HasErrors() || !strings.Contains(diagText(diags), "values() requires a map") {
		t.Errorf("got %s, want values()'s own error", diagText(diags))
	}
}
