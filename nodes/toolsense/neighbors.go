package toolsense

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/runners/bm25"
	"github.com/lacuna-dev/lacuna/runners/embed"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

func init() { nodes.Register(neighborsType{}) }

// neighborsConfig:
//
//	node "neighbors" "pools" {
//	  catalog   = node.catalog.rrb
//	  embedder  = "dense"                # or "bm25"
//	  model_dir = "models/all-MiniLM-L6-v2"
//	  pooling   = "mean"                 # or "cls"
//	  field     = "description"
//	  k         = 13                     # pool = seed + 13 = 14 tools (at most the catalog's size - 1)
//	  seeds     = 50
//	  seed      = 1
//	}
type neighborsConfig struct {
	Catalog  nodes.Ref `hcl:"catalog"`
	Embedder string    `hcl:"embedder,optional"`
	ModelDir string    `hcl:"model_dir,optional" path:"dir"`
	Pooling  string    `hcl:"pooling,optional"`
	Field    string    `hcl:"field,optional"`
	K        *int      `hcl:"k,optional"`
	Seeds    *int      `hcl:"seeds,optional"`
	Seed     *int64    `hcl:"seed,optional"`
	// Batch is how many texts the dense embedder encodes at once.
	Batch *int `hcl:"batch,optional"`
}

// Defaults of neighbors: the paper's pool is the seed and 13 hard
// negatives (seed 002 Appendix J.1), over-fetching 5 more (Appendix B).
const (
	defaultNeighbors = 13
	overFetch        = 5
	defaultBatch     = 8
)

// neighborFields are the texts a tool may be embedded by.
var neighborFields = map[string]func(CatalogRow) string{
	"description":      ts.Description,
	"tool_description": func(t CatalogRow) string { return t.ToolDescription },
	"api_description":  func(t CatalogRow) string { return t.APIDescription },
	"doc":              ts.DocText,
}

func (c *neighborsConfig) embedder() string {
	if c.Embedder == "" {
		return "dense"
	}
	return c.Embedder
}

func (c *neighborsConfig) field() string {
	if c.Field == "" {
		return "description"
	}
	return c.Field
}

func (c *neighborsConfig) pooling() string {
	if c.Pooling == "" {
		return "mean"
	}
	return c.Pooling
}

func (c *neighborsConfig) k() int {
	if c.K == nil {
		return defaultNeighbors
	}
	return *c.K
}

func (c *neighborsConfig) seed() uint64 {
	if c.Seed == nil {
		return 1
	}
	return uint64(*c.Seed)
}

func (c *neighborsConfig) batch() int {
	if c.Batch == nil {
		return defaultBatch
	}
	return *c.Batch
}

// NeighborsRow is one seed tool and its candidate pool.
type NeighborsRow struct {
	// Seed is the anchor tool's tool_name; Service the part of it before
	// the first "&&" (the stratum it was drawn from); Position its place
	// in the catalog.
	Seed     string `parquet:"seed"`
	Service  string `parquet:"service"`
	Position int64  `parquet:"position"`
	// Pool is the seed followed by its K nearest tools, nearest first
	// (ties by catalog position); Scores are the neighbours' similarities
	// to the seed (cosine, or BM25 scores), aligned with Pool[1:].
	Pool   []string  `parquet:"pool,list"`
	Scores []float64 `parquet:"scores,list"`
}

type neighborsType struct {
	nodes.Static[neighborsConfig, NeighborsRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = neighborsType{}
	_ nodes.Documented = neighborsType{}
	_ nodes.Validator  = neighborsType{}
	_ nodes.Resolver   = neighborsType{}
)

func (neighborsType) Name() string    { return "neighbors" }
func (neighborsType) Version() string { return "1" }
func (neighborsType) Doc() string {
	return "Hard-negative candidate pools (seed 002 §3.1, Appendices B and J.1): samples `seeds` anchor tools from a catalog " +
		"stratified by service (the part of tool_name before its first \"&&\"; see StratifiedSeeds: one per service, the rest " +
		"by proportional allocation with largest remainders; fewer seeds than services draws that many services weighted by " +
		"size; seeded by `seed`, default 1; default: every tool) and, for each, ranks every catalog tool by similarity of " +
		"their `field` text (description = tool_description and api_description, the default; tool_description; " +
		"api_description; doc = DocText), over-fetches k+5, drops the seed and keeps the k nearest (default 13: a 14-tool " +
		"pool, seed first). embedder = \"dense\" (default): cosine over L2-normalised embeddings of a local BERT sentence " +
		"encoder (`model_dir`, its files' digest in the key; `pooling` mean or cls; `batch` texts at once); embedder = " +
		"\"bm25\": the seed's text as a BM25 query (runners/bm25) against every tool's text, no model needed. k larger than " +
		"the catalog less the seed is reduced to it; seeds more than the catalog holds, or a tool_name twice in it, are errors. " +
		"Seeds whose text is empty are kept and counted in the note (with bm25 their neighbours all score 0 and are the " +
		"catalog's first tools; the dense encoder embeds the empty text like any other)."
}

func (neighborsType) Validate(cfg any) error {
	c := cfg.(*neighborsConfig)
	switch c.embedder() {
	case "dense":
		if c.ModelDir == "" {
			return nodes.Errorf("model_dir", "Missing model_dir", "embedder = \"dense\" needs model_dir, a local BERT sentence-encoder directory (config.json, vocab.txt, model.safetensors).")
		}
	case "bm25":
		if c.ModelDir != "" {
			return nodes.Errorf("model_dir", "model_dir without a dense embedder", "model_dir is read only by embedder = \"dense\".")
		}
	default:
		return nodes.Errorf("embedder", "Unknown embedder", "%q is not an embedder; use \"dense\" or \"bm25\".", c.Embedder)
	}
	if p := c.pooling(); p != "mean" && p != "cls" {
		return nodes.Errorf("pooling", "Unknown pooling", "pooling is \"mean\" or \"cls\", not %q.", p)
	}
	if _, ok := neighborFields[c.field()]; !ok {
		return nodes.Errorf("field", "Unknown field", "field is description, tool_description, api_description or doc, not %q.", c.field())
	}
	if c.k() < 1 {
		return nodes.Errorf("k", "Invalid k", "k is the number of neighbours per seed, at least 1; got %d.", c.k())
	}
	if c.Seeds != nil && *c.Seeds < 1 {
		return nodes.Errorf("seeds", "Invalid seeds", "seeds is the number of anchor tools, at least 1; got %d.", *c.Seeds)
	}
	if c.Batch != nil && *c.Batch < 1 {
		return nodes.Errorf("batch", "Invalid batch", "batch must be at least 1; got %d.", *c.Batch)
	}
	return nil
}

// neighborsPinned is what Resolve fixed: the model directory and its
// files' digest, embed.Fingerprint (dense only).
type neighborsPinned struct {
	dir, digest string
}

// Resolve pins the model directory's files by digest (dense). Run loads
// the directory and fails when its files no longer have that digest.
func (neighborsType) Resolve(_ context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	c := r.Config().(*neighborsConfig)
	if c.embedder() != "dense" {
		return &nodes.Pinned{}, nil
	}
	dir := c.ModelDir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(r.Dir(), dir)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, nodes.Errorf("model_dir", "Model directory not found", "%s is not a directory: want a BERT sentence-encoder directory (config.json, vocab.txt, model.safetensors).", c.ModelDir)
	}
	d, err := embed.Fingerprint(dir)
	if err != nil {
		return nil, nodes.Errorf("model_dir", "Cannot read the model", "%s: %v", c.ModelDir, err)
	}
	return &nodes.Pinned{Identity: map[string]string{"model": d}, Value: neighborsPinned{dir: dir, digest: d}}, nil
}

func (t neighborsType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	in, err := r.Input(c.Catalog)
	if err != nil {
		return err
	}
	tools, err := artifacts.ReadAll[CatalogRow](in)
	if err != nil {
		return fmt.Errorf("catalog %s: %w", c.Catalog, err)
	}
	if len(tools) < 2 {
		return nodes.Errorf("catalog", "Catalog too small", "catalog %s has %d tools: a pool needs the seed and at least one other.", c.Catalog, len(tools))
	}
	if _, err := toolIndex(tools); err != nil {
		return err
	}
	n := len(tools)
	if c.Seeds != nil {
		n = *c.Seeds
		if n > len(tools) {
			return nodes.Errorf("seeds", "Too many seeds", "%d seeds asked of a catalog of %d tools (%s).", n, len(tools), c.Catalog)
		}
	}
	services := make([]string, len(tools))
	for i, tool := range tools {
		services[i] = ts.ServiceOf(tool.ToolName)
	}
	seeds, err := ts.StratifiedSeeds(services, n, c.seed())
	if err != nil {
		return fmt.Errorf("seeds: %w", err)
	}
	text := neighborFields[c.field()]
	texts := make([]string, len(tools))
	for i, tool := range tools {
		texts[i] = text(tool)
	}
	rank, err := t.ranker(ctx, r, c, texts)
	if err != nil {
		return err
	}
	k := min(c.k(), len(tools)-1)
	rows := make([]NeighborsRow, len(seeds))
	empty := 0
	for i, s := range seeds {
		if err := ctx.Err(); err != nil {
			return err
		}
		if texts[s] == "" {
			empty++
		}
		row := NeighborsRow{Seed: tools[s].ToolName, Service: services[s], Position: tools[s].Position, Pool: []string{tools[s].ToolName}, Scores: []float64{}}
		for _, h := range rank(s, k+overFetch) {
			if h.doc == s || len(row.Scores) == k {
				continue
			}
			row.Pool = append(row.Pool, tools[h.doc].ToolName)
			row.Scores = append(row.Scores, h.score)
		}
		rows[i] = row
		r.Progress(int64(i+1), int64(len(seeds)))
	}
	strata := map[string]bool{}
	for _, s := range services {
		strata[s] = true
	}
	r.Note("%d seeds from %d services of %d tools, pools of %d (seed + %d nearest by %s over %s); %d seeds with an empty %s", len(rows), len(strata), len(tools), k+1, k, c.embedder(), c.field(), empty, c.field())
	return t.Write(r, rows)
}

type hit struct {
	doc   int
	score float64
}

// ranker returns the function ranking the catalog for seed s (its top n,
// best first, ties by catalog position).
func (neighborsType) ranker(ctx context.Context, r nodes.Run, c *neighborsConfig, texts []string) (func(s, n int) []hit, error) {
	if c.embedder() == "bm25" {
		docs := make([][]string, len(texts))
		for i, t := range texts {
			docs[i] = bm25.Tokenize(t)
		}
		ix := bm25.New(docs, bm25.Options{})
		return func(s, n int) []hit {
			var out []hit
			for _, h := range ix.Top(docs[s], n) {
				out = append(out, hit{h.Doc, h.Score})
			}
			return out
		}, nil
	}
	p, ok := r.Pinned().(neighborsPinned)
	if !ok {
		return nil, fmt.Errorf("neighbors: the model directory was not resolved")
	}
	pool := embed.Mean
	if c.pooling() == "cls" {
		pool = embed.CLS
	}
	m, err := embed.Load(p.dir, pool)
	if err != nil {
		return nil, err
	}
	if d := m.Fingerprint(); d != p.digest {
		return nil, fmt.Errorf("model_dir %s changed since the plan (digest %s, now %s): run again", c.ModelDir, p.digest, d)
	}
	// The store's vector cache, shared with retrieve: a catalog is encoded
	// once for every node and rerun that uses the same model.
	cache, err := r.CacheDir("embed")
	if err != nil {
		return nil, err
	}
	vecs, err := m.EmbedCached(ctx, cache, texts, c.batch())
	var werr *embed.CacheWriteError
	if errors.As(err, &werr) {
		r.Logf("%v", werr)
	} else if err != nil {
		return nil, err
	}
	return func(s, n int) []hit {
		var out []hit
		for _, h := range embed.TopK(vecs[s], vecs, n) {
			out = append(out, hit{h.Doc, h.Score})
		}
		return out
	}, nil
}

// toolIndex maps each tool_name of a catalog to its row; a name twice is
// an error at the node's catalog attribute.
func toolIndex(tools []CatalogRow) (map[string]int, error) {
	ix := make(map[string]int, len(tools))
	for i, t := range tools {
		if j, ok := ix[t.ToolName]; ok {
			return nil, nodes.Errorf("catalog", "Duplicate tool", "tool %q is at rows %d and %d of the catalog: tool names must be unique.", t.ToolName, j+1, i+1)
		}
		ix[t.ToolName] = i
	}
	return ix, nil
}
