package generic

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
)

// editedImport is import, with the file saved again right after Resolve
// read it: the moment at which an unpinned import would cache the new
// content under the old content's key.
type editedImport struct{ importType }

var editAfterResolve func(path string)

func (editedImport) Name() string { return "import_edited_after_resolve" }
func (t editedImport) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	p, err := t.importType.Resolve(ctx, r)
	if err == nil && editAfterResolve != nil {
		editAfterResolve(r.Config().(*importConfig).abs(r.Dir()))
	}
	return p, err
}

func init() { nodes.Register(editedImport{}) }

func TestImportEditedAfterResolveIsNotCachedUnderTheOldKey(t *testing.T) {
	for _, tc := range []struct{ name, file, before, after string }{
		{"jsonl", "t.jsonl", `{"a": 1}` + "\n", `{"a": 2}` + "\n"},
		{"csv", "t.csv", "a\n1\n", "a\n2\n"},
		{"declared columns", "t.jsonl", `{"a": 1}` + "\n", `{"a": 2}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			if err := os.WriteFile(path, []byte(tc.before), 0o644); err != nil {
				t.Fatal(err)
			}
			editAfterResolve = func(p string) {
				if err := os.WriteFile(p, []byte(tc.after), 0o644); err != nil {
					t.Error(err)
				}
			}
			defer func() { editAfterResolve = nil }()
			cols := ""
			if tc.name == "declared columns" {
				cols = `columns = { a = "int64" }`
			}
			src := `node "import_edited_after_resolve" "t" {
  path = "` + tc.file + `"
  ` + cols + `
}`
			res := nodetest.RunErr(t, dir, src)
			n := res.Nodes["node.import_edited_after_resolve.t"]
			if n.Err == nil || !strings.Contains(n.Err.Error(), "changed while it was imported") {
				t.Fatalf("want the edit detected, got state %v, err %v", n.State, n.Err)
			}
			// Nothing was cached: the next run imports the new content.
			editAfterResolve = nil
			res = nodetest.RunErr(t, dir, src)
			if n := res.Nodes["node.import_edited_after_resolve.t"]; n.Err != nil || n.State != "done" {
				t.Fatalf("second run: %v %v", n.State, n.Err)
			}
		})
	}
}
