// Package tasks holds NovelAPIBench stage 3 and 4 node types for Go: tasks
// (graded coding tasks with execute-then-assert harnesses), solve (running
// solutions through the harnesses), the c1 check of the filter node (the
// reference passes; calibration solutions fail) and judge (the failure
// taxonomy's deterministic fast path).
package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/discovery"
	"github.com/lacuna-dev/lacuna/runners/golang"
	"github.com/lacuna-dev/lacuna/runners/sandbox"
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
	mod     *golang.Module
	spy     *golang.Spy
	tc      *golang.Toolchain
	wrapper string
	work    string
}

func (e *moduleEnv) close() {
	if os.Getenv("LACUNA_KEEP_WORK") == "" { // kept for debugging harnesses
		os.RemoveAll(e.work)
	}
}

// prepare downloads (verified) a module version and instruments targets.
func prepare(ctx context.Context, r nodes.Run, module, version string, targetIDs []string) (*moduleEnv, error) {
	fetcher, tc, err := discovery.GoCache(r)
	if err != nil {
		return nil, err
	}
	mod, err := fetcher.Download(ctx, module, version)
	if err != nil {
		return nil, err
	}
	apis, err := golang.Surface(mod.Dir)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, id := range targetIDs {
		want[id] = true
	}
	var targets []golang.API
	for _, a := range apis {
		if want[a.ID] && (a.Kind == "func" || a.Kind == "method") && !a.NoBody {
			targets = append(targets, a)
		}
	}
	work, err := os.MkdirTemp(filepath.Join(tc.Cache, "tmp"), "harness-")
	if err != nil {
		return nil, err
	}
	env := &moduleEnv{mod: mod, tc: tc, work: work}
	env.spy, err = golang.NewSpy(mod.Dir, mod.Path, targets, work)
	if err != nil {
		env.close()
		return nil, err
	}
	sb, err := sandbox.New()
	if err != nil {
		env.close()
		return nil, err
	}
	if w := sb.Warning(); w != "" {
		r.Logf("%s", w)
	}
	env.wrapper, err = sb.ExecWrapper(work, sandbox.Limits{Wall: 5 * time.Minute})
	if err != nil {
		env.close()
		return nil, err
	}
	return env, nil
}

// unitsPerPackage bounds how many harnesses share a test binary: packages
// compile in parallel, and a crash costs at most this many.
const unitsPerPackage = 150

// run runs solutions through their tasks' harnesses (expect nil: observe
// only) in one batched go test, and returns one row per solution.
func (e *moduleEnv) run(ctx context.Context, tasks []Row, specs []golang.Task, expects []*golang.Observation, sols []Solution) ([]SampleRow, error) {
	out := make([]SampleRow, len(sols))
	var units []golang.Unit
	var which []int
	for i, s := range sols {
		t := tasks[s.Task]
		spec := specs[s.Task]
		if s.Imports != nil {
			spec.Imports = s.Imports
		}
		out[i] = SampleRow{TaskID: t.TaskID, SampleID: s.SampleID, Kind: s.Kind, APIID: t.APIID, Solution: s.Code, Program: spec.Program(s.Code)}
		access, ok := e.spy.Access[t.APIID]
		out[i].spyAccess = access
		if !ok {
			out[i].RuntimeError = "the target cannot be spied on (no Go body)"
			continue
		}
		u := golang.Harness(spec, s.Code, len(units), access, t.ImportPath, e.mod.Path, expects[s.Task])
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
	res, err := e.tc.RunBatch(ctx, e.mod, units, golang.BatchOptions{
		Exec: e.wrapper, WorkDir: e.work,
		TestOptions: golang.TestOptions{Timeout: 5 * time.Minute, Args: []string{"-overlay", e.spy.Overlay}},
	})
	if err != nil {
		return nil, err
	}
	for u, r := range res {
		row := &out[which[u]]
		tr, ran := r.Tests[golang.UnitName("Test", u)]
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
			row.FailedLayers = golang.FailedLayers(tr.Output)
			if o, ok := golang.ReadObservation(tr.Output); ok {
				b, _ := json.Marshal(o)
				row.Observation = string(b)
				row.SpyDirect, row.SpyIndirect, row.TimedOut = o.Direct, o.Indirect, o.TimedOut
				row.Output = bound(o.Output, 4000)
				if o.Panic != "" {
					row.RuntimeError = bound("panic: "+o.Panic, 4000)
				}
			} else if !tr.Passed {
				row.RuntimeError = bound(tr.Output, 4000)
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
func decodeTasks(rows []Row) ([]golang.Task, []*golang.Observation, error) {
	specs := make([]golang.Task, len(rows))
	expects := make([]*golang.Observation, len(rows))
	for i, t := range rows {
		if err := json.Unmarshal([]byte(t.Spec), &specs[i]); err != nil {
			return nil, nil, fmt.Errorf("task %s: spec: %w", t.TaskID, err)
		}
		if t.Expect != "" {
			expects[i] = &golang.Observation{}
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
		env.close()
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
