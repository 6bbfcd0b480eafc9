package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
)

// An action entry lists its blobs: gc keeps those of the actions it
// keeps and deletes the rest; a listed blob that is lost makes fsck
// remove the entry, and the next run recomputes the node.
func TestGCAndFsckFollowTheBlobsOfActions(t *testing.T) {
	dir := benchDAG(t, 3)
	if r := lacuna(t, dir, "run", "pipeline.hcl"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	want := digests(t, dir)
	r := lacuna(t, dir, "show", "pipeline.hcl", "node.sample.s1", "--json")
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("show --json: %v %s", err, r.stdout)
	}
	key := artifacts.Digest(m["action"].(map[string]any)["key"].(string))

	st, err := artifacts.Open(filepath.Join(dir, ".lacuna"))
	if err != nil {
		t.Fatal(err)
	}
	listed, err1 := st.PutBlob(strings.NewReader("adapter weights"))
	stray, err2 := st.PutBlob(strings.NewReader("written by an interrupted run"))
	a, err3 := st.GetAction(key)
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatal(err1, err2, err3)
	}
	a.Blobs = []artifacts.Digest{listed}
	if err := st.PutAction(a); err != nil {
		t.Fatal(err)
	}

	if r := lacuna(t, dir, "gc", "pipeline.hcl"); r.code != 0 || !strings.Contains(r.stdout, "\nremoved 0 actions, 0 objects, 1 blobs") || !strings.Contains(r.stdout, "kept 5 actions, 5 objects, 1 blobs") {
		t.Errorf("gc: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if !st.HasBlob(listed) || st.HasBlob(stray) {
		t.Errorf("after gc: listed blob present %v, stray blob present %v", st.HasBlob(listed), st.HasBlob(stray))
	}

	if err := os.Remove(st.BlobPath(listed)); err != nil {
		t.Fatal(err)
	}
	problem := "missing-blob " + string(key) + ": node.sample.s1: blob " + string(listed) + " is missing or corrupt"
	if f := lacuna(t, dir, "fsck", "--dry-run"); f.code != 1 || !strings.Contains(f.stdout, problem+"\n") {
		t.Errorf("fsck --dry-run: %d %s", f.code, f.stdout)
	}
	if f := lacuna(t, dir, "fsck"); f.code != 1 || !strings.Contains(f.stdout, problem+" (removed; the next run recomputes it)") {
		t.Errorf("fsck: %d %s", f.code, f.stdout)
	}
	if r := lacuna(t, dir, "run", "pipeline.hcl", "--json"); r.code != 0 || summary(t, r.stdout)["executed"] != 1.0 {
		t.Errorf("run after fsck: %s %s", r.stdout, r.stderr)
	}
	if got := digests(t, dir); got["node.sample.s1"] != want["node.sample.s1"] {
		t.Error("the recomputed node has other rows")
	}
	if f := lacuna(t, dir, "fsck"); f.code != 0 {
		t.Errorf("fsck after the re-run: %s", f.stdout)
	}
}
