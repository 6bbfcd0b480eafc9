package pipelines_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/toolsense"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// probesReply is a scripted model for toolsense.hcl's probes: it writes a
// valid item for every generation prompt, accepts every item as judge, and
// answers every MCQ with A and every QA with Yes.
func probesReply(q llmtest.Request) string {
	text := q.Text()
	switch {
	case strings.Contains(text, "You are validating"):
		return `{"accept": true, "reason": "all four checks pass"}`
	case strings.Contains(text, "generate one yes/no question"):
		return `{"question": "Does this tool return structured data?", "skip": false}`
	case strings.Contains(text, "multiple-choice probing benchmark"):
		return `{"question": "What is the main output of this tool?", "correct_answer": "Structured JSON records", ` +
			`"wrong_answers": ["Rendered image files", "Audio stream segments", "Printed PDF reports"], "skip": false}`
	case strings.Contains(text, "A, B, C or D"):
		return `"A"`
	}
	return `"Yes"`
}

// TestToolSenseProbesPipelineRunsAgainstAScriptedModel runs
// pipelines/toolsense.hcl as shipped, its probed model and its generator
// (generate = ["mcq", "qa"]) a scripted server, on the released data
// beside the repository (skipped without it, failed in CI): every released
// item is asked, the generation makes probe_items items per benchmark, and
// the metrics show the always-A model's positional bias.
func TestToolSenseProbesPipelineRunsAgainstAScriptedModel(t *testing.T) {
	if _, err := os.Stat("../../shared/data/toolsense/toolsense-mcq.jsonl"); err != nil {
		msg := "ToolSense data is not at ../shared/data/toolsense beside the repository: " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	srv := llmtest.New(llmtest.Config{Models: []string{"probed"}, Script: []llmtest.Rule{{Reply: probesReply}}})
	defer srv.Close()
	file, err := filepath.Abs("toolsense.hcl")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"probe_endpoint": srv.URL(), "probe_model": "probed", "generator_endpoint": srv.URL(), "generator_id": "probed",
		"generate": `["mcq", "qa"]`, "probe_items": "4", "bootstrap": "200"}
	g, diags := engine.ExpandSource(file, src, filepath.Dir(file), engine.Options{Vars: vars})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	st, err := artifacts.Open(filepath.Join(t.TempDir(), ".lacuna"))
	if err != nil {
		t.Fatal(err)
	}
	x := &engine.Executor{Store: st, Jobs: 2, Pipeline: file, Environ: os.Environ()}
	res, _, err := x.Run(context.Background(), g, nil)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]artifacts.Object{}
	for i, r := range res {
		outputs[i.Addr] = r.Output
	}
	checkKeys(t, st, file, vars, "toolsense_probes")
	if _, ok := outputs[`node.rrb_generate.rrb["generator"]`]; ok {
		t.Errorf("generate = [\"mcq\", \"qa\"] generated an RRB")
	}
	mcq := readRows[toolsense.MCQRow](t, st, outputs[`node.mcq_generate.rrb["generator"]`])
	qa := readRows[toolsense.QARow](t, st, outputs[`node.qa_generate.rrb["generator"]`])
	if len(mcq) != 4 || len(qa) != 4 {
		t.Errorf("generated %d MCQ and %d QA items, want 4 each", len(mcq), len(qa))
	}
	yes := 0
	for _, row := range qa {
		if row.Answer == "Yes" {
			yes++
		}
	}
	if yes != 2 {
		t.Errorf("%d of 4 generated QA items answer Yes, want 2", yes)
	}

	released := readRows[toolsense.ProbeMetricsRow](t, st, outputs[`node.probe_metrics.released["under_test"]`])
	generated := readRows[toolsense.ProbeMetricsRow](t, st, outputs[`node.probe_metrics.generated["under_test"]`])
	want := map[string]int64{`node.probe_eval.released["mcq"]`: 496, `node.probe_eval.released["qa"]`: 500,
		`node.probe_eval.generated_mcq["generator"]`: 4, `node.probe_eval.generated_qa["generator"]`: 4}
	for _, m := range append(released, generated...) {
		n, ok := want[m.Eval]
		if !ok || m.N != n || m.Unparseable != 0 {
			t.Errorf("metrics %+v: want %d items", m, n)
			continue
		}
		delete(want, m.Eval)
		t.Logf("%s: n %d, accuracy %v%% [%v, %v], predicted %v, gold %v", m.Eval, m.N, m.Accuracy, m.Lo, m.Hi, m.PredictedShare, m.GoldShare)
		if m.PredictedShare[0] != 100 || m.Accuracy != m.GoldShare[0] {
			t.Errorf("%s: the always-A (Yes) model predicted %v and scored %v; gold shares %v", m.Eval, m.PredictedShare, m.Accuracy, m.GoldShare)
		}
		if !(m.Lo <= m.Accuracy && m.Accuracy <= m.Hi) {
			t.Errorf("%s: accuracy %v outside its CI [%v, %v]", m.Eval, m.Accuracy, m.Lo, m.Hi)
		}
	}
	if len(want) > 0 {
		t.Errorf("no metrics for %v", want)
	}
	// The released QA is balanced: always Yes scores 50%.
	for _, m := range released {
		if m.Benchmark == "qa" && (m.Accuracy != 50 || m.MajorityBaseline != 50 || m.Chance != 50) {
			t.Errorf("released QA: always-Yes accuracy %v, majority_baseline %v, chance %v; want 50 each", m.Accuracy, m.MajorityBaseline, m.Chance)
		}
	}
	// The probes name the tool by its ToolGen virtual token, spelled as
	// retrieve_parametric spells it (<<API&&ENDPOINT>> by default).
	token := regexp.MustCompile(`(?m)^This tool: <<[^<>]+&&[^<>]+>>$`)
	asked := 0
	for _, c := range srv.Calls() {
		if strings.Contains(c.Request.Text(), "Answer with") && strings.HasPrefix(c.Request.Text(), "This tool:") {
			asked++
			if !token.MatchString(c.Request.Text()) {
				t.Errorf("probe without a virtual token:\n%s", c.Request.Text())
				break
			}
		}
	}
	if asked < 996 {
		t.Errorf("%d distinct probe requests, want at least the 996 released items", asked)
	}
}
