package tasks_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
)

// TestSolveIsReproducibleButForItsTimings: solve's calibration run again
// (as lacuna verify runs it: recomputed, nothing committed) gives the
// same rows once its volatile column, seconds, is set aside. The exit
// mutants' stack traces, whose goroutine numbers, heap addresses and
// temporary directories differ every run, are the same text. A verdict
// that changed is still found, at its row and column.
func TestSolveIsReproducibleButForItsTimings(t *testing.T) {
	dir := t.TempDir()
	first := taskstest.Run(t, dir, taskstest.Calibration)
	const addr = "node.solve.calibration"
	cached := first.Nodes[addr].Output.Digest
	rows := nodetest.Read[tasks.SampleRow](t, first, addr)
	traces := 0
	for _, s := range rows {
		if strings.Contains(s.RuntimeError, "goroutine ") {
			traces++
			if !strings.Contains(s.RuntimeError, "goroutine N [running]") || strings.Contains(s.RuntimeError, "/harness-") {
				t.Errorf("%s %s: a stack trace as it ran: %s", s.TaskID, s.Kind, s.RuntimeError)
			}
		}
	}
	if traces == 0 {
		t.Error("no sample crashed with a stack trace: the fixture no longer tests their normalisation")
	}

	file := filepath.Join(dir, "p.hcl")
	g, diags := engine.ExpandSource(file, []byte(taskstest.Pipeline+taskstest.Calibration), dir, engine.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	x := &engine.Executor{Store: first.Store, Jobs: 2, Pipeline: file, Environ: os.Environ(),
		Recompute: map[string]bool{addr: true}, NoCommit: true}
	res, _, err := x.Run(context.Background(), g, []string{addr})
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := g.Lookup(addr)
	again := res[inst].Output
	solve, _ := nodes.Lookup("solve")
	c, err := engine.CompareOutputs(first.Store, solve, cached, again.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Reproducible {
		t.Fatalf("solve run again: %d rows differ, first %s", c.Differing, c.First)
	}
	if !c.Identical && c.Volatile["seconds"] == 0 {
		t.Errorf("digests differ but no volatile column does: %+v", c)
	}

	// The same rows with one verdict flipped: a mismatch at that row.
	rd, err := first.Store.Open(again)
	if err != nil {
		t.Fatal(err)
	}
	flipped, err := artifacts.ReadAll[tasks.SampleRow](rd)
	if err != nil {
		t.Fatal(err)
	}
	flipped[2].Passed = !flipped[2].Passed
	w, err := first.Store.NewWriter(artifacts.SchemaOf[tasks.SampleRow](), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range flipped {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	obj, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	c, err = engine.CompareOutputs(first.Store, solve, obj.Digest, again.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if c.Reproducible || c.Differing != 1 || !strings.HasPrefix(c.First, "row 2, column passed:") {
		t.Errorf("a flipped verdict: %+v, want a mismatch at row 2, column passed", c)
	}
}
