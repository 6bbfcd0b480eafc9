package toolsense

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/runners/bm25"
	"github.com/lacuna-dev/lacuna/runners/embed"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

func init() { nodes.Register(retrieveType{}) }

// retrieveConfig:
//
//	node "retrieve" "bm25" {
//	  catalog   = node.catalog.rrb
//	  queries   = node.import.retrieval
//	  retriever = "bm25"
//	  k         = 50
//	}
//
//	node "retrieve" "dense" {
//	  catalog   = node.catalog.rrb
//	  queries   = node.import.retrieval
//	  retriever = "dense"
//	  model_dir = var.embed_model   # a sentence-transformers BERT directory
//	  pooling   = "mean"            # or "cls"
//	}
type retrieveConfig struct {
	Catalog nodes.Ref `hcl:"catalog"`
	// Queries is an RRB table: sample_id, query, tool (an answer tool
	// object or a list of them) and complexity.
	Queries   nodes.Ref `hcl:"queries"`
	Retriever string    `hcl:"retriever"`
	K         *int      `hcl:"k,optional"`
	// ModelDir is the dense encoder's directory (runners/embed.Load),
	// relative to the pipeline file; Resolve pins its files' digest.
	ModelDir *string `hcl:"model_dir,optional" path:"dir"`
	// Pooling is "mean" (default) or "cls".
	Pooling *string `hcl:"pooling,optional"`
	// Batch is how many texts are encoded at once (default GOMAXPROCS);
	// it does not change the vectors.
	Batch *int `hcl:"batch,optional"`
}

var poolings = map[string]embed.Pooling{"mean": embed.Mean, "cls": embed.CLS}

func (c *retrieveConfig) pooling() string {
	if c.Pooling == nil {
		return "mean"
	}
	return *c.Pooling
}

const defaultK = 50

func (c *retrieveConfig) k() int {
	if c.K == nil {
		return defaultK
	}
	return *c.K
}

// RetrieveRow is one query's ranking.
type RetrieveRow struct {
	SampleID  string `parquet:"sample_id"`
	Tier      string `parquet:"tier"`
	Query     string `parquet:"query"`
	Retriever string `parquet:"retriever"`
	// Answers are the query's answer tool_names, as the RRB row gives them.
	Answers []string `parquet:"answers,list"`
	// AnswersNotInCatalog counts the answers the catalog lacks: such a
	// query stays in the output (and in the evaluation, where those
	// answers can never be retrieved) and is counted in the note.
	AnswersNotInCatalog int64 `parquet:"answers_not_in_catalog"`
	// Ranked are the top k tool_names, best first; Scores theirs.
	Ranked []string  `parquet:"ranked,list"`
	Scores []float64 `parquet:"scores,list"`
}

type retrieveType struct {
	nodes.Static[retrieveConfig, RetrieveRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = retrieveType{}
	_ nodes.Documented = retrieveType{}
	_ nodes.Validator  = retrieveType{}
	_ nodes.Resolver   = retrieveType{}
)

func (retrieveType) Name() string    { return "retrieve" }
func (retrieveType) Version() string { return "1" }
func (retrieveType) Doc() string {
	return "Ranks a catalog's tools for each query of an RRB table (sample_id, query, tool, complexity) and keeps the top `k` " +
		"(default 50) with their scores. retriever = \"bm25\": BM25Okapi with rank_bm25's defaults (runners/bm25) over " +
		"DocText(tool) = tool_title, api_title, tool_description, api_description joined by spaces (missing fields skipped), " +
		"tokenized by bm25.Tokenize. retriever = \"dense\": exact cosine similarity between runners/embed sentence embeddings " +
		"(L2-normalised, `pooling` \"mean\" or \"cls\") of the query and of the same DocText, with the BERT encoder in " +
		"`model_dir` (config.json, vocab.txt, model.safetensors; its files' digest is in the key; vectors are cached per model " +
		"and text under the store, so a catalog is embedded once; `batch` texts at once, default GOMAXPROCS). Ties go to " +
		"the earlier catalog position. Rows whose answers are not all in the catalog are kept with answers_not_in_catalog " +
		"set and counted in the note."
}

func (retrieveType) Validate(cfg any) error {
	c := cfg.(*retrieveConfig)
	switch c.Retriever {
	case "bm25":
		for _, a := range []struct {
			name string
			set  bool
		}{{"model_dir", c.ModelDir != nil}, {"pooling", c.Pooling != nil}, {"batch", c.Batch != nil}} {
			if a.set {
				return nodes.Errorf(a.name, "Attribute only for dense retrieval", "%s applies to retriever = \"dense\", not %q.", a.name, c.Retriever)
			}
		}
	case "dense":
		if c.ModelDir == nil || *c.ModelDir == "" {
			return nodes.Errorf("retriever", "Missing model_dir", "retriever = \"dense\" needs model_dir, a sentence-transformers BERT directory (config.json, vocab.txt, model.safetensors); `make toolsense` finds all-MiniLM-L6-v2's.")
		}
		if _, ok := poolings[c.pooling()]; !ok {
			return nodes.Errorf("pooling", "Unknown pooling", "%q is not a pooling; use \"mean\" or \"cls\".", c.pooling())
		}
		if c.Batch != nil && *c.Batch < 1 {
			return nodes.Errorf("batch", "Invalid batch", "batch is how many texts are encoded at once, at least 1; got %d.", *c.Batch)
		}
	default:
		return nodes.Errorf("retriever", "Unknown retriever", "%q is not a retriever; use \"bm25\" or \"dense\" (model retrieval is not built yet).", c.Retriever)
	}
	if c.k() < 1 {
		return nodes.Errorf("k", "Invalid k", "k is the number of tools kept per query, at least 1; got %d.", c.k())
	}
	return nil
}

// Resolve loads the dense retriever's model, once per run: its
// Fingerprint (the digest of the files Load read) enters the key, and the
// loaded model is what Run encodes with, so the key always describes the
// weights used. A missing or unusable directory is an error at model_dir.
func (retrieveType) Resolve(_ context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	c := r.Config().(*retrieveConfig)
	if c.Retriever != "dense" {
		return nil, nil
	}
	dir := *c.ModelDir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(r.Dir(), dir)
	}
	m, err := embed.Load(dir, poolings[c.pooling()])
	if err != nil {
		return nil, nodes.Errorf("model_dir", "Cannot load the embedding model", "%v", err)
	}
	return &nodes.Pinned{Identity: map[string]string{"model": m.Fingerprint()}, Value: m}, nil
}

func (t retrieveType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	cin, err := r.Input(c.Catalog)
	if err != nil {
		return err
	}
	tools, err := artifacts.ReadAll[CatalogRow](cin)
	if err != nil {
		return fmt.Errorf("catalog %s: %w", c.Catalog, err)
	}
	if len(tools) == 0 {
		return fmt.Errorf("catalog %s has no tools", c.Catalog)
	}
	qin, err := r.Input(c.Queries)
	if err != nil {
		return err
	}
	cols, err := columns(qin, "sample_id", "query", "tool", "complexity")
	if err != nil {
		return fmt.Errorf("queries %s: %w", c.Queries, err)
	}
	inCatalog := map[string]bool{}
	for _, tool := range tools {
		inCatalog[tool.ToolName] = true
	}
	rows := make([]RetrieveRow, len(cols))
	queries := make([]string, len(cols))
	flagged := 0
	for i, v := range cols {
		row := RetrieveRow{SampleID: text(v[0]), Query: text(v[1]), Tier: text(v[3]), Retriever: c.Retriever, Answers: []string{}}
		answers, err := ts.DecodeTools([]byte(text(v[2])))
		if err != nil {
			return fmt.Errorf("queries %s row %d (sample_id %s) tool: %w", c.Queries, i+1, row.SampleID, err)
		}
		for _, tool := range answers {
			if tool.ToolName == nil || *tool.ToolName == "" || *tool.ToolName == "None" {
				return fmt.Errorf("queries %s row %d (sample_id %s): an answer tool has no tool_name", c.Queries, i+1, row.SampleID)
			}
			row.Answers = append(row.Answers, *tool.ToolName)
			if !inCatalog[*tool.ToolName] {
				row.AnswersNotInCatalog++
			}
		}
		if row.AnswersNotInCatalog > 0 {
			flagged++
		}
		rows[i], queries[i] = row, row.Query
	}
	var ranked [][]scored
	unstored := 0
	switch c.Retriever {
	case "bm25":
		ranked, err = rankBM25(ctx, r, tools, queries, c.k())
	case "dense":
		ranked, unstored, err = rankDense(ctx, r, c, tools, queries)
	}
	if err != nil {
		return err
	}
	for i := range rows {
		rows[i].Ranked = make([]string, len(ranked[i]))
		rows[i].Scores = make([]float64, len(ranked[i]))
		for j, h := range ranked[i] {
			rows[i].Ranked[j], rows[i].Scores[j] = tools[h.doc].ToolName, h.score
		}
	}
	note := fmt.Sprintf("%d queries over %d tools, top %d by %s; %d queries with answers not in the catalog (kept, flagged)", len(rows), len(tools), c.k(), c.Retriever, flagged)
	if unstored > 0 {
		note += fmt.Sprintf("; %d vectors not cached (see the log)", unstored)
	}
	r.Note("%s", note)
	return t.Write(r, rows)
}

// scored is a ranked catalog position and its score.
type scored struct {
	doc   int
	score float64
}

// rankBM25 returns each query's top k tools by BM25 over DocText.
func rankBM25(ctx context.Context, r nodes.Run, tools []CatalogRow, queries []string, k int) ([][]scored, error) {
	docs := make([][]string, len(tools))
	for i, tool := range tools {
		docs[i] = bm25.Tokenize(ts.DocText(tool))
	}
	ix := bm25.New(docs, bm25.Options{})
	out := make([][]scored, len(queries))
	nodes.WorkOf(r).Total("queries", len(queries))
	for i, q := range queries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, h := range ix.Top(bm25.Tokenize(q), k) {
			out[i] = append(out[i], scored{h.Doc, h.Score})
		}
		r.Progress(int64(i+1), int64(len(queries)))
	}
	return out, nil
}

// embedChunk is how many texts rankDense embeds between progress reports.
const embedChunk = 256

// rankDense returns each query's top k tools by cosine similarity of their
// embeddings with the model Resolve loaded; vectors come from and go to the
// store's "embed" cache directory. Vectors it could not store (a full
// disk) are still used: it counts them and logs why.
func rankDense(ctx context.Context, r nodes.Run, c *retrieveConfig, tools []CatalogRow, queries []string) ([][]scored, int, error) {
	m := r.Pinned().(*embed.Model)
	cache, err := r.CacheDir("embed")
	if err != nil {
		return nil, 0, err
	}
	batch := runtime.GOMAXPROCS(0)
	if c.Batch != nil {
		batch = *c.Batch
	}
	texts := make([]string, 0, len(tools)+len(queries))
	for _, tool := range tools {
		texts = append(texts, ts.DocText(tool))
	}
	texts = append(texts, queries...)
	vecs := make([][]float32, 0, len(texts))
	unstored := 0
	nodes.WorkOf(r).Total("texts", len(texts))
	for start := 0; start < len(texts); start += embedChunk {
		v, err := m.EmbedCached(ctx, cache, texts[start:min(start+embedChunk, len(texts))], batch)
		var werr *embed.CacheWriteError
		if errors.As(err, &werr) {
			unstored += werr.Unstored
			r.Logf("%v", werr)
		} else if err != nil {
			return nil, 0, err
		}
		vecs = append(vecs, v...)
		r.Progress(int64(len(vecs)), int64(len(texts)))
		r.Status("embedded %d/%d texts (%d tools, %d queries)", len(vecs), len(texts), len(tools), len(queries))
	}
	docs := vecs[:len(tools)]
	out := make([][]scored, len(queries))
	for i, q := range vecs[len(tools):] {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		for _, h := range embed.TopK(q, docs, c.k()) {
			out[i] = append(out[i], scored{h.Doc, h.Score})
		}
	}
	return out, unstored, nil
}
