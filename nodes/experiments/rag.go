package experiments

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/lacuna-dev/lacuna/nodes/bundle"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/novelapibench/cells"
	"github.com/lacuna-dev/lacuna/runners/bm25"
	"github.com/lacuna-dev/lacuna/runners/embed"
)

// The generate node's retrievers (seed Appendix E.4, Figure 3): oracle
// prepends the task's own bundle; bm25 and dense retrieve chunks of the
// whole bundle pool and prepend those in its place.
const (
	RetrieverOracle = "oracle"
	RetrieverBM25   = "bm25"
	RetrieverDense  = "dense"
)

// The paper's real-retriever settings (Appendix E.4): top-5 chunks of 512
// tokens with 64 of overlap.
const (
	defaultTopK         = 5
	defaultChunkTokens  = 512
	defaultChunkOverlap = 64
)

// RetrievedChunk is one chunk a retriever prepended to a prompt, in the
// order prepended (best first).
type RetrievedChunk struct {
	// ChunkID is "<api_id>#<n>": the n-th chunk (from 0) of that API's
	// document in the pool.
	ChunkID string  `parquet:"chunk_id"`
	APIID   string  `parquet:"api_id"`
	Score   float64 `parquet:"score"`  // BM25 score, or cosine similarity (dense)
	Tokens  int32   `parquet:"tokens"` // the chunk's tokens as the chunker counted them (rag)
	// Text is what was prepended. The prompt holds it too; it is kept so
	// that a row's chunks read alone. It is cheap: in memory it is the
	// same string as the chunk, shared by every sample of the task, and
	// the output's columns are compressed.
	Text string `parquet:"text"`
}

// rag retrieves the knowledge of a generate node whose retriever is bm25
// or dense (seed Appendix E.4: one index over "the full Stage-2 bundle
// pool").
//
// Pool: every bundle of the pool input(s), sorted by api_id (then module
// and version), each rendered as the cell's parts (the part templates the
// oracle prepend uses) and cut into chunks (chunkText) of at most size
// tokens sharing at most overlap. When the parts may show examples (the
// cell has E, or its templates are overridden and might render them), the
// task's own bundle (same module, version and api_id) is rendered less the
// example the task was cut from, as the oracle leaves it out (it holds the
// task's answer): such a pool is one per API and example, the others one
// for every task. The query is the task as the prompt states it (its
// description, a blank line, the program with <MASK>); the topK chunks,
// best first (ties in pool order: bundles as sorted, chunks in document
// order), are joined by blank lines and prepended in place of the bundle.
//
// Tokens: one subword measure for both arms. With an embedder (required by
// dense, optional for bm25) it is the encoder's WordPiece
// (embed.Model.WordPieces, untruncated), a window holding size-2 pieces so
// that with [CLS] and [SEP] it is the size-token sequence the encoder sees:
// both arms then cut the same chunks. Without one (bm25 alone: no BERT
// vocabulary is available offline without a model) it is approxPieces, a
// fixed estimate of WordPiece's count. bm25 ranks with bm25.Index
// (BM25Okapi defaults) over bm25.Tokenize words, whatever counted the
// windows; dense ranks by exact cosine (embed.TopK) of vectors from
// embed.Model.EmbedCached, so a plan's embeddings serve the run and
// repeated runs; a plan embeds nothing (it reads the vectors the cache
// holds, and estimates the rest: PlanCalls). A query longer than the encoder's sequence is truncated,
// as Embed truncates. A window holds whole words: a single word longer
// than a window is a chunk of its own (the note counts them).
//
// A rag is used by one goroutine.
type rag struct {
	kind                string
	prompts             *cells.Prompts
	topK, size, overlap int
	model               *embed.Model        // counts tokens when set; embeds (dense)
	cache               string              // the embed cache directory (dense)
	perExample          bool                // the documents depend on the example left out
	examples            cells.ExampleLimits // what E shows of each bundle, as the oracle shows it
	// planning: embed nothing; a text not in the cache fails retrieve
	// with errNotEmbedded.
	planning bool

	counts                       map[string]int // tokens of a word
	pools, poolChunks, oversized int            // what was searched, for summary
}

type poolChunk struct {
	id, apiID, text string
	tokens          int
}

// ragHit is what retrieval chose for one task.
type ragHit struct {
	knowledge string
	chunks    []RetrievedChunk
}

// newRAG returns the retrieval of kind; overridden says the cell's
// templates are not the built-in ones. model is needed by dense.
func newRAG(kind string, prompts *cells.Prompts, overridden bool, topK, size, overlap int, model *embed.Model, cache string) *rag {
	g := &rag{kind: kind, prompts: prompts, topK: topK, size: size, overlap: overlap, model: model, cache: cache,
		perExample: overridden, counts: map[string]int{}}
	for _, p := range prompts.Cell().Parts {
		g.perExample = g.perExample || p == cells.E
	}
	if model != nil {
		g.size -= 2 // [CLS] and [SEP]
	}
	return g
}

// count is a word's tokens.
func (g *rag) count(w string) int {
	if n, ok := g.counts[w]; ok {
		return n
	}
	var n int
	if g.model != nil {
		n = len(g.model.WordPieces(w))
	} else {
		n = approxPieces(w)
	}
	g.counts[w] = n
	return n
}

// approxPieces estimates the WordPiece tokens of a whitespace-free word
// without a vocabulary, as BERT's basic tokenizer splits it: every
// punctuation or symbol character (and every Han ideograph) is one token;
// a run of letters, digits and marks is split into identifier parts at
// lower-to-upper case changes ("filterMap": filter, Map), before the last
// of several capitals followed by a lowercase letter ("HTTPServer": HTTP,
// Server) and between letters and digits, and each part counts one token
// per 5 characters begun. WordPiece keeps a common long word whole (this
// counts 3 for "documentation") and splits a rare short part, so the
// estimate holds only on average: over the Go sources of net/http and
// encoding/json and lacuna's DESIGN.md it counts 0.98 of
// all-MiniLM-L6-v2's (uncased BERT) word pieces, where bm25.Tokenize's
// words are 0.375 of them (a window of 512 such words is ~1,360 word
// pieces). The divisor 5 was chosen on other files (strings, sort, this
// README: 1.00). It is additive over whitespace-separated words, as
// chunkText needs.
func approxPieces(w string) int {
	rs := []rune(w)
	n, part := 0, 0
	flush := func() {
		n += (part + 4) / 5
		part = 0
	}
	for i, r := range rs {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)) || unicode.Is(unicode.Han, r) {
			flush()
			if !unicode.IsControl(r) {
				n++
			}
			continue
		}
		if part > 0 {
			prev := rs[i-1]
			next := rune(0)
			if i+1 < len(rs) {
				next = rs[i+1]
			}
			if (unicode.IsLower(prev) || unicode.IsDigit(prev)) && unicode.IsUpper(r) ||
				unicode.IsUpper(prev) && unicode.IsUpper(r) && unicode.IsLower(next) ||
				unicode.IsDigit(prev) != unicode.IsDigit(r) && !unicode.IsMark(r) {
				flush()
			}
		}
		part++
	}
	flush()
	return n
}

// query is what a task is retrieved by.
func ragQuery(t tasks.Row) string {
	return t.Description + "\n\n" + strings.TrimRight(t.Context, "\n")
}

// sameAPI says b is the bundle t was cut from.
func sameAPI(b bundle.Row, t tasks.Row) bool {
	return b.APIID == t.APIID && b.Module == t.Module && b.Version == t.Version
}

// retrieve returns, by task_id, the knowledge retrieval prepends to each
// task and its chunks. pool is every bundle of the pool, sorted (sortPool).
// Each pool is built, searched by its tasks and dropped in turn: only the
// hits are kept.
func (g *rag) retrieve(ctx context.Context, tks []tasks.Row, pool []bundle.Row) (map[string]ragHit, error) {
	if len(pool) == 0 {
		return nil, fmt.Errorf("retrieve: the pool holds no bundle")
	}
	base := make([][]poolChunk, len(pool)) // each bundle's chunks, no example left out
	for i, b := range pool {
		var err error
		if base[i], err = g.chunks(b, ""); err != nil {
			return nil, err
		}
	}
	// Tasks sharing a pool, in task order.
	groups := map[string][]tasks.Row{}
	var order []string
	for _, t := range tks {
		key := ""
		if g.perExample {
			key = t.Module + "\x00" + t.Version + "\x00" + t.APIID + "\x00" + t.Example
		}
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], t)
	}
	vecs := map[string][]float32{} // dense: by text
	if g.kind == RetrieverDense {
		var texts []string
		for _, cs := range base {
			for _, c := range cs {
				texts = append(texts, c.text)
			}
		}
		for _, t := range tks {
			texts = append(texts, ragQuery(t))
		}
		if err := g.embed(ctx, texts, vecs); err != nil {
			return nil, err
		}
	}
	toks := map[string][]string{} // bm25: by text
	out := make(map[string]ragHit, len(tks))
	for _, key := range order {
		ts := groups[key]
		var chunks []poolChunk
		for i, b := range pool {
			cs := base[i]
			// The task's own example holds its answer: left out of its
			// API's document, and of any other that shows it (an Example
			// function calling that API is its other_example).
			if g.perExample && (sameAPI(b, ts[0]) || showsExample(b, ts[0].Example)) {
				var err error
				if cs, err = g.chunks(b, ts[0].Example); err != nil {
					return nil, err
				}
			}
			chunks = append(chunks, cs...)
		}
		if len(chunks) == 0 {
			return nil, fmt.Errorf("retrieve: the pool's bundles render no knowledge to retrieve from")
		}
		g.pools++
		g.poolChunks += len(chunks)
		for _, c := range chunks {
			if c.tokens > g.size {
				g.oversized++
			}
		}
		hits, err := g.search(ctx, ts, chunks, toks, vecs)
		if err != nil {
			return nil, err
		}
		for i, t := range ts {
			out[t.TaskID] = hits[i]
		}
	}
	return out, nil
}

// search ranks chunks for each task. toks and vecs cache bm25 tokens and
// dense vectors by text across pools.
func (g *rag) search(ctx context.Context, tks []tasks.Row, chunks []poolChunk, toks map[string][]string, vecs map[string][]float32) ([]ragHit, error) {
	type hit struct {
		doc   int
		score float64
	}
	var rank func(t tasks.Row) []hit
	if g.kind == RetrieverBM25 {
		docs := make([][]string, len(chunks))
		for i, c := range chunks {
			if _, ok := toks[c.text]; !ok {
				toks[c.text] = bm25.Tokenize(c.text)
			}
			docs[i] = toks[c.text]
		}
		ix := bm25.New(docs, bm25.Options{})
		rank = func(t tasks.Row) (out []hit) {
			for _, h := range ix.Top(bm25.Tokenize(ragQuery(t)), g.topK) {
				out = append(out, hit{h.Doc, h.Score})
			}
			return out
		}
	} else {
		var texts []string
		for _, c := range chunks {
			texts = append(texts, c.text)
		}
		if err := g.embed(ctx, texts, vecs); err != nil { // the chunks of a document less an example
			return nil, err
		}
		docs := make([][]float32, len(chunks))
		for i, c := range chunks {
			docs[i] = vecs[c.text]
		}
		rank = func(t tasks.Row) (out []hit) {
			for _, h := range embed.TopK(vecs[ragQuery(t)], docs, g.topK) {
				out = append(out, hit{h.Doc, h.Score})
			}
			return out
		}
	}
	out := make([]ragHit, len(tks))
	for i, t := range tks {
		hits := rank(t)
		texts := make([]string, len(hits))
		rc := make([]RetrievedChunk, len(hits))
		for j, h := range hits {
			c := chunks[h.doc]
			texts[j] = c.text
			rc[j] = RetrievedChunk{ChunkID: c.id, APIID: c.apiID, Score: h.score, Tokens: int32(c.tokens), Text: c.text}
		}
		out[i] = ragHit{strings.Join(texts, "\n\n"), rc}
	}
	return out, nil
}

// errNotEmbedded is retrieve's error at plan when a text's vector is not
// in the embed cache.
var errNotEmbedded = errors.New("the pool is not embedded yet")

// embed adds to vecs the vectors of the texts it lacks: from the cache
// directory, encoding the missing ones (at plan, failing with
// errNotEmbedded instead).
func (g *rag) embed(ctx context.Context, texts []string, vecs map[string][]float32) error {
	var todo []string
	seen := map[string]bool{}
	for _, t := range texts {
		if _, ok := vecs[t]; !ok && !seen[t] {
			seen[t] = true
			todo = append(todo, t)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if g.planning {
		vs, ok := g.model.Cached(g.cache, todo)
		if !ok {
			return errNotEmbedded
		}
		for i, t := range todo {
			vecs[t] = vs[i]
		}
		return nil
	}
	vs, err := g.model.EmbedCached(ctx, g.cache, todo, runtime.GOMAXPROCS(0))
	if err != nil {
		return fmt.Errorf("retrieve: %w", err)
	}
	for i, t := range todo {
		vecs[t] = vs[i]
	}
	return nil
}

// showsExample reports whether bundle b holds a valid example named name.
func showsExample(b bundle.Row, name string) bool {
	for _, e := range b.Examples {
		if e.Valid && name != "" && e.Name == name {
			return true
		}
	}
	return false
}

// chunks are the chunks of b's document, less the example named leave.
func (g *rag) chunks(b bundle.Row, leave string) ([]poolChunk, error) {
	doc, err := g.prompts.Knowledge(CellBundle(b, leave, g.examples))
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", b.APIID, err)
	}
	var out []poolChunk
	for i, c := range chunkText(doc, g.size, g.overlap, g.count) {
		out = append(out, poolChunk{id: fmt.Sprintf("%s#%d", b.APIID, i), apiID: b.APIID, text: doc[c.Start:c.End], tokens: c.Tokens})
	}
	return out, nil
}

// summary says what the retrieval searched, for the node's note.
func (g *rag) summary() string {
	window := fmt.Sprintf("%d estimated word pieces", g.size)
	if g.model != nil {
		window = fmt.Sprintf("%d word pieces + [CLS] and [SEP]", g.size)
	}
	s := fmt.Sprintf("%s retrieval: the top %d chunks of %d pools of %.0f chunks on average (%s, %d overlap)",
		g.kind, g.topK, g.pools, float64(g.poolChunks)/float64(max(1, g.pools)), window, g.overlap)
	if g.oversized > 0 {
		s += fmt.Sprintf("; %d chunks are a single word longer than a window", g.oversized)
	}
	return s
}

// sortPool returns rows sorted by api_id, module and version: the pool's
// order. A bundle twice (a pool naming one bundle node twice) is an error.
func sortPool(rows []bundle.Row) ([]bundle.Row, error) {
	out := append([]bundle.Row(nil), rows...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.APIID != b.APIID {
			return a.APIID < b.APIID
		}
		if a.Module != b.Module {
			return a.Module < b.Module
		}
		return a.Version < b.Version
	})
	for i := 1; i < len(out); i++ {
		if sameBundle(out[i-1], out[i]) {
			return nil, fmt.Errorf("the pool holds bundle %s of %s %s twice", out[i].APIID, out[i].Module, out[i].Version)
		}
	}
	return out, nil
}

func sameBundle(a, b bundle.Row) bool {
	return a.APIID == b.APIID && a.Module == b.Module && a.Version == b.Version
}

var (
	embeddersMu sync.Mutex
	embedders   = map[string]*embed.Model{} // by embed.Fingerprint and pooling
	stamps      = map[string][2]string{}    // dir → its files' stamp, their fingerprint
)

// embedderFor returns the encoder in dir with pooling, loaded once per
// process for each content (embed.Fingerprint) and pooling, so that a
// sweep's nodes share the weights. The process fingerprints a directory
// again only when the name, size or modification time of a file in it
// changes (a sweep's nodes share one hashing of the weights). Safe for
// concurrent use.
func embedderFor(dir string, pooling embed.Pooling) (*embed.Model, error) {
	embeddersMu.Lock()
	defer embeddersMu.Unlock()
	stamp, err := dirStamp(dir)
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	fp := stamps[dir][1]
	if stamps[dir][0] != stamp {
		if fp, err = embed.Fingerprint(dir); err != nil {
			return nil, err
		}
		stamps[dir] = [2]string{stamp, fp}
	}
	key := fp + "\x00" + pooling.String()
	if m, ok := embedders[key]; ok {
		return m, nil
	}
	m, err := embed.Load(dir, pooling)
	if err != nil {
		return nil, err
	}
	if m.Fingerprint() != fp {
		delete(stamps, dir)
		return nil, fmt.Errorf("embed: %s changed while it was loaded", dir)
	}
	embedders[key] = m
	return m, nil
}

// dirStamp is the name, size and modification time of every file in dir.
func dirStamp(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", e.Name(), info.Size(), info.ModTime().UnixNano())
		}
	}
	return b.String(), nil
}
