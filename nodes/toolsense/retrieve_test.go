package toolsense_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/lacuna-dev/lacuna/analysis"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/toolsense"
	"github.com/lacuna-dev/lacuna/runners/bm25"
	"github.com/lacuna-dev/lacuna/runners/embed"
	"github.com/lacuna-dev/lacuna/runners/embed/embedtest"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

// The fixture: four tools with disjoint words, and three queries whose
// rankings are known by hand (every other tool scores 0, and ties go to
// catalog order).
const (
	fixtureTools = `{"tool_name": "Alpha&&a", "tool_title": "Alpha", "tool_description": "alpha service", "api_title": "a", "api_description": "None"}
{"tool_name": "Beta&&b", "tool_title": "Beta", "tool_description": "beta service", "api_title": "b", "api_description": "bravo"}
{"tool_name": "Gamma&&c", "tool_title": "Gamma", "tool_description": "gamma service", "api_title": "c", "api_description": "charlie"}
{"tool_name": "Delta&&d", "tool_title": "Delta", "tool_description": "delta service", "api_title": "d", "api_description": "dog"}
`
	// q1 (easy): Alpha first. q2 (easy): Beta first, then Alpha, Gamma,
	// Delta at 0: the answer Gamma is third. q3 (medium): Gamma first;
	// one answer, X&&x, is not in the catalog.
	fixtureQueries = `{"sample_id": "q1", "query": "Alpha!", "complexity": "easy", "tool": {"tool_name": "Alpha&&a"}}
{"sample_id": "q2", "query": "bravo", "complexity": "easy", "tool": {"tool_name": "Gamma&&c"}}
{"sample_id": "q3", "query": "charlie gamma gamma", "complexity": "medium", "tool": [{"tool_name": "Gamma&&c"}, {"tool_name": "X&&x"}]}
`
	fixturePipeline = `node "catalog" "c" { path = "tools.jsonl" }
node "import" "q" { path = "queries.jsonl" }
node "retrieve" "bm25" {
  catalog   = node.catalog.c
  queries   = node.import.q
  retriever = "bm25"
  k         = 3
}
`
)

func runFixture(t *testing.T, extra string) *nodetest.Result {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "tools.jsonl", fixtureTools)
	write(t, dir, "queries.jsonl", fixtureQueries)
	return nodetest.Run(t, dir, fixturePipeline+extra)
}

// TestRetrieveRanksTheCatalogWithBM25: the top k are the bm25 index's over
// DocText, names and scores, in the hand-known order; answers outside the
// catalog are kept and flagged.
func TestRetrieveRanksTheCatalogWithBM25(t *testing.T) {
	r := runFixture(t, "")
	got := nodetest.Read[toolsense.RetrieveRow](t, r, "node.retrieve.bm25")
	wantRanked := [][]string{
		{"Alpha&&a", "Beta&&b", "Gamma&&c"},
		{"Beta&&b", "Alpha&&a", "Gamma&&c"},
		{"Gamma&&c", "Alpha&&a", "Beta&&b"},
	}
	wantAnswers := [][]string{{"Alpha&&a"}, {"Gamma&&c"}, {"Gamma&&c", "X&&x"}}
	// The scores are the index's own over the same texts.
	var cat []toolsense.CatalogRow
	var docs [][]string
	for _, row := range nodetest.Read[toolsense.CatalogRow](t, r, "node.catalog.c") {
		cat = append(cat, row)
		docs = append(docs, bm25.Tokenize(ts.DocText(row)))
	}
	ix := bm25.New(docs, bm25.Options{})
	if len(got) != 3 {
		t.Fatalf("%d rows, want 3", len(got))
	}
	for i, row := range got {
		if !reflect.DeepEqual(row.Ranked, wantRanked[i]) || !reflect.DeepEqual(row.Answers, wantAnswers[i]) {
			t.Errorf("%s: ranked %v answers %v; want %v %v", row.SampleID, row.Ranked, row.Answers, wantRanked[i], wantAnswers[i])
		}
		scores := ix.Scores(bm25.Tokenize(row.Query))
		for j, name := range row.Ranked {
			for d, tool := range cat {
				if tool.ToolName == name && scores[d] != row.Scores[j] {
					t.Errorf("%s: score of %s %v, index says %v", row.SampleID, name, row.Scores[j], scores[d])
				}
			}
		}
		if row.Scores[0] <= 0 || row.Scores[2] != 0 {
			t.Errorf("%s: scores %v, want the match positive and the rest 0", row.SampleID, row.Scores)
		}
	}
	if got[2].AnswersNotInCatalog != 1 || got[0].AnswersNotInCatalog != 0 || got[2].Tier != "medium" || got[0].Retriever != "bm25" {
		t.Errorf("rows %+v", got)
	}
	wantContains(t, r.Notes(engine.EventDone)["node.retrieve.bm25"], "3 queries over 4 tools", "1 queries with answers not in the catalog (kept, flagged)")
}

func TestRetrieveRefusesBadConfig(t *testing.T) {
	head := `node "catalog" "c" { path = "t.jsonl" }
node "import" "q" { path = "q.jsonl" }
node "retrieve" "r" {
  catalog = node.catalog.c
  queries = node.import.q
`
	for _, tt := range []struct{ body, want string }{
		{`retriever = "dense"`, "needs model_dir"},
		{"retriever = \"dense\"\n model_dir = \"m\"\n pooling = \"max\"", `"max" is not a pooling`},
		{"retriever = \"dense\"\n model_dir = \"m\"\n batch = 0", "Invalid batch"},
		{"retriever = \"bm25\"\n model_dir = \"m\"", "model_dir applies to retriever = \"dense\""},
		{"retriever = \"bm25\"\n pooling = \"cls\"", "pooling applies to retriever = \"dense\""},
		{`retriever = "tfidf"`, `"tfidf" is not a retriever`},
		{"retriever = \"bm25\"\n k = 0", "Invalid k"},
	} {
		wantContains(t, configErr(t, head+tt.body+"\n}"), tt.want, "p.hcl:")
	}
}

// denseTools have texts in the tiny model's vocabulary; tools 0 and 2
// have the same DocText, hence the same vector: a tie the catalog order
// breaks.
const (
	denseTools = `{"tool_name": "Cat&&a", "tool_title": "the", "tool_description": "cat", "api_title": "sat", "api_description": "None"}
{"tool_name": "Dog&&b", "tool_title": "the", "tool_description": "dog", "api_title": "ran", "api_description": "None"}
{"tool_name": "Cat2&&c", "tool_title": "the", "tool_description": "cat", "api_title": "sat", "api_description": "None"}
{"tool_name": "Mat&&d", "tool_title": "on", "tool_description": "the mat", "api_title": "mat", "api_description": "None"}
`
	denseQueries = `{"sample_id": "q1", "query": "the cat sat", "complexity": "easy", "tool": {"tool_name": "Cat&&a"}}
{"sample_id": "q2", "query": "dog ran on the mat", "complexity": "medium", "tool": [{"tool_name": "Dog&&b"}, {"tool_name": "Mat&&d"}]}
{"sample_id": "q3", "query": "cafe!", "complexity": "hard", "tool": {"tool_name": "Mat&&d"}}
`
)

func denseFixture(t *testing.T, pooling string) (dir, src string) {
	t.Helper()
	dir = t.TempDir()
	write(t, dir, "tools.jsonl", denseTools)
	write(t, dir, "queries.jsonl", denseQueries)
	if err := os.Mkdir(filepath.Join(dir, "model"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := embedtest.WriteDir(filepath.Join(dir, "model"), nil); err != nil {
		t.Fatal(err)
	}
	return dir, `node "catalog" "c" { path = "tools.jsonl" }
node "import" "q" { path = "queries.jsonl" }
node "retrieve" "dense" {
  catalog   = node.catalog.c
  queries   = node.import.q
  retriever = "dense"
  model_dir = "model"
  pooling   = "` + pooling + `"
  k         = 3
}
`
}

// TestRetrieveRanksTheCatalogByDenseCosine: the top k are embed.TopK's
// over the model's vectors of the same DocText as BM25, for both poolings,
// with equal vectors in catalog order.
func TestRetrieveRanksTheCatalogByDenseCosine(t *testing.T) {
	for _, pooling := range []string{"mean", "cls"} {
		t.Run(pooling, func(t *testing.T) {
			dir, src := denseFixture(t, pooling)
			r := nodetest.Run(t, dir, src)
			got := nodetest.Read[toolsense.RetrieveRow](t, r, "node.retrieve.dense")
			m, err := embed.Load(filepath.Join(dir, "model"), map[string]embed.Pooling{"mean": embed.Mean, "cls": embed.CLS}[pooling])
			if err != nil {
				t.Fatal(err)
			}
			cat := nodetest.Read[toolsense.CatalogRow](t, r, "node.catalog.c")
			var texts []string
			for _, row := range cat {
				texts = append(texts, ts.DocText(row))
			}
			docs, err := m.Embed(context.Background(), texts, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 3 {
				t.Fatalf("%d rows, want 3", len(got))
			}
			for i, row := range got {
				q, err := m.Embed(context.Background(), []string{row.Query}, 1)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				var scores []float64
				for _, h := range embed.TopK(q[0], docs, 3) {
					names, scores = append(names, cat[h.Doc].ToolName), append(scores, h.Score)
				}
				if row.Retriever != "dense" || !reflect.DeepEqual(row.Ranked, names) || !reflect.DeepEqual(row.Scores, scores) {
					t.Errorf("row %d (%s): %s %v %v, want dense %v %v", i, row.SampleID, row.Retriever, row.Ranked, row.Scores, names, scores)
				}
				cat0, cat2 := slices.Index(row.Ranked, "Cat&&a"), slices.Index(row.Ranked, "Cat2&&c")
				if cat2 >= 0 && (cat0 < 0 || cat0 != cat2-1 || row.Scores[cat0] != row.Scores[cat2]) {
					t.Errorf("row %d: twins Cat&&a (catalog 0) at %d and Cat2&&c (catalog 2) at %d: want equal scores, catalog order, adjacent: %v", i, cat0, cat2, row.Scores)
				}
			}
			if !slices.Contains(got[0].Ranked, "Cat2&&c") {
				t.Errorf("q1 %q: ranked %v, want both cat twins in the top 3", got[0].Query, got[0].Ranked)
			}
		})
	}
}

// TestRetrieveDenseKeyPinsTheModelFiles: editing a weight file (same path)
// reruns the node; an unchanged model is a cache hit.
func TestRetrieveDenseKeyPinsTheModelFiles(t *testing.T) {
	dir, src := denseFixture(t, "mean")
	first := nodetest.Run(t, dir, src)
	if _, ok := nodetest.Run(t, dir, src).Notes(engine.EventCached)["node.retrieve.dense"]; !ok {
		t.Fatalf("an unchanged model did not hit the cache")
	}
	if err := embedtest.WriteDir(filepath.Join(dir, "model"), func(_ map[string]any, _ *[]string, w map[string]embedtest.Tensor, _ map[string]string) {
		w["encoder.layer.1.output.dense.bias"].Data[0] += 1
	}); err != nil {
		t.Fatal(err)
	}
	third := nodetest.Run(t, dir, src)
	if _, ok := third.Notes(engine.EventCached)["node.retrieve.dense"]; ok {
		t.Fatalf("new weights at the same path hit the cache")
	}
	a := nodetest.Read[toolsense.RetrieveRow](t, first, "node.retrieve.dense")
	b := nodetest.Read[toolsense.RetrieveRow](t, third, "node.retrieve.dense")
	if reflect.DeepEqual(a[0].Scores, b[0].Scores) {
		t.Errorf("new weights gave the same scores %v: the old vectors were reused", a[0].Scores)
	}
}

// TestRetrieveDenseRefusesBadModelDirectories: the error points at
// model_dir (file:line:col) and names the problem.
func TestRetrieveDenseRefusesBadModelDirectories(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(dir string)
		want string
	}{
		{"missing directory", func(dir string) { os.RemoveAll(filepath.Join(dir, "model")) }, "model directory"},
		{"no weights", func(dir string) { os.Remove(filepath.Join(dir, "model", "model.safetensors")) }, "missing model.safetensors"},
		{"not BERT", func(dir string) {
			embedtest.WriteDir(filepath.Join(dir, "model"), func(cfg map[string]any, _ *[]string, _ map[string]embedtest.Tensor, _ map[string]string) {
				cfg["model_type"] = "roberta"
			})
		}, `model_type "roberta"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, src := denseFixture(t, "mean")
			tt.edit(dir)
			r := nodetest.RunErr(t, dir, src)
			msg := nodeErr(t, r, "node.retrieve.dense")
			wantContains(t, msg, "p.hcl:7:", "Cannot load the embedding model", tt.want)
		})
	}
}

// TestRetrievalEvalComputesRcAtKPerTier: Rc@k and answer recall by hand
// on the fixture; the CIs are analysis.Bootstrap's over the queries' hits.
func TestRetrievalEvalComputesRcAtKPerTier(t *testing.T) {
	r := runFixture(t, `node "retrieval_eval" "e" {
  retrieved = [node.retrieve.bm25]
  k         = [1, 3]
  bootstrap = 200
  seed      = 5
}
node "retrieval_eval" "none" {
  retrieved = [node.retrieve.bm25]
  k         = [1]
  bootstrap = 0
}
`)
	rows := nodetest.Read[toolsense.EvalRow](t, r, "node.retrieval_eval.e")
	type key struct {
		tier string
		k    int64
	}
	// q1 hits at 1; q2's answer is third; q3 hits at 1 with one of its two answers.
	want := map[key][3]float64{ // queries, Rc@k, answer recall@k
		{"easy", 1}: {2, 50, 50}, {"easy", 3}: {2, 100, 100},
		{"medium", 1}: {1, 100, 50}, {"medium", 3}: {1, 100, 50},
		{"all", 1}: {3, 66.67, 50}, {"all", 3}: {3, 100, 83.33},
	}
	var order []key
	for _, row := range rows {
		k := key{row.Tier, row.K}
		order = append(order, k)
		w, ok := want[k]
		if !ok {
			t.Errorf("unexpected row %+v", row)
			continue
		}
		if float64(row.Queries) != w[0] || row.RcAtK != w[1] || row.AnswerRecallAtK != w[2] {
			t.Errorf("%v: queries %d Rc %v answer recall %v; want %v", k, row.Queries, row.RcAtK, row.AnswerRecallAtK, w)
		}
		if row.Retrieve != "node.retrieve.bm25" || row.Retriever != "bm25" || row.Internalization != toolsense.ByConstruction {
			t.Errorf("%v: %+v", k, row)
		}
		if !(row.RcLo <= row.RcAtK && row.RcAtK <= row.RcHi) {
			t.Errorf("%v: Rc %v outside its CI [%v, %v]", k, row.RcAtK, row.RcLo, row.RcHi)
		}
	}
	if want := []key{{"easy", 1}, {"easy", 3}, {"medium", 1}, {"medium", 3}, {"all", 1}, {"all", 3}}; !reflect.DeepEqual(order, want) {
		t.Errorf("rows in order %v, want %v", order, want)
	}
	// The pooled Rc@1 CI is the bootstrap of the hits (1, 0, 1).
	ci, _ := analysis.Bootstrap([]float64{1, 0, 1}, 200, 0.95, 5, analysis.StreamOf("node.retrieve.bm25\x00all"))
	all1 := rows[4]
	if all1.RcLo != math.Round(ci.Lo*10000)/100 || all1.RcHi != math.Round(ci.Hi*10000)/100 {
		t.Errorf("all Rc@1 CI [%v, %v], bootstrap gives %+v", all1.RcLo, all1.RcHi, ci)
	}
	for _, row := range nodetest.Read[toolsense.EvalRow](t, r, "node.retrieval_eval.none") {
		if !math.IsNaN(row.RcLo) || !math.IsNaN(row.AnswerRecallHi) {
			t.Errorf("bootstrap = 0 gave CIs: %+v", row)
		}
	}
}

func TestRetrievalEvalRefusesBadConfig(t *testing.T) {
	head := `node "catalog" "c" { path = "t.jsonl" }
node "import" "q" { path = "q.jsonl" }
node "retrieve" "r" {
  catalog   = node.catalog.c
  queries   = node.import.q
  retriever = "bm25"
}
`
	wantContains(t, configErr(t, head+`node "retrieval_eval" "e" { retrieved = [] }`), "No retrieve outputs")
	wantContains(t, configErr(t, head+`node "retrieval_eval" "e" {
  retrieved = [node.retrieve.r]
  k         = [0]
}`), "Invalid k")
	wantContains(t, configErr(t, head+`node "retrieval_eval" "e" {
  retrieved = [node.retrieve.r]
  bootstrap = -1
}`), "Invalid bootstrap")
}
