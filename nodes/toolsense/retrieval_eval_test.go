package toolsense_test

import (
	"maps"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lacuna-dev/lacuna/analysis"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/toolsense"
	"github.com/parquet-go/parquet-go"
)

// The pair fixture: a parametric retriever's constrained and free
// rankings of five queries, by hand. Hits (1 = an answer in the top k):
//
//	query tier    constrained @1 @2   free @1 @2
//	q1    easy    A B         1  1    B A  0  1
//	q2    easy    B C         1  1    B X  1  1
//	q3    easy    A C         0  1    X Y  0  0
//	q4    medium  E A         1  1    D Z  1  1
//	q5    hard    C D         0  0    A B  1  1
var (
	pairConstrained = []toolsense.RetrieveRow{
		{SampleID: "q1", Tier: "easy", Query: "one", Retriever: "toolgen", Answers: []string{"A"}, Ranked: []string{"A", "B"}, Scores: []float64{-0.1, -2}},
		{SampleID: "q2", Tier: "easy", Query: "two", Retriever: "toolgen", Answers: []string{"B"}, Ranked: []string{"B", "C"}, Scores: []float64{-0.2, -3}},
		{SampleID: "q3", Tier: "easy", Query: "three", Retriever: "toolgen", Answers: []string{"C"}, Ranked: []string{"A", "C"}, Scores: []float64{-0.3, -1}},
		{SampleID: "q4", Tier: "medium", Query: "four", Retriever: "toolgen", Answers: []string{"D", "E"}, Ranked: []string{"E", "A"}, Scores: []float64{-0.4, -2}},
		{SampleID: "q5", Tier: "hard", Query: "five", Retriever: "toolgen", Answers: []string{"A", "B", "F", "G"}, Ranked: []string{"C", "D"}, Scores: []float64{-0.5, -4}},
	}
	// pairFree is in another order than pairConstrained: rows pair by
	// sample_id.
	pairFree = []toolsense.RetrieveRow{
		{SampleID: "q5", Tier: "hard", Query: "five", Retriever: "toolgen", Answers: []string{"A", "B", "F", "G"}, Ranked: []string{"A", "B"}, Scores: []float64{-0.5, -0.6}},
		{SampleID: "q4", Tier: "medium", Query: "four", Retriever: "toolgen", Answers: []string{"D", "E"}, Ranked: []string{"D", "Z"}, Scores: []float64{-0.4, -5}},
		{SampleID: "q3", Tier: "easy", Query: "three", Retriever: "toolgen", Answers: []string{"C"}, Ranked: []string{"X", "Y"}, Scores: []float64{-3, -4}},
		{SampleID: "q2", Tier: "easy", Query: "two", Retriever: "toolgen", Answers: []string{"B"}, Ranked: []string{"B", "X"}, Scores: []float64{-0.2, -3}},
		{SampleID: "q1", Tier: "easy", Query: "one", Retriever: "toolgen", Answers: []string{"A"}, Ranked: []string{"B", "A"}, Scores: []float64{-1, -1.5}},
	}
)

// writeRetrieved writes retrieve rows as the Parquet file a generic
// import node reads back with RetrieveRow's schema.
func writeRetrieved(t *testing.T, dir, name string, rows []toolsense.RetrieveRow) {
	t.Helper()
	if err := parquet.WriteFile(filepath.Join(dir, name), rows); err != nil {
		t.Fatal(err)
	}
}

// runPair runs src after importing cons.parquet and free.parquet.
func runPair(t *testing.T, cons, free []toolsense.RetrieveRow, src string) *nodetest.Result {
	t.Helper()
	dir := t.TempDir()
	writeRetrieved(t, dir, "cons.parquet", cons)
	writeRetrieved(t, dir, "free.parquet", free)
	return nodetest.RunErr(t, dir, `node "import" "cons" { path = "cons.parquet" }
node "import" "free" { path = "free.parquet" }
`+src)
}

// TestRetrievalEvalMeasuresRfAndISOfAConstrainedFreePair: Rc@k, Rf@k and
// IS@k by hand from the fixture's hits; the CIs are analysis.Bootstrap's
// over the hits in the constrained order (one stream for both, so the
// same queries are resampled) and IS's is analysis.InternalizationCI of
// them.
func TestRetrievalEvalMeasuresRfAndISOfAConstrainedFreePair(t *testing.T) {
	r := runPair(t, pairConstrained, pairFree, `node "retrieval_eval" "e" {
  constrained = [node.import.cons]
  free        = [node.import.free]
  k           = [1, 2]
  bootstrap   = 300
  seed        = 7
}
`)
	rows := nodetest.Read[toolsense.EvalRow](t, r, "node.retrieval_eval.e")
	type key struct {
		tier string
		k    int64
	}
	type want struct {
		queries    int64
		rc, rf, is float64
		rcHits     []float64 // in the constrained order, for the CIs
		rfHits     []float64
	}
	wants := map[key]want{
		{"easy", 1}:   {3, 66.67, 33.33, 0.5, []float64{1, 1, 0}, []float64{0, 1, 0}},
		{"easy", 2}:   {3, 100, 66.67, 0.6667, []float64{1, 1, 1}, []float64{1, 1, 0}},
		{"medium", 1}: {1, 100, 100, 1, []float64{1}, []float64{1}},
		{"medium", 2}: {1, 100, 100, 1, []float64{1}, []float64{1}},
		// Rc = 0: IS = 0 (Eq. 2) although Rf = 100%.
		{"hard", 1}: {1, 0, 100, 0, []float64{0}, []float64{1}},
		{"hard", 2}: {1, 0, 100, 0, []float64{0}, []float64{1}},
		{"all", 1}:  {5, 60, 60, 1, []float64{1, 1, 0, 1, 0}, []float64{0, 1, 0, 1, 1}},
		{"all", 2}:  {5, 80, 80, 1, []float64{1, 1, 1, 1, 0}, []float64{1, 1, 0, 1, 1}},
	}
	var order []key
	for _, row := range rows {
		k := key{row.Tier, row.K}
		order = append(order, k)
		w, ok := wants[k]
		if !ok {
			t.Errorf("unexpected row %+v", row)
			continue
		}
		if row.Queries != w.queries || row.RcAtK != w.rc || row.RfAtK != w.rf || row.ISAtK != w.is {
			t.Errorf("%v: queries %d Rc %v Rf %v IS %v; want %d %v %v %v", k, row.Queries, row.RcAtK, row.RfAtK, row.ISAtK, w.queries, w.rc, w.rf, w.is)
		}
		if row.Retrieve != "node.import.cons" || row.Free != "node.import.free" || row.Retriever != "toolgen" || row.Internalization != toolsense.Measured {
			t.Errorf("%v: %+v", k, row)
		}
		stream := analysis.StreamOf("node.import.cons\x00" + row.Tier)
		rcCI, _ := analysis.Bootstrap(w.rcHits, 300, 0.95, 7, stream)
		rfCI, _ := analysis.Bootstrap(w.rfHits, 300, 0.95, 7, stream)
		isCI := analysis.InternalizationCI(analysis.Mean(w.rfHits), analysis.Mean(w.rcHits), rfCI, rcCI)
		if row.RcLo != pct(rcCI.Lo) || row.RcHi != pct(rcCI.Hi) || row.RfLo != pct(rfCI.Lo) || row.RfHi != pct(rfCI.Hi) {
			t.Errorf("%v: Rc CI [%v, %v] Rf CI [%v, %v]; bootstrap gives %+v %+v", k, row.RcLo, row.RcHi, row.RfLo, row.RfHi, rcCI, rfCI)
		}
		if row.ISLo != math.Round(isCI.Lo*1e4)/1e4 || row.ISHi != math.Round(isCI.Hi*1e4)/1e4 || row.ISLo < 0 || row.ISHi > 1 {
			t.Errorf("%v: IS CI [%v, %v], want %+v within [0, 1]", k, row.ISLo, row.ISHi, isCI)
		}
		if row.Tier == "hard" && (row.ISLo != 0 || row.ISHi != 0) {
			t.Errorf("%v: Rc = 0 gives IS CI [%v, %v], want [0, 0]", k, row.ISLo, row.ISHi)
		}
	}
	wantOrder := []key{{"easy", 1}, {"easy", 2}, {"medium", 1}, {"medium", 2}, {"hard", 1}, {"hard", 2}, {"all", 1}, {"all", 2}}
	if !slices.Equal(order, wantOrder) {
		t.Errorf("rows in order %v, want %v", order, wantOrder)
	}
	// The easy Rc@1 interval is not degenerate, so IS's is not either:
	// the CI columns are not trivially equal to the point.
	if easy := rows[0]; !(easy.ISLo < easy.ISAtK && easy.ISAtK < easy.ISHi) {
		t.Errorf("easy IS@1 %v outside or on the edge of its CI [%v, %v]", easy.ISAtK, easy.ISLo, easy.ISHi)
	}
}

func pct(x float64) float64 { return math.Round(x*10000) / 100 }

// TestRetrievalEvalReportsRfAndISOnlyWhereMeasured: a ranker's rows say
// IS = 1 by construction, a model output without its free pair says Rf
// and IS are not measured; neither computes them (NaN); bootstrap = 0
// leaves a pair's CIs NaN but its IS computed.
func TestRetrievalEvalReportsRfAndISOnlyWhereMeasured(t *testing.T) {
	r := runFixture(t, `node "retrieval_eval" "bm25" {
  retrieved = [node.retrieve.bm25]
  k         = [1]
  bootstrap = 50
}
`)
	for _, row := range nodetest.Read[toolsense.EvalRow](t, r, "node.retrieval_eval.bm25") {
		if row.Internalization != toolsense.ByConstruction || row.Free != "" || !math.IsNaN(row.RfAtK) || !math.IsNaN(row.ISAtK) || !math.IsNaN(row.ISLo) || !math.IsNaN(row.RfHi) {
			t.Errorf("bm25 row %+v", row)
		}
	}
	r = runPair(t, pairConstrained, pairFree, `node "retrieval_eval" "alone" {
  retrieved = [node.import.cons]
  k         = [1]
}
node "retrieval_eval" "nocis" {
  constrained = [node.import.cons]
  free        = [node.import.free]
  k           = [1]
  bootstrap   = 0
}
`)
	for _, row := range nodetest.Read[toolsense.EvalRow](t, r, "node.retrieval_eval.alone") {
		if row.Internalization != toolsense.NotPaired || !math.IsNaN(row.RfAtK) || !math.IsNaN(row.ISAtK) {
			t.Errorf("unpaired model row %+v", row)
		}
	}
	rows := nodetest.Read[toolsense.EvalRow](t, r, "node.retrieval_eval.nocis")
	if all := rows[len(rows)-1]; all.Tier != "all" || all.ISAtK != 1 || !math.IsNaN(all.ISLo) || !math.IsNaN(all.RfLo) || !math.IsNaN(all.RcHi) {
		t.Errorf("bootstrap = 0: %+v", all)
	}
}

// TestRetrievalEvalPairsForEachOutputsByKey: constrained and free given as
// for_each maps pair by key.
func TestRetrievalEvalPairsForEachOutputsByKey(t *testing.T) {
	dir := t.TempDir()
	// Model b swaps model a's rankings: its easy Rc@1 is 1/3 and Rf@1
	// 2/3, so IS@1 = 2 (not clipped); pairing a with b would give 1.
	writeRetrieved(t, dir, "cons_a.parquet", pairConstrained)
	writeRetrieved(t, dir, "free_a.parquet", pairFree)
	writeRetrieved(t, dir, "cons_b.parquet", pairFree)
	writeRetrieved(t, dir, "free_b.parquet", pairConstrained)
	r := nodetest.Run(t, dir, `node "import" "cons" {
  for_each = toset(["b", "a"])
  path     = "cons_${each.key}.parquet"
}
node "import" "free" {
  for_each = toset(["a", "b"])
  path     = "free_${each.key}.parquet"
}
node "retrieval_eval" "e" {
  constrained = node.import.cons
  free        = node.import.free
  k           = [1]
  bootstrap   = 0
}
`)
	got := map[string]float64{}
	for _, row := range nodetest.Read[toolsense.EvalRow](t, r, "node.retrieval_eval.e") {
		if row.Tier == "easy" {
			got[row.Retrieve+" "+row.Free] = row.ISAtK
		}
	}
	want := map[string]float64{
		`node.import.cons["a"] node.import.free["a"]`: 0.5,
		`node.import.cons["b"] node.import.free["b"]`: 2,
	}
	if !maps.Equal(got, want) {
		t.Errorf("easy IS@1 by pair %v, want %v", got, want)
	}
}

func TestRetrievalEvalRefusesPairsOfOtherQueriesOrOfRankers(t *testing.T) {
	eval := `node "retrieval_eval" "e" {
  constrained = [node.import.cons]
  free        = [node.import.free]
}
`
	missing := pairFree[1:] // without q5
	wantContains(t, nodeErr(t, runPair(t, pairConstrained, missing, eval), "node.retrieval_eval.e"), `sample_id "q5" is in the constrained decoding output only`)
	extra := append(slices.Clone(pairFree), toolsense.RetrieveRow{SampleID: "q6", Tier: "easy", Retriever: "toolgen"})
	wantContains(t, nodeErr(t, runPair(t, pairConstrained, extra, eval), "node.retrieval_eval.e"), `sample_id "q6" is in the free decoding output only`)
	other := slices.Clone(pairFree)
	other[0].Answers = []string{"A"}
	wantContains(t, nodeErr(t, runPair(t, pairConstrained, other, eval), "node.retrieval_eval.e"), `sample_id "q5" differs between the outputs`)
	twice := append(slices.Clone(pairFree), pairFree[0])
	wantContains(t, nodeErr(t, runPair(t, pairConstrained, twice, eval), "node.retrieval_eval.e"), `free decoding has sample_id "q5" twice`)
	bm25 := slices.Clone(pairFree)
	for i := range bm25 {
		bm25[i].Retriever = "bm25"
	}
	wantContains(t, nodeErr(t, runPair(t, pairConstrained, bm25, eval), "node.retrieval_eval.e"), `retriever "bm25" ranks the catalog`, "list it under retrieved")
}

func TestRetrievalEvalRefusesUnpairedConfig(t *testing.T) {
	head := `node "import" "c" { path = "c.parquet" }
node "import" "f" { path = "f.parquet" }
`
	wantContains(t, configErr(t, head+`node "retrieval_eval" "e" {
  constrained = [node.import.c]
}`), "Unpaired decoding outputs", "constrained has 1 outputs and free 0")
	wantContains(t, configErr(t, head+`node "retrieval_eval" "e" {
  constrained = [node.import.c]
  free        = [node.import.c]
}`), "Output paired with itself")
	wantContains(t, configErr(t, head+`node "retrieval_eval" "e" { k = [1] }`), "No retrieve outputs")
}
