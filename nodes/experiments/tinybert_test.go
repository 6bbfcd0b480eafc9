package experiments

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// WriteBagOfWordsBERT writes a one-layer BERT encoder directory that
// runners/embed loads, for tests (no download): every word piece of words
// (lowercase; [PAD] [UNK] [CLS] [SEP] [MASK] are added first) has a one-hot
// embedding, positions and token types embed to zero and the attention and
// feed-forward weights are zero, so each hidden state is the layer norm of
// its piece's one-hot vector and mean pooling gives a bag of words: texts
// sharing more pieces are more cosine-similar. maxSeq is its
// max_seq_length.
func WriteBagOfWordsBERT(t testing.TB, words []string, maxSeq int) string {
	t.Helper()
	vocab := append([]string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}, words...)
	h := len(vocab)
	if h%2 == 1 {
		vocab = append(vocab, "[unused0]")
		h++
	}
	const inter = 4
	type tensor struct {
		shape []int
		data  []float32
	}
	w := map[string]tensor{}
	zeros := func(name string, shape ...int) []float32 {
		n := 1
		for _, d := range shape {
			n *= d
		}
		w[name] = tensor{shape, make([]float32, n)}
		return w[name].data
	}
	ones := func(name string) {
		for i := range zeros(name, h) {
			w[name].data[i] = 1
		}
	}
	emb := zeros("embeddings.word_embeddings.weight", h, h)
	for i := 0; i < h; i++ {
		emb[i*h+i] = 1
	}
	zeros("embeddings.position_embeddings.weight", maxSeq, h)
	zeros("embeddings.token_type_embeddings.weight", 2, h)
	ones("embeddings.LayerNorm.weight")
	zeros("embeddings.LayerNorm.bias", h)
	p := "encoder.layer.0."
	for _, proj := range []string{"query", "key", "value"} {
		zeros(p+"attention.self."+proj+".weight", h, h)
		zeros(p+"attention.self."+proj+".bias", h)
	}
	zeros(p+"attention.output.dense.weight", h, h)
	zeros(p+"attention.output.dense.bias", h)
	ones(p + "attention.output.LayerNorm.weight")
	zeros(p+"attention.output.LayerNorm.bias", h)
	zeros(p+"intermediate.dense.weight", inter, h)
	zeros(p+"intermediate.dense.bias", inter)
	zeros(p+"output.dense.weight", h, inter)
	zeros(p+"output.dense.bias", h)
	ones(p + "output.LayerNorm.weight")
	zeros(p+"output.LayerNorm.bias", h)

	names := make([]string, 0, len(w))
	for n := range w {
		names = append(names, n)
	}
	sort.Strings(names)
	header := map[string]any{}
	var body []byte
	for _, n := range names {
		start := len(body)
		for _, v := range w[n].data {
			body = binary.LittleEndian.AppendUint32(body, math.Float32bits(v))
		}
		header[n] = map[string]any{"dtype": "F32", "shape": w[n].shape, "data_offsets": []int{start, len(body)}}
	}
	hb, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	st := append(binary.LittleEndian.AppendUint64(nil, uint64(len(hb))), hb...)
	cfg, err := json.Marshal(map[string]any{
		"model_type": "bert", "hidden_act": "gelu", "hidden_size": h, "intermediate_size": inter,
		"num_attention_heads": 2, "num_hidden_layers": 1, "max_position_embeddings": maxSeq,
		"vocab_size": h, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{
		"config.json":               cfg,
		"vocab.txt":                 []byte(strings.Join(vocab, "\n") + "\n"),
		"tokenizer_config.json":     []byte(`{"do_lower_case": true}`),
		"sentence_bert_config.json": []byte(`{"max_seq_length": ` + strconv.Itoa(maxSeq) + `}`),
		"model.safetensors":         append(st, body...),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
