package pipelines_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/experiments"
	"github.com/lacuna-dev/lacuna/nodes/filters"
	"github.com/lacuna-dev/lacuna/nodes/judge"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"

	_ "github.com/lacuna-dev/lacuna/nodes/bundle"
	_ "github.com/lacuna-dev/lacuna/nodes/discovery"
	_ "github.com/lacuna-dev/lacuna/nodes/experiments"
	_ "github.com/lacuna-dev/lacuna/nodes/generic"
	_ "github.com/lacuna-dev/lacuna/nodes/metrics"
)

// The served names of the three models of the pipeline, on one server.
const (
	underTest = "test/under"
	strong    = "test/strong"
	judgeID   = "test/judge"
	lib       = "shapes"
)

// sweepCells are the arms of the sweep: three cells with the oracle
// prepend, two with BM25 retrieval in its place.
var sweepCells = []string{"baseline", "S", "Full", "S@bm25", "Full@bm25"}

// The calibration kinds the scripted model answers with in the sweep, in
// the order tasks take them (each task its own rotation per cell).
var kinds = []string{"reference", goharness.MutantSibling, goharness.MutantImport, goharness.MutantSyntax,
	goharness.MutantPerturb, goharness.MutantNull, goharness.MutantDiscarded, goharness.MutantHardcoded}

// junk fails every harness: it compiles, and never calls the target.
const junk = "```go\nvar _ = 1\n```"

// script is what the scripted models answer: fixed once phase 1 has made
// the tasks, read by the server's goroutines after.
type script struct {
	mu      sync.Mutex
	tasks   []tasks.Row                  // C1-kept, by task_id
	answers map[string]map[string]string // task_id → kind → solution
	c2Easy  string                       // the task the model solves without knowledge (C2 drops it)
	c3Hard  string                       // the task the strong model cannot solve (C3 drops it)
	sweep   map[[2]string]string         // (task_id, cell) → kind
	sent    map[[2]string]string         // (task_id, cell) → the sweep's prompt received
}

// task finds the task whose description and context the prompt quotes
// (easy tasks of one API may share a context).
func (s *script) task(text string) (tasks.Row, bool) {
	var best tasks.Row
	for _, t := range s.tasks {
		n := len(t.Context) + len(t.Description)
		if strings.Contains(text, t.Context) && strings.Contains(text, t.Description) && n > len(best.Context)+len(best.Description) {
			best = t
		}
	}
	return best, best.TaskID != ""
}

// cellOf tells the arm of a sweep prompt: the oracle prepends one bundle
// (one signature heading), BM25 the top 5 chunks of the fixture's bundles,
// which hold more (checked against the generate rows below).
func cellOf(text string) string {
	arm := ""
	if strings.Count(text, "## Signature (S)") > 1 {
		arm = "@bm25"
	}
	switch {
	case strings.Contains(text, "## Source (M_code)"):
		return "Full" + arm
	case strings.Contains(text, "## Signature (S)"):
		return "S" + arm
	case strings.Contains(text, "## "):
		return "other"
	}
	return "baseline"
}

func fence(code string) string {
	return "<think>\nThe task needs the new API; let me write it.\n</think>\nHere is the code:\n```go\n" + code + "\n```\n"
}

var (
	solutionBlock  = regexp.MustCompile("(?s)\nSolution:\n```go\n(.*?)\n```")
	judgedBlock    = regexp.MustCompile("(?s)Solution to judge:\n```go\n(.*?)\n```")
	referenceBlock = regexp.MustCompile("(?s)Reference solution:\n```go\n(.*?)\n```")
)

func (s *script) reply(q llmtest.Request) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	text := q.Text()
	switch q.Model {
	case judgeID:
		if m := judgedBlock.FindStringSubmatch(text); m != nil {
			ref := referenceBlock.FindStringSubmatch(text)
			if ref != nil && strings.TrimSpace(ref[1]) == strings.TrimSpace(m[1]) {
				return `{"equivalent": true, "score": 1}`
			}
			return `{"equivalent": false, "score": 0}`
		}
		t, ok := s.task(text)
		m := solutionBlock.FindStringSubmatch(text)
		if !ok || m == nil {
			return "not a verdict"
		}
		for kind, code := range s.answers[t.TaskID] {
			if strings.TrimSpace(code) == strings.TrimSpace(m[1]) {
				if class, ok := goharness.ExpectedClass(kind); ok {
					return fmt.Sprintf(`{"class": %q, "rationale": "scripted: %s"}`, class, kind)
				}
			}
		}
		return "not a verdict"
	case strong:
		t, ok := s.task(text)
		if !ok || t.TaskID == s.c3Hard {
			return junk
		}
		return fence(s.answers[t.TaskID]["reference"])
	case underTest:
		t, ok := s.task(text)
		if !ok {
			return junk
		}
		if q.Seed != nil { // C2's samples (the sweep's have no seed)
			if t.TaskID == s.c2Easy {
				return fence(s.answers[t.TaskID]["reference"])
			}
			return junk
		}
		s.sent[[2]string{t.TaskID, cellOf(text)}] = text
		return fence(s.answers[t.TaskID][s.sweep[[2]string{t.TaskID, cellOf(text)}]])
	}
	return junk
}

// TestNovelAPIBenchEndToEnd runs pipelines/novelapibench.hcl on the offline
// fixture module against a scripted server playing the model under test,
// the strong model of C3 and the judge: the model answers the reference on
// some tasks and known calibration mutants on others, so C2, C3, every
// sample's class and every metric have exact expected values. A second run
// makes no model call.
func TestNovelAPIBenchEndToEnd(t *testing.T) {
	nodetest.OfflineShapes(t)
	src, err := os.ReadFile("novelapibench.hcl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "novelapibench.hcl")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	s := &script{answers: map[string]map[string]string{}, sweep: map[[2]string]string{}, sent: map[[2]string]string{}}
	srv := llmtest.New(llmtest.Config{Models: []string{underTest, strong, judgeID}, Script: []llmtest.Rule{{Reply: s.reply}}})
	defer srv.Close()
	vars := map[string]string{
		"endpoint":   srv.URL(),
		"model_id":   underTest,
		"strong_id":  strong,
		"judge_id":   judgeID,
		"libraries":  `{ shapes = { ecosystem = "go", name = "example.com/shapes", domain = "test" } }`,
		"cells":      `["baseline", "S", "Full"]`,
		"retrievers": `["oracle", "bm25"]`,
		"samples":    "2",
	}
	st, err := artifacts.Open(filepath.Join(dir, ".lacuna"))
	if err != nil {
		t.Fatal(err)
	}

	// Phase 1: the model-free stages make the tasks and their mutants.
	c1 := `node.c1.lib["shapes"]`
	out := run(t, st, file, vars, c1, `node.solve.calibration["shapes"]`)
	kept := map[string]bool{}
	for _, r := range read[filters.C1Row](t, st, out[c1]) {
		kept[r.TaskID] = r.Keep
	}
	for _, r := range read[tasks.Row](t, st, out[`node.tasks.lib["shapes"]`]) {
		if kept[r.TaskID] {
			s.tasks = append(s.tasks, r)
		}
	}
	sort.Slice(s.tasks, func(i, j int) bool { return s.tasks[i].TaskID < s.tasks[j].TaskID })
	if len(s.tasks) < 5 {
		t.Fatalf("%d tasks kept by C1; the fixture should give more", len(s.tasks))
	}
	for _, r := range read[tasks.SampleRow](t, st, out[`node.solve.calibration["shapes"]`]) {
		if s.answers[r.TaskID] == nil {
			s.answers[r.TaskID] = map[string]string{}
		}
		s.answers[r.TaskID][r.Kind] = r.Solution
	}
	s.c2Easy, s.c3Hard = s.tasks[0].TaskID, s.tasks[1].TaskID
	rest := s.tasks[2:]
	want := map[[2]string]string{} // (task, cell) → expected class
	for i, task := range rest {
		var avail []string
		for _, k := range kinds {
			if _, ok := s.answers[task.TaskID][k]; ok {
				avail = append(avail, k)
			}
		}
		for c, cell := range sweepCells {
			kind := avail[(i+c)%len(avail)]
			s.sweep[[2]string{task.TaskID, cell}] = kind
			class, _ := goharness.ExpectedClass(kind)
			if kind == "reference" {
				class = goharness.ClassOK
			}
			want[[2]string{task.TaskID, cell}] = class
		}
	}

	// A Go library's nodes leave ecosystem unset (null): their keys are
	// those of a pipeline without the attribute (quickstart.hcl), so a
	// store that ran it holds them.
	bare := filepath.Join(dir, "bare.hcl")
	if err := os.WriteFile(bare, regexp.MustCompile(`(?m)^\s*ecosystem\s*=\s*local\.ecosystem.*\n`).ReplaceAll(src, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	stripped := 0
	for _, e := range planEntries(t, st, bare, vars) {
		if _, ran := out[e.Node]; ran {
			stripped++
			if e.Status != engine.PlanCached {
				t.Errorf("without ecosystem attributes, %s is %s, want cached", e.Node, e.Status)
			}
		}
	}
	if stripped != len(out) {
		t.Errorf("the pipeline without ecosystem attributes plans %d of the %d nodes run", stripped, len(out))
	}

	// The plan counts C2's calls (3 samples of every C1-kept task), none
	// cached yet; what depends on C2 cannot be counted before it runs.
	plan := planCalls(t, st, file, vars)
	if c := plan[`node.generate.c2["under_test/shapes"]`]; len(c) != 1 || c[0].Calls != int64(3*len(s.tasks)) || c[0].Cached != 0 {
		t.Errorf("plan of C2's generate: %+v, want %d calls, 0 cached", c, 3*len(s.tasks))
	}

	// Phase 2: the whole pipeline.
	out = run(t, st, file, vars)
	for name, wantKeep := range map[string]func(id string) bool{
		`node.c2.lib["under_test/shapes"]`: func(id string) bool { return id != s.c2Easy },
		`node.c3.lib["under_test/shapes"]`: func(id string) bool { return id != s.c2Easy && id != s.c3Hard },
	} {
		n := 0
		for _, r := range readMaps(t, st, out[name]) {
			id := r["task_id"].(string)
			if !kept[id] {
				continue
			}
			n++
			if r["keep"].(bool) != wantKeep(id) {
				t.Errorf("%s: task %s keep = %v (%v)", name, id, r["keep"], r["reason"])
			}
		}
		if n != len(s.tasks) {
			t.Errorf("%s: %d rows of C1-kept tasks, want %d", name, n, len(s.tasks))
		}
	}

	// The BM25 arms prepend the top 5 chunks of the whole bundle pool: the
	// rows list them, best first, and the prompt the server received holds
	// them in that order. With Full, each bundle one chunk, the task's own
	// API ranks first for every task; with S alone, lexically thin, BM25
	// misses it for the first task (shapes.Stack.Len, medium: Stack.Len's
	// signature comes sixth), the cost Figure 3 measures.
	goldens := map[string][]string{
		"S":    {"Scale#0", "TotalArea#0", "Stack.Push#0", "Apply#0", "Clamp#0"},
		"Full": {"Stack.Len#0", "Scale#0", "Stack.Push#0", "Apply#0", "TotalArea#0"},
	}
	for _, cell := range []string{"S", "Full"} {
		addr := `node.generate.sweep["under_test/shapes/` + cell + `@bm25"]`
		rows := read[experiments.GenerateRow](t, st, out[addr])
		if len(rows) != 2*len(rest) {
			t.Errorf("%s: %d rows, want %d", addr, len(rows), 2*len(rest))
		}
		for _, r := range rows {
			var ids, texts []string
			for _, c := range r.Retrieved {
				ids = append(ids, strings.TrimPrefix(c.ChunkID, "example.com/shapes."))
				texts = append(texts, c.Text)
			}
			if r.Cell != cell+"@bm25" || r.Retriever != "bm25" || len(ids) != 5 || cellOf(r.Prompt) != r.Cell {
				t.Errorf("%s %s: cell %q (the script reads %q), retriever %q, chunks %v", addr, r.TaskID, r.Cell, cellOf(r.Prompt), r.Retriever, ids)
				continue
			}
			if sent := s.sent[[2]string{r.TaskID, r.Cell}]; !strings.Contains(sent, "that the task may need:\n\n"+strings.Join(texts, "\n\n")+"\n\nTask (") {
				t.Errorf("%s %s: the prompt received does not hold chunks %v in order:\n%s", addr, r.TaskID, ids, sent)
			}
			// The example the task was cut from holds its answer: the
			// pool leaves it out, as the oracle does.
			for _, task := range rest {
				if task.TaskID == r.TaskID && strings.Contains(strings.Join(texts, "\n"), "\n"+task.Example+":\n") {
					t.Errorf("%s %s: a chunk holds the task's own example %s", addr, r.TaskID, task.Example)
				}
			}
			if cell == "Full" && r.Retrieved[0].APIID != r.APIID {
				t.Errorf("%s %s: chunks %v, want the task's API %s first", addr, r.TaskID, ids, r.APIID)
			}
			if want := goldens[cell]; r.TaskID == rest[0].TaskID && !slices.Equal(ids, want) {
				t.Errorf("%s %s (%s %s): chunks %v, want %v", addr, r.TaskID, rest[0].Qualified, rest[0].Difficulty, ids, want)
			}
		}
	}

	// Every sample of the sweep lands in the class its answer stands for.
	passed := map[string]map[string]bool{} // cell → task → passed
	for _, cell := range sweepCells {
		addr := `node.judge.sweep["under_test/shapes/` + cell + `"]`
		rows := read[judge.JudgeRow](t, st, out[addr])
		if len(rows) != 2*len(rest) {
			t.Errorf("%s: %d samples, want %d", addr, len(rows), 2*len(rest))
		}
		passed[cell] = map[string]bool{}
		for _, r := range rows {
			w := want[[2]string{r.TaskID, cell}]
			if r.Class != w || r.Model != underTest || r.Cell != cell || r.Path == "fallback" {
				t.Errorf("%s %s %s (%s): class %s by %s (%s), want %s", cell, r.TaskID, r.SampleID, s.sweep[[2]string{r.TaskID, cell}], r.Class, r.Path, r.Rule, w)
			}
			if (r.Class == goharness.ClassOK) != r.Passed {
				t.Errorf("%s %s: passed %v with class %s", cell, r.TaskID, r.Passed, r.Class)
			}
			if r.Sem == nil || (*r.Sem == 1) != (w == goharness.ClassOK) {
				t.Errorf("%s %s: sem %v for class %s", cell, r.TaskID, r.Sem, w)
			}
			passed[cell][r.TaskID] = r.Passed
		}
	}

	// The metrics, recomputed from the construction: every sample of a
	// (task, cell) is the same answer, so pass@k is the fraction of tasks
	// answered with the reference.
	metrics := readMaps(t, st, out[`node.metrics.table`])
	for _, cell := range sweepCells {
		var row map[string]any
		for _, m := range metrics {
			if m["model"] == underTest && m["cell"] == cell && m["difficulty"] == "all" && m["library"] == "all" {
				row = m
			}
		}
		if row == nil {
			t.Fatalf("no pooled metrics row for %s", cell)
		}
		counts := map[string]int{}
		ok := 0
		for _, task := range rest {
			class := want[[2]string{task.TaskID, cell}]
			counts[class]++
			if class == goharness.ClassOK {
				ok++
			}
		}
		pct := func(n int) float64 { return math.Round(10000*float64(n)/float64(len(rest))) / 100 }
		checks := map[string]float64{
			"pass_at_1": pct(ok), "pass_at_5": math.NaN(), "sem": pct(ok), "ok": pct(ok),
			"wrong_syntax": pct(counts[goharness.ClassWrongSyntax]), "wrong_api_selection": pct(counts[goharness.ClassWrongAPISelection]),
			"wrong_import": pct(counts[goharness.ClassWrongImport]), "wrong_param": pct(counts[goharness.ClassWrongParam]),
			"wrong_logic": pct(counts[goharness.ClassWrongLogic]), "wrong_shape_dtype": 0,
		}
		if got := row["tasks"]; got != int64(len(rest)) {
			t.Errorf("%s: tasks %v, want %d", cell, got, len(rest))
		}
		for col, w := range checks {
			got, isNum := row[col].(float64)
			switch {
			case math.IsNaN(w):
				if row[col] != nil {
					t.Errorf("%s %s = %v, want null (2 samples < k)", cell, col, row[col])
				}
			case !isNum || math.Abs(got-w) > 0.005:
				t.Errorf("%s %s = %v, want %.2f", cell, col, row[col], w)
			}
		}
	}

	// A second run makes no model call: everything is cached.
	before := srv.Stats().Requests
	run(t, st, file, vars)
	if after := srv.Stats().Requests; after != before {
		t.Errorf("the second run made %d requests", after-before)
	}
	checkKeys(t, st, file, vars, "novelapibench_go")
}

// run runs the pipeline (the given targets, or all of it) and returns each
// instance's output object.
func run(t *testing.T, st *artifacts.Store, file string, vars map[string]string, targets ...string) map[string]artifacts.Object {
	t.Helper()
	cfg, diags := engine.Load(file)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g, diags := engine.Expand(cfg, engine.Options{Vars: vars})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	x := &engine.Executor{Store: st, Jobs: 2, Pipeline: file, Environ: os.Environ()}
	res, _, err := x.Run(context.Background(), g, targets)
	out := map[string]artifacts.Object{}
	for i, r := range res {
		if r.Err != nil {
			t.Errorf("%s: %v", i.Addr, r.Err)
		}
		out[i.Addr] = r.Output
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// planCalls plans the pipeline, counting model calls.
func planCalls(t *testing.T, st *artifacts.Store, file string, vars map[string]string) map[string][]nodes.CallPlan {
	t.Helper()
	out := map[string][]nodes.CallPlan{}
	for _, e := range planEntries(t, st, file, vars) {
		if e.Status == engine.PlanError {
			t.Errorf("plan: %s: %s", e.Node, e.Reason)
		}
		out[e.Node] = e.Calls
	}
	return out
}

// planEntries plans the pipeline, counting model calls.
func planEntries(t *testing.T, st *artifacts.Store, file string, vars map[string]string) []engine.PlanEntry {
	t.Helper()
	cfg, diags := engine.Load(file)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g, diags := engine.Expand(cfg, engine.Options{Vars: vars})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	x := &engine.Executor{Store: st, Pipeline: file, Environ: os.Environ(), CountCalls: true}
	entries, err := x.Plan(context.Background(), g, nil)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func read[T any](t *testing.T, st *artifacts.Store, obj artifacts.Object) []T {
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

// readMaps reads any artifact as column → value maps.
func readMaps(t *testing.T, st *artifacts.Store, obj artifacts.Object) []map[string]any {
	t.Helper()
	rd, err := st.Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, row := range rd.Rows() {
		var v any
		if err := rd.Schema().Reconstruct(&v, row); err != nil {
			t.Fatal(err)
		}
		out = append(out, v.(map[string]any))
	}
	return out
}
