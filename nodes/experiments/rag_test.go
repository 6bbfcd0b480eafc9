package experiments

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/bundle"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/novelapibench/cells"
	"github.com/lacuna-dev/lacuna/runners/embed"
)

// ragBundles are three APIs of one module version and three of another
// module, one of whose prose repeats the target's.
var ragBundles = []bundle.Row{
	{Module: "example.com/m", Version: "v1.0.0", APIID: "m.Push", Qualified: "m.Push", MProse: "push adds an item to the stack",
		Examples: []bundle.Example{{Name: "ExamplePush", Code: "push example", Valid: true}}},
	{Module: "example.com/m", Version: "v1.0.0", APIID: "m.Clamp", Qualified: "m.Clamp", MProse: "clamp limits a value to a range",
		Examples: []bundle.Example{{Name: "ExampleClamp", Code: "secret answer code", Valid: true}, {Name: "ExampleClamp_second", Code: "other example", Valid: true}}},
	{Module: "example.com/m", Version: "v1.0.0", APIID: "m.Pop", Qualified: "m.Pop", MProse: "pop removes an item from the stack"},
	{Module: "example.com/other", Version: "v1.0.0", APIID: "other.Clamp", Qualified: "other.Clamp", MProse: "clamp limits a value to a range"},
	{Module: "example.com/other", Version: "v1.0.0", APIID: "other.Sort", Qualified: "other.Sort", MProse: "sort orders items"},
	{Module: "example.com/other", Version: "v1.0.0", APIID: "other.Len", Qualified: "other.Len", MProse: "len counts items"},
}

var ragTask = tasks.Row{TaskID: "t1", APIID: "m.Clamp", Module: "example.com/m", Version: "v1.0.0", Example: "ExampleClamp",
	Description: "Limit a value to a range", Context: "x := <MASK>\n"}

// ragVocab is every word piece of the bundles' M_prose documents and of
// the task's query.
var ragVocab = strings.Fields("# documentation ( m _ prose ) clamp limits a value to range push adds an item the stack pop removes from sort orders items len counts limit x : = < mask >")

// newTestRAG is a retrieval of cell with the built-in templates, or with
// over replacing them by file name.
func newTestRAG(t *testing.T, kind, cell string, over map[string]cells.Source, topK, size, overlap int, model *embed.Model, cache string) *rag {
	t.Helper()
	c, err := cells.Lookup(cell)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cells.New(c, over)
	if err != nil {
		t.Fatal(err)
	}
	return newRAG(kind, p, over != nil, topK, size, overlap, model, cache)
}

// retrieveAll retrieves for tasks from ragBundles.
func retrieveAll(t *testing.T, g *rag, tasks ...tasks.Row) map[string]ragHit {
	t.Helper()
	pool, err := sortPool(ragBundles)
	if err != nil {
		t.Fatal(err)
	}
	hits, err := g.retrieve(context.Background(), tasks, pool)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func testEmbedder(t *testing.T, maxSeq int) *embed.Model {
	t.Helper()
	m, err := embedderFor(WriteBagOfWordsBERT(t, ragVocab, maxSeq), embed.Mean)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ids(hits []RetrievedChunk) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ChunkID)
	}
	return out
}

// docsOf joins the text of every chunk retrieved, by api_id.
func docsOf(hits []RetrievedChunk) map[string]string {
	docs := map[string]string{}
	for _, c := range hits {
		docs[c.APIID] += c.Text
	}
	return docs
}

func TestRAGSearchesTheWholePoolBestFirst(t *testing.T) {
	model := testEmbedder(t, 64)
	for _, c := range []struct {
		kind       string
		model      *embed.Model
		topK       int
		want       []string
		wantTokens int32 // of m.Clamp#0
	}{
		// m.Clamp and other.Clamp (another module: the pool is every
		// bundle) share the most with the query and tie, in pool order.
		// BM25 tokens: approxPieces ("##" 2, "Documentation" 3,
		// "(M_prose)" 5, "limits" 2).
		{RetrieverBM25, nil, 2, []string{"m.Clamp#0", "other.Clamp#0"}, 18},
		// The bag-of-words encoder ranks by shared pieces; its tokens
		// are word pieces ("##" is two, "(M_prose)" five).
		{RetrieverDense, model, 2, []string{"m.Clamp#0", "other.Clamp#0"}, 15},
	} {
		t.Run(c.kind, func(t *testing.T) {
			g := newTestRAG(t, c.kind, "M_prose", nil, c.topK, 64, 8, c.model, t.TempDir())
			h := retrieveAll(t, g, ragTask)[ragTask.TaskID]
			if got := ids(h.chunks); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("retrieved %v, want %v", got, c.want)
			}
			if h.chunks[0].Tokens != c.wantTokens || h.chunks[0].APIID != "m.Clamp" {
				t.Errorf("top chunk %+v, want %d tokens of m.Clamp", h.chunks[0], c.wantTokens)
			}
			var texts []string
			for i, rc := range h.chunks {
				texts = append(texts, rc.Text)
				if i > 0 && rc.Score > h.chunks[i-1].Score {
					t.Errorf("scores not best first: %v", h.chunks)
				}
			}
			if want := strings.Join(texts, "\n\n"); h.knowledge != want || !strings.HasPrefix(h.knowledge, "## Documentation (M_prose)\nclamp limits a value to a range\n\n") {
				t.Errorf("knowledge %q, want the chunks joined by blank lines, %q", h.knowledge, want)
			}
		})
	}
}

func TestRAGPoolLeavesOutEachTasksOwnExampleOnly(t *testing.T) {
	// S.tmpl overridden to render the examples: the documents depend on
	// the example left out although the cell has no E.
	over := map[string]cells.Source{"S.tmpl": {Path: "over/S.tmpl", Data: []byte("## S {{.Signature}}{{range .Examples}}\n{{.Code}}{{end}}")}}
	other := ragTask
	other.TaskID, other.Example = "t2", "ExampleClamp_second"
	for _, c := range []struct {
		name string
		cell string
		over map[string]cells.Source
	}{
		{"cell with E", "S+E", nil},
		{"overridden templates", "S", over},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newTestRAG(t, RetrieverBM25, c.cell, c.over, 100, 512, 64, nil, "")
			hits := retrieveAll(t, g, ragTask, other)
			first, second := docsOf(hits[ragTask.TaskID].chunks), docsOf(hits[other.TaskID].chunks)
			if len(first) != 6 || len(second) != 6 {
				t.Errorf("the pools hold %d and %d APIs' chunks, want the 6 of every bundle", len(first), len(second))
			}
			// Each task's pool lacks its own example and keeps the other.
			if strings.Contains(first["m.Clamp"], "secret answer code") || !strings.Contains(first["m.Clamp"], "other example") {
				t.Errorf("the first task's document of its API:\n%s", first["m.Clamp"])
			}
			if !strings.Contains(second["m.Clamp"], "secret answer code") || strings.Contains(second["m.Clamp"], "other example") {
				t.Errorf("the second task's document of its API:\n%s", second["m.Clamp"])
			}
			if !strings.Contains(first["m.Push"], "push example") {
				t.Errorf("another API's example is missing:\n%s", first["m.Push"])
			}
			if g.pools != 2 {
				t.Errorf("%d pools, want one per API and example", g.pools)
			}
		})
	}
}

func TestRAGChunkIDsNumberEachAPIsWindows(t *testing.T) {
	// 12-token windows with 3 of overlap: the heading is 10 tokens, so
	// each document is two windows.
	g := newTestRAG(t, RetrieverBM25, "M_prose", nil, 1, 12, 3, nil, "")
	h := retrieveAll(t, g, ragTask)[ragTask.TaskID]
	if ids := ids(h.chunks); !reflect.DeepEqual(ids, []string{"m.Clamp#1"}) {
		t.Errorf("top chunk %v, want m.Clamp#1", ids)
	}
	if h.chunks[0].Text != "clamp limits a value to a range" || h.chunks[0].Tokens != 8 {
		t.Errorf("m.Clamp#1 is %q (%d tokens)", h.chunks[0].Text, h.chunks[0].Tokens)
	}
	if g.pools != 1 || g.poolChunks != 12 {
		t.Errorf("%d pools of %d chunks, want 1 of 12", g.pools, g.poolChunks)
	}
}

func TestEmbedderForFollowsContentNotPath(t *testing.T) {
	fp := func(dir string) string {
		m, err := embedderFor(dir, embed.Mean)
		if err != nil {
			t.Fatal(err)
		}
		return m.Fingerprint()
	}
	a, b, c := WriteBagOfWordsBERT(t, ragVocab, 64), WriteBagOfWordsBERT(t, ragVocab, 64), WriteBagOfWordsBERT(t, ragVocab, 32)
	if fa, fb, fc := fp(a), fp(b), fp(c); fa != fb || fa == fc {
		t.Errorf("fingerprints %s %s %s: want the same for the same files in two directories, another for other files", fa, fb, fc)
	}
	// An edit is seen by the next call.
	before := fp(a)
	if err := os.WriteFile(filepath.Join(a, "tokenizer_config.json"), []byte(`{"do_lower_case": true, "edited": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if fp(a) == before {
		t.Error("the fingerprint did not follow an edit")
	}
}

// The dense chunker counts words alone; that is exact only because the
// encoder's basic tokenizer splits at every whitespace the chunker splits
// at before it splits punctuation and word pieces. A word is counted
// whole, however long: Tokens truncates to the encoder's sequence.
func TestDenseChunkTokensAreTheEncodersOnWholeText(t *testing.T) {
	model := testEmbedder(t, 8)
	for _, text := range []string{
		"## Documentation (M_prose)\nClamp\u00a0limits a\tvalue to a Range: x := <MASK>; café\u3000push",
		"a.a.a.a.a.a.a.a.a", // 17 pieces in one word, past the 6 of a sequence
	} {
		g := newTestRAG(t, RetrieverDense, "M_prose", nil, 1, 1<<20, 0, model, "")
		n := 0
		for _, ch := range chunkText(text, 1<<20, 0, g.count) {
			n += ch.Tokens
		}
		if want := len(model.WordPieces(text)); n != want || want <= 6 {
			t.Errorf("%q: chunk word pieces %d, the encoder's on the whole text %d (want more than its 6)", text, n, want)
		}
	}
}

// bm25 given an embedder cuts the windows dense cuts.
func TestBM25WithAnEmbedderCountsItsWordPieces(t *testing.T) {
	model := testEmbedder(t, 64)
	chunks := func(kind string) []string {
		g := newTestRAG(t, kind, "M_prose", nil, 100, 8, 2, model, t.TempDir())
		var out []string
		for _, c := range retrieveAll(t, g, ragTask)[ragTask.TaskID].chunks {
			out = append(out, fmt.Sprintf("%s %d %q", c.ChunkID, c.Tokens, c.Text))
		}
		sort.Strings(out)
		return out
	}
	if bm, dense := chunks(RetrieverBM25), chunks(RetrieverDense); !reflect.DeepEqual(bm, dense) || len(bm) < 8 {
		t.Errorf("bm25's chunks\n%q\ndense's\n%q", bm, dense)
	}
}

// Dense vectors go to the cache directory: a plan's serve the run.
func TestDenseRetrievalCachesVectorsOnDisk(t *testing.T) {
	model := testEmbedder(t, 64)
	cache := t.TempDir()
	g := newTestRAG(t, RetrieverDense, "M_prose", nil, 2, 64, 8, model, cache)
	first := retrieveAll(t, g, ragTask)
	var files int
	if err := filepath.WalkDir(cache, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if files != 6 { // the 5 texts of the 6 bundles' chunks and the query
		t.Errorf("%d vectors cached, want 6", files)
	}
	g = newTestRAG(t, RetrieverDense, "M_prose", nil, 2, 64, 8, model, cache)
	if again := retrieveAll(t, g, ragTask); !reflect.DeepEqual(first, again) {
		t.Errorf("retrieval from the cache differs:\n%+v\n%+v", first, again)
	}
}

func TestApproxPieces(t *testing.T) {
	for _, c := range []struct {
		word string
		want int
	}{
		{"clamp", 1},
		{"documentation", 3}, // one per 5 characters begun
		{"(M_prose)", 5},     // punctuation one each
		{"filterMap", 3},     // filter 2, Map 1
		{"HTTPServer", 3},
		{"x2y", 3},
		{"nai\u0308ve", 2}, // a combining mark joins its letter: 6 characters
		{"utf8", 2},
		{"x:=<MASK>;", 7},
		{"café", 1},
		{"日本", 2},
		{"", 0},
	} {
		if got := approxPieces(c.word); got != c.want {
			t.Errorf("approxPieces(%q) = %d, want %d", c.word, got, c.want)
		}
	}
}
