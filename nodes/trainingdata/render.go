package trainingdata

import (
	"slices"
	"strings"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/experiments"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/novelapibench/cells"
)

// promptConfig is what sft_data and raft_data share of the generate
// node's configuration (each declares the attributes, with the same
// names): set it as on the generate node that evaluates the trained
// model, and the training prompts are the evaluation's.
type promptConfig struct {
	// Cell is the knowledge cell the prompt shows (default "Full": the
	// paper trains SFT with the full bundle).
	Cell string
	// Templates is a directory of prompt templates that replace the
	// built-in ones by file name, as generate's templates.
	Templates string
	// System replaces system.tmpl's message, as a model block's system
	// does on generate: set it to the evaluated model's when it has one.
	System *string
	// MaxExamples and MaxExampleBytes bound what E shows, as generate's
	// (default 2 examples within 6000 bytes). Cells with E only.
	MaxExamples     *int
	MaxExampleBytes *int
}

func (c *promptConfig) cell() string {
	if c.Cell == "" {
		return "Full"
	}
	return c.Cell
}

func (c *promptConfig) exampleLimits() cells.ExampleLimits {
	return cells.ExampleLimits{Max: orInt(c.MaxExamples, cells.DefaultExampleLimits.Max), Bytes: orInt(c.MaxExampleBytes, cells.DefaultExampleLimits.Bytes)}
}

// validate checks the prompt attributes; needsBundles says the node reads
// bundles whatever the cell (raft_data).
func (c *promptConfig) validate(bundles []nodes.Ref, needsBundles bool) (cells.Cell, error) {
	cell, err := cells.Lookup(c.cell())
	if err != nil {
		return cell, nodes.Errorf("cell", "Unknown cell", "%v", err)
	}
	hasE := slices.Contains(cell.Parts, cells.E)
	switch {
	case (len(cell.Parts) > 0 || needsBundles) && len(bundles) == 0:
		return cell, nodes.Errorf("bundles", "Bundles needed", "cell %s shows the task's bundle: set bundles = [node.bundle.NAME, ...], every library's of the split.", cell.Name)
	case c.MaxExamples != nil && !hasE:
		return cell, nodes.Errorf("max_examples", "No examples shown", "cell %s shows no examples (E): max_examples is for cells with E.", cell.Name)
	case c.MaxExampleBytes != nil && !hasE:
		return cell, nodes.Errorf("max_example_bytes", "No examples shown", "cell %s shows no examples (E): max_example_bytes is for cells with E.", cell.Name)
	case c.MaxExamples != nil && *c.MaxExamples < 1:
		return cell, nodes.Errorf("max_examples", "Invalid max_examples", "max_examples must be at least 1.")
	case c.MaxExampleBytes != nil && *c.MaxExampleBytes < 1:
		return cell, nodes.Errorf("max_example_bytes", "Invalid max_example_bytes", "max_example_bytes must be at least 1.")
	}
	return cell, nil
}

// resolvePrompts reads and checks the cell's templates once, as generate's
// Resolve does; their digest is the identity "templates", so editing a
// template recomputes exactly the nodes whose cell uses it.
func resolvePrompts(r nodes.Resolve, c *promptConfig) (*nodes.Pinned, error) {
	prompts, err := experiments.Prompts(r, c.cell(), c.Templates)
	if err != nil {
		return nil, err
	}
	return &nodes.Pinned{Identity: map[string]string{"templates": prompts.Digest()}, Value: prompts}, nil
}

// messages are the system and user messages of task t with knowledge in
// place of its bundle's, the system replaced when the config sets one.
func messages(p *cells.Prompts, c *promptConfig, t tasks.Row, knowledge string) (cells.Messages, error) {
	m, err := p.RenderKnowledge(cellTask(t), knowledge)
	if err != nil {
		return m, err
	}
	if c.System != nil && *c.System != "" {
		m.System = *c.System
	}
	return m, nil
}

// cellTask and cellBundle are generate's views of a task and a bundle
// (experiments.CellTask, CellBundle): the training prompts are the
// evaluation's, byte for byte (TestSFTPromptsAreGenerates).
var (
	cellTask   = experiments.CellTask
	cellBundle = experiments.CellBundle
)

// Completion is the answer the task templates ask for, made of the task's
// reference: its mask (the import lines it needs, then the code that
// replaces <MASK>; for a Python task the function's body) in one fenced
// block of the task's language, as "Answer with only that code, in one
// ```go fenced block" asks. The evaluation's code extraction
// (llm.ExtractCode) takes the mask back out of it.
func Completion(t tasks.Row) string {
	return "```" + cellTask(t).Fence() + "\n" + strings.Trim(t.Mask, "\n") + "\n```"
}
