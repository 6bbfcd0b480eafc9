// Package embed computes sentence embeddings in-process with a BERT
// encoder of its own and ranks documents by exact cosine similarity.
//
// A model directory holds a Hugging Face BERT checkpoint in the layout
// sentence-transformers ships: config.json (model_type "bert"), vocab.txt,
// model.safetensors (F32), optionally tokenizer_config.json (do_lower_case)
// and sentence_bert_config.json (max_seq_length). Load reads the weights
// from safetensors and packs every dense layer for the matrix-product
// kernel the CPU runs best (Kernels: AVX-512, AVX2 with FMA, or portable
// Go, detected at run time); nothing is written to the directory.
// cybertron's WordPiece tokenizes; the encoder (encoder.go) runs the
// dense layers of all the texts of a call as one matrix product per layer
// (gemm.go: packed panels, a register-blocked micro-kernel), attention per
// text and head, in float32 throughout.
//
// EmbedCached and TopK are the pieces other nodes reuse: vectors cached per
// model (Fingerprint) and text under a shared directory, and exact cosine
// top-k with ties to the lower index.
package embed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/nlpodyssey/cybertron/pkg/models/bert"
	"github.com/nlpodyssey/cybertron/pkg/tokenizers"
	"github.com/nlpodyssey/cybertron/pkg/tokenizers/wordpiecetokenizer"
	"github.com/nlpodyssey/cybertron/pkg/vocabulary"
	"golang.org/x/text/unicode/norm"
)

// Pooling turns the encoder's last hidden states into one vector.
type Pooling int

const (
	// Mean averages the hidden states of every token, [CLS] and [SEP]
	// included (sentence-transformers' pooling_mode_mean_tokens on an
	// unpadded sequence), as all-MiniLM-L6-v2 uses.
	Mean Pooling = iota + 1
	// CLS takes the raw hidden state of the [CLS] token, without BERT's
	// pooler layer (sentence-transformers' pooling_mode_cls_token), as
	// BAAI/bge-small-en-v1.5 uses.
	CLS
)

// String returns "mean" or "cls".
func (p Pooling) String() string {
	switch p {
	case Mean:
		return "mean"
	case CLS:
		return "cls"
	}
	return fmt.Sprintf("Pooling(%d)", int(p))
}

// Model is a loaded sentence encoder. Its methods are safe for concurrent
// use: the weights are read-only after Load.
type Model struct {
	enc       *encoder
	vocab     *vocabulary.Vocabulary
	tokenizer *wordpiecetokenizer.WordPieceTokenizer
	lower     bool
	maxTokens int // including [CLS] and [SEP]
	pooling   Pooling
	// fingerprint is the digest of the files Load read (Fingerprint).
	fingerprint string
}

// Fingerprint is the digest of the model files Load read, as Fingerprint
// computes it for a directory.
func (m *Model) Fingerprint() string { return m.fingerprint }

// Pooling is the pooling Load was given.
func (m *Model) Pooling() Pooling { return m.pooling }

// Dim is the length of the vectors Embed returns.
func (m *Model) Dim() int { return m.enc.dim }

// MaxTokens is the sequence length, [CLS] and [SEP] included, beyond which
// Embed truncates a text's word pieces (sentence-transformers' max_seq_length).
func (m *Model) MaxTokens() int { return m.maxTokens }

// Kernel names the matrix-product kernel the model runs on (Kernels).
func (m *Model) Kernel() string { return m.enc.kn.name }

// KernelLanes is how many float32 one vector instruction of the model's
// kernel holds: 16 for AVX-512, 8 for AVX2, 1 for the portable kernel (for
// a benchmark's fraction of the FMA peak).
func (m *Model) KernelLanes() int { return m.enc.kn.lanes }

// EncoderFLOPs is the floating-point operations (a multiply-add counts 2)
// of the encoder's matrix products for one text of n tokens ([CLS] and
// [SEP] included; len(Tokens)): the dense layers and attention's two
// products per head. The norms, softmax and GELU are not counted.
func (m *Model) EncoderFLOPs(n int) float64 { return m.enc.flops(n) }

// Kernels names the matrix-product kernels this CPU runs, the fastest
// first, as WithKernel takes them: "avx512" (AVX-512F, 12×32 tiles) where
// the CPU and OS have AVX-512, "avx2" (AVX2 and FMA, 6×16 tiles) where
// they have those, and "portable" (Go, 4×4 tiles) everywhere. Features are
// detected at run time (golang.org/x/sys/cpu). Every kernel gives the same
// vectors to rounding; avx512 and avx2 give the same bits.
func Kernels() []string {
	var names []string
	for _, k := range kernels() {
		names = append(names, k.name)
	}
	return names
}

// An Option changes how Load builds a Model.
type Option func(*options)

type options struct {
	kernel string
}

// WithKernel makes the model run on the named kernel (one of Kernels)
// instead of the fastest; Load fails when this CPU does not run it.
func WithKernel(name string) Option {
	return func(o *options) { o.kernel = name }
}

// Load reads a BERT sentence encoder from dir with the given pooling. It
// fails, naming the file, when config.json, vocab.txt or model.safetensors
// is missing, when config.json declares a model_type other than "bert",
// when the configuration is inconsistent with the vocabulary, when
// sentence_bert_config.json's max_seq_length is below 3, or when a
// weight the encoder needs is absent or has the wrong shape. The weights
// are packed for the fastest kernel this CPU runs (Kernels) unless
// WithKernel names another.
func Load(dir string, pooling Pooling, opts ...Option) (*Model, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if pooling != Mean && pooling != CLS {
		return nil, fmt.Errorf("embed: load %s: unknown pooling %v", dir, pooling)
	}
	fail := func(format string, a ...any) (*Model, error) {
		return nil, fmt.Errorf("embed: load %s: %s", dir, fmt.Sprintf(format, a...))
	}
	kn := kernels()[0]
	if o.kernel != "" {
		var err error
		if kn, err = kernelNamed(o.kernel); err != nil {
			return fail("%v", err)
		}
	}
	files, fingerprint, err := readModel(dir)
	if err != nil {
		return fail("%v", err)
	}
	var cfg bert.Config
	if err := readJSON(files, "config.json", &cfg); err != nil {
		return fail("%v", err)
	}
	if cfg.ModelType != "bert" {
		return fail("config.json: model_type %q, architectures %v: only BERT encoders (model_type \"bert\") are supported", cfg.ModelType, cfg.Architectures)
	}
	if cfg.HiddenSize <= 0 || cfg.NumAttentionHeads <= 0 || cfg.HiddenSize%cfg.NumAttentionHeads != 0 ||
		cfg.NumHiddenLayers <= 0 || cfg.IntermediateSize <= 0 || cfg.MaxPositionEmbeddings < 3 || cfg.TypeVocabSize <= 0 {
		return fail("config.json: inconsistent sizes (hidden_size %d, num_attention_heads %d, num_hidden_layers %d, intermediate_size %d, max_position_embeddings %d, type_vocab_size %d)",
			cfg.HiddenSize, cfg.NumAttentionHeads, cfg.NumHiddenLayers, cfg.IntermediateSize, cfg.MaxPositionEmbeddings, cfg.TypeVocabSize)
	}
	if cfg.HiddenAct != "gelu" {
		return fail("config.json: hidden_act %q: only \"gelu\" is supported", cfg.HiddenAct)
	}
	vocab, err := readVocab(files["vocab.txt"])
	if err != nil {
		return fail("%v", err)
	}
	if n := len(vocab.Items()); n != cfg.VocabSize {
		return fail("vocab.txt has %d entries, config.json vocab_size is %d", n, cfg.VocabSize)
	}
	for _, tok := range []string{wordpiecetokenizer.DefaultClassToken, wordpiecetokenizer.DefaultSequenceSeparator, wordpiecetokenizer.DefaultUnknownToken} {
		if _, ok := vocab.ID(tok); !ok {
			return fail("vocab.txt has no %s token", tok)
		}
	}
	lower := true // BertTokenizer's default
	if _, ok := files["tokenizer_config.json"]; ok {
		var tc struct {
			DoLowerCase *bool `json:"do_lower_case"`
		}
		if err := readJSON(files, "tokenizer_config.json", &tc); err != nil {
			return fail("%v", err)
		}
		if tc.DoLowerCase != nil {
			lower = *tc.DoLowerCase
		}
	}
	maxTokens := cfg.MaxPositionEmbeddings
	if _, ok := files["sentence_bert_config.json"]; ok {
		var sc struct {
			MaxSeqLength *int `json:"max_seq_length"`
		}
		if err := readJSON(files, "sentence_bert_config.json", &sc); err != nil {
			return fail("%v", err)
		}
		if n := sc.MaxSeqLength; n != nil {
			if *n < 3 {
				return fail("sentence_bert_config.json: max_seq_length %d: want at least 3 ([CLS], one word piece, [SEP])", *n)
			}
			maxTokens = min(maxTokens, *n)
		}
	}
	weights, err := readSafetensors("model.safetensors", files["model.safetensors"])
	if err != nil {
		return fail("%v", err)
	}
	enc, err := newEncoder(kn, cfg, weights)
	if err != nil {
		return fail("model.safetensors: %v", err)
	}
	return &Model{
		enc:         enc,
		vocab:       vocab,
		tokenizer:   wordpiecetokenizer.New(vocab),
		lower:       lower,
		maxTokens:   maxTokens,
		pooling:     pooling,
		fingerprint: fingerprint,
	}, nil
}

// newEncoder lays the Hugging Face BERT weights (names with or without the
// "bert." prefix) out for the kernel kn (encoder).
func newEncoder(kn *kernel, cfg bert.Config, w map[string]tensor) (*encoder, error) {
	var err error
	get := func(name string, shape ...int) []float32 {
		if err != nil {
			return nil
		}
		t, ok := w[name]
		if !ok {
			t, ok = w["bert."+name]
		}
		if !ok {
			err = fmt.Errorf("missing tensor %s", name)
			return nil
		}
		if fmt.Sprint(t.shape) != fmt.Sprint(shape) {
			err = fmt.Errorf("tensor %s has shape %v, want %v", name, t.shape, shape)
			return nil
		}
		return t.data
	}
	h, inter := cfg.HiddenSize, cfg.IntermediateSize
	getNorm := func(prefix string) layerNorm {
		return layerNorm{w: get(prefix+".weight", h), b: get(prefix+".bias", h), eps: cfg.LayerNormEps}
	}
	getDense := func(prefix string, out, in int) dense {
		wt, b := get(prefix+".weight", out, in), get(prefix+".bias", out)
		if err != nil {
			return dense{}
		}
		return newDense(kn, wt, b, out, in)
	}
	e := &encoder{
		kn:       kn,
		dim:      h,
		heads:    cfg.NumAttentionHeads,
		inter:    inter,
		word:     get("embeddings.word_embeddings.weight", cfg.VocabSize, h),
		pos:      get("embeddings.position_embeddings.weight", cfg.MaxPositionEmbeddings, h),
		tokTypes: get("embeddings.token_type_embeddings.weight", cfg.TypeVocabSize, h),
		embNorm:  getNorm("embeddings.LayerNorm"),
	}
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		var qkvW, qkvB []float32
		for _, proj := range []string{"query", "key", "value"} {
			qkvW = append(qkvW, get(p+"attention.self."+proj+".weight", h, h)...)
			qkvB = append(qkvB, get(p+"attention.self."+proj+".bias", h)...)
		}
		var l layer
		if err == nil {
			l.qkv = newDense(kn, qkvW, qkvB, 3*h, h)
		}
		l.out = getDense(p+"attention.output.dense", h, h)
		l.attNorm = getNorm(p + "attention.output.LayerNorm")
		l.up = getDense(p+"intermediate.dense", inter, h)
		l.down = getDense(p+"output.dense", h, inter)
		l.ffNorm = getNorm(p + "output.LayerNorm")
		e.layers = append(e.layers, l)
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Tokens returns the word pieces Embed encodes for text: Hugging Face
// BertTokenizer's basic tokenization (control characters dropped, CJK
// ideographs split apart, whitespace split; when the model lowercases,
// lowercase and strip accents; every ASCII symbol and Unicode punctuation
// character a token of its own), then cybertron's WordPiece, truncated to
// MaxTokens-2 pieces and wrapped in [CLS] and [SEP]. A change here (or in
// basicTokens, embedOne's pooling or normalize) that can change a text's
// vector must bump cacheVersion (cache.go).
func (m *Model) Tokens(text string) []string {
	pieces := m.WordPieces(text)
	if len(pieces) > m.maxTokens-2 {
		pieces = pieces[:m.maxTokens-2]
	}
	out := make([]string, 0, len(pieces)+2)
	out = append(out, wordpiecetokenizer.DefaultClassToken)
	out = append(out, pieces...)
	return append(out, wordpiecetokenizer.DefaultSequenceSeparator)
}

// WordPieces returns all the word pieces of text, as Tokens tokenizes it
// but neither truncated nor wrapped in [CLS] and [SEP]: a text's length in
// the encoder's tokens, whatever its length.
func (m *Model) WordPieces(text string) []string {
	var words []tokenizers.StringOffsetsPair
	for _, w := range basicTokens(text, m.lower) {
		words = append(words, tokenizers.StringOffsetsPair{String: w})
	}
	return tokenizers.GetStrings(m.tokenizer.WordPieceTokenize(words))
}

// basicTokens is BertTokenizer's BasicTokenizer (transformers'
// tokenization_bert.py) with tokenize_chinese_chars on and strip_accents
// following lower.
func basicTokens(text string, lower bool) []string {
	var clean strings.Builder
	for _, r := range text {
		switch {
		case r == 0 || r == 0xfffd || isControl(r):
		case isWhitespace(r):
			clean.WriteByte(' ')
		case isCJK(r):
			clean.WriteByte(' ')
			clean.WriteRune(r)
			clean.WriteByte(' ')
		default:
			clean.WriteRune(r)
		}
	}
	var out []string
	for _, w := range strings.Fields(clean.String()) {
		if lower {
			w = stripAccents(strings.ToLower(w))
		}
		start := 0
		for i, r := range w {
			if isPunct(r) {
				if start < i {
					out = append(out, w[start:i])
				}
				out = append(out, string(r))
				start = i + len(string(r))
			}
		}
		if start < len(w) {
			out = append(out, w[start:])
		}
	}
	return out
}

func isWhitespace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || unicode.Is(unicode.Zs, r)
}

func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

func isPunct(r rune) bool {
	if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
		return true
	}
	return unicode.IsPunct(r)
}

func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) || (r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) || (r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}

// stripAccents removes nonspacing marks after canonical decomposition, as
// BertTokenizer does for lowercasing models.
func stripAccents(s string) string {
	d := norm.NFD.String(s)
	var b strings.Builder
	b.Grow(len(d))
	for _, r := range d {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ids returns the vocabulary ids of Tokens(text).
func (m *Model) ids(text string) []int {
	toks := m.Tokens(text)
	ids := make([]int, len(toks))
	unk, _ := m.vocab.ID(wordpiecetokenizer.DefaultUnknownToken)
	for i, t := range toks {
		id, ok := m.vocab.ID(t)
		if !ok {
			id = unk
		}
		ids[i] = id
	}
	return ids
}

// pool returns the L2-normalised pooling of one text's hidden states.
func (m *Model) pool(states []float32) []float32 {
	dim := m.Dim()
	out := make([]float32, dim)
	switch m.pooling {
	case CLS:
		copy(out, states[:dim])
	default:
		sum := make([]float64, dim)
		for r := 0; r < len(states); r += dim {
			for i, v := range states[r : r+dim] {
				sum[i] += float64(v)
			}
		}
		n := float64(len(states) / dim)
		for i := range out {
			out[i] = float32(sum[i] / n)
		}
	}
	normalize(out)
	return out
}

// Embed returns one L2-normalised vector of length Dim per text, in input
// order, computed by up to batch goroutines (batch < 1 means 1). The texts
// are encoded in groups of about equal size, up to 2,048 tokens each, in
// input order: each group's dense layers as one matrix product over the
// tokens of all its texts, every text at its own length (nothing is
// padded), attention per text. A text's vector does not depend on batch
// or on the other texts, bit for bit. Texts longer than MaxTokens word
// pieces are truncated. Embed checks ctx between groups and returns
// ctx.Err() once it is done. Embed is safe for concurrent use.
func (m *Model) Embed(ctx context.Context, texts []string, batch int) ([][]float32, error) {
	threads := max(batch, 1)
	ids := make([][]int, len(texts))
	parallel(threads, len(texts), func() (func(int), func()) {
		return func(i int) { ids[i] = m.ids(texts[i]) }, nil
	})
	// Groups of about equal size, none over groupTokens unless one text
	// alone is: 2,300 tokens go as two groups of 1,150, not 2,048 and 252.
	total := 0
	for _, s := range ids {
		total += len(s)
	}
	size := total
	if groups := (total + groupTokens - 1) / groupTokens; groups > 1 {
		size = (total + groups - 1) / groups
	}
	out := make([][]float32, len(texts))
	for start := 0; start < len(texts); {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("embed: %w", err)
		}
		end, tokens := start, 0
		for end < len(texts) && (end == start || tokens+len(ids[end]) <= size) {
			tokens += len(ids[end])
			end++
		}
		m.enc.forward(ids[start:end], threads, func(states []float32) {
			dim, row := m.Dim(), 0
			for i := start; i < end; i++ {
				out[i] = m.pool(states[row*dim : (row+len(ids[i]))*dim])
				row += len(ids[i])
			}
		})
		start = end
	}
	return out, nil
}

// Hit is one ranked document: its index in the docs slice and its cosine
// similarity to the query.
type Hit struct {
	Doc   int
	Score float64
}

// TopK returns the k documents most cosine-similar to query, best first,
// ties broken by lower document index; all of them when k exceeds
// len(docs), none when k < 1. The search is exact (every document is
// scored). A zero vector has similarity 0 to everything. Every document
// must have the query's length; TopK panics otherwise.
func TopK(query []float32, docs [][]float32, k int) []Hit {
	if k < 1 {
		return nil
	}
	qn := norm2(query)
	hits := make([]Hit, len(docs))
	for i, d := range docs {
		if len(d) != len(query) {
			panic(fmt.Sprintf("embed.TopK: document %d has length %d, query has %d", i, len(d), len(query)))
		}
		var dot float64
		for j, v := range d {
			dot += float64(v) * float64(query[j])
		}
		s := 0.0
		if dn := norm2(d); dn > 0 && qn > 0 {
			s = dot / (dn * qn)
		}
		hits[i] = Hit{Doc: i, Score: s}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].Score > hits[b].Score })
	return hits[:min(k, len(hits))]
}

func norm2(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func normalize(v []float32) {
	if n := norm2(v); n > 0 {
		for i := range v {
			v[i] = float32(float64(v[i]) / n)
		}
	}
}

// readVocab reads a WordPiece vocabulary, one token a line, the line number
// (from 0) being the token id. A repeated token is an error: cybertron's
// vocabulary would silently renumber every later token.
func readVocab(b []byte) (*vocabulary.Vocabulary, error) {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	seen := make(map[string]int, len(lines))
	for i, l := range lines {
		l = strings.TrimSuffix(l, "\r")
		lines[i] = l
		if j, ok := seen[l]; ok {
			return nil, fmt.Errorf("vocab.txt:%d: token %q repeats line %d", i+1, l, j+1)
		}
		seen[l] = i
	}
	return vocabulary.New(lines), nil
}

func readJSON(files map[string][]byte, name string, v any) error {
	if err := json.Unmarshal(files[name], v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// modelFiles are the files Load reads from a model directory, in the order
// Fingerprint hashes them; the optional ones may be absent.
var modelFiles = []struct {
	name     string
	optional bool
}{
	{"config.json", false},
	{"vocab.txt", false},
	{"model.safetensors", false},
	{"tokenizer_config.json", true},
	{"sentence_bert_config.json", true},
}

// Fingerprint returns a digest ("sha256:" and hex) of the files Load reads
// from dir: config.json, vocab.txt, model.safetensors and, when present,
// tokenizer_config.json and sentence_bert_config.json, each hashed with its
// name and length (an absent optional file is hashed as absent). Two
// directories with the same fingerprint load the same model. It fails,
// naming the file, when a required file is missing or unreadable, without
// checking the files' content (Load does).
func Fingerprint(dir string) (string, error) {
	_, fp, err := readModel(dir)
	if err != nil {
		return "", fmt.Errorf("embed: %s: %w", dir, err)
	}
	return fp, nil
}

// readModel reads the files Load uses and their fingerprint.
func readModel(dir string) (map[string][]byte, string, error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, "", fmt.Errorf("model directory: %w", err)
	} else if !fi.IsDir() {
		return nil, "", fmt.Errorf("%s is not a directory", dir)
	}
	files := map[string][]byte{}
	h := sha256.New()
	for _, f := range modelFiles {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		switch {
		case errors.Is(err, fs.ErrNotExist) && f.optional:
			fmt.Fprintf(h, "%s absent\n", f.name)
			continue
		case errors.Is(err, fs.ErrNotExist):
			return nil, "", fmt.Errorf("missing %s (want a Hugging Face BERT directory with config.json, vocab.txt and model.safetensors)", f.name)
		case err != nil:
			return nil, "", err
		}
		fmt.Fprintf(h, "%s %d\n", f.name, len(b))
		h.Write(b)
		files[f.name] = b
	}
	return files, "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
