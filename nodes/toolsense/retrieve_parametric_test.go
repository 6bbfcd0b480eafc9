package toolsense_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/toolsense"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// The parametric fixture: five tools over three APIs (an endpoint name,
// current, under two of them), and three queries, one per tier.
const (
	pmTools = `{"tool_name": "Weather&&current", "tool_title": "Weather", "api_title": "current"}
{"tool_name": "Weather&&forecast", "tool_title": "Weather", "api_title": "forecast"}
{"tool_name": "Maps&&route", "tool_title": "Maps", "api_title": "route"}
{"tool_name": "Maps&&current", "tool_title": "Maps", "api_title": "current"}
{"tool_name": "Tik&&trending", "tool_title": "Tik", "api_title": "trending"}
`
	pmQueries = `{"sample_id": "q1", "query": "will it rain tomorrow", "complexity": "easy", "tool": {"tool_name": "Weather&&forecast"}}
{"sample_id": "q2", "query": "how do I get there", "complexity": "medium", "tool": [{"tool_name": "Maps&&route"}, {"tool_name": "Tik&&trending"}]}
{"sample_id": "q3", "query": "what is on now", "complexity": "hard", "tool": [{"tool_name": "Weather&&current"}, {"tool_name": "Maps&&current"}, {"tool_name": "X&&y"}]}
`
)

var pmNames = []string{"Weather&&current", "Weather&&forecast", "Maps&&route", "Maps&&current", "Tik&&trending"}

// pmVocab is the model's vocabulary: a word, the flat tool tokens, the
// API tokens and the endpoint tokens, ids from 100.
func pmVocab() map[string]int {
	v := map[string]int{"the": 7}
	add := func(tok string) {
		if _, ok := v[tok]; !ok {
			v[tok] = 100 + len(v)
		}
	}
	for _, n := range pmNames {
		add("<<" + n + ">>")
	}
	for _, n := range pmNames {
		a, e, _ := strings.Cut(n, "&&")
		add("<<" + a + ">>")
		add("<<" + e + ">>")
	}
	return v
}

// lpFunc is a scripted model: the log-probability of token after the
// assistant prefix, for a query.
type lpFunc func(query, prefix, token string) float64

// next serves lp through llmtest's Rule.Next over the whole vocabulary
// (the server applies allowed_token_ids). The word "the" is always the
// most probable token: an unmasked server would answer it.
func (lp lpFunc) next(q llmtest.Request) []llmtest.Candidate {
	_, query, _ := strings.Cut(q.Text(), "provided below:\n")
	prefix := ""
	if q.API == "completions" {
		// The prompt continues with the first step's token.
		if i := strings.LastIndex(query, "<<"); i >= 0 && strings.HasSuffix(query, ">>") {
			query, prefix = query[:i], query[i:]
		}
	} else if last := q.Messages[len(q.Messages)-1]; last.Role == "assistant" {
		prefix = last.Content
	}
	var out []llmtest.Candidate
	for tok, id := range pmVocab() {
		l := 0.0
		if tok != "the" {
			l = lp(query, prefix, tok)
		}
		out = append(out, llmtest.Candidate{Token: tok, ID: id, Logprob: l})
	}
	return out
}

// hashed is a model whose log-probabilities look random but are fixed.
func hashed(query, prefix, token string) float64 {
	h := fnv.New64a()
	h.Write([]byte(query + "\x00" + prefix + "\x00" + token))
	return -float64(h.Sum64()%100000)/1000 - 0.5
}

// pmRun runs nodes over the fixture against a server at url.
func pmRun(t *testing.T, dir, url, nodes string) *nodetest.Result {
	t.Helper()
	return nodetest.RunErr(t, dir, pmPipeline(t, dir, url)+nodes)
}

func pmPipeline(t *testing.T, dir, url string) string { return pmPipelineWith(t, dir, url, "") }

// pmPipelineWith is pmPipeline with more attributes in the model block.
func pmPipelineWith(t *testing.T, dir, url, modelAttrs string) string {
	write(t, dir, "tools.jsonl", pmTools)
	write(t, dir, "queries.jsonl", pmQueries)
	b, _ := json.Marshal(pmVocab())
	write(t, dir, "added_tokens.json", string(b))
	return fmt.Sprintf(`model "tg" {
  id          = "example/toolgen"
  endpoint    = %q
  served_name = "test-model"
%s
}
node "catalog" "c" { path = "tools.jsonl" }
node "import" "q" { path = "queries.jsonl" }
`, url, modelAttrs)
}

func constrainedNode(name, format string, beam, k int) string {
	return fmt.Sprintf(`node "retrieve_parametric" %q {
  catalog      = node.catalog.c
  queries      = node.import.q
  model        = model.tg
  decoding     = "constrained"
  token_format = %q
  tokens       = "added_tokens.json"
  beam         = %d
  k            = %d
}
`, name, format, beam, k)
}

func mustRows(t *testing.T, r *nodetest.Result, addr string) []toolsense.RetrieveRow {
	t.Helper()
	if n := r.Nodes[addr]; n == nil || n.Err != nil {
		t.Fatalf("%s failed: %v", addr, n.Err)
	}
	return nodetest.Read[toolsense.RetrieveRow](t, r, addr)
}

type ranked struct {
	name  string
	score float64
	pos   int
}

func sortRanked(rs []ranked) {
	slices.SortStableFunc(rs, func(a, b ranked) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return a.pos - b.pos
	})
}

func wantRanking(t *testing.T, row toolsense.RetrieveRow, want []ranked) {
	t.Helper()
	var names []string
	var scores []float64
	for _, r := range want {
		names = append(names, r.name)
		scores = append(scores, r.score)
	}
	if !reflect.DeepEqual(row.Ranked, names) || !reflect.DeepEqual(row.Scores, scores) {
		t.Errorf("%s: ranked %v %v\nwant %v %v", row.SampleID, row.Ranked, row.Scores, names, scores)
	}
}

// TestConstrainedFlatRanksCatalogTokensByTheirLogprobs: one masked
// logprobs request per query; the tools in the scripted log-probabilities'
// order (ties by catalog order), cut to k.
func TestConstrainedFlatRanksCatalogTokensByTheirLogprobs(t *testing.T) {
	table := map[string]map[string]float64{
		"will it rain tomorrow": {"<<Weather&&forecast>>": -0.1, "<<Weather&&current>>": -1},
		"how do I get there":    {"<<Maps&&current>>": -0.2, "<<Maps&&route>>": -0.5},
	}
	lp := lpFunc(func(q, _, tok string) float64 {
		if l, ok := table[q][tok]; ok {
			return l
		}
		return -5 // every other tool ties
	})
	srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Next: lp.next}}, MaxLogprobs: 50})
	defer srv.Close()
	r := pmRun(t, t.TempDir(), srv.URL(), constrainedNode("flat", "flat", 50, 4))
	rows := mustRows(t, r, "node.retrieve_parametric.flat")
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, row := range rows {
		var want []ranked
		for i, n := range pmNames {
			want = append(want, ranked{n, lp(row.Query, "", "<<"+n+">>"), i})
		}
		sortRanked(want)
		wantRanking(t, row, want[:4])
		if row.Retriever != "parametric-constrained" {
			t.Errorf("retriever %q", row.Retriever)
		}
	}
	if rows[0].Ranked[0] != "Weather&&forecast" || rows[2].Ranked[0] != "Weather&&current" || rows[2].AnswersNotInCatalog != 1 {
		t.Errorf("rows %+v", rows)
	}
	for _, c := range srv.Calls() {
		if c.Request.MaxTokens != 1 || c.Request.Logprobs != 5 || len(c.Request.AllowedTokenIDs) != 5 || *c.Request.Temperature != 0 {
			t.Errorf("request: max_tokens %d, top_logprobs %d, allowed %v", c.Request.MaxTokens, c.Request.Logprobs, c.Request.AllowedTokenIDs)
		}
		if !strings.HasPrefix(c.Request.Text(), "You will be provided with the user query.") {
			t.Errorf("prompt %q is not K.2's", c.Request.Text())
		}
	}
	wantContains(t, r.Notes(engine.EventDone)["node.retrieve_parametric.flat"], "3 queries, constrained decoding (flat tokens, beam 50), top 4", "3 calls made")
}

// bruteForce enumerates every two-step path of the catalog with the
// scripted model and keeps what a width-B beam search keeps: the B best
// APIs, each extended by its B best endpoints, the B best paths; with B
// at least the number of APIs and of any API's endpoints, that is every
// path, best first.
func bruteForce(query string, beam int) []ranked {
	return bruteForceLP(beam, func(prefix, tok string) float64 { return hashed(query, prefix, tok) })
}

// bruteForceLP is bruteForce with a step's log-probabilities from lp.
func bruteForceLP(beam int, lp func(prefix, tok string) float64) []ranked {
	type apiScore struct {
		name  string
		score float64
		pos   int
	}
	var apis []apiScore
	seen := map[string]bool{}
	for i, n := range pmNames {
		a, _, _ := strings.Cut(n, "&&")
		if !seen[a] {
			seen[a] = true
			apis = append(apis, apiScore{a, lp("", "<<"+a+">>"), i})
		}
	}
	slices.SortStableFunc(apis, func(x, y apiScore) int { return sortKey(x.score, y.score, x.pos, y.pos) })
	var paths []ranked
	for _, a := range apis[:min(beam, len(apis))] {
		var ext []ranked
		for i, n := range pmNames {
			if api, e, _ := strings.Cut(n, "&&"); api == a.name {
				ext = append(ext, ranked{n, a.score + lp("<<"+a.name+">>", "<<"+e+">>"), i})
			}
		}
		sortRanked(ext)
		paths = append(paths, ext[:min(beam, len(ext))]...)
	}
	sortRanked(paths)
	return paths[:min(beam, len(paths))]
}

func sortKey(a, b float64, pa, pb int) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return pa - pb
}

// TestConstrainedHierarchicalBeamSearchMatchesBruteForce: lacuna's beam
// search over <<API>><<ENDPOINT>> gives what enumerating the paths gives:
// every path at a beam wide enough for the catalog, and the pruned set at
// beam 2. The endpoint step continues the API token as an assistant
// message and allows only that API's endpoints.
func TestConstrainedHierarchicalBeamSearchMatchesBruteForce(t *testing.T) {
	for _, beam := range []int{50, 2} {
		t.Run(fmt.Sprint("beam ", beam), func(t *testing.T) {
			srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Next: lpFunc(hashed).next}}, MaxLogprobs: 50})
			defer srv.Close()
			k := min(beam, 5)
			r := pmRun(t, t.TempDir(), srv.URL(), constrainedNode("h", "hierarchical", beam, k))
			rows := mustRows(t, r, "node.retrieve_parametric.h")
			for _, row := range rows {
				want := bruteForce(row.Query, beam)
				wantRanking(t, row, want[:min(k, len(want))])
			}
			steps := map[int]int{}
			vocab := pmVocab()
			for _, c := range srv.Calls() {
				msgs := c.Request.Messages
				steps[len(msgs)]++
				if len(msgs) == 2 {
					if msgs[1].Role != "assistant" || c.Request.Body["continue_final_message"] != true || c.Request.Body["add_generation_prompt"] != false {
						t.Errorf("endpoint step %+v", c.Request.Body)
					}
					api := strings.TrimSuffix(strings.TrimPrefix(msgs[1].Content, "<<"), ">>")
					var want []int
					for _, n := range pmNames {
						if a, e, _ := strings.Cut(n, "&&"); a == api {
							want = append(want, vocab["<<"+e+">>"])
						}
					}
					slices.Sort(want)
					if !reflect.DeepEqual(c.Request.AllowedTokenIDs, want) {
						t.Errorf("after %s allowed %v, want %v", api, c.Request.AllowedTokenIDs, want)
					}
				}
			}
			if steps[1] != 3 || steps[2] != 3*min(beam, 3) {
				t.Errorf("calls by step %v, want 3 API steps and %d endpoint steps", steps, 3*min(beam, 3))
			}
		})
	}
}

// respelled is a server that spells every token of lp differently from
// the tokens file (as a tokenizer may spell a non-ASCII name), ids kept.
func respelled(lp lpFunc) func(llmtest.Request) []llmtest.Candidate {
	return func(q llmtest.Request) []llmtest.Candidate {
		cands := lp.next(q)
		for i := range cands {
			cands[i].Token = "\u2581" + cands[i].Token
		}
		return cands
	}
}

// TestConstrainedSearchMatchesTokensByID: constrained requests ask for
// return_tokens_as_token_ids and the top log-probabilities are matched by
// id through the tokens file, so a server spelling the tokens otherwise
// ranks right; through the completions API the endpoint step appends the
// API token to the prompt; a server that ignores token ids is matched by
// text, the fallback. All rank as enumerating the paths does.
func TestConstrainedSearchMatchesTokensByID(t *testing.T) {
	cases := []struct {
		name  string
		attrs string
		cfg   llmtest.Config
	}{
		{"chat", "", llmtest.Config{Script: []llmtest.Rule{{Next: lpFunc(hashed).next}}}},
		{"completions", `api = "completions"`, llmtest.Config{Script: []llmtest.Rule{{Next: lpFunc(hashed).next}}}},
		{"server spells tokens otherwise", "", llmtest.Config{Script: []llmtest.Rule{{Next: respelled(hashed)}}}},
		{"server ignores token ids", "", llmtest.Config{Script: []llmtest.Rule{{Next: lpFunc(hashed).next}}, IgnoreTokenIDs: true}},
		// llama.cpp's server writes logprobs in the chat form for the
		// completions API too (with token ids and bytes).
		{"llama.cpp's logprobs, completions", `api = "completions"`, llmtest.Config{Script: []llmtest.Rule{{Next: lpFunc(hashed).next}}, LogprobsFormat: llmtest.LlamaCppLogprobs}},
		{"llama.cpp's logprobs, chat", "", llmtest.Config{Script: []llmtest.Rule{{Next: lpFunc(hashed).next}}, LogprobsFormat: llmtest.LlamaCppLogprobs}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(tc.cfg)
			defer srv.Close()
			dir := t.TempDir()
			r := nodetest.RunErr(t, dir, pmPipelineWith(t, dir, srv.URL(), tc.attrs)+constrainedNode("h", "hierarchical", 50, 5))
			for _, row := range mustRows(t, r, "node.retrieve_parametric.h") {
				wantRanking(t, row, bruteForce(row.Query, 50)[:5])
			}
			for _, c := range srv.Calls() {
				if strings.Contains(tc.attrs, "completions") && (c.Request.API != "completions" || !strings.HasPrefix(c.Request.Prompt, "You will be provided")) {
					t.Errorf("request %+v", c.Request.Body)
				}
				if c.Request.Body["return_tokens_as_token_ids"] != true {
					t.Errorf("request without return_tokens_as_token_ids %+v", c.Request.Body)
				}
			}
		})
	}
}

// TestConstrainedSearchRanksProcessedLogprobs: under vLLM's
// processed_logprobs (each step renormalised over its allowed tokens) the
// hierarchical search gives what enumerating the paths with renormalised
// steps gives, and the note says how that differs from Hugging Face's.
func TestConstrainedSearchRanksProcessedLogprobs(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Next: lpFunc(hashed).next}}, LogprobsMode: llmtest.ProcessedLogprobs})
	defer srv.Close()
	const beam = 2
	r := pmRun(t, t.TempDir(), srv.URL(), constrainedNode("h", "hierarchical", beam, beam))
	for _, row := range mustRows(t, r, "node.retrieve_parametric.h") {
		// allowed is each step's allowed tokens: the API tokens, or an
		// API's endpoint tokens.
		allowed := func(prefix string) []string {
			var out []string
			for _, n := range pmNames {
				a, e, _ := strings.Cut(n, "&&")
				tok := "<<" + a + ">>"
				if prefix != "" {
					if "<<"+a+">>" != prefix {
						continue
					}
					tok = "<<" + e + ">>"
				}
				if !slices.Contains(out, tok) {
					out = append(out, tok)
				}
			}
			return out
		}
		lp := func(prefix, tok string) float64 {
			z := 0.0
			for _, o := range allowed(prefix) {
				z += math.Exp(hashed(row.Query, prefix, o))
			}
			return hashed(row.Query, prefix, tok) - math.Log(z)
		}
		want := bruteForceLP(beam, lp)
		if len(row.Ranked) != len(want) {
			t.Fatalf("%s: ranked %v, want %v", row.SampleID, row.Ranked, want)
		}
		for i, w := range want {
			if row.Ranked[i] != w.name || math.Abs(row.Scores[i]-w.score) > 1e-9 {
				t.Errorf("%s: ranked %v %v, want %v", row.SampleID, row.Ranked, row.Scores, want)
				break
			}
		}
	}
	wantContains(t, r.Notes(engine.EventDone)["node.retrieve_parametric.h"], "Hugging Face's trie search sums raw log-softmax values and scores the end token")
}

// TestConstrainedDecodingRefusesRawLogprobs: a server ranking before the
// mask (vLLM's raw_logprobs) lists tokens outside the allowed ones: the
// node fails after one call, naming the fix, and writes no ranking; a
// re-run answers the call from the cache and fails again, until a seed
// in the model block changes the calls' keys.
func TestConstrainedDecodingRefusesRawLogprobs(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Next: lpFunc(hashed).next}}, LogprobsMode: llmtest.RawLogprobs})
	defer srv.Close()
	dir := t.TempDir()
	for run := range 2 {
		r := pmRun(t, dir, srv.URL(), constrainedNode("c", "flat", 50, 50))
		wantContains(t, nodeErr(t, r, "node.retrieve_parametric.c"), "outside the allowed ones", "--logprobs-mode processed_logprobs")
		if n := r.Nodes["node.retrieve_parametric.c"]; n.State == engine.StateDone {
			t.Errorf("run %d: the node is done", run)
		}
		if n := srv.Stats().Requests; n != 1 {
			t.Errorf("run %d: %d requests, want the first query's one", run, n)
		}
	}
	// Fixed, the server is asked again once the model block's seed
	// changes the calls' keys, as the error says.
	fixed := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Next: lpFunc(hashed).next}}, LogprobsMode: llmtest.ProcessedLogprobs})
	defer fixed.Close()
	nodeErr(t, pmRun(t, dir, fixed.URL(), constrainedNode("c", "flat", 50, 50)), "node.retrieve_parametric.c")
	r := nodetest.RunErr(t, dir, pmPipelineWith(t, dir, fixed.URL(), "seed = 1")+constrainedNode("c", "flat", 50, 50))
	if rows := mustRows(t, r, "node.retrieve_parametric.c"); len(rows) != 3 || len(rows[0].Ranked) != 5 {
		t.Errorf("after the fix: %+v", rows)
	}
}

// TestFreeDecodingReadsToolTokensBackInOrder: virtual tokens in order of
// appearance, each tool once; tokens naming no tool counted, not listed.
func TestFreeDecodingReadsToolTokensBackInOrder(t *testing.T) {
	answers := map[string]map[string]string{
		"flat": {
			"will it rain tomorrow": "<<<Weather&&forecast>>",
			"how do I get there":    "<<Maps&&route>> or <<Nope&&x>>, else <<Maps&&route>><<Tik&&trending>>",
			"what is on now":        "I do not know the tool.",
		},
		"hierarchical": {
			"will it rain tomorrow": "<<<Weather>><<forecast>>",
			"how do I get there":    "<<Maps>> <<route>> <<Weather>><<trending>> <<Maps>><<route>>",
			"what is on now":        "<<Weather&&current>>",
		},
	}
	want := map[string][][]string{
		"flat":         {{"Weather&&forecast"}, {"Maps&&route", "Tik&&trending"}, {}},
		"hierarchical": {{"Weather&&forecast"}, {"Maps&&route"}, {}},
	}
	notes := map[string][]string{
		"flat":         {"1 without a catalog tool", "1 unknown tool tokens in 1 queries", "1 duplicates dropped"},
		"hierarchical": {"1 without a catalog tool", "3 unknown tool tokens in 2 queries", "1 duplicates dropped"},
	}
	for _, format := range []string{"flat", "hierarchical"} {
		t.Run(format, func(t *testing.T) {
			srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Reply: func(q llmtest.Request) string {
				_, query, _ := strings.Cut(q.Text(), "provided below:\n")
				return answers[format][query]
			}}}})
			defer srv.Close()
			r := pmRun(t, t.TempDir(), srv.URL(), fmt.Sprintf(`node "retrieve_parametric" "free" {
  catalog      = node.catalog.c
  queries      = node.import.q
  model        = model.tg
  decoding     = "free"
  token_format = %q
}
`, format))
			rows := mustRows(t, r, "node.retrieve_parametric.free")
			for i, row := range rows {
				if !reflect.DeepEqual(row.Ranked, want[format][i]) || len(row.Scores) != 0 || row.Retriever != "parametric-free" {
					t.Errorf("%s: ranked %q scores %v, want %q", row.SampleID, row.Ranked, row.Scores, want[format][i])
				}
			}
			wantContains(t, r.Notes(engine.EventDone)["node.retrieve_parametric.free"], notes[format]...)
			for _, c := range srv.Calls() {
				if c.Request.MaxTokens != 64 || *c.Request.Temperature != 0 || c.Request.Logprobs != 0 || c.Request.AllowedTokenIDs != nil {
					t.Errorf("free request %+v", c.Request.Body)
				}
			}
		})
	}
}

// freeBruteForce enumerates, with model, a free beam search over the whole vocabulary
// (flat: one step; hierarchical: two, scores summed) and names each of
// the best beam outputs: its tool, or its raw text.
func freeBruteForce(model lpFunc, query string, beam int, hierarchical bool) []ranked {
	vocab := pmVocab()
	lp := func(prefix, tok string) float64 {
		if tok == "the" {
			return 0
		}
		return model(query, prefix, tok)
	}
	step := func(prefix string) []ranked {
		var out []ranked
		for tok := range vocab {
			out = append(out, ranked{tok, lp(prefix, tok), 0})
		}
		slices.SortFunc(out, func(a, b ranked) int {
			if c := sortKey(a.score, b.score, 0, 0); c != 0 {
				return c
			}
			return strings.Compare(a.name, b.name)
		})
		return out[:min(beam, len(out))]
	}
	name := func(text string) string {
		for _, n := range pmNames {
			a, e, _ := strings.Cut(n, "&&")
			if (!hierarchical && text == "<<"+n+">>") || (hierarchical && text == "<<"+a+">><<"+e+">>") {
				return n
			}
		}
		return text
	}
	first := step("")
	if !hierarchical {
		for i := range first {
			first[i].name = name(first[i].name)
		}
		return first
	}
	var paths []ranked
	for b, f := range first {
		for j, s := range step(f.name) {
			paths = append(paths, ranked{name(f.name + s.name), f.score + s.score, b*beam + j})
		}
	}
	sortRanked(paths)
	return paths[:min(beam, len(paths))]
}

// likesPaths is hashed, but with API tokens first and, after an API
// token, its endpoint tokens a hundred times likelier (in log space)
// than the rest: a free search then finds tools.
func likesPaths(query, prefix, token string) float64 {
	l := hashed(query, prefix, token)
	for _, n := range pmNames {
		a, e, _ := strings.Cut(n, "&&")
		if (prefix == "" && token == "<<"+a+">>") || (prefix == "<<"+a+">>" && token == "<<"+e+">>") {
			return l / 100
		}
	}
	return l
}

// TestFreeBeamSearchMatchesBruteForce: with beam set, free decoding is the
// unmasked beam search: what enumerating the vocabulary gives, outputs
// that name no tool (the word "the", a lone API token) holding their ranks.
func TestFreeBeamSearchMatchesBruteForce(t *testing.T) {
	for _, format := range []string{"flat", "hierarchical"} {
		t.Run(format, func(t *testing.T) {
			model := lpFunc(hashed)
			if format == "hierarchical" {
				model = likesPaths
			}
			srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Next: model.next}}, MaxLogprobs: 50})
			defer srv.Close()
			const beam = 4
			r := pmRun(t, t.TempDir(), srv.URL(), fmt.Sprintf(`node "retrieve_parametric" "fb" {
  catalog      = node.catalog.c
  queries      = node.import.q
  model        = model.tg
  decoding     = "free"
  token_format = %q
  beam         = %d
  k            = %d
}
`, format, beam, beam))
			rows := mustRows(t, r, "node.retrieve_parametric.fb")
			for _, row := range rows {
				want := freeBruteForce(model, row.Query, beam, format == "hierarchical")
				wantRanking(t, row, want)
				tools := 0
				for _, w := range want {
					if slices.Contains(pmNames, w.name) {
						tools++
					}
				}
				if tools == 0 || tools == len(want) {
					t.Errorf("%s: %d of %d outputs name tools: the fixture should mix both", row.SampleID, tools, len(want))
				}
				if row.Ranked[0] != "the" && row.Ranked[0] != "thethe" {
					t.Errorf("%s: the word the is the likeliest output, yet first is %q", row.SampleID, row.Ranked[0])
				}
			}
			want := 3
			if format == "hierarchical" {
				want = 3 + 3*beam
			}
			if n := srv.Stats().Requests; n != want {
				t.Errorf("%d requests, want %d", n, want)
			}
			for _, c := range srv.Calls() {
				if c.Request.AllowedTokenIDs != nil || c.Request.Logprobs != beam || c.Request.MaxTokens != 1 {
					t.Errorf("free beam request %+v", c.Request.Body)
				}
			}
			wantContains(t, r.Notes(engine.EventDone)["node.retrieve_parametric.fb"], fmt.Sprintf("free decoding (%s tokens, beam 4), top 4", format))
		})
	}
}

// TestParametricPairGivesRfRcAndISByHand: a constrained and a free run of
// one model, paired in retrieval_eval, give the Rc@k, Rf@k and IS@k
// computed by hand; changing k re-runs the retrieval from the call cache
// without a call.
//
//	q1 (easy, Weather&&forecast):  constrained forecast, current, …  hit@1     free forecast        hit@1
//	q2 (medium, route | trending): constrained Maps&&current, route  hit@2     free Maps&&current   miss
//	q3 (hard, the two currents):   constrained trending, route, …    miss@1,2  free ?, Weather&&cur hit@1
func TestParametricPairGivesRfRcAndISByHand(t *testing.T) {
	table := map[string]map[string]float64{
		"will it rain tomorrow": {"<<Weather&&forecast>>": -0.1, "<<Weather&&current>>": -1},
		"how do I get there":    {"<<Maps&&current>>": -0.2, "<<Maps&&route>>": -0.5},
		"what is on now":        {"<<Tik&&trending>>": -0.1, "<<Maps&&route>>": -0.3},
	}
	free := map[string]string{
		"will it rain tomorrow": "<<Weather&&forecast>>",
		"how do I get there":    "<<Maps&&current>>",
		"what is on now":        "<<Bogus&&x>> <<Weather&&current>>",
	}
	lp := lpFunc(func(q, _, tok string) float64 {
		if l, ok := table[q][tok]; ok {
			return l
		}
		return -5
	})
	srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{
		{When: func(q llmtest.Request) bool { return q.Logprobs > 0 }, Next: lp.next},
		{Reply: func(q llmtest.Request) string {
			_, query, _ := strings.Cut(q.Text(), "provided below:\n")
			return free[query]
		}},
	}})
	defer srv.Close()
	nodes := func(k int) string {
		return constrainedNode("cons", "flat", 50, k) + fmt.Sprintf(`node "retrieve_parametric" "free" {
  catalog  = node.catalog.c
  queries  = node.import.q
  model    = model.tg
  decoding = "free"
  k        = %d
}
node "retrieval_eval" "e" {
  constrained = [node.retrieve_parametric.cons]
  free        = [node.retrieve_parametric.free]
  k           = [1, 2]
  bootstrap   = 0
}
`, k)
	}
	dir := t.TempDir()
	r := pmRun(t, dir, srv.URL(), nodes(5))
	if n := r.Nodes["node.retrieval_eval.e"]; n.Err != nil {
		t.Fatal(n.Err)
	}
	got := nodetest.Read[toolsense.EvalRow](t, r, "node.retrieval_eval.e")
	third, twoThirds := math.Round(10000.0/3)/100, math.Round(20000.0/3)/100
	want := []struct {
		tier       string
		k          int64
		rc, rf, is float64
	}{
		{"easy", 1, 100, 100, 1}, {"easy", 2, 100, 100, 1},
		{"medium", 1, 0, 0, 0}, {"medium", 2, 100, 0, 0},
		{"hard", 1, 0, 100, 0}, {"hard", 2, 0, 100, 0}, // Rc = 0: IS = 0 (Eq. 2)
		{"all", 1, third, twoThirds, 2}, {"all", 2, twoThirds, twoThirds, 1},
	}
	if len(got) != len(want) {
		t.Fatalf("%d eval rows, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Tier != w.tier || g.K != w.k || g.RcAtK != w.rc || g.RfAtK != w.rf || g.ISAtK != w.is || g.Internalization != toolsense.Measured || g.Free != "node.retrieve_parametric.free" {
			t.Errorf("row %d: %s k=%d Rc %v Rf %v IS %v (%s); want %s k=%d Rc %v Rf %v IS %v", i, g.Tier, g.K, g.RcAtK, g.RfAtK, g.ISAtK, g.Internalization, w.tier, w.k, w.rc, w.rf, w.is)
		}
	}
	made := srv.Stats().Requests
	if made != 6 {
		t.Errorf("%d requests, want 3 constrained and 3 free", made)
	}
	again := pmRun(t, dir, srv.URL(), nodes(4))
	for _, addr := range []string{"node.retrieve_parametric.cons", "node.retrieve_parametric.free"} {
		if n := again.Nodes[addr]; n == nil || n.Err != nil || n.State != engine.StateDone {
			t.Fatalf("%s with k = 4: %+v", addr, n)
		}
		wantContains(t, again.Notes(engine.EventDone)[addr], "0 calls made, 3 cached")
	}
	if srv.Stats().Requests != made {
		t.Errorf("the re-run sent %d requests", srv.Stats().Requests-made)
	}
}

// TestConstrainedDecodingNeedsLogprobsFromTheServer: a server that drops
// log-probabilities, or caps them below the beam, fails the node saying so.
func TestConstrainedDecodingNeedsLogprobsFromTheServer(t *testing.T) {
	cases := []struct {
		name string
		cfg  llmtest.Config
		want string
	}{
		{"no logprobs", llmtest.Config{NoLogprobs: true}, "answered without top log-probabilities"},
		{"max logprobs below the beam", llmtest.Config{MaxLogprobs: 2}, "vLLM must run with --max-logprobs ≥ 50"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Script = []llmtest.Rule{{Next: lpFunc(hashed).next}}
			srv := llmtest.New(tc.cfg)
			defer srv.Close()
			r := pmRun(t, t.TempDir(), srv.URL(), constrainedNode("c", "flat", 50, 50))
			wantContains(t, nodeErr(t, r, "node.retrieve_parametric.c"), tc.want)
			if n := srv.Stats().Requests; n != 1 {
				t.Errorf("%d requests, want the first query's one before failing", n)
			}
		})
	}
}

// TestConstrainedDecodingOnAServerThatIgnoresTheMask: llama.cpp's and
// llama-cpp-python's servers ignore allowed_token_ids and answer the most
// probable token of all ("the"); the node fails after the first call,
// saying the server ignored the mask and naming it as it names itself,
// not blaming vLLM's logprobs mode.
func TestConstrainedDecodingOnAServerThatIgnoresTheMask(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  llmtest.Config
	}{
		{"llama.cpp", llmtest.LlamaCpp(llmtest.Config{Models: []string{"test-model"}, Script: []llmtest.Rule{{Next: lpFunc(hashed).next}}})},
		{"llama-cpp-python", llmtest.LlamaCppPython(llmtest.Config{Models: []string{"test-model"}, Script: []llmtest.Rule{{Next: lpFunc(hashed).next}}})},
	} {
		for _, format := range []string{"flat", "hierarchical"} {
			t.Run(tc.name+" "+format, func(t *testing.T) {
				srv := llmtest.New(tc.cfg)
				defer srv.Close()
				r := pmRun(t, t.TempDir(), srv.URL(), constrainedNode("c", format, 3, 3))
				err := nodeErr(t, r, "node.retrieve_parametric.c")
				for _, want := range []string{`the answer "the" is none of the`, "ignored allowed_token_ids", `calls itself "test-model"`, srv.URL()} {
					wantContains(t, err, want)
				}
				if strings.Contains(err, "logprobs-mode") {
					t.Errorf("the error blames vLLM's logprobs mode: %s", err)
				}
				if n := srv.Stats().Requests; n != 1 {
					t.Errorf("%d requests, want the first query's one before failing", n)
				}
			})
		}
	}
}

func freeBeamNode(format string, beam int) string {
	return fmt.Sprintf(`node "retrieve_parametric" "fb" {
  catalog      = node.catalog.c
  queries      = node.import.q
  model        = model.tg
  decoding     = "free"
  token_format = %q
  beam         = %d
  k            = %d
}
`, format, beam, beam)
}

// TestFreeBeamNeedsLogprobsFromTheServer: as constrained decoding, a free
// beam search fails after one call on a server without log-probabilities,
// and names --max-logprobs on one that caps them below the beam.
func TestFreeBeamNeedsLogprobsFromTheServer(t *testing.T) {
	cases := []struct {
		name string
		cfg  llmtest.Config
		want string
	}{
		{"no logprobs", llmtest.Config{NoLogprobs: true}, "answered without top log-probabilities"},
		{"max logprobs below the beam", llmtest.Config{MaxLogprobs: 2}, "vLLM must run with --max-logprobs ≥ 4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Script = []llmtest.Rule{{Next: lpFunc(hashed).next}}
			srv := llmtest.New(tc.cfg)
			defer srv.Close()
			r := pmRun(t, t.TempDir(), srv.URL(), freeBeamNode("hierarchical", 4))
			wantContains(t, nodeErr(t, r, "node.retrieve_parametric.fb"), tc.want)
			if n := srv.Stats().Requests; n != 1 {
				t.Errorf("%d requests, want the first query's one before failing", n)
			}
		})
	}
}

// TestSharedModelWithTokenIDsServesBothDecodings: a model block setting
// return_tokens_as_token_ids serves a free beam search (the field is
// dropped: free outputs are read by text, and a second step continues a
// first token as text) and a constrained one (matched by id) alike.
func TestSharedModelWithTokenIDsServesBothDecodings(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Next: lpFunc(likesPaths).next}}, MaxLogprobs: 50})
	defer srv.Close()
	dir := t.TempDir()
	const beam = 4
	src := pmPipelineWith(t, dir, srv.URL(), `params = { return_tokens_as_token_ids = "true" }`) +
		freeBeamNode("hierarchical", beam) + constrainedNode("h", "hierarchical", 50, 5)
	r := nodetest.RunErr(t, dir, src)
	for _, row := range mustRows(t, r, "node.retrieve_parametric.fb") {
		wantRanking(t, row, freeBruteForce(likesPaths, row.Query, beam, true))
	}
	for _, row := range mustRows(t, r, "node.retrieve_parametric.h") {
		wantRanking(t, row, bruteForceLP(50, func(prefix, tok string) float64 { return likesPaths(row.Query, prefix, tok) })[:5])
	}
	for _, c := range srv.Calls() {
		free := c.Request.AllowedTokenIDs == nil
		if _, set := c.Request.Body["return_tokens_as_token_ids"]; set == free {
			t.Errorf("free %v, request %+v", free, c.Request.Body)
		}
	}
}

// TestConstrainedDecodingNeedsAnIDForEveryCatalogToken: a tokens file
// that lacks catalog tokens fails the node, counting them.
func TestConstrainedDecodingNeedsAnIDForEveryCatalogToken(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Next: lpFunc(hashed).next}}})
	defer srv.Close()
	dir := t.TempDir()
	src := pmPipeline(t, dir, srv.URL())
	write(t, dir, "added_tokens.json", `{"<<Weather&&current>>": 100}`)
	r := nodetest.RunErr(t, dir, src+constrainedNode("c", "flat", 50, 50))
	wantContains(t, nodeErr(t, r, "node.retrieve_parametric.c"), "p.hcl:", "4 catalog tokens have no id in the tokens file", `(first: ["<<Maps&&current>>" "<<Maps&&route>>" "<<Tik&&trending>>"])`)
}

func TestRetrieveParametricRefusesConfigsItCannotRun(t *testing.T) {
	head := `model "tg" {
  id       = "x"
  endpoint = "http://127.0.0.1:1/v1"
}
node "catalog" "c" { path = "t.jsonl" }
node "import" "q" { path = "q.jsonl" }
node "retrieve_parametric" "r" {
  catalog = node.catalog.c
  queries = node.import.q
  model   = model.tg
`
	cases := []struct{ body, want string }{
		{`decoding = "beam"`, `"beam": use "constrained" or "free"`},
		{`decoding = "constrained"`, "Token ids needed"},
		{"decoding = \"constrained\"\ntokens = \"t.json\"\nbeam = 5\nk = 10", "k above beam"},
		{"decoding = \"constrained\"\ntokens = \"t.json\"\ntoken_format = \"tree\"", "Unknown token format"},
		{"decoding = \"free\"\nbeam = 5", "k above beam"},
		{"decoding = \"free\"\nbeam = 5\nk = 5\nmax_tokens = 9", "max_tokens is for greedy free decoding"},
		{"decoding = \"free\"\ntokens = \"t.json\"", "tokens is for constrained decoding"},
		{"decoding = \"free\"\nprompt = \"k9\"", "Unknown prompt"},
		{"decoding = \"free\"\ntoken_open = \"\"", "Empty token spelling"},
	}
	for _, tc := range cases {
		wantContains(t, configErr(t, head+tc.body+"\n}"), tc.want)
	}
}

// TestPlanCountsTheBeamSearchsCalls: before the first step is answered a
// hierarchical search's endpoint calls are counted as min(beam, APIs) per
// query; once answered, exactly, and all cached; calls another beam
// already made are counted cached.
func TestPlanCountsTheBeamSearchsCalls(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Next: lpFunc(hashed).next}}})
	defer srv.Close()
	dir := t.TempDir()
	head := pmPipeline(t, dir, srv.URL())
	st, err := artifacts.Open(filepath.Join(dir, ".lacuna"))
	if err != nil {
		t.Fatal(err)
	}
	x := func(src string) (*engine.Executor, *engine.Graph) {
		file := filepath.Join(dir, "p.hcl")
		g, diags := engine.ExpandSource(file, []byte(src), dir, engine.Options{})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		return &engine.Executor{Store: st, Jobs: 2, Pipeline: file, CountCalls: true}, g
	}
	plan := func(src string) nodes.CallPlan {
		ex, g := x(src)
		entries, err := ex.Plan(context.Background(), g, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Node == "node.retrieve_parametric.h" {
				if len(e.Calls) != 1 {
					t.Fatalf("plan entry %+v", e)
				}
				return e.Calls[0]
			}
		}
		t.Fatal("no plan entry for the node")
		return nodes.CallPlan{}
	}
	run := func(src string, targets ...string) {
		ex, g := x(src)
		if _, _, err := ex.Run(context.Background(), g, targets); err != nil {
			t.Fatal(err)
		}
	}
	src := head + constrainedNode("h", "hierarchical", 2, 2)
	run(src, "node.catalog.c", "node.import.q")
	if p := plan(src); p.Calls != 3+3*2 || p.Cached != 0 {
		t.Errorf("before the run: %+v, want 3 API steps and 3 × 2 endpoint steps, none cached", p)
	}
	run(src)
	if p := plan(head + constrainedNode("h", "hierarchical", 2, 1)); p.Calls != 9 || p.Cached != 9 {
		t.Errorf("after the run, with k = 1: %+v, want 9 calls, all cached", p)
	}
	// Beam 3 asks the API step for 3 top log-probabilities (a new call,
	// so every API's endpoint step is counted), and each endpoint step
	// for min(3, its endpoints) = what beam 2 asked: the 2 × 3 the beam-2
	// run made are cached.
	if p := plan(head + constrainedNode("h", "hierarchical", 3, 1)); p.Calls != 3+3*3 || p.Cached != 6 {
		t.Errorf("with beam 3: %+v, want 12 calls, 6 cached", p)
	}
}

// TestPlanCountsTheUpperBoundWhenTheFirstStepHasNoLogprobs: a first step
// answered without log-probabilities fails the run and is never cached
// (an empty ranking replayed forever); the plan counts it still to make,
// and its endpoint steps as the upper bound, not as none.
func TestPlanCountsTheUpperBoundWhenTheFirstStepHasNoLogprobs(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Script: []llmtest.Rule{{Next: lpFunc(hashed).next}}, NoLogprobs: true})
	defer srv.Close()
	dir := t.TempDir()
	src := pmPipeline(t, dir, srv.URL()) + constrainedNode("h", "hierarchical", 2, 2)
	nodeErr(t, nodetest.RunErr(t, dir, src), "node.retrieve_parametric.h") // caches nothing
	st, err := artifacts.Open(filepath.Join(dir, ".lacuna"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "p.hcl")
	g, diags := engine.ExpandSource(file, []byte(src), dir, engine.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	ex := &engine.Executor{Store: st, Jobs: 2, Pipeline: file, CountCalls: true}
	entries, err := ex.Plan(context.Background(), g, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Node == "node.retrieve_parametric.h" {
			if len(e.Calls) != 1 || e.Calls[0].Calls != 3+3*2 || e.Calls[0].Cached != 0 {
				t.Errorf("plan %+v, want 3 API steps (none cached) and 3 × 2 endpoint steps", e.Calls)
			}
			return
		}
	}
	t.Fatal("no plan entry for the node")
}
