package toolsense_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/toolsense"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// probeTools is the generation fixture's catalog: each tool's title says
// how the scripted generator and judge treat it.
const probeTools = `{"tool_name": "Happy&&h", "tool_title": "Happy", "tool_description": "Converts PDF files to text", "api_title": "h", "api_description": "None"}
{"tool_name": "Fixable&&f", "tool_title": "Fixable", "tool_description": "Forecasts the weather", "api_title": "f", "api_description": "hourly forecast"}
{"tool_name": "Disputed&&d", "tool_title": "Disputed", "tool_description": "Translates text", "api_title": "d", "api_description": "None"}
{"tool_name": "Hopeless&&x", "tool_title": "Hopeless", "tool_description": "Does something", "api_title": "x", "api_description": "None"}
{"tool_name": "Skipped&&s", "tool_title": "Skipped", "tool_description": "None", "api_title": "s", "api_description": "None"}
{"tool_name": "Mumbled&&m", "tool_title": "Mumbled", "tool_description": "Validates email addresses", "api_title": "m", "api_description": "None"}
{"tool_name": "Garbled&&g", "tool_title": "Garbled", "tool_description": "Shortens links", "api_title": "g", "api_description": "None"}
`

// probeModel is a model block served by url.
func probeModel(name, url, served string) string {
	return fmt.Sprintf(`
model %q {
  id          = "example/%s"
  endpoint    = %q
  served_name = %q
  concurrency = 4
}
`, name, served, url, served)
}

var (
	probeToolNameLine = regexp.MustCompile(`(?m)^Tool name: (\w+)`)
	probeQuestionLine = regexp.MustCompile(`(?m)^Question\s*: (.*)$`)
)

// scriptedGenerator answers the generation and judge prompts of the
// fixture's tools, and records every generation prompt by tool.
type scriptedGenerator struct {
	mu      sync.Mutex
	prompts map[string][]string // tool title → its generation prompts, in order
}

func (s *scriptedGenerator) reply(q llmtest.Request) string {
	text := q.Text()
	m := probeToolNameLine.FindStringSubmatch(text)
	if m == nil {
		return "no tool"
	}
	tool := m[1]
	retry := strings.Contains(text, "Your previous attempt was rejected")
	if strings.Contains(text, "You are validating") {
		question := probeQuestionLine.FindStringSubmatch(text)[1]
		switch {
		case tool == "Hopeless":
			return `{"accept": false, "reason": "check 1 failed: too generic"}`
		case tool == "Disputed" && !strings.Contains(question, "second"):
			return `{"accept": false, "reason": "check 2 failed: the answer is not supported"}`
		case tool == "Mumbled" && !strings.Contains(question, "second"):
			return "Looks fine to me!"
		}
		return `{"accept": true, "reason": "all checks pass"}`
	}
	s.mu.Lock()
	if s.prompts == nil {
		s.prompts = map[string][]string{}
	}
	s.prompts[tool] = append(s.prompts[tool], text)
	s.mu.Unlock()
	attempt := "first"
	if retry {
		attempt = "second"
	}
	question := fmt.Sprintf("What is the %s main output of this tool?", attempt)
	switch {
	case tool == "Garbled" && !retry:
		return "Sure! Here is a great question about this tool."
	case tool == "Skipped":
		return `{"question": "", "correct_answer": "", "wrong_answers": [], "skip": true}`
	case tool == "Fixable" && !retry:
		question = "What does the Fixable service output?" // names the tool, no "this tool"
	}
	if strings.Contains(text, "yes/no question") {
		target := regexp.MustCompile(`MUST be "(Yes|No)"`).FindStringSubmatch(text)[1]
		return fmt.Sprintf(`{"question": "Does this tool (%s, target %s) handle it?", "skip": false}`, attempt, target)
	}
	item := map[string]any{"question": question, "correct_answer": "Plain text output",
		"wrong_answers": []string{"Scanned image files", "Audio transcripts", "Spreadsheet cells"}, "skip": false}
	b, _ := json.Marshal(item)
	return string(b)
}

func probeServer(s *scriptedGenerator) *llmtest.Server {
	return llmtest.New(llmtest.Config{Models: []string{"gen"}, Script: []llmtest.Rule{{Reply: s.reply}}})
}

// TestMCQGenerateRetriesWithFeedbackJudgesAndCountsDrops: an item the
// validator or the judge rejects is regenerated with the reasons in the
// prompt; an unreadable verdict rejects (fails closed); a skipped tool and
// one rejected after its last retry are dropped and counted in the note.
func TestMCQGenerateRetriesWithFeedbackJudgesAndCountsDrops(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tools.jsonl", probeTools)
	gen := &scriptedGenerator{}
	srv := probeServer(gen)
	defer srv.Close()
	// The block's temperature is the generator's, never the judge's.
	src := strings.Replace(probeModel("gen", srv.URL(), "gen"), "concurrency = 4", "concurrency = 4\n  temperature = 0.7", 1) + `
node "catalog" "c" { path = "tools.jsonl" }
node "mcq_generate" "m" {
  catalog = node.catalog.c
  model   = model.gen
  retries = 3
}
`
	r := nodetest.Run(t, dir, src)
	rows := nodetest.Read[toolsense.MCQRow](t, r, "node.mcq_generate.m")
	byTool := map[string]toolsense.MCQRow{}
	for _, row := range rows {
		var tool map[string]string
		if err := json.Unmarshal([]byte(row.Tool), &tool); err != nil {
			t.Fatalf("tool column %q: %v", row.Tool, err)
		}
		var wrong []string
		if err := json.Unmarshal([]byte(row.WrongAnswers), &wrong); err != nil || len(wrong) != 3 {
			t.Errorf("wrong_answers %q: %v", row.WrongAnswers, err)
		}
		if !strings.HasPrefix(row.ID, "mcq-") || row.CorrectAnswer != "Plain text output" {
			t.Errorf("row %+v", row)
		}
		byTool[tool["tool_title"]] = row
	}
	var kept []string
	for k := range byTool {
		kept = append(kept, k)
	}
	slices.Sort(kept)
	if want := []string{"Disputed", "Fixable", "Garbled", "Happy", "Mumbled"}; !slices.Equal(kept, want) {
		t.Fatalf("kept %v, want %v", kept, want)
	}
	if q := byTool["Happy"].Question; q != "What is the first main output of this tool?" {
		t.Errorf("Happy: question %q, want the first attempt's", q)
	}
	for _, tool := range []string{"Fixable", "Disputed", "Mumbled", "Garbled"} {
		if q := byTool[tool].Question; !strings.Contains(q, "second") {
			t.Errorf("%s: question %q, want the retry's", tool, q)
		}
	}
	if tj := byTool["Happy"].Tool; tj != `{"tool_name":"Happy&&h","tool_title":"Happy","tool_description":"Converts PDF files to text","api_title":"h","api_description":"None"}` {
		t.Errorf("tool JSON %s", tj)
	}

	// The feedback reached the model: each retry's prompt carries the
	// reasons of the attempt before.
	feedback := map[string]string{
		"Fixable":  `the question does not say "this tool"`,
		"Disputed": "the judge rejected it: check 2 failed: the answer is not supported",
		"Mumbled":  "the judge's verdict could not be read",
		"Garbled":  "your answer was not usable: not the JSON object asked for",
		"Hopeless": "the judge rejected it: check 1 failed: too generic",
	}
	for tool, want := range feedback {
		ps := gen.prompts[tool]
		if len(ps) < 2 {
			t.Errorf("%s: %d generation prompts, want a retry", tool, len(ps))
			continue
		}
		if strings.Contains(ps[0], "previous attempt") || !strings.Contains(ps[1], want) {
			t.Errorf("%s: the retry's prompt lacks %q:\n%s", tool, want, ps[1])
		}
	}
	if n := len(gen.prompts["Hopeless"]); n != 4 {
		t.Errorf("Hopeless: %d attempts, want 1 + 3 retries", n)
	}
	if n := len(gen.prompts["Skipped"]); n != 1 {
		t.Errorf("Skipped: %d attempts, want 1 (a skip is not retried)", n)
	}
	// The judge ran at temperature 0, the generator at the block's.
	for _, c := range srv.Calls() {
		want := 0.7
		if strings.Contains(c.Request.Text(), "You are validating") {
			want = 0
		}
		if c.Request.Temperature == nil || *c.Request.Temperature != want {
			t.Errorf("call at temperature %v, want %v:\n%s", c.Request.Temperature, want, c.Request.Text())
		}
	}
	note := r.Notes(engine.EventDone)["node.mcq_generate.m"]
	for _, want := range []string{"5 of 7 tools kept", "2 dropped", "1 rejected after the last retry", "1 the generator skipped the tool (skip = true)",
		"1 validator", "5 judge rejected", "1 judge reply unusable", "1 generation unusable"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}

	// A re-run under a new key (the same calls) makes no call.
	before := srv.Stats().Requests
	r = nodetest.Run(t, dir, strings.Replace(src, "retries = 3", "retries = 3\n  count = 7", 1))
	if n := srv.Stats().Requests - before; n != 0 {
		t.Errorf("re-run made %d requests, want 0", n)
	}
	if got := nodetest.Read[toolsense.MCQRow](t, r, "node.mcq_generate.m"); !slices.Equal(got, rows) {
		t.Errorf("re-run rows differ")
	}
}

// TestQAGenerateBalancesTargetsAndShufflesWithTheSeed: targets alternate
// Yes/No over the sampled tools in catalog order, every kept row's answer
// is its target, the surplus Yes left by the drops is dropped too (as
// many Yes as No), and the rows come shuffled by the seed.
func TestQAGenerateBalancesTargetsAndShufflesWithTheSeed(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tools.jsonl", probeTools)
	gen := &scriptedGenerator{}
	srv := probeServer(gen)
	defer srv.Close()
	src := probeModel("gen", srv.URL(), "gen") + `
node "catalog" "c" { path = "tools.jsonl" }
node "qa_generate" "q" {
  catalog = node.catalog.c
  model   = model.gen
  seed    = 3
}
`
	r := nodetest.Run(t, dir, src)
	rows := nodetest.Read[toolsense.QARow](t, r, "node.qa_generate.q")
	// Catalog order: Happy Yes, Fixable No, Disputed Yes, Hopeless No,
	// Skipped Yes, Mumbled No, Garbled Yes; Hopeless and Skipped are
	// dropped, which leaves 3 Yes and 2 No: one Yes goes too.
	want := map[string]string{"Happy": "Yes", "Fixable": "No", "Disputed": "Yes", "Mumbled": "No", "Garbled": "Yes"}
	var order []string
	yes := 0
	for _, row := range rows {
		var tool map[string]string
		if err := json.Unmarshal([]byte(row.Tool), &tool); err != nil {
			t.Fatal(err)
		}
		title := tool["tool_title"]
		order = append(order, title)
		if want[title] != row.Answer || !strings.Contains(row.Question, "target "+row.Answer) {
			t.Errorf("%s: answer %q, question %q; want target %q", title, row.Answer, row.Question, want[title])
		}
		if row.Answer == "Yes" {
			yes++
		}
	}
	if len(rows) != 4 || yes != 2 {
		t.Fatalf("%d rows, %d Yes; want 4, 2 Yes", len(rows), yes)
	}
	var catalogOrder []string
	for _, title := range []string{"Happy", "Fixable", "Disputed", "Mumbled", "Garbled"} {
		if slices.Contains(order, title) {
			catalogOrder = append(catalogOrder, title)
		}
	}
	if slices.Equal(order, catalogOrder) {
		t.Errorf("rows in catalog order %v: want them shuffled", order)
	}
	note := r.Notes(engine.EventDone)["node.qa_generate.q"]
	for _, w := range []string{"4 of 7 tools kept (2 Yes, 2 No); 3 dropped", "1 dropped to rebalance Yes/No"} {
		if !strings.Contains(note, w) {
			t.Errorf("note %q lacks %q", note, w)
		}
	}
}

// TestProbeGeneratePlanCountsCallsAndTheCachedOnes: on a fresh store the
// plan counts one generation and one judge call per tool; once a run has
// filled the cache it counts exactly the calls the run made, all cached,
// and planning makes no request.
func TestProbeGeneratePlanCountsCallsAndTheCachedOnes(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tools.jsonl", probeTools)
	srv := probeServer(&scriptedGenerator{})
	defer srv.Close()
	src := probeModel("gen", srv.URL(), "gen") + `
node "catalog" "c" { path = "tools.jsonl" }
node "mcq_generate" "m" {
  catalog = node.catalog.c
  model   = model.gen
}
`
	plan := func(src string) nodes.CallPlan { return probePlanCalls(t, dir, src, "node.mcq_generate.m") }
	// The catalog must be in the store for the plan to read it.
	nodetest.Run(t, dir, probeModel("gen", srv.URL(), "gen")+`node "catalog" "c" { path = "tools.jsonl" }`)
	if p := plan(src); p.Calls != 14 || p.Cached != 0 || p.PromptTokens == 0 {
		t.Errorf("fresh plan %+v, want 7 generation + 7 judge calls, none cached", p)
	}
	nodetest.Run(t, dir, src)
	made := int64(srv.Stats().Answers)
	// A new key (count = every tool) asks the same calls.
	p := plan(strings.Replace(src, "model.gen\n", "model.gen\n  count   = 7\n", 1))
	if p.Calls != made || p.Cached != made || p.PromptTokens != 0 {
		t.Errorf("plan after the run %+v, want the %d calls it made, all cached", p, made)
	}
	if n := int64(srv.Stats().Answers); n != made {
		t.Errorf("planning made %d requests", n-made)
	}
}

// probePlanCalls is the plan's single call plan for node addr of pipeline src
// in dir.
func probePlanCalls(t *testing.T, dir, src, addr string) nodes.CallPlan {
	t.Helper()
	entries := nodetest.Plan(t, dir, src)
	for _, e := range entries {
		if e.Node == addr && len(e.Calls) == 1 {
			return e.Calls[0]
		}
	}
	t.Fatalf("no single-model plan entry for %s: %+v", addr, entries)
	return nodes.CallPlan{}
}
