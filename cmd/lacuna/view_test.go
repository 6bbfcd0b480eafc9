package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/lacuna-dev/lacuna/annotations"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// viewTask is what the scripted model needs of a task to answer it.
type viewTask struct {
	TaskID      string `json:"task_id"`
	Context     string `json:"context"`
	Description string `json:"description"`
	Mask        string `json:"mask"`
}

// viewModel plays the model under test and the judge of
// testdata/view/view.hcl. Under test, it answers cell S with the task's
// reference (the harness passes it: class OK), and so the baseline of
// the first task; the baseline of the others with the reference followed
// by a panic (the target is called, the program then crashes: the fast
// path cannot decide, the judge model answers WrongLogic), its prose
// carrying markup that must be shown as text.
type viewModel struct {
	mu    sync.Mutex
	tasks []viewTask
	first string // the first task_id
}

const (
	viewUnder = "test/under"
	viewJudge = "test/judge"
	// xss is in the baseline answers' prose and in one RRB query: the
	// viewer must show it as text, never as markup.
	xss = `<script>alert("xss")</script><b>bold</b>`
)

func (m *viewModel) reply(q llmtest.Request) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	text := q.Text()
	if q.Model == viewJudge {
		return `{"class": "WrongLogic", "rationale": "scripted judge: the program calls the target, then panics <i>boom</i>"}`
	}
	var task viewTask
	for _, t := range m.tasks {
		if strings.Contains(text, t.Context) && strings.Contains(text, t.Description) && len(t.Context)+len(t.Description) > len(task.Context)+len(task.Description) {
			task = t
		}
	}
	if task.TaskID == "" {
		return "```go\nvar _ = 1\n```"
	}
	if strings.Contains(text, "## Signature (S)") || task.TaskID == m.first {
		return "<think>\nThe signature says how.\n</think>\nHere is the code:\n```go\n" + task.Mask + "\n```\n"
	}
	return "Calling it " + xss + ":\n```go\n" + task.Mask + "\npanic(\"boom\")\n```\n"
}

// chromium is the Chromium the viewer's browser test drives:
// LACUNA_TEST_CHROMIUM (Debian's chromium package installs
// /usr/bin/chromium); the test is skipped without it, failed in CI.
func chromium(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("LACUNA_TEST_CHROMIUM")
	msg := ""
	switch {
	case bin == "":
		msg = "LACUNA_TEST_CHROMIUM is not set: install chromium (apt-get install chromium) and set it to /usr/bin/chromium"
	default:
		if _, err := exec.LookPath(bin); err != nil {
			msg = "LACUNA_TEST_CHROMIUM=" + bin + ": " + err.Error()
		}
	}
	if msg != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// viewRRB writes the first 40 rows of the released RRB to dir/rrb.jsonl,
// the first row's query with markup appended; it returns that row's
// sample_id. Skipped without the data, failed in CI.
func viewRRB(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join("..", "..", "..", "shared", "data", "toolsense", "toolsense-realistic-retrieval.jsonl")
	f, err := os.Open(src)
	if err != nil {
		msg := "ToolSense data is not at ../shared/data/toolsense beside the repository: " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	defer f.Close()
	var out bytes.Buffer
	first := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 0; n < 40 && sc.Scan(); n++ {
		var row map[string]any
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			row["query"] = row["query"].(string) + " " + xss
			first = row["sample_id"].(string)
		}
		b, _ := json.Marshal(row)
		out.Write(append(b, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, "rrb.jsonl"), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return first
}

// viewFixture is testdata/view/view.hcl run to completion against the
// scripted model, and `lacuna view` serving it.
type viewFixture struct {
	dir, file string
	vars      []string
	url       string
	xssQuery  string // the RRB sample whose query holds markup
	store     *artifacts.Store
}

func startView(t *testing.T) *viewFixture {
	t.Helper()
	nodetest.OfflineShapes(t)
	f := &viewFixture{dir: t.TempDir()}
	f.xssQuery = viewRRB(t, f.dir)
	src, err := os.ReadFile(filepath.Join("testdata", "view", "view.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	f.file = filepath.Join(f.dir, "view.hcl")
	if err := os.WriteFile(f.file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	model := &viewModel{}
	srv := llmtest.New(llmtest.Config{Models: []string{viewUnder, viewJudge}, Script: []llmtest.Rule{{Reply: model.reply}}})
	t.Cleanup(srv.Close)
	f.vars = []string{"--var", "endpoint=" + srv.URL(), "--var", "rrb=rrb.jsonl"}

	// Phase 1: the tasks, which the scripted model answers from.
	if r := lacuna(t, f.dir, append([]string{"run", "view.hcl", "--target", "node.tasks.lib"}, f.vars...)...); r.code != 0 {
		t.Fatalf("run the tasks: %s%s", r.stdout, r.stderr)
	}
	r := lacuna(t, f.dir, append([]string{"cat", "view.hcl", "node.tasks.lib", "--format", "jsonl", "--columns", "task_id,context,description,mask"}, f.vars...)...)
	if r.code != 0 {
		t.Fatalf("cat the tasks: %s", r.stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var vt viewTask
		if err := json.Unmarshal([]byte(line), &vt); err != nil {
			t.Fatal(err)
		}
		model.tasks = append(model.tasks, vt)
		if model.first == "" || vt.TaskID < model.first {
			model.first = vt.TaskID
		}
	}
	// Phase 2: everything.
	if r := lacuna(t, f.dir, append([]string{"run", "view.hcl"}, f.vars...)...); r.code != 0 {
		t.Fatalf("run: %s%s", r.stdout, r.stderr)
	}
	if f.store, err = artifacts.Open(filepath.Join(f.dir, ".lacuna")); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(lacunaBin, append([]string{"view", "view.hcl", "--addr", "127.0.0.1:0", "--annotator", "tester"}, f.vars...)...)
	cmd.Dir = f.dir
	cmd.Env = append(os.Environ(), "LACUNA_STORE=")
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 130) { // 130: stopped by SIGINT, as every command
				t.Errorf("lacuna view did not stop cleanly on SIGINT: %v\n%s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("lacuna view did not stop within 10s of SIGINT")
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("lacuna view printed no URL: %v\n%s", err, stderr.String())
	}
	m := regexp.MustCompile(`^lacuna view: (http://127\.0\.0\.1:\d+/)\n$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("lacuna view printed %q, want its URL on 127.0.0.1", line)
	}
	f.url = strings.TrimSuffix(m[1], "/")
	go io.Copy(io.Discard, stdout)
	return f
}

func (f *viewFixture) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(f.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (f *viewFixture) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	code, body := f.get(t, path+sep+"format=json")
	if code != 200 {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
}

// storeFiles lists every file of the store with its size and
// modification time: what a read-only handler must leave as it is.
func storeFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			out[p] = fmt.Sprint(info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	return out
}

type judgeRow struct {
	TaskID, SampleID, Model, Cell, Class, Rule, Path string
	Passed                                           bool
}

// judgeRows reads a judge node's rows through the viewer's JSON.
func (f *viewFixture) judgeRows(t *testing.T, addr string) (artifacts.Digest, []judgeRow) {
	t.Helper()
	var n struct{ Action *artifacts.Action }
	f.getJSON(t, "/node?addr="+url.QueryEscape(addr), &n)
	if n.Action == nil {
		t.Fatalf("%s has no action on its node page", addr)
	}
	var a struct {
		Rows []struct{ Row map[string]any }
	}
	f.getJSON(t, "/artifact/"+string(n.Action.Output.Digest)+"?n=500", &a)
	var out []judgeRow
	for _, r := range a.Rows {
		s := func(k string) string { v, _ := r.Row[k].(string); return v }
		out = append(out, judgeRow{s("task_id"), s("sample_id"), s("model"), s("cell"), s("class"), s("rule"), s("path"), r.Row["passed"] == true})
	}
	return n.Action.Output.Digest, out
}

// TestView runs testdata/view/view.hcl (NovelAPIBench on the offline
// fixture library with a scripted model and judge, ToolSense BM25 on a
// slice of the released RRB), serves it with `lacuna view`, checks its
// pages and JSON over HTTP (state, provenance, paging, filters, the
// drill-down, the gold tools, side by side, escaping, the annotation
// POST's guards, that reads write nothing), then drives headless
// Chromium through it, saving a label and checking it was stored as an
// artifact and that κ shows.
func TestView(t *testing.T) {
	f := startView(t)
	t.Run("http", func(t *testing.T) { testViewHTTP(t, f) })
	t.Run("browser", func(t *testing.T) { testViewBrowser(t, f) })

	// gc keeps every saved label set: they are artifacts no action wrote.
	saves, err := annotations.History(f.store, f.file)
	if err != nil || len(saves) == 0 {
		t.Fatalf("no label sets before gc: %v", err)
	}
	if r := lacuna(t, f.dir, append([]string{"gc", "view.hcl"}, f.vars...)...); r.code != 0 {
		t.Fatalf("gc: %s%s", r.stdout, r.stderr)
	}
	for _, sv := range saves {
		if _, err := annotations.LoadSave(f.store, f.file, sv); err != nil {
			t.Errorf("after gc, label set %s: %v", sv.Digest, err)
		}
	}
}

func testViewHTTP(t *testing.T, f *viewFixture) {
	before := storeFiles(t, f.store.Root())

	var dag struct {
		Nodes []struct {
			Addr, Type, State string
			Rows              int64
		}
	}
	f.getJSON(t, "/", &dag)
	if len(dag.Nodes) != 14 {
		t.Errorf("the DAG has %d nodes, want 14", len(dag.Nodes))
	}
	for _, n := range dag.Nodes {
		if n.State != "done" {
			t.Errorf("%s is %q after a full run, want done", n.Addr, n.State)
		}
	}

	// Provenance: the judge's action names its inputs and the model.
	var node struct {
		State  string
		Action *artifacts.Action
		Events []struct{ Event string }
	}
	f.getJSON(t, `/node?addr=`+url.QueryEscape(`node.judge.cell["baseline"]`), &node)
	if node.Action == nil || node.Action.Type != "judge" || len(node.Action.Inputs) != 2 || node.Action.Output.Rows != 3 {
		t.Fatalf("judge provenance: %+v", node.Action)
	}
	if len(node.Events) < 2 || node.Events[0].Event != "done" || node.Events[len(node.Events)-1].Event != "running" {
		t.Errorf("judge run-log events %+v, want done first (the newest), running last", node.Events)
	}
	_, body := f.get(t, `/node?addr=`+url.QueryEscape(`node.judge.cell["baseline"]`))
	for _, want := range []string{"logic version", "input samples", "node.solve.cell[&#34;baseline&#34;]", "Run log"} {
		if !strings.Contains(body, want) {
			t.Errorf("the judge's node page lacks %q", want)
		}
	}

	// Paging, filtering and sorting an artifact: the RRB import.
	var imp struct{ Action *artifacts.Action }
	f.getJSON(t, "/node?addr=node.import.rrb", &imp)
	type page struct {
		Matched, Total, Page, Pages int
		Rows                        []struct{ Row map[string]any }
	}
	art := "/artifact/" + string(imp.Action.Output.Digest)
	var p page
	f.getJSON(t, art+"?n=15&p=2", &p)
	if p.Total != 40 || p.Matched != 40 || p.Pages != 3 || p.Page != 2 || len(p.Rows) != 15 {
		t.Errorf("page 2 of 15: %d of %d rows, page %d of %d, %d shown", p.Matched, p.Total, p.Page, p.Pages, len(p.Rows))
	}
	f.getJSON(t, art+"?w=complexity%3Dhard&sort=query&n=100", &p)
	if p.Matched == 0 || p.Matched >= 40 {
		t.Errorf("complexity=hard matched %d of 40", p.Matched)
	}
	for i, r := range p.Rows {
		if r.Row["complexity"] != "hard" {
			t.Errorf("row %d of the hard filter is %v", i, r.Row["complexity"])
		}
		if i > 0 && r.Row["query"].(string) < p.Rows[i-1].Row["query"].(string) {
			t.Errorf("rows not sorted by query at %d", i)
		}
	}
	f.getJSON(t, art+"?w=query~SCRIPT%3EALERT", &p)
	if p.Matched != 1 {
		t.Errorf("a case-insensitive substring filter matched %d rows, want the 1 with markup", p.Matched)
	}
	if code, _ := f.get(t, art+"?w=nosuch%3D1"); code != 400 {
		t.Errorf("a filter on a missing column answered %d, want 400", code)
	}

	// Escaping: the markup in the query is text on every page showing it.
	for _, path := range []string{art + "?w=query~alert", "/query?retrieve=node.retrieve.bm25&sample=" + url.QueryEscape(f.xssQuery)} {
		_, body := f.get(t, path)
		if strings.Contains(body, "<script") || strings.Contains(body, "<b>bold") {
			t.Errorf("%s serves the row's markup as markup", path)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(&#34;xss&#34;)&lt;/script&gt;") {
			t.Errorf("%s does not show the row's markup as text", path)
		}
	}

	// The drill-down of a baseline sample: the verdict layers and the
	// judge's class and rationale.
	_, rows := f.judgeRows(t, `node.judge.cell["baseline"]`)
	if len(rows) != 3 {
		t.Fatalf("%d baseline judge rows, want 3", len(rows))
	}
	classes := map[string]int{}
	var jr judgeRow
	for _, r := range rows {
		classes[r.Class+" by "+r.Path]++
		if r.Class == "WrongLogic" && jr.TaskID == "" {
			jr = r
		}
	}
	if classes["WrongLogic by llm"] != 2 || classes["OK by rule"] != 1 {
		t.Fatalf("baseline classes %v, want 2 WrongLogic by the judge model, 1 OK by the fast path", classes)
	}
	var sample struct {
		TaskFields   []struct{ Name, Text string }
		BundleFields []struct{ Name, Text string }
		Samples      []struct {
			Cell, Class, Path, Rule, Prompt, Raw, Solution string
			Current                                        bool
			Layers                                         []struct{ Name, State string }
		}
	}
	sq := "/sample?" + url.Values{"judge": {`node.judge.cell["baseline"]`}, "task": {jr.TaskID}, "sample": {jr.SampleID}, "model": {jr.Model}, "cell": {jr.Cell}}.Encode()
	f.getJSON(t, sq, &sample)
	if len(sample.TaskFields) == 0 || len(sample.BundleFields) == 0 {
		t.Errorf("the drill-down lacks the task (%d fields) or the bundle (%d)", len(sample.TaskFields), len(sample.BundleFields))
	}
	if len(sample.Samples) != 2 {
		t.Fatalf("the drill-down shows %d cells, want baseline and S", len(sample.Samples))
	}
	cur, other := sample.Samples[0], sample.Samples[1]
	if !cur.Current || cur.Cell != "baseline" || other.Cell != "S" {
		t.Errorf("cells %s (current %v), %s", cur.Cell, cur.Current, other.Cell)
	}
	if !strings.Contains(cur.Rule, "scripted judge") || !strings.Contains(cur.Raw, xss) || !strings.Contains(cur.Solution, `panic("boom")`) || !strings.Contains(cur.Prompt, "<MASK>") {
		t.Errorf("baseline drill-down: rule %q, raw %q, solution %q", cur.Rule, cur.Raw, cur.Solution)
	}
	states := map[string]string{}
	for _, l := range cur.Layers {
		states[l.Name] = l.State
	}
	if states["build"] != "passed" || states["runtime"] != "failed" || states["comparative"] != "not reached" {
		t.Errorf("baseline layers %v: want build passed, runtime failed, comparative not reached", states)
	}
	for _, l := range other.Layers {
		if l.State != "passed" {
			t.Errorf("the S cell's reference answer: layer %s %s", l.Name, l.State)
		}
	}
	if other.Class != "OK" {
		t.Errorf("the S cell's class %s, want OK", other.Class)
	}

	// ToolSense: the ranked tools with the gold marked.
	var q struct {
		Query     string
		FirstGold int
		Ranked    []struct {
			Name string
			Gold bool
		}
		Gold []struct {
			Name string
			Rank int
		}
		RRBNode string
	}
	f.getJSON(t, "/query?retrieve=node.retrieve.bm25&sample="+url.QueryEscape(f.xssQuery), &q)
	if len(q.Ranked) != 10 || len(q.Gold) == 0 || q.RRBNode != "node.import.rrb" {
		t.Fatalf("query page: %d ranked, gold %v, rrb %q", len(q.Ranked), q.Gold, q.RRBNode)
	}
	for _, g := range q.Gold {
		if g.Rank > 0 && (q.Ranked[g.Rank-1].Name != g.Name || !q.Ranked[g.Rank-1].Gold) {
			t.Errorf("gold %s at rank %d is not marked there", g.Name, g.Rank)
		}
	}

	// Side by side: two cells, two retrievers.
	var cmp struct {
		Kind        string
		Both, Agree int
		Rows        []struct{ A, B string }
	}
	f.getJSON(t, "/compare?"+url.Values{"a": {`node.judge.cell["baseline"]`}, "b": {`node.judge.cell["S"]`}}.Encode(), &cmp)
	if cmp.Kind != "judge" || cmp.Both != 3 || cmp.Agree != 1 {
		t.Errorf("baseline vs S: %+v, want 3 paired samples, 1 the same class", cmp)
	}
	f.getJSON(t, "/compare?a=node.retrieve.bm25&b=node.retrieve.bm25_top3", &cmp)
	if cmp.Kind != "retrieve" || cmp.Both != 40 {
		t.Errorf("bm25 vs bm25_top3: %s, %d paired", cmp.Kind, cmp.Both)
	}

	// Reads wrote nothing.
	if after := storeFiles(t, f.store.Root()); fmt.Sprint(after) != fmt.Sprint(before) {
		for p, v := range after {
			if before[p] != v {
				t.Errorf("a GET changed %s", p)
			}
		}
		for p := range before {
			if _, ok := after[p]; !ok {
				t.Errorf("a GET removed %s", p)
			}
		}
	}

	// The annotation POST: only from the viewer's own page, with its token.
	_, page0 := f.get(t, sq)
	token := regexp.MustCompile(`name="token" value="([0-9a-f]+)"`).FindStringSubmatch(page0)
	if token == nil {
		t.Fatal("the drill-down page has no annotation form token")
	}
	form := url.Values{"token": {token[1]}, "kind": {"failure_class"}, "node": {`node.judge.cell["baseline"]`},
		"item": {annotations.JudgeItem(jr.TaskID, jr.SampleID, jr.Model, jr.Cell)}, "label": {"WrongParam"}, "annotator": {"http-test"}, "back": {"/"}}
	post := func(form url.Values, origin, host string) int {
		req, _ := http.NewRequest("POST", f.url+"/annotate", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if host != "" {
			req.Host = host
		}
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	bad := url.Values{}
	for k, v := range form {
		bad[k] = v
	}
	bad.Set("token", "0000")
	wrongItem := url.Values{}
	for k, v := range form {
		wrongItem[k] = v
	}
	wrongItem.Set("item", annotations.JudgeItem("no-such-task", "x", "", ""))
	for _, c := range []struct {
		name         string
		form         url.Values
		origin, host string
		want         int
	}{
		{"no origin", form, "", "", 403},
		{"another origin", form, "http://evil.example", "", 403},
		{"wrong token", bad, f.url, "", 403},
		{"a row that does not exist", wrongItem, f.url, "", 400},
		{"a Host that is not loopback", form, "http://evil.example", "evil.example", 421},
		{"the page's own form", form, f.url, "", 303},
	} {
		if got := post(c.form, c.origin, c.host); got != c.want {
			t.Errorf("POST /annotate, %s: %d, want %d", c.name, got, c.want)
		}
	}
	if code, _ := f.get(t, "/annotate"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /annotate: %d, want 405", code)
	}
	labels, err := annotations.Load(f.store, f.file)
	if err != nil || len(labels) != 1 || labels[0].Annotator != "http-test" || labels[0].Label != "WrongParam" {
		t.Fatalf("after one accepted POST the store holds %+v, %v", labels, err)
	}
}

// screenshot takes a full-page screenshot, checks it has content (a
// plausible size, many colours, not one background) and saves it under
// LACUNA_VIEW_SCREENSHOTS when set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", name, err)
	}
	b := img.Bounds()
	if b.Dx() < 800 || b.Dy() < 400 {
		t.Errorf("screenshot %s is %dx%d", name, b.Dx(), b.Dy())
	}
	colours := map[[3]uint32]int{}
	total := 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}]++
			total++
		}
	}
	most := 0
	for _, n := range colours {
		most = max(most, n)
	}
	if len(colours) < 50 || float64(most) > 0.97*float64(total) {
		t.Errorf("screenshot %s looks blank: %d colours, the commonest on %d of %d pixels", name, len(colours), most, total)
	}
	if dir := os.Getenv("LACUNA_VIEW_SCREENSHOTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
			t.Error(err)
		}
	}
}

func testViewBrowser(t *testing.T, f *viewFixture) {
	bin := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.WindowSize(1500, 1000))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		t.Fatalf("start %s: %v", bin, err)
	}
	ctx, cancel := context.WithTimeout(bctx, 3*time.Minute)
	defer cancel()
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// follow runs an action that loads a new page (a click on a link,
	// a submit) and waits for the load, so that the next query cannot
	// find the old page's element.
	follow := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, a)); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	var text string
	read := func(sel chromedp.CSS) {
		t.Helper()
		var err error
		if text, err = chromedp.Run(ctx, chromedp.Text(sel)); err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
	}
	want := func(where string, subs ...string) {
		t.Helper()
		for _, s := range subs {
			if !strings.Contains(text, s) {
				t.Errorf("%s: %q not in %q", where, s, cut(text, 800))
			}
		}
	}
	href := func(sel string) string {
		t.Helper()
		h, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(`+strconvQuote(sel)+`).href`))
		if err != nil {
			t.Fatalf("the link %s: %v", sel, err)
		}
		return h
	}

	// The DAG, every node done.
	do("open the DAG", chromedp.Navigate(f.url+"/"), chromedp.WaitVisible(chromedp.ID("dag")))
	read("#nodes")
	want("DAG table", `node.judge.cell["baseline"]`, `node.retrieve.bm25`, "done")
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#nodes .state:not(.done), #dag .box:not(.done)").length`)); err != nil || n != 0 {
		t.Errorf("DAG: %d nodes are not done (%v)", n, err)
	}
	screenshot(t, ctx, "dag")

	// DAG → the judge's node page → its artifact, filtered.
	follow("open the judge node", chromedp.Click(chromedp.CSS(`#nodes a[href^="/node?addr=node.judge.cell"][href*="baseline"]`)))
	read("#provenance")
	want("provenance", "judge (logic version", "input samples", "input tasks", "judge = test/judge")
	follow("open its artifact", chromedp.Click(chromedp.ID("output")))
	do("fill the filter", chromedp.SetValue(chromedp.CSS(`select[name="fc"]`), "class"), chromedp.SetValue(chromedp.CSS(`select[name="fo"]`), "="),
		chromedp.SendKeys(chromedp.CSS(`input[name="fv"]`), "WrongLogic"))
	follow("filter", chromedp.Submit(chromedp.ID("filter")))
	read("#matched")
	want("filtered artifact", "2 of 3 rows")
	judgeRows, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	read("#rows")
	want("filtered rows", "WrongLogic", "scripted judge")

	// The drill-down of the first sample.
	follow("drill down", chromedp.Click(chromedp.CSS("a.drill")))
	read("#cells")
	want("drill-down", "baseline", "judge class WrongLogic", "rationale: scripted judge", "runtime failed", "comparative not reached", "build passed",
		"judge class OK", "harness verdict: passed", xss, `panic("boom")`)
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.scripts.length + document.querySelectorAll("b i, pre b, pre i").length`))
	if err != nil || n != 0 {
		t.Errorf("the drill-down holds %d script or markup elements from the answer (%v): not escaped", n, err)
	}
	read("#task")
	want("task", "description", "context", "<MASK>")
	read("#bundle")
	want("bundle", "s_signature", "func ")
	screenshot(t, ctx, "drilldown")

	// Label this baseline sample WrongLogic (the judge's class) and the
	// one the judge said OK WrongParam. With the HTTP test's label
	// (WrongParam on a WrongLogic sample), people say WP, WL, WP where
	// the judge says WL, WL, OK: pₒ = 1/3, pₑ = 1/3·2/3 = 2/9, κ = 1/7.
	label := func(class, note string) {
		t.Helper()
		do("choose "+class, chromedp.SetValue(chromedp.ID("label"), class))
		do("name the annotator and type a note", chromedp.SetValue(chromedp.ID("annotator"), "browser"), chromedp.SendKeys(chromedp.ID("note"), note))
		follow("save", chromedp.Click(chromedp.ID("save")))
	}
	label("WrongLogic", "panics after the call <i>")
	read("#labeltable")
	want("label table", "browser", "WrongLogic", "panics after the call <i>")
	do("open the S cell", chromedp.Navigate(href(`article.cell:not(.current) h3 a`)))
	read("article.cell.current")
	want("the S cell's page", "S", "judge class OK")
	do("open the OK baseline samples", chromedp.Navigate(strings.Replace(judgeRows, "WrongLogic", "OK", 1)))
	follow("open the OK baseline sample", chromedp.Click(chromedp.CSS("a.drill")))
	read("article.cell.current")
	want("the OK baseline sample", "baseline", "judge class OK")
	label("WrongParam", "the baseline answer of the first task")
	read("#kappa")
	want("kappa", "κ = 0.14 over 3 labels (1 of 3 agree)")
	labels, err := annotations.Load(f.store, f.file)
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, l := range labels {
		if l.Annotator == "browser" {
			mine = append(mine, l.Node+" "+l.Label+" "+l.Note)
		}
	}
	if len(mine) != 2 || !strings.Contains(strings.Join(mine, "|"), `node.judge.cell["baseline"] WrongLogic panics after the call <i>`) {
		t.Errorf("the labels saved from the browser: %q", mine)
	}
	saves, err := annotations.History(f.store, f.file)
	if err != nil || len(saves) < 3 {
		t.Fatalf("history %v, %v: want a save per label", saves, err)
	}
	if _, err := os.Stat(f.store.ObjectPath(saves[len(saves)-1].Digest)); err != nil {
		t.Errorf("the current label set is not an artifact in cas/: %v", err)
	}
	do("annotations page", chromedp.Navigate(f.url+"/annotations"), chromedp.WaitVisible(chromedp.ID("kappas")))
	read("#kappas")
	want("annotations page", `people vs the judge, node.judge.cell["baseline"]`, "κ = ")

	// ToolSense: a query with its gold tools marked, reached from the DAG.
	do("open the retrieve node", chromedp.Navigate(f.url+"/node?addr=node.retrieve.bm25"))
	follow("browse its rows", chromedp.Click(chromedp.CSS("a.button")))
	follow("open a query", chromedp.Click(chromedp.CSS("a.drill")))
	read("#query")
	want("query", xss)
	gold, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#gold li").length`))
	if err != nil || gold < 1 {
		t.Errorf("the query page lists %d gold tools (%v)", gold, err)
	}
	read("#gold")
	want("gold list", "★")
	screenshot(t, ctx, "query")

	// Side by side, chosen from the DAG page's form.
	do("choose two judges", chromedp.Navigate(f.url+"/"),
		chromedp.SetValue(chromedp.CSS(`form.compare select[name="a"]`), `node.judge.cell["baseline"]`),
		chromedp.SetValue(chromedp.CSS(`form.compare select[name="b"]`), `node.judge.cell["S"]`))
	follow("side by side", chromedp.Submit(chromedp.CSS("form.compare")))
	read("#sbs")
	want("side by side", "WrongLogic", "OK (passed)")
	screenshot(t, ctx, "compare")
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// TestViewListensOnLoopbackOnly refuses an --addr that other machines
// could reach, before loading anything.
func TestViewListensOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":8080", "[::]:0", "192.168.1.2:80", "example.com:80", "nonsense"} {
		r := lacuna(t, t.TempDir(), "view", "p.hcl", "--addr", addr)
		if r.code != 2 || !strings.Contains(r.stderr, "--addr") {
			t.Errorf("lacuna view --addr %s: exit %d, %q; want a usage error about --addr", addr, r.code, r.stderr)
		}
	}
}
