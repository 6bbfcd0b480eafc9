package parametric_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/parametric/parametrictest"
)

// The tiny model for editing: 60 synthetic facts, pretrained for 800 steps
// (at 400 its keys for different subjects are so alike that no linear
// editor reaches both goals; at 800 AlphaEdit does).
const (
	editFacts = 60
	editSteps = 800
	editCount = 20 // the first 20 facts get new objects; the other 40 must not change
)

// editData writes, for the tiny model's facts: requests.parquet (the first
// editCount facts, each moved to another object of its relation, with
// target_true and a chat-form paraphrase), locality.parquet (the other
// facts) and preserved.jsonl (the pretraining texts of the other facts:
// the knowledge whose keys MEMIT's and AlphaEdit's statistics preserve).
const editData = `import json, random, sys
import pyarrow as pa, pyarrow.parquet as pq
from transformers import AutoTokenizer
from lacuna_parametric import tiny
base, out, n, n_edit = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tok = AutoTokenizer.from_pretrained(base)
facts = tiny.synthetic_facts(n, seed=1)
questions = dict(tiny.RELATIONS)
rng = random.Random(7)
reqs, loc = [], []
for i, f in enumerate(facts):
    row = {"prompt": "{} " + f["relation"], "subject": f["subject"]}
    if i < n_edit:
        new = rng.choice([o for o in tiny.OBJECTS[f["relation"]] if o != f["object"]])
        chat = tok.apply_chat_template([{"role": "user", "content": questions[f["relation"]].format(s="{}")}],
                                       tokenize=False, add_generation_prompt=True)
        reqs.append(dict(row, target=new, target_true=f["object"], paraphrase=chat + "{} " + f["relation"]))
    else:
        loc.append(dict(row, target=f["object"]))
pq.write_table(pa.Table.from_pylist(reqs), out + "/requests.parquet")
pq.write_table(pa.Table.from_pylist(loc), out + "/locality.parquet")
with open(out + "/preserved.jsonl", "w") as fh:
    for t in tiny.fact_texts(facts[n_edit:], tok):
        fh.write(json.dumps({"text": t}) + "\n")
`

// editReload loads what an editor wrote the way a server would and counts
// the requests whose greedy continuation starts with the new target: for
// GRACE the fresh base alone, then with the codebook attached; for MEMIT
// and AlphaEdit the checkpoint through AutoModelForCausalLM.
const editReload = `import json, sys, torch
import pyarrow.parquet as pq
from transformers import AutoModelForCausalLM, AutoTokenizer
from lacuna_parametric import editutil, grace
torch.set_num_threads(1)
method, base, out, requests = sys.argv[1:5]
reqs = pq.read_table(requests).to_pylist()
def efficacy(model, tok):
    return sum(editutil.starts_with(tok, editutil.greedy(model, tok, r["prompt"].format(r["subject"]), 3), r["target"])
               for r in reqs) / len(reqs)
res = {}
if method == "grace":
    tok = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base).eval()
    res["without"] = efficacy(model, tok)
    grace.attach(model, out)
    res["with"] = efficacy(model, tok)
else:
    tok = AutoTokenizer.from_pretrained(out + "/model")
    model = AutoModelForCausalLM.from_pretrained(out + "/model").eval()
    res["with"] = efficacy(model, tok)
print(json.dumps(res))
`

type editManifest struct {
	Method           string          `json:"method"`
	Layers           []int           `json:"layers"`
	Requests         int             `json:"requests"`
	EfficacyPre      float64         `json:"efficacy_pre"`
	EfficacyPost     float64         `json:"efficacy_post"`
	EfficacyProbPost float64         `json:"efficacy_prob_post"`
	Paraphrase       *float64        `json:"paraphrase"`
	Locality         *float64        `json:"locality"`
	WallSeconds      float64         `json:"wall_seconds"`
	Stats            *editStatsMeta  `json:"stats"`
	Hparams          json.RawMessage `json:"hparams"`
}

type editStatsMeta struct {
	ModelConfigSHA256 string `json:"model_config_sha256"`
	CorpusSHA256      string `json:"corpus_sha256"`
	StatsSHA256       string `json:"stats_sha256"`
	Layers            []int  `json:"layers"`
	Samples           int    `json:"samples"`
	Computed          bool   `json:"computed"`
}

type editEnv struct {
	py, scripts, base, dir string
}

func (e editEnv) run(t *testing.T, module string, args ...string) (stdout string, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := parametrictest.Cmd(ctx, t, e.py, e.scripts, module, args...)
	var o, s bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &s
	err = cmd.Run()
	return o.String(), s.String(), err
}

func (e editEnv) edit(t *testing.T, out string, args ...string) editManifest {
	t.Helper()
	args = append([]string{"--base", e.base, "--requests", filepath.Join(e.dir, "requests.parquet"),
		"--locality", filepath.Join(e.dir, "locality.parquet"), "--out", out, "--threads", "1", "--seed", "0"}, args...)
	_, stderr, err := e.run(t, "edit", args...)
	if err != nil {
		t.Fatalf("edit %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	if !strings.Contains(stderr, "request 1/") {
		t.Errorf("no progress lines on stderr:\n%s", stderr)
	}
	var m editManifest
	editReadJSON(t, filepath.Join(out, "manifest.json"), &m)
	return m
}

func editReadJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func editFileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// orNone is *p, or -1 when the manifest has no such number.
func orNone(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}

// Hyperparameters for the tiny model, whose scale is not the papers'
// (see memit.HParams, alphaedit.HParams and grace.HParams): its facts are
// looked up at the prompt's last token (prompt_last), the residual there
// is small (clamp 2), it knows no text to sample prefixes from, its
// statistics cover ~1,000 tokens (λ 600 for MEMIT, null-space threshold
// 1e-4 and ridge 0.01 for AlphaEdit), and other subjects' keys lie 0.17 or
// more from an edit's at layer 2 (GRACE's ε 0.05).
const (
	tinyMEMIT     = `{"key_position": "prompt_last", "n_prefixes": 0, "clamp_norm_factor": 2, "mom2_update_weight": 600, "v_loss_stop": 0.3}`
	tinyAlphaEdit = `{"key_position": "prompt_last", "n_prefixes": 0, "clamp_norm_factor": 2, "nullspace_threshold": 1e-4, "l2": 0.01}`
	tinyGRACE     = `{"epsilon_init": 0.05}`
)

// TestEditorsRewriteFactsAndKeepTheRest edits 20 of the tiny model's 60
// facts with each editor and checks the edits (efficacy), the other 40
// facts (locality), that MEMIT and AlphaEdit reuse one set of statistics,
// and that what each editor wrote loads the way a server loads it. The
// goal is 0.9 efficacy and 0.9 locality; the floors are below what each
// reaches (logged), with room for a fact or two of numerical noise.
func TestEditorsRewriteFactsAndKeepTheRest(t *testing.T) {
	py := parametrictest.Python(t)
	start := time.Now()
	env := editEnv{py: py, scripts: parametrictest.Scripts(t), base: parametrictest.TinyModel(t, editFacts, editSteps), dir: t.TempDir()}
	t.Logf("tiny model (%d facts, %d steps) ready after %s", editFacts, editSteps, time.Since(start).Round(time.Second))

	cmd := parametrictest.Cmd(context.Background(), t, py, env.scripts, "edit")
	cmd.Args = []string{py, "-c", editData, env.base, env.dir, strconv.Itoa(editFacts), strconv.Itoa(editCount)}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writing the edit data: %v\n%s", err, out)
	}

	stats := filepath.Join(env.dir, "stats")
	corpus := filepath.Join(env.dir, "preserved.jsonl")
	if _, stderr, err := env.run(t, "edit", "--stats-only", "--base", env.base, "--corpus", corpus,
		"--stats-out", stats, "--layers", "1,2", "--threads", "1"); err != nil {
		t.Fatalf("edit --stats-only: %v\n%s", err, stderr)
	}
	var meta editStatsMeta
	editReadJSON(t, filepath.Join(stats, "stats.json"), &meta)
	if meta.CorpusSHA256 != editFileSHA256(t, corpus) || meta.ModelConfigSHA256 != editFileSHA256(t, filepath.Join(env.base, "config.json")) ||
		meta.Samples == 0 || len(meta.Layers) != 2 || meta.StatsSHA256 != editFileSHA256(t, filepath.Join(stats, "stats.safetensors")) {
		t.Fatalf("stats.json = %+v", meta)
	}

	for _, tc := range []struct {
		method      string
		args        []string
		minEfficacy float64
		minLocality float64
	}{
		{"grace", []string{"--layers", "2", "--hparams", tinyGRACE}, 0.9, 0.9},
		{"memit", []string{"--layers", "1,2", "--stats", stats, "--hparams", tinyMEMIT}, 0.8, 0.8},
		{"alphaedit", []string{"--layers", "1,2", "--stats", stats, "--hparams", tinyAlphaEdit}, 0.9, 0.85},
	} {
		t.Run(tc.method, func(t *testing.T) {
			out := filepath.Join(env.dir, tc.method)
			m := env.edit(t, out, append([]string{"--method", tc.method}, tc.args...)...)
			t.Logf("%s: efficacy %.3f -> %.3f (p(new) > p(old): %.3f), locality %.3f, paraphrase %.3f, %.1fs",
				tc.method, m.EfficacyPre, m.EfficacyPost, m.EfficacyProbPost, orNone(m.Locality), orNone(m.Paraphrase), m.WallSeconds)
			if m.Requests != editCount || m.Method != tc.method {
				t.Errorf("manifest: %d requests by %q", m.Requests, m.Method)
			}
			if m.EfficacyPre > 0.1 {
				t.Errorf("efficacy_pre = %.3f: the base model already says the new objects", m.EfficacyPre)
			}
			if m.EfficacyPost < tc.minEfficacy || m.EfficacyPost < m.EfficacyPre+0.5 {
				t.Errorf("efficacy_post = %.3f, want ≥ %.2f", m.EfficacyPost, tc.minEfficacy)
			}
			if orNone(m.Locality) < tc.minLocality {
				t.Errorf("locality = %.3f, want ≥ %.2f", orNone(m.Locality), tc.minLocality)
			}
			if tc.method == "grace" {
				if m.Stats != nil {
					t.Errorf("grace reports statistics: %+v", m.Stats)
				}
			} else if m.Stats == nil || m.Stats.Computed || m.Stats.StatsSHA256 != meta.StatsSHA256 {
				t.Errorf("manifest stats = %+v, want the --stats-only statistics reused (%s)", m.Stats, meta.StatsSHA256)
			}

			cmd := parametrictest.Cmd(context.Background(), t, py, env.scripts, "edit")
			cmd.Args = []string{py, "-c", editReload, tc.method, env.base, out, filepath.Join(env.dir, "requests.parquet")}
			var o, e bytes.Buffer
			cmd.Stdout, cmd.Stderr = &o, &e
			if err := cmd.Run(); err != nil {
				t.Fatalf("reloading: %v\n%s", err, e.String())
			}
			var got map[string]float64
			if err := json.Unmarshal(o.Bytes(), &got); err != nil {
				t.Fatalf("reload said %q: %v", o.String(), err)
			}
			t.Logf("%s reloaded: %v", tc.method, got)
			if got["with"] != m.EfficacyPost {
				t.Errorf("reloaded efficacy %.3f, the editor's %.3f", got["with"], m.EfficacyPost)
			}
			if w, ok := got["without"]; ok && w != m.EfficacyPre {
				t.Errorf("the base without its codebook: efficacy %.3f, want the base's %.3f", w, m.EfficacyPre)
			}
		})
	}

	// Sequential editing, four batches of five: AlphaEdit's update keeps
	// the earlier batches' keys (Kp) out of its way; MEMIT's does not.
	t.Run("sequential", func(t *testing.T) {
		eff := map[string]float64{}
		for _, tc := range []struct{ method, hp string }{{"memit", tinyMEMIT}, {"alphaedit", tinyAlphaEdit}} {
			hp := strings.TrimSuffix(tc.hp, "}") + `, "batch_size": 5}`
			m := env.edit(t, filepath.Join(env.dir, "seq-"+tc.method), "--method", tc.method, "--layers", "1,2", "--stats", stats, "--hparams", hp)
			eff[tc.method] = m.EfficacyPost
			t.Logf("sequential %s: efficacy %.3f, locality %.3f", tc.method, m.EfficacyPost, orNone(m.Locality))
		}
		if eff["alphaedit"] < 0.85 || eff["alphaedit"] < eff["memit"] {
			t.Errorf("after 4 sequential batches: AlphaEdit efficacy %.3f, MEMIT %.3f; want AlphaEdit ≥ 0.85 and ≥ MEMIT", eff["alphaedit"], eff["memit"])
		}
	})
	t.Logf("total %s", time.Since(start).Round(time.Second))
}

// TestEditRejectsBadInputOnOneLine: input mistakes end the editor with
// exit status 2 and one line on stderr, before any model is loaded.
func TestEditRejectsBadInputOnOneLine(t *testing.T) {
	py := parametrictest.Python(t)
	env := editEnv{py: py, scripts: parametrictest.Scripts(t), dir: t.TempDir()}
	base := filepath.Join(env.dir, "base")
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	reqs := filepath.Join(env.dir, "requests.jsonl")
	if err := os.WriteFile(reqs, []byte(`{"prompt": "lives in", "subject": "Temivo", "target": "Oslo"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(env.dir, "out")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown hyperparameter", []string{"--method", "grace", "--base", base, "--requests", reqs, "--out", out, "--hparams", `{"epsilon": 1}`}, "unknown hyperparameters"},
		{"prompt without a subject", []string{"--method", "grace", "--base", base, "--requests", reqs, "--out", out}, "exactly one {}"},
		{"no statistics", []string{"--method", "memit", "--base", base, "--requests", reqs, "--out", out}, "needs --stats"},
		{"unknown method", []string{"--method", "rome", "--base", base, "--requests", reqs, "--out", out}, "invalid choice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, err := env.run(t, "edit", tc.args...)
			code := -1
			if ee, ok := err.(interface{ ExitCode() int }); ok {
				code = ee.ExitCode()
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line saying %q", code, stderr, tc.want)
			}
		})
	}
}
