package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/embed/embedtest"
)

// tinyDir writes a tiny BERT model directory (embedtest.WriteDir).
func tinyDir(t *testing.T, edit func(cfg map[string]any, vocab *[]string, w map[string]embedtest.Tensor, dtype map[string]string)) string {
	t.Helper()
	dir := t.TempDir()
	if err := embedtest.WriteDir(dir, edit); err != nil {
		t.Fatal(err)
	}
	return dir
}

// referenceEmbedding is an independent float64 forward pass of Hugging
// Face's BertModel (exact erf GELU, post-layer-norm, absolute positions,
// token type 0) followed by sentence-transformers pooling and L2
// normalisation.
func referenceEmbedding(w map[string]embedtest.Tensor, ids []int, pooling Pooling) []float64 {
	const h, inter, heads, eps = 8, 16, 2, 1e-12
	n := len(ids)
	row := func(name string, i, cols int) []float64 {
		d := w[name].Data[i*cols : (i+1)*cols]
		out := make([]float64, cols)
		for j, v := range d {
			out[j] = float64(v)
		}
		return out
	}
	linear := func(x []float64, name string, out int) []float64 {
		in := len(x)
		y := row(name+".bias", 0, out)
		for o := 0; o < out; o++ {
			wr := row(name+".weight", o, in)
			for i := range x {
				y[o] += wr[i] * x[i]
			}
		}
		return y
	}
	layerNorm := func(x []float64, name string) []float64 {
		var mean, v float64
		for _, a := range x {
			mean += a
		}
		mean /= float64(len(x))
		for _, a := range x {
			v += (a - mean) * (a - mean)
		}
		v /= float64(len(x))
		g, b := row(name+".weight", 0, len(x)), row(name+".bias", 0, len(x))
		out := make([]float64, len(x))
		for i, a := range x {
			out[i] = (a-mean)/math.Sqrt(v+eps)*g[i] + b[i]
		}
		return out
	}
	add := func(a, b []float64) []float64 {
		out := make([]float64, len(a))
		for i := range a {
			out[i] = a[i] + b[i]
		}
		return out
	}
	x := make([][]float64, n)
	for i, id := range ids {
		e := add(add(row("embeddings.word_embeddings.weight", id, h), row("embeddings.position_embeddings.weight", i, h)), row("embeddings.token_type_embeddings.weight", 0, h))
		x[i] = layerNorm(e, "embeddings.LayerNorm")
	}
	for l := 0; l < 2; l++ {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		q, k, v := make([][]float64, n), make([][]float64, n), make([][]float64, n)
		for i := range x {
			q[i] = linear(x[i], p+"attention.self.query", h)
			k[i] = linear(x[i], p+"attention.self.key", h)
			v[i] = linear(x[i], p+"attention.self.value", h)
		}
		dh := h / heads
		ctx := make([][]float64, n)
		for i := range ctx {
			ctx[i] = make([]float64, h)
			for hd := 0; hd < heads; hd++ {
				scores := make([]float64, n)
				maxS := math.Inf(-1)
				for j := 0; j < n; j++ {
					for d := hd * dh; d < (hd+1)*dh; d++ {
						scores[j] += q[i][d] * k[j][d]
					}
					scores[j] /= math.Sqrt(float64(dh))
					maxS = math.Max(maxS, scores[j])
				}
				var z float64
				for j := range scores {
					scores[j] = math.Exp(scores[j] - maxS)
					z += scores[j]
				}
				for j := range scores {
					for d := hd * dh; d < (hd+1)*dh; d++ {
						ctx[i][d] += scores[j] / z * v[j][d]
					}
				}
			}
		}
		for i := range x {
			a := layerNorm(add(linear(ctx[i], p+"attention.output.dense", h), x[i]), p+"attention.output.LayerNorm")
			m := linear(a, p+"intermediate.dense", inter)
			for j, u := range m {
				m[j] = 0.5 * u * (1 + math.Erf(u/math.Sqrt2))
			}
			x[i] = layerNorm(add(linear(m, p+"output.dense", h), a), p+"output.LayerNorm")
		}
	}
	out := make([]float64, h)
	if pooling == CLS {
		copy(out, x[0])
	} else {
		for _, s := range x {
			for j := range out {
				out[j] += s[j] / float64(n)
			}
		}
	}
	var norm float64
	for _, a := range out {
		norm += a * a
	}
	for j := range out {
		out[j] /= math.Sqrt(norm)
	}
	return out
}

func cosine(a []float32, b []float64) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * b[i]
		na += float64(a[i]) * float64(a[i])
		nb += b[i] * b[i]
	}
	return dot / math.Sqrt(na*nb)
}

// TestEmbedMatchesReferenceBertForward compares Embed, on every kernel
// this CPU runs, with an independent float64 forward pass of the tiny
// model.
func TestEmbedMatchesReferenceBertForward(t *testing.T) {
	dir := tinyDir(t, nil)
	w := embedtest.Weights(1)
	index := map[string]int{}
	for i, tok := range embedtest.Vocab {
		index[tok] = i
	}
	texts := []string{"the cat sat on the mat", "The DOG ran!", "Café cats, dogs", "the"}
	for _, kernel := range Kernels() {
		for _, pooling := range []Pooling{Mean, CLS} {
			t.Run(kernel+"/"+pooling.String(), func(t *testing.T) {
				m, err := Load(dir, pooling, WithKernel(kernel))
				if err != nil {
					t.Fatal(err)
				}
				if m.Kernel() != kernel {
					t.Fatalf("Kernel() = %q, want %q", m.Kernel(), kernel)
				}
				got, err := m.Embed(context.Background(), texts, 2)
				if err != nil {
					t.Fatal(err)
				}
				for i, text := range texts {
					var ids []int
					for _, tok := range m.Tokens(text) {
						ids = append(ids, index[tok])
					}
					want := referenceEmbedding(w, ids, pooling)
					// The tolerance covers float32 against float64 rounding; a
					// wrong weight mapping (heads, transposes, layer norms) or
					// the tanh approximation of GELU gives less.
					if c := cosine(got[i], want); c < 0.999999 {
						t.Errorf("%q: cosine to the reference forward pass %.8f, want >= 0.999999", text, c)
					}
				}
			})
		}
	}
}

func TestLoadRejectsAKernelThisCPUDoesNotRun(t *testing.T) {
	_, err := Load(tinyDir(t, nil), Mean, WithKernel("avx1024"))
	if err == nil || !strings.Contains(err.Error(), `kernel "avx1024": this CPU runs`) {
		t.Fatalf("Load with an unknown kernel: err %v", err)
	}
}

func TestTokensLowercaseStripAccentsSplitPunctuationAndTruncate(t *testing.T) {
	m, err := Load(tinyDir(t, nil), Mean)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text string
		want string
	}{
		{"The cats", "[CLS] the cat ##s [SEP]"},
		{"Café, dog!", "[CLS] cafe , dog ! [SEP]"},
		{"zebra", "[CLS] [UNK] [SEP]"},
		// "-" and "`" are split off (and unknown to the tiny vocabulary);
		// the zero-width space is dropped.
		{"cat-dog`\tran\u200b", "[CLS] cat [UNK] dog [UNK] ran [SEP]"},
		{"the\u732bcat", "[CLS] the [UNK] cat [SEP]"},
		{"", "[CLS] [SEP]"},
		// max_seq_length 8: six word pieces plus [CLS] and [SEP].
		{"the cat sat on the mat the dog ran", "[CLS] the cat sat on the mat [SEP]"},
	}
	for _, tt := range tests {
		if got := strings.Join(m.Tokens(tt.text), " "); got != tt.want {
			t.Errorf("Tokens(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestEmbedIsUnitLengthAndIndependentOfBatch(t *testing.T) {
	m, err := Load(tinyDir(t, nil), Mean)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"the cat", "the dog ran", "mat", "on the mat", "cats!", "the cat"}
	ref, err := m.Embed(context.Background(), texts, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range ref {
		if len(v) != m.Dim() {
			t.Fatalf("vector %d has length %d, want %d", i, len(v), m.Dim())
		}
		if n := norm2(v); math.Abs(n-1) > 1e-6 {
			t.Errorf("vector %d has norm %v, want 1", i, n)
		}
	}
	for _, batch := range []int{0, 2, 4, 100} {
		got, err := m.Embed(context.Background(), texts, batch)
		if err != nil {
			t.Fatal(err)
		}
		for i := range texts {
			for j := range got[i] {
				if got[i][j] != ref[i][j] {
					t.Fatalf("batch %d: text %d differs from batch 1 at %d: %v vs %v", batch, i, j, got[i][j], ref[i][j])
				}
			}
		}
	}
	if got, err := m.Embed(context.Background(), nil, 4); err != nil || len(got) != 0 {
		t.Errorf("Embed(nil) = %v, %v; want empty, nil", got, err)
	}
}

func TestEmbedStopsWhenContextIsDone(t *testing.T) {
	m, err := Load(tinyDir(t, nil), Mean)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Embed(ctx, []string{"the cat", "the dog"}, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Embed with a cancelled context: err %v, want context.Canceled", err)
	}
}

func TestLoadRejectsBadDirectories(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(cfg map[string]any, vocab *[]string, w map[string]embedtest.Tensor, dtype map[string]string)
		remove  string
		pooling Pooling
		want    string
	}{
		{name: "missing config", remove: "config.json", want: "missing config.json"},
		{name: "missing weights", remove: "model.safetensors", want: "missing model.safetensors"},
		{name: "missing vocab", remove: "vocab.txt", want: "missing vocab.txt"},
		{name: "wrong architecture", edit: func(cfg map[string]any, _ *[]string, _ map[string]embedtest.Tensor, _ map[string]string) {
			cfg["model_type"] = "roberta"
			cfg["architectures"] = []string{"RobertaModel"}
		}, want: `model_type "roberta"`},
		{name: "unsupported activation", edit: func(cfg map[string]any, _ *[]string, _ map[string]embedtest.Tensor, _ map[string]string) {
			cfg["hidden_act"] = "relu"
		}, want: `hidden_act "relu"`},
		{name: "heads do not divide hidden size", edit: func(cfg map[string]any, _ *[]string, _ map[string]embedtest.Tensor, _ map[string]string) {
			cfg["num_attention_heads"] = 3
		}, want: "inconsistent sizes"},
		{name: "vocabulary size mismatch", edit: func(_ map[string]any, v *[]string, _ map[string]embedtest.Tensor, _ map[string]string) {
			*v = (*v)[:len(*v)-1]
		}, want: "vocab.txt has 15 entries, config.json vocab_size is 16"},
		{name: "repeated vocabulary token", edit: func(_ map[string]any, v *[]string, _ map[string]embedtest.Tensor, _ map[string]string) {
			(*v)[10] = "cat"
		}, want: `vocab.txt:11: token "cat" repeats line 7`},
		{name: "missing tensor", edit: func(_ map[string]any, _ *[]string, w map[string]embedtest.Tensor, _ map[string]string) {
			delete(w, "encoder.layer.1.output.dense.weight")
		}, want: "missing tensor encoder.layer.1.output.dense.weight"},
		{name: "wrong shape", edit: func(_ map[string]any, _ *[]string, w map[string]embedtest.Tensor, _ map[string]string) {
			w["encoder.layer.0.intermediate.dense.weight"] = embedtest.Tensor{Shape: []int{8, 16}, Data: make([]float32, 128)}
		}, want: "tensor encoder.layer.0.intermediate.dense.weight has shape [8 16], want [16 8]"},
		{name: "half precision", edit: func(_ map[string]any, _ *[]string, _ map[string]embedtest.Tensor, d map[string]string) {
			d["embeddings.LayerNorm.bias"] = "F16"
		}, want: "dtype F16; only F32"},
		{name: "unknown pooling", pooling: Pooling(7), want: "unknown pooling"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edit := tt.edit
			if edit == nil {
				edit = func(cfg map[string]any, _ *[]string, _ map[string]embedtest.Tensor, _ map[string]string) {
					cfg["vocab_size"] = len(embedtest.Vocab)
				}
			} else {
				inner := edit
				edit = func(cfg map[string]any, v *[]string, w map[string]embedtest.Tensor, d map[string]string) {
					cfg["vocab_size"] = len(embedtest.Vocab)
					inner(cfg, v, w, d)
				}
			}
			dir := tinyDir(t, edit)
			if tt.remove != "" {
				if err := os.Remove(filepath.Join(dir, tt.remove)); err != nil {
					t.Fatal(err)
				}
			}
			pooling := tt.pooling
			if pooling == 0 {
				pooling = Mean
			}
			_, err := Load(dir, pooling)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load: err %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestLoadTakesMaxSeqLengthOfAtLeastThreeCappedByPositions(t *testing.T) {
	tests := []struct {
		config string
		want   int    // MaxTokens
		err    string // when Load must fail
	}{
		{config: `{"max_seq_length": 1}`, err: "max_seq_length 1: want at least 3"},
		{config: `{"max_seq_length": 2}`, err: "max_seq_length 2: want at least 3"},
		{config: `{"max_seq_length": 0}`, err: "max_seq_length 0: want at least 3"},
		{config: `{"max_seq_length": 3}`, want: 3},
		{config: `{"max_seq_length": 8}`, want: 8},
		{config: `{"max_seq_length": 512}`, want: 16}, // max_position_embeddings
		{config: `{}`, want: 16},
	}
	for _, tt := range tests {
		t.Run(tt.config, func(t *testing.T) {
			dir := tinyDir(t, nil)
			if err := os.WriteFile(filepath.Join(dir, "sentence_bert_config.json"), []byte(tt.config), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := Load(dir, Mean)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), "sentence_bert_config.json: "+tt.err) {
					t.Fatalf("Load: err %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.MaxTokens() != tt.want {
				t.Errorf("MaxTokens %d, want %d", m.MaxTokens(), tt.want)
			}
			text := "the cat sat on the mat the cat sat on the mat the cat sat on the mat"
			if n := len(m.Tokens(text)); n != tt.want {
				t.Errorf("Tokens of a long text: %d, want MaxTokens %d", n, tt.want)
			}
			if _, err := m.Embed(context.Background(), []string{text}, 1); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTopKRanksByCosineWithTiesByIndex(t *testing.T) {
	docs := [][]float32{{1, 0}, {0, 1}, {2, 0}, {1, 1}, {0, 0}, {-1, 0}}
	q := []float32{1, 0}
	tests := []struct {
		k    int
		want []int
	}{
		{k: 3, want: []int{0, 2, 3}},
		{k: 10, want: []int{0, 2, 3, 1, 4, 5}},
		{k: 1, want: []int{0}},
		{k: 0, want: nil},
	}
	for _, tt := range tests {
		hits := TopK(q, docs, tt.k)
		var got []int
		for _, h := range hits {
			got = append(got, h.Doc)
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("TopK(k=%d) docs %v, want %v", tt.k, got, tt.want)
		}
	}
	hits := TopK(q, docs, 6)
	want := []float64{1, 1, 1 / math.Sqrt2, 0, 0, -1}
	for i, h := range hits {
		if math.Abs(h.Score-want[i]) > 1e-12 {
			t.Errorf("hit %d score %v, want %v", i, h.Score, want[i])
		}
	}
}

func TestErf32IsWithin5e7OfMathErf(t *testing.T) {
	worst := 0.0
	for x := -6.0; x <= 6; x += 1e-4 {
		worst = math.Max(worst, math.Abs(float64(erf32(float32(x)))-math.Erf(float64(float32(x)))))
	}
	if worst > 5e-7 {
		t.Errorf("largest |erf32 - math.Erf| on [-6, 6] is %g, want <= 5e-7", worst)
	}
}

// TestEmbedGroupsDoNotChangeVectors embeds 400 texts (over 2,048 tokens:
// two groups) in one call and each alone, and requires the same bits.
func TestEmbedGroupsDoNotChangeVectors(t *testing.T) {
	m, err := Load(tinyDir(t, nil), Mean)
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"the", "cat", "sat", "on", "mat", "dog", "ran", "cats", "!"}
	texts := make([]string, 400)
	tokens := 0
	for i := range texts {
		var w []string
		for j := 0; j <= i%6; j++ {
			w = append(w, words[(i+3*j)%len(words)])
		}
		texts[i] = strings.Join(w, " ")
		tokens += len(m.Tokens(texts[i]))
	}
	if tokens <= groupTokens {
		t.Fatalf("%d tokens: want more than one group (%d)", tokens, groupTokens)
	}
	all, err := m.Embed(context.Background(), texts, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		one, err := m.Embed(context.Background(), []string{text}, 1)
		if err != nil {
			t.Fatal(err)
		}
		for j := range one[0] {
			if math.Float32bits(one[0][j]) != math.Float32bits(all[i][j]) {
				t.Fatalf("text %d %q: value %d is %v alone, %v among %d texts", i, text, j, one[0][j], all[i][j], len(texts))
			}
		}
	}
}
