package engine

import (
	"path/filepath"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
)

// BenchmarkCanonicalConfig is the key encoding of one instance with
// strings, numbers, a list, a map and input references (done for every
// instance on every run).
func BenchmarkCanonicalConfig(b *testing.B) {
	dir := b.TempDir()
	src := `node "rows" "a" { values = [1, 2, 3] }
node "rows" "b" {
  inputs   = [node.rows.a, node.rows.a]
  add      = 12345
  fail     = "a <b> & \"c\" \u2028 é"
  sleep_ms = 5
  extra    = { note = "hello", path = "data/x.jsonl", n = "7" }
}`
	g, diags := ExpandSource(filepath.Join(dir, "p.hcl"), []byte(src), dir, Options{})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	inst := g.Instances[len(g.Instances)-1]
	digest := func(string) artifacts.Digest { return "0123456789abcdef" }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := canonicalConfig(inst, digest); err != nil {
			b.Fatal(err)
		}
	}
}
