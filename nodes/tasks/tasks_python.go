package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/bundle"
	"github.com/lacuna-dev/lacuna/nodes/pyenv"
	"github.com/lacuna-dev/lacuna/novelapibench/pyharness"
	"github.com/lacuna-dev/lacuna/runners/pyapi"
	rpyenv "github.com/lacuna-dev/lacuna/runners/pyenv"
	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// pyObserveRuns is how many processes a Python reference is observed in
// (hash randomisation differs between them): pyharness.Derive asserts
// exactly what they agree on.
const pyObserveRuns = 3

// pySampleLimits bound one sample's process (both passes).
var pySampleLimits = sandbox.Limits{Wall: 60 * time.Second, Memory: 2 << 30}

// ResolvePython pins what pyenv.Resolve pins (interpreter, installer,
// index, sandbox) and the digests of the cut helper and the harness's
// driver: a new driver recomputes the expectations and the verdicts. As
// root, the harness's runner drops to uid 65534 before the sandbox starts,
// so the store's Python cache and the interpreter's installation must be
// reachable by that user on the host (pyenv.Python.HostUnreachable): when
// they are not, it fails at the ecosystem attribute, unless
// LACUNA_PY_UNSANDBOXED=1 (then the samples are not run, as for any
// unsandboxed Python node, and "sandbox" is "none").
func ResolvePython(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	p, err := pyenv.Resolve(ctx, r, pySampleLimits)
	if err != nil {
		return nil, err
	}
	py := p.Value.(*pyenv.Python)
	if why := py.HostUnreachable(); why != "" && py.Unsandboxed == "" {
		if r.Getenv("LACUNA_PY_UNSANDBOXED") != "1" {
			return nil, nodes.Errorf("ecosystem", "Python library code cannot run in the sandbox",
				"%s: keep the store under a path others can read and use an interpreter others can read (LACUNA_PYTHON=/usr/bin/python3); or, to run it outside the sandbox as your user with your network and files (resource limits only), set LACUNA_PY_UNSANDBOXED=1", why)
		}
		py.Unsandboxed = why
		p.Identity["sandbox"] = "none"
	}
	p.Identity["helper.cut"] = fmt.Sprintf("%016x", xxhash.Sum64String(pyharness.CutHelperSource()))
	p.Identity["helper.driver"] = fmt.Sprintf("%016x", xxhash.Sum64String(pyharness.DriverSource()))
	return p, nil
}

// pyEnvs finds the environment of each digest in p's cache once
// (pyenv.Python.Open: rebuilt from its kept lock when it was deleted; a
// digest whose lock is gone too is pyenv.EnvGone, naming upstream, the
// node's input): the node fails and stores nothing rather than a cached
// empty result that never heals.
type pyEnvs struct {
	p        *pyenv.Python
	upstream string
	envs     map[string]*rpyenv.Env
}

func (e *pyEnvs) get(ctx context.Context, r nodes.Run, digest, lib, version string) (*rpyenv.Env, error) {
	if env, ok := e.envs[digest]; ok {
		return env, nil
	}
	env, err := e.p.Open(ctx, r, digest, lib, version, e.upstream)
	if err != nil {
		return nil, err
	}
	e.envs[digest] = env
	return env, nil
}

// runner is a harness runner on env's interpreter, the environment
// mounted read-only, its files in the store's Python cache (reachable by
// the sandbox's user on the host wherever ResolvePython let the node run).
func (e *pyEnvs) runner(r nodes.Run, env *rpyenv.Env) (*pyharness.Runner, error) {
	dir, err := r.CacheDir("python")
	if err != nil {
		return nil, err
	}
	return pyharness.NewRunner(e.p.Sandbox, pyharness.Config{Python: env.Python(), ReadOnly: e.p.Mounts(env),
		Limits: pySampleLimits, Parallel: 2, Dir: dir})
}

// pyTarget is the pyapi.API Cut needs of a bundle: its identity, kind,
// canonical path and parameters. Its other public paths are not in the
// bundle: the spy patches the aliases in every module loaded by then.
func pyTarget(b bundle.Row) pyapi.API {
	a := pyapi.API{ID: b.APIID, Path: b.Qualified, Paths: []string{b.Qualified}, Kind: b.Kind}
	for _, p := range b.Params {
		a.Params = append(a.Params, pyapi.Param{Name: p.Name, Kind: p.Kind})
	}
	return a
}

// pyExample is a bundle example as Cut reads it.
func pyExample(e bundle.Example) (pyapi.Example, error) {
	var steps []pyapi.Step
	if err := json.Unmarshal([]byte(e.Steps), &steps); err != nil {
		return pyapi.Example{}, fmt.Errorf("example %s: steps: %w (bundle from before steps were recorded: run bundle again)", e.Name, err)
	}
	return pyapi.Example{Name: e.Name, Module: e.Module, File: e.File, Steps: steps, Code: e.Code, Output: e.Output}, nil
}

type pyMade struct {
	row  Row
	task pyharness.Task
}

// runPython cuts the tasks of Python bundles with pyharness (in v_new's
// environment, the bundle's v_new_env) and observes every reference in
// the sandbox: pyObserveRuns processes, Derive, then UsableInputs.
func (t tasksType) runPython(ctx context.Context, r nodes.Run, bundles []bundle.Row) error {
	p, err := pyenv.From(r)
	if err != nil {
		return err
	}
	envs := &pyEnvs{p: p, upstream: t.Config(r).Bundles.Node, envs: map[string]*rpyenv.Env{}}
	var made []pyMade
	noTask := map[string]int{}
	levelSkips := map[string]int{}
	for i, b := range bundles {
		r.Progress(int64(i), int64(len(bundles)))
		if b.Ecosystem != "python" || b.VNewEnv == "" {
			return fmt.Errorf("bundle %s (%s) is not a Python bundle with v_new_env: the bundles input must be a bundle with ecosystem = \"python\"", b.Qualified, b.Library)
		}
		env, err := envs.get(ctx, r, b.VNewEnv, b.Library, b.Version)
		if err != nil {
			return err
		}
		m, skips, why, err := cutPython(ctx, env, b)
		if err != nil {
			return err
		}
		for _, s := range skips {
			levelSkips[s]++
		}
		if len(m) == 0 {
			noTask[why]++
			continue
		}
		made = append(made, m...)
	}
	for _, k := range SortedKeys(noTask) {
		r.Logf("no task for %d APIs: %s", noTask[k], k)
	}
	for _, k := range SortedKeys(levelSkips) {
		r.Logf("level not cut %d times: %s", levelSkips[k], k)
	}

	observed, dropped, err := observePython(ctx, r, p, envs, made)
	if err != nil {
		return err
	}
	rows := make([]Row, len(made))
	levels := map[string]int{}
	for i, m := range made {
		rows[i] = m.row
		levels[m.row.Difficulty]++
	}
	r.Report("skipped", map[string]map[string]int{"no_task": noTask, "level": levelSkips})
	r.Note("%d tasks from %d bundles (easy %d, medium %d, hard %d); %d references observed (%d runs each), %d inputs dropped (perturbed ones that tell nothing apart, class spans' repeats); %d bundles without a task",
		len(rows), len(bundles), levels[pyharness.Easy], levels[pyharness.Medium], levels[pyharness.Hard], observed, pyObserveRuns, dropped, sumCounts(noTask))
	return t.Write(r, rows)
}

// observePython observes the references of made in their environments
// (pyObserveRuns processes each, Derive, then UsableInputs), recording in
// each row its spec and expectation, or why it could not be observed
// (ObserveError). It returns how many were observed and how many inputs
// UsableInputs dropped.
func observePython(ctx context.Context, r nodes.Run, p *pyenv.Python, envs *pyEnvs, made []pyMade) (observed, dropped int, err error) {
	byEnv := map[string][]int{}
	var order []string
	for i, m := range made {
		if byEnv[m.row.VNewEnv] == nil {
			order = append(order, m.row.VNewEnv)
		}
		byEnv[m.row.VNewEnv] = append(byEnv[m.row.VNewEnv], i)
	}
	for _, digest := range order {
		idx := byEnv[digest]
		if p.Unsandboxed != "" {
			for _, i := range idx {
				made[i].row.ObserveError = "not run: the sandbox cannot mount the environment: " + p.Unsandboxed
			}
			continue
		}
		env := envs.envs[digest]
		run, err := envs.runner(r, env)
		if err != nil {
			return 0, 0, err
		}
		var samples []pyharness.Sample
		for _, i := range idx {
			for k := 0; k < pyObserveRuns; k++ {
				samples = append(samples, pyharness.Sample{Task: made[i].task, Solution: made[i].task.Reference})
			}
		}
		runs, err := run.RunAll(ctx, samples)
		run.Close()
		if err != nil {
			return 0, 0, err
		}
		for j, i := range idx {
			m := &made[i]
			exp, err := pyharness.Derive(runs[j*pyObserveRuns : (j+1)*pyObserveRuns])
			if err != nil {
				m.row.ObserveError = "reference failed: " + strings.TrimPrefix(err.Error(), "pyharness: ")
				continue
			}
			var why []string
			m.task, exp, why = pyharness.UsableInputs(m.task, exp)
			dropped += len(why)
			spec, _ := json.Marshal(m.task)
			e, _ := json.Marshal(exp)
			m.row.Spec, m.row.Expect = string(spec), string(e)
			observed++
		}
	}
	return observed, dropped, nil
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// cutPython makes the tasks of one Python bundle from its first valid
// example that supports each level, as cut does for Go. skips are the
// reasons of the levels not cut ("medium: ..."), why says why there is no
// task at all; err is for a cut helper that could not run.
func cutPython(ctx context.Context, env *rpyenv.Env, b bundle.Row) (out []pyMade, skips []string, why string, err error) {
	if b.Kind == "property" {
		return nil, nil, "a property: read, not called", nil
	}
	api := pyTarget(b)
	var items []pyharness.Cuttable
	for _, e := range b.Examples {
		if !e.Valid || !cutsFrom(e.Kind, "python") {
			continue
		}
		ex, err := pyExample(e)
		if err != nil {
			return nil, nil, err.Error(), nil
		}
		items = append(items, pyharness.Cuttable{API: api, Example: ex})
	}
	if len(items) == 0 {
		return nil, nil, "no valid example", nil
	}
	res, err := pyharness.CutAll(ctx, env.Python(), items)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%s: %w", b.APIID, err)
	}
	got := map[string]pyMade{}
	missing := map[string]string{}
	for _, s := range res.Skipped {
		lvl := s.Level
		if lvl == "" {
			lvl = pyharness.Easy
		}
		if _, ok := missing[lvl]; !ok {
			missing[lvl] = s.Reason
		}
	}
	for _, task := range res.Tasks {
		if _, done := got[task.Difficulty]; done {
			continue
		}
		desc, ok := pyharness.Describe(task, b.MProse)
		if !ok {
			missing[task.Difficulty] = "its description would name the target"
			continue
		}
		ref, _, _ := task.ReferenceProgram()
		got[task.Difficulty] = pyMade{task: task, row: Row{
			TaskID:  fmt.Sprintf("%016x", xxhash.Sum64String(b.APIID+"\x00"+task.Difficulty+"\x00examples\x00"+task.Example)),
			Library: b.Library, Ecosystem: "python", Module: b.Module, Version: b.Version, APIID: b.APIID, ImportPath: b.ImportPath,
			Qualified: b.Qualified, PkgName: task.Target.Package(), Family: b.Family, FamilyRep: b.FamilyRep,
			Difficulty: task.Difficulty, Description: desc, Context: task.Context(), Mask: task.Reference, Reference: ref,
			Generator: "examples", Example: task.Example, VNewEnv: b.VNewEnv, Kind: b.Kind,
		}}
	}
	var miss []string
	for _, lvl := range []string{pyharness.Easy, pyharness.Medium, pyharness.Hard} {
		if _, have := got[lvl]; !have {
			if w, ok := missing[lvl]; ok {
				miss = append(miss, lvl+": "+w)
			}
		}
	}
	if len(got) == 0 {
		why = "no valid example supports a task"
		if w, ok := missing[pyharness.Easy]; ok {
			why = w
		}
		return nil, miss, why, nil
	}
	for _, lvl := range []string{pyharness.Easy, pyharness.Medium, pyharness.Hard} {
		if m, ok := got[lvl]; ok {
			m.row.Missing = strings.Join(miss, "; ")
			out = append(out, m)
		}
	}
	return out, miss, "", nil
}

// PyCalibration builds, for every observed Python task, its calibration
// solutions: the reference (once: tasks observed it in pyObserveRuns
// processes already) and pyharness.Mutants, the sibling mutant calling
// another API with a task (pySiblings). Kind and SampleID are the
// mutant's kind ("reference" for the reference).
func PyCalibration(tasks []Row) ([]Solution, error) {
	siblings := PySiblings(tasks)
	specs, expects, err := PySpecs(tasks)
	if err != nil {
		return nil, err
	}
	var out []Solution
	for i, task := range specs {
		if task == nil {
			continue
		}
		out = append(out, Solution{Task: i, SampleID: "reference", Kind: "reference", Code: task.Reference})
		for _, m := range pyharness.Mutants(*task, siblings[i], *expects[i]) {
			out = append(out, Solution{Task: i, SampleID: m.Kind, Kind: m.Kind, Code: m.Code})
		}
	}
	return out, nil
}

// PySpecs decodes the spec and expectation of every observed Python task
// (pySpec), nil for a task without an expectation (not observed).
func PySpecs(tasks []Row) ([]*pyharness.Task, []*pyharness.Expectation, error) {
	specs := make([]*pyharness.Task, len(tasks))
	expects := make([]*pyharness.Expectation, len(tasks))
	for i, tk := range tasks {
		if tk.Expect == "" {
			continue
		}
		task, exp, err := PySpec(tk)
		if err != nil {
			return nil, nil, err
		}
		specs[i], expects[i] = &task, &exp
	}
	return specs, expects, nil
}

// PySpec decodes an observed Python task's spec and expectation.
func PySpec(tk Row) (pyharness.Task, pyharness.Expectation, error) {
	var task pyharness.Task
	var exp pyharness.Expectation
	if err := json.Unmarshal([]byte(tk.Spec), &task); err != nil {
		return task, exp, fmt.Errorf("task %s: spec: %w", tk.TaskID, err)
	}
	if err := json.Unmarshal([]byte(tk.Expect), &exp); err != nil {
		return task, exp, fmt.Errorf("task %s: expect: %w", tk.TaskID, err)
	}
	return task, exp, nil
}

// PySiblings is, for each task, the name of the API its sibling mutant
// calls instead of the target ("" when there is none): the first by name
// of the other targets with a task that have the same kind (function,
// method, class, ...) and the same parent in their qualified names (the
// same module for a function or a class, the same class for a method),
// so that the mutant is a plausible wrong choice the harness must reject
// for its behaviour, not a name the context cannot resolve.
func PySiblings(tasks []Row) []string {
	parent := func(q string) string { return q[:max(strings.LastIndex(q, "."), 0)] }
	name := func(q string) string { return q[strings.LastIndex(q, ".")+1:] }
	names := map[string][]string{} // parent and kind → the target names with a task, sorted
	for _, tk := range tasks {
		k := parent(tk.Qualified) + "\x00" + tk.Kind
		if n := name(tk.Qualified); !contains(names[k], n) {
			names[k] = append(names[k], n)
		}
	}
	for k := range names {
		sort.Strings(names[k])
	}
	out := make([]string, len(tasks))
	for i, tk := range tasks {
		for _, n := range names[parent(tk.Qualified)+"\x00"+tk.Kind] {
			if n != name(tk.Qualified) {
				out[i] = n
				break
			}
		}
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
