package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
)

// countType counts the rows of its input, whatever their schema.
type countType struct{}

type countConfig struct {
	Input nodes.Ref `hcl:"input"`
}

func (countType) Name() string    { return "count" }
func (countType) Version() string { return "1" }
func (countType) NewConfig() any  { return &countConfig{} }
func (countType) Run(_ context.Context, r nodes.Run) error {
	in, err := r.Input(r.Config().(*countConfig).Input)
	if err != nil {
		return err
	}
	w, err := r.Output(artifacts.SchemaOf[valueRow]())
	if err != nil {
		return err
	}
	return w.Write(valueRow{int64(in.NumRows())})
}

func init() { nodes.Register(countType{}) }

// After `run --recompute X --target X`, plan explains a dependant of X
// by the digests: an X recomputed to the same rows leaves it cached, one
// whose timings (a volatile column) differ gives it a new input, and
// plan names the input with its digest before and now, so a result that
// looks the same (same rows, same note) is seen not to be.
func TestPlanAfterRecomputeNamesTheInputsDigests(t *testing.T) {
	h := newHarness(t)
	const src = `
node "rows" "same" { values = [1, 2] }
node "count" "of_same" { input = node.rows.same }
node "timed" "t" { cases = 3 }
node "count" "of_timed" { input = node.timed.t }
`
	_, first, err := h.run(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	digest := func(res map[*Instance]*Result, addr string) artifacts.Digest {
		return res[findInst(res, addr)].Output.Digest
	}
	for _, addr := range []string{"node.rows.same", "node.timed.t"} {
		x := &Executor{Store: h.store, Pipeline: filepath.Join(h.dir, "p.hcl"), Jobs: 2, Recompute: map[string]bool{addr: true}}
		if _, _, err := x.Run(context.Background(), h.graph(src), []string{addr}); err != nil {
			t.Fatal(err)
		}
	}
	plan := h.plan(src)
	if p := plan["node.count.of_same"]; p.Status != PlanCached {
		t.Errorf("the dependant of an input recomputed to the same rows: %+v, want cached", p)
	}
	p := plan["node.timed.t"]
	if p.Status != PlanCached || p.Digest == digest(first, "node.timed.t") {
		t.Fatalf("the recomputed node: %+v, want cached with a new digest", p)
	}
	want := fmt.Sprintf("input input changed (node.timed.t %s → %s)", digest(first, "node.timed.t").Short(), p.Digest.Short())
	if p := plan["node.count.of_timed"]; p.Status != PlanRun || p.Reason != want {
		t.Errorf("the dependant of an input with new timings: %+v, want run because %q", p, want)
	}
}
