package report

import (
	"bytes"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/annotations"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/parquet-go/parquet-go"
)

// Rows of the shapes the report reads, written into a real store: the
// columns of the metrics, judge and probe_metrics node types it uses.

type metricsRow struct {
	Model        string   `parquet:"model"`
	Cell         string   `parquet:"cell"`
	Difficulty   string   `parquet:"difficulty"`
	Library      string   `parquet:"library"`
	Tasks        int64    `parquet:"tasks"`
	Failures     int64    `parquet:"failures"`
	PassAt1      *float64 `parquet:"pass_at_1,optional"`
	PassAt1Lo    *float64 `parquet:"pass_at_1_lo,optional"`
	PassAt1Hi    *float64 `parquet:"pass_at_1_hi,optional"`
	WrongSyntax  *float64 `parquet:"wrong_syntax,optional"`
	WrongLogic   *float64 `parquet:"wrong_logic,optional"`
	Unclassified *float64 `parquet:"unclassified,optional"`
}

type judgeRow struct {
	TaskID   string `parquet:"task_id"`
	SampleID string `parquet:"sample_id"`
	Model    string `parquet:"model"`
	Cell     string `parquet:"cell"`
	Kind     string `parquet:"kind"`
	Class    string `parquet:"class"`
	Path     string `parquet:"path"`
	Expected string `parquet:"expected"`
}

type probeRow struct {
	Eval             string    `parquet:"eval"`
	Benchmark        string    `parquet:"benchmark"`
	Model            string    `parquet:"model"`
	N                int64     `parquet:"n"`
	Correct          int64     `parquet:"correct"`
	Accuracy         float64   `parquet:"accuracy"`
	Lo               float64   `parquet:"lo"`
	Hi               float64   `parquet:"hi"`
	Chance           float64   `parquet:"chance"`
	MajorityBaseline float64   `parquet:"majority_baseline"`
	Unparseable      int64     `parquet:"unparseable"`
	Labels           []string  `parquet:"labels,list"`
	PredictedShare   []float64 `parquet:"predicted_share,list"`
	GoldShare        []float64 `parquet:"gold_share,list"`
}

func f(v float64) *float64 { return &v }

// put writes rows as an artifact of the store.
func put[T any](t *testing.T, st *artifacts.Store, rows []T) artifacts.Object {
	t.Helper()
	w, err := st.NewWriter(parquet.SchemaOf(new(T)), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		if err := w.Write(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	obj, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// fixture is a store with a metrics, a calibration judge and a
// probe_metrics artifact, and the nodes naming them.
func fixture(t *testing.T) (*artifacts.Store, map[string]Node) {
	t.Helper()
	st, err := artifacts.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	metrics := put(t, st, []metricsRow{
		{Model: "m", Cell: "S", Difficulty: "all", Library: "all", Tasks: 10, Failures: 6, PassAt1: f(40), PassAt1Lo: f(16.82), PassAt1Hi: f(68.73), WrongSyntax: f(50), WrongLogic: f(50), Unclassified: f(0)},
		{Model: "m", Cell: "baseline", Difficulty: "all", Library: "all", Tasks: 10, Failures: 10, PassAt1: f(0), PassAt1Lo: f(0), PassAt1Hi: f(27.75), WrongSyntax: f(100), WrongLogic: f(0), Unclassified: f(0)},
		{Model: "m", Cell: "S@bm25", Difficulty: "all", Library: "all", Tasks: 10, Failures: 0, PassAt1: f(100), PassAt1Lo: f(72.25), PassAt1Hi: f(100)},
		{Model: "m", Cell: "S", Difficulty: "easy", Library: "all", Tasks: 4, PassAt1: f(50)},
		{Model: "m", Cell: "S", Difficulty: "all", Library: "lo", Tasks: 10, PassAt1: f(40)},
	})
	var judged []judgeRow
	for i, c := range []struct{ exp, got, path string }{
		{"OK", "OK", "rule"}, {"OK", "OK", "rule"}, {"WrongSyntax", "WrongSyntax", "rule"}, {"WrongParam", "WrongParam", "llm"},
		{"WrongParam", "WrongLogic", "llm"}, {"WrongLogic", "WrongLogic", "fallback"}, {"WrongLogic", "NotRun", "rule"},
		{"", "OK", "rule"},
	} {
		kind := "perturb"
		if c.exp == "" {
			kind = "model"
		}
		judged = append(judged, judgeRow{TaskID: string(rune('a' + i)), Kind: kind, Class: c.got, Path: c.path, Expected: c.exp})
	}
	judge := put(t, st, judged)
	probes := put(t, st, []probeRow{{Eval: `node.probe_eval.released["mcq"]`, Benchmark: "mcq", Model: "p", N: 8, Correct: 2, Accuracy: 25, Lo: 0, Hi: 62.5,
		Chance: 25, MajorityBaseline: 37.5, Labels: []string{"A", "B", "C", "D"}, PredictedShare: []float64{100, 0, 0, 0}, GoldShare: []float64{25, 37.5, 25, 12.5}}})
	return st, map[string]Node{
		"metrics": {Addr: "node.metrics.table", Type: "metrics", Object: metrics, Config: []byte(`{"ci": null}`)},
		"judge":   {Addr: `node.judge.calibration["lo"]`, Type: "judge", Object: judge},
		"probes":  {Addr: `node.probe_metrics.released["p"]`, Type: "probe_metrics", Object: probes, Config: []byte(`{"bootstrap": 200, "seed": 7}`)},
		"pending": {Addr: "node.retrieval_eval.rrb", Type: "retrieval_eval", Pending: "run: its input changed"},
		"other":   {Addr: "node.import.x", Type: "import", Pending: "run: new"},
	}
}

func sectionIDs(r *Report) []string {
	var ids []string
	for _, s := range r.Sections {
		ids = append(ids, s.ID)
	}
	return ids
}

// TestBuildShowsWhatIsComputedAndListsWhatIsNot builds reports of several
// node sets: a section per type present, nodes not computed listed in
// their section and in NotComputed (a type the report does not read left
// out), and an artifact lacking a column named rather than read.
func TestBuildShowsWhatIsComputedAndListsWhatIsNot(t *testing.T) {
	st, n := fixture(t)
	noPass := put(t, st, []struct {
		Model string `parquet:"model"`
		Cell  string `parquet:"cell"`
	}{{"m", "S"}})
	for _, tc := range []struct {
		name        string
		nodes       []Node
		sections    []string
		notComputed []string
		text        string // in some paragraph
		artifacts   int
	}{
		{"nothing", nil, nil, nil, "", 0},
		{"only other types", []Node{n["other"]}, nil, nil, "", 0},
		{"metrics", []Node{n["metrics"]}, []string{"table1", "composition", "difficulty", "library", "rag"}, nil, "ci = \"score\"", 1},
		{"judge and probes", []Node{n["judge"], n["probes"]}, []string{"judge", "probes"}, nil, "200 resamples, seed 7", 2},
		{"not computed", []Node{n["pending"], n["other"]}, []string{"retrieval"}, []string{"node.retrieval_eval.rrb"}, "", 0},
		{"missing columns", []Node{{Addr: "node.metrics.old", Type: "metrics", Object: noPass}}, []string{"table1"}, nil, "node.metrics.old has no column difficulty, library, tasks: left out", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Build(Input{Title: "p", Run: "lacuna run p.hcl", Store: st, Nodes: tc.nodes})
			if err != nil {
				t.Fatal(err)
			}
			if got := sectionIDs(rep); !slices.Equal(got, tc.sections) {
				t.Errorf("sections %v, want %v", got, tc.sections)
			}
			var pending []string
			for _, p := range rep.NotComputed {
				pending = append(pending, p.Node)
			}
			if !slices.Equal(pending, tc.notComputed) {
				t.Errorf("not computed %v, want %v", pending, tc.notComputed)
			}
			if len(tc.notComputed) > 0 && (len(rep.Sections) == 0 || len(rep.Sections[0].Missing) == 0 || rep.Sections[0].Missing[0].Reason != "run: its input changed") {
				t.Errorf("the section does not list %v with its reason", tc.notComputed)
			}
			found := tc.text == ""
			for _, s := range rep.Sections {
				for _, b := range s.Blocks {
					found = found || strings.Contains(b.Text, tc.text)
				}
			}
			if !found {
				t.Errorf("no paragraph says %q", tc.text)
			}
			if len(rep.Artifacts) != tc.artifacts {
				t.Errorf("%d artifacts read, want %d: %+v", len(rep.Artifacts), tc.artifacts, rep.Artifacts)
			}
		})
	}
}

// tableOf finds a table of a built report.
func tableOf(t *testing.T, r *Report, id string) *Table {
	t.Helper()
	for _, s := range r.Sections {
		for _, b := range s.Blocks {
			if b.Table != nil && b.Table.ID == id {
				return b.Table
			}
		}
	}
	t.Fatalf("no table %s", id)
	return nil
}

// TestNumbersAreTheArtifactsOrCountedFromThem checks the cells of the
// tables built from the fixture: Table 1 in the paper's cell order with
// the artifact's intervals, the oracle against BM25 with their
// difference, and the judge's agreement with Wilson's interval counted
// from the rows (NotRun and the model's samples left out).
func TestNumbersAreTheArtifactsOrCountedFromThem(t *testing.T) {
	st, n := fixture(t)
	rep, err := Build(Input{Title: "p", Store: st, Nodes: []Node{n["metrics"], n["judge"], n["probes"]}})
	if err != nil {
		t.Fatal(err)
	}
	md := string(tableOf(t, rep, "table1-metrics-table").Markdown())
	for _, line := range []string{
		"| m | baseline | 10 | 0 [0, 27.75] | – | – | – |",
		"| m | S | 10 | 40 [16.82, 68.73] | – | – | – |",
		"| m | S@bm25 | 10 | 100 [72.25, 100] | – | – | – |",
	} {
		if !strings.Contains(md, line) {
			t.Errorf("Table 1 lacks %q:\n%s", line, md)
		}
	}
	if strings.Index(md, "| baseline |") > strings.Index(md, "| S |") {
		t.Errorf("Table 1 is not in the paper's cell order:\n%s", md)
	}
	if md := string(tableOf(t, rep, "rag-metrics-table").Markdown()); !strings.Contains(md, "| m | S | 40 [16.82, 68.73] | 100 [72.25, 100] | 60 |") {
		t.Errorf("RAG table:\n%s", md)
	}
	agreement, err := tableOf(t, rep, "judge-agreement").CSV()
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := csv.NewReader(bytes.NewReader(agreement)).ReadAll()
	// 6 calibration samples that ran (NotRun and the model's left out), 5 agree.
	lo, hi := wilsonRef(5, 6)
	want := []string{`judge.calibration["lo"]`, "6", "5", "", "", "", "3/3", "1/2", "1/1"}
	if len(recs) != 2 || len(recs[1]) != len(want) {
		t.Fatalf("agreement CSV %q", recs)
	}
	for i, w := range []float64{100 * 5.0 / 6, lo, hi} {
		if g, err := strconv.ParseFloat(recs[1][3+i], 64); err != nil || math.Abs(g-w) > 1e-9 {
			t.Errorf("agreement %s = %s, want %v", recs[0][3+i], recs[1][3+i], w)
		}
		recs[1][3+i] = ""
	}
	if !slices.Equal(recs[1], want) {
		t.Errorf("agreement CSV %q, want %q", recs[1], want)
	}
	cm := string(tableOf(t, rep, "judge-confusion").Markdown())
	if !strings.Contains(cm, "| WrongParam | 0 | 0 | 1 | 1 | 2 | 1 |") || strings.Contains(cm, "NotRun") {
		t.Errorf("confusion matrix:\n%s", cm)
	}
}

// wilsonRef is Wilson's 95% interval for k of n in percent, from its
// formula.
func wilsonRef(k, n int) (lo, hi float64) {
	z := 1.959963984540054
	p, nn := float64(k)/float64(n), float64(n)
	c := (p + z*z/(2*nn)) / (1 + z*z/nn)
	h := z / (1 + z*z/nn) * math.Sqrt(p*(1-p)/nn+z*z/(4*nn*nn))
	return 100 * (c - h), 100 * (c + h)
}

// TestWriteIsDeterministicAndReplacesAnEarlierReport writes one report
// twice into new directories and compares every byte, writes a smaller
// report over the first, whose stale files go, and refuses a directory
// holding something else.
func TestWriteIsDeterministicAndReplacesAnEarlierReport(t *testing.T) {
	st, n := fixture(t)
	build := func(nodes ...Node) *Report {
		rep, err := Build(Input{Title: "p", Run: "lacuna run p.hcl", Store: st, Nodes: nodes})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	idx, err := build(n["metrics"], n["judge"], n["probes"], n["pending"]).Write(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := build(n["metrics"], n["judge"], n["probes"], n["pending"]).Write(b); err != nil {
		t.Fatal(err)
	}
	ta, tb := tree(t, a), tree(t, b)
	if len(ta) != 2+2*len(idx.Tables)+2*len(idx.Figures) || len(idx.Figures) == 0 {
		t.Errorf("%d files for %d tables and %d figures", len(ta), len(idx.Tables), len(idx.Figures))
	}
	for name, data := range ta {
		if !bytes.Equal(data, tb[name]) {
			t.Errorf("%s differs between two writes of the same report", name)
		}
	}
	page := string(ta["index.html"])
	if !strings.Contains(page, "Not computed: run <code>lacuna run p.hcl</code>") || !strings.Contains(page, "node.retrieval_eval.rrb") {
		t.Errorf("the page does not list the node not computed")
	}

	// A smaller report over the first: only its own files remain.
	idx2, err := build(n["probes"]).Write(a)
	if err != nil {
		t.Fatal(err)
	}
	if got := tree(t, a); len(got) != 2+2*len(idx2.Tables)+2*len(idx2.Figures) {
		t.Errorf("after a second report into the same directory: %d files, want only its %d", len(got), 2+2*len(idx2.Tables)+2*len(idx2.Figures))
	}

	other := filepath.Join(dir, "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644)
	if _, err := build(n["probes"]).Write(other); err == nil || !strings.Contains(err.Error(), "holds no report") {
		t.Errorf("writing into a directory of other files: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(other, "notes.txt")); string(b) != "mine" {
		t.Errorf("the other directory's file was touched")
	}
}

func tree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	return out
}

// TestTableFormats writes tables as Markdown and CSV.
func TestTableFormats(t *testing.T) {
	for _, tc := range []struct {
		name     string
		table    Table
		markdown string
		csv      string
	}{
		{"values with and without intervals",
			Table{Title: "T", Columns: []Column{{Name: "cell"}, {Name: "p", Title: "pass@1"}, {Name: "is", Decimals: 4}},
				Rows: [][]Cell{{textCell("S"), ciCell(12.345, 1.2, 40), numCell(0.66667)}, {textCell("a|b"), numCell(math.NaN()), {}}}},
			"### T\n\n| cell | pass@1 | is |\n|---|---|---|\n| S | 12.35 [1.2, 40] | 0.6667 |\n| a\\|b | – | – |\n",
			"cell,p,p_lo,p_hi,is\nS,12.345,1.2,40,0.66667\na|b,,,,\n"},
		{"a caption and a short row",
			Table{Title: "U", Caption: "From x.", Columns: []Column{{Name: "a"}, {Name: "b"}}, Rows: [][]Cell{{intCell(3)}}},
			"### U\n\nFrom x.\n\n| a | b |\n|---|---|\n| 3 | – |\n",
			"a,b\n3,\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(tc.table.Markdown()); got != tc.markdown {
				t.Errorf("Markdown:\n%s\nwant:\n%s", got, tc.markdown)
			}
			got, err := tc.table.CSV()
			if err != nil || string(got) != tc.csv {
				t.Errorf("CSV (%v):\n%s\nwant:\n%s", err, got, tc.csv)
			}
		})
	}
}

// TestLabelsAndOrders checks how cells, reasons, kinds and addresses are
// ordered and named.
func TestLabelsAndOrders(t *testing.T) {
	if got, want := cellOrder([]string{"Full", "S@bm25", "zz", "S", "baseline", "S@dense", "E"}), []string{"baseline", "S", "S@bm25", "S@dense", "E", "Full", "zz"}; !slices.Equal(got, want) {
		t.Errorf("cellOrder: %v, want %v", got, want)
	}
	for reason, want := range map[string]string{
		"audit: the harness accepts perturb, sibling":                        "audit: the harness accepts perturb, sibling",
		"C1: the reference fails its own harness (exit 1)":                   "C1: the reference fails its own harness",
		"no harness: observe failed":                                         "no harness",
		"no asserted value is computed through the target: substituting ...": "no asserted value is computed through the target",
		"": "(no reason given)",
	} {
		if got := reasonClass(reason); got != want {
			t.Errorf("reasonClass(%q) = %q, want %q", reason, got, want)
		}
	}
	for kind, want := range map[string]string{"func": "function", "function": "function", "method": "method", "classmethod": "method", "type": "", "class": ""} {
		if got := kindClass(kind); got != want {
			t.Errorf("kindClass(%q) = %q, want %q", kind, got, want)
		}
	}
	for addr, want := range map[string]string{`node.probe_eval.released["mcq"]`: "released[mcq]", "node.retrieve.bm25": "bm25", "oddity": "oddity"} {
		if got := label(addr); got != want {
			t.Errorf("label(%q) = %q, want %q", addr, got, want)
		}
	}
	var names libNames
	names.add(`node.c1.lib["lo"]`, []string{"github.com/samber/lo"})
	names.add(`node.tasks.lib["lo"]`, []string{"github.com/samber/lo"})
	names.add(`node.c1.lib["two"]`, []string{"a", "b"})
	names.add(`node.c1.lib["x"]`, []string{"c"})
	names.add(`node.c1.lib["x"]`, []string{"d"})
	for lib, want := range map[string]string{"github.com/samber/lo": "lo", "a": "a", "c": "c", "unknown": "unknown"} {
		if got := names.of(lib); got != want {
			t.Errorf("names.of(%q) = %q, want %q", lib, got, want)
		}
	}
}

// kappaRef is Cohen's κ from its definition: (pₒ − pₑ) / (1 − pₑ).
func kappaRef(a, b []string) float64 {
	n := float64(len(a))
	ca, cb := map[string]float64{}, map[string]float64{}
	po := 0.0
	for i := range a {
		ca[a[i]]++
		cb[b[i]]++
		if a[i] == b[i] {
			po++
		}
	}
	po /= n
	pe := 0.0
	for c := range ca {
		pe += ca[c] / n * cb[c] / n
	}
	return (po - pe) / (1 - pe)
}

// TestPeoplesLabelsAgainstTheJudge joins people's failure classes with a
// judge node's rows by their item key: per annotator the samples, the
// agreement with Wilson's interval and Cohen's κ; κ between the two
// annotators; labels of a node not computed and of samples the node does
// not hold are named, not counted; RRB verdicts are counted per annotator.
func TestPeoplesLabelsAgainstTheJudge(t *testing.T) {
	st, err := artifacts.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	classes := []string{"OK", "OK", "WrongParam", "WrongLogic", "WrongSyntax", "OK", "WrongParam", "WrongLogic"}
	var rows []judgeRow
	for i, c := range classes {
		rows = append(rows, judgeRow{TaskID: "t" + strconv.Itoa(i), SampleID: "greedy", Model: "m", Cell: "S", Kind: "model", Class: c, Path: "llm"})
	}
	node := Node{Addr: `node.judge.greedy["S"]`, Type: "judge", Object: put(t, st, rows)}
	alice := []string{"OK", "OK", "WrongParam", "WrongParam", "WrongSyntax", "OK", "WrongLogic", "WrongLogic"}
	bob := []string{"OK", "WrongLogic", "WrongParam", "WrongParam", "WrongSyntax", "OK"} // the first six
	var labels []annotations.Label
	for i, l := range alice {
		labels = append(labels, annotations.Label{Kind: annotations.KindFailureClass, Node: node.Addr, Item: annotations.JudgeItem("t"+strconv.Itoa(i), "greedy", "m", "S"), Label: l, Annotator: "alice"})
	}
	for i, l := range bob {
		labels = append(labels, annotations.Label{Kind: annotations.KindFailureClass, Node: node.Addr, Item: annotations.JudgeItem("t"+strconv.Itoa(i), "greedy", "m", "S"), Label: l, Annotator: "bob"})
	}
	labels = append(labels,
		annotations.Label{Kind: annotations.KindFailureClass, Node: node.Addr, Item: annotations.JudgeItem("gone", "greedy", "m", "S"), Label: "OK", Annotator: "bob"},
		annotations.Label{Kind: annotations.KindFailureClass, Node: "node.judge.other", Item: "x", Label: "OK", Annotator: "bob"},
		annotations.Label{Kind: annotations.KindRRBItem, Node: "node.import.rrb", Item: annotations.RRBItem("q1"), Label: "valid", Annotator: "alice"},
		annotations.Label{Kind: annotations.KindRRBItem, Node: "node.import.rrb", Item: annotations.RRBItem("q2"), Label: "invalid: two answers", Annotator: "alice"},
		annotations.Label{Kind: annotations.KindRRBItem, Node: "node.import.rrb", Item: annotations.RRBItem("q1"), Label: "valid", Annotator: "bob"},
	)
	rep, err := Build(Input{Title: "p", Store: st, Nodes: []Node{node}, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	csvOf := func(id string) [][]string {
		b, err := tableOf(t, rep, id).CSV()
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		return recs[1:]
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return v
	}
	human := csvOf("judge-human")
	want := map[string][]string{"alice": alice, "bob": bob}
	for _, r := range human {
		who := r[1]
		var a, j []string
		if who == "all annotators" {
			a, j = append(slices.Clone(alice), bob...), append(slices.Clone(classes), classes[:6]...)
		} else {
			a, j = want[who], classes[:len(want[who])]
		}
		agree := 0
		for i := range a {
			if a[i] == j[i] {
				agree++
			}
		}
		lo, hi := wilsonRef(agree, len(a))
		if r[2] != strconv.Itoa(len(a)) || r[3] != strconv.Itoa(agree) || math.Abs(num(r[4])-100*float64(agree)/float64(len(a))) > 1e-9 ||
			math.Abs(num(r[5])-lo) > 1e-9 || math.Abs(num(r[6])-hi) > 1e-9 || math.Abs(num(r[7])-kappaRef(a, j)) > 1e-12 {
			t.Errorf("%s: %q, want %d samples, %d agree, κ %v", who, r, len(a), agree, kappaRef(a, j))
		}
	}
	if len(human) != 3 {
		t.Errorf("%d rows, want alice, bob and all annotators", len(human))
	}
	inter := csvOf("judge-inter-annotator")
	if len(inter) != 1 || inter[0][1] != "alice" || inter[0][2] != "bob" || inter[0][3] != "6" || math.Abs(num(inter[0][5])-kappaRef(alice[:6], bob)) > 1e-12 {
		t.Errorf("inter-annotator: %q, want κ %v over 6", inter, kappaRef(alice[:6], bob))
	}
	var text string
	for _, s := range rep.Sections {
		for _, b := range s.Blocks {
			text += b.Text + "\n"
		}
	}
	if !strings.Contains(text, "node.judge.other (1 labels)") || !strings.Contains(text, "1 labels name samples the judge nodes' current rows do not hold") {
		t.Errorf("stray labels are not named:\n%s", text)
	}
	rrb := csvOf("rrb-verdicts")
	if !slices.Equal(rrb[0][:4], []string{"node.import.rrb", "alice", "2", "1"}) || rrb[0][len(rrb[0])-1] != "1" || !slices.Equal(rrb[1][:4], []string{"node.import.rrb", "bob", "1", "1"}) {
		t.Errorf("RRB verdicts: %q", rrb)
	}
}
