package tasks

import (
	"context"
	"fmt"
	"strings"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/goenv"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
	"github.com/lacuna-dev/lacuna/runners/goapi"
)

func init() { nodes.Register(solveType{}) }

// solveConfig:
//
//	node "solve" "calibration" { tasks = node.tasks.lo  calibration = true }
//	node "solve" "qwen"        { tasks = node.tasks.lo  solutions = node.import.qwen }
type solveConfig struct {
	Tasks nodes.Ref `hcl:"tasks"`
	// Solutions are rows with task_id and solution (the code that fills
	// the task's span), and optionally sample_id, model and cell (a
	// generate node's rows have them all).
	Solutions nodes.Ref `hcl:"solutions,optional"`
	// Calibration runs the built-in solutions instead: the reference
	// (twice; a Python task's once) and the mutants a harness must reject
	// (goharness.Mutants; pyharness.Mutants for Python: null, sibling API,
	// wrong import, perturbed argument, syntax break, and more), each row's
	// kind the mutant's.
	Calibration bool `hcl:"calibration,optional"`
	// Ecosystem is "go" (default) or "python", the tasks' (Python tasks
	// come from a tasks node with ecosystem = "python"): it decides what
	// Resolve pins (the Go toolchain, or the Python interpreter and
	// installer), so it is in the key rather than read from the rows.
	Ecosystem string `hcl:"ecosystem,optional"`
}

type solveType struct {
	nodes.Static[solveConfig, SampleRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = solveType{}
	_ nodes.Documented = solveType{}
	_ nodes.Validator  = solveType{}
	_ nodes.Resolver   = solveType{}
)

func (solveType) Name() string    { return "solve" }
func (solveType) Version() string { return "23" }
func (solveType) Doc() string {
	return "Runs solutions (rows of task_id, solution) or the built-in calibration solutions through the tasks' harnesses, " +
		"batched into go test runs compiled outside and executed inside the sandbox; one row per sample. " +
		"With ecosystem = \"python\": each solution runs through novelapibench/pyharness in the sandbox, in v_new's environment; " +
		"calibration = true runs each task's reference and pyharness's mutants."
}

func (solveType) Validate(cfg any) error {
	c := cfg.(*solveConfig)
	if (c.Solutions.Node == "") == !c.Calibration {
		return nodes.Errorf("solutions", "Solutions or calibration", "set exactly one of solutions = node.X.Y and calibration = true.")
	}
	if c.Ecosystem != "" && c.Ecosystem != "go" && c.Ecosystem != "python" {
		return nodes.Errorf("ecosystem", "Ecosystem not supported", "solve handles ecosystems \"go\" (default) and \"python\", not %q.", c.Ecosystem)
	}
	return nil
}

// Resolve pins the toolchain and the sandbox the harnesses are built and
// run with: both are in the key, so upgrading Go recomputes the verdicts.
// With ecosystem = "python" it pins what tasks does (resolvePython).
func (solveType) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	if r.Config().(*solveConfig).Ecosystem == "python" {
		return ResolvePython(ctx, r)
	}
	return ResolveGo(ctx, r)
}

func (t solveType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	tasks, err := ReadTasks(r, c.Tasks)
	if err != nil {
		return err
	}
	python := c.Ecosystem == "python"
	for _, tk := range tasks {
		if (tk.Ecosystem == "python") != python {
			return fmt.Errorf("task %s (%s) is a %s task: set ecosystem = %q on solve", tk.TaskID, tk.Qualified, EcosystemOf(tk), EcosystemOf(tk))
		}
	}
	var sols []Solution
	switch {
	case c.Calibration && python:
		sols, err = PyCalibration(tasks)
	case c.Calibration:
		sols, err = Calibration(ctx, r, tasks)
	default:
		sols, err = readSolutions(r, c.Solutions, tasks)
	}
	if err != nil {
		return err
	}
	var rows []SampleRow
	if python {
		rows, err = RunPython(ctx, r, c.Tasks.Node, tasks, sols)
	} else {
		rows, _, err = RunAll(ctx, r, tasks, sols, false)
	}
	if err != nil {
		return err
	}
	passed := 0
	for _, s := range rows {
		if s.Passed {
			passed++
		}
	}
	r.Note("%d samples over %d tasks, %d passed", len(rows), len(tasks), passed)
	return t.Write(r, rows)
}

// EcosystemOf is a task row's ecosystem, "go" for rows from before the
// column.
func EcosystemOf(t Row) string {
	if t.Ecosystem == "" {
		return "go"
	}
	return t.Ecosystem
}

// ReadTasks reads every task of a tasks node's output or a filter's (c1,
// c2, c3: kept or not).
func ReadTasks(r nodes.Run, ref nodes.Ref) ([]Row, error) {
	states, err := ReadStates(r, ref)
	rows := make([]Row, len(states))
	for i, s := range states {
		rows[i] = s.Row
	}
	return rows, err
}

// readSolutions reads any table with task_id and solution columns.
func readSolutions(r nodes.Run, ref nodes.Ref, tasks []Row) ([]Solution, error) {
	in, err := r.Input(ref)
	if err != nil {
		return nil, err
	}
	index := map[string]int{}
	for i, t := range tasks {
		index[t.TaskID] = i
	}
	var out []Solution
	n := map[string]int{}
	for i, row := range in.Rows() {
		var v any
		if err := in.Schema().Reconstruct(&v, row); err != nil {
			return nil, err
		}
		m, _ := v.(map[string]any)
		id, _ := m["task_id"].(string)
		code, ok := m["solution"].(string)
		if id == "" || !ok {
			return nil, fmt.Errorf("solutions row %d: needs string columns task_id and solution", i)
		}
		t, ok := index[id]
		if !ok {
			return nil, fmt.Errorf("solutions row %d: no task %s", i, id)
		}
		sid, _ := m["sample_id"].(string)
		if sid == "" {
			sid = fmt.Sprintf("s%d", n[id])
		}
		n[id]++
		model, _ := m["model"].(string)
		cell, _ := m["cell"].(string)
		out = append(out, Solution{Task: t, SampleID: sid, Kind: "model", Code: code, Model: model, Cell: cell})
	}
	return out, nil
}

// Calibration builds, for every observed task, the reference and the
// mutants its harness must reject.
func Calibration(ctx context.Context, r nodes.Run, tasks []Row) ([]Solution, error) {
	specs, expects, err := decodeTasks(tasks)
	if err != nil {
		return nil, err
	}
	g, err := goenv.From(r)
	if err != nil {
		return nil, err
	}
	pkgs := map[string]*goapi.Package{}
	var out []Solution
	for i, t := range tasks {
		if expects[i] == nil {
			continue
		}
		// The reference twice, each in a fresh process: a reference whose
		// asserted values still vary (beyond what its observed runs
		// showed) fails C1 rather than passes it by chance.
		out = append(out, Solution{Task: i, SampleID: "reference", Kind: "reference", Code: specs[i].ReferenceAnswer()},
			Solution{Task: i, SampleID: "reference-2", Kind: "reference", Code: specs[i].ReferenceAnswer()})
		p, ok := pkgs[t.ImportPath]
		if !ok {
			mod, err := g.Fetcher.Download(ctx, t.Module, t.Version)
			if err != nil {
				return nil, err
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(t.ImportPath, t.Module), "/")
			p, err = goapi.LoadPackage(mod.Dir+"/"+rel, t.ImportPath)
			if err != nil {
				return nil, err
			}
			pkgs[t.ImportPath] = p
		}
		tg := Target(t)
		name := tg.Name
		if tg.Receiver != "" {
			name = tg.Receiver + "." + tg.Name
		}
		sibling := ""
		if s := p.Siblings(name); len(s) > 0 {
			sibling = s[0]
		}
		probes := map[string]goharness.Probe{}
		for name, x := range expects[i].Probes {
			probes[name] = goharness.Probe{Type: x.Type, Len: x.Len, Nil: x.Nil, Value: x.Value}
		}
		for _, m := range goharness.Mutants(specs[i], tg, sibling, probes, expects[i].Output) {
			out = append(out, Solution{Task: i, SampleID: m.Kind, Kind: m.Kind, Code: m.Code, Imports: m.Imports})
		}
	}
	return out, nil
}

// Target is a task's API as the Go runners name it.
func Target(t Row) goharness.Target {
	parts := strings.Split(t.Qualified, ".")
	tg := goharness.Target{ID: t.APIID, Package: t.ImportPath, Name: parts[len(parts)-1]}
	if len(parts) == 3 {
		tg.Receiver = parts[1]
	}
	return tg
}
