package pipelines_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/toolsense"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

var (
	genSeed  = regexp.MustCompile(`(?m)^Tool Name: (.*)$`)
	genAsked = regexp.MustCompile(`Generate (\d+) (\w+)-tier eval samples`)
	genPool  = regexp.MustCompile(`(?m)^- (.*?&&.*?): `)
)

// scriptedRRB answers the generation prompt with the samples it asks
// for, each naming the seed and as many pool tools as its tier needs, and
// accepts every sample in the judge's prompt.
func scriptedRRB() []llmtest.Rule {
	return []llmtest.Rule{
		{Contains: "You are a quality validator", Reply: func(q llmtest.Request) string {
			n := strings.Count(q.Text(), "\nQuery: ")
			v := make([]string, n)
			for i := range v {
				v[i] = `{"validation_result": true, "reason": "fine"}`
			}
			return `{"verdicts": [` + strings.Join(v, ", ") + `]}`
		}},
		{Contains: "You are a data generation expert", Reply: func(q llmtest.Request) string {
			text := q.Text()
			seed := genSeed.FindStringSubmatch(text)[1]
			m := genAsked.FindStringSubmatch(text)
			n, _ := strconv.Atoi(m[1])
			tier := m[2]
			list := text[strings.Index(text, "[START OF TOOL LIST]"):]
			var pool []string
			for _, p := range genPool.FindAllStringSubmatch(list, -1) {
				pool = append(pool, p[1])
			}
			answers := map[string]int{"easy": 1, "medium": 2, "hard": 4}[tier]
			h := fnv.New32a()
			h.Write([]byte(seed))
			var out []any
			for i := 0; i < n; i++ {
				out = append(out, map[string]any{"query": fmt.Sprintf("Find %s help %x number %d", tier, h.Sum32(), i), "answer": pool[:answers]})
			}
			b, _ := json.Marshal(map[string]any{"samples": out})
			return string(b)
		}},
	}
}

// TestToolSenseGeneratePipelineRunsAgainstAScriptedModel runs
// pipelines/toolsense.hcl as shipped with its generator a scripted server
// and generate = ["rrb"], on the released data (skipped without it, failed
// in CI): ten stratified seeds over the 4,901-tool catalog, 8 rows each,
// evaluated by BM25 per tier; no MCQ or QA item is generated.
func TestToolSenseGeneratePipelineRunsAgainstAScriptedModel(t *testing.T) {
	if _, err := os.Stat("../../shared/data/toolsense/toolsense-realistic-retrieval.jsonl"); err != nil {
		msg := "ToolSense data is not at ../shared/data/toolsense beside the repository: " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	srv := llmtest.New(llmtest.Config{Models: []string{"scripted"}, Script: scriptedRRB()})
	defer srv.Close()
	file, err := filepath.Abs("toolsense.hcl")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"generator_endpoint": srv.URL(), "generator_id": "scripted", "generate": `["rrb"]`, "bootstrap": "50"}
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
	checkKeys(t, st, file, vars, "toolsense_generate")
	for addr := range outputs {
		if strings.Contains(addr, "mcq") || strings.Contains(addr, "qa_") || strings.Contains(addr, "probe") {
			t.Errorf("generate = [\"rrb\"] ran %s", addr)
		}
	}
	pools := readRows[toolsense.NeighborsRow](t, st, outputs[`node.neighbors.pools["generator"]`])
	rows := readRows[toolsense.RRBRow](t, st, outputs[`node.rrb_generate.rrb["generator"]`])
	eval := readRows[toolsense.EvalRow](t, st, outputs[`node.retrieval_eval.generated["generator"]`])
	services := map[string]bool{}
	for _, p := range pools {
		services[p.Service] = true
		if len(p.Pool) != 14 || p.Pool[0] != p.Seed {
			t.Errorf("seed %s: pool of %d, first %q", p.Seed, len(p.Pool), p.Pool[0])
		}
	}
	if len(pools) != 10 || len(services) != 10 {
		t.Errorf("%d seeds from %d services, want 10 from 10", len(pools), len(services))
	}
	tiers := map[string]int{}
	for _, r := range rows {
		tiers[r.Complexity]++
		if r.Attempt != 1 {
			t.Errorf("%s: attempt %d", r.SampleID, r.Attempt)
		}
	}
	if tiers["easy"] != 30 || tiers["medium"] != 30 || tiers["hard"] != 20 {
		t.Errorf("tiers %v, want 30 easy, 30 medium, 20 hard", tiers)
	}
	ks := 6
	if len(eval) != 4*ks || eval[len(eval)-1].Queries != 80 || eval[len(eval)-1].K != 50 {
		t.Errorf("%d eval rows, last %+v", len(eval), eval[len(eval)-1])
	}
}
