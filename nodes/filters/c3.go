package filters

import (
	"context"
	"fmt"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/novelapibench/cells"
)

func init() { nodes.Register(c3Type{}) }

// c3Config:
//
//	node "generate" "c3" { tasks = node.c2.lo  bundles = node.bundle.lo  model = model.strong  cell = "Full" }
//	node "solve" "c3"    { tasks = node.c2.lo  solutions = node.generate.c3 }
//	node "c3" "lo"       { tasks = node.c2.lo  samples = node.solve.c3  strong = model.strong  under_test = model.qwen }
//
//lint:ignore U1000 used as nodes.Static's type argument (staticcheck misses that use)
type c3Config struct {
	Tasks nodes.Ref `hcl:"tasks"`
	// Samples are the runs of a strong model's answers given the Full
	// bundle: a solve node's rows for a generate node with cell = "Full".
	Samples nodes.Ref `hcl:"samples"`
	// Cell is the knowledge cell the samples must have been written in
	// (default "Full", the paper's); samples of another cell are an error,
	// as C2's are (samples without a cell, from an imported table, are
	// taken as written in it).
	Cell *string `hcl:"cell,optional"`
	// MinPassed is how many samples must pass (default 1).
	MinPassed *int `hcl:"min_passed,optional"`
	// Strong is the strong external model whose samples C3 counts (the
	// paper: "a strong external LLM"), and UnderTest the model the
	// benchmark is built for. They must differ, unless AllowSelf: a C3 run
	// with the model under test keeps only what that model itself solves,
	// which is C2's complement, not informativeness. Every sample must
	// have been written by Strong (samples without a model, from an
	// imported table, are taken as its).
	Strong    nodes.Model `hcl:"strong"`
	UnderTest nodes.Model `hcl:"under_test"`
	AllowSelf bool        `hcl:"allow_self,optional"`
}

func (c *c3Config) minPassed() int { return orDefault(c.MinPassed, 1) }

func (c *c3Config) cell() string {
	if c.Cell == nil {
		return "Full"
	}
	return *c.Cell
}

type c3Type struct {
	nodes.Static[c3Config, FilterRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = c3Type{}
	_ nodes.Documented = c3Type{}
	_ nodes.Validator  = c3Type{}
)

func (c3Type) Name() string    { return "c3" }
func (c3Type) Version() string { return "3" }
func (c3Type) Doc() string {
	return "C3, informativeness (seed §3.2 stage 4): keeps a task when a strong model given the Full bundle (a generate " +
		"node with cell Full, run by solve) solves at least min_passed (default 1) of its samples, dropping tasks unsolvable " +
		"even with complete knowledge. strong names that model and under_test the model the benchmark is for: the same model is a " +
		"plan error unless allow_self = true, and samples another model wrote are an error. " +
		"Samples written in a cell other than cell (default Full) are an error. A task with no " +
		"samples is dropped (\"no samples\"). Dropped tasks stay with keep = false and the reason, as do those dropped before."
}

func (c3Type) Validate(cfg any) error {
	c := cfg.(*c3Config)
	if c.minPassed() < 1 {
		return nodes.Errorf("min_passed", "Invalid min_passed", "min_passed must be at least 1.")
	}
	if _, err := cells.Lookup(c.cell()); err != nil {
		return nodes.Errorf("cell", "Unknown cell", "%v", err)
	}
	if c.Strong.ID == c.UnderTest.ID && !c.AllowSelf {
		return nodes.Errorf("strong", "Strong model is the model under test",
			"C3's strong model and the model under test are both %s: C3 would keep only what the tested model solves itself. "+
				"Name a stronger model (the paper uses a strong external LLM), or set allow_self = true to do this on purpose.", c.Strong.ID)
	}
	return nil
}

// Run keeps the tasks the strong model solves with the bundle.
func (t c3Type) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	rows, counts, err := filterBySamples(r, c.Tasks, c.Samples, func(task tasks.Row, n, passed int, written []string) (bool, string, error) {
		for _, cell := range written {
			if cell != "" && cell != c.cell() {
				return false, "", fmt.Errorf("samples: task %s has samples written in cell %s: C3 judges the strong model given cell %s (set cell = %q to judge those)", task.TaskID, cell, c.cell(), cell)
			}
		}
		if passed >= c.minPassed() {
			return true, "", nil
		}
		return false, fmt.Sprintf("C3: the strong model solved %d of %d samples with the bundle (cell %s), want %d", passed, n, c.cell(), c.minPassed()), nil
	})
	if err != nil {
		return err
	}
	if counts.model != "" && counts.model != c.Strong.ID {
		return fmt.Errorf("samples: written by %s, not by the strong model %s (strong = ...)", counts.model, c.Strong.ID)
	}
	unsolved := counts.in - counts.kept - counts.noSamples
	extra := []string{}
	if counts.noSamples > 0 {
		extra = append(extra, fmt.Sprintf("%d without samples", counts.noSamples))
	}
	warn := ""
	if counts.kept == 0 && counts.in > 0 {
		// Everything downstream (the cells' runs, metrics) would measure
		// nothing: say so where the run shows it.
		warn = "warning: C3 kept 0 of " + fmt.Sprint(counts.in) + " tasks (is the strong model strong enough?); "
		r.Logf("%sthe cells and metrics after it have no task to measure", warn)
	}
	r.Note("%sC3: %d tasks, %d kept (strong model solved too few of %d with the bundle, cell %s%s)", warn, counts.in, counts.kept, unsolved, c.cell(), prefixed(extra))
	return t.Write(r, rows)
}
