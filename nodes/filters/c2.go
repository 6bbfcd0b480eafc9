package filters

import (
	"context"
	"fmt"
	"strings"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
)

func init() { nodes.Register(c2Type{}) }

// c2Config:
//
//	node "generate" "c2" { tasks = node.c1.lo  model = model.qwen  samples = 3  temperature = 0.8 }
//	node "solve" "c2"    { tasks = node.c1.lo  solutions = node.generate.c2 }
//	node "c2" "lo"       { tasks = node.c1.lo  samples = node.solve.c2 }
//
//lint:ignore U1000 used as nodes.Static's type argument (staticcheck misses that use)
type c2Config struct {
	Tasks nodes.Ref `hcl:"tasks"`
	// Samples are the runs of the model's answers without knowledge: a
	// solve node's rows for a generate node with cell = "baseline".
	Samples nodes.Ref `hcl:"samples"`
	// N is the number of samples every task must have (default 3, the
	// paper's); MinFailed how many of them must fail (default 2).
	N         *int `hcl:"n,optional"`
	MinFailed *int `hcl:"min_failed,optional"`
}

func (c *c2Config) n() int         { return orDefault(c.N, 3) }
func (c *c2Config) minFailed() int { return orDefault(c.MinFailed, 2) }

func orDefault(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

type c2Type struct {
	nodes.Static[c2Config, FilterRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = c2Type{}
	_ nodes.Documented = c2Type{}
	_ nodes.Validator  = c2Type{}
)

func (c2Type) Name() string    { return "c2" }
func (c2Type) Version() string { return "1" }
func (c2Type) Doc() string {
	return "C2, empirical novelty (seed §3.2 stage 4): keeps a task when the model, with no knowledge of the target API, " +
		"fails at least min_failed (default 2) of its n (default 3) samples; the paper samples at temperature 0.8, set on " +
		"the generate node (cell baseline) whose solve runs are the samples. A task with another number of samples is an " +
		"error (the generate node's samples and n disagree); one with none is dropped (\"no samples\"). Dropped tasks stay " +
		"with keep = false and the reason, as do those dropped before."
}

func (c2Type) Validate(cfg any) error {
	c := cfg.(*c2Config)
	switch {
	case c.n() < 1:
		return nodes.Errorf("n", "Invalid n", "n must be at least 1.")
	case c.minFailed() < 1 || c.minFailed() > c.n():
		return nodes.Errorf("min_failed", "Invalid min_failed", "min_failed must be between 1 and n (%d).", c.n())
	}
	return nil
}

// Run keeps the tasks the model fails often enough without knowledge.
func (t c2Type) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	rows, counts, err := filterBySamples(r, c.Tasks, c.Samples, func(task tasks.Row, n, passed int, cells []string) (bool, string, error) {
		for _, cell := range cells {
			if cell != "" && cell != "baseline" {
				return false, "", fmt.Errorf("samples: task %s has samples written in cell %s: C2 judges the model without knowledge (cell baseline)", task.TaskID, cell)
			}
		}
		if n != c.n() {
			return false, "", fmt.Errorf("samples: task %s has %d samples, C2 wants n = %d: set samples = %d on the generate node, or n = %d here", task.TaskID, n, c.n(), c.n(), n)
		}
		if n-passed >= c.minFailed() {
			return true, "", nil
		}
		return false, fmt.Sprintf("C2: the model solved %d of %d samples without knowledge", passed, n), nil
	})
	if err != nil {
		return err
	}
	solved := counts.in - counts.kept - counts.noSamples
	var extra []string
	if counts.noSamples > 0 {
		extra = append(extra, fmt.Sprintf("%d without samples", counts.noSamples))
	}
	r.Note("C2: %d tasks, %d kept (model solved %d without knowledge%s)", counts.in, counts.kept, solved, prefixed(extra))
	return t.Write(r, rows)
}

// prefixed joins extra clauses of a note, each after "; ".
func prefixed(extra []string) string {
	if len(extra) == 0 {
		return ""
	}
	return "; " + strings.Join(extra, "; ")
}
