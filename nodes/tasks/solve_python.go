package tasks

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/pyenv"
	"github.com/lacuna-dev/lacuna/novelapibench/pyharness"
	rpyenv "github.com/lacuna-dev/lacuna/runners/pyenv"
)

// RunPython runs each solution of a Python task through
// pyharness in the sandbox, in v_new's environment (the task's
// v_new_env), and checks it against the task's expectation. A task
// without a harness (no expectation) or a node that cannot sandbox the
// environment gives failed rows saying so, not run. Observation is the
// harness's run as JSON (pyharness.Run, its output in Output): what judge
// reads back.
func RunPython(ctx context.Context, r nodes.Run, upstream string, tasks []Row, sols []Solution) ([]SampleRow, error) {
	p, err := pyenv.From(r)
	if err != nil {
		return nil, err
	}
	envs := &pyEnvs{p: p, upstream: upstream, envs: map[string]*rpyenv.Env{}}
	specs, expects, err := PySpecs(tasks)
	if err != nil {
		return nil, err
	}
	rows := make([]SampleRow, len(sols))
	work := nodes.WorkOf(r)
	work.Grow("samples", len(sols))
	byEnv := map[string][]int{}
	var order []string
	for i, s := range sols {
		tk := tasks[s.Task]
		row := &rows[i]
		*row = SampleRow{TaskID: tk.TaskID, SampleID: s.SampleID, Kind: s.Kind, Model: s.Model, Cell: s.Cell, APIID: tk.APIID, Solution: s.Code}
		switch {
		case specs[s.Task] == nil:
			row.FailedLayers, row.Failures = []string{pyharness.LayerIntegrity}, "not run: the task has no harness: "+tk.ObserveError
			continue
		case p.Unsandboxed != "":
			row.FailedLayers, row.Failures = []string{pyharness.LayerIntegrity}, "not run: the sandbox cannot mount the environment: "+p.Unsandboxed
			continue
		}
		row.Program, _, _ = specs[s.Task].Program(s.Code)
		if byEnv[tk.VNewEnv] == nil {
			order = append(order, tk.VNewEnv)
		}
		byEnv[tk.VNewEnv] = append(byEnv[tk.VNewEnv], i)
	}
	queued := 0
	for _, idx := range byEnv {
		queued += len(idx)
	}
	work.Add(len(sols) - queued) // not run: no harness, or no sandbox
	for _, digest := range order {
		idx := byEnv[digest]
		first := tasks[sols[idx[0]].Task]
		env, err := envs.get(ctx, r, digest, first.Library, first.Version)
		if err != nil {
			return nil, err
		}
		run, err := envs.runner(r, env)
		if err != nil {
			return nil, err
		}
		samples := make([]pyharness.Sample, len(idx))
		for j, i := range idx {
			samples[j] = pyharness.Sample{Task: *specs[sols[i].Task], Solution: sols[i].Code}
		}
		runs, err := run.RunAll(ctx, samples)
		run.Close()
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			if err := fillPython(&rows[i], *expects[sols[i].Task], runs[j]); err != nil {
				return nil, err
			}
		}
		work.Add(len(idx))
	}
	return rows, nil
}

// fillPython puts a harness run and its verdict into a sample row, its
// texts made stable (stableText) before they are bounded.
func fillPython(row *SampleRow, exp pyharness.Expectation, run pyharness.Run) error {
	v := pyharness.Check(exp, run)
	row.Passed = v.Passed
	if !v.Passed {
		row.FailedLayers, row.Failures = []string{v.Layer}, stableText(v.Reason)
	}
	row.TimedOut = run.TimedOut
	row.Output = pyharness.KeptOutput(stableText(run.Output))
	if rec := run.Record; rec != nil {
		row.SpyDirect, row.SpyIndirect = int64(rec.Direct), int64(rec.Indirect)
		if rec.Error != nil {
			if rec.Stage == "compile" {
				row.CompileError = stableText(rec.Error.String())
			} else {
				row.RuntimeError = bound(stableText(rec.Error.String()+"\n"+rec.Error.Traceback), 4096)
			}
		}
	}
	run.Output = "" // in Output
	obs, err := json.Marshal(run)
	if err != nil {
		return fmt.Errorf("sample %s/%s: %w", row.TaskID, row.SampleID, err)
	}
	row.Observation = stableText(string(obs))
	return nil
}

// PyRun reads back a run sample row (one with an observation): the
// harness's run (its output bounded as fillPython stored it) and its
// verdict.
func PyRun(s SampleRow) (pyharness.Run, pyharness.Verdict, error) {
	var run pyharness.Run
	if err := json.Unmarshal([]byte(s.Observation), &run); err != nil {
		return run, pyharness.Verdict{}, fmt.Errorf("sample %s/%s: observation: %w", s.TaskID, s.SampleID, err)
	}
	run.Output = s.Output
	v := pyharness.Verdict{Passed: s.Passed, Reason: s.Failures}
	if len(s.FailedLayers) > 0 {
		v.Layer = s.FailedLayers[0]
	}
	return run, v, nil
}
