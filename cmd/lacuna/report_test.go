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
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

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
	exec.Command("cp", "-r", out, "/tmp/report-scratch/tsreport").Run() // DEBUG
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
		"retrieval-retrieval-eval-rrb-retrieve-bm25":          {"easy", "medium", "hard", "all"},
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

// catJSONL is `lacuna cat --format jsonl` of one node's rows.
func catJSONL(t *testing.T, dir string, vars []string, pipeline, addr string) []map[string]any {
	t.Helper()
	res := lacuna(t, dir, append(append([]string{"cat"}, vars...), pipeline, addr, "--format", "jsonl")...)
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
