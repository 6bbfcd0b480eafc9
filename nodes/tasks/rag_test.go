package tasks

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/bundle"
	"github.com/lacuna-dev/lacuna/novelapibench/cells"
	"github.com/lacuna-dev/lacuna/runners/embed"
)

// ragBundles are three APIs of one module version and one of another
// module whose prose repeats the target's.
var ragBundles = []bundle.Row{
	{Module: "example.com/m", Version: "v1.0.0", APIID: "m.Push", Qualified: "m.Push", MProse: "push adds an item to the stack",
		Examples: []bundle.Example{{Name: "ExamplePush", Code: "push example", Valid: true}}},
	{Module: "example.com/m", Version: "v1.0.0", APIID: "m.Clamp", Qualified: "m.Clamp", MProse: "clamp limits a value to a range",
		Examples: []bundle.Example{{Name: "ExampleClamp", Code: "secret answer code", Valid: true}, {Name: "ExampleClamp_second", Code: "other example", Valid: true}}},
	{Module: "example.com/m", Version: "v1.0.0", APIID: "m.Pop", Qualified: "m.Pop", MProse: "pop removes an item from the stack"},
	{Module: "example.com/other", Version: "v1.0.0", APIID: "other.Clamp", Qualified: "other.Clamp", MProse: "clamp limits a value to a range"},
}

var ragTask = Row{TaskID: "t1", APIID: "m.Clamp", Module: "example.com/m", Version: "v1.0.0", Example: "ExampleClamp",
	Description: "Limit a value to a range", Context: "x := <MASK>\n"}

// ragVocab is every word piece of the bundles' M_prose documents and of
// the task's query.
var ragVocab = strings.Fields("# documentation ( m _ prose ) clamp limits a value to range push adds an item the stack pop removes from limit x : = < mask >")

func newTestRAG(t *testing.T, kind, cell string, topK, size, overlap int, model *embedder) *rag {
	t.Helper()
	c, err := cells.Lookup(cell)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cells.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newRAG(kind, p, topK, size, overlap, model)
	if err := g.prepare(context.Background(), []Row{ragTask}, sortedBundles(ragBundles)); err != nil {
		t.Fatal(err)
	}
	return g
}

func ids(hits []RetrievedChunk) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ChunkID)
	}
	return out
}

func TestRAGRetrievesFromTheTasksModuleVersionBestFirst(t *testing.T) {
	dir := WriteBagOfWordsBERT(t, ragVocab, 64)
	digest, err := embedderDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	model, err := embedderFor(dir, digest, embed.Mean)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind       string
		model      *embedder
		topK       int
		want       []string
		wantTokens int32 // of m.Clamp#0
	}{
		// BM25: m.Clamp shares a, value, to and range with the query,
		// m.Push only "to", m.Pop nothing; but "to" is in two of the
		// three documents and the mean idf of this tiny corpus is
		// negative, so BM25Okapi floors its idf to a negative value and
		// m.Push ranks below m.Pop's 0, as rank_bm25 ranks them.
		{RetrieverBM25, nil, 2, []string{"m.Clamp#0", "m.Pop#0"}, 10},
		// The bag-of-words encoder ranks by shared pieces; its tokens
		// are word pieces ("##" is two, "(M_prose)" five).
		{RetrieverDense, model, 3, []string{"m.Clamp#0", "m.Push#0", "m.Pop#0"}, 15},
	} {
		t.Run(c.kind, func(t *testing.T) {
			g := newTestRAG(t, c.kind, "M_prose", c.topK, 64, 8, c.model)
			knowledge, hits := g.retrieve(ragTask)
			if got := ids(hits); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("retrieved %v, want %v", got, c.want)
			}
			if hits[0].Tokens != c.wantTokens || hits[0].APIID != "m.Clamp" {
				t.Errorf("top chunk %+v, want %d tokens of m.Clamp", hits[0], c.wantTokens)
			}
			var texts []string
			for i, h := range hits {
				texts = append(texts, h.Text)
				if i > 0 && h.Score > hits[i-1].Score {
					t.Errorf("scores not best first: %v", hits)
				}
			}
			if want := strings.Join(texts, "\n\n"); knowledge != want || !strings.HasPrefix(knowledge, "## Documentation (M_prose)\nclamp limits a value to a range\n\n") {
				t.Errorf("knowledge %q, want the chunks joined by blank lines, %q", knowledge, want)
			}
		})
	}
}

func TestRAGPoolLeavesOutTheTasksExampleOnly(t *testing.T) {
	g := newTestRAG(t, RetrieverBM25, "S+E", 5, 512, 64, nil)
	p := g.pools[g.poolKey(ragTask)]
	docs := map[string]string{}
	for _, c := range p.chunks {
		docs[c.apiID] += c.text
	}
	if len(docs) != 3 || docs["other.Clamp"] != "" {
		t.Errorf("the pool holds %d APIs' chunks, want the 3 of example.com/m v1.0.0", len(docs))
	}
	if strings.Contains(docs["m.Clamp"], "secret answer code") || !strings.Contains(docs["m.Clamp"], "other example") {
		t.Errorf("the target's document must lose the task's example and keep the other:\n%s", docs["m.Clamp"])
	}
	if !strings.Contains(docs["m.Push"], "push example") {
		t.Errorf("another API's example is missing:\n%s", docs["m.Push"])
	}
	// Another task of the same API cut from the other example sees the
	// first example and not its own: its own pool.
	other := ragTask
	other.TaskID, other.Example = "t2", "ExampleClamp_second"
	if err := g.prepare(context.Background(), []Row{other}, sortedBundles(ragBundles)); err != nil {
		t.Fatal(err)
	}
	_, hits := g.retrieve(other)
	var all string
	for _, h := range hits {
		all += h.Text
	}
	if !strings.Contains(all, "secret answer code") || strings.Contains(all, "other example") {
		t.Errorf("the second task's chunks:\n%s", all)
	}
}

func TestRAGChunkIDsNumberEachAPIsWindows(t *testing.T) {
	// 6-token windows with 2 of overlap: each 10-token document is two.
	g := newTestRAG(t, RetrieverBM25, "M_prose", 1, 6, 2, nil)
	var got []string
	for _, c := range g.pools[g.poolKey(ragTask)].chunks {
		got = append(got, c.id+" "+c.text)
	}
	want := []string{
		"m.Clamp#0 ## Documentation (M_prose)\nclamp limits a",
		"m.Clamp#1 limits a value to a range",
		"m.Pop#0 ## Documentation (M_prose)\npop removes an",
		"m.Pop#1 removes an item from the stack",
		"m.Push#0 ## Documentation (M_prose)\npush adds an",
		"m.Push#1 adds an item to the stack",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pool chunks\n%q\nwant\n%q", got, want)
	}
	if _, hits := g.retrieve(ragTask); len(hits) != 1 || hits[0].ChunkID != "m.Clamp#1" {
		t.Errorf("top chunk %v, want m.Clamp#1", hits)
	}
}

func TestEmbedderDigestFollowsContentNotPath(t *testing.T) {
	a := WriteBagOfWordsBERT(t, ragVocab, 64)
	b := WriteBagOfWordsBERT(t, ragVocab, 64)
	c := WriteBagOfWordsBERT(t, ragVocab, 32)
	da, _ := embedderDigest(a)
	db, _ := embedderDigest(b)
	dc, _ := embedderDigest(c)
	if da != db || da == dc {
		t.Errorf("digests %s %s %s: want the same for the same files in two directories, another for other files", da, db, dc)
	}
}

// The dense chunker counts words alone; that is exact only because the
// encoder's basic tokenizer splits at every whitespace the chunker splits
// at before it splits punctuation and word pieces.
func TestDenseChunkTokensAreTheEncodersOnWholeText(t *testing.T) {
	dir := WriteBagOfWordsBERT(t, ragVocab, 64)
	digest, err := embedderDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	model, err := embedderFor(dir, digest, embed.Mean)
	if err != nil {
		t.Fatal(err)
	}
	g := &rag{kind: RetrieverDense, model: model, counts: map[string]int{}}
	text := "## Documentation (M_prose)\nClamp\u00a0limits a\tvalue to a Range: x := <MASK>; café\u3000push"
	n := 0
	for _, ch := range chunkText(text, 1<<20, 0, g.count) {
		n += ch.Tokens
	}
	if want := len(model.m.Tokens(text)) - 2; n != want || want >= 62 {
		t.Errorf("chunk word pieces %d, the encoder's on the whole text %d (must stay under its 62)", n, want)
	}
}
