package parametric_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	_ "github.com/lacuna-dev/lacuna/nodes/generic"
	_ "github.com/lacuna-dev/lacuna/nodes/parametric"
)

// The config errors of train, edit and edit_stats, each at its
// attribute's file:line:col, before anything runs.
func TestConfigErrorsNameTheAttribute(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "m"), 0o755)
	os.WriteFile(filepath.Join(dir, "m", "config.json"), []byte("{}"), 0o644)
	head := "node \"import\" \"d\" { path = \"d.jsonl\" }\n"
	for _, c := range []struct {
		name, body, want string
	}{
		{"no base", `node "train" "x" { data = node.import.d }`, "No base model"},
		{"two bases", `node "train" "a" {
  base = "m"
  data = node.import.d
}
node "train" "x" {
  base = "m"
  from = node.train.a
  data = node.import.d
}`, "Two base models"},
		{"method", `node "train" "x" {
  base   = "m"
  data   = node.import.d
  method = "qlora"
}`, "Unknown method"},
		{"merge full", `node "train" "x" {
  base   = "m"
  data   = node.import.d
  method = "full"
  merge  = true
}`, "Nothing to merge"},
		{"rank on full", `node "train" "x" {
  base   = "m"
  data   = node.import.d
  method = "full"
  rank   = 8
}`, "LoRA settings on full fine-tuning"},
		{"rank", `node "train" "x" {
  base = "m"
  data = node.import.d
  rank = 0
}`, "Invalid rank"},
		{"lr", `node "train" "x" {
  base          = "m"
  data          = node.import.d
  learning_rate = 2
}`, "Invalid learning_rate"},
		{"edit method", `node "edit" "x" {
  base     = "m"
  method   = "rome"
  requests = node.import.d
}`, "Unknown method"},
		{"memit without stats", `node "edit" "x" {
  base     = "m"
  method   = "memit"
  requests = node.import.d
}`, "Statistics needed"},
		{"grace with stats", `node "edit" "x" {
  base     = "m"
  method   = "grace"
  requests = node.import.d
  stats    = node.import.d
}`, "GRACE uses no statistics"},
		{"grace two layers", `node "edit" "x" {
  base     = "m"
  method   = "grace"
  requests = node.import.d
  layers   = [1, 2]
}`, "GRACE edits one layer"},
		{"stats layers", `node "edit_stats" "x" {
  base   = "m"
  corpus = node.import.d
  layers = [1, 1]
}`, "Invalid layers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, diags := engine.ExpandSource(filepath.Join(dir, "p.hcl"), []byte(head+c.body+"\n"), dir, engine.Options{})
			if !diags.HasErrors() || !strings.Contains(diags.Error(), c.want) || !strings.Contains(diags.Error(), "p.hcl:") {
				t.Errorf("got %v, want an error at p.hcl:LINE:COL saying %q", diags, c.want)
			}
		})
	}
}
