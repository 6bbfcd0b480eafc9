package toolsense_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/toolsense"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

const probeItemsN = 12

// probeItemFiles writes mcq.jsonl (item i: tool T<i>, correct answer
// "Right answer i") and qa.jsonl (item i: answer Yes for even i) in the
// released files' shape, and mcq_reversed.jsonl: mcq.jsonl's items in
// reverse order.
func probeItemFiles(t *testing.T, dir string) {
	var mcq, qa strings.Builder
	for i := range probeItemsN {
		tool := fmt.Sprintf(`{"tool_name": "T%d&&t", "tool_title": "T%d", "tool_description": "tool %d", "api_title": "t", "api_description": "None"}`, i, i, i)
		fmt.Fprintf(&mcq, `{"id": "m%d", "question": "What does this tool do?", "correct_answer": "Right answer %d", "wrong_answers": ["Wrong one %d", "Wrong two %d", "Wrong three %d"], "tool": %s}`+"\n", i, i, i, i, i, tool)
		fmt.Fprintf(&qa, `{"id": "q%d", "question": "Does this tool do %d?", "answer": %q, "tool": %s}`+"\n", i, i, [2]string{"Yes", "No"}[i%2], tool)
	}
	write(t, dir, "mcq.jsonl", mcq.String())
	lines := strings.SplitAfter(strings.TrimSuffix(mcq.String(), "\n"), "\n")
	slices.Reverse(lines)
	write(t, dir, "mcq_reversed.jsonl", strings.Join(lines, "\n")+"\n")
	write(t, dir, "qa.jsonl", qa.String())
}

var (
	probeOptionLine = regexp.MustCompile(`(?m)^([A-D])\. (.*)$`)
	// ToolGen's virtual token, flat (<<T3&&t>>) or hierarchical
	// (<<T3>><<t>>).
	probeToolToken = regexp.MustCompile(`This tool: <<T(\d+)(?:&&|>><<)t>>\n`)
)

// probeEvalReply answers as the served model: "right" the correct letter (or
// Yes/No), "always-a" A (Yes), "garbage" prose, "chatty" the correct
// answer in a sentence, "wrapped" the correct label in a JSON object
// {"answer": ...} (readable, but not the constraint); constrained
// answers as response_format's JSON string.
func probeEvalReply(q llmtest.Request) string {
	text := q.Text()
	m := probeToolToken.FindStringSubmatch(text)
	if m == nil {
		return "no tool"
	}
	var i int
	fmt.Sscan(m[1], &i)
	gold := [2]string{"Yes", "No"}[i%2]
	if strings.Contains(text, "A, B, C or D") {
		for _, o := range probeOptionLine.FindAllStringSubmatch(text, -1) {
			if o[2] == fmt.Sprintf("Right answer %d", i) {
				gold = o[1]
			}
		}
	}
	switch q.Model {
	case "right":
		return `"` + gold + `"`
	case "always-a":
		if strings.Contains(text, "A, B, C or D") {
			return `"A"`
		}
		return `"Yes"`
	case "wrapped":
		return `{"answer": "` + gold + `"}`
	case "chatty":
		if len(gold) == 1 {
			return "The answer is (" + gold + ") because it fits."
		}
		return gold + ", it does."
	}
	return "I would need to look at the documentation first."
}

func probeEvalPipeline(right, ignoring string) string {
	var b strings.Builder
	for _, m := range []string{"right", "always-a", "garbage"} {
		b.WriteString(probeModel(strings.ReplaceAll(m, "-", "_"), right, m))
	}
	b.WriteString(probeModel("chatty", ignoring, "chatty"))
	b.WriteString(probeModel("wrapped", ignoring, "wrapped"))
	b.WriteString(`
node "import" "mcq" { path = "mcq.jsonl" }
node "import" "qa" { path = "qa.jsonl" }
locals {
  models = { right = model.right, always_a = model.always_a, garbage = model.garbage, chatty = model.chatty, wrapped = model.wrapped }
}
node "probe_eval" "hierarchical" {
  items        = node.import.mcq
  model        = model.right
  seed         = 7
  token_format = "hierarchical"
}
node "probe_eval" "short" {
  items      = node.import.qa
  model      = model.garbage
  max_tokens = 4
}
node "probe_eval" "mcq" {
  for_each = local.models
  items    = node.import.mcq
  model    = each.value
  seed     = 7
}
node "probe_eval" "qa" {
  for_each = local.models
  items    = node.import.qa
  model    = each.value
}
node "probe_metrics" "all" {
  evals     = concat(values(node.probe_eval.mcq), values(node.probe_eval.qa))
  bootstrap = 200
}
`)
	return b.String()
}

// TestProbeEvalScoresScriptedModelsExactly: a model that answers right
// scores 1, one that always says A scores the share of items whose
// shuffled correct option is A (known from the recorded permutations), a
// model that answers prose is unparseable and wrong, and a server that
// ignores the constraint is parsed from free text. A re-run under a new
// key (the same calls) makes no call.
func TestProbeEvalScoresScriptedModelsExactly(t *testing.T) {
	dir := t.TempDir()
	probeItemFiles(t, dir)
	srv := llmtest.New(llmtest.Config{Models: []string{"right", "always-a", "garbage"}, Script: []llmtest.Rule{{Reply: probeEvalReply}}})
	defer srv.Close()
	loose := llmtest.New(llmtest.Config{Models: []string{"chatty", "wrapped"}, IgnoreSchema: true, Script: []llmtest.Rule{{Reply: probeEvalReply}}})
	defer loose.Close()
	src := probeEvalPipeline(srv.URL(), loose.URL())
	r := nodetest.Run(t, dir, src)

	// The constraint went out: A–D for MCQ, Yes/No for QA.
	for _, c := range srv.Calls() {
		if !strings.Contains(string(c.Request.Schema), `"enum":["A","B","C","D"]`) && !strings.Contains(string(c.Request.Schema), `"enum":["Yes","No"]`) {
			t.Fatalf("request without the answer constraint: schema %s", c.Request.Schema)
		}
	}

	rows := func(addr string) []toolsense.ProbeEvalRow {
		return nodetest.Read[toolsense.ProbeEvalRow](t, r, addr)
	}
	goldA := 0
	for i, row := range rows(`node.probe_eval.mcq["right"]`) {
		// The permutation says where the correct answer went.
		if len(row.Permutation) != 4 || len(row.Options) != 4 {
			t.Fatalf("row %+v", row)
		}
		seen := map[int64]bool{}
		for j, k := range row.Permutation {
			seen[k] = true
			if k == 0 && (row.Gold != string(rune('A'+j)) || row.Options[j] != fmt.Sprintf("Right answer %d", i)) {
				t.Errorf("%s: permutation %v, gold %s, options %q", row.ID, row.Permutation, row.Gold, row.Options)
			}
		}
		if len(seen) != 4 {
			t.Errorf("%s: permutation %v is not one", row.ID, row.Permutation)
		}
		if !row.Correct || row.ParsedBy != ts.ParsedConstrained || row.Predicted != row.Gold {
			t.Errorf("right model, %s: %+v", row.ID, row)
		}
		if row.Gold == "A" {
			goldA++
		}
	}
	if goldA == 0 || goldA == probeItemsN {
		t.Fatalf("%d of %d items have A correct: the fixture cannot tell a letter-biased model", goldA, probeItemsN)
	}
	for _, row := range rows(`node.probe_eval.mcq["always_a"]`) {
		if row.Predicted != "A" || row.Correct != (row.Gold == "A") {
			t.Errorf("always-A model, %s: %+v", row.ID, row)
		}
	}
	for _, row := range rows(`node.probe_eval.mcq["garbage"]`) {
		if row.ParsedBy != ts.ParsedNone || row.Correct || row.Predicted != "" {
			t.Errorf("garbage model, %s: %+v", row.ID, row)
		}
	}
	for _, addr := range []string{`node.probe_eval.mcq["chatty"]`, `node.probe_eval.qa["chatty"]`} {
		for _, row := range rows(addr) {
			if row.ParsedBy != ts.ParsedFreeText || !row.Correct {
				t.Errorf("free-text answers, %s: %+v", row.ID, row)
			}
		}
	}

	// A readable answer that is not the constraint's (a JSON object
	// around the label) is parsed, not constrained: parsed_by follows
	// the response's SchemaHeld.
	for _, addr := range []string{`node.probe_eval.mcq["wrapped"]`, `node.probe_eval.qa["wrapped"]`} {
		for _, row := range rows(addr) {
			if row.ParsedBy != ts.ParsedFreeText || !row.Correct {
				t.Errorf("wrapped answers, %s: %+v", row.ID, row)
			}
		}
	}
	// Hierarchical tokens: <<API>><<ENDPOINT>>, as retrieve_parametric
	// spells them.
	for _, row := range rows("node.probe_eval.hierarchical") {
		if !strings.Contains(row.Prompt, "This tool: <<"+strings.TrimSuffix(row.ToolName, "&&t")+">><<t>>\n") || !row.Correct {
			t.Errorf("hierarchical tokens, %s: %+v", row.ID, row)
		}
	}
	// Answers stopped by max_tokens are counted.
	for _, row := range rows("node.probe_eval.short") {
		if !row.CutOff || row.ParsedBy != ts.ParsedNone {
			t.Errorf("cut-off answer, %s: %+v", row.ID, row)
		}
	}
	if note := r.Notes(engine.EventDone)["node.probe_eval.short"]; !strings.Contains(note, fmt.Sprintf("%d cut off at max_tokens", probeItemsN)) {
		t.Errorf("note %q does not count the cut-off answers", note)
	}
	if note := r.Notes(engine.EventDone)[`node.probe_eval.mcq["right"]`]; !strings.Contains(note, "0 cut off at max_tokens") {
		t.Errorf("note %q", note)
	}

	metrics := map[string]toolsense.ProbeMetricsRow{}
	for _, m := range nodetest.Read[toolsense.ProbeMetricsRow](t, r, "node.probe_metrics.all") {
		metrics[m.Eval] = m
	}
	pctOf := func(n int) float64 { return float64(int(float64(n)/probeItemsN*10000+0.5)) / 100 }
	for _, tc := range []struct {
		eval        string
		acc         float64
		unparseable int64
		predicted   []float64
	}{
		{`node.probe_eval.mcq["right"]`, 100, 0, nil},
		{`node.probe_eval.mcq["always_a"]`, pctOf(goldA), 0, []float64{100, 0, 0, 0}},
		{`node.probe_eval.mcq["garbage"]`, 0, probeItemsN, []float64{0, 0, 0, 0}},
		{`node.probe_eval.qa["right"]`, 100, 0, []float64{50, 50}},
		{`node.probe_eval.qa["always_a"]`, 50, 0, []float64{100, 0}},
		{`node.probe_eval.qa["garbage"]`, 0, probeItemsN, []float64{0, 0}},
	} {
		m, ok := metrics[tc.eval]
		if !ok {
			t.Fatalf("no metrics for %s; have %v", tc.eval, metrics)
		}
		if m.Accuracy != tc.acc || m.Unparseable != tc.unparseable || m.N != probeItemsN {
			t.Errorf("%s: accuracy %v, unparseable %d, n %d; want %v, %d, %d", tc.eval, m.Accuracy, m.Unparseable, m.N, tc.acc, tc.unparseable, probeItemsN)
		}
		if tc.predicted != nil && !reflect.DeepEqual(m.PredictedShare, tc.predicted) {
			t.Errorf("%s: predicted shares %v, want %v", tc.eval, m.PredictedShare, tc.predicted)
		}
		if !(m.Lo <= m.Accuracy && m.Accuracy <= m.Hi) {
			t.Errorf("%s: accuracy %v outside its CI [%v, %v]", tc.eval, m.Accuracy, m.Lo, m.Hi)
		}
	}
	if m := metrics[`node.probe_eval.mcq["right"]`]; !reflect.DeepEqual(m.PredictedShare, m.GoldShare) || m.GoldShare[0] != pctOf(goldA) {
		t.Errorf("right model: predicted %v, gold %v", m.PredictedShare, m.GoldShare)
	}

	// The same seed shuffles the same way whatever the items' order: the
	// items reversed are asked the same questions (no new request) and
	// each id gets the same row, the rows in the new order.
	before := srv.Stats().Requests + loose.Stats().Requests
	again := nodetest.Run(t, dir, strings.Replace(src, `path = "mcq.jsonl"`, `path = "mcq_reversed.jsonl"`, 1))
	if n := srv.Stats().Requests + loose.Stats().Requests - before; n != 0 {
		t.Errorf("re-run with the items reversed made %d requests, want 0", n)
	}
	first := rows(`node.probe_eval.mcq["right"]`)
	got := nodetest.Read[toolsense.ProbeEvalRow](t, again, `node.probe_eval.mcq["right"]`)
	if len(got) != len(first) {
		t.Fatalf("re-run: %d rows, want %d", len(got), len(first))
	}
	for i, row := range got {
		want := first[len(first)-1-i]
		if !reflect.DeepEqual(row, want) {
			t.Errorf("items reversed, row %d: %+v; want %+v (id %s's row before)", i, row, want, want.ID)
		}
	}
	// limit takes the first items in file order, each asked as before.
	limited := nodetest.Read[toolsense.ProbeEvalRow](t, nodetest.Run(t, dir, strings.Replace(src, "seed     = 7", "seed     = 7\n  limit    = 5", 1)), `node.probe_eval.mcq["right"]`)
	if len(limited) != 5 {
		t.Fatalf("limit 5: %d rows", len(limited))
	}
	for i, row := range limited {
		if row.ID != fmt.Sprintf("m%d", i) || !reflect.DeepEqual(row, first[i]) {
			t.Errorf("limit 5, row %d: %+v; want %+v", i, row, first[i])
		}
	}
	other := nodetest.Run(t, dir, strings.Replace(src, "seed     = 7", "seed     = 8", 1))
	same := 0
	for i, row := range nodetest.Read[toolsense.ProbeEvalRow](t, other, `node.probe_eval.mcq["right"]`) {
		if slices.Equal(row.Permutation, rows(`node.probe_eval.mcq["right"]`)[i].Permutation) {
			same++
		}
	}
	if same == probeItemsN {
		t.Errorf("seed 8 shuffles every item as seed 7 does")
	}
	if note := r.Notes(engine.EventDone)[`node.probe_eval.mcq["garbage"]`]; !strings.Contains(note, fmt.Sprintf("%d unparseable (counted wrong)", probeItemsN)) {
		t.Errorf("note %q", note)
	}
}

// TestProbeEvalPlanCountsItsCalls: one call per item, cached once asked.
func TestProbeEvalPlanCountsItsCalls(t *testing.T) {
	dir := t.TempDir()
	probeItemFiles(t, dir)
	srv := llmtest.New(llmtest.Config{Models: []string{"right"}, Script: []llmtest.Rule{{Reply: probeEvalReply}}})
	defer srv.Close()
	src := probeModel("m", srv.URL(), "right") + `
node "import" "mcq" { path = "mcq.jsonl" }
node "probe_eval" "e" {
  items = node.import.mcq
  model = model.m
}
`
	nodetest.Run(t, dir, probeModel("m", srv.URL(), "right")+`node "import" "mcq" { path = "mcq.jsonl" }`)
	// An estimate of a share of max_tokens (16) a call, not the bound.
	perCall := int64(math.Round(llmenv.MaxTokensShare * 16))
	if p := probePlanCalls(t, dir, src, "node.probe_eval.e"); p.Calls != probeItemsN || p.Cached != 0 || p.OutputTokens != perCall*probeItemsN {
		t.Errorf("fresh plan %+v, want %d calls of %d tokens", p, probeItemsN, perCall)
	}
	nodetest.Run(t, dir, src)
	if p := probePlanCalls(t, dir, strings.Replace(src, "model.m\n", "model.m\n  limit = 12\n", 1), "node.probe_eval.e"); p.Calls != probeItemsN || p.Cached != probeItemsN {
		t.Errorf("plan after the run %+v, want every call cached", p)
	}
}

// TestProbeEvalRefusesBadItems: malformed items are errors naming the
// row, not dropped.
func TestProbeEvalRefusesBadItems(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Models: []string{"right"}})
	defer srv.Close()
	tool := `{"tool_name": "T&&t"}`
	for _, tc := range []struct{ name, file, want string }{
		{"two wrong answers", `{"id": "a", "question": "Q?", "correct_answer": "x y", "wrong_answers": ["p q", "r s"], "tool": ` + tool + `}`, "2 wrong answers, not 3"},
		{"repeated option", `{"id": "a", "question": "Q?", "correct_answer": "x y", "wrong_answers": ["X  y", "r s", "t u"], "tool": ` + tool + `}`, "there twice"},
		{"qa answer", `{"id": "a", "question": "Q?", "answer": "Maybe", "tool": ` + tool + `}`, `answer is "Maybe", not Yes or No`},
		{"repeated id", `{"id": "a", "question": "Q?", "answer": "Yes", "tool": ` + tool + "}\n" + `{"id": "a", "question": "R?", "answer": "No", "tool": ` + tool + `}`, "the id is also row 1's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "items.jsonl", tc.file+"\n")
			r := nodetest.RunErr(t, dir, probeModel("m", srv.URL(), "right")+`
node "import" "i" { path = "items.jsonl" }
node "probe_eval" "e" {
  items = node.import.i
  model = model.m
}
`)
			if msg := nodeErr(t, r, "node.probe_eval.e"); !strings.Contains(msg, tc.want) {
				t.Errorf("error %q lacks %q", msg, tc.want)
			}
		})
	}
}

// probeReleasedData is the released ToolSense folder beside the repository,
// skipping the test without it (failing it in CI).
func probeReleasedData(t *testing.T) string {
	dir, err := filepath.Abs("../../../shared/data/toolsense")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "toolsense-mcq.jsonl")); err != nil {
		msg := "ToolSense data is not at ../shared/data/toolsense beside the repository: " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// TestProbeEvalReadsTheReleasedProbes: probe_eval asks every released
// MCQ (496) and QA (500) item, with a model that answers right.
func TestProbeEvalReadsTheReleasedProbes(t *testing.T) {
	data := probeReleasedData(t)
	correct := map[string]string{} // tool_name + question → the correct answer
	for _, name := range []string{"mcq", "qa"} {
		b, err := os.ReadFile(filepath.Join(data, "toolsense-"+name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var it struct {
				Question, CorrectAnswer, Answer string
				Tool                            struct{ ToolName string }
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &raw); err != nil {
				t.Fatal(err)
			}
			json.Unmarshal(raw["question"], &it.Question)
			json.Unmarshal(raw["correct_answer"], &it.CorrectAnswer)
			json.Unmarshal(raw["answer"], &it.Answer)
			var tool map[string]string
			json.Unmarshal(raw["tool"], &tool)
			correct[tool["tool_name"]+"\x00"+it.Question] = it.CorrectAnswer + it.Answer
		}
	}
	tokenQ := regexp.MustCompile(`(?s)^This tool: <<(.*?)>>\n\n(.*?)\n\n`)
	reply := func(q llmtest.Request) string {
		m := tokenQ.FindStringSubmatch(q.Text())
		if m == nil {
			return "?"
		}
		want := correct[m[1]+"\x00"+m[2]]
		if want == "Yes" || want == "No" {
			return `"` + want + `"`
		}
		for _, o := range probeOptionLine.FindAllStringSubmatch(q.Text(), -1) {
			if o[2] == want {
				return `"` + o[1] + `"`
			}
		}
		return "?"
	}
	srv := llmtest.New(llmtest.Config{Models: []string{"right"}, Script: []llmtest.Rule{{Reply: reply}}})
	defer srv.Close()
	dir := t.TempDir()
	r := nodetest.Run(t, dir, probeModel("m", srv.URL(), "right")+fmt.Sprintf(`
node "import" "probes" {
  for_each = toset(["mcq", "qa"])
  path     = "%s/toolsense-${each.value}.jsonl"
}
node "probe_eval" "e" {
  for_each = toset(["mcq", "qa"])
  items    = node.import.probes[each.value]
  model    = model.m
}
`, data))
	for name, n := range map[string]int{"mcq": 496, "qa": 500} {
		rows := nodetest.Read[toolsense.ProbeEvalRow](t, r, fmt.Sprintf(`node.probe_eval.e[%q]`, name))
		wrong := 0
		for _, row := range rows {
			if !row.Correct {
				wrong++
			}
		}
		if len(rows) != n || wrong != 0 {
			t.Errorf("%s: %d rows (want %d), %d answered wrong", name, len(rows), n, wrong)
		}
	}
}

// TestProbeEvalOnLlamaCppPython: llama-cpp-python's server refuses the
// choice constraint (response_format json_schema) with HTTP 500; the probe
// does not fail as "unreachable": the client falls back to no constraint,
// the answers are parsed from free text (parsed_by never "constrained":
// nothing held them to the labels), and the note warns.
func TestProbeEvalOnLlamaCppPython(t *testing.T) {
	dir := t.TempDir()
	probeItemFiles(t, dir)
	srv := llmtest.New(llmtest.LlamaCppPython(llmtest.Config{Models: []string{"right"}, Script: []llmtest.Rule{{Reply: probeEvalReply}}}))
	defer srv.Close()
	r := nodetest.Run(t, dir, probeModel("m", srv.URL(), "right")+`
node "import" "qa" { path = "qa.jsonl" }
node "probe_eval" "e" {
  items = node.import.qa
  model = model.m
}
`)
	for _, row := range nodetest.Read[toolsense.ProbeEvalRow](t, r, "node.probe_eval.e") {
		if row.ParsedBy != ts.ParsedFreeText || !row.Correct {
			t.Errorf("item %s: parsed_by %s, correct %v (%q)", row.ID, row.ParsedBy, row.Correct, row.Raw)
		}
	}
	note := r.Notes(engine.EventDone)["node.probe_eval.e"]
	wantContains(t, note, fmt.Sprintf("%d correct", probeItemsN), "warning: ", "structured-output fallback")
	if st := srv.Stats(); st.Status[500] == 0 || st.Status[500] > 4 || st.Requests != probeItemsN+st.Status[500] {
		t.Errorf("server stats %+v: want a few refused json_schema requests (at most the concurrency), then one request an item", st)
	}
}
