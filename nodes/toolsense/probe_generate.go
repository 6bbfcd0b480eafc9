package toolsense

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
	"github.com/lacuna-dev/lacuna/runners/llm"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

// This file holds what mcq_generate and qa_generate share: the probing
// benchmarks' generate → programmatic validator → LLM judge loop of seed
// 002 §3.2 and Appendix J.2, with at most `retries` retries per tool whose
// failure reasons are fed back into the next generation prompt (as the
// paper's RRB loop does; the public code has no validator for MCQ/QA).
// Retrying departs from Appendix J.2, which discards a rejected MCQ/QA
// item: issue 11 asks for retries; retries = 0 is the paper's rule.

// probeGenConfig is the config of mcq_generate and qa_generate:
//
//	node "mcq_generate" "tools" {
//	  catalog = node.catalog.rrb
//	  model   = model.gen
//	  judge   = model.judge   # optional: default model
//	  count   = 20            # tools sampled from the catalog (default all)
//	  seed    = 1
//	  retries = 3
//	}
type probeGenConfig struct {
	Catalog nodes.Ref `hcl:"catalog"`
	// Model generates the items, with its block's sampling settings (the
	// paper: the model's default temperature).
	Model nodes.Model `hcl:"model"`
	// Judge accepts or rejects each item that passes the validator, at
	// temperature 0 whatever its block says; default Model.
	Judge *nodes.Model `hcl:"judge,optional"`
	// Count is the number of tools sampled (seeded) from the catalog
	// (default every tool).
	Count *int `hcl:"count,optional"`
	// Seed drives the tool sample and (qa) the rebalancing drops and the
	// row order (default 1).
	Seed *int64 `hcl:"seed,optional"`
	// Retries is the most retries per tool after a rejected attempt
	// (default 3; 0 for one attempt, the paper's Appendix J.2, which
	// discards a rejected item).
	Retries *int `hcl:"retries,optional"`
	// OptionWords (mcq only) is the [min, max] words of each answer
	// option. Unset (the default) the validator counts no words: the
	// generation prompt still asks for 2–8 (rule 3, seed 002 Figure 19),
	// but 38% of the released items have an option outside that range,
	// so the paper did not enforce it.
	OptionWords []int `hcl:"option_words,optional"`
}

const (
	probeDefaultRetries = 3
	probeDefaultSeed    = 1
)

func (c *probeGenConfig) retries() int {
	if c.Retries == nil {
		return probeDefaultRetries
	}
	return *c.Retries
}

func (c *probeGenConfig) seed() uint64 {
	if c.Seed == nil {
		return probeDefaultSeed
	}
	return uint64(*c.Seed)
}

// optionWords is option_words' bounds; hi is 0 (no limit) when unset.
func (c *probeGenConfig) optionWords() (lo, hi int) {
	if len(c.OptionWords) != 2 {
		return 0, 0
	}
	return c.OptionWords[0], c.OptionWords[1]
}

// validateProbeGen checks the shared config; mcq says whether
// option_words applies.
func validateProbeGen(c *probeGenConfig, mcq bool) error {
	switch {
	case c.Count != nil && *c.Count < 1:
		return nodes.Errorf("count", "Invalid count", "count is a number of tools, at least 1, not %d.", *c.Count)
	case c.Retries != nil && (*c.Retries < 0 || *c.Retries > 10):
		return nodes.Errorf("retries", "Invalid retries", "retries is 0 to 10 (the paper allows 3), not %d.", *c.Retries)
	case !mcq && c.OptionWords != nil:
		return nodes.Errorf("option_words", "option_words is for MCQ", "a QA item has no answer options.")
	case c.OptionWords != nil && (len(c.OptionWords) != 2 || c.OptionWords[0] < 1 || c.OptionWords[1] < c.OptionWords[0]):
		return nodes.Errorf("option_words", "Invalid option_words", "option_words is [min, max] words with 1 ≤ min ≤ max, e.g. [2, 8].")
	}
	return nil
}

// probeGenPinned is what Resolve fixed: the generation and judge models.
type probeGenPinned struct {
	gen, judge *llmenv.Model
}

// resolveProbeGen checks both models against their servers; the identity
// holds both and the digest of the kind's prompt files.
func resolveProbeGen(ctx context.Context, r nodes.Resolve, kind string) (*nodes.Pinned, error) {
	c := r.Config().(*probeGenConfig)
	gen, id, err := llmenv.Resolve(ctx, r, "model", "model", c.Model)
	if err != nil {
		return nil, err
	}
	judge := gen
	if c.Judge != nil {
		var jid map[string]string
		judge, jid, err = llmenv.Resolve(ctx, r, "judge", "judge", *c.Judge)
		if err != nil {
			return nil, err
		}
		for k, v := range jid {
			id[k] = v
		}
	}
	id["prompts"] = ts.ProbePromptDigest(kind+"_generate", kind+"_judge")
	return &nodes.Pinned{Identity: id, Value: &probeGenPinned{gen: gen, judge: judge}}, nil
}

// probeTool is one sampled tool and the state of its generation.
type probeTool struct {
	tool   CatalogRow
	target string // qa: the answer the question must have, "Yes" or "No"

	done     bool
	item     ts.ProbeItem
	attempts int
	feedback []string // the reasons of the last rejected attempt
	dropped  string   // why the tool has no item ("" when it has one)
}

// sampleProbeTools draws count tools (all when count is nil) from the
// catalog with the seed (ts.SampleProbeTools) and returns them in catalog
// order; for QA their target answers alternate Yes, No, Yes, ... in that
// order (ts.QATarget; rebalanceQA restores the balance after drops).
func sampleProbeTools(cat []CatalogRow, count *int, seed uint64, kind string) []*probeTool {
	idx := ts.SampleProbeTools(len(cat), count, seed, kind)
	out := make([]*probeTool, len(idx))
	for i, j := range idx {
		out[i] = &probeTool{tool: cat[j]}
		if kind == ts.BenchmarkQA {
			out[i].target = ts.QATarget(i)
		}
	}
	return out
}

// probeRebalanced is why rebalanceQA dropped a tool.
const probeRebalanced = "dropped to rebalance Yes/No"

// rebalanceQA marks probeRebalanced the kept tools ts.RebalanceQA drops
// to restore the Yes/No balance that drops broke.
func rebalanceQA(tools []*probeTool, seed uint64) {
	targets := make([]string, len(tools))
	kept := make([]bool, len(tools))
	for i, t := range tools {
		targets[i], kept[i] = t.target, t.dropped == ""
	}
	for _, i := range ts.RebalanceQA(targets, kept, seed) {
		tools[i].dropped = probeRebalanced
	}
}

// probeGen is one run (or plan) of mcq_generate or qa_generate. It is
// used by one goroutine: the calls of a round run concurrently inside
// llmenv.DoAll, whose callback is serialised, and the round's answers are
// read after it returns.
type probeGen struct {
	kind  string // "mcq" or "qa"
	cfg   *probeGenConfig
	p     *probeGenPinned
	tools []*probeTool
	// genCl and judgeCl call the models.
	genCl, judgeCl *llm.Client
	// problems counts rejected attempts by reason class.
	problems map[string]int
}

func newProbeGen(r nodes.Run, kind string, cfg *probeGenConfig) (*probeGen, error) {
	p, ok := r.Pinned().(*probeGenPinned)
	if !ok {
		return nil, fmt.Errorf("%s_generate: the models were not resolved", kind)
	}
	in, err := r.Input(cfg.Catalog)
	if err != nil {
		return nil, err
	}
	cat, err := artifacts.ReadAll[CatalogRow](in)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w (catalog must come from a catalog node)", cfg.Catalog, err)
	}
	g := &probeGen{kind: kind, cfg: cfg, p: p, tools: sampleProbeTools(cat, cfg.Count, cfg.seed(), kind), problems: map[string]int{}}
	g.genCl = p.gen.Client(r)
	g.judgeCl = g.genCl
	if p.judge != p.gen {
		g.judgeCl = p.judge.Client(r)
	}
	return g, nil
}

func (g *probeGen) mcq() bool { return g.kind == ts.BenchmarkMCQ }

// genCall is the generation call of tool t's attempt: the prompt with the
// last attempt's reasons as feedback, sample index = attempt (a retry is
// a new call even when its prompt repeats one).
func (g *probeGen) genCall(t *probeTool) (llm.Call, error) {
	user, err := ts.ProbeGeneratePrompt(g.kind, t.tool, t.target, t.feedback)
	if err != nil {
		return llm.Call{}, err
	}
	req := g.p.gen.Request()
	req.Schema, req.SchemaName = ts.QAItemSchema, "qa_item"
	if g.mcq() {
		req.Schema, req.SchemaName = ts.MCQItemSchema, "mcq_item"
	}
	return llm.Call{Request: probeMessages(g.p.gen, req, user), Sample: t.attempts}, nil
}

// judgeCall is the judge call of tool t's item, at temperature 0 whatever
// the model block says (seed 002 Appendix I and K.3: every judge call at
// T = 0; the judge is often the generator's block, whose temperature is
// the generator's).
func (g *probeGen) judgeCall(t *probeTool, it ts.ProbeItem) (llm.Call, error) {
	user, err := ts.ProbeJudgePrompt(g.kind, t.tool, it, t.target)
	if err != nil {
		return llm.Call{}, err
	}
	req := g.p.judge.Request()
	zero := 0.0
	req.Temperature = &zero
	req.Schema, req.SchemaName = ts.ProbeVerdictSchema, "verdict"
	return llm.Call{Request: probeMessages(g.p.judge, req, user), Sample: t.attempts}, nil
}

// probeMessages puts the user prompt into req: as the only user message
// after the model block's system prompt, if any (chat), or as the prompt
// (completions).
func probeMessages(m *llmenv.Model, req llm.Request, user string) llm.Request {
	sys := ""
	if m.Config.System != nil {
		sys = *m.Config.System
	}
	if req.API == "completions" {
		req.Prompt = strings.TrimSpace(sys + "\n\n" + user)
		return req
	}
	req.Messages = []llm.Message{{Role: "user", Content: user}}
	if sys != "" {
		req.Messages = append([]llm.Message{{Role: "system", Content: sys}}, req.Messages...)
	}
	return req
}

// probeAsker makes a batch of generation (judge false) or judge calls and
// returns each answer; a nil answer is a call a plan would make (not
// cached).
type probeAsker func(judge bool, calls []llm.Call) ([]*llm.Response, error)

// loop runs the attempts: each round asks the generator for every tool
// still open, validates the answers, asks the judge about those that pass
// and feeds the reasons of every rejection into the tool's next attempt.
// A generator that sets skip drops its tool at once (Appendix J.2); a tool
// still rejected after its last retry is dropped with its last reasons.
// A judge answer that is not the verdict rejects the item (fail closed).
func (g *probeGen) loop(ask probeAsker) error {
	lo, hi := g.cfg.optionWords()
	for round := 0; round <= g.cfg.retries(); round++ {
		var open []*probeTool
		var calls []llm.Call
		for _, t := range g.tools {
			if t.done {
				continue
			}
			c, err := g.genCall(t)
			if err != nil {
				return err
			}
			open, calls = append(open, t), append(calls, c)
		}
		if len(open) == 0 {
			break
		}
		answers, err := ask(false, calls)
		if err != nil {
			return fmt.Errorf("generation: %w", err)
		}
		var judged []*probeTool
		var items []ts.ProbeItem
		calls = nil
		for i, t := range open {
			if answers[i] == nil { // a plan stops at a call it would make
				t.done, t.dropped = true, "not planned"
				continue
			}
			t.attempts++
			it, err := ts.ParseProbeItem(answers[i].Text, g.mcq())
			if err != nil {
				g.reject(t, "generation unusable", []string{"your answer was not usable: " + err.Error()})
				continue
			}
			if it.Skip != nil && *it.Skip {
				t.done, t.dropped = true, "the generator skipped the tool (skip = true)"
				continue
			}
			if why := ts.ValidateProbeItem(it, t.tool, g.mcq(), lo, hi); len(why) > 0 {
				g.reject(t, "validator", why)
				continue
			}
			c, err := g.judgeCall(t, it)
			if err != nil {
				return err
			}
			judged, items, calls = append(judged, t), append(items, it), append(calls, c)
		}
		if len(calls) == 0 {
			continue
		}
		verdicts, err := ask(true, calls)
		if err != nil {
			return fmt.Errorf("judge: %w", err)
		}
		for i, t := range judged {
			if verdicts[i] == nil {
				t.done, t.dropped = true, "not planned"
				continue
			}
			accept, reason, err := ts.ParseProbeVerdict(verdicts[i].Text)
			switch {
			case err != nil:
				g.reject(t, "judge reply unusable", []string{"the judge's verdict could not be read (" + err.Error() + "), so the item was rejected"})
			case !accept:
				if reason == "" {
					reason = "no reason given"
				}
				g.reject(t, "judge rejected", []string{"the judge rejected it: " + reason})
			default:
				t.done, t.item, t.feedback = true, items[i], nil
			}
		}
	}
	for _, t := range g.tools {
		if !t.done {
			t.done = true
			t.dropped = fmt.Sprintf("rejected after %d attempts: %s", t.attempts, strings.Join(t.feedback, "; "))
		}
	}
	return nil
}

// reject records a rejected attempt: its reasons are the next attempt's
// feedback.
func (g *probeGen) reject(t *probeTool, class string, why []string) {
	g.problems[class]++
	t.feedback = why
}

// client is the client and concurrency of the generator or the judge.
func (g *probeGen) client(judge bool) (*llm.Client, int) {
	if judge {
		return g.judgeCl, g.p.judge.Endpoint.Concurrency
	}
	return g.genCl, g.p.gen.Endpoint.Concurrency
}

// run makes the calls (llmenv.DoAll), stopping at the first failed call:
// the answered calls are cached, so a re-run makes only the rest.
func (g *probeGen) run(ctx context.Context, r nodes.Run) error {
	return g.loop(func(judge bool, calls []llm.Call) ([]*llm.Response, error) {
		cl, conc := g.client(judge)
		out := make([]*llm.Response, len(calls))
		var first error
		done := llmenv.DoAll(ctx, r, cl, calls, conc, true, func(i int, resp *llm.Response, err error) {
			if err != nil && first == nil {
				first = err
			}
			out[i] = resp
		})
		if first == nil {
			first = ctx.Err()
		}
		if first != nil {
			return nil, fmt.Errorf("%w; %d of %d calls of this round answered and cached: a re-run makes only the missing", first, done, len(calls))
		}
		return out, nil
	})
}

// plan counts the calls without making any: it replays what the cache
// holds and follows each tool as far as the cache answers, counting every
// call a run would ask up to the first uncached one of each tool and, for
// a tool whose generation call is uncached, the judge call that follows
// it (its prompt estimated without the item). Retries after an uncached
// call are not counted: the plan is a lower bound on a fresh store and
// exact once the cache holds a whole run.
func (g *probeGen) plan(ctx context.Context) ([]nodes.CallPlan, error) {
	var asked [2][]llm.Call // generation, judge
	placeholder, err := g.judgeCall(&probeTool{}, ts.ProbeItem{Question: new(string), CorrectAnswer: new(string)})
	if err != nil {
		return nil, err
	}
	err = g.loop(func(judge bool, calls []llm.Call) ([]*llm.Response, error) {
		cl, _ := g.client(judge)
		role := 0
		if judge {
			role = 1
		}
		out := make([]*llm.Response, len(calls))
		for i, c := range calls {
			asked[role] = append(asked[role], c)
			if !cl.Cached(c) {
				if !judge {
					asked[1] = append(asked[1], placeholder)
				}
				continue
			}
			resp, err := cl.Do(ctx, c)
			if err != nil {
				return nil, err
			}
			out[i] = resp
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	gen := llmenv.Estimate(g.genCl, g.p.gen.Config.ID, asked[0], 0)
	judge := llmenv.Estimate(g.judgeCl, g.p.judge.Config.ID, asked[1], 100)
	if g.p.judge == g.p.gen {
		gen.Calls += judge.Calls
		gen.Cached += judge.Cached
		gen.PromptTokens += judge.PromptTokens
		gen.OutputTokens += judge.OutputTokens
		return []nodes.CallPlan{gen}, nil
	}
	return []nodes.CallPlan{gen, judge}, nil
}

// report notes what the loop kept and dropped, with the drop reasons, and
// logs each dropped tool.
func (g *probeGen) report(r nodes.Run, kept int, extra string) {
	dropped := map[string]int{}
	for _, t := range g.tools {
		if t.dropped != "" {
			r.Logf("dropped %s: %s", t.tool.ToolName, t.dropped)
			class := t.dropped
			if strings.HasPrefix(class, "rejected after") {
				class = "rejected after the last retry"
			}
			dropped[class]++
		}
	}
	type count struct {
		Reason string `json:"reason"`
		N      int    `json:"n"`
	}
	var drops, rejects []count
	for _, k := range probeSortedKeys(dropped) {
		drops = append(drops, count{k, dropped[k]})
	}
	for _, k := range probeSortedKeys(g.problems) {
		rejects = append(rejects, count{k, g.problems[k]})
	}
	r.Report("generation", map[string]any{"tools": len(g.tools), "kept": kept, "dropped": drops, "rejected_attempts": rejects})
	var parts []string
	for _, d := range drops {
		parts = append(parts, fmt.Sprintf("%d %s", d.N, d.Reason))
	}
	note := fmt.Sprintf("%d of %d tools kept%s; %d dropped", kept, len(g.tools), extra, len(g.tools)-kept)
	if len(parts) > 0 {
		note += " (" + strings.Join(parts, ", ") + ")"
	}
	var rp []string
	for _, p := range rejects {
		rp = append(rp, fmt.Sprintf("%d %s", p.N, p.Reason))
	}
	if len(rp) > 0 {
		note += "; rejected attempts: " + strings.Join(rp, ", ")
	}
	st := g.genCl.Stats()
	note += fmt.Sprintf("; %d calls made, %d cached", st.Calls, st.Cached)
	if g.judgeCl != g.genCl {
		js := g.judgeCl.Stats()
		note += fmt.Sprintf(" (judge: %d made, %d cached)", js.Calls, js.Cached)
		r.Report("judge_usage", js)
	}
	r.Report("usage", st)
	r.Note("%s", note)
}

func probeSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
