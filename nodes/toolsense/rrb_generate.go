package toolsense

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
	"github.com/lacuna-dev/lacuna/runners/llm"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

func init() { nodes.Register(rrbGenerateType{}) }

// rrbGenerateConfig:
//
//	node "rrb_generate" "rrb" {
//	  catalog = node.catalog.rrb
//	  pools   = node.neighbors.pools
//	  model   = model.gen
//	  judge   = model.judge                       # default: model
//	  samples = { easy = 3, medium = 3, hard = 2 } # per seed and tier
//	  retries = 3
//	}
type rrbGenerateConfig struct {
	Catalog nodes.Ref    `hcl:"catalog"`
	Pools   nodes.Ref    `hcl:"pools"`
	Model   nodes.Model  `hcl:"model"`
	Judge   *nodes.Model `hcl:"judge,optional"`
	// Samples is the number of samples asked per seed and tier; its keys
	// are the tiers generated (easy, medium, hard).
	Samples map[string]int `hcl:"samples,optional"`
	Retries *int           `hcl:"retries,optional"`
}

// The paper's samples per seed and tier (Appendix J.1).
var defaultRRBSamples = map[string]int{"easy": 3, "medium": 3, "hard": 2}

const defaultRRBRetries = 3

func (c *rrbGenerateConfig) samples() map[string]int {
	if c.Samples == nil {
		return defaultRRBSamples
	}
	return c.Samples
}

func (c *rrbGenerateConfig) retries() int {
	if c.Retries == nil {
		return defaultRRBRetries
	}
	return *c.Retries
}

// RRBRow is one generated Realistic Retrieval Benchmark item, in the
// released file's shape (sample_id, query, tool, analyzed_tools,
// complexity: what catalog's from_rrb, retrieve and retrieval_eval read)
// plus how it was made.
type RRBRow struct {
	// SampleID is "<seed tool_name>/<tier>/<index>".
	SampleID string `parquet:"sample_id"`
	Query    string `parquet:"query"`
	// Tool is the answer tools as JSON: one tool object for an easy row,
	// a list of them otherwise; missing fields are "None", as released.
	Tool string `parquet:"tool"`
	// AnalyzedTools is the candidate pool as a JSON list of tool objects,
	// the seed first.
	AnalyzedTools string `parquet:"analyzed_tools"`
	Complexity    string `parquet:"complexity"`
	Seed          string `parquet:"seed"`
	// Attempt is the generation attempt (1 to 1 + retries) that produced
	// the accepted sample.
	Attempt     int64  `parquet:"attempt"`
	JudgeReason string `parquet:"judge_reason"`
}

// RRBDropped is one seed and tier whose samples did not all pass, in the
// node's "dropped" report.
type RRBDropped struct {
	Seed    string   `json:"seed"`
	Tier    string   `json:"tier"`
	Missing int      `json:"missing"` // samples asked and not accepted
	Reasons []string `json:"reasons"` // the last attempt's rejections
}

type rrbGenerateType struct {
	nodes.Static[rrbGenerateConfig, RRBRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed       = rrbGenerateType{}
	_ nodes.Documented  = rrbGenerateType{}
	_ nodes.Validator   = rrbGenerateType{}
	_ nodes.Resolver    = rrbGenerateType{}
	_ nodes.CallPlanner = rrbGenerateType{}
)

func (rrbGenerateType) Name() string    { return "rrb_generate" }
func (rrbGenerateType) Version() string { return "1" }
func (rrbGenerateType) Doc() string {
	return "Generates the Realistic Retrieval Benchmark (seed 002 §3.1, Appendices J.1 and K.3) from candidate pools " +
		"(`pools`, a neighbors node: seed first) over a `catalog`: for each seed and tier of `samples` (default easy 3, " +
		"medium 3, hard 2 per seed; a pool smaller than a tier's answers, medium 2 and hard 4 tools, is an error, as is " +
		"a tool_name twice in the catalog or a pool, or a seed twice) one " +
		"call to `model` asks for that many (query, answer tools) samples with the paper's prompt " +
		"(toolsense/prompts/rrb_generate.txt; the model block's sampling defaults). Each sample passes a " +
		"programmatic validator (every answer in the pool, no answer twice, the seed among the answers, the tier's " +
		"cardinality: easy 1, medium 2–3, hard ≥ 4; its length: easy under 20 words, medium under 25, hard 1–3 sentences, " +
		"a period after an abbreviation (e.g., U.S., etc., an initial) ending none; no answer's tool_name verbatim in the " +
		"query; no query repeated within the seed and tier), then the LLM judge (`judge`, default `model`, at temperature " +
		"0, prompts/rrb_judge.txt, one call per batch) which fails closed: a reply that is not the JSON asked for, or " +
		"lacks a verdict, rejects the sample; fewer samples than asked count as missing (\"too few samples\"). A call the " +
		"server refuses (a 4xx other than 408 and 429, or a 5xx whose message is about the request) is a rejection: of the attempt (\"generation refused\") or of the samples " +
		"judged (\"judge refused\"); a server unreachable after the client's retries (5xx, 429, no answer) fails the " +
		"node. Samples still missing are asked again, at most `retries` times (default 3), the rejection reasons and the " +
		"queries already accepted fed back. Rows are the released RRB's columns (tool: an object for easy, a list " +
		"otherwise; analyzed_tools: the pool) plus seed, attempt and judge_reason; a query repeating an earlier row's is " +
		"dropped. Every sample not produced is counted in the note by reason and listed in the report \"dropped\". The " +
		"prompts' bytes are in the key. Calls go through the store's call cache: a re-run makes none; plans count the " +
		"calls of every attempt the cache already decides and one generation and one judge call for each still to make."
}

func (rrbGenerateType) Validate(cfg any) error {
	c := cfg.(*rrbGenerateConfig)
	if len(c.samples()) == 0 {
		return nodes.Errorf("samples", "No tiers", "samples maps tiers (easy, medium, hard) to samples per seed; it is empty.")
	}
	tiers := make([]string, 0, len(c.samples()))
	for tier := range c.samples() {
		tiers = append(tiers, tier)
	}
	sort.Strings(tiers)
	for _, tier := range tiers {
		n := c.samples()[tier]
		if _, ok := defaultRRBSamples[tier]; !ok {
			return nodes.Errorf("samples", "Unknown tier", "%q is not a tier: use easy, medium or hard.", tier)
		}
		if n < 1 {
			return nodes.Errorf("samples", "Invalid samples", "samples[%q] must be at least 1; got %d.", tier, n)
		}
	}
	if c.retries() < 0 {
		return nodes.Errorf("retries", "Invalid retries", "retries is 0 or more; got %d.", c.retries())
	}
	return nil
}

// rrbPinned is what Resolve fixed: the generator and the judge as their
// servers reported them.
type rrbPinned struct {
	gen, judge *llmenv.Model
}

// Resolve checks both models against their servers; the identity holds
// theirs and the prompts' digest ("prompts").
func (rrbGenerateType) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	c := r.Config().(*rrbGenerateConfig)
	gen, id, err := llmenv.Resolve(ctx, r, "model", "model", c.Model)
	if err != nil {
		return nil, err
	}
	p := &rrbPinned{gen: gen, judge: gen}
	if c.Judge != nil {
		j, jid, err := llmenv.Resolve(ctx, r, "judge", "judge", *c.Judge)
		if err != nil {
			return nil, err
		}
		p.judge = j
		for k, v := range jid {
			id[k] = v
		}
	}
	id["prompts"] = ts.RRBPromptDigest()
	return &nodes.Pinned{Identity: id, Value: p}, nil
}

// rrbAccepted is a sample that passed both checks.
type rrbAccepted struct {
	ts.RRBSample
	attempt int
	reason  string
}

// rrbUnit is the work of one seed and tier.
type rrbUnit struct {
	seed     int // index into the pools
	tier     string
	want     int
	accepted []rrbAccepted
	reasons  []string // the last attempt's rejections
	// A plan's replay met a generation (pendingGen) or judge
	// (pendingJudge) call the cache does not hold: the unit stops there.
	pendingGen, pendingJudge bool
}

func (u *rrbUnit) missing() int { return u.want - len(u.accepted) }

func (u *rrbUnit) pending() bool { return u.pendingGen || u.pendingJudge }

// queries are the accepted samples' queries, in order.
func (u *rrbUnit) queries() []string {
	var out []string
	for _, a := range u.accepted {
		out = append(out, a.Query)
	}
	return out
}

// rrbWork is one run's state: the pools with their tools, the units.
type rrbWork struct {
	pools [][]CatalogRow
	units []*rrbUnit
}

func (t rrbGenerateType) prepare(r nodes.Run) (*rrbWork, error) {
	c := t.Config(r)
	cin, err := r.Input(c.Catalog)
	if err != nil {
		return nil, err
	}
	tools, err := artifacts.ReadAll[CatalogRow](cin)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", c.Catalog, err)
	}
	ix, err := toolIndex(tools)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]CatalogRow, len(tools))
	for name, i := range ix {
		byName[name] = tools[i]
	}
	pin, err := r.Input(c.Pools)
	if err != nil {
		return nil, err
	}
	pools, err := artifacts.ReadAll[NeighborsRow](pin)
	if err != nil {
		return nil, fmt.Errorf("pools %s: %w (pools come from a neighbors node)", c.Pools, err)
	}
	w := &rrbWork{}
	if w.pools, err = poolTools(pools, byName, c.samples()); err != nil {
		return nil, err
	}
	for i := range w.pools {
		for _, tier := range ts.Tiers() {
			if n, ok := c.samples()[tier]; ok {
				w.units = append(w.units, &rrbUnit{seed: i, tier: tier, want: n})
			}
		}
	}
	return w, nil
}

// poolTools resolves each pool's tool names in the catalog (byName). Its
// errors are at the node's pools attribute: a pool that does not start
// with its seed, a seed twice, a tool twice in a pool or not in the
// catalog, a pool too small for a tier of samples.
func poolTools(pools []NeighborsRow, byName map[string]CatalogRow, samples map[string]int) ([][]CatalogRow, error) {
	var out [][]CatalogRow
	seedRow := map[string]int{}
	for i, p := range pools {
		if len(p.Pool) == 0 || p.Pool[0] != p.Seed {
			return nil, nodes.Errorf("pools", "Pool without its seed", "row %d: the pool does not start with its seed %q.", i+1, p.Seed)
		}
		if j, ok := seedRow[p.Seed]; ok {
			return nil, nodes.Errorf("pools", "Duplicate seed", "seed %q is at rows %d and %d: seeds must be unique.", p.Seed, j+1, i+1)
		}
		seedRow[p.Seed] = i
		var pool []CatalogRow
		in := map[string]bool{}
		for _, name := range p.Pool {
			tool, ok := byName[name]
			switch {
			case !ok:
				return nil, nodes.Errorf("pools", "Tool not in the catalog", "tool %q of row %d (seed %q) is not in the catalog.", name, i+1, p.Seed)
			case in[name]:
				return nil, nodes.Errorf("pools", "Duplicate tool in a pool", "tool %q is twice in the pool of row %d (seed %q).", name, i+1, p.Seed)
			}
			in[name] = true
			pool = append(pool, tool)
		}
		for _, tier := range ts.Tiers() {
			if _, ok := samples[tier]; ok && len(pool) < ts.MinAnswers(tier) {
				return nil, nodes.Errorf("pools", "Pools too small", "the %s tier's answers have %d or more tools, but the pool of seed %q (row %d) has %d: "+
					"raise the neighbors node's k or leave the tier out of samples.", tier, ts.MinAnswers(tier), p.Seed, i+1, len(pool))
			}
		}
		out = append(out, pool)
	}
	return out, nil
}

// genCall is the generation call of a unit's attempt (1-based): the
// sample index is attempt − 1, so that two attempts with the same prompt
// are different calls.
func (w *rrbWork) genCall(m *llmenv.Model, u *rrbUnit, attempt int) (llm.Call, error) {
	var rejected, accepted []string
	if attempt > 1 {
		rejected, accepted = u.reasons, u.queries()
	}
	prompt, err := ts.RRBGeneratePrompt(u.tier, u.missing(), w.pools[u.seed], rejected, accepted)
	if err != nil {
		return llm.Call{}, err
	}
	return llm.Call{Request: chat(m, m.Request(), prompt), Sample: attempt - 1}, nil
}

// judgeCall is the judge's call for a unit's valid samples, at
// temperature 0.
func (w *rrbWork) judgeCall(m *llmenv.Model, u *rrbUnit, samples []ts.RRBSample) (llm.Call, error) {
	prompt, err := ts.RRBJudgePrompt(u.tier, w.pools[u.seed], samples)
	if err != nil {
		return llm.Call{}, err
	}
	zero := 0.0
	req := m.Request()
	req.Temperature = &zero
	return llm.Call{Request: chat(m, req, prompt)}, nil
}

// chat puts the prompt into req as the user turn (after the model
// block's system prompt, when it has one), or as the completions prompt.
func chat(m *llmenv.Model, req llm.Request, prompt string) llm.Request {
	sys := ""
	if m.Config.System != nil {
		sys = *m.Config.System
	}
	if req.API == "completions" {
		req.Prompt = strings.TrimSpace(sys + "\n\n" + prompt)
		return req
	}
	req.Messages = []llm.Message{{Role: "user", Content: prompt}}
	if sys != "" {
		req.Messages = append([]llm.Message{{Role: "system", Content: sys}}, req.Messages...)
	}
	return req
}

// rrbAnswer is one call's outcome: its response, or why the server
// refused it (refusal), or neither: an answer not known (a plan's replay
// of a call the cache lacks).
type rrbAnswer struct {
	resp    *llm.Response
	refused string
}

// asker answers a round's calls to the generator (judge false) or the
// judge, one rrbAnswer per call.
type asker func(judge bool, calls []llm.Call) ([]rrbAnswer, error)

// refusal is why a failed call was refused, "WHO refused: HTTP 400 Bad
// Request: the body's first line", for a refusal of the request
// (llm.StatusError.Refused: a 4xx other than 408 and 429, or a 5xx whose
// message is about the request, as llama-cpp-python answers a
// response_format it does not take: the server will not answer this
// request); "" for any other error (5xx, 429, timeouts, dropped
// connections: the server is unreachable).
func refusal(who string, err error) string {
	var se *llm.StatusError
	if !errors.As(err, &se) || !se.Refused {
		return ""
	}
	why := fmt.Sprintf("%s refused: HTTP %d %s", who, se.Status, http.StatusText(se.Status))
	if body, _, _ := strings.Cut(strings.TrimSpace(se.Body), "\n"); body != "" {
		if len(body) > 120 {
			body = strings.ToValidUTF8(body[:120], "") + "..."
		}
		why += ": " + body
	}
	return why
}

// rrbCalls is every call a run made or would make, by model.
type rrbCalls struct {
	gen, judge []llm.Call
}

// run is the generation loop, shared by Run and PlanCalls: attempt 1 asks
// every unit; each later attempt asks the units still missing samples,
// with the reasons of the previous one. Each attempt is one round of
// generation calls, then one of judge calls. A refused generation call is
// a rejected attempt; a refused judge call rejects its samples.
func (w *rrbWork) run(p *rrbPinned, retries int, ask asker) (rrbCalls, error) {
	var made rrbCalls
	for attempt := 1; attempt <= 1+retries; attempt++ {
		var units []*rrbUnit
		var calls []llm.Call
		for _, u := range w.units {
			if u.missing() > 0 && !u.pending() {
				c, err := w.genCall(p.gen, u, attempt)
				if err != nil {
					return made, err
				}
				units, calls = append(units, u), append(calls, c)
			}
		}
		if len(units) == 0 {
			break
		}
		made.gen = append(made.gen, calls...)
		answers, err := ask(false, calls)
		if err != nil {
			return made, err
		}
		type judged struct {
			u     *rrbUnit
			valid []ts.RRBSample
		}
		var toJudge []judged
		var jcalls []llm.Call
		for i, u := range units {
			if why := answers[i].refused; why != "" {
				u.reasons = []string{why}
				continue
			}
			if answers[i].resp == nil {
				u.pendingGen = true
				continue
			}
			valid, reasons := ts.CheckRRBAnswer(answers[i].resp.Text, u.tier, w.pools[u.seed], u.missing(), u.queries())
			u.reasons = reasons
			if len(valid) == 0 {
				continue
			}
			c, err := w.judgeCall(p.judge, u, valid)
			if err != nil {
				return made, err
			}
			toJudge, jcalls = append(toJudge, judged{u, valid}), append(jcalls, c)
		}
		if len(jcalls) == 0 {
			continue
		}
		made.judge = append(made.judge, jcalls...)
		verdicts, err := ask(true, jcalls)
		if err != nil {
			return made, err
		}
		for i, j := range toJudge {
			if why := verdicts[i].refused; why != "" {
				for _, s := range j.valid {
					j.u.reasons = append(j.u.reasons, fmt.Sprintf("%s (query %q)", why, s.Query))
				}
				continue
			}
			if verdicts[i].resp == nil {
				j.u.pendingJudge = true
				continue
			}
			ok, why := ts.ParseRRBVerdicts(verdicts[i].resp.Text, len(j.valid))
			for k, s := range j.valid {
				if ok[k] {
					j.u.accepted = append(j.u.accepted, rrbAccepted{RRBSample: s, attempt: attempt, reason: why[k]})
					continue
				}
				j.u.reasons = append(j.u.reasons, fmt.Sprintf("judge rejected: %q: %s", s.Query, why[k]))
			}
		}
	}
	return made, nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps and slices of strings always encode
	}
	return string(b)
}

// rows are the accepted samples in unit order (seeds in pool order, tiers
// easy, medium, hard), a query repeating an earlier row's dropped.
func (w *rrbWork) rows() (rows []RRBRow, dropped []RRBDropped) {
	first := map[string]string{}
	for _, u := range w.units {
		pool := w.pools[u.seed]
		byName := map[string]CatalogRow{}
		var analyzed []map[string]string
		for _, t := range pool {
			byName[t.ToolName] = t
			analyzed = append(analyzed, ts.ToolObject(t))
		}
		d := RRBDropped{Seed: pool[0].ToolName, Tier: u.tier, Missing: u.missing(), Reasons: u.reasons}
		for i, a := range u.accepted {
			id := fmt.Sprintf("%s/%s/%d", pool[0].ToolName, u.tier, i)
			if prev, ok := first[ts.NormQuery(a.Query)]; ok {
				d.Missing++
				d.Reasons = append(d.Reasons, fmt.Sprintf("duplicate query: %q repeats row %s", a.Query, prev))
				continue
			}
			first[ts.NormQuery(a.Query)] = id
			var tools []map[string]string
			for _, name := range a.Answer {
				tools = append(tools, ts.ToolObject(byName[name]))
			}
			var tool any = tools
			if u.tier == "easy" {
				tool = tools[0]
			}
			rows = append(rows, RRBRow{SampleID: id, Query: strings.TrimSpace(a.Query), Tool: mustJSON(tool), AnalyzedTools: mustJSON(analyzed),
				Complexity: u.tier, Seed: pool[0].ToolName, Attempt: int64(a.attempt), JudgeReason: a.reason})
		}
		if d.Missing > 0 {
			dropped = append(dropped, d)
		}
	}
	return rows, dropped
}

// Run generates, at most the generator's (the judge's) concurrency calls
// at once per round. A call refused (a refusal of the request, llm.Refused) is a rejection
// with its reason (refusal); any other call that fails after the client's
// retries (5xx, 429, an unreachable server) fails the node once its round
// is done. Every answered call is cached, so a re-run repeats none of
// them; refusals are not cached, so a re-run asks them again.
func (t rrbGenerateType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	p := r.Pinned().(*rrbPinned)
	w, err := t.prepare(r)
	if err != nil {
		return err
	}
	gen, judge := p.gen.Client(r), p.judge.Client(r)
	ask := func(isJudge bool, calls []llm.Call) ([]rrbAnswer, error) {
		cl, m, what := gen, p.gen, "generation"
		if isJudge {
			cl, m, what = judge, p.judge, "judge"
		}
		out := make([]rrbAnswer, len(calls))
		var firstErr error
		failed := 0
		llmenv.DoAll(ctx, r, cl, calls, m.Endpoint.Concurrency, false, func(i int, resp *llm.Response, err error) {
			if err == nil {
				out[i].resp = resp
				return
			}
			if why := refusal(what, err); why != "" {
				out[i].refused = why
				return
			}
			failed++
			if firstErr == nil {
				firstErr = err
			}
		})
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if firstErr != nil {
			return nil, fmt.Errorf("rrb_generate: %d of a round's %d %s calls failed after their retries (the first: %w); the answered calls are cached, so a re-run makes only the missing ones", failed, len(calls), what, firstErr)
		}
		return out, nil
	}
	if _, err := w.run(p, c.retries(), ask); err != nil {
		return err
	}
	r.Report("usage", map[string]any{"generator": gen.Stats(), "judge": judge.Stats()})
	rows, dropped := w.rows()
	r.Report("dropped", dropped)
	r.Note("%s", rrbNote(rows, dropped, len(w.pools)))
	for _, d := range dropped {
		r.Logf("dropped %d %s sample(s) of seed %q: %s", d.Missing, d.Tier, d.Seed, strings.Join(d.Reasons, "; "))
	}
	return t.Write(r, rows)
}

// rrbNote summarises a run: rows per tier, attempts, and the samples
// dropped by rule.
func rrbNote(rows []RRBRow, dropped []RRBDropped, seeds int) string {
	tiers := map[string]int{}
	retried := 0
	for _, r := range rows {
		tiers[r.Complexity]++
		if r.Attempt > 1 {
			retried++
		}
	}
	missing := 0
	rules := map[string]int{}
	for _, d := range dropped {
		missing += d.Missing
		for _, why := range d.Reasons {
			rule, _, _ := strings.Cut(why, ":")
			rules[rule]++
		}
	}
	var by []string
	for rule, n := range rules {
		by = append(by, fmt.Sprintf("%s %d", rule, n))
	}
	sort.Strings(by)
	note := fmt.Sprintf("%d RRB rows from %d seeds (easy %d, medium %d, hard %d; %d accepted after a retry); %d samples dropped",
		len(rows), seeds, tiers["easy"], tiers["medium"], tiers["hard"], retried, missing)
	if len(by) > 0 {
		note += " (last rejections: " + strings.Join(by, ", ") + ")"
	}
	return note
}

// CallsModels: rrb_generate always calls its models.
func (rrbGenerateType) CallsModels(any) bool { return true }

// PlanCalls replays the generation loop from the call cache: every call
// whose answer the cache holds is counted (cached), and each seed and
// tier whose next call is not cached counts that call, and one judge call
// after a generation call (a retry after it cannot be foreseen). A
// refused call, never cached, counts as a call to make.
func (t rrbGenerateType) PlanCalls(ctx context.Context, r nodes.Run) ([]nodes.CallPlan, error) {
	c := t.Config(r)
	p := r.Pinned().(*rrbPinned)
	w, err := t.prepare(r)
	if err != nil {
		return nil, err
	}
	gen, judge := p.gen.Client(r), p.judge.Client(r)
	made, err := w.run(p, c.retries(), func(isJudge bool, calls []llm.Call) ([]rrbAnswer, error) {
		m := p.gen
		if isJudge {
			m = p.judge
		}
		out := make([]rrbAnswer, len(calls))
		for i, call := range calls {
			b, ok, err := r.Calls().Get(llm.Key(m.Identity, call))
			if err != nil || !ok {
				continue
			}
			var resp llm.Response
			if json.Unmarshal(b, &resp) == nil {
				out[i].resp = &resp
			}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	gp := llmenv.Estimate(gen, p.gen.Config.ID, made.gen, 0)
	jp := llmenv.Estimate(judge, p.judge.Config.ID, made.judge, 0)
	for _, u := range w.units {
		if u.pendingGen {
			jp.Calls++
			jp.OutputTokens += llmenv.DefaultCompletionEstimate
		}
	}
	return []nodes.CallPlan{gp, jp}, nil
}
