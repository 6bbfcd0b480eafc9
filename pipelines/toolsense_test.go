package pipelines_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/toolsense"
)

// TestToolSensePipelineEvaluatesBM25OnTheReleasedRRB runs
// pipelines/toolsense.hcl as shipped, on the released data beside the
// repository (../shared/data/toolsense; skipped without it, failed in CI),
// into a fresh store, and checks its shapes and invariants.
func TestToolSensePipelineEvaluatesBM25OnTheReleasedRRB(t *testing.T) {
	if _, err := os.Stat("../../shared/data/toolsense/toolsense-realistic-retrieval.jsonl"); err != nil {
		msg := "ToolSense data is not at ../shared/data/toolsense beside the repository: " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	file, err := filepath.Abs("toolsense.hcl")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	g, diags := engine.ExpandSource(file, src, filepath.Dir(file), engine.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	st, err := artifacts.Open(filepath.Join(t.TempDir(), ".lacuna"))
	if err != nil {
		t.Fatal(err)
	}
	x := &engine.Executor{Store: st, Jobs: 2, Pipeline: file}
	res, _, err := x.Run(context.Background(), g, nil)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]artifacts.Object{}
	for i, r := range res {
		outputs[i.Addr] = r.Output
	}
	catalog := readRows[toolsense.CatalogRow](t, st, outputs["node.catalog.rrb"])
	retrieved := readRows[toolsense.RetrieveRow](t, st, outputs["node.retrieve.bm25"])
	eval := readRows[toolsense.EvalRow](t, st, outputs["node.retrieval_eval.rrb"])

	if len(catalog) != 4901 {
		t.Errorf("catalog has %d tools, want the released 4,901", len(catalog))
	}
	names := map[string]bool{}
	for i, c := range catalog {
		if c.Position != int64(i) || names[c.ToolName] {
			t.Errorf("catalog row %d: position %d, name %q repeated: %v", i, c.Position, c.ToolName, names[c.ToolName])
		}
		names[c.ToolName] = true
	}
	if len(retrieved) != 500 {
		t.Errorf("%d queries retrieved, want 500", len(retrieved))
	}
	tiers := map[string]int{}
	for _, q := range retrieved {
		tiers[q.Tier]++
		if len(q.Ranked) != 50 || len(q.Scores) != 50 || q.AnswersNotInCatalog != 0 || len(q.Answers) == 0 {
			t.Errorf("%s: %d ranked, %d scores, %d answers (%d not in the catalog)", q.SampleID, len(q.Ranked), len(q.Scores), len(q.Answers), q.AnswersNotInCatalog)
		}
		for j := 1; j < len(q.Scores); j++ {
			if q.Scores[j] > q.Scores[j-1] {
				t.Errorf("%s: scores not descending at %d: %v", q.SampleID, j, q.Scores)
				break
			}
		}
	}
	if tiers["easy"] != 167 || tiers["medium"] != 167 || tiers["hard"] != 166 {
		t.Errorf("tiers %v, want 167 easy, 167 medium, 166 hard", tiers)
	}
	ks := []int64{1, 3, 5, 10, 20, 50}
	if len(eval) != 4*len(ks) {
		t.Fatalf("%d eval rows, want 4 tiers × %d k", len(eval), len(ks))
	}
	for i, row := range eval {
		tier := []string{"easy", "medium", "hard", "all"}[i/len(ks)]
		if row.Tier != tier || row.K != ks[i%len(ks)] || int(row.Queries) != map[string]int{"all": 500}[tier]+tiers[tier] {
			t.Errorf("row %d: %s k=%d queries %d", i, row.Tier, row.K, row.Queries)
		}
		if !(row.RcLo <= row.RcAtK && row.RcAtK <= row.RcHi) || !(row.AnswerRecallLo <= row.AnswerRecallAtK && row.AnswerRecallAtK <= row.AnswerRecallHi) {
			t.Errorf("%s Rc@%d: estimate outside its CI: %+v", row.Tier, row.K, row)
		}
		if row.AnswerRecallAtK > row.RcAtK {
			t.Errorf("%s @%d: answer recall %v above Rc %v", row.Tier, row.K, row.AnswerRecallAtK, row.RcAtK)
		}
		if tier == "easy" && row.AnswerRecallAtK != row.RcAtK {
			t.Errorf("easy @%d: one answer per query, yet answer recall %v ≠ Rc %v", row.K, row.AnswerRecallAtK, row.RcAtK)
		}
		if i%len(ks) > 0 && row.RcAtK < eval[i-1].RcAtK {
			t.Errorf("%s: Rc@%d = %v below Rc@%d = %v", tier, row.K, row.RcAtK, eval[i-1].K, eval[i-1].RcAtK)
		}
	}
}

func readRows[T any](t *testing.T, st *artifacts.Store, obj artifacts.Object) []T {
	t.Helper()
	rd, err := st.Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := artifacts.ReadAll[T](rd)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
