// Package tasks holds NovelAPIBench's stage 3 node types and what the
// stages after it share about a task: tasks (graded coding tasks with
// execute-then-assert harnesses, cut from validated examples) and solve
// (running solutions, or the reference and its calibration mutants,
// through the harnesses), the task and sample rows (Row, SampleRow,
// Solution), and the readers and runners the filters, experiments and the
// judge use (ReadTasks, ReadStates, RunAll, RunPython). The stages after
// it live beside it: nodes/filters (c1, c2, c3), nodes/experiments
// (generate: a model's answers in one knowledge cell, with RAG), nodes/judge
// (the failure taxonomy) and nodes/metrics (the paper's tables).
package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/goenv"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
	"github.com/lacuna-dev/lacuna/runners/goapi"
	"github.com/lacuna-dev/lacuna/runners/gotool"
	"github.com/lacuna-dev/lacuna/runners/modfetch"
)

// Solution is one program to run through a task's harness.
type Solution struct {
	Task     int    // index into the tasks
	SampleID string // unique per task
	Kind     string // reference, a calibration mutant, or "model"
	Code     string // replaces the task's span
	Imports  []string
	// Model and Cell say where a model's solution came from (a generate
	// node's rows); empty for built-in solutions.
	Model, Cell string
	// NoPerturb leaves the second input out when observing (the
	// reference did not compile with it).
	NoPerturb bool
}

// SampleRow is one solution's run through its harness: what every model
// run, C1 and the audit record.
type SampleRow struct {
	TaskID       string `parquet:"task_id"`
	SampleID     string `parquet:"sample_id"`
	Kind         string `parquet:"kind"`
	Model        string `parquet:"model"` // the model that wrote it ("" for built-in solutions)
	Cell         string `parquet:"cell"`  // the knowledge cell it was written in
	APIID        string `parquet:"api_id"`
	Solution     string `parquet:"solution"`
	Program      string `parquet:"program"` // the whole program with the solution in place
	Passed       bool   `parquet:"passed"`
	SpyDirect    int64  `parquet:"spy_direct"`
	SpyIndirect  int64  `parquet:"spy_indirect"`
	CompileError string `parquet:"compile_error"`
	RuntimeError string `parquet:"runtime_error"` // panic or crash, truncated
	TimedOut     bool   `parquet:"timed_out"`
	// FailedLayers: span (refused before the build), channel (tampered),
	// runtime, spy, structural, comparative, behavioural, attribution,
	// perturbed (see goharness.Check).
	FailedLayers []string `parquet:"failed_layers,list"`
	Failures     string   `parquet:"failures"`    // why it failed, one line per failure
	Output       string   `parquet:"output"`      // what the program printed, bounded
	Observation  string   `parquet:"observation"` // the harness's record as JSON: runs (output, probes, spy counts, arguments), substituted runs, second input
	Seconds      float64  `parquet:"seconds" volatile:"wall-clock time of the harness processes"`

	spyAccess string // the counter expression the harness read
}

// moduleEnv is what running harnesses against one module version needs.
type moduleEnv struct {
	stats goharness.RunStats // of the last run
	mod   *modfetch.Module
	spy   *goharness.Spy
	tc    *gotool.Toolchain
	ws    *gotool.Workspace
	work  *nodes.Work // counts the samples run (nodes.WorkOf)
}

// prepare downloads (verified) a module version, makes a sandboxed
// workspace and instruments targets in it. Close the workspace when done.
func prepare(ctx context.Context, r nodes.Run, module, version string, targetIDs []string) (*moduleEnv, error) {
	g, err := goenv.From(r)
	if err != nil {
		return nil, err
	}
	tc := g.Toolchain
	mod, err := g.Fetcher.Download(ctx, module, version)
	if err != nil {
		return nil, err
	}
	apis, err := goapi.Surface(mod.Dir)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, id := range targetIDs {
		want[id] = true
	}
	var targets []goapi.API
	for _, a := range apis {
		if want[a.ID] && (a.Kind == "func" || a.Kind == "method") && !a.NoBody {
			targets = append(targets, a)
		}
	}
	ws, err := g.Workspace("harness", 5*time.Minute)
	if err != nil {
		return nil, err
	}
	spy, err := goharness.NewSpy(mod.Dir, mod.Path, targets, ws.Dir)
	if err != nil {
		ws.Close()
		return nil, err
	}
	return &moduleEnv{mod: mod, spy: spy, tc: tc, ws: ws}, nil
}

// unitsPerPackage bounds how many harnesses share a test binary: packages
// compile in parallel. Every harness still runs in a process of its own.
const unitsPerPackage = 150

// observeRuns is how many times a reference's scenario runs when it is
// observed (10 at least, more while within 2 s): only what all runs agree
// on is asserted. Ten are not enough for map order: a map of two entries
// iterates in its less likely order one time in eight, so ten runs agree
// by chance a quarter of the time; a hundred, once in 600,000.
const observeRuns = 100

// run runs solutions through their tasks' harnesses and returns one row
// per solution with its record. With observe, each runs observeRuns
// times (and on the second input when one can be derived) and nothing is
// checked: the references' records become the expectations. Otherwise
// each runs once (and once on the second input when its expectation has
// one) and is checked against expects, outside the process that ran it.
//
// The harnesses compile in one batched build; every one then runs in a
// process of its own from its package's test binary, in the sandbox, so
// that no solution's crash, exit, leftover goroutines or global state can
// touch another's verdict. Verdicts come from each process's signed
// record (goharness.Channel), never from what it printed.
func (e *moduleEnv) run(ctx context.Context, tasks []Row, specs []goharness.Task, expects []*goharness.Expectation, sols []Solution, observe bool) ([]SampleRow, []*goharness.Record, error) {
	out := make([]SampleRow, len(sols))
	recs := make([]*goharness.Record, len(sols))
	var units []goharness.Unit
	var which []int
	unitExpect := map[int]*goharness.Expectation{}
	for i, s := range sols {
		t := tasks[s.Task]
		spec := specs[s.Task]
		if s.Imports != nil {
			spec.Imports = s.Imports
		}
		expect := expects[s.Task]
		// A span, after the import lines the solver wrote, or a whole
		// program with its own imports, helpers and main.
		solverImports, code := goharness.SplitAnswer(s.Code)
		prog, span, whole := spec.AsProgram(s.Code)
		own := ""
		if whole {
			// The task's own program with the span written in (and
			// helpers of its own, maybe) is that span: its context keeps
			// its calls and returns.
			if sp, decls, ims, ok := spec.AsSpan(prog, span); ok {
				whole, code, own, solverImports = false, sp, decls, ims
			}
		}
		if whole {
			// A program that begins with the task's own context runs it
			// as the context, and gets the second input as a span does.
			var same bool
			prog, span, same = spec.WithContext(prog, span)
			spec, code, solverImports, expect = prog, span, nil, expect.WithProbes(prog.Probes)
			if !same && expect != nil {
				expect.Perturbed = nil
			}
		}
		out[i] = SampleRow{TaskID: t.TaskID, SampleID: s.SampleID, Kind: s.Kind, Model: s.Model, Cell: s.Cell, APIID: t.APIID, Solution: s.Code, Program: spec.Program(s.Code), FailedLayers: []string{}}
		access, ok := e.spy.Access[t.APIID]
		out[i].spyAccess = access
		if !ok {
			out[i].RuntimeError = "the target cannot be spied on (no Go body)"
			continue
		}
		err := goharness.CheckSpanFor(code, expect)
		if err == nil && whole {
			err = goharness.CheckDecls(spec.Decls)
		}
		if err == nil && own != "" {
			err = goharness.CheckDecls(own)
		}
		if err == nil {
			err = spec.CheckSolverImports(solverImports, code)
		}
		if err != nil {
			// Refused before the build: it could skip or forge the checks.
			out[i].CompileError = "the solution " + err.Error()
			out[i].FailedLayers = []string{"span"}
			continue
		}
		u := goharness.UnitSpec{Task: spec, Solution: code, SolverImports: solverImports, SolverDecls: whole, OwnDecls: own, Index: len(units),
			SpyAccess: access, SpyImport: t.ImportPath, Module: e.mod.Path, Runs: 1}
		if observe {
			u.Runs = observeRuns
		}
		if whole {
			expect.SubstitutionFor(&u)
		}
		if !whole && observe && !s.NoPerturb || expect != nil && expect.Perturbed != nil {
			u.Perturbed, _ = goharness.PerturbBefore(spec)
		}
		unit := goharness.Harness(u)
		unit.Group = fmt.Sprintf("%d", len(units)/unitsPerPackage)
		if s.Imports != nil || whole || own != "" || !goharness.KnownImports(spec, e.mod.Path, solverImports) {
			// An import problem fails a whole package (the go command
			// reports one a round), and a whole program's declarations (or
			// a program's own helpers) are its own: keep such units alone.
			unit.Group = fmt.Sprintf("alone-%d", i)
		}
		if !observe {
			unitExpect[len(units)] = expect
		}
		units = append(units, unit)
		which = append(which, i)
	}
	e.work.Add(len(sols) - len(units)) // refused before the build
	if len(units) == 0 {
		return out, recs, nil
	}
	// Two sandboxes a core: much of a sandbox's start is the kernel
	// setting up its namespaces and mounts.
	runs, stats, err := goharness.RunUnits(ctx, e.tc, e.mod, units, e.ws.BatchOptions(gotool.TestOptions{Timeout: 5 * time.Minute, Offline: true, Args: []string{"-overlay", e.spy.Overlay, "-ldflags=-s -w"}}),
		goharness.RunConfig{Dir: e.ws.Dir, Parallel: 2 * max(runtime.NumCPU(), 1), Supervise: e.ws.Isolation == "bubblewrap", Done: e.work.Add})
	if err != nil {
		return nil, nil, err
	}
	for u, run := range runs {
		recs[which[u]] = fill(&out[which[u]], run, unitExpect[u], observe)
	}
	e.stats = stats
	return out, recs, nil
}

// fill records in row what running its harness gave and, unless
// observing, checks it against expect (outside the process that ran it).
// It returns the record, nil when there is none. A verdict's texts are
// made stable (stableText) before they are bounded, so that running the
// sample again writes the same row; an observation's stay as they were.
func fill(row *SampleRow, run goharness.UnitRun, expect *goharness.Expectation, observe bool) *goharness.Record {
	text := stableText
	if observe {
		text = func(s string) string { return s }
	}
	if run.CompileError != "" {
		row.CompileError = text(run.CompileError)
		return nil
	}
	row.Seconds = run.Process.Seconds
	switch {
	case errors.Is(run.Err, goharness.ErrTampered):
		row.RuntimeError = "tampered: " + text(run.Err.Error())
		row.FailedLayers = []string{"channel"}
		return nil
	case run.Err != nil:
		// It crashed, exited or hung: what it printed says why.
		row.TimedOut = run.Process.TimedOut
		row.RuntimeError = bound(text(run.Err.Error()+"\n"+run.Process.Output), 4000)
		row.FailedLayers = []string{"runtime"}
		return nil
	}
	rec := run.Record
	b, _ := json.Marshal(rec)
	row.Observation = text(string(b))
	if len(rec.Normal) > 0 {
		o := rec.Normal[0]
		row.SpyDirect, row.SpyIndirect, row.TimedOut = o.Direct, o.Indirect, o.TimedOut
		row.Output = bound(text(o.Output), 4000)
		if o.Panic != "" {
			row.RuntimeError = bound(text("panic: "+o.Panic), 4000)
		}
	}
	if observe {
		return rec
	}
	if expect == nil {
		row.FailedLayers = []string{"harness"}
		row.Failures = "the task has no expectation"
		return rec
	}
	fails := goharness.Check(expect, rec)
	row.Passed = len(fails) == 0
	row.FailedLayers = goharness.Layers(fails)
	var msgs []string
	for _, f := range fails {
		msgs = append(msgs, f.Layer+": "+f.Message)
	}
	row.Failures = bound(text(strings.Join(msgs, "\n")), 4000)
	return rec
}

func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "\n[truncated]"
}

// decodeTasks reads the spec and expectation of each task row.
func decodeTasks(rows []Row) ([]goharness.Task, []*goharness.Expectation, error) {
	specs := make([]goharness.Task, len(rows))
	expects := make([]*goharness.Expectation, len(rows))
	for i, t := range rows {
		if err := json.Unmarshal([]byte(t.Spec), &specs[i]); err != nil {
			return nil, nil, fmt.Errorf("task %s: spec: %w", t.TaskID, err)
		}
		if t.Expect != "" {
			expects[i] = &goharness.Expectation{}
			if err := json.Unmarshal([]byte(t.Expect), expects[i]); err != nil {
				return nil, nil, fmt.Errorf("task %s: expect: %w", t.TaskID, err)
			}
		}
	}
	return specs, expects, nil
}

// byModule groups row indices by (module, version), in first-seen order.
func byModule(rows []Row) [][]int {
	idx := map[[2]string]int{}
	var groups [][]int
	for i, t := range rows {
		k := [2]string{t.Module, t.Version}
		g, ok := idx[k]
		if !ok {
			g = len(groups)
			idx[k] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// RunAll runs solutions grouped by module (observe: see moduleEnv.run);
// rows and records come back in sols order.
func RunAll(ctx context.Context, r nodes.Run, tasks []Row, sols []Solution, observe bool) ([]SampleRow, []*goharness.Record, error) {
	specs, expects, err := decodeTasks(tasks)
	if err != nil {
		return nil, nil, err
	}
	out := make([]SampleRow, len(sols))
	recs := make([]*goharness.Record, len(sols))
	work := nodes.WorkOf(r)
	work.Grow("samples", len(sols))
	for _, g := range byModule(tasks) {
		in := map[int]bool{}
		var ids []string
		for _, i := range g {
			in[i] = true
			ids = append(ids, tasks[i].APIID)
		}
		var mine []Solution
		var where []int
		for j, s := range sols {
			if in[s.Task] {
				mine = append(mine, s)
				where = append(where, j)
			}
		}
		if len(mine) == 0 {
			continue
		}
		t0 := tasks[g[0]]
		env, err := prepare(ctx, r, t0.Module, t0.Version, ids)
		if err != nil {
			return nil, nil, err
		}
		start := time.Now()
		env.work = work
		r.Status("%s@%s: %d solutions through their harnesses", t0.Module, t0.Version, len(mine))
		rows, rs, err := env.run(ctx, tasks, specs, expects, mine, observe)
		env.ws.Close()
		if err != nil {
			return nil, nil, err
		}
		r.Logf("%s@%s: %d solutions through %d harnesses in %.1fs (build %.1fs; %d processes, one per solution, in %d sandboxes, %.1fs)", t0.Module, t0.Version, len(mine), len(g), time.Since(start).Seconds(), env.stats.Build, env.stats.Processes, env.stats.Sandboxes, env.stats.Run)
		for k, row := range rows {
			out[where[k]], recs[where[k]] = row, rs[k]
		}
	}
	return out, recs, nil
}

func SortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ResolveGo pins what running Go harnesses depends on: the toolchain and
// sandbox (goenv) and the harness itself (goharness.Digest), so a change
// of what a harness computes moves the keys of every node that observes
// or runs one (tasks, solve, c1).
func ResolveGo(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	p, err := goenv.Resolve(ctx, r, goenv.Build|goenv.Sandbox)
	if err != nil {
		return nil, err
	}
	p.Identity["helper.harness"] = goharness.Digest()
	return p, nil
}
