package toolsense_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"

	_ "github.com/lacuna-dev/lacuna/nodes/generic"
	_ "github.com/lacuna-dev/lacuna/nodes/toolsense"
)

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// nodeErr is the error of a node that must have failed.
func nodeErr(t *testing.T, r *nodetest.Result, addr string) string {
	t.Helper()
	n, ok := r.Nodes[addr]
	if !ok {
		t.Fatalf("no node %s in the run", addr)
	}
	if n.Err == nil {
		t.Fatalf("%s succeeded, want an error", addr)
	}
	return n.Err.Error()
}

// configErr is the diagnostics of a pipeline that must not load.
func configErr(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	_, diags := engine.ExpandSource(filepath.Join(dir, "p.hcl"), []byte(src), dir, engine.Options{})
	if !diags.HasErrors() {
		t.Fatalf("pipeline loaded, want an error:\n%s", src)
	}
	return diags.Error()
}

func wantContains(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%q does not contain %q", got, w)
		}
	}
}
