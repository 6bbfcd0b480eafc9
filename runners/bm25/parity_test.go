package bm25_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/bm25"
	"github.com/lacuna-dev/lacuna/toolsense"
)

// releasedDir is the released ToolSense data, in the shared/ folder beside
// the repository checkout.
const releasedDir = "../../../shared/data/toolsense"

// released is the corpus of the parity test and the benchmarks: the
// catalog and the documents the retrieve node of nodes/toolsense indexes
// (toolsense.ReadRRB: the union of the RRB pools, 4,901 tools;
// toolsense.DocText, tokenized), and the RRB queries, tokenized.
type released struct {
	tools   []string   // tool_name, catalog order
	docs    [][]string // tokenized documents, catalog order
	queries [][]string // tokenized queries, file order
}

// loadReleased reads the released RRB file, skipping the test when it is
// absent outside CI and failing in CI.
func loadReleased(tb testing.TB) released {
	tb.Helper()
	path := filepath.Join(releasedDir, "toolsense-realistic-retrieval.jsonl")
	f, err := os.Open(path)
	if err != nil {
		msg := "ToolSense data is not at ../shared/data/toolsense beside the repository: " + err.Error()
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	defer f.Close()
	queries, catalog, err := toolsense.ReadRRB(f, path)
	if err != nil {
		tb.Fatal(err)
	}
	var r released
	for _, q := range queries {
		r.queries = append(r.queries, bm25.Tokenize(q))
	}
	for _, t := range catalog {
		r.tools = append(r.tools, t.ToolName)
		r.docs = append(r.docs, bm25.Tokenize(toolsense.DocText(t)))
	}
	if len(r.tools) != 4901 || len(r.queries) != 500 {
		tb.Fatalf("%s: %d tools and %d queries, want the released 4901 and 500", path, len(r.tools), len(r.queries))
	}
	return r
}

// TestScoresMatchRankBM25OnReleasedData runs rank_bm25 0.2.2 (from
// cmd/lacuna/testdata/requirements.txt, in the venv `make test` provides as
// LACUNA_TEST_PYTHON) over the same token lists and requires identical top-50
// lists and every score within 1e-9, for all 500 RRB queries.
func TestScoresMatchRankBM25OnReleasedData(t *testing.T) {
	python := os.Getenv("LACUNA_TEST_PYTHON")
	if python == "" {
		msg := "LACUNA_TEST_PYTHON is not set: run `make test`, which builds .cache/venv from cmd/lacuna/testdata/requirements.txt (rank_bm25)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	const k = 50
	r := loadReleased(t)
	dir := t.TempDir()
	in, err := json.Marshal(map[string]any{"docs": r.docs, "queries": r.queries, "k": k})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "in.json"), in, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(python, "testdata/rank_bm25_scores.py", filepath.Join(dir, "in.json"), dir).CombinedOutput(); err != nil {
		t.Fatalf("rank_bm25_scores.py: %v\n%s", err, out)
	}
	nq, nd := len(r.queries), len(r.docs)
	want := make([]float64, nq*nd)
	readLE(t, filepath.Join(dir, "scores.f64"), want)
	wantTop := make([]int64, nq*k)
	readLE(t, filepath.Join(dir, "top.i64"), wantTop)

	ix := bm25.New(r.docs, bm25.Options{})
	maxDiff, bitExact := 0.0, 0
	for qi, q := range r.queries {
		got := ix.Scores(q)
		for d, s := range got {
			w := want[qi*nd+d]
			diff := math.Abs(s - w)
			if !(diff <= 1e-9) { // NaN fails too
				t.Errorf("query %d %q, document %d %s: score %.17g, rank_bm25 %.17g", qi, q, d, r.tools[d], s, w)
			}
			maxDiff = math.Max(maxDiff, diff)
			if s == w {
				bitExact++
			}
		}
		for i, h := range ix.Top(q, k) {
			if w := wantTop[qi*k+i]; int64(h.Doc) != w {
				t.Errorf("query %d %q, rank %d: document %d (%s), rank_bm25 %d (%s)", qi, q, i+1, h.Doc, r.tools[h.Doc], w, r.tools[w])
				break
			}
		}
	}
	t.Logf("%d queries × %d documents: max |Δscore| %g, %d of %d scores bit-identical", nq, nd, maxDiff, bitExact, nq*nd)
}

// readLE fills dst from a file of little-endian values, which must be
// exactly the size of dst.
func readLE[T float64 | int64](t *testing.T, path string, dst []T) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 8*len(dst) {
		t.Fatalf("%s: %d bytes, want %d", path, len(b), 8*len(dst))
	}
	if _, err := binary.Decode(b, binary.LittleEndian, dst); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
