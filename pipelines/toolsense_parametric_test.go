package pipelines_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes/toolsense"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

// TestToolSenseParametricPipelineRunsAgainstAScriptedModel runs
// pipelines/toolsense.hcl as shipped with its toolgen variables set, on
// the first 6 released RRB queries over the 4,901-tool catalog, against a
// scripted ToolGen model (skipped without the data, failed in CI), with
// free decoding's beam search and with its greedy answer. Constrained
// decoding puts an answer first for queries 0, 2 and 4 and every answer
// last for the others: Rc@k = 3/6 at every k ≤ 50. Free decoding favours
// an answer's token for queries 0 and 3 and an unknown one otherwise; its
// beam search ranks the word "the" above everything: Rf@1 = 0 (so IS@1 =
// 0) and Rf@k = 2/6, IS@k = 2/3 from k = 2; greedily, Rf@k = 2/6 at every
// k. The plan counts the calls before the run, and finds them cached after
// it (for a smaller slice, which re-runs the nodes); a second run makes
// none.
func TestToolSenseParametricPipelineRunsAgainstAScriptedModel(t *testing.T) {
	for _, search := range []string{"beam", "greedy"} {
		t.Run(search, func(t *testing.T) { testParametricPipeline(t, search) })
	}
}

func testParametricPipeline(t *testing.T, search string) {
	data := "../../shared/data/toolsense/toolsense-realistic-retrieval.jsonl"
	if _, err := os.Stat(data); err != nil {
		msg := "ToolSense data is not at ../shared/data/toolsense beside the repository: " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	const limit = 6
	f, err := os.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	_, catalog, err := ts.ReadRRB(f, "rrb")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The first queries' texts and answers, as the file gives them.
	f, _ = os.Open(data)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	var queries []string
	answers := map[string][]string{}
	for len(queries) < limit && sc.Scan() {
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
		if json.Unmarshal(row.Tool, &many) != nil {
			if err := json.Unmarshal(row.Tool, &one); err != nil {
				t.Fatal(err)
			}
			many = append(many, one)
		}
		queries = append(queries, row.Query)
		for _, m := range many {
			answers[row.Query] = append(answers[row.Query], "<<"+m.ToolName+">>")
		}
	}
	f.Close()

	dir := t.TempDir()
	vocab := map[string]int{"the": 7}
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
		for i, want := range queries {
			if want == query {
				return query, i
			}
		}
		t.Errorf("a request for a query not among the first %d: %q", limit, query)
		return query, -1
	}
	next := func(q llmtest.Request) []llmtest.Candidate {
		query, i := index(q)
		isAnswer := map[string]bool{}
		for _, a := range answers[query] {
			isAnswer[a] = true
		}
		out := make([]llmtest.Candidate, 0, len(vocab))
		for tok, id := range vocab {
			h := fnv.New64a()
			h.Write([]byte(query + "\x00" + tok))
			lp := -float64(h.Sum64()%100000)/1000 - 0.5
			free := q.AllowedTokenIDs == nil
			switch {
			case tok == "the":
				lp = -0.01
			case free && isAnswer[tok] && i%3 == 0 && tok == answers[query][0]:
				lp = -0.05
			case !free && isAnswer[tok] && i%2 == 0 && tok == answers[query][0]:
				lp = -0.1
			case isAnswer[tok]:
				lp = -1000
			}
			out = append(out, llmtest.Candidate{Token: tok, ID: id, Logprob: lp})
		}
		return out
	}
	srv := llmtest.New(llmtest.Config{Models: []string{"toolgen"}, MaxLogprobs: 50, Script: []llmtest.Rule{
		{When: func(q llmtest.Request) bool { return q.Logprobs > 0 }, Next: next},
		{Reply: func(q llmtest.Request) string {
			query, i := index(q)
			if i%3 == 0 {
				return answers[query][0]
			}
			return "<<Nowhere&&nothing>>"
		}},
	}})
	defer srv.Close()

	file, err := filepath.Abs("toolsense.hcl")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"toolgen_endpoint": srv.URL(), "toolgen_id": "toolgen", "toolgen_tokens": tokens, "toolgen_limit": fmt.Sprint(limit),
		"bootstrap": "200", "free_search": search}
	st, err := artifacts.Open(filepath.Join(dir, ".lacuna"))
	if err != nil {
		t.Fatal(err)
	}
	nodesOf := []string{`node.retrieve_parametric.constrained["toolgen"]`, `node.retrieve_parametric.free["toolgen"]`}
	run(t, st, file, vars, "node.catalog.rrb") // a node's calls are counted once its inputs exist
	plan := planCalls(t, st, file, vars)
	for _, n := range nodesOf {
		if p := plan[n]; len(p) != 1 || p[0].Calls != limit || p[0].Cached != 0 {
			t.Errorf("plan of %s: %+v, want %d calls, none cached", n, p, limit)
		}
	}
	out := run(t, st, file, vars)
	cons := readRows[toolsense.RetrieveRow](t, st, out[nodesOf[0]])
	if len(cons) != limit {
		t.Fatalf("%d constrained rows, want %d", len(cons), limit)
	}
	for i, row := range cons {
		if len(row.Ranked) != 50 || row.Retriever != "parametric-constrained" {
			t.Errorf("%s: %d ranked by %s", row.SampleID, len(row.Ranked), row.Retriever)
		}
		if hit := "<<"+row.Ranked[0]+">>" == answers[row.Query][0]; hit != (i%2 == 0) {
			t.Errorf("query %d: first %q, answers %q", i, row.Ranked[0], answers[row.Query])
		}
	}
	eval := readRows[toolsense.EvalRow](t, st, out[`node.retrieval_eval.parametric["toolgen"]`])
	all := 0
	for _, row := range eval {
		if row.Tier != "all" {
			continue
		}
		all++
		rf, is := math.Round(10000.0/3)/100, math.Round(20000.0/3)/10000
		if search == "beam" && row.K == 1 {
			rf, is = 0, 0
		}
		if row.Queries != limit || row.RcAtK != 50 || row.RfAtK != rf || row.ISAtK != is ||
			!(row.ISLo <= row.ISAtK && row.ISAtK <= row.ISHi) || row.Internalization != toolsense.Measured {
			t.Errorf("all @%d: %+v", row.K, row)
		}
	}
	if all != 6 {
		t.Errorf("%d rows of tier all, want one per k", all)
	}
	fewer := map[string]string{}
	for k, v := range vars {
		fewer[k] = v
	}
	fewer["toolgen_limit"] = "4"
	for _, n := range nodesOf {
		if p := planCalls(t, st, file, fewer)[n]; len(p) != 1 || p[0].Calls != 4 || p[0].Cached != 4 {
			t.Errorf("plan after the run with limit 4, %s: %+v, want 4 calls, all cached", n, p)
		}
	}
	before := srv.Stats().Requests
	run(t, st, file, vars)
	if after := srv.Stats().Requests; after != before {
		t.Errorf("the second run made %d requests", after-before)
	}
	checkKeys(t, st, file, vars, "toolsense_parametric_"+t.Name()[strings.LastIndex(t.Name(), "/")+1:])
	// A beam below 50 keeps k = beam tools.
	narrow := map[string]string{}
	for k, v := range vars {
		narrow[k] = v
	}
	narrow["beam"] = "20"
	out = run(t, st, file, narrow)
	for _, row := range readRows[toolsense.RetrieveRow](t, st, out[nodesOf[0]]) {
		if len(row.Ranked) != 20 {
			t.Errorf("beam 20, %s: %d ranked, want 20", row.SampleID, len(row.Ranked))
		}
	}
}
