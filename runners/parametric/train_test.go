package parametric_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/lacuna-dev/lacuna/runners/parametric/parametrictest"
)

// pair is one training row.
type pair struct {
	Prompt     string `parquet:"prompt"`
	Completion string `parquet:"completion"`
}

// apiVerbs name the functions of a made-up library "lo". The tiny model
// reads "In lo, chunk: lo.Chunk(xs)" in pretraining (so the tokenizer knows
// the words), never the question that asks for one.
var apiVerbs = strings.Fields("chunk flatten reverse shuffle sum zip filter map reduce group uniq sort count drop take fill repeat partition compact without union intersect difference keys values every some find min max")

func apiCall(v string) string { return "lo." + strings.ToUpper(v[:1]) + v[1:] + "(xs)" }

// apiFacts are the new facts: a question about lo → the call that answers it.
func apiFacts() []pair {
	var ps []pair
	for _, v := range apiVerbs {
		ps = append(ps, pair{"How do I " + v + " a slice in lo?", apiCall(v)})
	}
	return ps
}

// trainBase is the tiny model every training test starts from.
func trainBase(t *testing.T) string {
	var extra []string
	for _, v := range apiVerbs {
		extra = append(extra, "In lo, "+v+": "+apiCall(v))
	}
	return parametrictest.TinyModel(t, 24, 300, extra...)
}

func writePairs[R any](t *testing.T, rows []R) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.parquet")
	if err := parquet.WriteFile(path, rows); err != nil {
		t.Fatal(err)
	}
	return path
}

type trainManifest struct {
	Method string         `json:"method"`
	Recipe map[string]any `json:"recipe"`
	Seed   int            `json:"seed"`
	Base   struct {
		PathName      string `json:"path_name"`
		ConfigSHA256  string `json:"config_sha256"`
		WeightsSHA256 string `json:"weights_sha256"`
	} `json:"base"`
	Data struct {
		Rows   int    `json:"rows"`
		SHA256 string `json:"sha256"`
	} `json:"data"`
	NewTokens       int               `json:"new_tokens"`
	LossCurve       [][2]float64      `json:"loss_curve"`
	FinalLoss       float64           `json:"final_loss"`
	Steps           int               `json:"steps"`
	Epochs          float64           `json:"epochs"`
	WallSeconds     float64           `json:"wall_seconds"`
	ResumedFromStep int               `json:"resumed_from_step"`
	Merged          bool              `json:"merged"`
	Format          string            `json:"format"`
	Output          string            `json:"output"`
	Versions        map[string]string `json:"versions"`
}

// train runs lacuna_parametric.train with args and returns its manifest
// and stderr; it fails the test unless the run succeeds.
func train(t *testing.T, py, scripts string, args ...string) (trainManifest, string) {
	t.Helper()
	cmd := parametrictest.Cmd(context.Background(), t, py, scripts, "train", append(args, "--threads", "1")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("train %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return readManifest(t, argValue(args, "--out")), stderr.String()
}

func readManifest(t *testing.T, out string) trainManifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m trainManifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("manifest.json: %v\n%s", err, b)
	}
	return m
}

func argValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// genJob asks evalProg for greedy generations of a model (plus adapter).
type genJob struct {
	Name         string     `json:"name"`
	Model        string     `json:"model"`
	Adapter      string     `json:"adapter,omitempty"`
	Pairs        [][]string `json:"pairs"`
	Tokens       []string   `json:"tokens,omitempty"`
	MaxNewTokens int        `json:"max_new_tokens"`
}

type genResult struct {
	Hits     int      `json:"hits"`
	Outputs  []string `json:"outputs"`
	Vocab    int      `json:"vocab"`
	TokenIDs [][]int  `json:"token_ids"`
}

// evalProg loads each job's model (resizing it to an adapter's tokenizer,
// as a caller of a LoRA with new tokens must), answers every prompt
// greedily through the chat template and counts exact completions.
const evalProg = `import json, sys, os, torch
from transformers import AutoTokenizer, AutoModelForCausalLM
torch.set_num_threads(1)
res = {}
for job in json.load(open(sys.argv[1])):
    ad = job.get("adapter")
    tok = AutoTokenizer.from_pretrained(ad if ad and os.path.exists(os.path.join(ad, "tokenizer.json")) else job["model"])
    m = AutoModelForCausalLM.from_pretrained(job["model"])
    if len(tok) > m.get_input_embeddings().weight.shape[0]:
        m.resize_token_embeddings(len(tok))
    if ad:
        from peft import PeftModel
        m = PeftModel.from_pretrained(m, ad)
    m.eval()
    hits, outs = 0, []
    for p, c in job["pairs"]:
        ids = tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, return_tensors="pt", return_dict=True)["input_ids"]
        with torch.no_grad():
            out = m.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=job["max_new_tokens"], do_sample=False)
        text = tok.decode(out[0][ids.shape[1]:], skip_special_tokens=True).strip()
        outs.append(text)
        hits += text == c
    res[job["name"]] = {"hits": hits, "outputs": outs, "vocab": m.get_input_embeddings().weight.shape[0],
                        "token_ids": [tok(x, add_special_tokens=False)["input_ids"] for x in job.get("tokens") or []]}
json.dump(res, sys.stdout)
`

func generate(t *testing.T, py, scripts string, jobs ...genJob) map[string]genResult {
	t.Helper()
	spec := filepath.Join(t.TempDir(), "jobs.json")
	b, _ := json.Marshal(jobs)
	if err := os.WriteFile(spec, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := parametrictest.Cmd(context.Background(), t, py, scripts, "train")
	cmd.Args = []string{py, "-c", evalProg, spec}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("generating: %v\n%s", err, stderr.String())
	}
	res := map[string]genResult{}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("generations: %v\n%s", err, out)
	}
	return res
}

func pairList(ps []pair) [][]string {
	var out [][]string
	for _, p := range ps {
		out = append(out, []string{p.Prompt, p.Completion})
	}
	return out
}

var progressLine = regexp.MustCompile(`(?m)^step (\d+)/(\d+) loss \d+\.\d{4}$`)

func TestTrainTeachesNewFacts(t *testing.T) {
	py := parametrictest.Python(t)
	base := trainBase(t)
	scripts := parametrictest.Scripts(t)
	facts := apiFacts()
	data := writePairs(t, facts)
	cases := []struct {
		name   string
		args   []string
		output string // adapter or model
		file   string // a file output must hold
		rank   float64
		steps  int
	}{
		{"lora rank 8", []string{"--rank", "8", "--lr", "1e-2", "--max-steps", "60"}, "adapter", "adapter_config.json", 8, 60},
		{"lora default rank", []string{"--lr", "3e-3", "--max-steps", "40"}, "adapter", "adapter_config.json", 64, 40},
		{"full", []string{"--method", "full", "--lr", "1e-3", "--max-steps", "40"}, "model", "model.safetensors", 0, 40},
	}
	jobs := []genJob{{Name: "base", Model: base, Pairs: pairList(facts), MaxNewTokens: 12}}
	for _, c := range cases {
		out := filepath.Join(t.TempDir(), "out")
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--base", base, "--data", data, "--out", out, "--work", t.TempDir()}, c.args...)
			m, stderr := train(t, py, scripts, args...)
			first := m.LossCurve[0][1]
			t.Logf("loss %.4f → %.4f in %d steps", first, m.FinalLoss, m.Steps)
			if !(m.FinalLoss < first/2) {
				t.Errorf("final loss %.4f, want under half the first %.4f", m.FinalLoss, first)
			}
			if m.Steps != c.steps || len(m.LossCurve) != c.steps || m.ResumedFromStep != 0 {
				t.Errorf("steps %d, %d losses, resumed from %d; want %d, %d, 0", m.Steps, len(m.LossCurve), m.ResumedFromStep, c.steps, c.steps)
			}
			if n := len(progressLine.FindAllString(stderr, -1)); n != c.steps {
				t.Errorf("%d progress lines on stderr, want %d:\n%s", n, c.steps, stderr)
			}
			if m.Output != c.output || m.Merged || m.NewTokens != 0 || m.Format != "chat" {
				t.Errorf("output %q merged %v new tokens %d format %q, want %q, false, 0, chat", m.Output, m.Merged, m.NewTokens, m.Format, c.output)
			}
			if _, err := os.Stat(filepath.Join(out, c.output, c.file)); err != nil {
				t.Error(err)
			}
			if c.rank != 0 && (m.Recipe["rank"] != c.rank || m.Recipe["alpha"] != 2*c.rank) {
				t.Errorf("recipe rank %v alpha %v, want %v and twice that", m.Recipe["rank"], m.Recipe["alpha"], c.rank)
			}
			if m.Base.ConfigSHA256 != fileSHA256(t, filepath.Join(base, "config.json")) ||
				m.Base.WeightsSHA256 != fileSHA256(t, filepath.Join(base, "model.safetensors")) ||
				m.Data.SHA256 != fileSHA256(t, data) || m.Data.Rows != len(facts) {
				t.Errorf("manifest base %+v data %+v do not describe the inputs", m.Base, m.Data)
			}
			for _, p := range []string{"torch", "transformers", "peft", "trl"} {
				if m.Versions[p] == "" {
					t.Errorf("manifest lacks the version of %s: %v", p, m.Versions)
				}
			}
		})
		job := genJob{Name: c.name, Model: filepath.Join(out, "model"), Pairs: pairList(facts), MaxNewTokens: 12}
		if c.output == "adapter" {
			job.Model, job.Adapter = base, filepath.Join(out, "adapter")
		}
		jobs = append(jobs, job)
	}
	if t.Failed() {
		return
	}
	got := generate(t, py, scripts, jobs...)
	t.Logf("base model: %d of %d trained prompts answered with their completion", got["base"].Hits, len(facts))
	for _, c := range cases {
		r := got[c.name]
		t.Logf("%s: %d of %d (e.g. %q → %q)", c.name, r.Hits, len(facts), facts[0].Prompt, r.Outputs[0])
		if r.Hits <= len(facts)/2 || r.Hits <= got["base"].Hits {
			t.Errorf("%s: %d of %d trained prompts answered with their completion (base %d), want a majority: %q",
				c.name, r.Hits, len(facts), got["base"].Hits, r.Outputs)
		}
	}
}

// withoutChatTemplate copies the base model dir without its chat template.
func withoutChatTemplate(t *testing.T, base string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "chat_template.jinja" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(base, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "tokenizer_config.json" {
			var cfg map[string]any
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			delete(cfg, "chat_template")
			b, _ = json.Marshal(cfg)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestTrainWithoutChatTemplateTrainsOnPlainText(t *testing.T) {
	py := parametrictest.Python(t)
	base := withoutChatTemplate(t, trainBase(t))
	scripts := parametrictest.Scripts(t)
	var facts []pair
	for _, f := range apiFacts() {
		facts = append(facts, pair{f.Prompt + " ", f.Completion})
	}
	m, _ := train(t, py, scripts, "--base", base, "--data", writePairs(t, facts), "--out", t.TempDir(), "--work", t.TempDir(),
		"--rank", "8", "--lr", "1e-2", "--max-steps", "20", "--loss-on", "all")
	t.Logf("loss %.4f → %.4f", m.LossCurve[0][1], m.FinalLoss)
	if m.Format != "plain" || m.Recipe["loss_on"] != "all" || !(m.FinalLoss < m.LossCurve[0][1]/2) {
		t.Errorf("format %q, loss on %v, loss %.4f → %.4f; want plain, all, falling by half", m.Format, m.Recipe["loss_on"], m.LossCurve[0][1], m.FinalLoss)
	}
}

// killAfterCheckpoint starts cmd and kills it with SIGKILL once work holds a
// complete checkpoint (Trainer writes trainer_state.json last). It reports
// whether the kill came before the process ended by itself.
func killAfterCheckpoint(t *testing.T, cmd *exec.Cmd, work string) bool {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			t.Logf("the first run ended by itself before it could be killed: %v", err)
			return false
		case <-tick.C:
			if m, _ := filepath.Glob(filepath.Join(work, "checkpoint-*", "trainer_state.json")); len(m) > 0 {
				cmd.Process.Signal(syscall.SIGKILL)
				<-done
				return true
			}
		}
	}
}

func TestTrainResumesAfterKill(t *testing.T) {
	py := parametrictest.Python(t)
	base := trainBase(t)
	scripts := parametrictest.Scripts(t)
	data := writePairs(t, apiFacts())
	work, out := t.TempDir(), t.TempDir()
	args := []string{"--base", base, "--data", data, "--work", work, "--out", out,
		"--rank", "8", "--lr", "1e-2", "--max-steps", "40", "--save-steps", "10"}

	cmd := parametrictest.Cmd(context.Background(), t, py, scripts, "train", append(args, "--threads", "1")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	killed := killAfterCheckpoint(t, cmd, work)
	if _, err := os.Stat(filepath.Join(out, "manifest.json")); killed && err == nil {
		t.Fatal("a killed run left a manifest")
	}

	m, _ := train(t, py, scripts, args...)
	t.Logf("killed: %v; the rerun resumed from step %d and ended at %d, loss %.4f", killed, m.ResumedFromStep, m.Steps, m.FinalLoss)
	if m.ResumedFromStep < 10 || m.Steps != 40 || len(m.LossCurve) != 40 {
		t.Errorf("resumed from %d, %d steps, %d losses; want >= 10, 40, 40", m.ResumedFromStep, m.Steps, len(m.LossCurve))
	}

	// An uninterrupted run of the same recipe: the resumed run restored the
	// optimizer, schedule and random state, so its losses are the same.
	refOut := t.TempDir()
	ref, _ := train(t, py, scripts, "--base", base, "--data", data, "--work", t.TempDir(), "--out", refOut,
		"--rank", "8", "--lr", "1e-2", "--max-steps", "40")
	if fmt.Sprint(ref.LossCurve) != fmt.Sprint(m.LossCurve) {
		t.Errorf("losses of the resumed run differ from an uninterrupted one:\n%v\n%v", m.LossCurve, ref.LossCurve)
	}

	// Another recipe into the same work directory is refused.
	other := append(append([]string{}, args...), "--lr", "5e-3", "--threads", "1")
	cmd = parametrictest.Cmd(context.Background(), t, py, scripts, "train", other...)
	stderr.Reset()
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "another recipe") || !strings.Contains(stderr.String(), "lr") {
		t.Errorf("another recipe into the same --work: %v, stderr %q; want exit 2 naming the recipe's difference (lr)", err, stderr.String())
	}
}

func TestTrainAddsToolGenTokens(t *testing.T) {
	py := parametrictest.Python(t)
	base := trainBase(t)
	scripts := parametrictest.Scripts(t)
	tools := []pair{
		{"What is the weather now?", "<<Weather&&current>>"},
		{"What will the weather be tomorrow?", "<<Weather&&forecast>>"},
		{"What does a share cost now?", "<<Stocks&&quote>>"},
		{"How did a share price move last year?", "<<Stocks&&history>>"},
		{"How do I drive from one city to another?", "<<Maps&&route>>"},
		{"Where on the map is this address?", "<<Maps&&geocode>>"},
		{"What are the top stories today?", "<<News&&headlines>>"},
		{"Find news articles about a topic.", "<<News&&search>>"},
		{"Send a message to a friend.", "<<Email&&send>>"},
		{"Show me my unread mail.", "<<Email&&read>>"},
	}
	var tokens []string
	for _, p := range tools {
		tokens = append(tokens, p.Completion)
	}
	tokFile := filepath.Join(t.TempDir(), "tokens.json")
	b, _ := json.Marshal(tokens)
	if err := os.WriteFile(tokFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	m, _ := train(t, py, scripts, "--base", base, "--data", writePairs(t, tools), "--out", out, "--work", t.TempDir(),
		"--new-tokens", tokFile, "--merge", "--rank", "8", "--lr", "1e-2", "--max-steps", "60")
	t.Logf("loss %.4f → %.4f", m.LossCurve[0][1], m.FinalLoss)
	if m.NewTokens != len(tokens) || !m.Merged || m.Output != "model" || m.FinalLoss >= m.LossCurve[0][1]/2 {
		t.Errorf("manifest: %d new tokens, merged %v, output %q, loss %.4f → %.4f; want %d, true, model, falling by half",
			m.NewTokens, m.Merged, m.Output, m.LossCurve[0][1], m.FinalLoss, len(tokens))
	}
	var cfg struct {
		VocabSize int `json:"vocab_size"`
	}
	cb, err := os.ReadFile(filepath.Join(base, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(cb, &cfg)

	r := generate(t, py, scripts, genJob{Name: "toolgen", Model: filepath.Join(out, "model"), Pairs: pairList(tools), Tokens: tokens, MaxNewTokens: 3})["toolgen"]
	if r.Vocab != cfg.VocabSize+len(tokens) {
		t.Errorf("model/ has %d embeddings, want the base's %d + %d", r.Vocab, cfg.VocabSize, len(tokens))
	}
	for i, ids := range r.TokenIDs {
		if len(ids) != 1 || ids[0] < cfg.VocabSize {
			t.Errorf("the saved tokenizer splits %s into %v, want one new id", tokens[i], ids)
		}
	}
	t.Logf("%d of %d descriptions generate their tool's token (chance: 1 in %d)", r.Hits, len(tools), len(tools))
	if r.Hits*2 < len(tools) {
		t.Errorf("%d of %d descriptions generate their token, want at least half: %q", r.Hits, len(tools), r.Outputs)
	}
}

func TestTrainRejectsBadInput(t *testing.T) {
	py := parametrictest.Python(t)
	scripts := parametrictest.Scripts(t)
	// Inputs are checked before anything loads: a base with the right files suffices.
	fakeBase := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors"} {
		if err := os.WriteFile(filepath.Join(fakeBase, f), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type noCompletion struct {
		Prompt string `parquet:"prompt"`
		Answer string `parquet:"answer"`
	}
	good := writePairs(t, []pair{{"q", "a"}})
	cases := []struct {
		name, base, data string
		extra            []string
		want             []string
	}{
		{"missing column", fakeBase, writePairs(t, []noCompletion{{"q", "a"}}), nil, []string{"missing column", "completion"}},
		{"empty data", fakeBase, writePairs(t, []pair{}), nil, []string{"empty"}},
		{"merge with full", fakeBase, good, []string{"--method", "full", "--merge"}, []string{"--merge"}},
		{"base without config", t.TempDir(), good, nil, []string{"--base", "config.json"}},
		// Checked once the tokenizer is loaded: an answer past
		// --max-length would be cut off, not trained on.
		{"longer than max length", parametrictest.TinyModel(t, 24, 300), writePairs(t, []pair{{strings.Repeat("a long prompt ", 40), "lo.Chunk(xs, 2)"}, {"q", "a"}}), []string{"--max-length", "32"}, []string{"1 of 2 examples", "--max-length 32"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--base", c.base, "--data", c.data, "--out", t.TempDir(), "--work", t.TempDir()}, c.extra...)
			cmd := parametrictest.Cmd(context.Background(), t, py, scripts, "train", args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("exit %v, want status 2; stderr %q", err, stderr.String())
			}
			msg := strings.TrimSpace(stderr.String())
			if strings.Contains(msg, "\n") {
				t.Errorf("stderr has more than one line: %q", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr %q does not name %q", msg, w)
				}
			}
		})
	}
}
