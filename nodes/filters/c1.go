package filters

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
)

func init() { nodes.Register(c1Type{}) }

// c1Config:
//
//	node "c1" "lo" { tasks = node.tasks.lo  samples = node.solve.calibration }
//
//lint:ignore U1000 used as nodes.Static's type argument (staticcheck misses that use)
type c1Config struct {
	Tasks nodes.Ref `hcl:"tasks"`
	// Samples are the runs of a solve node with calibration = true, reused
	// instead of running the reference and calibration solutions again.
	Samples nodes.Ref `hcl:"samples,optional"`
	// Ecosystem is "go" (default) or "python", the tasks' (Python tasks
	// are audited with novelapibench/pyharness: AuditMutant, C1).
	Ecosystem string `hcl:"ecosystem,optional"`
}

// C1Row is a task with what C1 and the harness audit found. Keep is true
// when the reference passes its own harness (every run of it) and every
// Calibration solution fails it; Reason explains every drop.
type C1Row struct {
	tasks.Row
	C1Passed  bool   `parquet:"c1_passed"` // the reference passes its harness
	C1Error   string `parquet:"c1_error"`
	AuditRun  int32  `parquet:"audit_run"`    // calibration solutions run
	AuditKill int32  `parquet:"audit_killed"` // ... that the harness rejected
	// Discrimination is AuditKill / AuditRun: 1 for a harness that
	// rejects every calibration solution.
	Discrimination float64  `parquet:"discrimination"`
	Survivors      []string `parquet:"audit_survivors,list"` // calibration kinds that passed: the harness's blind spots
	Keep           bool     `parquet:"keep"`
	Reason         string   `parquet:"reason"`
}

type c1Type struct{ nodes.Static[c1Config, C1Row] }

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = c1Type{}
	_ nodes.Documented = c1Type{}
	_ nodes.Resolver   = c1Type{}
	_ nodes.Validator  = c1Type{}
)

func (c1Type) Validate(cfg any) error {
	c := cfg.(*c1Config)
	if c.Ecosystem != "" && c.Ecosystem != "go" && c.Ecosystem != "python" {
		return nodes.Errorf("ecosystem", "Ecosystem not supported", "c1 handles ecosystems \"go\" (default) and \"python\", not %q.", c.Ecosystem)
	}
	return nil
}

func (c1Type) Name() string    { return "c1" }
func (c1Type) Version() string { return "20" }
func (c1Type) Doc() string {
	return "C1 and the harness audit: keeps the tasks whose reference passes its own harness (every run) and whose " +
		"calibration solutions all fail it; dropped tasks stay with keep = false and the reason. " +
		"With ecosystem = \"python\": the reference (once) and novelapibench/pyharness's mutants, run as solve runs them (or read from samples), " +
		"each mutant also given its class by the judge's fast path (pyharness.C1)."
}

// Resolve pins the toolchain and the sandbox the harnesses are built and
// run with: both are in the key, so upgrading Go recomputes the verdicts.
func (c1Type) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	if r.Config().(*c1Config).Ecosystem == "python" {
		return tasks.ResolvePython(ctx, r)
	}
	return tasks.ResolveGo(ctx, r)
}

// Run runs (or reuses, from samples) the reference and the calibration
// solutions of every task and keeps the tasks whose harness accepts the
// one and rejects the others. Dropped tasks stay in the output with
// Keep = false and the reason: a filter with where = row.keep after it
// keeps the rest.
func (t c1Type) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	tks, err := tasks.ReadTasks(r, c.Tasks)
	if err != nil {
		return err
	}
	python := c.Ecosystem == "python"
	for _, tk := range tks {
		switch {
		case !python && tk.Ecosystem == "python":
			return fmt.Errorf("task %s (%s) is a Python library's: set ecosystem = \"python\" on c1", tk.TaskID, tk.Qualified)
		case python && tk.Ecosystem != "python":
			return fmt.Errorf("task %s (%s) is not a Python task: the tasks input must come from a tasks node with ecosystem = \"python\"", tk.TaskID, tk.Qualified)
		}
	}
	var runs []tasks.SampleRow
	switch {
	case c.Samples.Node != "":
		in, err := r.Input(c.Samples)
		if err != nil {
			return err
		}
		if runs, err = artifacts.ReadAll[tasks.SampleRow](in); err != nil {
			return fmt.Errorf("samples: %w (samples must come from a solve node with calibration = true)", err)
		}
	case python:
		sols, err := tasks.PyCalibration(tks)
		if err != nil {
			return err
		}
		if runs, err = tasks.RunPython(ctx, r, c.Tasks.Node, tks, sols); err != nil {
			return err
		}
	default:
		sols, err := tasks.Calibration(ctx, r, tks)
		if err != nil {
			return err
		}
		if runs, _, err = tasks.RunAll(ctx, r, tks, sols, false); err != nil {
			return err
		}
	}
	if python {
		return t.auditPython(r, tks, runs)
	}
	byTask := map[string][]tasks.SampleRow{}
	for _, s := range runs {
		byTask[s.TaskID] = append(byTask[s.TaskID], s)
	}
	out := make([]C1Row, len(tks))
	survived := map[string]int{}
	for i, t := range tks {
		row := C1Row{Row: t, Survivors: []string{}}
		var ref *tasks.SampleRow // the first failing reference run, else the last
		for j, s := range byTask[t.TaskID] {
			if s.Kind == "reference" {
				if ref == nil || ref.Passed {
					ref = &byTask[t.TaskID][j]
				}
				continue
			}
			row.AuditRun++
			if s.Passed {
				row.Survivors = append(row.Survivors, s.Kind)
				survived[s.Kind]++
			} else {
				row.AuditKill++
			}
		}
		if row.AuditRun > 0 {
			row.Discrimination = float64(row.AuditKill) / float64(row.AuditRun)
		}
		var exp goharness.Expectation
		json.Unmarshal([]byte(t.Expect), &exp)
		switch {
		case t.Expect == "":
			row.Reason = "no harness: " + t.ObserveError
		case ref == nil:
			row.Reason = "the reference was not run"
		case !ref.Passed:
			row.C1Error = firstNonEmpty(strings.Join(ref.FailedLayers, ", "), ref.CompileError, ref.RuntimeError)
			row.Reason = "C1: the reference fails its own harness (" + row.C1Error + ")"
		case len(exp.Dependent) == 0:
			row.C1Passed = true
			row.Reason = "no asserted value is computed through the target: substituting the target's results (other values of the same shape) changed nothing the harness checks"
		case len(row.Survivors) > 0:
			row.C1Passed = true
			row.Reason = "audit: the harness accepts " + strings.Join(row.Survivors, ", ")
		default:
			row.C1Passed, row.Keep = true, true
		}
		out[i] = row
	}
	return t.finish(r, out, survived)
}

// finish logs what C1 dropped, by reason (up to its first "(" or ":"),
// and the calibration solutions that passed some harness (survived, by
// kind), notes how many tasks were kept and writes out: the end of a Go
// and a Python c1 alike.
func (t c1Type) finish(r nodes.Run, out []C1Row, survived map[string]int) error {
	kept := 0
	drops := map[string]int{}
	for _, row := range out {
		if row.Keep {
			kept++
			continue
		}
		key := row.Reason
		if i := strings.IndexAny(key, "(:"); i > 0 {
			key = key[:i]
		}
		drops[strings.TrimSpace(key)]++
	}
	for _, k := range tasks.SortedKeys(drops) {
		r.Logf("dropped %d: %s", drops[k], k)
	}
	var surv []string
	for _, k := range tasks.SortedKeys(survived) {
		surv = append(surv, fmt.Sprintf("%s %d", k, survived[k]))
	}
	if len(surv) > 0 {
		r.Logf("calibration solutions that passed a harness: %s", strings.Join(surv, ", "))
	}
	r.Note("%d of %d tasks pass C1 and the audit", kept, len(out))
	return t.Write(r, out)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
