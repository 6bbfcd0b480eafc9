package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
)

// An action entry edited to point at another node's output is never
// served: the read through it fails naming the action, the entry is
// dropped, and the next run recomputes the right rows.
func TestForgedActionEntryIsNotServedDownstream(t *testing.T) {
	const src = `
node "rows" "a" { values = [1, 2] }
node "rows" "b" { values = [7, 8, 9] }
node "rows" "c" { inputs = [node.rows.a] }
`
	h := newHarness(t)
	_, res, err := h.run(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	byAddr := map[string]*Result{}
	for i, r := range res {
		byAddr[i.Addr] = r
	}
	a, b := byAddr["node.rows.a"], byAddr["node.rows.b"]
	forged, err := h.store.GetAction(a.Key)
	if err != nil {
		t.Fatal(err)
	}
	forged.Output = b.Output
	if err := h.store.PutAction(forged); err != nil {
		t.Fatal(err)
	}
	// Without its snapshot the run looks every key up in ac/.
	snaps, _ := filepath.Glob(filepath.Join(h.store.Root(), "names", "*.tsv"))
	for _, p := range snaps {
		os.Remove(p)
	}

	_, _, err = h.run(src, nil)
	if err == nil || !strings.Contains(err.Error(), "failed") {
		t.Fatalf("run over a forged entry: %v, want the reading node to fail", err)
	}
	if _, err := h.store.GetAction(a.Key); err == nil {
		t.Error("the forged entry is still in ac/")
	}

	states, res, err := h.run(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if states["node.rows.a"] != EventDone {
		t.Errorf("node.rows.a is %s after its forged entry was dropped, want recomputed", states["node.rows.a"])
	}
	for i, r := range res {
		if i.Addr != "node.rows.c" {
			continue
		}
		rd, err := h.store.Open(r.Output)
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := artifacts.ReadAll[valueRow](rd)
		if len(rows) != 2 || rows[0].Value != 1 || rows[1].Value != 2 {
			t.Errorf("node.rows.c read %v, want node.rows.a's rows [1 2]", rows)
		}
	}
}
