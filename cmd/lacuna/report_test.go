package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"hash/fnv"
	"image/png"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lacuna-dev/lacuna/annotations"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
	"github.com/lacuna-dev/lacuna/report"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

// TestReportOfToolSense runs pipelines/toolsense.hcl as shipped on the
// released data (skipped without it, failed in CI) with BM25, a scripted
// probed model that always answers A (Yes) and a scripted ToolGen model on
// the first 6 queries, then `lacuna report`: every Rc@k, Rf@k, IS@k and
// probe number in the tables is the artifact's (read with lacuna cat), the
// figures are SVG with the series' labels and non-blank PNG, the page is
// self-contained, a second report writes the same bytes, and with another
// bootstrap the nodes it changes are listed as not computed.
func TestReportOfToolSense(t *testing.T) {
	rrbPath := filepath.Join("..", "..", "..", "shared", "data", "toolsense", "toolsense-realistic-retrieval.jsonl")
	if _, err := os.Stat(rrbPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("the released ToolSense data (../shared/data): %v", err)
	}
	work := t.TempDir()
	srv, tokens := toolsenseServer(t, rrbPath, work)
	defer srv.Close()
	pipeline, err := filepath.Abs("../../pipelines/toolsense.hcl")
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(work, "store")
	vars := []string{"--store", store, "--var", "probe_endpoint=" + srv.URL(), "--var", "probe_model=probed",
		"--var", "toolgen_endpoint=" + srv.URL(), "--var", "toolgen_id=toolgen", "--var", "toolgen_tokens=" + tokens,
		"--var", "toolgen_limit=6", "--var", "free_search=greedy", "--var", "bootstrap=200"}
	if r := lacuna(t, work, append(append([]string{"run"}, vars...), pipeline)...); r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	out := filepath.Join(work, "report")
	r := lacuna(t, work, append(append([]string{"report"}, vars...), pipeline, "--out", out)...)
	if r.code != 0 {
		t.Fatalf("report: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := strings.TrimSpace(r.stdout); got != filepath.Join(out, "index.html") {
		t.Errorf("report printed %q, want the path of index.html", got)
	}
	idx := readIndex(t, out)
	first := readTree(t, out)
	checkIndexAgainstShow(t, work, vars, pipeline, idx)
	if len(idx.NotComputed) != 0 {
		t.Errorf("not computed after a full run: %+v", idx.NotComputed)
	}
	for _, id := range []string{"retrieval", "internalization", "probes"} {
		if !slices.ContainsFunc(idx.Sections, func(s report.IndexSection) bool { return s.ID == id }) {
			t.Errorf("no section %s: %+v", id, idx.Sections)
		}
	}
	cat := func(addr string) []map[string]any { return catJSONL(t, work, vars, pipeline, addr) }

	// Rc@k per tier: the wide table's every value and interval is the
	// artifact's.
	rrb := cat("node.retrieval_eval.rrb")
	rc := tableByID(t, out, idx, "retrieval-rc-retrieval-eval-rrb")
	checked := 0
	for _, row := range rrb {
		k := strconv.FormatFloat(row["k"].(float64), 'f', -1, 64)
		line := rc.find(t, map[string]string{"retrieve": short(row["retrieve"].(string)), "tier": row["tier"].(string)})
		for col, want := range map[string]string{"rc_at_" + k: "rc_at_k", "rc_at_" + k + "_lo": "rc_lo", "rc_at_" + k + "_hi": "rc_hi", "queries": "queries"} {
			checkNum(t, "Rc table "+col, line[col], row[want])
			checked++
		}
		// Markdown and HTML show the same value with its interval.
		cell := fmt.Sprintf("%s [%s, %s]", fmtPct(row["rc_at_k"]), fmtPct(row["rc_lo"]), fmtPct(row["rc_hi"]))
		if !strings.Contains(rc.md, "| "+cell+" |") || !strings.Contains(string(first["index.html"]), ">"+cell+"<") {
			t.Errorf("Rc@%s %s: %q is not in the Markdown or the HTML", k, row["tier"], cell)
		}
	}
	if checked != 4*len(rrb) || len(rrb) != 24 {
		t.Errorf("checked %d values of %d rows", checked, len(rrb))
	}

	// Rf@k and IS@k of the ToolGen configuration.
	param := cat(`node.retrieval_eval.parametric["toolgen"]`)
	it := tableByID(t, out, idx, `internalization-retrieval-eval-parametric-toolgen`)
	if len(it.rows) != len(param) || len(param) == 0 {
		t.Fatalf("internalization table: %d rows for %d artifact rows", len(it.rows), len(param))
	}
	for i, row := range param {
		line := it.rows[i]
		for col, want := range map[string]string{"rc_at_k": "rc_at_k", "rf_at_k": "rf_at_k", "rf_at_k_lo": "rf_lo", "rf_at_k_hi": "rf_hi",
			"is_at_k": "is_at_k", "is_at_k_lo": "is_lo", "is_at_k_hi": "is_hi", "k": "k"} {
			checkNum(t, "internalization "+col, line[col], row[want])
		}
		if line["tier"] != row["tier"] || line["configuration"] != short(row["retrieve"].(string)) {
			t.Errorf("internalization row %d: %v against %v", i, line, row)
		}
	}

	// Probe accuracy and positional bias: the always-A model predicts A
	// (Yes) every time.
	probes := cat(`node.probe_metrics.released["under_test"]`)
	acc := tableByID(t, out, idx, `probes-probe-metrics-released-under-test`)
	bias := tableByID(t, out, idx, `probes-bias-probe-metrics-released-under-test`)
	for _, row := range probes {
		line := acc.find(t, map[string]string{"eval": short(row["eval"].(string))})
		for col, want := range map[string]string{"accuracy": "accuracy", "accuracy_lo": "lo", "accuracy_hi": "hi", "n": "n", "chance": "chance", "majority_baseline": "majority_baseline"} {
			checkNum(t, "probes "+col, line[col], row[want])
		}
		for i, l := range row["labels"].([]any) {
			b := bias.find(t, map[string]string{"eval": short(row["eval"].(string)), "label": l.(string)})
			checkNum(t, "bias predicted", b["predicted"], row["predicted_share"].([]any)[i])
			checkNum(t, "bias gold", b["gold"], row["gold_share"].([]any)[i])
			if want := map[bool]string{true: "100", false: "0"}[i == 0]; b["predicted"] != want {
				t.Errorf("%s %s: predicted %s%%, want %s", row["eval"], l, b["predicted"], want)
			}
		}
	}

	// Figures: SVG with the series' labels, PNG not blank.
	want := map[string][]string{
		"retrieval-retrieval-eval-rrb-retrieve-bm25":           {"easy", "medium", "hard", "all"},
		"internalization-is-retrieval-eval-parametric-toolgen": {"constrained[toolgen]"},
		"probes-bias-probe-metrics-released-under-test":        {"predicted", "gold"},
		"probes-accuracy-probe-metrics-released-under-test":    {"accuracy", "chance", "majority baseline"},
	}
	checkFigures(t, out, idx, first, want)
	checkSelfContained(t, string(first["index.html"]), len(idx.Figures))

	// The same artifacts give the same bytes, into the same directory.
	if r := lacuna(t, work, append(append([]string{"report"}, vars...), pipeline, "--out", out)...); r.code != 0 {
		t.Fatalf("second report: %s", r.stderr)
	}
	sameTree(t, first, readTree(t, out))

	// Another bootstrap changes the evaluations' keys: they are listed as
	// not computed, their sections say how to compute them, and the
	// retrieval tables are gone rather than showing the old numbers.
	other := append(slices.Clone(vars), "--var", "bootstrap=123")
	r = lacuna(t, work, append(append([]string{"report", "--json"}, other...), pipeline, "--out", filepath.Join(work, "stale"))...)
	if r.code != 0 {
		t.Fatalf("report with bootstrap=123: %s", r.stderr)
	}
	var stale struct {
		Dir string `json:"dir"`
		report.Index
	}
	if err := json.Unmarshal([]byte(r.stdout), &stale); err != nil {
		t.Fatalf("report --json: %v\n%s", err, r.stdout)
	}
	var pending []string
	for _, p := range stale.NotComputed {
		pending = append(pending, p.Node)
	}
	for _, n := range []string{"node.retrieval_eval.rrb", `node.retrieval_eval.parametric["toolgen"]`, `node.probe_metrics.released["under_test"]`} {
		if !slices.Contains(pending, n) {
			t.Errorf("%s not listed as not computed: %v", n, pending)
		}
	}
	if len(stale.Tables) != 0 || stale.Dir != filepath.Join(work, "stale") {
		t.Errorf("with every evaluation stale, the report has tables %+v (dir %s)", stale.Tables, stale.Dir)
	}
	page, _ := os.ReadFile(filepath.Join(work, "stale", "index.html"))
	if !strings.Contains(string(page), "Not computed: run <code>lacuna run --store ") || !strings.Contains(string(page), "bootstrap=123") {
		t.Errorf("the stale report does not say how to compute what is missing")
	}
}

// toolsenseServer is a scripted server for toolsense.hcl: model probed
// answers every MCQ with A and every QA with Yes; model toolgen is a
// ToolGen retriever over the released catalog's tokens (written to
// dir/added_tokens.json) whose constrained decoding ranks the answer
// first for even queries and whose free decoding answers the first of
// every third query.
func toolsenseServer(t *testing.T, rrbPath, dir string) (*llmtest.Server, string) {
	f, err := os.Open(rrbPath)
	if err != nil {
		t.Fatal(err)
	}
	_, catalog, err := ts.ReadRRB(f, "rrb")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, _ = os.Open(rrbPath)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	var queries []string
	answers := map[string]string{}
	for len(queries) < 6 && sc.Scan() {
		var row struct {
			Query string          `json:"query"`
			Tool  json.RawMessage `json:"tool"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		var one struct {
			ToolName string `json:"tool_name"`
		}
		var many []struct {
			ToolName string `json:"tool_name"`
		}
		if json.Unmarshal(row.Tool, &many) != nil || len(many) == 0 {
			if err := json.Unmarshal(row.Tool, &one); err != nil {
				t.Fatal(err)
			}
			many = append(many, one)
		}
		queries = append(queries, row.Query)
		answers[row.Query] = "<<" + many[0].ToolName + ">>"
	}
	vocab := map[string]int{}
	for i, c := range catalog {
		vocab["<<"+c.ToolName+">>"] = 200000 + i
	}
	b, _ := json.Marshal(vocab)
	tokens := filepath.Join(dir, "added_tokens.json")
	if err := os.WriteFile(tokens, b, 0o644); err != nil {
		t.Fatal(err)
	}
	index := func(q llmtest.Request) (string, int) {
		_, query, _ := strings.Cut(q.Text(), "provided below:\n")
		return query, slices.Index(queries, query)
	}
	next := func(q llmtest.Request) []llmtest.Candidate {
		query, i := index(q)
		out := make([]llmtest.Candidate, 0, len(vocab))
		for tok, id := range vocab {
			h := fnv.New64a()
			h.Write([]byte(query + "\x00" + tok))
			lp := -float64(h.Sum64()%100000)/1000 - 0.5
			if tok == answers[query] {
				lp = -1000
				if i%2 == 0 {
					lp = -0.1
				}
			}
			out = append(out, llmtest.Candidate{Token: tok, ID: id, Logprob: lp})
		}
		return out
	}
	srv := llmtest.New(llmtest.Config{Models: []string{"probed", "toolgen"}, MaxLogprobs: 50, Script: []llmtest.Rule{
		{When: func(q llmtest.Request) bool { return q.Model == "toolgen" && q.Logprobs > 0 }, Next: next},
		{When: func(q llmtest.Request) bool { return q.Model == "toolgen" }, Reply: func(q llmtest.Request) string {
			query, i := index(q)
			if i%3 == 0 {
				return answers[query]
			}
			return "<<Nowhere&&nothing>>"
		}},
		{Reply: func(q llmtest.Request) string {
			if strings.Contains(q.Text(), "A, B, C or D") {
				return `"A"`
			}
			return `"Yes"`
		}},
	}})
	return srv, tokens
}

// readIndex reads DIR/report.json.
func readIndex(t *testing.T, dir string) *report.Index {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx report.Index
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	return &idx
}

// readTree reads every file under dir, by slash path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree fails unless both trees hold the same files with the same
// bytes.
func sameTree(t *testing.T, a, b map[string][]byte) {
	t.Helper()
	var names []string
	for n := range a {
		names = append(names, n)
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if !bytes.Equal(a[n], b[n]) {
			t.Errorf("%s differs between two reports of the same artifacts (%d and %d bytes)", n, len(a[n]), len(b[n]))
		}
	}
}

// checkIndexAgainstShow checks that every artifact the index names has
// the content digest lacuna show gives its node.
func checkIndexAgainstShow(t *testing.T, dir string, vars []string, pipeline string, idx *report.Index) {
	t.Helper()
	if len(idx.Artifacts) == 0 {
		t.Fatal("the index names no artifact")
	}
	for _, a := range idx.Artifacts {
		r := lacuna(t, dir, append(append([]string{"show", "--json"}, vars...), pipeline, a.Node)...)
		var m struct {
			Object struct {
				Digest string `json:"digest"`
				Rows   int64  `json:"rows"`
			} `json:"object"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
			t.Fatalf("show %s: %v\n%s%s", a.Node, err, r.stdout, r.stderr)
		}
		if m.Object.Digest != a.Digest || m.Object.Rows != a.Rows {
			t.Errorf("%s: the index says %s (%d rows), show says %s (%d rows)", a.Node, a.Digest, a.Rows, m.Object.Digest, m.Object.Rows)
		}
	}
}

// catJSONL is `lacuna cat --format jsonl` of one node's rows (extra: more
// flags of cat).
func catJSONL(t *testing.T, dir string, vars []string, pipeline, addr string, extra ...string) []map[string]any {
	t.Helper()
	res := lacuna(t, dir, append(append(append([]string{"cat"}, vars...), pipeline, addr, "--format", "jsonl"), extra...)...)
	if res.code != 0 {
		t.Fatalf("lacuna cat %s: exit %d\n%s", addr, res.code, res.stderr)
	}
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("lacuna cat %s: %v: %s", addr, err, line)
		}
		rows = append(rows, m)
	}
	return rows
}

// reportTable is one table of a report: its CSV rows and its Markdown.
type reportTable struct {
	id   string
	rows []map[string]string
	md   string
}

func tableByID(t *testing.T, dir string, idx *report.Index, id string) reportTable {
	t.Helper()
	for _, tb := range idx.Tables {
		if tb.ID != id {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, tb.CSV))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil || len(recs) == 0 {
			t.Fatalf("%s: %v", tb.CSV, err)
		}
		out := reportTable{id: id}
		for _, rec := range recs[1:] {
			m := map[string]string{}
			for i, h := range recs[0] {
				m[h] = rec[i]
			}
			out.rows = append(out.rows, m)
		}
		md, err := os.ReadFile(filepath.Join(dir, tb.Markdown))
		if err != nil {
			t.Fatal(err)
		}
		out.md = string(md)
		return out
	}
	var ids []string
	for _, tb := range idx.Tables {
		ids = append(ids, tb.ID)
	}
	t.Fatalf("no table %s; the report has %v", id, ids)
	return reportTable{}
}

// find is the one CSV row with these values.
func (tb reportTable) find(t *testing.T, where map[string]string) map[string]string {
	t.Helper()
	var hit []map[string]string
	for _, r := range tb.rows {
		ok := true
		for k, v := range where {
			ok = ok && r[k] == v
		}
		if ok {
			hit = append(hit, r)
		}
	}
	if len(hit) != 1 {
		t.Fatalf("table %s: %d rows with %v", tb.id, len(hit), where)
	}
	return hit[0]
}

// checkNum checks a CSV cell against an artifact's value as cat gives it
// (JSON: a number, or null for NaN and null).
func checkNum(t *testing.T, what, got string, want any) {
	t.Helper()
	w, ok := want.(float64)
	if !ok {
		if got != "" {
			t.Errorf("%s: %q, want empty (the artifact has %v)", what, got, want)
		}
		return
	}
	g, err := strconv.ParseFloat(got, 64)
	if err != nil || g != w {
		t.Errorf("%s: %q, want %v", what, got, w)
	}
}

// fmtPct formats an artifact's percentage as the report's Markdown does:
// at most two decimals.
func fmtPct(v any) string {
	f, _ := v.(float64)
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

// short is an address without "node.".
func short(addr string) string { return strings.TrimPrefix(addr, "node.") }

// checkFigures checks every figure of the index: both files exist, the
// SVG parses as XML, the PNG decodes and is not blank, and the SVG inlined
// in the page is the file's; want names figures whose text must hold
// these labels.
func checkFigures(t *testing.T, dir string, idx *report.Index, files map[string][]byte, want map[string][]string) {
	t.Helper()
	for _, f := range idx.Figures {
		svg, pngData := files[f.SVG], files[f.PNG]
		texts, err := svgTexts(svg)
		if err != nil {
			t.Errorf("%s: %v", f.SVG, err)
			continue
		}
		for _, l := range want[f.ID] {
			if !slices.Contains(texts, l) {
				t.Errorf("%s: no text %q among %q", f.SVG, l, texts)
			}
		}
		for _, l := range f.Series {
			if !slices.Contains(texts, l) {
				t.Errorf("%s: the series %q of the index is not in the figure", f.SVG, l)
			}
		}
		delete(want, f.ID)
		img, err := png.Decode(bytes.NewReader(pngData))
		if err != nil {
			t.Errorf("%s: %v", f.PNG, err)
			continue
		}
		bg := img.At(0, 0)
		differ := 0
		bounds := img.Bounds()
		for y := bounds.Min.Y; y < bounds.Max.Y; y += 2 {
			for x := bounds.Min.X; x < bounds.Max.X; x += 2 {
				if img.At(x, y) != bg {
					differ++
				}
			}
		}
		if total := bounds.Dx() * bounds.Dy() / 4; differ < total/100 {
			t.Errorf("%s: %d of %d sampled pixels differ from the background: blank", f.PNG, differ, total)
		}
		svgText := string(svg)
		if !strings.Contains(string(files["index.html"]), svgText[strings.Index(svgText, "<svg"):]) {
			t.Errorf("%s is not inlined in index.html", f.SVG)
		}
	}
	for id := range want {
		t.Errorf("no figure %s", id)
	}
}

// svgTexts parses an SVG as XML and returns its text elements' contents.
func svgTexts(svg []byte) ([]string, error) {
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var texts []string
	inText := false
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
			inText = tok.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		}
	}
	if root != "svg" {
		return nil, fmt.Errorf("root element %q, want svg", root)
	}
	return texts, nil
}

// checkSelfContained checks the page loads nothing: no script, no
// stylesheet or image from elsewhere, every figure inlined.
func checkSelfContained(t *testing.T, page string, figures int) {
	t.Helper()
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", `src="http`, `href="http`, "url(http", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("index.html holds %q: not self-contained", bad)
		}
	}
	if n := strings.Count(page, "<svg"); n != figures {
		t.Errorf("index.html inlines %d SVGs for %d figures", n, figures)
	}
}

// naReply is the scripted server of TestReportOfNovelAPIBench: the model
// under test, C3's strong model and the judge of novelapibench.hcl on the
// offline fixture module.
type naScript struct {
	mu      sync.Mutex
	tasks   []naTask                     // C1-kept
	answers map[string]map[string]string // task_id → kind → solution
	sampled map[[2]string]int            // (task_id, arm) → sampled requests answered
}

type naTask struct {
	ID, Description, Context string
	index                    int
}

// The calibration kinds the greedy answers rotate through.
var naKinds = []string{"reference", goharness.MutantSibling, goharness.MutantImport, goharness.MutantSyntax, goharness.MutantPerturb, goharness.MutantDiscarded}

var (
	naSolution  = regexp.MustCompile("(?s)\nSolution:\n```go\n(.*?)\n```")
	naJudged    = regexp.MustCompile("(?s)Solution to judge:\n```go\n(.*?)\n```")
	naReference = regexp.MustCompile("(?s)Reference solution:\n```go\n(.*?)\n```")
)

func (s *naScript) task(text string) (naTask, bool) {
	var best naTask
	for _, t := range s.tasks {
		if strings.Contains(text, t.Context) && strings.Contains(text, t.Description) && len(t.Context)+len(t.Description) > len(best.Context)+len(best.Description) {
			best = t
		}
	}
	return best, best.ID != ""
}

// arm tells the sweep arm of a prompt as the pipelines' test does: the
// oracle prepends one bundle (one signature heading), BM25 five chunks.
func naArm(text string) int {
	switch {
	case strings.Count(text, "## Signature (S)") > 1:
		return 2 // S@bm25
	case strings.Contains(text, "## Signature (S)"):
		return 1 // S
	}
	return 0 // baseline
}

func (s *naScript) reply(q llmtest.Request) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	const junk = "```go\nvar _ = 1\n```"
	fence := func(code string) string { return "Here:\n```go\n" + code + "\n```\n" }
	text := q.Text()
	switch q.Model {
	case "test/judge":
		if m := naJudged.FindStringSubmatch(text); m != nil {
			if ref := naReference.FindStringSubmatch(text); ref != nil && strings.TrimSpace(ref[1]) == strings.TrimSpace(m[1]) {
				return `{"equivalent": true, "score": 1}`
			}
			return `{"equivalent": false, "score": 0}`
		}
		t, ok := s.task(text)
		m := naSolution.FindStringSubmatch(text)
		if !ok || m == nil {
			return "not a verdict"
		}
		for _, kind := range slices.Sorted(maps.Keys(s.answers[t.ID])) {
			if strings.TrimSpace(s.answers[t.ID][kind]) != strings.TrimSpace(m[1]) {
				continue
			}
			class, ok := goharness.ExpectedClass(kind)
			if kind == goharness.MutantDiscarded {
				class = goharness.ClassWrongParam // a judge that errs on one kind: the confusion matrix has an off-diagonal cell
			}
			if ok {
				return fmt.Sprintf(`{"class": %q, "rationale": "scripted: %s"}`, class, kind)
			}
		}
		return "not a verdict"
	case "test/strong":
		if t, ok := s.task(text); ok {
			return fence(s.answers[t.ID]["reference"])
		}
		return junk
	}
	t, ok := s.task(text)
	if !ok || q.Seed != nil { // C2's samples fail: C2 keeps every task
		return junk
	}
	arm := naArm(text)
	if q.Temperature != nil && *q.Temperature == 0 {
		var avail []string
		for _, k := range naKinds {
			if code, ok := s.answers[t.ID][k]; ok && (k == "reference" || code != s.answers[t.ID]["reference"]) {
				avail = append(avail, k)
			}
		}
		return fence(s.answers[t.ID][avail[(t.index+arm)%len(avail)]])
	}
	key := [2]string{t.ID, strconv.Itoa(arm)}
	s.sampled[key]++
	if s.sampled[key] <= (t.index+arm)%3 {
		return fence(s.answers[t.ID]["reference"])
	}
	return junk
}

// TestReportOfNovelAPIBench runs pipelines/novelapibench.hcl as shipped on
// the offline fixture module (cells baseline and S, the oracle and BM25,
// 2 samples, k = 1, 2) against a scripted model, strong model and judge,
// then `lacuna report`: Table 1, the composition, the difficulty, library
// and RAG breakdowns are the metrics artifact's numbers (read with lacuna
// cat, and with DuckDB where LACUNA_TEST_PYTHON is set); the calibration
// agreement, its Wilson interval and the confusion matrix, and the tasks
// C1 keeps, are recomputed here from the judge, c1 and surface_diff rows;
// the figures carry their series; a second report writes the same bytes.
func TestReportOfNovelAPIBench(t *testing.T) {
	nodetest.OfflineShapes(t)
	work := t.TempDir()
	pipeline, err := filepath.Abs("../../pipelines/novelapibench.hcl")
	if err != nil {
		t.Fatal(err)
	}
	s := &naScript{answers: map[string]map[string]string{}, sampled: map[[2]string]int{}}
	srv := llmtest.New(llmtest.Config{Models: []string{"test/under", "test/strong", "test/judge"}, Script: []llmtest.Rule{{Reply: s.reply}}})
	defer srv.Close()
	store := filepath.Join(work, "store")
	vars := []string{"--store", store, "--var", "endpoint=" + srv.URL(), "--var", "model_id=test/under", "--var", "strong_id=test/strong",
		"--var", "judge_id=test/judge", "--var", `libraries={ shapes = { ecosystem = "go", name = "example.com/shapes", domain = "test" } }`,
		"--var", `cells=["baseline", "S"]`, "--var", `retrievers=["oracle", "bm25"]`, "--var", "samples=2", "--var", "k=[1, 2]"}

	// Phase 1: the tasks and their mutants, which the script answers with.
	c1 := `node.c1.lib["shapes"]`
	if r := lacuna(t, work, append(append([]string{"run"}, vars...), pipeline, "--target", c1, "--target", `node.solve.calibration["shapes"]`)...); r.code != 0 {
		t.Fatalf("run (phase 1): exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	c1Rows := catJSONL(t, work, vars, pipeline, c1)
	for i, r := range c1Rows {
		if r["keep"] == true {
			s.tasks = append(s.tasks, naTask{ID: r["task_id"].(string), Description: r["description"].(string), Context: r["context"].(string), index: i})
		}
	}
	if len(s.tasks) < 4 {
		t.Fatalf("%d tasks kept by C1; the fixture gives more", len(s.tasks))
	}
	for _, r := range catJSONL(t, work, vars, pipeline, `node.solve.calibration["shapes"]`) {
		id := r["task_id"].(string)
		if s.answers[id] == nil {
			s.answers[id] = map[string]string{}
		}
		s.answers[id][r["kind"].(string)] = r["solution"].(string)
	}

	// Phase 2: the whole pipeline, then the report.
	if r := lacuna(t, work, append(append([]string{"run"}, vars...), pipeline)...); r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// People label the greedy samples of cell S: alice as the judge but
	// for the first, bob as the judge.
	greedyS := `node.judge.greedy["under_test/shapes/S"]`
	var judged, alice []string
	var labels []annotations.Label
	for i, row := range catJSONL(t, work, vars, pipeline, greedyS) {
		class := row["class"].(string)
		item := annotations.JudgeItem(row["task_id"].(string), row["sample_id"].(string), row["model"].(string), row["cell"].(string))
		mine := class
		if i == 0 {
			mine = map[bool]string{true: goharness.ClassWrongLogic, false: goharness.ClassOK}[class == goharness.ClassOK]
		}
		judged, alice = append(judged, class), append(alice, mine)
		labels = append(labels, annotations.Label{Kind: annotations.KindFailureClass, Node: greedyS, Item: item, Label: mine, Annotator: "alice"},
			annotations.Label{Kind: annotations.KindFailureClass, Node: greedyS, Item: item, Label: class, Annotator: "bob"})
	}
	st, err := artifacts.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := annotations.Add(st, pipeline, labels...); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(work, "report")
	r := lacuna(t, work, append(append([]string{"report"}, vars...), pipeline, "--out", out)...)
	if r.code != 0 {
		t.Fatalf("report: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	idx := readIndex(t, out)
	files := readTree(t, out)
	if len(idx.NotComputed) != 0 {
		t.Errorf("not computed after a full run: %+v", idx.NotComputed)
	}
	human := tableByID(t, out, idx, "judge-human")
	for who, mine := range map[string][]string{"alice": alice, "bob": judged} {
		row := human.find(t, map[string]string{"annotator": who})
		agree := 0
		for i := range mine {
			if mine[i] == judged[i] {
				agree++
			}
		}
		k, err := strconv.ParseFloat(row["kappa"], 64)
		if row["samples"] != strconv.Itoa(len(judged)) || row["agree"] != strconv.Itoa(agree) || err != nil || math.Abs(k-cohensKappa(mine, judged)) > 1e-12 {
			t.Errorf("%s against the judge: %v, want %d of %d, κ %v", who, row, agree, len(judged), cohensKappa(mine, judged))
		}
	}
	for _, id := range []string{"tasks", "table1", "composition", "difficulty", "library", "rag", "judge"} {
		if !slices.ContainsFunc(idx.Sections, func(s report.IndexSection) bool { return s.ID == id }) {
			t.Errorf("no section %s", id)
		}
	}
	checkIndexAgainstShow(t, work, vars, pipeline, idx)

	// Table 1, the composition and the breakdowns: the metrics artifact's
	// values and intervals, cell for cell.
	metrics := catJSONL(t, work, vars, pipeline, "node.metrics.table")
	t1 := tableByID(t, out, idx, "table1-metrics-table")
	comp := tableByID(t, out, idx, "composition-metrics-table")
	diff := tableByID(t, out, idx, "difficulty-metrics-table")
	lib := tableByID(t, out, idx, "library-metrics-table")
	rag := tableByID(t, out, idx, "rag-metrics-table")
	t1Cols := []string{"tasks", "pass_at_1", "pass_at_1_sampled", "pass_at_2", "api_acc", "param_corr", "sem"}
	compCols := []string{"failures", "wrong_syntax", "wrong_api_selection", "wrong_import", "wrong_param", "wrong_shape_dtype", "wrong_logic", "unclassified"}
	pooled := map[string]map[string]any{}
	checked := 0
	withCI := func(cols []string) []string {
		var out []string
		for _, c := range cols {
			out = append(out, c)
			if c != "tasks" && c != "failures" {
				out = append(out, c+"_lo", c+"_hi")
			}
		}
		return out
	}
	for _, m := range metrics {
		where := map[string]string{"model": m["model"].(string), "cell": m["cell"].(string)}
		switch {
		case m["difficulty"] == "all" && m["library"] == "all":
			pooled[m["cell"].(string)] = m
			for tb, cols := range map[*reportTable][]string{&t1: t1Cols, &comp: compCols} {
				line := tb.find(t, where)
				for _, c := range withCI(cols) {
					checkNum(t, tb.id+" "+m["cell"].(string)+" "+c, line[c], m[c])
					checked++
				}
			}
		case m["library"] == "all":
			where["difficulty"] = m["difficulty"].(string)
			line := diff.find(t, where)
			for _, c := range withCI([]string{"tasks", "pass_at_1", "pass_at_1_sampled", "pass_at_2"}) {
				checkNum(t, "difficulty "+c, line[c], m[c])
				checked++
			}
		case m["difficulty"] == "all":
			where["library"] = map[string]string{"example.com/shapes": "shapes"}[m["library"].(string)] // named by its nodes' key
			line := lib.find(t, where)
			for _, c := range withCI([]string{"tasks", "pass_at_1"}) {
				checkNum(t, "library "+c, line[c], m[c])
				checked++
			}
		}
	}
	if len(pooled) != 3 || checked < 3*2*20 {
		t.Errorf("%d pooled rows (want baseline, S, S@bm25), %d values checked", len(pooled), checked)
	}
	oracle, bm25 := pooled["S"], pooled["S@bm25"]
	line := rag.find(t, map[string]string{"model": "test/under", "cell": "S"})
	checkNum(t, "rag oracle", line["oracle"], oracle["pass_at_1"])
	checkNum(t, "rag bm25", line["bm25"], bm25["pass_at_1"])
	checkNum(t, "rag delta", line["delta_bm25"], math.Round((bm25["pass_at_1"].(float64)-oracle["pass_at_1"].(float64))*100)/100)
	if len(rag.rows) != 1 {
		t.Errorf("RAG table: %d rows, want S alone (baseline has no retriever arm)", len(rag.rows))
	}
	// The greedy answers rotate through the mutants: the composition has
	// more than one class, and some cell both passes and fails.
	classes := 0
	for _, c := range compCols[1:] {
		if v, _ := pooled["S"][c].(float64); v > 0 {
			classes++
		}
	}
	if p, _ := pooled["S"]["pass_at_1"].(float64); classes < 2 || p == 0 || p == 100 {
		t.Errorf("the construction should give S a pass@1 strictly between 0 and 100 and several failure classes: %v", pooled["S"])
	}
	duckDBMetrics(t, work, vars, pipeline, t1)

	// The judge's calibration agreement and confusion matrix, counted here
	// from the judge rows, with Wilson's interval.
	cal := catJSONL(t, work, vars, pipeline, `node.judge.calibration["shapes"]`)
	n, agree := 0, 0
	confusion := map[[2]string]int{}
	for _, r := range cal {
		exp, class := r["expected"].(string), r["class"].(string)
		if exp == "" || class == "NotRun" {
			continue
		}
		n++
		if exp == class {
			agree++
		}
		confusion[[2]string{exp, class}]++
	}
	ag := tableByID(t, out, idx, "judge-agreement").find(t, map[string]string{"judge": `judge.calibration["shapes"]`})
	lo, hi := wilson(agree, n)
	if ag["samples"] != strconv.Itoa(n) || ag["agree"] != strconv.Itoa(agree) {
		t.Errorf("agreement row %v, want %d of %d", ag, agree, n)
	}
	for col, want := range map[string]float64{"agreement": 100 * float64(agree) / float64(n), "agreement_lo": lo, "agreement_hi": hi} {
		if g, err := strconv.ParseFloat(ag[col], 64); err != nil || math.Abs(g-want) > 1e-9 {
			t.Errorf("agreement %s = %q, want %v", col, ag[col], want)
		}
	}
	if agree == n || agree == 0 {
		t.Errorf("the scripted judge errs on the discarded mutant: agreement %d of %d should be partial", agree, n)
	}
	cm := tableByID(t, out, idx, "judge-confusion")
	cells := 0
	for _, row := range cm.rows {
		for class, v := range row {
			if class == "expected" || class == "samples" || class == "agree" {
				continue
			}
			if v != strconv.Itoa(confusion[[2]string{row["expected"], class}]) {
				t.Errorf("confusion %s → %s: %s, want %d", row["expected"], class, v, confusion[[2]string{row["expected"], class}])
			}
			cells += confusion[[2]string{row["expected"], class}]
		}
	}
	if cells != n {
		t.Errorf("the confusion matrix counts %d samples, want %d", cells, n)
	}

	// The tasks C1 keeps, by difficulty and by the target's kind.
	kinds := map[string]string{}
	for _, r := range catJSONL(t, work, vars, pipeline, `node.surface_diff.lib["shapes"]`) {
		kinds[r["api_id"].(string)] = r["kind"].(string)
	}
	type tally struct{ kept, made int }
	by := map[string]*tally{}
	add := func(k string, keep bool) {
		if by[k] == nil {
			by[k] = &tally{}
		}
		by[k].made++
		if keep {
			by[k].kept++
		}
	}
	for _, r := range c1Rows {
		keep := r["keep"] == true
		add("tasks", keep)
		add(r["difficulty"].(string), keep)
		add(map[string]string{"func": "functions", "method": "methods"}[kinds[r["api_id"].(string)]], keep)
	}
	kept := tableByID(t, out, idx, "tasks-kept").find(t, map[string]string{"library": "shapes"}) // its nodes' key
	if kept["tasks"] != strconv.Itoa(by["tasks"].made) || !strings.HasPrefix(kept["kept"], strconv.Itoa(by["tasks"].kept)+" (") {
		t.Errorf("tasks kept row %v, want %d of %d", kept, by["tasks"].kept, by["tasks"].made)
	}
	for _, col := range []string{"easy", "medium", "hard", "functions", "methods"} {
		got, ok := kept[col]
		switch {
		case by[col] != nil && got != fmt.Sprintf("%d/%d", by[col].kept, by[col].made):
			t.Errorf("tasks kept, %s: %q, want %d/%d", col, got, by[col].kept, by[col].made)
		case by[col] == nil && ok && got != "–":
			t.Errorf("tasks kept, %s: %q, but no task is one", col, got)
		}
	}

	checkFigures(t, out, idx, files, map[string][]string{
		"table1-metrics-table-pass-at-1":         {"test/under", "baseline", "S", "S@bm25"},
		"composition-metrics-table":              {"WrongSyntax", "WrongAPISelection", "WrongImport", "WrongParam", "WrongLogic"},
		"difficulty-metrics-table-test-under":    {"easy", "medium"},
		"rag-metrics-table-test-under":           {"oracle", "bm25"},
		"judge-confusion":                        {"OK", "WrongLogic", "WrongParam"},
		"tasks-kept":                             {"shapes", "easy", "medium", "all"},
		"library-metrics-table-test-under":       {"shapes"},
		"table1-metrics-table-pass-at-2":         {"test/under"},
		"table1-metrics-table-pass-at-1-sampled": {"test/under"},
	})
	checkSelfContained(t, string(files["index.html"]), len(idx.Figures))
	if r := lacuna(t, work, append(append([]string{"report"}, vars...), pipeline, "--out", out)...); r.code != 0 {
		t.Fatalf("second report: %s", r.stderr)
	}
	sameTree(t, files, readTree(t, out))
}

// wilson is Wilson's 95% score interval for k of n, in percent, written
// out here (the report takes it from analysis.MeanCI).
func wilson(k, n int) (lo, hi float64) {
	z := 1.959963984540054
	p, nn := float64(k)/float64(n), float64(n)
	center := (p + z*z/(2*nn)) / (1 + z*z/nn)
	half := z / (1 + z*z/nn) * math.Sqrt(p*(1-p)/nn+z*z/(4*nn*nn))
	return 100 * math.Max(0, center-half), 100 * math.Min(1, center+half)
}

// duckDBMetrics reads the metrics artifact's Parquet file with DuckDB
// (LACUNA_TEST_PYTHON's venv; skipped without it, failed in CI): its
// pooled pass@1 and intervals are Table 1's.
func duckDBMetrics(t *testing.T, dir string, vars []string, pipeline string, t1 reportTable) {
	t.Helper()
	python := os.Getenv("LACUNA_TEST_PYTHON")
	if python == "" {
		if os.Getenv("CI") == "true" {
			t.Error("LACUNA_TEST_PYTHON is not set: the DuckDB check of Table 1 did not run")
		}
		t.Log("LACUNA_TEST_PYTHON is not set: Table 1 checked against lacuna cat only")
		return
	}
	r := lacuna(t, dir, append(append([]string{"show", "--json"}, vars...), pipeline, "node.metrics.table")...)
	var m struct {
		Object struct{ Digest string } `json:"object"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || len(m.Object.Digest) < 2 {
		t.Fatalf("show: %v %s", err, r.stdout)
	}
	store := vars[slices.Index(vars, "--store")+1]
	file := filepath.Join(store, "cas", m.Object.Digest[:2], m.Object.Digest+".parquet")
	cmd := exec.Command(python, "-c", `import duckdb, json, sys
rows = duckdb.sql("select model, cell, pass_at_1, pass_at_1_lo, pass_at_1_hi from read_parquet('"+sys.argv[1]+"') where difficulty = 'all' and library = 'all'").fetchall()
print(json.dumps(rows))`, file)
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb: %v", err)
	}
	var rows [][]any
	if err := json.Unmarshal(b, &rows); err != nil || len(rows) == 0 {
		t.Fatalf("duckdb: %v %s", err, b)
	}
	for _, row := range rows {
		line := t1.find(t, map[string]string{"model": row[0].(string), "cell": row[1].(string)})
		for i, c := range []string{"pass_at_1", "pass_at_1_lo", "pass_at_1_hi"} {
			checkNum(t, "DuckDB "+c, line[c], row[2+i])
		}
	}
	t.Logf("Table 1 checked against DuckDB: %d rows", len(rows))
}

// cohensKappa is Cohen's κ from its definition, (pₒ − pₑ) / (1 − pₑ).
func cohensKappa(a, b []string) float64 {
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
