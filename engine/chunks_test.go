package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
)

// shape summarises a load: diagnostics, and every instance with its
// canonical config, so that two ways of parsing can be compared.
func shape(t testing.TB, name string, src []byte) string {
	g, diags := loadAndExpand(name, src, Options{})
	var b strings.Builder
	for _, d := range diags {
		fmt.Fprintf(&b, "diag %s %s\n", d.Summary, d.Subject)
	}
	if g != nil {
		for _, i := range g.Instances {
			cfg, _ := canonicalConfig(i, func(a string) artifacts.Digest { return artifacts.Digest(a) })
			fmt.Fprintf(&b, "%s %s\n", i.Addr, cfg)
		}
	}
	return b.String()
}

// withChunks parses with chunking forced at every top-level line break.
func withChunks(t testing.TB, name string, src []byte) string {
	old := chunkMin
	chunkMin = 1
	defer func() { chunkMin = old }()
	return shape(t, name, src)
}

const tricky = `
# braces in comments: { [ ( and "quotes
locals {
  doc = <<EOT
  a heredoc with } and ] and "unbalanced
  and ${local.n} interpolation
EOT
  indented = <<-X
    }
    X
  s = "a \" quoted } brace and $${not interpolation} and %%{literal}"
  t = "nested ${jsonencode({ a = "}", b = [1, 2] })} done"
  n = 3
}
/* a block comment
   with { braces } across lines */
node "import" "a" { path = "${local.n}.jsonl" } // trailing } comment

node "sample" "s" {
  for_each = { x = 1, y = 2 }
  input    = node.import.a
  n        = each.value
  seed     = length(local.doc) + length(local.s) + length(local.t) + length(local.indented)
}
`

func TestChunkedParseMatchesWholeFileParse(t *testing.T) {
	inputs := map[string][]byte{"tricky.hcl": []byte(tricky)}
	files, _ := filepath.Glob("testdata/bad/*.hcl") // slowByDesign included: FuzzLoad leaves them to this test
	files = append(files, "../pipelines/examples/toolsense_data.hcl")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		inputs[f] = b
	}
	for name, src := range inputs {
		whole, chunked := shape(t, name, src), withChunks(t, name, src)
		if whole != chunked {
			t.Errorf("%s: chunked parse differs\nwhole:\n%s\nchunked:\n%s", name, whole, chunked)
		}
	}
	old := chunkMin
	chunkMin = 1
	defer func() { chunkMin = old }()
	cuts := topLevelCuts([]byte(tricky))
	if len(cuts) < 4 {
		t.Errorf("%d cuts in a file of several top-level blocks", len(cuts))
	}
	for _, c := range cuts {
		rest := tricky[c.Byte:]
		ok := false
		for _, p := range []string{"node", "locals", "/*", "#", "\n"} {
			ok = ok || strings.HasPrefix(rest, p)
		}
		if !ok {
			t.Errorf("cut inside something at line %d: %q", c.Line, rest[:min(30, len(rest))])
		}
		if got := strings.Count(tricky[:c.Byte], "\n") + 1; got != c.Line {
			t.Errorf("cut at byte %d says line %d, is line %d", c.Byte, c.Line, got)
		}
	}
}
