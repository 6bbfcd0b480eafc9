package parametric

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strconv"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/jobenv"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
	"github.com/lacuna-dev/lacuna/nodes/toolsense"
	"github.com/lacuna-dev/lacuna/runners/parametric"
)

func init() { nodes.Register(trainType{}) }

// trainConfig:
//
//	node "train" "sft" {
//	  base   = "models/qwen2.5-coder-7b"  # or from = node.train.stage1
//	  data   = node.sft_data.train         # prompt, completion (system)
//	  method = "lora"                      # or "full"
//	  rank   = 64
//	  epochs = 3
//	  runner = runner.gpu
//	}
type trainConfig struct {
	// Base is a Hugging Face model directory (relative to the pipeline's
	// directory); its content's digest enters the key.
	Base string `hcl:"base,optional"`
	// From is another train or edit node whose full model this one
	// starts from (ToolGen's Stage 2 after Stage 1).
	From *nodes.Ref `hcl:"from,optional"`
	// Python is the interpreter (see baseConfig).
	Python string `hcl:"python,optional"`
	// Threads bounds torch's CPU threads (0: torch's default).
	Threads *int      `hcl:"threads,optional"`
	Data    nodes.Ref `hcl:"data"`
	// Method is "lora" (default) or "full".
	Method       string   `hcl:"method,optional"`
	Rank         *int     `hcl:"rank,optional"`
	Alpha        *int     `hcl:"alpha,optional"`
	Dropout      *float64 `hcl:"dropout,optional"`
	Epochs       *float64 `hcl:"epochs,optional"`
	LearningRate *float64 `hcl:"learning_rate,optional"`
	Batch        *int     `hcl:"batch,optional"`
	GradAccum    *int     `hcl:"grad_accum,optional"`
	MaxSteps     *int     `hcl:"max_steps,optional"`
	SaveSteps    *int     `hcl:"save_steps,optional"`
	MaxLength    *int     `hcl:"max_length,optional"`
	Seed         *int     `hcl:"seed,optional"`
	// LossOn is "completion" (default) or "all".
	LossOn string `hcl:"loss_on,optional"`
	// NewTokens is a toolgen_data node whose tools' virtual tokens are
	// added to the vocabulary (ToolGen).
	NewTokens *nodes.Ref `hcl:"new_tokens,optional"`
	// Merge writes the merged full model instead of a LoRA adapter.
	Merge bool `hcl:"merge,optional"`
}

// TrainRow is a train node's one output row: the weights (TrainedColumns)
// and how they were made.
type TrainRow struct {
	Kind        string `parquet:"kind"`
	WeightsBlob string `parquet:"weights_blob"`
	BaseDigest  string `parquet:"base_digest"`
	BaseBlob    string `parquet:"base_blob"`
	Method      string `parquet:"method"`
	DataDigest  string `parquet:"data_digest"`
	DataRows    int64  `parquet:"data_rows"`
	Seed        int64  `parquet:"seed"`
	// Recipe is the hyperparameters as the script ran them, JSON.
	Recipe    string  `parquet:"recipe"`
	Steps     int64   `parquet:"steps"`
	FirstLoss float64 `parquet:"first_loss"`
	FinalLoss float64 `parquet:"final_loss"`
	// LossCurve is [[step, loss], ...], JSON.
	LossCurve       string  `parquet:"loss_curve"`
	NewTokens       int64   `parquet:"new_tokens"`
	WallSeconds     float64 `parquet:"wall_seconds" volatile:"wall-clock time of the training"`
	ResumedFromStep int64   `parquet:"resumed_from_step"`
	// Manifest is the script's manifest.json (versions, everything).
	Manifest string `parquet:"manifest" volatile:"the script's manifest, which records its timings"`
}

type trainType struct {
	nodes.Static[trainConfig, TrainRow]
}

var (
	_ nodes.Typed         = trainType{}
	_ nodes.Documented    = trainType{}
	_ nodes.Validator     = trainType{}
	_ nodes.Resolver      = trainType{}
	_ nodes.ContainerType = trainType{}
)

func (trainType) Name() string           { return "train" }
func (trainType) Version() string        { return "1" }
func (trainType) RunsInContainers() bool { return true }
func (trainType) Doc() string {
	return "Fine-tunes a causal LM on `data` (rows with prompt and completion, and optionally system: sft_data, raft_data, toolgen_data) with runners/parametric's train script (TRL's SFTTrainer, PEFT, transformers; versions pinned in runners/parametric/requirements.txt) on the node's runner: this machine (`python` names an interpreter with those packages, checked at plan time), a container (the image's python3; the scripts are mounted) or a SLURM job. " +
		"The model starts from `base` (a Hugging Face directory) or `from` (another train or edit node's full model). method = \"lora\" (default; rank 64, alpha 2×rank, dropout 0.05 on every attention and MLP projection: the NovelAPIBench paper's rank) or \"full\"; epochs (default 3), learning_rate (2e-4 LoRA, 2e-5 full), batch (8), grad_accum, max_steps (overrides epochs), max_length (1024), seed (0), loss_on = \"completion\" (default: loss on the answer only) or \"all\". " +
		"With a chat template the prompt is the user turn (system the system turn) and the completion the assistant turn. new_tokens = node.toolgen_data.X adds that node's virtual tokens (every tool's, flat or hierarchical) to the vocabulary (ToolGen's virtual tokens, each embedding initialised to the mean of its name's sub-token embeddings; LoRA then also trains the embeddings and the output layer). " +
		"merge = true writes the merged full model instead of the adapter: vLLM cannot serve a LoRA adapter that adds vocabulary, so ToolGen's models are merged. " +
		"The output is one row: kind (adapter or model), weights_blob (the directory), base_digest / base_blob (what it was trained from), the recipe, the loss curve, wall time and the manifest. A model-calling node serves it with trained = node.train.NAME. " +
		"Checkpoints go to a directory under the store's cache every save_steps (50) steps; a run that was killed or preempted resumes from the last one. The key covers the data, the base weights' content, the scripts' digest and the interpreter's packages (or the image digest)."
}

func (t trainType) Validate(cfg any) error {
	c := cfg.(*trainConfig)
	if err := c.common().validate(); err != nil {
		return err
	}
	switch c.Method {
	case "", "lora", "full":
	default:
		return nodes.Errorf("method", "Unknown method", "%q: use \"lora\" or \"full\".", c.Method)
	}
	switch c.LossOn {
	case "", "completion", "all":
	default:
		return nodes.Errorf("loss_on", "Unknown loss_on", "%q: use \"completion\" or \"all\".", c.LossOn)
	}
	if c.Merge && c.Method == "full" {
		return nodes.Errorf("merge", "Nothing to merge", "full fine-tuning writes a full model already; merge is for LoRA.")
	}
	if c.Method == "full" && (c.Rank != nil || c.Alpha != nil || c.Dropout != nil) {
		return nodes.Errorf("rank", "LoRA settings on full fine-tuning", "rank, alpha and dropout are LoRA's; remove them or set method = \"lora\".")
	}
	for _, p := range []struct {
		name string
		v    *int
	}{{"rank", c.Rank}, {"alpha", c.Alpha}, {"batch", c.Batch}, {"grad_accum", c.GradAccum}, {"max_steps", c.MaxSteps}, {"save_steps", c.SaveSteps}, {"max_length", c.MaxLength}} {
		if p.v != nil && *p.v < 1 {
			return nodes.Errorf(p.name, "Invalid "+p.name, "%s must be at least 1; got %d.", p.name, *p.v)
		}
	}
	if c.Epochs != nil && !(*c.Epochs > 0) {
		return nodes.Errorf("epochs", "Invalid epochs", "epochs must be above 0.")
	}
	if c.LearningRate != nil && !(*c.LearningRate > 0 && *c.LearningRate < 1) {
		return nodes.Errorf("learning_rate", "Invalid learning_rate", "learning_rate must be in (0, 1).")
	}
	if c.Dropout != nil && (*c.Dropout < 0 || *c.Dropout >= 1) {
		return nodes.Errorf("dropout", "Invalid dropout", "dropout must be in [0, 1).")
	}
	return nil
}

func (trainType) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	return resolve(ctx, r)
}

// args are the script's flags for the config (defaults are the script's).
func (c *trainConfig) args() []string {
	var a []string
	add := func(flag, v string) { a = append(a, flag, v) }
	method := c.Method
	if method == "" {
		method = "lora"
	}
	add("--method", method)
	ints := []struct {
		flag string
		v    *int
	}{{"--rank", c.Rank}, {"--alpha", c.Alpha}, {"--batch", c.Batch}, {"--grad-accum", c.GradAccum}, {"--max-steps", c.MaxSteps}, {"--save-steps", c.SaveSteps}, {"--max-length", c.MaxLength}, {"--seed", c.Seed}}
	for _, i := range ints {
		if i.v != nil {
			add(i.flag, strconv.Itoa(*i.v))
		}
	}
	floats := []struct {
		flag string
		v    *float64
	}{{"--dropout", c.Dropout}, {"--epochs", c.Epochs}, {"--lr", c.LearningRate}}
	for _, f := range floats {
		if f.v != nil {
			add(f.flag, strconv.FormatFloat(*f.v, 'g', -1, 64))
		}
	}
	if c.LossOn != "" {
		add("--loss-on", c.LossOn)
	}
	if c.Merge {
		a = append(a, "--merge")
	}
	return a
}

func (t trainType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	p, ok := r.Pinned().(*scriptPin)
	if !ok {
		return errors.New("train: not resolved")
	}
	base, err := p.baseModel(r, c.common())
	if err != nil {
		return err
	}
	inputs := []nodes.Ref{c.Data}
	if c.From != nil {
		inputs = append(inputs, *c.From)
	}
	s := scriptRun{module: "train", inputs: []nodes.Ref{c.Data}, mounts: map[string]string{"base": base.dir}}
	if c.NewTokens != nil {
		toks, err := tokens(r, *c.NewTokens)
		if err != nil {
			return err
		}
		b, _ := json.Marshal(toks)
		s.aux = map[string][]byte{"new_tokens.json": b}
		inputs = append(inputs, *c.NewTokens)
	}
	if s.work, err = workDir(r, c, inputs, base.digest+"|"+parametric.Digest()); err != nil {
		return err
	}
	s.args = func(paths jobenv.Paths) []string {
		a := []string{"--base", paths.Mounts["base"], "--data", paths.In + "/0.parquet", "--out", paths.Out, "--work", paths.Work}
		if c.NewTokens != nil {
			a = append(a, "--new-tokens", paths.Mounts["aux"]+"/new_tokens.json")
		}
		return append(a, c.args()...)
	}
	outs, where, elapsed, err := p.run(ctx, r, c.common(), s)
	if err != nil {
		return err
	}
	m, text, err := manifest(r, outs)
	if err != nil {
		return err
	}
	row := TrainRow{BaseDigest: base.digest, BaseBlob: base.blob, Manifest: text}
	if o, ok := output(outs, "adapter"); ok && o.Kind == "dir" {
		row.Kind, row.WeightsBlob = llmenv.TrainedAdapter, o.Blob
	} else if o, ok := output(outs, "model"); ok && o.Kind == "dir" {
		row.Kind, row.WeightsBlob = llmenv.TrainedModel, o.Blob
	} else {
		return errors.New("train: the script wrote neither adapter/ nor model/")
	}
	fillTrainRow(&row, m)
	row.DataDigest = string(r.InputDigest(c.Data))
	if err := t.Write(r, []TrainRow{row}); err != nil {
		return err
	}
	r.Note("%s, %d steps, loss %.4g → %.4g; ran %s in %s", row.Kind, row.Steps, row.FirstLoss, row.FinalLoss, where, elapsed)
	// The checkpoints served their purpose: the weights are in the store.
	_ = os.RemoveAll(s.work)
	return nil
}

// fillTrainRow copies what the manifest says into the row.
func fillTrainRow(row *TrainRow, m map[string]any) {
	row.Method, _ = m["method"].(string)
	if rec, ok := m["recipe"]; ok {
		b, _ := json.Marshal(rec)
		row.Recipe = string(b)
	}
	if d, ok := m["data"].(map[string]any); ok {
		row.DataRows = int64(num(d, "rows"))
	}
	row.Seed = int64(num(m, "seed"))
	row.Steps = int64(num(m, "steps"))
	row.FinalLoss = num(m, "final_loss")
	row.NewTokens = int64(num(m, "new_tokens"))
	row.WallSeconds = num(m, "wall_seconds")
	row.ResumedFromStep = int64(num(m, "resumed_from_step"))
	row.FirstLoss = math.NaN()
	if curve, ok := m["loss_curve"].([]any); ok {
		b, _ := json.Marshal(curve)
		row.LossCurve = string(b)
		if len(curve) > 0 {
			if pt, ok := curve[0].([]any); ok && len(pt) == 2 {
				if v, ok := pt[1].(float64); ok {
					row.FirstLoss = v
				}
			}
		}
	}
}

// tokens reads the virtual tokens of a toolgen_data node's rows: every
// vocabulary entry of its tools, in first-appearance order.
func tokens(r nodes.Run, ref nodes.Ref) ([]string, error) {
	in, err := r.Input(ref)
	if err != nil {
		return nil, err
	}
	rows, err := artifacts.ReadAll[toolsense.ToolGenRow](in)
	if err != nil {
		return nil, nodes.Errorf("new_tokens", "Not ToolGen data", "new_tokens names a toolgen_data node; %s: %v", ref.Node, err)
	}
	out := toolsense.NewTokens(rows)
	if len(out) == 0 {
		return nil, nodes.Errorf("new_tokens", "No tokens", "%s lists no tokens.", ref.Node)
	}
	return out, nil
}

// common is what every script node has.
func (c *trainConfig) common() *baseConfig {
	return &baseConfig{Base: c.Base, From: c.From, Python: c.Python, Threads: c.Threads}
}
