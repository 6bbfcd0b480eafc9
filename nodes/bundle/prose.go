package bundle

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/template"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
	"github.com/lacuna-dev/lacuna/runners/llm"
)

func init() { nodes.Register(proseType{}) }

// The tiers of M_prose (seed §3 "Knowledge bundles": paper-grounded for
// citation-bearing APIs, source-grounded for complex implementations,
// docstring gloss for simple utilities).
const (
	TierPaper  = "paper"
	TierSource = "source"
	TierDoc    = "doc"
)

// proseConfig:
//
//	node "prose" "lo" {
//	  bundles  = node.bundle.lo
//	  model    = model.gen
//	  doc_tier = "llm"     # or "verbatim": the doc tier keeps the docstring
//	  backfill = true      # describe undocumented parameters (S backfill)
//	  retries  = 2         # new attempts after an unusable answer
//	  source_branches = 3  # the tier rule's thresholds on M_code
//	  source_lines    = 25
//	}
type proseConfig struct {
	// Bundles is a bundle node's output (not a prose node's: its M_prose
	// is no longer the docstring the tier rule reads).
	Bundles nodes.Ref `hcl:"bundles"`
	// Model writes M_prose and the parameter descriptions, with its
	// block's sampling settings.
	Model nodes.Model `hcl:"model"`
	// DocTier is what the doc tier's M_prose is: "llm" (default, the
	// paper's docstring gloss written by Model) or "verbatim" (the
	// docstring as the bundle has it).
	DocTier string `hcl:"doc_tier,optional"`
	// Backfill asks Model for a description of every parameter the
	// docstring says nothing of (default true).
	Backfill *bool `hcl:"backfill,optional"`
	// Retries is the most new attempts after an unusable answer
	// (default 2; 0 for one attempt).
	Retries *int `hcl:"retries,optional"`
	// SourceBranches and SourceLines are the tier rule's thresholds: an
	// M_code with at least this many branch points, or this many code
	// lines, is complex (defaults 3 and 25).
	SourceBranches *int `hcl:"source_branches,optional"`
	SourceLines    *int `hcl:"source_lines,optional"`
}

const (
	proseDefaultRetries  = 2
	proseDefaultBranches = 3
	proseDefaultLines    = 25
	// proseMaxWords bounds an answer's M_prose; paramMaxWords a
	// parameter's description.
	proseMaxWords = 250
	paramMaxWords = 40
)

func (c *proseConfig) retries() int   { return proseInt(c.Retries, proseDefaultRetries) }
func (c *proseConfig) verbatim() bool { return c.DocTier == "verbatim" }
func (c *proseConfig) thresholds() (b, l int) {
	return proseInt(c.SourceBranches, proseDefaultBranches), proseInt(c.SourceLines, proseDefaultLines)
}

func proseInt(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// ProseRow is a bundle row whose M_prose is the tier's and whose S has
// the backfilled parameter descriptions: every Row column is the input
// row's except m_prose, m_prose_tier and the doc of the parameters named
// in s_backfilled. ReadRows reads it as a Row (generate's bundles and
// pool), ReadOriginalRows as the bundle node's Row it was made from.
type ProseRow struct {
	Row
	// Docstring is the input row's m_prose: the API's doc comment or
	// docstring (tier doc, verbatim).
	Docstring string `parquet:"docstring"`
	// MProseRule is the tier the rule chose (paper, source or doc) and
	// MProseEvidence why: the citation found ("DOI 10.1145/362686.362692",
	// "Jaccard (1901)"), or what was measured of M_code ("4 branches, 12
	// code lines"; "wrapper: one statement"). Row.MProseTier is the tier
	// of the text in m_prose: the rule's, or doc when the model gave no
	// usable answer and the docstring was kept.
	MProseRule     string `parquet:"m_prose_rule"`
	MProseEvidence string `parquet:"m_prose_evidence"`
	// MProseBy is who wrote m_prose: "llm" or "docstring" (doc_tier =
	// "verbatim", or kept after unusable answers).
	MProseBy string `parquet:"m_prose_by"`
	// SBackfilled names the parameters whose doc the model wrote.
	SBackfilled []string `parquet:"s_backfilled,list"`
	// Attempts is the calls made for the row (0 when none was needed);
	// ProseError, when not empty, says why the model's answer is not in
	// the row (every attempt unusable): the row then keeps the input's
	// M_prose and S.
	Attempts   int32  `parquet:"prose_attempts"`
	ProseError string `parquet:"prose_error"`
}

// ReadRows reads a bundle node's or a prose node's output as bundle rows
// (a prose node's extra columns left out): what generate reads for its
// bundles and pool. Another schema is an error.
func ReadRows(in *artifacts.Reader) ([]Row, error) {
	return readRows(in, false)
}

// ReadOriginalRows is ReadRows with a prose node's rows undone: m_prose
// the docstring again (tier doc), the backfilled parameters' doc empty.
// It is what the tasks node should read to accept a prose node (task
// descriptions gloss the docstring, so a task set would be the same
// whether cut from a bundle node or from a prose node over it).
func ReadOriginalRows(in *artifacts.Reader) ([]Row, error) {
	return readRows(in, true)
}

func readRows(in *artifacts.Reader, original bool) ([]Row, error) {
	if artifacts.SchemaFingerprint(in.Schema()) != proseFingerprint() {
		return artifacts.ReadAll[Row](in)
	}
	rows, err := artifacts.ReadAll[ProseRow](in)
	if err != nil {
		return nil, err
	}
	out := make([]Row, len(rows))
	for i, r := range rows {
		out[i] = r.Row
		if original {
			out[i].MProse, out[i].MProseTier = r.Docstring, TierDoc
			for j, p := range out[i].Params {
				if slices.Contains(r.SBackfilled, p.Name) {
					out[i].Params[j].Doc = ""
				}
			}
		}
	}
	return out, nil
}

var proseFingerprint = sync.OnceValue(func() string {
	return artifacts.SchemaFingerprint(artifacts.SchemaOf[ProseRow]())
})

type proseType struct {
	nodes.Static[proseConfig, ProseRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed       = proseType{}
	_ nodes.Documented  = proseType{}
	_ nodes.Validator   = proseType{}
	_ nodes.Resolver    = proseType{}
	_ nodes.CallPlanner = proseType{}
)

func (proseType) Name() string    { return "prose" }
func (proseType) Version() string { return "1" }
func (proseType) Doc() string {
	return "Writes the M_prose tiers and the S backfill of seed §3 with `model` over a bundle node's rows (one row out per " +
		"row in, every bundle column kept except m_prose, m_prose_tier and the backfilled parameters' doc; generate's " +
		"bundles and pool read it as bundle rows, through ReadRows; tasks reads the rows as the bundle node wrote them, ReadOriginalRows, and its llm generator through ReadRows). The tier is decided from the bundle alone: \"paper\" when the docstring " +
		"cites a publication (a DOI, an arXiv id, \"et al.\", a year in parentheses after a capitalised name such as " +
		"\"Jaccard (1901)\" or \"(Flajolet, 2007)\", or a References/Bibliography section); else \"source\" when M_code " +
		"(helpers included) has at least `source_branches` (3) branch points (Go: if, for, case, &&, ||, an `if err != nil` " +
		"not counted; Python: if, elif, for, while, except, case, and, or) or at least `source_lines` (25) code lines, " +
		"unless the API's own body is at most one simple statement (a trivial wrapper; if, for, switch and the like are " +
		"not simple), or when the docstring is empty; else \"doc\". " +
		"paper: the model explains the cited method from the docstring's citation text and M_code (the publication is " +
		"not fetched: no network); source: from the signature and M_code; doc: a gloss of the docstring (doc_tier = " +
		"\"llm\", the default) or the docstring verbatim (doc_tier = \"verbatim\", no call). With backfill (default " +
		"true) every parameter whose doc is empty gets a one-sentence description written from the signature and M_code " +
		"in the same call (the paper's backfill is web-search grounded; here nothing is searched). Answers are JSON under " +
		"a schema and parsed strictly (M_prose at most 250 words, each description one line of at most 40 words, exactly " +
		"the parameters asked); an unusable answer is asked again with the reason (`retries`, default 2), and after the " +
		"last the row keeps the docstring and S with the reason in prose_error. Extra columns: docstring, m_prose_rule, " +
		"m_prose_evidence, m_prose_by, s_backfilled, prose_attempts, prose_error. The prompts (nodes/bundle/prompts) and " +
		"the model's identity are in the key; calls go through the call cache; `lacuna plan` counts them."
}

func (proseType) Validate(cfg any) error {
	c := cfg.(*proseConfig)
	switch {
	case c.DocTier != "" && c.DocTier != "llm" && c.DocTier != "verbatim":
		return nodes.Errorf("doc_tier", "Unknown doc tier", "doc_tier is \"llm\" (the docstring glossed by the model, the paper's) or \"verbatim\" (the docstring kept), not %q.", c.DocTier)
	case c.Retries != nil && (*c.Retries < 0 || *c.Retries > 10):
		return nodes.Errorf("retries", "Invalid retries", "retries is 0 to 10, not %d.", *c.Retries)
	case c.SourceBranches != nil && *c.SourceBranches < 1:
		return nodes.Errorf("source_branches", "Invalid threshold", "source_branches is a number of branch points, at least 1, not %d.", *c.SourceBranches)
	case c.SourceLines != nil && *c.SourceLines < 1:
		return nodes.Errorf("source_lines", "Invalid threshold", "source_lines is a number of code lines, at least 1, not %d.", *c.SourceLines)
	}
	return nil
}

// Resolve checks the model against its server; the identity holds it and
// the digest of the prompt files.
func (proseType) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	m, id, err := llmenv.Resolve(ctx, r, "model", "model", r.Config().(*proseConfig).Model)
	if err != nil {
		return nil, err
	}
	id["prompts"] = PromptDigest()
	return &nodes.Pinned{Identity: id, Value: m}, nil
}

func (proseType) CallsModels(any) bool { return true }

func (t proseType) PlanCalls(ctx context.Context, r nodes.Run) ([]nodes.CallPlan, error) {
	g, err := newProseRun(r, t.Config(r))
	if err != nil {
		return nil, err
	}
	return g.plan(ctx)
}

func (t proseType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	g, err := newProseRun(r, c)
	if err != nil {
		return err
	}
	if err := g.run(ctx, r); err != nil {
		return fmt.Errorf("prose: %w", err)
	}
	rows := make([]ProseRow, len(g.items))
	for i, it := range g.items {
		rows[i] = it.result()
	}
	g.report(r, rows)
	return t.Write(r, rows)
}

// The prompts, text/template files: prose_TIER.txt asks for M_prose (and
// the missing parameters' descriptions), backfill.txt for the
// descriptions alone; shared.txt defines their common parts. Their bytes
// are in every prose key (PromptDigest).
//
//go:embed prompts/*.txt
var promptFS embed.FS

var prompts = template.Must(template.New("").Option("missingkey=error").ParseFS(promptFS, "prompts/*.txt"))

// PromptDigest is the digest of the prompt files' names and bytes, for
// the prose node's identity: editing a prompt recomputes its nodes.
func PromptDigest() string {
	entries, err := promptFS.ReadDir("prompts")
	if err != nil {
		panic(err) // embedded: a build defect
	}
	h := xxhash.New()
	for _, e := range entries { // sorted by name
		b, err := promptFS.ReadFile("prompts/" + e.Name())
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", e.Name(), len(b))
		h.Write(b)
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// promptData is what a prompt may show.
type promptData struct {
	Language, Library, Version, ImportPath, Qualified, Kind, Signature string
	Docstring, Code, Evidence                                          string
	Missing                                                            []string
	Feedback                                                           string
	// Shape is the answer's JSON shape, written out.
	Shape string
}

// proseItem is one bundle row and the state of its calls.
type proseItem struct {
	row            Row
	tier, evidence string
	missing        []string // the parameters to describe
	prose          bool     // the answer must hold m_prose

	attempts int
	feedback string // why the last answer was unusable
	done     bool
	answer   proseAnswer
	answered bool
}

// proseAnswer is a usable answer.
type proseAnswer struct {
	prose  string
	params map[string]string
}

func (it *proseItem) needsCall() bool { return it.prose || len(it.missing) > 0 }

// result is the item's output row.
func (it *proseItem) result() ProseRow {
	row := it.row
	out := ProseRow{Docstring: it.row.MProse, MProseRule: it.tier, MProseEvidence: it.evidence, MProseBy: "docstring",
		SBackfilled: []string{}, Attempts: int32(it.attempts)}
	row.MProseTier = TierDoc
	switch {
	case it.answered:
		if it.prose {
			row.MProse, row.MProseTier, out.MProseBy = it.answer.prose, it.tier, "llm"
		}
		row.Params = slices.Clone(row.Params)
		for i, p := range row.Params {
			if d, ok := it.answer.params[p.Name]; ok {
				row.Params[i].Doc = d
				out.SBackfilled = append(out.SBackfilled, p.Name)
			}
		}
	case it.needsCall():
		out.ProseError = fmt.Sprintf("no usable answer in %d attempts: %s", it.attempts, it.feedback)
	}
	out.Row = row
	return out
}

// proseRun is one run (or plan) of a prose node. It is used by one
// goroutine: the calls of a round run concurrently inside llmenv.DoAll,
// whose callback is serialised, and the round's answers are read after it
// returns.
type proseRun struct {
	cfg      *proseConfig
	model    *llmenv.Model
	cl       *llm.Client
	items    []*proseItem
	problems map[string]int // unusable answers by reason class
}

func newProseRun(r nodes.Run, c *proseConfig) (*proseRun, error) {
	m, ok := r.Pinned().(*llmenv.Model)
	if !ok {
		return nil, fmt.Errorf("prose: the model was not resolved")
	}
	in, err := r.Input(c.Bundles)
	if err != nil {
		return nil, err
	}
	rows, err := artifacts.ReadAll[Row](in)
	if err != nil {
		return nil, fmt.Errorf("bundles (%s): %w (bundles must come from a bundle node)", c.Bundles, err)
	}
	g := &proseRun{cfg: c, model: m, cl: m.Client(r), problems: map[string]int{}}
	branches, lines := c.thresholds()
	for _, row := range rows {
		it := &proseItem{row: row}
		it.tier, it.evidence = ProseTier(row, branches, lines)
		it.prose = it.tier != TierDoc || !c.verbatim()
		if c.Backfill == nil || *c.Backfill {
			it.missing = undocumented(row)
		}
		g.items = append(g.items, it)
	}
	return g, nil
}

// undocumented names the parameters whose doc is empty (unnamed and "_"
// parameters have nothing to describe).
func undocumented(r Row) []string {
	var out []string
	for _, p := range r.Params {
		if p.Name != "" && p.Name != "_" && strings.TrimSpace(p.Doc) == "" {
			out = append(out, p.Name)
		}
	}
	return out
}

// call is item it's next call: its tier's prompt with the last unusable
// answer's reason, sample index = attempt (a retry is a new call even
// when its prompt repeats one).
func (g *proseRun) call(it *proseItem) (llm.Call, error) {
	name := "prose_" + it.tier + ".txt"
	if !it.prose {
		name = "backfill.txt"
	}
	lang := it.row.Ecosystem
	if lang == "" {
		lang = "go"
	}
	d := promptData{Language: map[string]string{"go": "Go", "python": "Python"}[lang], Library: it.row.Library, Version: it.row.Version,
		ImportPath: it.row.ImportPath, Qualified: it.row.Qualified, Kind: it.row.Kind, Signature: it.row.Signature,
		Docstring: it.row.MProse, Code: strings.TrimRight(it.row.MCode, "\n"), Evidence: it.evidence, Missing: it.missing,
		Feedback: it.feedback}
	if d.Language == "" {
		d.Language = lang
	}
	shape, schema := answerShape(it.prose, it.missing)
	d.Shape = shape
	var b bytes.Buffer
	if err := prompts.ExecuteTemplate(&b, name, d); err != nil {
		return llm.Call{}, fmt.Errorf("prompt %s: %w", name, err)
	}
	req := g.model.Request()
	req.Schema, req.SchemaName = schema, "m_prose"
	sys := ""
	if g.model.Config.System != nil {
		sys = *g.model.Config.System
	}
	if req.API == "completions" {
		req.Prompt = strings.TrimSpace(sys + "\n\n" + b.String())
	} else {
		req.Messages = []llm.Message{{Role: "user", Content: b.String()}}
		if sys != "" {
			req.Messages = append([]llm.Message{{Role: "system", Content: sys}}, req.Messages...)
		}
	}
	return llm.Call{Request: req, Sample: it.attempts}, nil
}

// answerShape is the answer's shape as the prompt writes it and as a JSON
// schema: {"m_prose": ..., "params": {NAME: ...}}, each part only when
// asked.
func answerShape(prose bool, missing []string) (string, json.RawMessage) {
	props := map[string]any{}
	var required, parts []string
	if prose {
		props["m_prose"] = map[string]any{"type": "string"}
		required = append(required, "m_prose")
		parts = append(parts, `"m_prose": "<the paragraph>"`)
	}
	if len(missing) > 0 {
		pp := map[string]any{}
		var ps []string
		for _, m := range missing {
			pp[m] = map[string]any{"type": "string"}
			b, _ := json.Marshal(m)
			ps = append(ps, string(b)+`: "<one sentence>"`)
		}
		props["params"] = map[string]any{"type": "object", "properties": pp, "required": missing, "additionalProperties": false}
		required = append(required, "params")
		parts = append(parts, `"params": {`+strings.Join(ps, ", ")+`}`)
	}
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false})
	return "{" + strings.Join(parts, ", ") + "}", schema
}

// parseAnswer reads an answer strictly: one JSON object (think blocks and
// a fence around it aside) with exactly the keys asked, M_prose
// non-empty and at most proseMaxWords words, each description one
// non-empty line of at most paramMaxWords words, exactly the parameters
// asked.
func parseAnswer(text string, prose bool, missing []string) (proseAnswer, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(llm.AnswerJSON(text)))
	if err := dec.Decode(&raw); err != nil || dec.More() {
		return proseAnswer{}, fmt.Errorf("the answer is not one JSON object")
	}
	var out proseAnswer
	for k := range raw {
		if (k != "m_prose" || !prose) && (k != "params" || len(missing) == 0) {
			return proseAnswer{}, fmt.Errorf("the answer has a key %q that was not asked for", k)
		}
	}
	if prose {
		if err := json.Unmarshal(raw["m_prose"], &out.prose); err != nil {
			return proseAnswer{}, fmt.Errorf("m_prose is missing or not a string")
		}
		out.prose = strings.TrimSpace(out.prose)
		switch n := len(strings.Fields(out.prose)); {
		case n == 0:
			return proseAnswer{}, fmt.Errorf("m_prose is empty")
		case n > proseMaxWords:
			return proseAnswer{}, fmt.Errorf("m_prose has %d words, more than %d", n, proseMaxWords)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	if err := json.Unmarshal(raw["params"], &out.params); err != nil || out.params == nil {
		return proseAnswer{}, fmt.Errorf("params is missing or not an object of strings")
	}
	for name := range out.params {
		if !slices.Contains(missing, name) {
			return proseAnswer{}, fmt.Errorf("params describes %q, which was not asked for", name)
		}
	}
	for _, name := range missing {
		d, ok := out.params[name]
		d = strings.TrimSpace(d)
		switch n := len(strings.Fields(d)); {
		case !ok || n == 0:
			return proseAnswer{}, fmt.Errorf("params has no description of %s", name)
		case strings.ContainsAny(d, "\r\n"):
			return proseAnswer{}, fmt.Errorf("the description of %s is more than one line", name)
		case n > paramMaxWords:
			return proseAnswer{}, fmt.Errorf("the description of %s has %d words, more than %d", name, n, paramMaxWords)
		}
		out.params[name] = d
	}
	return out, nil
}

// asker makes a round of calls and returns each answer; a nil answer is
// a call a plan would make (not cached).
type asker func(calls []llm.Call) ([]*llm.Response, error)

// loop runs the attempts: each round asks for every item still open and
// reads the answers; an unusable answer's reason goes into the item's
// next attempt, and an item still without a usable answer after its last
// retry keeps its input (result).
func (g *proseRun) loop(ask asker) error {
	for round := 0; round <= g.cfg.retries(); round++ {
		var open []*proseItem
		var calls []llm.Call
		for _, it := range g.items {
			if it.done || !it.needsCall() {
				continue
			}
			c, err := g.call(it)
			if err != nil {
				return err
			}
			open, calls = append(open, it), append(calls, c)
		}
		if len(open) == 0 {
			return nil
		}
		answers, err := ask(calls)
		if err != nil {
			return err
		}
		for i, it := range open {
			if answers[i] == nil { // a plan stops at a call it would make
				it.done = true
				continue
			}
			it.attempts++
			a, err := parseAnswer(answers[i].Text, it.prose, it.missing)
			if err != nil {
				it.feedback = err.Error()
				g.problems[problemClass(err.Error())]++
				continue
			}
			it.done, it.answered, it.answer, it.feedback = true, true, a, ""
		}
	}
	return nil
}

// problemClass is the reason class of an unusable answer, for the report.
func problemClass(why string) string {
	switch {
	case strings.Contains(why, "not one JSON object"):
		return "not JSON"
	case strings.Contains(why, "words, more than"):
		return "too long"
	case strings.Contains(why, "more than one line"):
		return "description not one line"
	}
	return "missing or unasked fields"
}

// run makes the calls (llmenv.DoAll), stopping at the first failed call:
// the answered calls are cached, so a re-run makes only the rest.
func (g *proseRun) run(ctx context.Context, r nodes.Run) error {
	return g.loop(func(calls []llm.Call) ([]*llm.Response, error) {
		out := make([]*llm.Response, len(calls))
		var first error
		done := llmenv.DoAll(ctx, r, g.cl, calls, g.model.Endpoint.Concurrency, true, func(i int, resp *llm.Response, err error) {
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
// holds and follows each row as far as the cache answers, counting every
// call a run would ask up to the first uncached one. Retries after an
// uncached call are not counted: the plan is a lower bound on a fresh
// store (one call per row that needs one) and exact once the cache holds
// a whole run.
func (g *proseRun) plan(ctx context.Context) ([]nodes.CallPlan, error) {
	var asked []llm.Call
	err := g.loop(func(calls []llm.Call) ([]*llm.Response, error) {
		out := make([]*llm.Response, len(calls))
		for i, c := range calls {
			asked = append(asked, c)
			if !g.cl.Cached(c) {
				continue
			}
			resp, err := g.cl.Do(ctx, c)
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
	return []nodes.CallPlan{llmenv.Estimate(g.cl, g.model.Config.ID, asked, 0)}, nil
}

// report notes the tiers, who wrote M_prose, the backfill and the calls,
// and logs every row kept after unusable answers.
func (g *proseRun) report(r nodes.Run, rows []ProseRow) {
	tiers := map[string]int{}
	by := map[string]int{}
	failed, backfilled, apis := 0, 0, 0
	for _, row := range rows {
		tiers[row.MProseRule]++
		by[row.MProseBy]++
		if row.ProseError != "" {
			failed++
			r.Logf("%s: %s", row.APIID, row.ProseError)
		}
		if len(row.SBackfilled) > 0 {
			apis++
			backfilled += len(row.SBackfilled)
		}
	}
	st := g.cl.Stats()
	r.Report("prose", map[string]any{"rows": len(rows), "tiers": tiers, "m_prose_by": by, "kept_after_unusable_answers": failed,
		"params_backfilled": backfilled, "unusable_answers": g.problems})
	r.Report("usage", st)
	r.Note("%d bundles: tier paper %d, source %d, doc %d; M_prose by the model %d, docstring %d (%d after unusable answers); %d parameters backfilled in %d APIs; %d calls made, %d cached",
		len(rows), tiers[TierPaper], tiers[TierSource], tiers[TierDoc], by["llm"], by["docstring"], failed, backfilled, apis, st.Calls, st.Cached)
}

// ProseTier is the tier rule: TierPaper when the docstring (r.MProse, a
// bundle node's tier doc) cites a publication (Citation); else TierSource
// when the docstring is empty, or when M_code is complex (MeasureCode: at
// least branches branch points or lines code lines) and the API is not a
// trivial wrapper (its own body at most one simple statement); else
// TierDoc. evidence says why.
func ProseTier(r Row, branches, lines int) (tier, evidence string) {
	if c := Citation(r.MProse); c != "" {
		return TierPaper, c
	}
	if strings.TrimSpace(r.MProse) == "" {
		return TierSource, "no docstring"
	}
	m := MeasureCode(r.MCode, r.Ecosystem)
	what := fmt.Sprintf("%d branches, %d code lines", m.Branches, m.Lines)
	switch {
	case m.Wrapper:
		return TierDoc, "wrapper: at most one simple statement; " + what
	case m.Branches >= branches || m.Lines >= lines:
		return TierSource, what
	}
	return TierDoc, what
}

// The signs of a citation, in the order Citation tries them.
var (
	citeDOI      = regexp.MustCompile(`\b10\.\d{4,9}/[^\s"'<>\])]+`)
	citeArXiv    = regexp.MustCompile(`(?i)\barxiv(?::\s*|\.org/(?:abs|pdf)/|\s+)((?:\d{4}\.\d{4,5}|[a-z-]+(?:\.[a-z]{2})?/\d{7})(?:v\d+)?)`)
	citeRefs     = regexp.MustCompile(`(?mi)^[\s#]*(?:references|bibliography)\s*:?\s*$|^\s*\.\.\s+\[[^\]]+\]\s+\S`)
	citeEtAl     = regexp.MustCompile(`\bet\s+al\b\.?`)
	citeYear     = regexp.MustCompile(`\b\p{Lu}[\p{L}'-]+(?:\s+(?:and|&)\s+\p{Lu}[\p{L}'-]+)?,?\s+\(\s*(?:1[6-9]|20)\d\d[a-z]?\s*\)`)
	citeYearIn   = regexp.MustCompile(`\(\s*\p{Lu}[\p{L}'-]+(?:\s+(?:and|&)\s+\p{Lu}[\p{L}'-]+)?,?\s+(?:1[6-9]|20)\d\d[a-z]?\s*\)`)
	trailingPunc = ".,;:"
)

// Citation reports the first sign that doc cites a publication, "" when
// none: a DOI ("DOI 10.1145/362686.362692"), an arXiv id ("arXiv
// 1706.03762"), a References or Bibliography heading or an
// reStructuredText citation (".. [1] ..."), "et al.", or a year from 1600
// to 2099 in parentheses after a capitalised name, or after one in them
// ("Jaccard (1901)", "Flajolet and Martin (1985)", "(Vitter, 1985)").
func Citation(doc string) string {
	if m := citeDOI.FindString(doc); m != "" {
		return "DOI " + strings.TrimRight(m, trailingPunc)
	}
	if m := citeArXiv.FindStringSubmatch(doc); m != nil {
		return "arXiv " + m[1]
	}
	if citeRefs.MatchString(doc) {
		return "references section"
	}
	if citeEtAl.MatchString(doc) {
		return `"et al."`
	}
	if m := citeYear.FindString(doc); m != "" {
		return strings.Join(strings.Fields(m), " ")
	}
	if m := citeYearIn.FindString(doc); m != "" {
		return strings.Join(strings.Fields(m), " ")
	}
	return ""
}

// Complexity is what the tier rule measures of M_code.
type Complexity struct {
	// Lines are the lines that hold code: not blank, not only a comment.
	Lines int
	// Branches are the branch points: Go's if (an if whose condition
	// ends in `err != nil` excepted: error propagation is not
	// mechanism), for, case, && and ||; Python's if, elif, for, while,
	// except, case (a line's first word), and, or. Strings and comments
	// are not read.
	Branches int
	// Wrapper says the API's own declaration, the first in M_code, is a
	// function whose body is at most one simple statement: not a compound
	// one (Go's if, for, switch, select, a block; Python's if, for, while,
	// try, with, match).
	Wrapper bool
}

// MeasureCode measures M_code of an API of ecosystem "go" (or "") or
// "python".
func MeasureCode(code, ecosystem string) Complexity {
	if ecosystem == "python" {
		return measurePython(code)
	}
	return measureGo(code)
}

func measureGo(code string) Complexity {
	var c Complexity
	inBlock := false
	for _, line := range strings.Split(code, "\n") {
		t := strings.TrimSpace(line)
		if inBlock {
			if i := strings.Index(t, "*/"); i >= 0 {
				inBlock, t = false, strings.TrimSpace(t[i+2:])
			} else {
				continue
			}
		}
		if strings.HasPrefix(t, "/*") && !strings.Contains(t, "*/") {
			inBlock = true
			continue
		}
		if t != "" && !strings.HasPrefix(t, "//") && !(strings.HasPrefix(t, "/*") && strings.HasSuffix(t, "*/")) {
			c.Lines++
		}
	}
	fset := token.NewFileSet()
	src := []byte(code)
	var s scanner.Scanner
	s.Init(fset.AddFile("", -1, len(src)), src, nil, 0)
	type tok struct {
		t   token.Token
		lit string
	}
	var toks []tok
	for {
		_, t, lit := s.Scan()
		if t == token.EOF {
			break
		}
		toks = append(toks, tok{t, lit})
	}
	for i, k := range toks {
		switch k.t {
		case token.FOR, token.CASE, token.LAND, token.LOR:
			c.Branches++
		case token.IF:
			// The condition runs to the first { outside brackets.
			depth, j := 0, i+1
			for ; j < len(toks); j++ {
				switch toks[j].t {
				case token.LPAREN, token.LBRACK:
					depth++
				case token.RPAREN, token.RBRACK:
					depth--
				}
				if toks[j].t == token.LBRACE && depth == 0 {
					break
				}
			}
			if j >= 3 && j < len(toks) && toks[j-3].t == token.IDENT && toks[j-3].lit == "err" && toks[j-2].t == token.NEQ && toks[j-1].lit == "nil" {
				continue
			}
			c.Branches++
		}
	}
	f, _ := parser.ParseFile(fset, "", "package p\n"+code, parser.SkipObjectResolution)
	if f != nil && len(f.Decls) > 0 {
		if fd, ok := f.Decls[0].(*ast.FuncDecl); ok && fd.Body != nil {
			switch body := fd.Body.List; {
			case len(body) == 0:
				c.Wrapper = true
			case len(body) == 1:
				switch body[0].(type) {
				case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt, *ast.BlockStmt, *ast.LabeledStmt:
				default:
					c.Wrapper = true
				}
			}
		}
	}
	return c
}

// pyKeywords are Python's branch words, counted anywhere outside strings
// and comments; case counts only as a line's first word (a soft keyword).
var (
	pyKeywords = regexp.MustCompile(`\b(?:if|elif|for|while|except|and|or)\b`)
	pyCase     = regexp.MustCompile(`^\s*case\b`)
	pyCompound = regexp.MustCompile(`^(?:async\s+)?(?:if|for|while|try|with|match)\b`)
)

func measurePython(code string) Complexity {
	var c Complexity
	lines, cont := pythonCode(code)
	for _, l := range strings.Split(code, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			c.Lines++
		}
	}
	for i, l := range lines {
		c.Branches += len(pyKeywords.FindAllString(l, -1))
		if !cont[i] && pyCase.MatchString(l) {
			c.Branches++
		}
	}
	c.Wrapper = pythonWrapper(lines, cont)
	return c
}

// pythonCode is code with the contents of strings blanked and comments
// removed, line by line, and for each line whether it continues a
// statement (inside brackets or a string).
func pythonCode(code string) (lines []string, cont []bool) {
	var b strings.Builder
	depth := 0
	quote := "" // the open string's delimiter
	startCont := false
	for i := 0; i < len(code); i++ {
		ch := code[i]
		if quote != "" {
			switch {
			case ch == '\\' && i+1 < len(code):
				if code[i+1] == '\n' {
					lines, cont = flushLine(&b, lines, cont, &startCont, true)
				}
				i++
			case strings.HasPrefix(code[i:], quote):
				b.WriteString(quote)
				i += len(quote) - 1
				quote = ""
			case ch == '\n':
				lines, cont = flushLine(&b, lines, cont, &startCont, true)
			}
			continue
		}
		switch ch {
		case '#':
			for i+1 < len(code) && code[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			q := string(ch)
			if strings.HasPrefix(code[i:], strings.Repeat(q, 3)) {
				q = strings.Repeat(q, 3)
			}
			b.WriteString(q)
			i += len(q) - 1
			quote = q
		case '(', '[', '{':
			depth++
			b.WriteByte(ch)
		case ')', ']', '}':
			depth = max(0, depth-1)
			b.WriteByte(ch)
		case '\n':
			lines, cont = flushLine(&b, lines, cont, &startCont, depth > 0 || strings.HasSuffix(strings.TrimRight(b.String(), " \t"), "\\"))
		default:
			b.WriteByte(ch)
		}
	}
	lines, cont = flushLine(&b, lines, cont, &startCont, false)
	return lines, cont
}

// flushLine ends the line in b; next says whether the next line
// continues it.
func flushLine(b *strings.Builder, lines []string, cont []bool, startCont *bool, next bool) ([]string, []bool) {
	lines, cont = append(lines, b.String()), append(cont, *startCont)
	b.Reset()
	*startCont = next
	return lines, cont
}

// pythonWrapper says whether the first declaration is a def whose body is
// at most one simple statement.
func pythonWrapper(lines []string, cont []bool) bool {
	indent := func(s string) int { return len(s) - len(strings.TrimLeft(s, " \t")) }
	i := 0
	for ; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" || cont[i] || strings.HasPrefix(t, "@") {
			continue
		}
		break
	}
	if i == len(lines) {
		return false
	}
	t := strings.TrimSpace(lines[i])
	if !strings.HasPrefix(t, "def ") && !strings.HasPrefix(t, "async def ") {
		return false
	}
	base := indent(lines[i])
	// The header ends at the first line the next does not continue.
	for i+1 < len(lines) && cont[i+1] {
		i++
	}
	if h := strings.TrimSpace(lines[i]); !strings.HasSuffix(h, ":") {
		return true // def f(): return x
	}
	statements, body, compound := 0, -1, false
	for j := i + 1; j < len(lines); j++ {
		t := strings.TrimSpace(lines[j])
		if t == "" || cont[j] {
			continue
		}
		n := indent(lines[j])
		if n <= base {
			break
		}
		if body < 0 {
			body = n
		}
		if n == body {
			statements++
			compound = compound || pyCompound.MatchString(t)
		}
	}
	return statements == 0 || statements == 1 && !compound
}
