package parametric_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/parametric"
	"github.com/lacuna-dev/lacuna/runners/parametric/parametrictest"
)

func TestMaterializeIsIdempotentAndNamedByDigest(t *testing.T) {
	dir := t.TempDir()
	a, err := parametric.Materialize(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parametric.Materialize(dir)
	if err != nil || a != b {
		t.Fatalf("second Materialize: %q %v, want %q", b, err, a)
	}
	if _, err := os.Stat(filepath.Join(a, parametric.Package, "tiny.py")); err != nil {
		t.Fatal(err)
	}
	if d := parametric.Digest(); len(d) != len("sha256:")+64 {
		t.Fatalf("Digest() = %q", d)
	}
}

func TestTinyModelRemembersItsFacts(t *testing.T) {
	py := parametrictest.Python(t)
	dir := parametrictest.TinyModel(t, 24, 300)
	prog := `import sys
from transformers import AutoTokenizer, AutoModelForCausalLM
from lacuna_parametric import tiny
tok = AutoTokenizer.from_pretrained(sys.argv[1]); m = AutoModelForCausalLM.from_pretrained(sys.argv[1])
ok = 0
facts = tiny.synthetic_facts(24, seed=1)
for f in facts:
    ids = tok(f["prompt"], return_tensors="pt").input_ids
    out = m.generate(ids, max_new_tokens=4, do_sample=False)
    ok += f["object"] in tok.decode(out[0][ids.shape[1]:])
print(ok)
`
	cmd := parametrictest.Cmd(context.Background(), t, py, parametrictest.Scripts(t), "tiny", "--help")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tiny --help: %v\n%s", err, out)
	}
	cmd = parametrictest.Cmd(context.Background(), t, py, parametrictest.Scripts(t), "tiny")
	cmd.Args = []string{py, "-c", prog, dir}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if last := lines[len(lines)-1]; last != "24" {
		t.Fatalf("the tiny model recalls %s of 24 facts, want all (output %q)", last, out)
	}
}
