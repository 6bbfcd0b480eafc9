package toolsense_test

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/toolsense"
	"github.com/lacuna-dev/lacuna/runners/embed"
	"github.com/lacuna-dev/lacuna/runners/embed/embedtest"
)

// tinyBERT writes embedtest's 2-layer BERT sentence-encoder directory
// with a vocabulary of the words of the neighbours fixture (and word
// embeddings to match, seeded): no download.
func tinyBERT(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	err := embedtest.WriteDir(dir, func(cfg map[string]any, vocab *[]string, w map[string]embedtest.Tensor, _ map[string]string) {
		*vocab = []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "qr", "code", "image", "url", "weather", "forecast",
			"rain", "city", "stock", "price", "market", "quote", "translate", "text", "language"}
		cfg["vocab_size"] = len(*vocab)
		h := cfg["hidden_size"].(int)
		r := rand.New(rand.NewSource(1))
		data := make([]float32, len(*vocab)*h)
		for i := range data {
			data[i] = float32(r.NormFloat64() * 0.5)
		}
		w["embeddings.word_embeddings.weight"] = embedtest.Tensor{Shape: []int{len(*vocab), h}, Data: data}
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// neighborsTools: three services; "QR B&&b" repeats "QR A&&a"'s
// description, so that the seed's own copy can rank below a twin (cosine
// ties go to the earlier tool) and over-fetching must still drop it.
const neighborsTools = `{"tool_name": "QR A&&a", "tool_title": "QR A", "tool_description": "qr code image", "api_title": "a", "api_description": "url"}
{"tool_name": "QR B&&b", "tool_title": "QR B", "tool_description": "qr code image", "api_title": "b", "api_description": "url"}
{"tool_name": "QR B&&c", "tool_title": "QR B", "tool_description": "qr code", "api_title": "c", "api_description": "None"}
{"tool_name": "Weather&&now", "tool_title": "Weather", "tool_description": "weather forecast", "api_title": "now", "api_description": "rain city"}
{"tool_name": "Weather&&week", "tool_title": "Weather", "tool_description": "weather forecast", "api_title": "week", "api_description": "city forecast"}
{"tool_name": "Stocks&&quote", "tool_title": "Stocks", "tool_description": "stock market price", "api_title": "quote", "api_description": "stock quote"}
{"tool_name": "Stocks&&market", "tool_title": "Stocks", "tool_description": "stock market price", "api_title": "market", "api_description": "market price"}
{"tool_name": "Translate&&text", "tool_title": "Translate", "tool_description": "translate text", "api_title": "text", "api_description": "language"}
`

// TestNeighborsDensePoolsAreTheNearestByCosine: every pool is the seed
// followed by the k tools whose description embeddings are nearest to its
// own (the encoder's vectors and embed.TopK, computed here independently
// of the node), the seed never among them even where a twin outranks it.
func TestNeighborsDensePoolsAreTheNearestByCosine(t *testing.T) {
	model := tinyBERT(t)
	dir := t.TempDir()
	write(t, dir, "tools.jsonl", neighborsTools)
	r := nodetest.Run(t, dir, fmt.Sprintf(`
node "catalog" "c" { path = "tools.jsonl" }
node "neighbors" "pools" {
  catalog   = node.catalog.c
  model_dir = %q
  k         = 3
}
`, model))
	got := nodetest.Read[toolsense.NeighborsRow](t, r, "node.neighbors.pools")
	cat := nodetest.Read[toolsense.CatalogRow](t, r, "node.catalog.c")
	if len(got) != len(cat) {
		t.Fatalf("%d pools, want one per tool (%d) without seeds", len(got), len(cat))
	}
	m, err := embed.Load(model, embed.Mean)
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(cat))
	for i, c := range cat {
		texts[i] = strings.TrimSpace(c.ToolDescription + " " + c.APIDescription)
	}
	vecs, err := m.Embed(context.Background(), texts, 1)
	if err != nil {
		t.Fatal(err)
	}
	twinAbove := false
	for i, row := range got {
		if row.Seed != cat[i].ToolName || row.Pool[0] != row.Seed || row.Position != int64(i) {
			t.Errorf("row %d: seed %q, pool[0] %q, position %d; want %q first", i, row.Seed, row.Pool[0], row.Position, cat[i].ToolName)
		}
		var want []string
		var scores []float64
		for j, h := range embed.TopK(vecs[i], vecs, 3+5) {
			if h.Doc == i {
				twinAbove = twinAbove || j > 0
				continue
			}
			if len(want) < 3 {
				want = append(want, cat[h.Doc].ToolName)
				scores = append(scores, h.Score)
			}
		}
		if !reflect.DeepEqual(row.Pool[1:], want) || !reflect.DeepEqual(row.Scores, scores) {
			t.Errorf("%s: pool %v scores %v, want %v %v", row.Seed, row.Pool[1:], row.Scores, want, scores)
		}
	}
	if !twinAbove {
		t.Error("the fixture has no seed ranked below a twin: the over-fetch is not exercised")
	}
}

// TestNeighborsBM25RanksByTheSeedsText: with embedder = "bm25" the
// neighbours are the BM25 ranking of the seed's text, seed dropped; the
// services are the tool_name prefixes and seeds = 3 of 4 services draws
// three distinct services.
func TestNeighborsBM25RanksByTheSeedsText(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tools.jsonl", neighborsTools)
	r := nodetest.Run(t, dir, `
node "catalog" "c" { path = "tools.jsonl" }
node "neighbors" "all" {
  catalog  = node.catalog.c
  embedder = "bm25"
  field    = "doc"
  k        = 2
}
node "neighbors" "three" {
  catalog  = node.catalog.c
  embedder = "bm25"
  k        = 2
  seeds    = 3
  seed     = 7
}
`)
	all := nodetest.Read[toolsense.NeighborsRow](t, r, "node.neighbors.all")
	weather := all[3]
	if weather.Seed != "Weather&&now" || weather.Service != "Weather" || !reflect.DeepEqual(weather.Pool, []string{"Weather&&now", "Weather&&week", "QR A&&a"}) {
		t.Errorf("Weather&&now's pool: %+v; want its sibling (shared words), then a zero-score tie to the first tool", weather)
	}
	if weather.Scores[0] <= 0 || weather.Scores[1] != 0 {
		t.Errorf("scores %v: want the sibling > 0, then 0", weather.Scores)
	}
	three := nodetest.Read[toolsense.NeighborsRow](t, r, "node.neighbors.three")
	services := map[string]bool{}
	for _, row := range three {
		services[row.Service] = true
		if len(row.Pool) != 3 || row.Pool[0] != row.Seed {
			t.Errorf("pool %v of %s", row.Pool, row.Seed)
		}
	}
	if len(three) != 3 || len(services) != 3 {
		t.Errorf("seeds = 3 gave %d rows from %d services, want 3 distinct services", len(three), len(services))
	}
}

func TestNeighborsRejectsBadConfig(t *testing.T) {
	head := "node \"catalog\" \"c\" { path = \"tools.jsonl\" }\nnode \"neighbors\" \"n\" {\n  catalog = node.catalog.c\n"
	for _, tc := range []struct{ body, want string }{
		{`embedder = "dense"`, "Missing model_dir"},
		{`embedder = "bm25"` + "\n" + `model_dir = "x"`, "model_dir without a dense embedder"},
		{`embedder = "tfidf"`, "Unknown embedder"},
		{`embedder = "bm25"` + "\n" + `field = "name"`, "Unknown field"},
		{`embedder = "bm25"` + "\n" + `k = 0`, "Invalid k"},
		{`model_dir = "x"` + "\n" + `pooling = "max"`, "Unknown pooling"},
	} {
		wantContains(t, configErr(t, head+tc.body+"\n}\n"), tc.want)
	}
	dir := t.TempDir()
	write(t, dir, "tools.jsonl", neighborsTools)
	r := nodetest.RunErr(t, dir, head+`model_dir = "nowhere"`+"\n}\n")
	wantContains(t, nodeErr(t, r, "node.neighbors.n"), "Model directory not found")
	// A run-time error about the configuration points at its attribute.
	r = nodetest.RunErr(t, dir, head+`embedder = "bm25"`+"\n"+`seeds = 9`+"\n}\n")
	wantContains(t, nodeErr(t, r, "node.neighbors.n"), "p.hcl:5:9: Too many seeds", "9 seeds asked of a catalog of 8 tools")
}
