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

	"github.com/lacuna-dev/lacuna/analysis"
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
	_ "github.com/lacuna-dev/lacuna/nodes/parametric"
	_ "github.com/lacuna-dev/lacuna/nodes/trainingdata"
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
	sweep   map[[2]string]string         // (task_id, cell) → kind of the greedy answer
	passes  map[[2]string]int            // (task_id, cell) → sampled answers that are the reference
	sampled map[[2]string]int            // (task_id, cell) → sampled requests answered
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
		key := [2]string{t.TaskID, cellOf(text)}
		if q.Temperature != nil && *q.Temperature == 0 { // the greedy sample
			s.sent[key] = text
			return fence(s.answers[t.TaskID][s.sweep[key]])
		}
		// The sampled runs: the first passes[key] of a (task, cell)'s
		// requests get the reference, the others junk. The samples are
		// identical requests, so which sample gets which is arrival
		// order's; how many pass is not.
		s.sampled[key]++
		if s.sampled[key] <= s.passes[key] {
			return fence(s.answers[t.TaskID]["reference"])
		}
		return junk
	}
	return junk
}

// TestNovelAPIBenchEndToEnd runs pipelines/novelapibench.hcl on the offline
// fixture module against a scripted server playing the model under test,
// the strong model of C3 and the judge: the model's greedy answers are the
// reference on some tasks and known calibration mutants on others, and of
// its 3 sampled answers per task and cell 0 to 3 are the reference (partial
// passes), so C2, C3, every sample's class and every metric (pass@1 from
// the greedy samples, pass@k from the sampled ones, API_acc, Param_corr,
// the composition of the failures and their score intervals) have exact
// expected values. A second run makes no model call.
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
	s := &script{answers: map[string]map[string]string{}, sweep: map[[2]string]string{}, passes: map[[2]string]int{}, sampled: map[[2]string]int{}, sent: map[[2]string]string{}}
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
		"samples":    "3",
		"k":          "[1, 2]",
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
			// A mutant whose answer is the reference's text (an import
			// mutant of a span that names no package: its wrong import
			// is the context's, which an answer does not carry) stands
			// for nothing.
			if code, ok := s.answers[task.TaskID][k]; ok && (k == "reference" || code != s.answers[task.TaskID]["reference"]) {
				avail = append(avail, k)
			}
		}
		for c, cell := range sweepCells {
			kind := avail[(i+c)%len(avail)]
			s.sweep[[2]string{task.TaskID, cell}] = kind
			s.passes[[2]string{task.TaskID, cell}] = (i + 2*c) % 4
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
	// ranks it last of five for the first task (shapes.Stack.Len, easy),
	// the cost Figure 3 measures.
	goldens := map[string][]string{
		"S":    {"TotalArea#0", "Stack.Push#0", "Scale#0", "Apply#0", "Stack.Len#0"},
		"Full": {"Stack.Len#0", "Scale#0", "Stack.Push#0", "Apply#0", "TotalArea#0"},
	}
	for _, cell := range []string{"S", "Full"} {
		addr := `node.generate.sweep["under_test/shapes/` + cell + `@bm25"]`
		rows := read[experiments.GenerateRow](t, st, out[addr])
		if len(rows) != 3*len(rest) {
			t.Errorf("%s: %d rows, want %d", addr, len(rows), 3*len(rest))
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

	// Every greedy sample lands in the class its answer stands for, judged
	// by the judge model where the fast path leaves it.
	greedy := map[string][]judge.JudgeRow{} // cell → rows
	for _, cell := range sweepCells {
		addr := `node.judge.greedy["under_test/shapes/` + cell + `"]`
		rows := read[judge.JudgeRow](t, st, out[addr])
		if len(rows) != len(rest) {
			t.Errorf("%s: %d samples, want %d", addr, len(rows), len(rest))
		}
		greedy[cell] = rows
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
		}
		// The sampled runs: as many pass as the script answered with the
		// reference; their judge has no model (no sem, no call).
		passedOf := map[string]int{}
		for _, r := range read[judge.JudgeRow](t, st, out[`node.judge.sweep["under_test/shapes/`+cell+`"]`]) {
			if r.Passed {
				passedOf[r.TaskID]++
			}
			if r.Sem != nil || r.Path == "llm" {
				t.Errorf("%s %s: a sampled run judged by the model (path %s, sem %v)", cell, r.TaskID, r.Path, r.Sem)
			}
		}
		for _, task := range rest {
			if got, w := passedOf[task.TaskID], s.passes[[2]string{task.TaskID, cell}]; got != min(w, 3) {
				t.Errorf("%s %s: %d sampled runs pass, want %d", cell, task.TaskID, got, min(w, 3))
			}
		}
	}

	// The metrics, recomputed from the construction: pass@1 is the share of
	// tasks whose greedy answer is the reference; pass@1 (sampled) and
	// pass@2 come from c of n = 3 sampled answers per task (Chen et al.:
	// c = 0 → 0, 1 → 1 - C(2,2)/C(3,2) = 2/3, 2 and 3 → 1); API_acc and
	// Param_corr are the greedy rows' means; the composition is each
	// class's share of the greedy failures; each comes with its score
	// interval (Wilson's on 0/1 values) and n.
	metrics := readMaps(t, st, out[`node.metrics.table`])
	var partial struct{ api, corr, pass, sampled bool }
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
		ok, failures := 0, 0
		var sampled1, sampled2 []float64
		for _, task := range rest {
			class := want[[2]string{task.TaskID, cell}]
			counts[class]++
			if class == goharness.ClassOK {
				ok++
			} else {
				failures++
			}
			c := min(s.passes[[2]string{task.TaskID, cell}], 3)
			sampled1 = append(sampled1, float64(c)/3)
			sampled2 = append(sampled2, []float64{0, 2.0 / 3, 1, 1}[c])
		}
		api, corr := 0.0, []float64{}
		for _, r := range greedy[cell] {
			if r.APICalled {
				api++
			}
			if r.ParamCorr != nil {
				corr = append(corr, *r.ParamCorr)
			}
		}
		n := float64(len(rest))
		round := func(x float64) float64 { return math.Round(10000*x) / 100 }
		pct := func(k, of int) float64 { return round(float64(k) / float64(of)) }
		mean := func(xs []float64) float64 { return round(analysis.Mean(xs)) }
		p1lo, p1hi := wilsonPct(ok, len(rest))
		wpLo, wpHi := wilsonPct(counts[goharness.ClassWrongParam], failures)
		checks := map[string]float64{
			"tasks": n, "samples": 3 * n, "greedy": n, "failures": float64(failures),
			"pass_at_1": pct(ok, len(rest)), "pass_at_1_lo": p1lo, "pass_at_1_hi": p1hi, "pass_at_1_n": n,
			"pass_at_1_sampled": mean(sampled1), "pass_at_1_sampled_n": n,
			"pass_at_2": mean(sampled2), "pass_at_2_n": n,
			"api_acc": round(api / n), "api_acc_n": n,
			"param_corr": mean(corr), "param_corr_n": float64(len(corr)),
			"sem": pct(ok, len(rest)), "sem_n": n,
			"wrong_syntax": pct(counts[goharness.ClassWrongSyntax], failures), "wrong_api_selection": pct(counts[goharness.ClassWrongAPISelection], failures),
			"wrong_import": pct(counts[goharness.ClassWrongImport], failures), "wrong_param": pct(counts[goharness.ClassWrongParam], failures),
			"wrong_param_lo": wpLo, "wrong_param_hi": wpHi, "wrong_param_n": float64(failures),
			"wrong_logic": pct(counts[goharness.ClassWrongLogic], failures), "wrong_shape_dtype": 0, "unclassified": 0,
		}
		if p2, ok := analysis.MeanCI(sampled2, 0.95); ok {
			checks["pass_at_2_lo"], checks["pass_at_2_hi"] = round(p2.Lo), round(p2.Hi)
		}
		for col, w := range checks {
			var got float64
			switch v := row[col].(type) {
			case float64:
				got = v
			case int64:
				got = float64(v)
			default:
				t.Errorf("%s %s = %v (%T), want %.2f", cell, col, row[col], row[col], w)
				continue
			}
			if math.Abs(got-w) > 0.005 {
				t.Errorf("%s %s = %v, want %.2f", cell, col, got, w)
			}
		}
		partial.api = partial.api || api > 0 && api < n
		partial.corr = partial.corr || len(corr) > 0
		partial.pass = partial.pass || ok > 0 && failures > 0
		partial.sampled = partial.sampled || slices.Contains(sampled2, 2.0/3)
	}
	if !partial.api || !partial.corr || !partial.pass || !partial.sampled {
		t.Errorf("the construction should give a cell with partial API_acc, Param_corr, greedy passes and failures, and a task with 1 of 3 sampled passes: %+v", partial)
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

// wilsonPct is Wilson's 95% score interval for x of n, as the metrics'
// rounded percentages: analysis.MeanCI on 0/1 values.
func wilsonPct(x, n int) (lo, hi float64) {
	z := 1.959963984540054
	p, nn := float64(x)/float64(n), float64(n)
	center := (p + z*z/(2*nn)) / (1 + z*z/nn)
	half := z / (1 + z*z/nn) * math.Sqrt(p*(1-p)/nn+z*z/(4*nn*nn))
	r := func(v float64) float64 { return math.Round(math.Max(0, math.Min(1, v))*10000) / 100 }
	return r(center - half), r(center + half)
}
