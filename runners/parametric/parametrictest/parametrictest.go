// Package parametrictest gives tests a Python that runs lacuna_parametric
// and a tiny pretrained model that knows a set of synthetic facts.
package parametrictest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/parametric"
)

// Install says how to get the interpreter the tests need.
const Install = "make test-torchvenv && LACUNA_TORCH_PYTHON=$PWD/.cache/torchvenv/bin/python go test ..."

// Python returns $LACUNA_TORCH_PYTHON after checking its packages against
// requirements.txt; without it the test skips (fails when CI=true).
func Python(t testing.TB) string {
	t.Helper()
	py := os.Getenv("LACUNA_TORCH_PYTHON")
	if py == "" {
		msg := "LACUNA_TORCH_PYTHON is not set (a Python with runners/parametric/requirements.txt); to run: " + Install
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := parametric.Check(context.Background(), py); err != nil {
		t.Fatal(err)
	}
	return py
}

// Scripts materializes the scripts in a directory of the test's and
// returns it (for PYTHONPATH).
func Scripts(t testing.TB) string {
	t.Helper()
	dir, err := parametric.Materialize(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Cmd is python -m lacuna_parametric.<module> args with the scripts on
// PYTHONPATH and one torch thread.
func Cmd(ctx context.Context, t testing.TB, python, scripts, module string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, python, append([]string{"-m", parametric.Package + "." + module}, args...)...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+scripts, "OMP_NUM_THREADS=1", "TOKENIZERS_PARALLELISM=false", "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1")
	return cmd
}

var (
	tinyMu   sync.Mutex
	tinyDirs = map[string]string{}
)

// TinyModel returns the directory of a tiny Llama (lacuna_parametric.tiny)
// pretrained for steps on n synthetic facts (seed 1: the same facts as
// tiny.synthetic_facts(n, 1)) plus extra texts. It is built once per
// scripts' version and key, kept under the user's cache directory
// (lacuna/tiny), and must not be written to.
func TinyModel(t testing.TB, n, steps int, extra ...string) string {
	t.Helper()
	py := Python(t)
	key := strconv.Itoa(n) + "/" + strconv.Itoa(steps)
	for _, e := range extra {
		key += "\x00" + e
	}
	tinyMu.Lock()
	defer tinyMu.Unlock()
	if d, ok := tinyDirs[key]; ok {
		return d
	}
	// Pretraining is seeded and deterministic on CPU: a model built once
	// is reused by every test binary and run, under the user's cache,
	// named by the scripts' digest and the key (published by rename, so
	// concurrent builders are safe).
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256([]byte(parametric.Digest() + "\x00" + key))
	final := filepath.Join(cache, "lacuna", "tiny", hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(final, "model", "config.json")); err == nil {
		tinyDirs[key] = filepath.Join(final, "model")
		return tinyDirs[key]
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp(filepath.Dir(final), ".build-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	scripts, err := parametric.Materialize(filepath.Join(root, "scripts"))
	if err != nil {
		t.Fatal(err)
	}
	prog := `import json, sys
from lacuna_parametric import tiny
n, extra_path, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
facts = tiny.synthetic_facts(n, seed=1)
extra = json.load(open(extra_path))
boot = tiny.build_tokenizer(tiny.fact_texts(facts) + [f["question"] for f in facts] + extra, 1024)
texts = tiny.fact_texts(facts, boot) + extra
with open(out, "w") as f:
    for x in texts: f.write(json.dumps({"text": x}) + "\n")
`
	extraPath := filepath.Join(root, "extra.json")
	b, _ := json.Marshal(append([]string{}, extra...))
	if err := os.WriteFile(extraPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	corpus := filepath.Join(root, "corpus.jsonl")
	cmd := exec.Command(py, "-c", prog, strconv.Itoa(n), extraPath, corpus)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+scripts, "OMP_NUM_THREADS=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writing the tiny corpus: %v\n%s", err, out)
	}
	dir := filepath.Join(root, "model")
	cmd = Cmd(context.Background(), t, py, scripts, "tiny", "--corpus", corpus, "--out", dir, "--steps", strconv.Itoa(steps), "--seed", "1", "--threads", "1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pretraining the tiny model: %v\n%s", err, out)
	}
	if err := os.Rename(root, final); err != nil {
		if _, serr := os.Stat(filepath.Join(final, "model", "config.json")); serr != nil {
			t.Fatal(err)
		}
	}
	tinyDirs[key] = filepath.Join(final, "model")
	return tinyDirs[key]
}
