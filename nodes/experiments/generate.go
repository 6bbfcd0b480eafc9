package experiments

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/bundle"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/novelapibench/cells"
	"github.com/lacuna-dev/lacuna/runners/embed"
	"github.com/lacuna-dev/lacuna/runners/llm"
)

func init() { nodes.Register(generateType{}) }

// generateConfig:
//
//	node "generate" "qwen_full" {
//	  tasks       = node.c1.lo        # rows with keep = false are skipped
//	  bundles     = node.bundle.lo    # the oracle prepend (not needed by baseline)
//	  model       = model.qwen
//	  cell        = "Full"
//	  samples     = 20
//	  temperature = 0.8
//	  retriever   = "bm25"            # optional: oracle (default), bm25, dense
//	  pool        = values(node.bundle.lib) # the retrieval's bundles (default: bundles)
//	}
//
// With retriever = "bm25" or "dense" the prepend is the top_k chunks of the
// whole bundle pool (every bundle of pool, every library's: one index, seed
// Appendix E.4, Figure 3) instead of the task's own bundle (see rag for the
// pool, the chunks, the query and the tokens); the rows' cell is then
// "<cell>@<retriever>", so that one metrics node tells the arms apart.
//
// For C2 (seed §3.2 stage 4) the paper samples 3 answers per task at
// T = 0.8 without knowledge: cell = "baseline", samples = 3,
// temperature = 0.8 on the generate node the c2 node's solve reads.
type generateConfig struct {
	Tasks   nodes.Ref   `hcl:"tasks"`
	Bundles nodes.Ref   `hcl:"bundles,optional"`
	Model   nodes.Model `hcl:"model"`
	// Trained serves the weights a train or edit node wrote (an adapter
	// beside the model's base weights, a full model, a GRACE codebook)
	// instead of the model's own: the model needs a serve { } block
	// (llmenv.WithTrained). The rows' model is then MODEL+TYPE.NAME.
	Trained *nodes.Ref `hcl:"trained,optional" key:"omitnull"`
	// Cell is the knowledge cell (novelapibench/cells; default
	// "baseline").
	Cell string `hcl:"cell,optional"`
	// Samples is the number of answers per task (default 1).
	Samples *int `hcl:"samples,optional"`
	// Sampling settings that override the model block's.
	Temperature *float64 `hcl:"temperature,optional"`
	TopP        *float64 `hcl:"top_p,optional"`
	MaxTokens   *int     `hcl:"max_tokens,optional"`
	Seed        *int64   `hcl:"seed,optional"`
	// Limit takes the first N tasks in task_id order (a small slice).
	Limit *int `hcl:"limit,optional"`
	// Templates is a directory of prompt templates that replace the
	// built-in ones by file name (novelapibench/cells/templates), read at
	// plan time; relative to the pipeline's directory.
	Templates string `hcl:"templates,optional"`
	// MaxExamples and MaxExampleBytes bound what E shows of a bundle
	// (cells.SelectExamples: never the example the task was cut from; the
	// API's own examples first, then README blocks, other APIs'
	// examples, tests, benchmarks, shortest first): default 2 examples
	// within 6000 bytes of code and output. Cells with E only.
	MaxExamples     *int `hcl:"max_examples,optional"`
	MaxExampleBytes *int `hcl:"max_example_bytes,optional"`

	// Retriever is what a cell with parts prepends: "oracle" (default)
	// the task's own bundle, "bm25" or "dense" the chunks retrieved from
	// the whole bundle pool.
	Retriever string `hcl:"retriever,optional"`
	// Pool are the bundle nodes retrieval searches, all of them in one
	// index (default: bundles alone); the paper's pool is every
	// library's bundles.
	Pool []nodes.Ref `hcl:"pool,optional"`
	// Embedder is a BERT sentence encoder, a directory runners/embed
	// loads (relative to the pipeline's directory), keyed by the content
	// of its files: the dense retriever's encoder, and for both
	// retrievers the WordPiece tokenizer chunk windows are counted in
	// (optional for bm25; see rag). Pooling is "cls" (default:
	// BAAI/bge-small-en-v1.5, the paper's retriever) or "mean".
	Embedder string `hcl:"embedder,optional"`
	Pooling  string `hcl:"pooling,optional"`
	// TopK, ChunkTokens and ChunkOverlap are the retrieval's chunks
	// prepended (default 5) and their size and overlap in tokens (default
	// 512 and 64), the paper's.
	TopK         *int `hcl:"top_k,optional"`
	ChunkTokens  *int `hcl:"chunk_tokens,optional"`
	ChunkOverlap *int `hcl:"chunk_overlap,optional"`
}

func (c *generateConfig) retriever() string {
	if c.Retriever == "" {
		return RetrieverOracle
	}
	return c.Retriever
}

func (c *generateConfig) pooling() embed.Pooling {
	if c.Pooling == "mean" {
		return embed.Mean
	}
	return embed.CLS
}

func orInt(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// rowCell is the cell the rows name: the cell, and the retriever unless
// it is the oracle.
func (c *generateConfig) rowCell() string {
	if r := c.retriever(); r != RetrieverOracle {
		return c.cell() + "@" + r
	}
	return c.cell()
}

// exampleLimits are E's bounds.
func (c *generateConfig) exampleLimits() cells.ExampleLimits {
	return cells.ExampleLimits{Max: orInt(c.MaxExamples, cells.DefaultExampleLimits.Max), Bytes: orInt(c.MaxExampleBytes, cells.DefaultExampleLimits.Bytes)}
}

func (c *generateConfig) cell() string {
	if c.Cell == "" {
		return "baseline"
	}
	return c.Cell
}

func (c *generateConfig) samples() int {
	if c.Samples == nil {
		return 1
	}
	return *c.Samples
}

// GenerateRow is one answer of a model to a task: the prompt, the answer as
// sent and the code extracted from it, which solve runs.
type GenerateRow struct {
	TaskID string `parquet:"task_id"`
	// SampleID is cell#index: unique per task across cells.
	SampleID string `parquet:"sample_id"`
	Model    string `parquet:"model"` // the model block's id
	// Cell is the knowledge cell, "@bm25" or "@dense" appended when a
	// retriever chose the knowledge.
	Cell   string `parquet:"cell"`
	Sample int32  `parquet:"sample"` // the sample's index
	APIID  string `parquet:"api_id"`
	// MProseTier is the m_prose_tier of the task's bundle row: "doc" for
	// a bundle node's rows, paper, source or doc for a prose node's; ""
	// when the cell shows no bundle (baseline).
	MProseTier string `parquet:"m_prose_tier"`
	// Prompt is the messages sent, as text ("[system]\n...\n\n[user]\n...",
	// or the completions prompt).
	Prompt string `parquet:"prompt"`
	// Retriever is oracle, bm25 or dense; Retrieved the chunks it
	// prepended, best first (empty for the oracle).
	Retriever string           `parquet:"retriever"`
	Retrieved []RetrievedChunk `parquet:"retrieved,list"`
	// Raw is the answer as the server sent it, think blocks included.
	Raw      string `parquet:"raw"`
	Thinking string `parquet:"thinking"` // the <think> blocks and any separate reasoning
	// Solution is the code extracted from the answer (after its think
	// blocks are stripped, unless the model block says think = "keep");
	// ExtractedBy says how (llm.ExtractCode).
	Solution         string `parquet:"solution"`
	ExtractedBy      string `parquet:"extracted_by"`
	FinishReason     string `parquet:"finish_reason"`
	PromptTokens     int64  `parquet:"prompt_tokens"`
	CompletionTokens int64  `parquet:"completion_tokens"`
	// LatencyS is the call's latency as the client measured it; a call
	// replayed from the call cache keeps the latency it had when made, so
	// a resumed run writes the same rows as an uninterrupted one.
	LatencyS float64 `parquet:"latency_s" volatile:"the call's latency when it was made"`
}

type generateType struct {
	nodes.Static[generateConfig, GenerateRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed       = generateType{}
	_ nodes.Documented  = generateType{}
	_ nodes.Validator   = generateType{}
	_ nodes.Resolver    = generateType{}
	_ nodes.CallPlanner = generateType{}
)

func (generateType) Name() string    { return "generate" }
func (generateType) Version() string { return "4" }
func (generateType) Doc() string {
	return "Asks a model for the code of every kept task's mask, n samples per task, in one knowledge cell (the task's own " +
		"bundle prepended: baseline, S_name, S, E, M_prose, M_code, S+M_prose, S+E, S+M_code, S+M_prose+M_code, S+E+M_code, " +
		"Full; E shows at most max_examples (2) of the bundle's examples within max_example_bytes (6000), the API's own first, " +
		"then README blocks, other APIs' examples, tests, shortest first, never the example the task was cut from, which " +
		"holds its answer); one row per answer with the raw " +
		"answer, the extracted solution (solve runs it), tokens and latency. With retriever = \"bm25\" or \"dense\" " +
		"(embedder = DIR, a BERT sentence encoder) the prepend is instead the top_k (5) chunks of chunk_tokens (512) with " +
		"chunk_overlap (64) retrieved from one index over every bundle of pool (bundle nodes, default bundles: list every " +
		"library's for the paper's pool), the task its query (seed Appendix E.4). Windows are counted in the embedder's " +
		"WordPiece tokens (dense, or bm25 given an embedder), else in a fixed estimate of them (punctuation and symbols one " +
		"token each, identifiers split at case and digit changes, one token per 5 characters of a part begun: 0.98 of " +
		"BERT's count on Go code and docs). The rows' cell is then CELL@RETRIEVER and they list the chunks. A plan embeds " +
		"no dense pool: before a run has embedded it, the plan counts its calls and estimates their chunks. Prompts come " +
		"from novelapibench/cells/templates " +
		"(templates = DIR overrides them by file name; the model block's system, when set, replaces system.tmpl). Calls go " +
		"through the store's call cache: a re-run repeats no completed call. For C2, the paper samples 3 answers at " +
		"temperature 0.8 in cell baseline. A Python task (a tasks node with ecosystem = \"python\") is prompted in Python " +
		"and its solution taken from the answer's python fence. bundles and pool also take a prose node's rows (M_prose " +
		"tiers, S backfill); each row's m_prose_tier is its task's bundle row's (\"doc\" for a bundle node's). " +
		"trained = node.train.X (or node.edit.X) serves the weights that node wrote through the model's serve { } block (an adapter beside the base weights, a full model, a GRACE codebook on kind transformers); the rows' model is then MODEL+train.X, and the weights' blob is in the calls' cache key."
}

func (generateType) Validate(cfg any) error {
	c := cfg.(*generateConfig)
	cell, err := cells.Lookup(c.cell())
	if err != nil {
		return nodes.Errorf("cell", "Unknown cell", "%v", err)
	}
	switch {
	case len(cell.Parts) > 0 && c.Bundles.Node == "":
		return nodes.Errorf("bundles", "Bundles needed", "cell %s prepends the task's bundle: set bundles = node.bundle.NAME.", cell.Name)
	case c.Samples != nil && *c.Samples < 1:
		return nodes.Errorf("samples", "Invalid samples", "samples must be at least 1.")
	case c.Limit != nil && *c.Limit < 1:
		return nodes.Errorf("limit", "Invalid limit", "limit must be at least 1.")
	case c.MaxTokens != nil && *c.MaxTokens < 1:
		return nodes.Errorf("max_tokens", "Invalid max_tokens", "max_tokens must be at least 1.")
	case c.Temperature != nil && *c.Temperature < 0:
		return nodes.Errorf("temperature", "Invalid temperature", "temperature must not be negative.")
	case c.TopP != nil && (*c.TopP <= 0 || *c.TopP > 1):
		return nodes.Errorf("top_p", "Invalid top_p", "top_p must be in (0, 1].")
	case c.MaxExamples != nil && !slices.Contains(cell.Parts, cells.E):
		return nodes.Errorf("max_examples", "No examples shown", "cell %s shows no examples (E): max_examples is for cells with E.", cell.Name)
	case c.MaxExampleBytes != nil && !slices.Contains(cell.Parts, cells.E):
		return nodes.Errorf("max_example_bytes", "No examples shown", "cell %s shows no examples (E): max_example_bytes is for cells with E.", cell.Name)
	case c.MaxExamples != nil && *c.MaxExamples < 1:
		return nodes.Errorf("max_examples", "Invalid max_examples", "max_examples must be at least 1.")
	case c.MaxExampleBytes != nil && *c.MaxExampleBytes < 1:
		return nodes.Errorf("max_example_bytes", "Invalid max_example_bytes", "max_example_bytes must be at least 1.")
	}
	return validateRetrieval(c, cell)
}

func validateRetrieval(c *generateConfig, cell cells.Cell) error {
	rt := c.retriever()
	retrieves := rt == RetrieverBM25 || rt == RetrieverDense
	size := orInt(c.ChunkTokens, defaultChunkTokens)
	overlap := orInt(c.ChunkOverlap, defaultChunkOverlap)
	minSize := 1
	if c.Embedder != "" {
		minSize = 3 // [CLS], one word piece, [SEP]
	}
	overlapAt := "chunk_overlap"
	if c.ChunkOverlap == nil {
		overlapAt = "chunk_tokens" // the default overlap does not fit the size set
	}
	switch {
	case rt != RetrieverOracle && !retrieves:
		return nodes.Errorf("retriever", "Unknown retriever", "retriever must be \"oracle\", \"bm25\" or \"dense\", not %q.", c.Retriever)
	case retrieves && len(cell.Parts) == 0:
		return nodes.Errorf("retriever", "Nothing to retrieve", "cell %s prepends no knowledge: a retriever needs a cell with parts.", cell.Name)
	case rt == RetrieverDense && c.Embedder == "":
		return nodes.Errorf("retriever", "Embedder needed", "retriever \"dense\" needs embedder = \"DIR\", a BERT sentence encoder's directory (config.json, vocab.txt, model.safetensors).")
	case !retrieves && c.Embedder != "":
		return nodes.Errorf("embedder", "Embedder unused", "embedder is used by retriever = \"bm25\" or \"dense\" only.")
	case !retrieves && len(c.Pool) > 0:
		return nodes.Errorf("pool", "Not retrieving", "pool is used by retriever = \"bm25\" or \"dense\" only.")
	case rt != RetrieverDense && c.Pooling != "":
		return nodes.Errorf("pooling", "Pooling unused", "pooling is used by retriever = \"dense\" only.")
	case c.Pooling != "" && c.Pooling != "cls" && c.Pooling != "mean":
		return nodes.Errorf("pooling", "Unknown pooling", "pooling must be \"cls\" or \"mean\", not %q.", c.Pooling)
	case !retrieves && c.TopK != nil:
		return nodes.Errorf("top_k", "Not retrieving", "top_k is used by retriever = \"bm25\" or \"dense\" only.")
	case !retrieves && c.ChunkTokens != nil:
		return nodes.Errorf("chunk_tokens", "Not retrieving", "chunk_tokens is used by retriever = \"bm25\" or \"dense\" only.")
	case !retrieves && c.ChunkOverlap != nil:
		return nodes.Errorf("chunk_overlap", "Not retrieving", "chunk_overlap is used by retriever = \"bm25\" or \"dense\" only.")
	case c.TopK != nil && *c.TopK < 1:
		return nodes.Errorf("top_k", "Invalid top_k", "top_k must be at least 1.")
	case size < minSize:
		return nodes.Errorf("chunk_tokens", "Invalid chunk_tokens", "chunk_tokens must be at least %d.", minSize)
	case retrieves && (overlap < 0 || overlap >= size-(minSize-1)):
		what := "tokens of a chunk"
		if c.Embedder != "" {
			what = "word pieces of a chunk (chunk_tokens less [CLS] and [SEP])"
		}
		return nodes.Errorf(overlapAt, "Invalid chunk_overlap", "chunk_overlap (%d) must be at least 0 and less than the %d %s.", overlap, size-(minSize-1), what)
	}
	return nil
}

// generatePinned is what Resolve fixed: the model as its server reported
// it, and the cell's templates, read once.
type generatePinned struct {
	model      *llmenv.Model
	prompts    *cells.Prompts
	overridden bool         // templates = DIR
	embedder   *embed.Model // embedder = DIR
}

// Resolve reads and checks the cell's templates (a template naming a
// missing field fails here, with its file and line), then checks the model
// against its server. The identity is the model's and the digest of the
// templates the cell uses ("templates"): editing a template recomputes
// exactly the generate nodes whose cell uses it.
func (generateType) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	c := r.Config().(*generateConfig)
	prompts, err := Prompts(r, c.cell(), c.Templates)
	if err != nil {
		return nil, err
	}
	m, id, err := llmenv.Resolve(ctx, r, "model", "model", c.Model)
	if err != nil {
		return nil, err
	}
	id["templates"] = prompts.Digest()
	pinned := &generatePinned{model: m, prompts: prompts, overridden: c.Templates != ""}
	if c.Embedder != "" {
		dir := c.Embedder
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(r.Dir(), dir)
		}
		if pinned.embedder, err = embedderFor(dir, c.pooling()); err != nil {
			return nil, nodes.Errorf("embedder", "Cannot load the embedder", "%v", err)
		}
		id["embedder"] = pinned.embedder.Fingerprint()
	}
	if c.retriever() == RetrieverDense {
		if max, size := pinned.embedder.MaxTokens(), orInt(c.ChunkTokens, defaultChunkTokens); size > max {
			return nil, nodes.Errorf("chunk_tokens", "Chunks too long", "chunk_tokens %d exceeds the %d tokens the embedder encodes ([CLS] and [SEP] included): "+
				"the encoder would truncate every full chunk. Set chunk_tokens = %d.", size, max, max)
		}
	}
	return &nodes.Pinned{Identity: id, Value: pinned}, nil
}

// genCall is one call of a run, with what its row needs.
type genCall struct {
	task      tasks.Row
	sample    int
	prompt    string
	retrieved []RetrievedChunk
	call      llm.Call
	tier      string // the bundle row's m_prose_tier
}

// calls builds the run's calls, in row order: the kept tasks in task_id
// order (the first Limit), each with Samples calls; and the retrieval that
// chose their knowledge (nil for the oracle). Retrieval runs here, at plan
// as at run: a call's prompt holds its chunks, and the plan counts the
// calls the call cache holds by their prompts. Dense vectors go to the
// store's embed cache, so a re-run embeds nothing again. When planning, a
// dense retrieval embeds nothing: if a vector is not cached yet, the calls
// come back without chunks and unembedded is true (their number does not
// depend on the chunks; PlanCalls estimates the rest).
func (t generateType) calls(ctx context.Context, r nodes.Run, planning bool) (_ []genCall, _ *rag, unembedded bool, _ error) {
	c := t.Config(r)
	p := r.Pinned().(*generatePinned)
	states, err := tasks.ReadStates(r, c.Tasks)
	if err != nil {
		return nil, nil, false, err
	}
	var tks []tasks.Row
	for _, s := range states {
		if s.Keep {
			tks = append(tks, s.Row)
		}
	}
	sort.Slice(tks, func(i, j int) bool { return tks[i].TaskID < tks[j].TaskID })
	if c.Limit != nil && *c.Limit < len(tks) {
		tks = tks[:*c.Limit]
	}
	bundles := map[string]bundle.Row{}
	var g *rag
	var hits map[string]ragHit
	if len(p.prompts.Cell().Parts) > 0 {
		in, err := r.Input(c.Bundles)
		if err != nil {
			return nil, nil, false, err
		}
		rows, err := bundle.ReadRows(in)
		if err != nil {
			return nil, nil, false, fmt.Errorf("bundles: %w (bundles must come from a bundle or prose node)", err)
		}
		for _, b := range rows {
			bundles[b.APIID] = b
		}
		if c.retriever() != RetrieverOracle {
			hits, g, err = t.retrieve(ctx, r, c, p, tks, rows, planning)
			switch {
			case planning && errors.Is(err, errNotEmbedded):
				unembedded = true
			case err != nil:
				return nil, nil, false, err
			}
		}
	}
	m := p.model.Config
	req := p.model.Request() // the block's sampling defaults and params
	if c.Temperature != nil {
		req.Temperature = c.Temperature
	}
	if c.TopP != nil {
		req.TopP = c.TopP
	}
	if c.MaxTokens != nil {
		req.MaxTokens = *c.MaxTokens
	}
	if c.Seed != nil {
		req.Seed = c.Seed
	}
	var out []genCall
	for _, task := range tks {
		b, ok := bundles[task.APIID]
		if !ok && len(p.prompts.Cell().Parts) > 0 {
			return nil, nil, false, fmt.Errorf("task %s: the bundles have no API %s", task.TaskID, task.APIID)
		}
		var msgs cells.Messages
		retrieved := []RetrievedChunk{}
		if g != nil {
			h := hits[task.TaskID]
			retrieved = h.chunks
			msgs, err = p.prompts.RenderKnowledge(CellTask(task), h.knowledge)
		} else {
			msgs, err = p.prompts.Render(CellTask(task), CellBundle(b, task.Example, c.exampleLimits()))
		}
		if err != nil {
			return nil, nil, false, fmt.Errorf("task %s: %w", task.TaskID, err)
		}
		if m.System != nil && *m.System != "" {
			msgs.System = *m.System
		}
		rq := req
		var prompt string
		if rq.API == "completions" {
			rq.Prompt = strings.TrimSpace(msgs.System + "\n\n" + msgs.User)
			prompt = rq.Prompt
		} else {
			rq.Messages = []llm.Message{{Role: "user", Content: msgs.User}}
			prompt = "[user]\n" + msgs.User
			if msgs.System != "" {
				rq.Messages = append([]llm.Message{{Role: "system", Content: msgs.System}}, rq.Messages...)
				prompt = "[system]\n" + msgs.System + "\n\n" + prompt
			}
		}
		for i := 0; i < c.samples(); i++ {
			out = append(out, genCall{task: task, sample: i, prompt: prompt, retrieved: retrieved, call: llm.Call{Request: rq, Sample: i}, tier: b.MProseTier})
		}
	}
	return out, g, unembedded, nil
}

// retrieve chooses the knowledge of each task from the pool: the rows of
// every pool input (bundles, the rows read already, when pool is unset).
func (generateType) retrieve(ctx context.Context, r nodes.Run, c *generateConfig, p *generatePinned, tks []tasks.Row, bundles []bundle.Row, planning bool) (map[string]ragHit, *rag, error) {
	var rows []bundle.Row
	if len(c.Pool) == 0 {
		rows = bundles
	}
	for _, ref := range c.Pool {
		in, err := r.Input(ref)
		if err != nil {
			return nil, nil, err
		}
		rs, err := bundle.ReadRows(in)
		if err != nil {
			return nil, nil, fmt.Errorf("pool %s: %w (the pool must list bundle or prose nodes)", ref, err)
		}
		rows = append(rows, rs...)
	}
	pool, err := sortPool(rows)
	if err != nil {
		return nil, nil, nodes.Errorf("pool", "Invalid pool", "%v", err)
	}
	cache := ""
	if c.retriever() == RetrieverDense {
		if cache, err = r.CacheDir("embed"); err != nil {
			return nil, nil, err
		}
	}
	g := newRAG(c.retriever(), p.prompts, p.overridden, orInt(c.TopK, defaultTopK), orInt(c.ChunkTokens, defaultChunkTokens),
		orInt(c.ChunkOverlap, defaultChunkOverlap), p.embedder, cache)
	g.examples = c.exampleLimits()
	g.planning = planning
	hits, err := g.retrieve(ctx, tks, pool)
	if err != nil {
		return nil, nil, err
	}
	return hits, g, nil
}

// Prompts reads and checks a cell's templates (the shipped ones, with
// those of templates, a directory relative to the pipeline's, replacing
// them by file name): a template naming a missing field fails here, at
// the attribute "cell" or "templates". generate, sft_data and raft_data
// render with it, so training prompts are the evaluation's.
func Prompts(r nodes.Resolve, cellName, templates string) (*cells.Prompts, error) {
	cell, err := cells.Lookup(cellName)
	if err != nil {
		return nil, nodes.Errorf("cell", "Unknown cell", "%v", err)
	}
	var over map[string]cells.Source
	attr := "cell"
	if templates != "" {
		dir := templates
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(r.Dir(), dir)
		}
		if over, err = cells.ReadDir(dir); err != nil {
			return nil, nodes.Errorf("templates", "Cannot read templates", "%v", err)
		}
		attr = "templates"
	}
	prompts, err := cells.New(cell, over)
	if err != nil {
		return nil, nodes.Errorf(attr, "Template error", "%v", err)
	}
	return prompts, nil
}

// CellTask is what a prompt may show of a task (sft_data and raft_data
// render their prompts with it too, so training prompts are the
// evaluation's).
func CellTask(t tasks.Row) cells.Task {
	return cells.Task{Library: t.Library, Module: t.Module, Version: t.Version, Difficulty: t.Difficulty,
		Description: t.Description, Context: strings.TrimRight(t.Context, "\n"), Language: t.Ecosystem}
}

// CellBundle is what a prompt may show of a bundle: of its valid
// examples, those cells.SelectExamples chooses within lim, never the one
// the task was cut from (it holds the task's answer).
func CellBundle(b bundle.Row, taskExample string, lim cells.ExampleLimits) cells.Bundle {
	out := cells.Bundle{Language: b.Ecosystem, Qualified: b.Qualified, Kind: b.Kind, ImportPath: b.ImportPath, Module: b.Module, Version: b.Version,
		Signature: b.Signature, TypeParams: b.TypeParams, Prose: b.MProse, Code: b.MCode}
	for _, p := range b.Params {
		cp := cells.Param{Name: p.Name, Type: p.Type, Variadic: p.Variadic, Doc: p.Doc, Kind: p.Kind}
		if p.Default != nil {
			cp.Default, cp.HasDefault = *p.Default, true
		}
		out.Params = append(out.Params, cp)
	}
	for _, p := range b.Results {
		out.Results = append(out.Results, cells.Param{Name: p.Name, Type: p.Type, Variadic: p.Variadic, Doc: p.Doc})
	}
	var valid []cells.Example
	for _, e := range b.Examples {
		if e.Valid {
			valid = append(valid, cells.Example{Name: e.Name, Kind: e.Kind, Code: e.Code, Output: e.Output})
		}
	}
	out.Examples = cells.SelectExamples(valid, taskExample, lim)
	return out
}

// Run makes the calls, at most the endpoint's concurrency at once (the
// limiter every node calling the model in this process shares bounds them
// further), each answered from the store's call cache when it holds it.
// The first call that fails after the client's retries stops new calls and
// fails the node; the calls that completed are cached, so a re-run makes
// only the missing ones.
func (t generateType) Run(ctx context.Context, r nodes.Run) error {
	p := r.Pinned().(*generatePinned)
	calls, g, _, err := t.calls(ctx, r, false)
	if err != nil {
		return err
	}
	model, err := p.model.WithTrained(r, "trained", t.Config(r).Trained)
	if err != nil {
		return err
	}
	client := model.Client(r)
	// Rows of trained weights name the model MODEL+TYPE.NAME of the node
	// that trained them, so that metrics tells the arms apart.
	label := p.model.Config.ID
	if tr := t.Config(r).Trained; tr != nil {
		label += "+" + strings.TrimPrefix(tr.Node, "node.")
	}
	rows := make([]GenerateRow, len(calls))
	think := p.model.Config.ThinkMode()
	c := t.Config(r)
	cell := c.rowCell()

	reqs := make([]llm.Call, len(calls))
	for i, gc := range calls {
		reqs[i] = gc.call
	}
	var firstErr error
	total := len(calls)
	done := llmenv.DoAll(ctx, r, client, reqs, p.model.Endpoint.Concurrency, true, func(i int, resp *llm.Response, err error) {
		gc := calls[i]
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("task %s sample %d: %w", gc.task.TaskID, gc.sample, err)
			}
			return
		}
		rows[i] = answerRow(gc, resp, label, cell, c.retriever(), think)
	})
	st := client.Stats()
	r.Report("usage", st)
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return fmt.Errorf("%w; %d of %d calls answered and cached in the store: a re-run makes only the %d missing", firstErr, done, total, total-done)
	}
	note := fmt.Sprintf("%d answers (%d tasks × %d samples, cell %s): %d calls made, %d cached, %d failed", len(rows), len(rows)/c.samples(), c.samples(), cell, st.Calls, st.Cached, st.Failed)
	if len(rows) == 0 {
		note = "warning: no task to answer (its filters kept none); " + note
		r.Logf("warning: no task to answer: the filters before this node kept none")
	}
	if g != nil {
		note += "; " + g.summary()
	}
	r.Note("%s", note)
	return t.Write(r, rows)
}

// answerRow is the row of one answered call.
func answerRow(gc genCall, resp *llm.Response, model, cell, retriever, think string) GenerateRow {
	answer, thinking := llm.StripThink(resp.Text)
	if resp.Reasoning != "" {
		thinking = strings.TrimSpace(resp.Reasoning + "\n\n" + thinking)
	}
	if think == "keep" {
		answer = resp.Text
	}
	code, how := llm.ExtractCode(answer, tasks.EcosystemOf(gc.task))
	return GenerateRow{
		TaskID: gc.task.TaskID, SampleID: fmt.Sprintf("%s#%d", cell, gc.sample), Model: model, Cell: cell, Sample: int32(gc.sample),
		APIID: gc.task.APIID, MProseTier: gc.tier, Prompt: gc.prompt, Retriever: retriever, Retrieved: gc.retrieved, Raw: resp.Text, Thinking: thinking, Solution: code, ExtractedBy: how,
		FinishReason: resp.FinishReason, PromptTokens: int64(resp.PromptTokens), CompletionTokens: int64(resp.OutputTokens),
		LatencyS: resp.Latency.Seconds(),
	}
}

// CallsModels: generate always calls its model.
func (generateType) CallsModels(any) bool { return true }

// PlanCalls counts the calls a run would make and those the call cache
// holds, and estimates the tokens of the rest (llmenv.Estimate: the
// prompt's bytes / 4, and max_tokens, else llmenv.DefaultCompletionEstimate,
// per answer). A dense retrieval whose pool is not in the embed cache yet
// is not embedded at plan (that is the run's work): its calls are counted,
// none as cached (their prompts are not known), each estimated at its
// prompt without chunks plus top_k × chunk_tokens.
func (t generateType) PlanCalls(ctx context.Context, r nodes.Run) ([]nodes.CallPlan, error) {
	p := r.Pinned().(*generatePinned)
	calls, _, unembedded, err := t.calls(ctx, r, true)
	if err != nil {
		return nil, err
	}
	reqs := make([]llm.Call, len(calls))
	for i, gc := range calls {
		reqs[i] = gc.call
	}
	// Trained weights are another model to the call cache.
	model, err := p.model.WithTrained(r, "trained", t.Config(r).Trained)
	if err != nil {
		return nil, err
	}
	plan := llmenv.Estimate(model.Client(r), p.model.Config.ID, reqs, 0)
	if unembedded {
		c := t.Config(r)
		plan.PromptTokens += (plan.Calls - plan.Cached) * int64(orInt(c.TopK, defaultTopK)*orInt(c.ChunkTokens, defaultChunkTokens))
	}
	return []nodes.CallPlan{plan}, nil
}
