// Package tasks holds NovelAPIBench stage 3 and 4 node types for Go: tasks
// (graded coding tasks with execute-then-assert harnesses), solve (running
// solutions through the harnesses), c1 (the reference passes; calibration
// solutions fail) and judge (the failure taxonomy's deterministic fast
// path).
package tasks

import (
	"context"
	"encoding/json"
	"fmt"
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
}

// SampleRow is one solution's run through its harness: what every model
// run, C1 and the audit record.
type SampleRow struct {
	TaskID       string   `parquet:"task_id"`
	SampleID     string   `parquet:"sample_id"`
	Kind         string   `parquet:"kind"`
	APIID        string   `parquet:"api_id"`
	Solution     string   `parquet:"solution"`
	Program      string   `parquet:"program"` // the whole program with the solution in place
	Passed       bool     `parquet:"passed"`
	SpyDirect    int64    `parquet:"spy_direct"`
	SpyIndirect  int64    `parquet:"spy_indirect"`
	CompileError string   `parquet:"compile_error"`
	RuntimeError string   `parquet:"runtime_error"` // panic or crash, truncated
	TimedOut     bool     `parquet:"timed_out"`
	FailedLayers []string `parquet:"failed_layers,list"` // runtime, spy, structural, comparative
	Output       string   `parquet:"output"`             // what the program printed, bounded
	Observation  string   `parquet:"observation"`        // the harness's observation as JSON: output, probes, spy counts
	Seconds      float64  `parquet:"seconds"`

	spyAccess string // the counter expression the harness read
}

// moduleEnv is what running harnesses against one module version needs.
type moduleEnv struct {
	mod *modfetch.Module
	spy *goharness.Spy
	tc  *gotool.Toolchain
	ws  *gotool.Workspace
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
// compile in parallel, and a crash costs at most this many.
const unitsPerPackage = 150

// run runs solutions through their tasks' harnesses (expect nil: observe
// only) in one batched go test, and returns one row per solution.
func (e *moduleEnv) run(ctx context.Context, tasks []Row, specs []goharness.Task, expects []*goharness.Observation, sols []Solution) ([]SampleRow, error) {
	out := make([]SampleRow, len(sols))
	var units []gotool.Unit
	var which []int
	for i, s := range sols {
		t := tasks[s.Task]
		spec := specs[s.Task]
		if s.Imports != nil {
			spec.Imports = s.Imports
		}
		code, expect := s.Code, expects[s.Task]
		if prog, span, ok := spec.AsProgram(s.Code); ok {
			// A whole program: its own imports, helpers and main.
			spec, code, expect = prog, span, expect.WithProbes(prog.Probes)
		}
		out[i] = SampleRow{TaskID: t.TaskID, SampleID: s.SampleID, Kind: s.Kind, APIID: t.APIID, Solution: s.Code, Program: spec.Program(code)}
		access, ok := e.spy.Access[t.APIID]
		out[i].spyAccess = access
		if !ok {
			out[i].RuntimeError = "the target cannot be spied on (no Go body)"
			continue
		}
		err := goharness.CheckSpan(code)
		if err == nil && spec.Decls != specs[s.Task].Decls {
			err = goharness.CheckDecls(spec.Decls)
		}
		if err != nil {
			// Refused before the build: it could skip or forge the checks.
			out[i].CompileError = "the solution " + err.Error()
			out[i].FailedLayers = []string{"span"}
			continue
		}
		u := goharness.Harness(spec, code, len(units), access, t.ImportPath, e.mod.Path, expect)
		u.Group = fmt.Sprintf("%d", len(units)/unitsPerPackage)
		if s.Imports != nil {
			u.Group = fmt.Sprintf("imports-%d", i) // an import problem fails a whole package: keep it alone
		}
		units = append(units, u)
		which = append(which, i)
	}
	if len(units) == 0 {
		return out, nil
	}
	res, err := e.tc.RunBatch(ctx, e.mod, units, e.ws.BatchOptions(gotool.TestOptions{Timeout: 5 * time.Minute, Args: []string{"-overlay", e.spy.Overlay}}))
	if err != nil {
		return nil, err
	}
	for u, r := range res {
		row := &out[which[u]]
		tr, ran := r.Tests[gotool.UnitName("Test", u)]
		switch {
		case r.CompileError != "":
			row.CompileError = r.CompileError
		case r.TimedOut:
			row.TimedOut = true
		case !ran:
			row.RuntimeError = bound(r.PackageFailure, 4000)
			if row.RuntimeError == "" {
				row.RuntimeError = "the test binary ended without running this harness"
			}
		default:
			row.Passed, row.Seconds = tr.Passed, tr.Seconds
			row.FailedLayers = goharness.FailedLayers(tr.Output)
			if o, ok := goharness.ReadObservation(tr.Output); ok {
				b, _ := json.Marshal(o)
				row.Observation = string(b)
				row.SpyDirect, row.SpyIndirect, row.TimedOut = o.Direct, o.Indirect, o.TimedOut
				row.Output = bound(o.Output, 4000)
				if o.Panic != "" {
					row.RuntimeError = bound("panic: "+o.Panic, 4000)
				}
			} else if !tr.Passed {
				// The binary died in this harness (gotool.BinaryDied): its
				// output holds the reason.
				row.RuntimeError = bound(tr.Output, 4000)
				row.TimedOut = strings.Contains(tr.Output, "panic: test timed out")
			}
		}
		if row.FailedLayers == nil {
			row.FailedLayers = []string{}
		}
	}
	return out, nil
}

func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "\n[truncated]"
}

// decodeTasks reads the spec and expectation of each task row.
func decodeTasks(rows []Row) ([]goharness.Task, []*goharness.Observation, error) {
	specs := make([]goharness.Task, len(rows))
	expects := make([]*goharness.Observation, len(rows))
	for i, t := range rows {
		if err := json.Unmarshal([]byte(t.Spec), &specs[i]); err != nil {
			return nil, nil, fmt.Errorf("task %s: spec: %w", t.TaskID, err)
		}
		if t.Expect != "" {
			expects[i] = &goharness.Observation{}
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

// runAll runs solutions grouped by module; rows come back in sols order.
func runAll(ctx context.Context, r nodes.Run, tasks []Row, sols []Solution) ([]SampleRow, error) {
	specs, expects, err := decodeTasks(tasks)
	if err != nil {
		return nil, err
	}
	out := make([]SampleRow, len(sols))
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
			return nil, err
		}
		start := time.Now()
		rows, err := env.run(ctx, tasks, specs, expects, mine)
		env.ws.Close()
		if err != nil {
			return nil, err
		}
		r.Logf("%s@%s: %d solutions through %d harnesses in %.1fs", t0.Module, t0.Version, len(mine), len(g), time.Since(start).Seconds())
		for k, row := range rows {
			out[where[k]] = row
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
