package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// processRemote runs each dispatched instance as `lacuna run PIPELINE
// ADDR` does: a second Executor on the same store with the instance as
// its only target (what a cluster job runs), and counts the batches.
type processRemote struct {
	h       *harness
	src     string
	fail    map[string]bool // addresses whose job fails
	mu      sync.Mutex
	batches [][]string
}

func (p *processRemote) Dispatch(ctx context.Context, node string, insts []RemoteInstance) []error {
	var addrs []string
	for _, in := range insts {
		if in.Key == "" {
			return []error{fmt.Errorf("no key for %s", in.Addr)}
		}
		addrs = append(addrs, in.Addr)
	}
	p.mu.Lock()
	p.batches = append(p.batches, addrs)
	p.mu.Unlock()
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for k, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p.fail[a] {
				errs[k] = fmt.Errorf("job %d exited with status 1", k)
				return
			}
			x := &Executor{Store: p.h.store, Pipeline: filepath.Join(p.h.dir, "p.hcl"), Jobs: 1}
			_, _, errs[k] = x.Run(ctx, p.h.graph(p.src), []string{a})
		}()
	}
	wg.Wait()
	return errs
}

func TestRemoteRunnerBatchesASweepAndTheStoreSaysWhatFinished(t *testing.T) {
	h := newHarness(t)
	src := `
runner "cluster" { kind = "slurm" }
node "rows" "base" { values = [1, 2] }
node "rows" "sweep" {
  for_each = toset(["a", "b", "c", "d", "e", "f", "g", "h"])
  runner   = runner.cluster
  inputs   = [node.rows.base]
  extra    = { k = each.key }
}
node "rows" "after" { inputs = [node.rows.sweep["a"], node.rows.sweep["h"]] }
`
	rm := &processRemote{h: h, src: src, fail: map[string]bool{`node.rows.sweep["c"]`: true}}
	states, _, err := h.run(src, func(x *Executor) {
		x.Jobs = 1 // remote instances do not wait for a local slot
		x.KeepGoing = true
		x.Remotes = map[string]Remote{"cluster": rm}
	})
	if err == nil || !strings.Contains(err.Error(), "1 node(s) failed") {
		t.Fatalf("want one failure, got %v", err)
	}
	if len(rm.batches) != 1 || len(rm.batches[0]) != 8 {
		t.Fatalf("the sweep went as batches %v, want one of 8", rm.batches)
	}
	if states[`node.rows.sweep["c"]`] != EventFailed || states[`node.rows.sweep["a"]`] != EventDone || states["node.rows.after"] != EventDone {
		t.Fatalf("states %v", states)
	}
	// A second run dispatches only the instance that has no result.
	rm.fail, rm.batches = nil, nil
	states, _, err = h.run(src, func(x *Executor) { x.Remotes = map[string]Remote{"cluster": rm} })
	if err != nil {
		t.Fatal(err)
	}
	if len(rm.batches) != 1 || len(rm.batches[0]) != 1 || rm.batches[0][0] != `node.rows.sweep["c"]` {
		t.Fatalf("the resumed run dispatched %v, want only sweep[\"c\"]", rm.batches)
	}
	if states[`node.rows.sweep["b"]`] != EventCached || states[`node.rows.sweep["c"]`] != EventDone {
		t.Fatalf("states %v", states)
	}
}

// lostRemote ends its jobs without committing anything: a job that ran
// with another environment, whose key differs.
type lostRemote struct{}

func (lostRemote) Dispatch(_ context.Context, _ string, insts []RemoteInstance) []error {
	return make([]error, len(insts))
}

func TestRemoteJobThatCommitsNothingFailsItsInstance(t *testing.T) {
	h := newHarness(t)
	src := "runner \"cluster\" { kind = \"slurm\" }\nnode \"rows\" \"x\" {\n  runner = runner.cluster\n  values = [1]\n}\n"
	states, res, err := h.run(src, func(x *Executor) { x.Remotes = map[string]Remote{"cluster": lostRemote{}} })
	if err == nil || states["node.rows.x"] != EventFailed {
		t.Fatalf("err %v states %v", err, states)
	}
	for _, r := range res {
		if r.Err == nil || !strings.Contains(r.Err.Error(), "holds no result under key") {
			t.Errorf("the failure does not say why: %v", r.Err)
		}
		if errors.Is(r.Err, context.Canceled) {
			t.Error("not an interruption")
		}
	}
}

func TestContainerRunnerOnlyForTypesThatRunInContainers(t *testing.T) {
	h := newHarness(t)
	src := "runner \"box\" {\n  kind  = \"container\"\n  image = \"x\"\n}\nnode \"rows\" \"x\" {\n  runner = runner.box\n  values = [1]\n}\n"
	_, diags := ExpandSource(filepath.Join(h.dir, "p.hcl"), []byte(src), h.dir, Options{})
	if !diags.HasErrors() || !strings.Contains(diagText(diags), "6:12") || !strings.Contains(diagText(diags), "does not run in containers") {
		t.Fatalf("want an error at the runner attribute, got %s", diagText(diags))
	}
	// Other kinds are fine for any type.
	for _, kind := range []string{"local", "slurm"} {
		_, diags := ExpandSource(filepath.Join(h.dir, "p.hcl"), []byte(strings.Replace(src, `"container"`, `"`+kind+`"`, 1)), h.dir, Options{})
		if diags.HasErrors() {
			t.Errorf("%s: %s", kind, diagText(diags))
		}
	}
}
