package filters

import (
	"fmt"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/novelapibench/pyharness"
)

// auditPython is C1 for Python tasks from their calibration runs (a solve
// node's with Calibration = true, or runPythonSolutions' of pyCalibration
// when c1 has no samples): each mutant's verdict and fast-path class
// (pyharness.AuditMutant) and pyharness.C1 decide what is kept. A task
// must have a run of every kind PyCalibration builds for it (from these
// tasks: on a subset of the solve node's tasks it expects no kind solve
// did not build); one missing (samples filtered, a solve that lost rows)
// drops it with "calibration sample KIND missing", as pyharness.C1 cannot
// tell a mutant never run from one not built.
func (t c1Type) auditPython(r nodes.Run, tks []tasks.Row, runs []tasks.SampleRow) error {
	byTask := map[string][]tasks.SampleRow{}
	for _, s := range runs {
		if _, ok := pyharness.ExpectedClass(s.Kind); !ok {
			return fmt.Errorf("samples: %s/%s is of kind %q, not a calibration solution (samples must come from a solve node with calibration = true)", s.TaskID, s.SampleID, s.Kind)
		}
		byTask[s.TaskID] = append(byTask[s.TaskID], s)
	}
	observed, matched := 0, 0
	for _, tk := range tks {
		if tk.Expect != "" {
			observed++
			if len(byTask[tk.TaskID]) > 0 {
				matched++
			}
		}
	}
	if observed > 0 && matched == 0 {
		return fmt.Errorf("samples: none of the %d samples is of the %d observed tasks (samples must come from a solve node with calibration = true on the same tasks node)", len(runs), observed)
	}
	siblings := tasks.PySiblings(tks)
	out := make([]C1Row, len(tks))
	survived := map[string]int{}
	for i, tk := range tks {
		row := C1Row{Row: tk, Survivors: []string{}}
		var ref *tasks.SampleRow
		for j, s := range byTask[tk.TaskID] {
			if s.Kind == "reference" {
				ref = &byTask[tk.TaskID][j]
			}
		}
		switch {
		case tk.Expect == "":
			row.Reason = "no harness: " + tk.ObserveError
		case ref == nil:
			row.Reason = "the reference was not run"
		case ref.Observation == "": // not run (RunPython says why)
			row.Reason = ref.Failures
		default:
			task, exp, err := tasks.PySpec(tk)
			if err != nil {
				return err
			}
			var a pyharness.Audit
			ran := map[string]bool{}
			for _, s := range byTask[tk.TaskID] {
				ran[s.Kind] = true
				run, v, err := tasks.PyRun(s)
				if err != nil {
					return err
				}
				if s.Kind == "reference" {
					a.Reference = v
					continue
				}
				m := pyharness.AuditMutant(task, exp, pyharness.MutantOf(s.Kind, s.Solution), v, run)
				a.Mutants = append(a.Mutants, m)
				row.AuditRun++
				if v.Passed {
					row.Survivors = append(row.Survivors, s.Kind)
					survived[s.Kind]++
				} else {
					row.AuditKill++
				}
			}
			row.C1Passed = a.Reference.Passed
			if !a.Reference.Passed {
				row.C1Error = a.Reference.Layer + ": " + a.Reference.Reason
			}
			if row.AuditRun > 0 {
				row.Discrimination = float64(row.AuditKill) / float64(row.AuditRun)
			}
			row.Keep, row.Reason = pyharness.C1(exp, a)
			for _, m := range pyharness.Mutants(task, siblings[i], exp) {
				if !ran[m.Kind] {
					row.Keep, row.Reason = false, "calibration sample "+m.Kind+" missing"
					break
				}
			}
		}
		out[i] = row
	}
	return t.finish(r, out, survived)
}
