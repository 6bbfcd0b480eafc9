package tasks

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/lacuna-dev/lacuna/nodes/bundle"
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
	Tokens  int32   `parquet:"tokens"` // bm25 words, or the encoder's word pieces without [CLS] and [SEP]
	Text    string  `parquet:"text"`   // what was prepended
}

// rag retrieves the knowledge of a generate node whose retriever is bm25
// or dense. The pool of a task (Appendix E.4: "the full Stage-2 bundle
// pool") is every bundle of the bundles input with the task's module and
// version, each rendered as the cell's parts (the part templates the oracle
// prepend uses), less the example the task was cut from in the task's own
// bundle, as the oracle leaves it out: it holds the task's answer. Each
// bundle's document is cut into chunks (chunkText) of at most size tokens
// sharing at most overlap; the query is the task as the prompt states it
// (its description, a blank line, the program with <MASK>); the topK
// chunks, best first (ties in pool order: bundles by api_id, chunks in
// document order), are joined by blank lines and prepended in place of the
// bundle.
//
// Tokens: bm25 counts bm25.Tokenize words and ranks with bm25.Index
// (BM25Okapi defaults); dense counts the embedder's own word pieces
// (embed.Model.Tokens), the window holding size-2 of them plus [CLS] and
// [SEP], so that size is the sequence the encoder sees (size may not exceed
// its max_seq_length), and ranks by exact cosine (embed.TopK); a query
// longer than that sequence is truncated, as embed.Model.Embed truncates.
// A window holds whole words: a single word longer than a window is a
// chunk of its own (the note counts them).
//
// A rag is used by one goroutine.
type rag struct {
	kind                string
	prompts             *cells.Prompts
	topK, size, overlap int
	model               *embedder // dense only

	hasE   bool
	counts map[string]int         // tokens of a word
	docs   map[string][]poolChunk // chunks of a bundle's document, by api_id and the example left out
	toks   map[string][]string    // bm25 tokens of a chunk, by text
	pools  map[string]*ragPool
}

// ragPool is the chunks of one pool and their index.
type ragPool struct {
	chunks []poolChunk
	bm25   *bm25.Index
	vecs   [][]float32
}

type poolChunk struct {
	id, apiID, text string
	tokens          int
}

func newRAG(kind string, prompts *cells.Prompts, topK, size, overlap int, model *embedder) *rag {
	g := &rag{kind: kind, prompts: prompts, topK: topK, size: size, overlap: overlap, model: model,
		counts: map[string]int{}, docs: map[string][]poolChunk{}, toks: map[string][]string{}, pools: map[string]*ragPool{}}
	for _, p := range prompts.Cell().Parts {
		g.hasE = g.hasE || p == cells.E
	}
	if kind == RetrieverDense {
		g.size -= 2 // [CLS] and [SEP]
	}
	return g
}

// count is a word's tokens for the retriever.
func (g *rag) count(w string) int {
	if n, ok := g.counts[w]; ok {
		return n
	}
	var n int
	if g.kind == RetrieverDense {
		n = len(g.model.m.Tokens(w)) - 2
	} else {
		n = len(bm25.Tokenize(w))
	}
	g.counts[w] = n
	return n
}

// query is what a task is retrieved by.
func ragQuery(t Row) string {
	return t.Description + "\n\n" + strings.TrimRight(t.Context, "\n")
}

// poolKey names a task's pool: its module and version, and, when the cell
// shows examples, its API and example (the one left out).
func (g *rag) poolKey(t Row) string {
	k := t.Module + "\x00" + t.Version
	if g.hasE {
		k += "\x00" + t.APIID + "\x00" + t.Example
	}
	return k
}

// pool builds (once) the chunks of a task's pool. bundles are every bundle,
// sorted by api_id.
func (g *rag) pool(t Row, bundles []bundle.Row) (*ragPool, error) {
	key := g.poolKey(t)
	if p, ok := g.pools[key]; ok {
		return p, nil
	}
	p := &ragPool{}
	for _, b := range bundles {
		if b.Module != t.Module || b.Version != t.Version {
			continue
		}
		leave := ""
		if b.APIID == t.APIID {
			leave = t.Example
		}
		chunks, err := g.chunks(b, leave)
		if err != nil {
			return nil, err
		}
		p.chunks = append(p.chunks, chunks...)
	}
	if len(p.chunks) == 0 {
		return nil, fmt.Errorf("the bundles hold no knowledge of %s %s to retrieve from", t.Module, t.Version)
	}
	if g.kind == RetrieverBM25 {
		docs := make([][]string, len(p.chunks))
		for i, c := range p.chunks {
			toks, ok := g.toks[c.text]
			if !ok {
				toks = bm25.Tokenize(c.text)
				g.toks[c.text] = toks
			}
			docs[i] = toks
		}
		p.bm25 = bm25.New(docs, bm25.Options{})
	}
	g.pools[key] = p
	return p, nil
}

// chunks are the chunks of b's document, less the example named leave.
func (g *rag) chunks(b bundle.Row, leave string) ([]poolChunk, error) {
	key := b.Module + "\x00" + b.Version + "\x00" + b.APIID + "\x00" + leave
	if out, ok := g.docs[key]; ok {
		return out, nil
	}
	doc, err := g.prompts.Knowledge(cellBundle(b, leave))
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", b.APIID, err)
	}
	var out []poolChunk
	for i, c := range chunkText(doc, g.size, g.overlap, g.count) {
		out = append(out, poolChunk{id: fmt.Sprintf("%s#%d", b.APIID, i), apiID: b.APIID, text: doc[c.Start:c.End], tokens: c.Tokens})
	}
	g.docs[key] = out
	return out, nil
}

// prepare builds the pools of tasks and, for dense, embeds every chunk and
// query not embedded yet, in one batch.
func (g *rag) prepare(ctx context.Context, tasks []Row, bundles []bundle.Row) error {
	var texts []string
	for _, t := range tasks {
		p, err := g.pool(t, bundles)
		if err != nil {
			return fmt.Errorf("task %s: retrieve: %w", t.TaskID, err)
		}
		if g.kind == RetrieverDense {
			texts = append(texts, ragQuery(t))
			for _, c := range p.chunks {
				texts = append(texts, c.text)
			}
		}
	}
	if g.kind == RetrieverDense {
		if err := g.model.embed(ctx, texts); err != nil {
			return fmt.Errorf("retrieve: %w", err)
		}
		for _, p := range g.pools {
			if p.vecs == nil {
				for _, c := range p.chunks {
					p.vecs = append(p.vecs, g.model.vec(c.text))
				}
			}
		}
	}
	return nil
}

// retrieve returns the knowledge to prepend for t, and what it holds.
// prepare must have seen t.
func (g *rag) retrieve(t Row) (string, []RetrievedChunk) {
	p := g.pools[g.poolKey(t)]
	type hit struct {
		doc   int
		score float64
	}
	var hits []hit
	if g.kind == RetrieverBM25 {
		for _, h := range p.bm25.Top(bm25.Tokenize(ragQuery(t)), g.topK) {
			hits = append(hits, hit{h.Doc, h.Score})
		}
	} else {
		for _, h := range embed.TopK(g.model.vec(ragQuery(t)), p.vecs, g.topK) {
			hits = append(hits, hit{h.Doc, h.Score})
		}
	}
	texts := make([]string, len(hits))
	out := make([]RetrievedChunk, len(hits))
	for i, h := range hits {
		c := p.chunks[h.doc]
		texts[i] = c.text
		out[i] = RetrievedChunk{ChunkID: c.id, APIID: c.apiID, Score: h.score, Tokens: int32(c.tokens), Text: c.text}
	}
	return strings.Join(texts, "\n\n"), out
}

// summary says what the retrieval searched, for the node's note.
func (g *rag) summary() string {
	chunks, oversized := 0, 0
	for _, p := range g.pools {
		chunks += len(p.chunks)
		for _, c := range p.chunks {
			if c.tokens > g.size {
				oversized++
			}
		}
	}
	window := fmt.Sprintf("%d tokens", g.size)
	if g.kind == RetrieverDense {
		window = fmt.Sprintf("%d word pieces + [CLS] and [SEP]", g.size)
	}
	s := fmt.Sprintf("%s retrieval: the top %d chunks of %d pools of %.0f chunks on average (%s, %d overlap)",
		g.kind, g.topK, len(g.pools), float64(chunks)/float64(max(1, len(g.pools))), window, g.overlap)
	if oversized > 0 {
		s += fmt.Sprintf("; %d chunks are a single word longer than a window", oversized)
	}
	return s
}

// sortedBundles returns rows sorted by api_id: the pool's order.
func sortedBundles(rows []bundle.Row) []bundle.Row {
	out := append([]bundle.Row(nil), rows...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].APIID < out[j].APIID })
	return out
}

// embedder is a loaded dense encoder and the embeddings it has computed,
// by text. It is shared by every generate node of the process using the
// same model files and pooling (embedderFor), so that a sweep loads the
// weights once and a plan's embeddings serve the run; safe for concurrent
// use. The embeddings are kept for the life of the process.
type embedder struct {
	m *embed.Model

	mu   sync.Mutex
	vecs map[string][]float32
}

// embed computes the embeddings of the texts not computed yet.
func (e *embedder) embed(ctx context.Context, texts []string) error {
	e.mu.Lock()
	var todo []string
	seen := map[string]bool{}
	for _, t := range texts {
		if _, ok := e.vecs[t]; !ok && !seen[t] {
			seen[t] = true
			todo = append(todo, t)
		}
	}
	e.mu.Unlock()
	vecs, err := e.m.Embed(ctx, todo, runtime.GOMAXPROCS(0))
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, t := range todo {
		e.vecs[t] = vecs[i]
	}
	return nil
}

// vec is the embedding of a text embed has computed.
func (e *embedder) vec(text string) []float32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.vecs[text]
}

var (
	embeddersMu sync.Mutex
	embedders   = map[string]*embedder{} // by model digest and pooling
)

// embedderFor returns the encoder in dir, loaded once per process for each
// digest (embedderDigest) and pooling.
func embedderFor(dir, digest string, pooling embed.Pooling) (*embedder, error) {
	embeddersMu.Lock()
	defer embeddersMu.Unlock()
	key := digest + "\x00" + pooling.String()
	if e, ok := embedders[key]; ok {
		return e, nil
	}
	m, err := embed.Load(dir, pooling)
	if err != nil {
		return nil, err
	}
	// The files may have changed between hashing and loading.
	if d, err := hashEmbedder(dir); err != nil || d != digest {
		return nil, fmt.Errorf("embed: %s changed while it was loaded", dir)
	}
	e := &embedder{m: m, vecs: map[string][]float32{}}
	embedders[key] = e
	return e, nil
}

// embedderFiles are the files embed.Load reads.
var embedderFiles = []string{"config.json", "vocab.txt", "model.safetensors", "tokenizer_config.json", "sentence_bert_config.json"}

var (
	digestsMu sync.Mutex
	digests   = map[string][2]string{} // dir → the files' stamp, their digest
)

// embedderDigest identifies the model in dir by the content of the files
// embed.Load reads (name, length and bytes of each that exists), not by its
// path: a moved directory keeps its digest, an edited one changes it. The
// process hashes a directory again only when a file's size or modification
// time changes (a sweep's nodes share one hashing of the weights).
func embedderDigest(dir string) (string, error) {
	var stamp strings.Builder
	for _, name := range embedderFiles {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil {
			fmt.Fprintf(&stamp, "%s %d %d\n", name, st.Size(), st.ModTime().UnixNano())
		}
	}
	digestsMu.Lock()
	defer digestsMu.Unlock()
	if d, ok := digests[dir]; ok && d[0] == stamp.String() {
		return d[1], nil
	}
	d, err := hashEmbedder(dir)
	if err == nil {
		digests[dir] = [2]string{stamp.String(), d}
	}
	return d, err
}

func hashEmbedder(dir string) (string, error) {
	h := xxhash.New()
	for _, name := range embedderFiles {
		f, err := os.Open(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("embed: %w", err)
		}
		st, err := f.Stat()
		if err == nil {
			fmt.Fprintf(h, "%s\x00%d\x00", name, st.Size())
			_, err = io.Copy(h, f)
		}
		f.Close()
		if err != nil {
			return "", fmt.Errorf("embed: %s: %w", filepath.Join(dir, name), err)
		}
	}
	return fmt.Sprintf("%016x", h.Sum64()), nil
}
