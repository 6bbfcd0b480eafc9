package trainingdata

import (
	"context"
	"fmt"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/novelapibench/cells"
)

func init() { nodes.Register(sftDataType{}) }

// sftConfig:
//
//	node "sft_data" "full" {
//	  split   = node.task_split.study
//	  which   = "train"                                  # default
//	  bundles = [node.bundle.lo, node.bundle.mo]         # every library's of the split
//	  cell    = "Full"                                   # default
//	}
type sftConfig struct {
	Split nodes.Ref `hcl:"split"`
	// Which is the split's set trained on (default "train").
	Which   string      `hcl:"which,optional"`
	Bundles []nodes.Ref `hcl:"bundles,optional"`
	// Cell, Templates, System, MaxExamples and MaxExampleBytes are
	// generate's (promptConfig).
	Cell            string  `hcl:"cell,optional"`
	Templates       string  `hcl:"templates,optional"`
	System          *string `hcl:"system,optional"`
	MaxExamples     *int    `hcl:"max_examples,optional"`
	MaxExampleBytes *int    `hcl:"max_example_bytes,optional"`
}

func (c *sftConfig) prompt() *promptConfig {
	return &promptConfig{Cell: c.Cell, Templates: c.Templates, System: c.System, MaxExamples: c.MaxExamples, MaxExampleBytes: c.MaxExampleBytes}
}

func (c *sftConfig) which() string {
	if c.Which == "" {
		return SetTrain
	}
	return c.Which
}

// SFTRow is one supervised fine-tuning pair: the messages the evaluation
// sends for the task (system and user) and the answer to learn, what
// runners/parametric's trainer reads (prompt, completion and system).
type SFTRow struct {
	TaskID     string `parquet:"task_id"`
	Split      string `parquet:"split"` // the set the task was drawn from (which)
	Library    string `parquet:"library"`
	APIID      string `parquet:"api_id"`
	Qualified  string `parquet:"qualified_name"`
	Difficulty string `parquet:"difficulty"`
	Cell       string `parquet:"cell"`
	// System and Prompt are the system and user messages, rendered by
	// novelapibench/cells as the generate node renders them.
	System string `parquet:"system"`
	Prompt string `parquet:"prompt"`
	// Completion is the reference answer (Completion).
	Completion string `parquet:"completion"`
}

type sftDataType struct {
	nodes.Static[sftConfig, SFTRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = sftDataType{}
	_ nodes.Documented = sftDataType{}
	_ nodes.Validator  = sftDataType{}
	_ nodes.Resolver   = sftDataType{}
)

func (sftDataType) Name() string    { return "sft_data" }
func (sftDataType) Version() string { return "1" }
func (sftDataType) Doc() string {
	return "Supervised fine-tuning pairs of the tasks in set `which` (default \"train\") of a task_split: one row per task, in " +
		"task_id order, with system and prompt, the messages the generate node sends for the task in `cell` (default \"Full\": " +
		"the paper trains SFT with the full bundle; \"baseline\" for a prompt without knowledge), rendered by the same " +
		"novelapibench/cells code and templates (templates = DIR, system, max_examples and max_example_bytes as on generate: set " +
		"them as on the generate node that evaluates the trained model, and the prompts match), and completion, the task's " +
		"reference answer (its mask: the imports it needs, then the code replacing <MASK>; a Python task's function body) in one " +
		"fenced block of the task's language, as the templates ask. bundles lists the bundle (or prose) nodes of every library " +
		"of the split. Columns prompt and completion (and system) are what runners/parametric's trainer reads."
}

func (sftDataType) Validate(cfg any) error {
	c := cfg.(*sftConfig)
	if err := validWhich(c.which()); err != nil {
		return err
	}
	_, err := c.prompt().validate(c.Bundles, false)
	return err
}

func (sftDataType) Resolve(_ context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	return resolvePrompts(r, r.Config().(*sftConfig).prompt())
}

func (t sftDataType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	pc := c.prompt()
	prompts := r.Pinned().(*cells.Prompts)
	tks, err := readSet(r, c.Split, c.which())
	if err != nil {
		return err
	}
	pool := &bundlePool{}
	if len(prompts.Cell().Parts) > 0 {
		if pool, err = readBundles(r, c.Bundles, false); err != nil {
			return err
		}
	}
	rows := make([]SFTRow, len(tks))
	for i, task := range tks {
		if err := ctx.Err(); err != nil {
			return err
		}
		knowledge := ""
		if len(prompts.Cell().Parts) > 0 {
			b, err := pool.of(task)
			if err != nil {
				return err
			}
			if knowledge, err = prompts.Knowledge(cellBundle(b, task.Example, pc.exampleLimits())); err != nil {
				return fmt.Errorf("task %s: %w", task.TaskID, err)
			}
		}
		m, err := messages(prompts, pc, task, knowledge)
		if err != nil {
			return fmt.Errorf("task %s: %w", task.TaskID, err)
		}
		rows[i] = SFTRow{TaskID: task.TaskID, Split: c.which(), Library: task.Library, APIID: task.APIID, Qualified: task.Qualified,
			Difficulty: task.Difficulty, Cell: prompts.Cell().Name, System: m.System, Prompt: m.User, Completion: Completion(task)}
	}
	r.Note("%d SFT pairs (set %s, cell %s)", len(rows), c.which(), prompts.Cell().Name)
	return t.Write(r, rows)
}
