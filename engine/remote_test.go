package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// processRemote runs each dispatched instance as `lacuna run PIPELINE
// ADDR` does: a second Executor on the same store with the instance as
// its only target (what a cluster job runs), and counts the batches.
type processRemote struct {
	h       *harness
	src     string
	fail    map[string]bool          // addresses whose job fails
	hold    map[string]chan struct{} // addresses whose job waits for its channel
	mu      sync.Mutex
	batches [][]string
}

func (p *processRemote) Dispatch(ctx context.Context, node string, insts []RemoteInstance, ended func(int, error)) {
	var addrs []string
	for k, in := range insts {
		if in.Key == "" {
			ended(k, fmt.Errorf("no key for %s", in.Addr))
			return
		}
		addrs = append(addrs, in.Addr)
	}
	p.mu.Lock()
	p.batches = append(p.batches, addrs)
	p.mu.Unlock()
	var wg sync.WaitGroup
	for k, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if d := p.hold[a]; d != nil {
				<-d
			}
			if p.fail[a] {
				ended(k, fmt.Errorf("job %d exited with status 1", k))
				return
			}
			x := &Executor{Store: p.h.store, Pipeline: filepath.Join(p.h.dir, "p.hcl"), Jobs: 1}
			_, _, err := x.Run(ctx, p.h.graph(p.src), []string{a})
			ended(k, err)
		}()
	}
	wg.Wait()
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

func (lostRemote) Dispatch(_ context.Context, _ string, insts []RemoteInstance, ended func(int, error)) {
	for k := range insts {
		ended(k, nil)
	}
}

// TestRemoteInstanceEndsOnItsOwn: what depends on one instance of a
// sweep runs as soon as that instance's job has ended, while a sibling's
// job in the same batch still runs.
func TestRemoteInstanceEndsOnItsOwn(t *testing.T) {
	h := newHarness(t)
	src := `
runner "cluster" { kind = "slurm" }
node "rows" "sweep" {
  for_each = toset(["a", "b"])
  runner   = runner.cluster
  values   = [1]
  extra    = { k = each.key }
}
node "rows" "after_a" { inputs = [node.rows.sweep["a"]] }
`
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	// Were after_a to wait for the whole batch, b's job would wait for it
	// forever: released after a while, b ends first, and the order fails.
	timer := time.AfterFunc(5*time.Second, free)
	defer timer.Stop()
	rm := &processRemote{h: h, src: src, hold: map[string]chan struct{}{`node.rows.sweep["b"]`: release}}
	var mu sync.Mutex
	var order []string
	states, _, err := h.run(src, func(x *Executor) {
		x.Remotes = map[string]Remote{"cluster": rm}
		events := x.Events
		x.Events = func(e Event) {
			if events != nil {
				events(e)
			}
			if e.Event != EventDone {
				return
			}
			mu.Lock()
			order = append(order, e.Node)
			mu.Unlock()
			if e.Node == "node.rows.after_a" {
				free() // b's job ends only once after_a is done
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rm.batches) != 1 || len(rm.batches[0]) != 2 {
		t.Fatalf("batches %v, want the sweep as one", rm.batches)
	}
	if states[`node.rows.sweep["b"]`] != EventDone || len(order) != 3 || order[2] != `node.rows.sweep["b"]` {
		t.Errorf("done in the order %v (states %v): want after_a done while sweep[\"b\"]'s job still ran", order, states)
	}
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
