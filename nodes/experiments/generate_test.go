package experiments_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/bundle"
	"github.com/lacuna-dev/lacuna/nodes/experiments"
	"github.com/lacuna-dev/lacuna/nodes/filters"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// TestGenerateSolveC2C3: a scripted model answers the reference on some
// tasks and junk on the others, without knowledge (3 samples, seeded) and
// with the Full bundle (2 identical samples); solve passes exactly the
// reference answers, C2 keeps the tasks the model fails at least twice,
// C3 those it solves with the bundle; running again makes no request.
func TestGenerateSolveC2C3(t *testing.T) {
	dir := t.TempDir()
	kept, c1rows := taskstest.KeptByC1(t, dir)
	// Without knowledge: task 0 solved on all 3 samples, task 1 on 2,
	// task 2 on 1, the rest never. With the Full bundle: tasks 2-5.
	baseSolved := map[int]int{0: 3, 1: 2, 2: 1}
	model := &taskstest.Scripted{Tasks: kept, Solves: func(k int, full bool, seed int64) bool {
		if full {
			return k >= 2 && k <= 5
		}
		return seed >= 100 && int(seed-100) < baseSolved[k]
	}}
	srv := llmtest.New(llmtest.Config{Models: []string{"test-model"}, Script: []llmtest.Rule{{Reply: model.Reply}}})
	defer srv.Close()
	src := taskstest.C1Node + taskstest.ModelBlock(srv.URL()) + `
node "generate" "base" {
  tasks       = node.c1.shapes
  model       = model.coder
  samples     = 3
  temperature = 0.8
  seed        = 100
}
node "solve" "base" {
  tasks     = node.c1.shapes
  solutions = node.generate.base
}
node "c2" "shapes" {
  tasks   = node.c1.shapes
  samples = node.solve.base
}
node "generate" "full" {
  tasks   = node.c2.shapes
  bundles = node.bundle.shapes
  model   = model.coder
  cell    = "Full"
  samples = 2
}
node "solve" "full" {
  tasks     = node.c2.shapes
  solutions = node.generate.full
}
node "c3" "shapes" {
  tasks      = node.c2.shapes
  samples    = node.solve.full
  strong     = model.coder # the scripted model plays both
  under_test = model.coder
  allow_self = true
}
`
	run := taskstest.Run(t, dir, src)
	model.Check(t)
	index := map[string]int{}
	for k, task := range kept {
		index[task.TaskID] = k
	}

	t.Run("generate rows", func(t *testing.T) {
		rows := nodetest.Read[experiments.GenerateRow](t, run, "node.generate.base")
		if len(rows) != 3*len(kept) {
			t.Fatalf("%d rows, want %d tasks × 3", len(rows), len(kept))
		}
		for i, r := range rows {
			k := i / 3
			if r.TaskID != kept[k].TaskID || r.Sample != int32(i%3) || r.SampleID != fmt.Sprintf("baseline#%d", i%3) || r.Cell != "baseline" || r.Model != "example/coder" {
				t.Errorf("row %d: task %s sample %d id %s cell %s model %s", i, r.TaskID, r.Sample, r.SampleID, r.Cell, r.Model)
			}
			if !strings.HasPrefix(r.Prompt, "[system]\n") || !strings.Contains(r.Prompt, kept[k].Description) || strings.Contains(r.Prompt, "Documentation") {
				t.Errorf("row %d: prompt\n%s", i, r.Prompt)
			}
			if r.PromptTokens == 0 || r.CompletionTokens == 0 || r.FinishReason != "stop" {
				t.Errorf("row %d: tokens %d/%d finish %q", i, r.PromptTokens, r.CompletionTokens, r.FinishReason)
			}
			if int(r.Sample) < baseSolved[k] {
				if strings.TrimSpace(r.Solution) != strings.TrimSpace(kept[k].Mask) || r.Thinking != taskstest.Thought || !strings.HasPrefix(r.Raw, "<think>") || !strings.HasPrefix(r.ExtractedBy, "fence") {
					t.Errorf("row %d: solution %q (by %s), thinking %q, want the mask %q", i, r.Solution, r.ExtractedBy, r.Thinking, kept[k].Mask)
				}
			}
		}
	})

	// The Full prompt holds the task's own bundle, less the example the
	// task was cut from.
	t.Run("the oracle prepend", func(t *testing.T) {
		bundles := map[string]bundle.Row{}
		for _, b := range nodetest.Read[bundle.Row](t, run, "node.bundle.shapes") {
			bundles[b.APIID] = b
		}
		rows := nodetest.Read[experiments.GenerateRow](t, run, "node.generate.full")
		if len(rows) != 2*(len(kept)-2) {
			t.Fatalf("%d Full rows, want %d tasks × 2", len(rows), len(kept)-2)
		}
		for _, r := range rows {
			task := kept[index[r.TaskID]]
			b := bundles[task.APIID]
			if b.Signature == "" || !strings.Contains(r.Prompt, b.Signature) || !strings.Contains(r.Prompt, b.MCode) || !strings.Contains(r.Prompt, b.MProse) {
				t.Errorf("%s: the prompt lacks its API's signature, source or prose:\n%s", taskstest.Name(task), r.Prompt)
			}
			if strings.Contains(r.Prompt, "\n"+task.Example+":\n") {
				t.Errorf("%s: the prompt shows the example the task was cut from, %s", taskstest.Name(task), task.Example)
			}
			if r.SampleID != fmt.Sprintf("Full#%d", r.Sample) {
				t.Errorf("%s: sample id %s", taskstest.Name(task), r.SampleID)
			}
		}
	})

	t.Run("solve passes exactly the reference answers", func(t *testing.T) {
		for _, c := range []struct {
			addr string
			want func(k int) int
			n    int
		}{
			{"node.solve.base", func(k int) int { return baseSolved[k] }, 3},
			{"node.solve.full", func(k int) int {
				if k >= 2 && k <= 5 {
					return 2
				}
				return 0
			}, 2},
		} {
			passed := map[int]int{}
			n := map[int]int{}
			for _, s := range nodetest.Read[tasks.SampleRow](t, run, c.addr) {
				k, ok := index[s.TaskID]
				if !ok {
					t.Fatalf("%s: sample of task %s, which C1 dropped", c.addr, s.TaskID)
				}
				n[k]++
				if s.Passed {
					passed[k]++
				}
				if s.Kind != "model" || s.Model != "example/coder" {
					t.Errorf("%s: kind %s model %s", c.addr, s.Kind, s.Model)
				}
			}
			for k := range kept {
				if c.addr == "node.solve.full" && k < 2 {
					if n[k] != 0 {
						t.Errorf("%s: task %d, dropped by C2, has %d samples", c.addr, k, n[k])
					}
					continue
				}
				if n[k] != c.n || passed[k] != c.want(k) {
					t.Errorf("%s: task %d: %d of %d passed, want %d of %d", c.addr, k, passed[k], n[k], c.want(k), c.n)
				}
			}
		}
	})

	t.Run("C2 and C3 keep exactly the expected tasks", func(t *testing.T) {
		c1Reason := map[string]string{}
		for _, c := range c1rows {
			if !c.Keep {
				c1Reason[c.TaskID] = c.Reason
			}
		}
		wantC2 := map[int]string{0: "C2: the model solved 3 of 3 samples without knowledge", 1: "C2: the model solved 2 of 3 samples without knowledge"}
		wantC3 := map[int]string{0: wantC2[0], 1: wantC2[1]}
		for k := 6; k < len(kept); k++ {
			wantC3[k] = "C3: the strong model solved 0 of 2 samples with the bundle (cell Full), want 1"
		}
		for _, c := range []struct {
			addr   string
			reason map[int]string
			note   string
		}{
			{"node.c2.shapes", wantC2, fmt.Sprintf("C2: %d tasks, %d kept (model solved 2 without knowledge)", len(kept), len(kept)-2)},
			{"node.c3.shapes", wantC3, fmt.Sprintf("C3: %d tasks, 4 kept (strong model solved too few of %d with the bundle, cell Full)", len(kept)-2, len(kept)-6)},
		} {
			rows := nodetest.Read[filters.FilterRow](t, run, c.addr)
			if len(rows) != len(c1rows) {
				t.Fatalf("%s: %d rows for %d tasks", c.addr, len(rows), len(c1rows))
			}
			for _, r := range rows {
				k, ok := index[r.TaskID]
				want, wantKeep := c1Reason[r.TaskID], false
				if ok {
					want = c.reason[k]
					wantKeep = want == ""
				}
				if r.Keep != wantKeep || r.Reason != want {
					t.Errorf("%s: task %d (%s): keep %v reason %q, want %v %q", c.addr, k, taskstest.Name(r.Row), r.Keep, r.Reason, wantKeep, want)
				}
			}
			if got := run.Notes("done")[c.addr]; got != c.note {
				t.Errorf("%s: note %q, want %q", c.addr, got, c.note)
			}
		}
	})

	// Samples 0 and 1 of a Full request are the same request: the server
	// must have been asked twice, once per sample.
	t.Run("identical requests of different samples are separate calls", func(t *testing.T) {
		full := 0
		for _, c := range srv.Calls() {
			if strings.Contains(c.Request.Text(), "## Signature (S)") {
				full++
				if c.Requests != 2 || c.Answers != 2 {
					t.Errorf("a Full request was sent %d times, answered %d, want 2 (one per sample)", c.Requests, c.Answers)
				}
			} else if c.Requests != 1 {
				t.Errorf("a seeded baseline request was sent %d times", c.Requests)
			}
		}
		if full != len(kept)-2 {
			t.Errorf("%d distinct Full requests, want %d (the tasks C2 keeps)", full, len(kept)-2)
		}
	})

	before := srv.Stats().Requests
	if want := 3*len(kept) + 2*(len(kept)-2); before != want {
		t.Errorf("%d requests, want %d", before, want)
	}
	again := taskstest.Run(t, dir, src)
	if n := srv.Stats().Requests - before; n != 0 {
		t.Errorf("running again made %d requests", n)
	}
	for addr, res := range again.Nodes {
		if res.State != "cached" {
			t.Errorf("%s: %s on the second run", addr, res.State)
		}
	}
}

// TestGenerateKeyFollowsTheTemplatesItsCellUses: editing E.tmpl recomputes
// the generate node whose cell (S+E) uses it and not the one whose cell (S)
// does not; a template naming a missing field fails at plan time with its
// file and line, before any call.
func TestGenerateKeyFollowsTheTemplatesItsCellUses(t *testing.T) {
	dir := t.TempDir()
	taskstest.Run(t, dir, "")
	srv := llmtest.New(llmtest.Config{Models: []string{"test-model"}, Default: "```go\nx := 1\n```"})
	defer srv.Close()
	tpl := filepath.Join(dir, "tpl")
	if err := os.Mkdir(tpl, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(tpl, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("E.tmpl", "Examples:\n{{range .Examples}}{{.Code}}\n{{end}}")
	src := taskstest.ModelBlock(srv.URL())
	for _, cell := range []string{"S", "S+E"} {
		src += fmt.Sprintf(`
node "generate" %q {
  tasks     = node.tasks.shapes
  bundles   = node.bundle.shapes
  model     = model.coder
  cell      = %q
  limit     = 2
  templates = "tpl"
}
`, strings.ReplaceAll(strings.ToLower(cell), "+", "_"), cell)
	}
	first := taskstest.Run(t, dir, src)
	write("E.tmpl", "Examples, edited:\n{{range .Examples}}{{.Code}}\n{{end}}")
	second := taskstest.Run(t, dir, src)
	for addr, recomputed := range map[string]bool{"node.generate.s": false, "node.generate.s_e": true} {
		if changed := first.Nodes[addr].Key != second.Nodes[addr].Key; changed != recomputed {
			t.Errorf("%s: key changed = %v, want %v", addr, changed, recomputed)
		}
		if want := map[bool]string{true: "done", false: "cached"}[recomputed]; string(second.Nodes[addr].State) != want {
			t.Errorf("%s: %s after the edit, want %s", addr, second.Nodes[addr].State, want)
		}
	}
	rows := nodetest.Read[experiments.GenerateRow](t, second, "node.generate.s_e")
	if len(rows) != 2 || !strings.Contains(rows[0].Prompt, "Examples, edited:") {
		t.Errorf("%d rows; the prompt does not use the edited template:\n%s", len(rows), rows[0].Prompt)
	}

	before := srv.Stats().Requests
	write("E.tmpl", "Examples:\n{{range .Examples}}{{.Code}}\n{{.Outpt}}{{end}}")
	bad := nodetest.RunErr(t, dir, taskstest.Pipeline+src)
	res := bad.Nodes["node.generate.s_e"]
	if res == nil || res.Err == nil || !strings.Contains(res.Err.Error(), filepath.Join(tpl, "E.tmpl")+":3:") || !strings.Contains(res.Err.Error(), "Outpt") {
		t.Errorf("generate with a bad template: %+v", res)
	}
	if st := bad.Nodes["node.generate.s"].State; st != "cached" {
		t.Errorf("the node whose cell does not use E.tmpl is %s", st)
	}
	if n := srv.Stats().Requests - before; n != 0 {
		t.Errorf("%d requests with a bad template", n)
	}
}

// TestPlanCountsGenerateCallsAndTheCachedOnes: lacuna plan's count of a
// generate node's calls: all of them at first; after a run of the first
// two tasks, the calls of those as cached, and the tokens of the rest
// (prompt characters / 4; per answer 40% of max_tokens before any answer
// is cached, then the cached answers' mean). Planning makes no call.
func TestPlanCountsGenerateCallsAndTheCachedOnes(t *testing.T) {
	dir := t.TempDir()
	taskstest.Run(t, dir, "")
	srv := llmtest.New(llmtest.Config{Models: []string{"test-model"}, Default: "```go\nx := 1\n```"})
	defer srv.Close()
	gen := func(limit int) string {
		return taskstest.ModelBlock(srv.URL()) + fmt.Sprintf(`
node "generate" "g" {
  tasks      = node.tasks.shapes
  model      = model.coder
  samples    = 2
  max_tokens = 100
  limit      = %d
}
`, limit)
	}
	plan := func() nodes.CallPlan {
		t.Helper()
		entries := nodetest.Plan(t, dir, taskstest.Pipeline+gen(3))
		for _, e := range entries {
			if e.Node == "node.generate.g" {
				if len(e.Calls) != 1 {
					t.Fatalf("plan entry %+v", e)
				}
				return e.Calls[0]
			}
		}
		t.Fatal("no plan entry for node.generate.g")
		return nodes.CallPlan{}
	}
	first := plan()
	if first.Model != "example/coder" || first.Calls != 6 || first.Cached != 0 || first.OutputTokens != 240 || first.PromptTokens == 0 {
		t.Errorf("plan before any run: %+v", first)
	}
	run := taskstest.Run(t, dir, gen(2))
	done := nodetest.Read[experiments.GenerateRow](t, run, "node.generate.g")
	var cachedPrompt int64
	for _, r := range done {
		// The estimate counts the messages' text, not the row's labels.
		text := strings.Replace(strings.Replace(r.Prompt, "[system]\n", "", 1), "\n\n[user]\n", "", 1)
		cachedPrompt += int64(len(text)) / 4
	}
	requests := srv.Stats().Requests
	second := plan()
	want := nodes.CallPlan{Model: "example/coder", Calls: 6, Cached: 4, PromptTokens: first.PromptTokens - cachedPrompt, OutputTokens: 10}
	if second != want {
		t.Errorf("plan after running 2 of 3 tasks: %+v, want %+v", second, want)
	}
	if n := srv.Stats().Requests - requests; n != 0 {
		t.Errorf("planning made %d requests", n)
	}
}

// TestPlanDoesNotEmbedTheDensePool: lacuna plan counts a dense node's calls
// without embedding the pool (the run's work, which fills the store's
// embed cache); once the run has embedded it, the plan retrieves from the
// cache and counts the calls the run made as cached.
func TestPlanDoesNotEmbedTheDensePool(t *testing.T) {
	dir := t.TempDir()
	taskstest.Run(t, dir, "")
	srv := llmtest.New(llmtest.Config{Models: []string{"test-model"}, Default: "```go\nx := 1\n```"})
	defer srv.Close()
	emb := experiments.WriteBagOfWordsBERT(t, strings.Fields("# signature ( s ) package \" example . com / shapes : func clamp"), 96)
	src := func(samples int) string {
		return taskstest.ModelBlock(srv.URL()) + fmt.Sprintf(`
node "generate" "g" {
  tasks        = node.tasks.shapes
  bundles      = node.bundle.shapes
  model        = model.coder
  cell         = "S"
  retriever    = "dense"
  embedder     = %q
  chunk_tokens = 96
  top_k        = 2
  max_tokens   = 100
  limit        = 2
  samples      = %d
}
`, emb, samples)
	}
	plan := func(samples int) nodes.CallPlan {
		t.Helper()
		entries := nodetest.Plan(t, dir, taskstest.Pipeline+src(samples))
		for _, e := range entries {
			if e.Node == "node.generate.g" && len(e.Calls) == 1 {
				return e.Calls[0]
			}
		}
		t.Fatalf("no calls planned for node.generate.g: %+v", entries)
		return nodes.CallPlan{}
	}
	vectors := func() int {
		n := 0
		filepath.WalkDir(filepath.Join(dir, ".lacuna", "cache", "embed"), func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	first := plan(1)
	if first.Calls != 2 || first.Cached != 0 || first.PromptTokens < 2*2*96 || vectors() != 0 {
		t.Errorf("plan before the run: %+v, %d vectors cached; want 2 calls, none cached, the chunks estimated, nothing embedded", first, vectors())
	}
	taskstest.Run(t, dir, src(1))
	if vectors() == 0 {
		t.Fatal("the run cached no vector")
	}
	// Two samples: the run's first of each task is cached.
	if second := plan(2); second.Calls != 4 || second.Cached != 2 {
		t.Errorf("plan after the run: %+v, want 4 calls, 2 cached", second)
	}
}

// TestGenerateSendsTheModelBlocksSettings: the model block's sampling
// defaults and system prompt reach the server, the node's settings
// override them, and api = "completions" sends one prompt.
func TestGenerateSendsTheModelBlocksSettings(t *testing.T) {
	dir := t.TempDir()
	taskstest.Run(t, dir, "")
	srv := llmtest.New(llmtest.Config{Models: []string{"test-model"}, Default: "```go\nx := 1\n```"})
	defer srv.Close()
	src := fmt.Sprintf(`
model "chat" {
  id          = "example/chat"
  endpoint    = %[1]q
  served_name = "test-model"
  temperature = 0.2
  top_p       = 0.9
  max_tokens  = 50
  seed        = 7
  system      = "SYSTEM FROM THE BLOCK"
  params      = { top_k = "20", repetition_penalty = "1.05", guided_note = "text" }
}
model "comp" {
  id          = "example/comp"
  endpoint    = %[1]q
  served_name = "test-model"
  api         = "completions"
}
node "generate" "defaults" {
  tasks = node.tasks.shapes
  model = model.chat
  limit = 1
}
node "generate" "overrides" {
  tasks       = node.tasks.shapes
  model       = model.chat
  limit       = 1
  temperature = 0.8
  top_p       = 0.5
  max_tokens  = 20
  seed        = 9
}
node "generate" "completions" {
  tasks = node.tasks.shapes
  model = model.comp
  limit = 1
}
`, srv.URL())
	run := taskstest.Run(t, dir, src)
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	want := map[string]struct {
		temperature, topP *float64
		maxTokens         int
		seed              *int64
	}{
		"node.generate.defaults":    {f(0.2), f(0.9), 50, i(7)},
		"node.generate.overrides":   {f(0.8), f(0.5), 20, i(9)},
		"node.generate.completions": {nil, nil, 0, nil},
	}
	byPrompt := map[string]llmtest.Request{}
	for _, c := range srv.Calls() {
		q := c.Request
		if q.API == "chat" {
			if len(q.Messages) != 2 || q.Messages[0].Role != "system" || q.Messages[0].Content != "SYSTEM FROM THE BLOCK" {
				t.Errorf("chat messages %+v", q.Messages)
			}
			byPrompt[fmt.Sprint(*q.Temperature)] = q
			// The block's params reach the server as body fields, JSON
			// when they parse as JSON.
			if q.Body["top_k"] != 20.0 || q.Body["repetition_penalty"] != 1.05 || q.Body["guided_note"] != "text" {
				t.Errorf("params in the body: top_k %v, repetition_penalty %v, guided_note %v", q.Body["top_k"], q.Body["repetition_penalty"], q.Body["guided_note"])
			}
		} else {
			byPrompt["completions"] = q
		}
	}
	if len(srv.Calls()) != 3 {
		t.Fatalf("%d calls, want 3", len(srv.Calls()))
	}
	for addr, w := range want {
		row := nodetest.Read[experiments.GenerateRow](t, run, addr)[0]
		key := "completions"
		if w.temperature != nil {
			key = fmt.Sprint(*w.temperature)
		}
		q := byPrompt[key]
		got := fmt.Sprint(val(q.Temperature), val(q.TopP), q.MaxTokens, val(q.Seed))
		if exp := fmt.Sprint(val(w.temperature), val(w.topP), w.maxTokens, val(w.seed)); got != exp {
			t.Errorf("%s: sent temperature, top_p, max_tokens, seed %s, want %s", addr, got, exp)
		}
		if row.Solution != "x := 1" {
			t.Errorf("%s: solution %q", addr, row.Solution)
		}
		if addr == "node.generate.completions" {
			if q.API != "completions" || row.Prompt != q.Prompt || !strings.HasPrefix(q.Prompt, "You are an expert Go programmer") {
				t.Errorf("completions: api %s prompt %q, row prompt %q", q.API, q.Prompt, row.Prompt)
			}
		} else if !strings.HasPrefix(row.Prompt, "[system]\nSYSTEM FROM THE BLOCK\n\n[user]\n") {
			t.Errorf("%s: prompt %q", addr, row.Prompt)
		}
	}
}

// val is *p, or "unset".
func val[T any](p *T) any {
	if p == nil {
		return "unset"
	}
	return *p
}

// TestGenerateFailsOnAFailedCallAndResumes: a call the server refuses
// (400, not retried) fails the node with an error that names the task and
// says what a re-run does; the re-run, against a server that answers,
// makes only the calls that were not answered.
func TestGenerateFailsOnAFailedCallAndResumes(t *testing.T) {
	dir := t.TempDir()
	byID := taskstest.ReadTasks(t, taskstest.Run(t, dir, ""))
	var ids []string
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	bad := byID[ids[1]]
	refuse := llmtest.New(llmtest.Config{Models: []string{"test-model"}, Default: "```go\nx := 1\n```",
		Script: []llmtest.Rule{{Contains: "Task (" + bad.Difficulty + "): " + bad.Description + "\n", Status: 400}}})
	defer refuse.Close()
	src := func(url string) string {
		return taskstest.ModelBlock(url) + `
node "generate" "g" {
  tasks   = node.tasks.shapes
  model   = model.coder
  limit   = 4
  samples = 2
}
`
	}
	res := nodetest.RunErr(t, dir, taskstest.Pipeline+src(refuse.URL())).Nodes["node.generate.g"]
	if res.Err == nil || !strings.Contains(res.Err.Error(), "task "+bad.TaskID+" sample ") || !strings.Contains(res.Err.Error(), "a re-run makes only the") || !strings.Contains(res.Err.Error(), "400") {
		t.Fatalf("error %v", res.Err)
	}
	answered := refuse.Stats().Answers
	answer := llmtest.New(llmtest.Config{Models: []string{"test-model"}, Default: "```go\nx := 1\n```"})
	defer answer.Close()
	run := taskstest.Run(t, dir, src(answer.URL()))
	if got := answer.Stats().Requests; got != 8-answered {
		t.Errorf("the re-run made %d requests, want %d (8 calls, %d answered before)", got, 8-answered, answered)
	}
	if rows := nodetest.Read[experiments.GenerateRow](t, run, "node.generate.g"); len(rows) != 8 {
		t.Errorf("%d rows, want 8", len(rows))
	}
}

// Bad configurations are errors at load time, at the attribute.
func TestGenerateRejectsBadConfig(t *testing.T) {
	for _, c := range []struct{ attrs, want string }{
		{`cell = "Fulll"`, `p.hcl:12,10-17: Unknown cell; unknown cell "Fulll"; the cells are "baseline", "S_name", "S", "E", "M_prose", "M_code", "S+M_prose", "S+E", "S+M_code", "S+M_prose+M_code", "S+E+M_code", "Full". Did you mean "Full"?`},
		{`cell = "S+E"`, `p.hcl:9,1-20: Bundles needed; cell S+E prepends the task's bundle: set bundles = node.bundle.NAME.`},
		{`samples = 0`, `p.hcl:12,13-14: Invalid samples; samples must be at least 1.`},
		{`top_p = 1.5`, `p.hcl:12,11-14: Invalid top_p; top_p must be in (0, 1].`},
		{`retriever = "bm42"`, "p.hcl:12,15-21: Unknown retriever; retriever must be \"oracle\", \"bm25\" or \"dense\", not \"bm42\"."},
		{`retriever = "bm25"`, "p.hcl:12,15-21: Nothing to retrieve; cell baseline prepends no knowledge: a retriever needs a cell with parts."},
		{"cell = \"S\"\n  bundles = node.import.x\n  retriever = \"dense\"", "p.hcl:14,15-22: Embedder needed; retriever \"dense\" needs embedder = \"DIR\""},
		{"cell = \"S\"\n  bundles = node.import.x\n  embedder = \"bge\"", "p.hcl:14,14-19: Embedder unused; embedder is used by retriever = \"bm25\" or \"dense\" only."},
		{"cell = \"S\"\n  bundles = node.import.x\n  pool = [node.import.x]", "p.hcl:14,10-25: Not retrieving; pool is used by retriever = \"bm25\" or \"dense\" only."},
		{"cell = \"S\"\n  bundles = node.import.x\n  retriever = \"bm25\"\n  embedder = \"bge\"\n  pooling = \"cls\"", "p.hcl:16,13-18: Pooling unused; pooling is used by retriever = \"dense\" only."},
		// The default overlap (64) against a chunk_tokens set alone.
		{"cell = \"S\"\n  bundles = node.import.x\n  retriever = \"bm25\"\n  chunk_tokens = 64", "p.hcl:15,18-20: Invalid chunk_overlap; chunk_overlap (64) must be at least 0 and less than the 64 tokens of a chunk."},
		{"cell = \"S\"\n  bundles = node.import.x\n  retriever = \"dense\"\n  embedder = \"bge\"\n  chunk_tokens = 66", "p.hcl:16,18-20: Invalid chunk_overlap; chunk_overlap (64) must be at least 0 and less than the 64 word pieces of a chunk (chunk_tokens less [CLS] and [SEP])."},
		{"cell = \"S\"\n  bundles = node.import.x\n  top_k = 3", "p.hcl:14,11-12: Not retrieving; top_k is used by retriever = \"bm25\" or \"dense\" only."},
		{"cell = \"S\"\n  bundles = node.import.x\n  retriever = \"bm25\"\n  top_k = 0", "p.hcl:15,11-12: Invalid top_k; top_k must be at least 1."},
		{"cell = \"S\"\n  bundles = node.import.x\n  retriever = \"bm25\"\n  chunk_overlap = 512", "p.hcl:15,19-22: Invalid chunk_overlap; chunk_overlap (512) must be at least 0 and less than the 512 tokens of a chunk."},
		{"cell = \"S\"\n  bundles = node.import.x\n  retriever = \"dense\"\n  embedder = \"bge\"\n  chunk_tokens = 66\n  chunk_overlap = 64", "p.hcl:17,19-21: Invalid chunk_overlap; chunk_overlap (64) must be at least 0 and less than the 64 word pieces of a chunk (chunk_tokens less [CLS] and [SEP])."},
		{"cell = \"S\"\n  bundles = node.import.x\n  retriever = \"dense\"\n  embedder = \"bge\"\n  pooling = \"max\"", "p.hcl:16,13-18: Unknown pooling; pooling must be \"cls\" or \"mean\", not \"max\"."},
	} {
		dir := t.TempDir()
		src := taskstest.ModelBlock("http://127.0.0.1:9/v1") + `node "import" "x" { path = "x.jsonl" }
node "generate" "g" {
  tasks = node.import.x
  model = model.coder
  ` + c.attrs + `
}
`
		_, diags := engine.ExpandSource(filepath.Join(dir, "p.hcl"), []byte(src), dir, engine.Options{})
		if !strings.Contains(diags.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.attrs, diags, c.want)
		}
	}
}

// TestGenerateStripsThinkingBeforeExtraction: with think = "strip" (the
// default) the code comes from the answer after the think block, with
// "keep" from the whole answer; raw and thinking are kept either way.
func TestGenerateStripsThinkingBeforeExtraction(t *testing.T) {
	dir := t.TempDir()
	taskstest.Run(t, dir, "")
	const answer = "<think>\n```go\na := 1\nb := 2\n```\n</think>\n```go\nx := 1\n```"
	srv := llmtest.New(llmtest.Config{Models: []string{"test-model"}, Default: answer})
	defer srv.Close()
	src := ""
	for _, mode := range []string{"strip", "keep"} {
		src += fmt.Sprintf(`
model %[1]q {
  id          = "example/%[1]s"
  endpoint    = %[2]q
  served_name = "test-model"
  think       = %[1]q
}
node "generate" %[1]q {
  tasks = node.tasks.shapes
  model = model.%[1]s
  limit = 1
}
`, mode, srv.URL())
	}
	run := taskstest.Run(t, dir, src)
	for mode, want := range map[string]string{"strip": "x := 1", "keep": "a := 1\nb := 2"} {
		row := nodetest.Read[experiments.GenerateRow](t, run, "node.generate."+mode)[0]
		if row.Solution != want || row.Raw != answer || row.Thinking != "```go\na := 1\nb := 2\n```" {
			t.Errorf("think = %s: solution %q, raw %q, thinking %q", mode, row.Solution, row.Raw, row.Thinking)
		}
	}
}

// TestGenerateRetrievesChunksInPlaceOfTheBundle: with retriever = "bm25"
// or "dense" the prompt holds the retrieved chunks, best first, where the
// oracle prepend holds the task's bundle; the rows list them and name the
// cell S@bm25 / S@dense. The dense node's key follows the content of the
// embedder's files (an edit recomputes it and nothing else), and chunks
// longer than the encoder's sequence fail the plan.
func TestGenerateRetrievesChunksInPlaceOfTheBundle(t *testing.T) {
	dir := t.TempDir()
	taskstest.Run(t, dir, "")
	srv := llmtest.New(llmtest.Config{Models: []string{"test-model"}, Default: "```go\nx := 1\n```"})
	defer srv.Close()
	emb := experiments.WriteBagOfWordsBERT(t, strings.Fields("# signature ( s ) package \" example . com / shapes : func clamp stack push pop [ ] t , v lo hi int"), 96)
	node := func(name, attrs string) string {
		return fmt.Sprintf(`
node "generate" %q {
  tasks   = node.c1.shapes
  bundles = node.bundle.shapes
  model   = model.coder
  cell    = "S"
  limit   = 3
  %s
}
`, name, attrs)
	}
	src := taskstest.C1Node + taskstest.ModelBlock(srv.URL()) + node("oracle", "") + node("bm25", `retriever = "bm25"
  top_k = 2`) + node("pooled", `retriever = "bm25"
  pool = [node.bundle.shapes]
  top_k = 2`) + node("dense", fmt.Sprintf(`retriever = "dense"
  embedder = %q
  pooling = "mean"
  chunk_tokens = 96
  top_k = 2`, emb))
	first := taskstest.Run(t, dir, src)
	for _, arm := range []string{"oracle", "bm25", "dense"} {
		rows := nodetest.Read[experiments.GenerateRow](t, first, "node.generate."+arm)
		if len(rows) != 3 {
			t.Fatalf("%s: %d rows, want 3", arm, len(rows))
		}
		for _, r := range rows {
			wantCell, wantChunks := "S@"+arm, 2
			if arm == "oracle" {
				wantCell, wantChunks = "S", 0
			}
			if r.Cell != wantCell || r.Retriever != arm || len(r.Retrieved) != wantChunks || r.SampleID != wantCell+"#0" {
				t.Errorf("%s %s: cell %q retriever %q sample %q, %d chunks; want %q, %d chunks", arm, r.TaskID, r.Cell, r.Retriever, r.SampleID, len(r.Retrieved), wantCell, wantChunks)
				continue
			}
			// The chunks, in order, are the knowledge of the prompt.
			var texts []string
			for i, c := range r.Retrieved {
				texts = append(texts, c.Text)
				if !strings.HasPrefix(c.ChunkID, c.APIID+"#") || (i > 0 && c.Score > r.Retrieved[i-1].Score) || c.Tokens < 1 {
					t.Errorf("%s %s: chunk %d %+v", arm, r.TaskID, i, c)
				}
			}
			if arm != "oracle" && !strings.Contains(r.Prompt, "that the task may need:\n\n"+strings.Join(texts, "\n\n")+"\n\nTask (") {
				t.Errorf("%s %s: the prompt does not hold the chunks in order:\n%s", arm, r.TaskID, r.Prompt)
			}
		}
	}

	// pool = [bundles] is the default pool.
	if a, b := nodetest.Read[experiments.GenerateRow](t, first, "node.generate.bm25"), nodetest.Read[experiments.GenerateRow](t, first, "node.generate.pooled"); !reflect.DeepEqual(a[0].Retrieved, b[0].Retrieved) {
		t.Errorf("pool = [node.bundle.shapes] retrieved %+v, the default pool %+v", b[0].Retrieved, a[0].Retrieved)
	}

	notes := first.Notes("done")
	for addr, want := range map[string]string{
		"node.generate.bm25":  "; bm25 retrieval: the top 2 chunks of 1 pools of 6 chunks on average (512 estimated word pieces, 64 overlap)",
		"node.generate.dense": "; dense retrieval: the top 2 chunks of 1 pools of 6 chunks on average (94 word pieces + [CLS] and [SEP], 64 overlap)",
	} {
		if !strings.HasSuffix(notes[addr], want) {
			t.Errorf("%s: note %q, want it to end %q", addr, notes[addr], want)
		}
	}

	// Editing a file of the embedder recomputes the dense node only.
	if err := os.WriteFile(filepath.Join(emb, "tokenizer_config.json"), []byte(`{"do_lower_case": true, "edited": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	second := taskstest.Run(t, dir, src)
	for addr, recomputed := range map[string]bool{"node.generate.oracle": false, "node.generate.bm25": false, "node.generate.dense": true} {
		if changed := first.Nodes[addr].Key != second.Nodes[addr].Key; changed != recomputed {
			t.Errorf("%s: key changed = %v after the embedder's edit, want %v", addr, changed, recomputed)
		}
	}

	twice := taskstest.C1Node + taskstest.ModelBlock(srv.URL()) + node("twice", `retriever = "bm25"
  pool = [node.bundle.shapes, node.bundle.shapes]`)
	res := nodetest.RunErr(t, dir, taskstest.Pipeline+twice).Nodes["node.generate.twice"]
	if res == nil || res.Err == nil || !strings.Contains(res.Err.Error(), "Invalid pool: the pool holds bundle example.com/shapes.Apply of example.com/shapes v1.1.0 twice") {
		t.Errorf("a pool naming a bundle node twice: %+v", res)
	}

	long := taskstest.C1Node + taskstest.ModelBlock(srv.URL()) + node("dense", fmt.Sprintf(`retriever = "dense"
  embedder = %q
  chunk_tokens = 97`, emb))
	res = nodetest.RunErr(t, dir, taskstest.Pipeline+long).Nodes["node.generate.dense"]
	if res == nil || res.Err == nil || !strings.Contains(res.Err.Error(), "chunk_tokens 97 exceeds the 96 tokens the embedder encodes") {
		t.Errorf("dense with chunks longer than the encoder's sequence: %+v", res)
	}
}

// TestGenerateEShowsExamplesOtherThanTheTasksSource: a task is cut from
// its API's Example function, which E never shows (it holds the task's
// answer). E shows the bundle's other valid examples by
// cells.SelectExamples' rule: the README's block before a test, another
// API's Example function, a benchmark; an invalid one never; at most
// max_examples of them. The model sees exactly that: the request's text
// holds the examples chosen.
func TestGenerateEShowsExamplesOtherThanTheTasksSource(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	asked := map[string]bool{} // request texts
	srv := llmtest.New(llmtest.Config{Models: []string{"test-model"}, Script: []llmtest.Rule{{Reply: func(q llmtest.Request) string {
		mu.Lock()
		asked[q.Text()] = true
		mu.Unlock()
		return "```go\nx := 1\n```"
	}}}})
	defer srv.Close()
	src := taskstest.ModelBlock(srv.URL()) + `
node "generate" "e" {
  tasks   = node.tasks.shapes
  bundles = node.bundle.shapes
  model   = model.coder
  cell    = "E"
}
node "generate" "one" {
  tasks        = node.tasks.shapes
  bundles      = node.bundle.shapes
  model        = model.coder
  cell         = "E"
  max_examples = 1
}
`
	run := taskstest.Run(t, dir, src)
	tks := taskstest.ReadTasks(t, run)
	byID := map[string]tasks.Row{}
	for _, task := range tks {
		byID[task.TaskID] = task
	}
	// The examples E shows, by API, in order (the fixture's bundles:
	// nodes/bundle's test).
	want := map[string][]string{
		"shapes.Scale":      {"README.md:5", "TestScaleKeepsItsInput"},
		"shapes.Clamp":      {"TestClamp"},
		"shapes.Apply":      {"BenchmarkApply"},
		"shapes.Stack.Push": {"ExampleStack_Len"}, // ExampleStack_Pop prints something else than it claims
		"shapes.Stack.Len":  {"ExampleStack_Push"},
		"shapes.TotalArea":  nil,
	}
	shown := func(prompt string) []string {
		_, e, ok := strings.Cut(prompt, "## Examples (E)\n")
		if !ok {
			t.Fatalf("no E in the prompt:\n%s", prompt)
		}
		// Each example is its name, a colon, then its fenced program.
		var names []string
		lines := strings.Split(e, "\n")
		for i := 0; i+1 < len(lines); i++ {
			if strings.HasSuffix(lines[i], ":") && lines[i+1] == "```go" {
				names = append(names, strings.TrimSuffix(lines[i], ":"))
			}
		}
		return names
	}
	for _, c := range []struct {
		addr string
		max  int
	}{{"node.generate.e", 2}, {"node.generate.one", 1}} {
		rows := nodetest.Read[experiments.GenerateRow](t, run, c.addr)
		if len(rows) != len(tks) {
			t.Fatalf("%s: %d rows for %d tasks", c.addr, len(rows), len(tks))
		}
		nonEmpty := 0
		for _, r := range rows {
			task := byID[r.TaskID]
			got := shown(r.Prompt)
			exp := want[task.Qualified]
			if len(exp) > c.max {
				exp = exp[:c.max]
			}
			if strings.Join(got, ",") != strings.Join(exp, ",") {
				t.Errorf("%s: %s (cut from %s): E shows %q, want %q", c.addr, taskstest.Name(task), task.Example, got, exp)
			}
			for _, name := range got {
				if name == task.Example {
					t.Errorf("%s: %s: E shows the task's own source %s", c.addr, taskstest.Name(task), name)
				}
			}
			if len(exp) == 0 && !strings.Contains(r.Prompt, "(no example)") {
				t.Errorf("%s: %s: an empty E does not say so:\n%s", c.addr, taskstest.Name(task), r.Prompt)
			}
			if len(got) > 0 {
				nonEmpty++
			}
			user := r.Prompt[strings.Index(r.Prompt, "[user]\n")+len("[user]\n"):]
			mu.Lock()
			sent := asked[user]
			mu.Unlock()
			if !sent {
				t.Errorf("%s: %s: the model was not sent the prompt the row records", c.addr, taskstest.Name(task))
			}
		}
		if nonEmpty == 0 {
			t.Errorf("%s: no task's E holds an example", c.addr)
		}
	}
}
