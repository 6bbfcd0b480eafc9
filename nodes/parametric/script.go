package parametric

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/jobenv"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
	"github.com/lacuna-dev/lacuna/runners/parametric"
)

// baseConfig is what every script node's config has (each config holds
// these fields itself: the engine decodes no embedded structs): the
// model it starts from (Base, a Hugging Face directory, or From, another
// train or edit node's full model), the interpreter (Python: on this
// machine one with runners/parametric/requirements.txt, checked at plan
// time, its packages' versions in the key; in a container the image's)
// and torch's CPU threads.
type baseConfig struct {
	Base    string
	From    *nodes.Ref
	Python  string
	Threads *int
}

func (c *baseConfig) python() string {
	if c.Python == "" {
		return "python3"
	}
	return c.Python
}

func (c *baseConfig) validate() error {
	switch {
	case c.Base == "" && c.From == nil:
		return nodes.Errorf("base", "No base model", "set base = \"DIR\" (a Hugging Face model directory) or from = node.train.NAME (a model another node wrote).")
	case c.Base != "" && c.From != nil:
		return nodes.Errorf("from", "Two base models", "base and from both name the model to start from: keep one.")
	case c.Threads != nil && *c.Threads < 0:
		return nodes.Errorf("threads", "Invalid threads", "threads must be 0 (torch's default) or more.")
	}
	return nil
}

// scriptPin is what Resolve fixed for a script node.
type scriptPin struct {
	job     *jobenv.Pin
	base    string // absolute base directory ("" with From)
	baseSum string
}

// resolve is the Resolve of every script node: resolveScript of its
// config's common part.
func resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	c := r.Config().(interface{ common() *baseConfig })
	p, id, err := resolveScript(ctx, r, c.common())
	if err != nil {
		return nil, err
	}
	return &nodes.Pinned{Identity: id, Value: p}, nil
}

// resolveScript pins where the script runs, the interpreter's packages
// (on this machine) and the base model's content.
func resolveScript(ctx context.Context, r nodes.Resolve, c *baseConfig) (*scriptPin, map[string]string, error) {
	job, id, err := jobenv.Resolve(ctx, r, "python", c.python(), "")
	if err != nil {
		return nil, nil, err
	}
	p := &scriptPin{job: job}
	id["scripts"] = parametric.Digest()
	if !job.InContainer() {
		have, err := parametric.Check(ctx, job.Program())
		if err != nil {
			return nil, nil, nodes.Errorf("python", "Interpreter lacks the scripts' packages", "%v", err)
		}
		id["packages"] = digestOf(strings.Join(have, "\n"))
	}
	if c.Base != "" {
		p.base = c.Base
		if !filepath.IsAbs(p.base) {
			p.base = filepath.Join(r.Dir(), p.base)
		}
		st, err := os.Stat(filepath.Join(p.base, "config.json"))
		if err != nil || !st.Mode().IsRegular() {
			return nil, nil, nodes.Errorf("base", "Not a model directory", "%s has no config.json: base is a Hugging Face model directory.", c.Base)
		}
		if p.baseSum, err = nodes.ContentDigest(p.base); err != nil {
			return nil, nil, nodes.Errorf("base", "Cannot read the base model", "%v", err)
		}
		id["base"] = p.baseSum
	}
	return p, id, nil
}

func digestOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

// baseModel is the model a script starts from, as a directory on this
// machine, and its identity for the output row.
type baseModel struct {
	dir    string
	digest string // the directory's content digest, or the weights blob's
	blob   string // the weights blob when it came from another node
}

// base returns the base model's directory: the resolved path, or the
// full model another node wrote, unpacked (once, verified) under the
// store's cache.
func (p *scriptPin) baseModel(r nodes.Run, c *baseConfig) (baseModel, error) {
	if c.From == nil {
		return baseModel{dir: p.base, digest: p.baseSum}, nil
	}
	w, err := llmenv.ReadTrained(r, *c.From)
	if err != nil {
		return baseModel{}, err
	}
	if w.Kind != llmenv.TrainedModel {
		return baseModel{}, nodes.Errorf("from", "Not a full model", "%s wrote a %s; from needs a full model (train with method = \"full\" or merge = true, or an edit by memit or alphaedit).", c.From.Node, w.Kind)
	}
	dir, err := llmenv.Unpack(r, w.Blob)
	if err != nil {
		return baseModel{}, err
	}
	return baseModel{dir: dir, digest: w.Blob, blob: w.Blob}, nil
}

// scriptRun is one execution of a script.
type scriptRun struct {
	module string
	// args build the script's arguments from where the job sees things.
	args func(paths jobenv.Paths) []string
	// inputs are mounted under $LACUNA_IN as <i>.parquet.
	inputs []nodes.Ref
	// aux are files the node writes for the script (a token list),
	// mounted read-only under "aux".
	aux map[string][]byte
	// mounts are further read-only directories by name ("base", "stats").
	mounts map[string]string
	// work is a directory kept across runs (checkpoints), "" for none.
	work string
	// arrange, when set, rearranges the output directory before its
	// entries become blobs (a set of files that is one directory blob).
	arrange func(out string) error
}

var stepLine = regexp.MustCompile(`^step (\d+)/(\d+)(?: loss ([0-9.eE+-]+|nan|inf))?`)
var itemLine = regexp.MustCompile(`^(?:request|batch|sample)s? (\d+)/(\d+)`)

// run runs the script and returns its outputs (the top-level entries of
// its output directory, as blobs), where it ran and how long it took.
// Progress lines ("step N/M loss X", "request i/N") become the node's
// progress and status.
func (p *scriptPin) run(ctx context.Context, r nodes.Run, c *baseConfig, s scriptRun) ([]jobenv.Output, string, time.Duration, error) {
	cache, err := r.CacheDir("parametric-scripts")
	if err != nil {
		return nil, "", 0, err
	}
	scripts, err := parametric.Materialize(cache)
	if err != nil {
		return nil, "", 0, err
	}
	mounts := []jobenv.Mount{{Name: "scripts", Source: scripts, Target: "/lacuna/scripts"}}
	if len(s.aux) > 0 {
		aux, err := os.MkdirTemp("", "lacuna-aux-")
		if err != nil {
			return nil, "", 0, err
		}
		defer os.RemoveAll(aux)
		for name, b := range s.aux {
			if err := os.WriteFile(filepath.Join(aux, name), b, 0o644); err != nil {
				return nil, "", 0, err
			}
		}
		mounts = append(mounts, jobenv.Mount{Name: "aux", Source: aux, Target: "/lacuna/aux"})
	}
	for name, dir := range s.mounts {
		mounts = append(mounts, jobenv.Mount{Name: name, Source: dir, Target: "/lacuna/" + name})
	}
	out, err := os.MkdirTemp("", "lacuna-script-out-")
	if err != nil {
		return nil, "", 0, err
	}
	defer os.RemoveAll(out)
	log := jobenv.NewLineLog(r)
	work := nodes.WorkOf(r)
	log.OnLine = func(line string) {
		if m := stepLine.FindStringSubmatch(line); m != nil {
			done, _ := strconv.ParseInt(m[1], 10, 64)
			total, _ := strconv.ParseInt(m[2], 10, 64)
			work.Total("steps", int(total))
			r.Progress(done, total)
			if m[3] != "" {
				r.Status("step %d/%d, loss %s", done, total, m[3])
			}
		} else if m := itemLine.FindStringSubmatch(line); m != nil {
			done, _ := strconv.ParseInt(m[1], 10, 64)
			total, _ := strconv.ParseInt(m[2], 10, 64)
			work.Total(strings.Fields(line)[0], int(total)) // "requests", "batches", "samples"
			r.Progress(done, total)
		}
	}
	threads := 0
	if c.Threads != nil {
		threads = *c.Threads
	}
	job := jobenv.Job{
		Inputs: s.inputs,
		Mounts: mounts,
		Work:   s.work,
		Log:    log,
		Argv: func(paths jobenv.Paths) []string {
			argv := []string{c.python(), "-m", parametric.Package + "." + s.module}
			argv = append(argv, s.args(paths)...)
			if threads > 0 {
				argv = append(argv, "--threads", strconv.Itoa(threads))
			}
			return argv
		},
		Env: func(paths jobenv.Paths) map[string]string {
			env := map[string]string{
				"PYTHONPATH":             paths.Mounts["scripts"],
				"HF_HUB_OFFLINE":         "1",
				"TRANSFORMERS_OFFLINE":   "1",
				"HF_DATASETS_OFFLINE":    "1",
				"TOKENIZERS_PARALLELISM": "false",
				"PYTHONUNBUFFERED":       "1",
			}
			if threads > 0 {
				env["OMP_NUM_THREADS"] = strconv.Itoa(threads)
			}
			return env
		},
	}
	start := time.Now()
	where, err := p.job.Run(ctx, r, job, out)
	log.Close()
	if err != nil {
		return nil, "", 0, err
	}
	if s.arrange != nil {
		if err := s.arrange(out); err != nil {
			return nil, "", 0, err
		}
	}
	outs, err := jobenv.Collect(r, out)
	return outs, where, time.Since(start).Round(time.Millisecond), err
}

// workDir is a directory under the store's cache that a script keeps
// across runs of the same execution (its checkpoints): named by a digest
// of the node's address, config, inputs and pinned identity, so a rerun
// after a kill finds it and nothing else does.
func workDir(r nodes.Run, cfg any, inputs []nodes.Ref, identity string) (string, error) {
	cache, err := r.CacheDir("parametric-work")
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", r.Node(), b, identity)
	for _, in := range inputs {
		fmt.Fprintf(h, "%s=%s\x00", in.Node, r.InputDigest(in))
	}
	dir := filepath.Join(cache, hex.EncodeToString(h.Sum(nil))[:24])
	return dir, os.MkdirAll(dir, 0o755)
}

// output finds the named top-level output of a script.
func output(outs []jobenv.Output, name string) (jobenv.Output, bool) {
	for _, o := range outs {
		if o.Name == name {
			return o, true
		}
	}
	return jobenv.Output{}, false
}

// manifest reads the script's manifest.json (its text is kept in the
// output when short).
func manifest(r nodes.Run, outs []jobenv.Output) (map[string]any, string, error) {
	o, ok := output(outs, "manifest.json")
	if !ok {
		return nil, "", errors.New("the script wrote no manifest.json")
	}
	text := o.Text
	if text == "" {
		rd, err := nodes.OpenBlob(r, artifacts.Digest(o.Blob))
		if err != nil {
			return nil, "", err
		}
		defer rd.Close()
		var m map[string]any
		if err := json.NewDecoder(rd).Decode(&m); err != nil {
			return nil, "", fmt.Errorf("manifest.json: %w", err)
		}
		b, _ := json.Marshal(m)
		return m, string(b), nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		return nil, "", fmt.Errorf("manifest.json: %w", err)
	}
	return m, text, nil
}

func num(m map[string]any, k string) float64 {
	switch v := m[k].(type) {
	case float64:
		return v
	case int:
		return float64(v)
	}
	return 0
}

var nanValue = math.NaN()
