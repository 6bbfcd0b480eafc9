package parametric

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/jobenv"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
)

func init() { nodes.Register(editType{}) }

// editConfig:
//
//	node "edit" "memit" {
//	  method   = "memit"                  # grace | memit | alphaedit
//	  base     = "models/qwen2.5-coder-7b"
//	  requests = node.edit_requests.train # prompt ("{}" for the subject), subject, target
//	  stats    = node.edit_stats.wikitext # memit and alphaedit
//	  layers   = [4, 5, 6, 7, 8]
//	}
type editConfig struct {
	// Base is a Hugging Face model directory (relative to the pipeline's
	// directory); its content's digest enters the key.
	Base string `hcl:"base,optional"`
	// From is another train or edit node whose full model this one
	// starts from (ToolGen's Stage 2 after Stage 1).
	From *nodes.Ref `hcl:"from,optional"`
	// Python is the interpreter (see baseConfig).
	Python string `hcl:"python,optional"`
	// Threads bounds torch's CPU threads (0: torch's default).
	Threads  *int       `hcl:"threads,optional"`
	Method   string     `hcl:"method"`
	Requests nodes.Ref  `hcl:"requests"`
	Stats    *nodes.Ref `hcl:"stats,optional"`
	// Locality is an input of facts not edited (prompt, subject, target)
	// whose answers should not change: the manifest's locality.
	Locality *nodes.Ref `hcl:"locality,optional"`
	Layers   []int      `hcl:"layers,optional"`
	// Hparams override the method's defaults (the papers'), by name.
	Hparams map[string]string `hcl:"hparams,optional"`
	Seed    *int              `hcl:"seed,optional"`
}

// EditRow is an edit node's one output row: the weights (TrainedColumns)
// and what the edit achieved on its own requests.
type EditRow struct {
	Kind        string `parquet:"kind"`
	WeightsBlob string `parquet:"weights_blob"`
	BaseDigest  string `parquet:"base_digest"`
	BaseBlob    string `parquet:"base_blob"`
	Method      string `parquet:"method"`
	Requests    int64  `parquet:"requests"`
	// Efficacy is the share of requests whose greedy continuation starts
	// with the target, before and after the edit.
	EfficacyPre  float64 `parquet:"efficacy_pre"`
	EfficacyPost float64 `parquet:"efficacy_post"`
	// Locality is the share of the locality facts whose greedy
	// continuation the edit left unchanged (NaN without locality).
	Locality float64 `parquet:"locality"`
	// Paraphrase is efficacy on the requests' paraphrases (NaN without).
	Paraphrase  float64 `parquet:"paraphrase"`
	Hparams     string  `parquet:"hparams"`
	WallSeconds float64 `parquet:"wall_seconds" volatile:"wall-clock time of the edit"`
	Manifest    string  `parquet:"manifest" volatile:"the script's manifest, which records its timings"`
}

type editType struct {
	nodes.Static[editConfig, EditRow]
}

var (
	_ nodes.Typed         = editType{}
	_ nodes.Documented    = editType{}
	_ nodes.Validator     = editType{}
	_ nodes.Resolver      = editType{}
	_ nodes.ContainerType = editType{}
)

func (editType) Name() string           { return "edit" }
func (editType) Version() string        { return "1" }
func (editType) RunsInContainers() bool { return true }
func (editType) Doc() string {
	return "Edits a causal LM's knowledge with runners/parametric's editors, implemented in the repository from their papers: method = \"grace\" (Hartvigsen et al. 2023: a key-value codebook at one layer with a deferral radius; the output is the codebook, served on its base by the transformers server), \"memit\" (Meng et al. 2023: key-value updates spread over `layers` in closed form, regularised by the key covariance of `stats`) or \"alphaedit\" (Fang et al. 2025: MEMIT's update projected on the null space of the preserved keys). " +
		"requests = an input with prompt (\"{}\" where the subject goes), subject and target (edit_requests); optionally target_true and paraphrase. stats = node.edit_stats.X is required by memit and alphaedit (computed once per model and corpus). locality = an input of facts not edited. hparams override the papers' defaults by name (the script's help lists them). " +
		"The output is one row: kind (model for MEMIT and AlphaEdit: the edited checkpoint; codebook for GRACE), weights_blob, base_digest / base_blob, efficacy before and after, locality, paraphrase, the hyperparameters and the manifest. A model-calling node serves it with trained = node.edit.NAME. Runs where train does; base, from and python as train's."
}

func (editType) Validate(cfg any) error {
	c := cfg.(*editConfig)
	if err := c.common().validate(); err != nil {
		return err
	}
	switch c.Method {
	case "grace":
		if c.Stats != nil {
			return nodes.Errorf("stats", "GRACE uses no statistics", "stats are MEMIT's and AlphaEdit's key covariance; remove it.")
		}
		if len(c.Layers) > 1 {
			return nodes.Errorf("layers", "GRACE edits one layer", "give one layer (or none for the default).")
		}
	case "memit", "alphaedit":
		if c.Stats == nil {
			return nodes.Errorf("stats", "Statistics needed", "%s regularises its update with the key covariance: set stats = node.edit_stats.NAME (same base model and layers).", c.Method)
		}
	default:
		return nodes.Errorf("method", "Unknown method", "%q: use \"grace\", \"memit\" or \"alphaedit\".", c.Method)
	}
	if len(c.Layers) > 0 {
		if err := validLayers(c.Layers); err != nil {
			return err
		}
	}
	return nil
}

func (editType) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	return resolve(ctx, r)
}

func (t editType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	p, ok := r.Pinned().(*scriptPin)
	if !ok {
		return errors.New("edit: not resolved")
	}
	base, err := p.baseModel(r, c.common())
	if err != nil {
		return err
	}
	s := scriptRun{module: "edit", inputs: []nodes.Ref{c.Requests}, mounts: map[string]string{"base": base.dir}}
	if c.Locality != nil {
		s.inputs = append(s.inputs, *c.Locality)
	}
	if c.Stats != nil {
		dir, err := statsDir(r, *c.Stats, base.digest, c.Layers)
		if err != nil {
			return err
		}
		s.mounts["stats"] = dir
	}
	hparams, err := hparamsJSON(c.Hparams)
	if err != nil {
		return err
	}
	s.args = func(paths jobenv.Paths) []string {
		a := []string{"--method", c.Method, "--base", paths.Mounts["base"], "--requests", paths.In + "/0.parquet", "--out", paths.Out}
		if c.Locality != nil {
			a = append(a, "--locality", paths.In+"/1.parquet")
		}
		if c.Stats != nil {
			a = append(a, "--stats", paths.Mounts["stats"])
		}
		if len(c.Layers) > 0 {
			a = append(a, "--layers", layerList(c.Layers))
		}
		if hparams != nil {
			a = append(a, "--hparams", string(hparams))
		}
		if c.Seed != nil {
			a = append(a, "--seed", strconv.Itoa(*c.Seed))
		}
		return a
	}
	if c.Method == "grace" {
		// GRACE writes its codebook's files beside the manifest: they are
		// one directory, one blob.
		s.arrange = func(out string) error {
			dir := filepath.Join(out, "codebook")
			if err := os.Mkdir(dir, 0o755); err != nil {
				return err
			}
			for _, f := range []string{"codebook.safetensors", "grace.json"} {
				if err := os.Rename(filepath.Join(out, f), filepath.Join(dir, f)); err != nil {
					return fmt.Errorf("edit: GRACE wrote no %s", f)
				}
			}
			return nil
		}
	}
	outs, where, elapsed, err := p.run(ctx, r, c.common(), s)
	if err != nil {
		return err
	}
	m, text, err := manifest(r, outs)
	if err != nil {
		return err
	}
	row := EditRow{BaseDigest: base.digest, BaseBlob: base.blob, Method: c.Method, Manifest: text}
	name, kind := "model", llmenv.TrainedModel
	if c.Method == "grace" {
		name, kind = "codebook", llmenv.TrainedCodebook
	}
	o, ok := output(outs, name)
	if !ok || o.Kind != "dir" {
		return fmt.Errorf("edit: the script wrote no %s/", name)
	}
	row.Kind, row.WeightsBlob = kind, o.Blob
	row.Requests = int64(num(m, "requests"))
	row.EfficacyPre, row.EfficacyPost = num(m, "efficacy_pre"), num(m, "efficacy_post")
	row.Locality, row.Paraphrase = optNum(m, "locality"), optNum(m, "paraphrase")
	if h, ok := m["hparams"]; ok {
		b, _ := json.Marshal(h)
		row.Hparams = string(b)
	}
	row.WallSeconds = num(m, "wall_seconds")
	if err := t.Write(r, []EditRow{row}); err != nil {
		return err
	}
	r.Note("%s: %d requests, efficacy %.2f → %.2f, locality %.2f; ran %s in %s", c.Method, row.Requests, row.EfficacyPre, row.EfficacyPost, row.Locality, where, elapsed)
	return nil
}

// statsDir unpacks an edit_stats node's statistics after checking they
// were computed for this base model and these layers.
func statsDir(r nodes.Run, ref nodes.Ref, baseDigest string, layers []int) (string, error) {
	in, err := r.Input(ref)
	if err != nil {
		return "", err
	}
	rows, err := artifacts.ReadAll[StatsRow](in)
	if err != nil || len(rows) != 1 {
		return "", nodes.Errorf("stats", "Not statistics", "%s is not an edit_stats node's output.", ref.Node)
	}
	st := rows[0]
	if st.BaseDigest != baseDigest {
		return "", nodes.Errorf("stats", "Statistics of another model", "%s was computed on weights %s, the edit starts from %s: give edit_stats the same base.", ref.Node, llmenv.Short(st.BaseDigest), llmenv.Short(baseDigest))
	}
	if len(layers) > 0 && st.Layers != layerList(layers) {
		return "", nodes.Errorf("stats", "Statistics of other layers", "%s covers layers %s, the edit asks %s.", ref.Node, st.Layers, layerList(layers))
	}
	return llmenv.Unpack(r, st.StatsBlob)
}

// optNum is a manifest number, NaN when absent or null.
func optNum(m map[string]any, k string) float64 {
	if v, ok := m[k].(float64); ok {
		return v
	}
	return nanValue
}

// common is what every script node has.
func (c *editConfig) common() *baseConfig {
	return &baseConfig{Base: c.Base, From: c.From, Python: c.Python, Threads: c.Threads}
}

// hparamsJSON is the hparams map as the script's JSON object: a value
// that reads as a JSON number, boolean or null is that, any other a
// string; nil for none.
func hparamsJSON(h map[string]string) ([]byte, error) {
	if len(h) == 0 {
		return nil, nil
	}
	m := make(map[string]json.RawMessage, len(h))
	for k, v := range h {
		var x any
		if err := json.Unmarshal([]byte(v), &x); err == nil {
			switch x.(type) {
			case float64, bool, nil:
				m[k] = json.RawMessage(v)
				continue
			}
		}
		b, _ := json.Marshal(v)
		m[k] = b
	}
	return json.Marshal(m)
}
