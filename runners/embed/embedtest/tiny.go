// Package embedtest writes a tiny BERT sentence encoder directory, so that
// tests of runners/embed and of the nodes that use it need no download.
package embedtest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Config is a 2-layer, 2-head BERT with 8 hidden units, small enough to
// build in a test: config.json's fields.
func Config() map[string]any {
	return map[string]any{
		"architectures":           []string{"BertModel"},
		"model_type":              "bert",
		"hidden_act":              "gelu",
		"hidden_size":             8,
		"intermediate_size":       16,
		"num_attention_heads":     2,
		"num_hidden_layers":       2,
		"max_position_embeddings": 16,
		"vocab_size":              16,
		"type_vocab_size":         2,
		"layer_norm_eps":          1e-12,
		"pad_token_id":            0,
	}
}

// Vocab is the tiny model's vocab.txt, one token per line.
var Vocab = []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "dog", "ran", "##s", ",", "!", "cafe"}

// Tensor is one weight, row-major.
type Tensor struct {
	Shape []int
	Data  []float32
}

// Weights returns seeded random weights with Hugging Face BertModel names
// and shapes for Config.
func Weights(seed int64) map[string]Tensor {
	r := rand.New(rand.NewSource(seed))
	w := map[string]Tensor{}
	add := func(name string, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := make([]float32, n)
		for i := range data {
			data[i] = float32(r.NormFloat64() * 0.5)
		}
		if strings.HasSuffix(name, "LayerNorm.weight") {
			for i := range data {
				data[i] += 1
			}
		}
		w[name] = Tensor{Shape: shape, Data: data}
	}
	const h, inter = 8, 16
	add("embeddings.word_embeddings.weight", len(Vocab), h)
	add("embeddings.position_embeddings.weight", 16, h)
	add("embeddings.token_type_embeddings.weight", 2, h)
	add("embeddings.LayerNorm.weight", h)
	add("embeddings.LayerNorm.bias", h)
	for l := 0; l < 2; l++ {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		for _, proj := range []string{"query", "key", "value"} {
			add(p+"attention.self."+proj+".weight", h, h)
			add(p+"attention.self."+proj+".bias", h)
		}
		add(p+"attention.output.dense.weight", h, h)
		add(p+"attention.output.dense.bias", h)
		add(p+"attention.output.LayerNorm.weight", h)
		add(p+"attention.output.LayerNorm.bias", h)
		add(p+"intermediate.dense.weight", inter, h)
		add(p+"intermediate.dense.bias", inter)
		add(p+"output.dense.weight", h, inter)
		add(p+"output.dense.bias", h)
		add(p+"output.LayerNorm.weight", h)
		add(p+"output.LayerNorm.bias", h)
	}
	add("pooler.dense.weight", h, h)
	add("pooler.dense.bias", h)
	return w
}

// WriteDir writes a tiny BERT model directory into dir (config.json,
// vocab.txt, model.safetensors with weights of seed 1,
// tokenizer_config.json lowercasing, sentence_bert_config.json with
// max_seq_length 8). edit, when not nil, may change the config, the
// vocabulary, the weights or a tensor's dtype before they are written.
func WriteDir(dir string, edit func(cfg map[string]any, vocab *[]string, w map[string]Tensor, dtype map[string]string)) error {
	cfg := Config()
	vocab := append([]string(nil), Vocab...)
	w := Weights(1)
	dtype := map[string]string{}
	if edit != nil {
		edit(cfg, &vocab, w, dtype)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"config.json":               b,
		"vocab.txt":                 []byte(strings.Join(vocab, "\n") + "\n"),
		"tokenizer_config.json":     []byte(`{"do_lower_case": true}`),
		"sentence_bert_config.json": []byte(`{"max_seq_length": 8}`),
		"model.safetensors":         safetensors(w, dtype),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// safetensors encodes w in the safetensors format with F32 dtype (or the
// dtype override for one tensor), plus an I64 position_ids buffer as
// transformers saves it.
func safetensors(w map[string]Tensor, dtype map[string]string) []byte {
	names := make([]string, 0, len(w))
	for n := range w {
		names = append(names, n)
	}
	sort.Strings(names)
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var body []byte
	for _, n := range names {
		dt := "F32"
		if d, ok := dtype[n]; ok {
			dt = d
		}
		start := len(body)
		for _, v := range w[n].Data {
			body = binary.LittleEndian.AppendUint32(body, math.Float32bits(v))
		}
		header[n] = map[string]any{"dtype": dt, "shape": w[n].Shape, "data_offsets": []int{start, len(body)}}
	}
	start := len(body)
	for i := 0; i < 16; i++ {
		body = binary.LittleEndian.AppendUint64(body, uint64(i))
	}
	header["embeddings.position_ids"] = map[string]any{"dtype": "I64", "shape": []int{1, 16}, "data_offsets": []int{start, len(body)}}
	h, err := json.Marshal(header)
	if err != nil {
		panic(err) // only maps of strings, ints and slices
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), body...)
}
