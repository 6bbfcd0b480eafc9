package toolsense_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/toolsense"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

// rrbPrompt is what the scripted generator reads of a generation prompt.
type rrbPrompt struct {
	seed, tier string
	pool       []string
	feedback   string
}

var (
	seedLine = regexp.MustCompile(`(?m)^Tool Name: (.*)$`)
	tierLine = regexp.MustCompile(`Generate \d+ (\w+)-tier eval samples`)
)

func readRRBPrompt(text string) rrbPrompt {
	p := rrbPrompt{seed: seedLine.FindStringSubmatch(text)[1], tier: tierLine.FindStringSubmatch(text)[1]}
	list := text[strings.Index(text, "[START OF TOOL LIST]"):strings.Index(text, "[END OF TOOL LIST]")]
	for _, l := range strings.Split(list, "\n") {
		if name, _, ok := strings.Cut(strings.TrimPrefix(l, "- "), ": "); ok && strings.HasPrefix(l, "- ") {
			p.pool = append(p.pool, name)
		}
	}
	if _, fb, ok := strings.Cut(text, "[START OF FEEDBACK FROM PREVIOUS ATTEMPT]"); ok {
		p.feedback, _, _ = strings.Cut(fb, "[END OF FEEDBACK FROM PREVIOUS ATTEMPT]")
	}
	return p
}

func samples(query string, answer ...string) string {
	b, _ := json.Marshal(map[string]any{"samples": []any{map[string]any{"query": query, "answer": answer}}})
	return string(b)
}

// feedbackLog is the feedback each seed and tier's prompts carried, in
// order; the server's handlers write it concurrently.
type feedbackLog struct {
	mu sync.Mutex
	m  map[string][]string
}

func (f *feedbackLog) add(key, fb string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string][]string{}
	}
	f.m[key] = append(f.m[key], fb)
}

func (f *feedbackLog) get(key string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[key]
}

// rrbScript is a generator and judge whose answers depend on the seed,
// the tier and whether feedback came back:
//
//   - QR A&&a and every medium and hard unit: a good sample at once;
//   - QR B&&b (easy): an answer outside the pool, then, given the
//     validator's feedback, a good one;
//   - QR B&&c (easy): a query the judge rejects, then a good one;
//   - Weather&&week (easy): a query whose judge reply is garbage, then a
//     good one;
//   - Weather&&now (easy): a 24-word query on every attempt (dropped);
//   - the rest (easy): a good sample at once.
func rrbScript(feedbacks *feedbackLog) []llmtest.Rule {
	return []llmtest.Rule{
		{Contains: "You are a quality validator", Reply: func(q llmtest.Request) string {
			var vs []string
			for _, l := range strings.Split(q.Text(), "\n") {
				query, ok := strings.CutPrefix(l, "Query: ")
				switch {
				case !ok:
				case strings.Contains(query, "garble"):
					return "Looks fine to me!"
				case strings.Contains(query, "generic"):
					vs = append(vs, `{"validation_result": false, "reason": "too generic to be meaningful"}`)
				default:
					vs = append(vs, `{"validation_result": true, "reason": "concise business request"}`)
				}
			}
			return `{"verdicts": [` + strings.Join(vs, ", ") + `]}`
		}},
		{Contains: "You are a data generation expert", Reply: func(q llmtest.Request) string {
			p := readRRBPrompt(q.Text())
			api := p.seed[strings.Index(p.seed, "&&")+2:]
			good := fmt.Sprintf("Find %s help for %s", p.tier, api)
			if p.feedback != "" {
				feedbacks.add(p.seed+"/"+p.tier, p.feedback)
			}
			switch p.tier {
			case "medium":
				return samples(good, p.pool[1], p.seed)
			case "hard":
				return samples(good, p.pool...)
			}
			switch {
			case p.seed == "QR B&&b" && p.feedback == "":
				return samples(good, "Nowhere&&x")
			case p.seed == "QR B&&c" && p.feedback == "":
				return samples("generic data please", p.seed)
			case p.seed == "Weather&&week" && p.feedback == "":
				return "```json\n" + samples("weekly garble outlook", p.seed) + "\n```"
			case p.seed == "Weather&&now":
				return samples("I would really like to know what the weather will be like right now in the city where our main office happens to be", p.seed)
			}
			return samples(good, p.seed)
		}},
	}
}

const rrbPipeline = `
model "gen" {
  id          = "gen-model"
  endpoint    = %q
  max_retries = 0
}
node "catalog" "c" { path = "tools.jsonl" }
node "neighbors" "pools" {
  catalog  = node.catalog.c
  embedder = "bm25"
  k        = 4
}
node "rrb_generate" "rrb" {
  catalog = node.catalog.c
  pools   = node.neighbors.pools
  model   = model.gen
  samples = { easy = 1, medium = 1, hard = 1 }
  %s
}
node "retrieve" "bm25" {
  catalog   = node.catalog.c
  queries   = node.rrb_generate.rrb
  retriever = "bm25"
  k         = 3
}
node "retrieval_eval" "e" {
  retrieved = [node.retrieve.bm25]
  k         = [1, 3]
  bootstrap = 50
}
`

// TestRRBGenerateValidatesJudgesRetriesAndDrops runs the generator and
// the judge against the scripted server: good samples pass at once; an
// answer outside the pool, a judge rejection and an unparseable judge
// reply are each fixed on the retry their reasons reach; a sample too long
// on all 1 + 3 attempts is dropped and counted; the rows are the released
// RRB's shape, read unchanged by retrieve and retrieval_eval; a re-run
// makes no call, and a plan replays every call from the cache.
func TestRRBGenerateValidatesJudgesRetriesAndDrops(t *testing.T) {
	feedbacks := &feedbackLog{}
	srv := llmtest.New(llmtest.Config{Models: []string{"gen-model"}, Script: rrbScript(feedbacks)})
	defer srv.Close()
	dir := t.TempDir()
	write(t, dir, "tools.jsonl", neighborsTools)
	src := fmt.Sprintf(rrbPipeline, srv.URL(), "")
	r := nodetest.Run(t, dir, src)
	rows := nodetest.Read[toolsense.RRBRow](t, r, "node.rrb_generate.rrb")

	attempts := map[string]int64{}
	for _, row := range rows {
		attempts[row.Seed+"/"+row.Complexity] = row.Attempt
		var pool []ts.Tool
		if err := json.Unmarshal([]byte(row.AnalyzedTools), &pool); err != nil || len(pool) != 5 || *pool[0].ToolName != row.Seed {
			t.Errorf("%s: analyzed_tools %s (%v): want the 5-tool pool, seed first", row.SampleID, row.AnalyzedTools, err)
		}
		if row.Complexity == "easy" {
			var tool ts.Tool
			if err := json.Unmarshal([]byte(row.Tool), &tool); err != nil || *tool.ToolName != row.Seed {
				t.Errorf("%s: easy tool %s (%v): want the seed's object", row.SampleID, row.Tool, err)
			}
		} else {
			var tools []ts.Tool
			if err := json.Unmarshal([]byte(row.Tool), &tools); err != nil || len(tools) < 2 {
				t.Errorf("%s: %s tool %s (%v): want a list", row.SampleID, row.Complexity, row.Tool, err)
			}
		}
	}
	for key, want := range map[string]int64{"QR A&&a/easy": 1, "QR B&&b/easy": 2, "QR B&&c/easy": 2, "Weather&&week/easy": 2, "Stocks&&quote/hard": 1, "Translate&&text/medium": 1} {
		if attempts[key] != want {
			t.Errorf("%s accepted at attempt %d, want %d", key, attempts[key], want)
		}
	}
	if _, ok := attempts["Weather&&now/easy"]; ok || len(rows) != 8*3-1 {
		t.Errorf("%d rows (Weather&&now/easy present: %v), want 23: every unit but the too-long one", len(rows), ok)
	}
	for key, want := range map[string]string{
		"QR B&&b/easy":       `not in pool: answer "Nowhere&&x" is not in the candidate pool`,
		"QR B&&c/easy":       `judge rejected: "generic data please": too generic to be meaningful`,
		"Weather&&week/easy": `judge rejected: "weekly garble outlook": judge reply unparseable`,
		"Weather&&now/easy":  "too long: 24 words, the easy tier needs under 20",
	} {
		if fb := feedbacks.get(key); len(fb) == 0 || !strings.Contains(fb[0], want) {
			t.Errorf("%s: the retry's feedback %q does not carry %q", key, fb, want)
		}
	}
	if n := len(feedbacks.get("Weather&&now/easy")); n != 3 {
		t.Errorf("Weather&&now/easy got feedback %d times, want 3 (retries)", n)
	}
	// The judge ran at temperature 0; generation at the block's default.
	for _, c := range srv.Calls() {
		judge := strings.Contains(c.Request.Text(), "quality validator")
		if judge && (c.Request.Temperature == nil || *c.Request.Temperature != 0) || !judge && c.Request.Temperature != nil {
			t.Errorf("judge %v call with temperature %v", judge, c.Request.Temperature)
		}
	}
	note := r.Notes(engine.EventDone)["node.rrb_generate.rrb"]
	wantContains(t, note, "23 RRB rows from 8 seeds", "1 samples dropped", "too long 1")
	if ev := nodetest.Read[toolsense.EvalRow](t, r, "node.retrieval_eval.e"); len(ev) != 4*2 || ev[len(ev)-1].Queries != 23 {
		t.Errorf("retrieval_eval over the generated rows: %+v", ev)
	}
	if got := nodetest.Read[toolsense.RetrieveRow](t, r, "node.retrieve.bm25"); len(got) != 23 || got[0].AnswersNotInCatalog != 0 {
		t.Errorf("retrieve over the generated rows: %d rows, first %+v", len(got), got[0])
	}

	// A re-run asks nothing; a plan of a changed key replays every call.
	before := srv.Stats().Requests
	nodetest.Run(t, dir, src)
	if n := srv.Stats().Requests - before; n != 0 {
		t.Errorf("a re-run made %d requests, want 0", n)
	}
	gen, judge := planCalls(t, dir, fmt.Sprintf(rrbPipeline, srv.URL(), "retries = 3"))
	// 24 first attempts and 6 retries: QR B&&b, QR B&&c and Weather&&week
	// once each, Weather&&now 3 times.
	if gen.Calls != 30 || gen.Cached != 30 || judge.Calls != judge.Cached || judge.Calls == 0 {
		t.Errorf("plan of the cached calls: generator %+v, judge %+v; want 30 generation calls, all cached", gen, judge)
	}
	if srv.Stats().Requests != before {
		t.Errorf("the plan made requests")
	}
}

// planCalls plans src in dir and returns rrb_generate's two call plans.
func planCalls(t *testing.T, dir, src string) (gen, judge nodes.CallPlan) {
	t.Helper()
	entries := nodetest.Plan(t, dir, src)
	for _, e := range entries {
		if e.Node == "node.rrb_generate.rrb" {
			if len(e.Calls) != 2 {
				t.Fatalf("plan entry %+v", e)
			}
			return e.Calls[0], e.Calls[1]
		}
	}
	t.Fatal("no plan entry for node.rrb_generate.rrb")
	return
}

// TestRRBGeneratePlansFirstAttemptsBeforeAnyRun: on a fresh store the
// plan counts one generation and one judge call per seed and tier.
func TestRRBGeneratePlansFirstAttemptsBeforeAnyRun(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Models: []string{"gen-model"}, Script: rrbScript(&feedbackLog{})})
	defer srv.Close()
	dir := t.TempDir()
	write(t, dir, "tools.jsonl", neighborsTools)
	src := fmt.Sprintf(rrbPipeline, srv.URL(), "")
	// The pools must be in the store for the node's calls to be known.
	nodetest.Run(t, dir, strings.Split(src, `node "rrb_generate"`)[0])
	gen, judge := planCalls(t, dir, src)
	if gen.Calls != 24 || gen.Cached != 0 || judge.Calls != 24 || gen.Model != "gen-model" || gen.PromptTokens == 0 {
		t.Errorf("fresh plan: generator %+v, judge %+v; want 24 and 24 calls, none cached", gen, judge)
	}
	if srv.Stats().Requests != 0 {
		t.Errorf("the plan made %d requests", srv.Stats().Requests)
	}
}

func TestRRBGenerateRejectsBadConfig(t *testing.T) {
	head := `
model "gen" {
  id       = "gen-model"
  endpoint = "http://127.0.0.1:1/v1"
}
node "catalog" "c" { path = "tools.jsonl" }
node "neighbors" "p" {
  catalog  = node.catalog.c
  embedder = "bm25"
}
node "rrb_generate" "r" {
  catalog = node.catalog.c
  pools   = node.neighbors.p
  model   = model.gen
`
	wantContains(t, configErr(t, head+"samples = { trivial = 1 }\n}\n"), "Unknown tier")
	wantContains(t, configErr(t, head+"samples = { easy = 0 }\n}\n"), "Invalid samples")
	wantContains(t, configErr(t, head+"retries = -1\n}\n"), "Invalid retries")
}

// TestRRBGenerateAsksTheJudgeModelWhenGiven: with judge = model.X the
// verdicts come from that model (its id in the plan), the samples from
// model.
func TestRRBGenerateAsksTheJudgeModelWhenGiven(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Models: []string{"gen-model", "judge-model"}, Script: rrbScript(&feedbackLog{})})
	defer srv.Close()
	dir := t.TempDir()
	write(t, dir, "tools.jsonl", neighborsTools)
	src := fmt.Sprintf(rrbPipeline, srv.URL(), "judge = model.judge") + fmt.Sprintf(`
model "judge" {
  id       = "judge-model"
  endpoint = %q
}
`, srv.URL())
	r := nodetest.Run(t, dir, src)
	if n := len(nodetest.Read[toolsense.RRBRow](t, r, "node.rrb_generate.rrb")); n != 23 {
		t.Errorf("%d rows, want 23", n)
	}
	judged := 0
	for _, c := range srv.Calls() {
		isJudge := strings.Contains(c.Request.Text(), "quality validator")
		if want := map[bool]string{true: "judge-model", false: "gen-model"}[isJudge]; c.Request.Model != want {
			t.Errorf("judge %v call went to %s, want %s", isJudge, c.Request.Model, want)
		}
		if isJudge {
			judged++
		}
	}
	if judged != 25 {
		t.Errorf("%d judge calls, want 25 (22 first attempts with valid samples, 3 retries)", judged)
	}
	gen, judge := planCalls(t, dir, fmt.Sprintf(rrbPipeline, srv.URL(), "judge = model.judge\nretries = 3")+fmt.Sprintf("model \"judge\" {\n  id = \"judge-model\"\n  endpoint = %q\n}\n", srv.URL()))
	if gen.Model != "gen-model" || judge.Model != "judge-model" || judge.Calls != 25 || judge.Cached != 25 {
		t.Errorf("plan: generator %+v, judge %+v", gen, judge)
	}
}

// rrbWithRules is rrbScript behind the given rules (the first matching
// rule answers).
func rrbWithRules(feedbacks *feedbackLog, rules ...llmtest.Rule) []llmtest.Rule {
	return append(rules, rrbScript(feedbacks)...)
}

// TestRRBGeneratePlansWhatAFailedRunLeftUnmade: the judge's server fails
// (500, no retries), so the run fails after the 24 generation calls are
// cached and with no judge answer. The plan counts each judge call once:
// the 22 of the units with valid samples, and one for each of the 2 units
// whose retry (a generation call not cached) is still to make.
func TestRRBGeneratePlansWhatAFailedRunLeftUnmade(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Models: []string{"gen-model"},
		Script: rrbWithRules(&feedbackLog{}, llmtest.Rule{Contains: "You are a quality validator", Status: 500})})
	defer srv.Close()
	dir := t.TempDir()
	write(t, dir, "tools.jsonl", neighborsTools)
	src := fmt.Sprintf(rrbPipeline, srv.URL(), "")
	r := nodetest.RunErr(t, dir, src)
	wantContains(t, nodeErr(t, r, "node.rrb_generate.rrb"), "judge calls failed")
	gen, judge := planCalls(t, dir, src)
	if gen.Calls != 26 || gen.Cached != 24 || judge.Calls != 24 || judge.Cached != 0 {
		t.Errorf("plan after the failed run: generator %+v, judge %+v; want 26 generation calls (24 cached) and 24 judge calls", gen, judge)
	}
}

// TestRRBGenerateRejectsWhatTheServerRefuses: a refused call (HTTP 400)
// does not fail the node: a refused judge call rejects its samples, a
// refused generation call is a rejected attempt, each with its reason,
// fed back to the retry and counted in the note.
func TestRRBGenerateRejectsWhatTheServerRefuses(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rule     llmtest.Rule
		rows     int
		feedback string // a retry's feedback of QR A&&a/easy carries it
		note     string
	}{
		{"judge", llmtest.Rule{Contains: "You are a quality validator", Status: 400}, 0,
			`judge refused: HTTP 400 Bad Request`, "0 RRB rows from 8 seeds"},
		{"generation", llmtest.Rule{Contains: "Tool Name: QR A&&a", Status: 400}, 20,
			`generation refused: HTTP 400 Bad Request`, "20 RRB rows from 8 seeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			feedbacks := &feedbackLog{}
			srv := llmtest.New(llmtest.Config{Models: []string{"gen-model"}, Script: rrbWithRules(feedbacks, tc.rule)})
			defer srv.Close()
			dir := t.TempDir()
			write(t, dir, "tools.jsonl", neighborsTools)
			// retrieval_eval fails on no rows: only rrb_generate must succeed.
			r := nodetest.RunErr(t, dir, fmt.Sprintf(rrbPipeline, srv.URL(), "retries = 1"))
			if err := r.Nodes["node.rrb_generate.rrb"].Err; err != nil {
				t.Fatal(err)
			}
			if n := len(nodetest.Read[toolsense.RRBRow](t, r, "node.rrb_generate.rrb")); n != tc.rows {
				t.Errorf("%d rows, want %d", n, tc.rows)
			}
			note := r.Notes(engine.EventDone)["node.rrb_generate.rrb"]
			wantContains(t, note, tc.note, tc.name+" refused")
			var retried bool
			for _, c := range srv.Calls() {
				if strings.Contains(c.Request.Text(), "Tool Name: QR A&&a") && strings.Contains(c.Request.Text(), tc.feedback) {
					retried = true
				}
			}
			if !retried {
				t.Errorf("no retry of QR A&&a's prompts carries %q", tc.feedback)
			}
		})
	}
}

// TestRRBGenerateAsksAgainForTooFewSamples: a model that answers one
// sample where two were asked has the other counted as missing, with its
// reason fed back.
func TestRRBGenerateAsksAgainForTooFewSamples(t *testing.T) {
	feedbacks := &feedbackLog{}
	srv := llmtest.New(llmtest.Config{Models: []string{"gen-model"}, Script: rrbScript(feedbacks)})
	defer srv.Close()
	dir := t.TempDir()
	write(t, dir, "tools.jsonl", neighborsTools)
	src := strings.Replace(fmt.Sprintf(rrbPipeline, srv.URL(), "retries = 1"), "samples = { easy = 1, medium = 1, hard = 1 }", "samples = { easy = 2 }", 1)
	r := nodetest.Run(t, dir, src)
	if fb := feedbacks.get("QR A&&a/easy"); len(fb) != 1 || !strings.Contains(fb[0], "Rejected samples:\n- too few samples: 1 of 2\n") {
		t.Errorf("QR A&&a/easy's retry feedback %q, want the too-few reason under its header", fb)
	}
	wantContains(t, r.Notes(engine.EventDone)["node.rrb_generate.rrb"], "7 RRB rows from 8 seeds")
}

// TestRRBGenerateRejectsPoolsTooSmallForATier: a hard sample needs 4
// tools of the pool; pools of 3 fail before any call, at pools.
func TestRRBGenerateRejectsPoolsTooSmallForATier(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Models: []string{"gen-model"}, Script: rrbScript(&feedbackLog{})})
	defer srv.Close()
	dir := t.TempDir()
	write(t, dir, "tools.jsonl", neighborsTools)
	src := strings.Replace(fmt.Sprintf(rrbPipeline, srv.URL(), ""), "k        = 4", "k        = 2", 1)
	r := nodetest.RunErr(t, dir, src)
	wantContains(t, nodeErr(t, r, "node.rrb_generate.rrb"), "p.hcl:", "Pools too small", "hard")
	if n := srv.Stats().Requests; n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}
