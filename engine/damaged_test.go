package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
)

// damage writes random bytes over the action entry of key; with old, it
// also sets the entry's modification time back an hour (damage a disk
// does in place, which the run's one stat per snapshot node cannot see).
func damage(t *testing.T, st *artifacts.Store, key artifacts.Digest, old bool) string {
	t.Helper()
	path := filepath.Join(st.Root(), "ac", string(key[:2]), string(key)+".json")
	junk := make([]byte, 300)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range junk {
		junk[i] = byte(r.UintN(256))
	}
	if err := os.WriteFile(path, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	if old {
		then := time.Now().Add(-time.Hour)
		if err := os.Chtimes(path, then, then); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func (h *harness) runLogged(src string) ([]Event, map[*Instance]*Result, error) {
	h.t.Helper()
	log := &runLog{}
	x := &Executor{Store: h.store, Pipeline: filepath.Join(h.dir, "p.hcl"), Jobs: 4, Events: log.add}
	res, _, err := x.Run(context.Background(), h.graph(src), nil)
	return log.events, res, err
}

func keyOf(t *testing.T, res map[*Instance]*Result, addr string) artifacts.Digest {
	t.Helper()
	for i, r := range res {
		if i.Addr == addr {
			return r.Key
		}
	}
	t.Fatalf("no result for %s", addr)
	return ""
}

// TestDamagedActionEntryIsRecomputed: random bytes over an action entry
// after a run. GetAction says which entry is damaged; plan says the node
// will run because of it; run moves the entry to quarantine/, says so in
// an event and recomputes the same rows; downstream stays cached.
func TestDamagedActionEntryIsRecomputed(t *testing.T) {
	h := newHarness(t)
	_, res, err := h.runLogged(chain)
	if err != nil {
		t.Fatal(err)
	}
	key := keyOf(t, res, "node.rows.b")
	damage(t, h.store, key, false)

	_, err = h.store.GetAction(key)
	var de *artifacts.DamagedActionError
	if !errors.As(err, &de) || !errors.Is(err, artifacts.ErrDamagedAction) || de.Path != filepath.Join("ac", string(key[:2]), string(key)+".json") ||
		!strings.Contains(err.Error(), "lacuna fsck") {
		t.Fatalf("GetAction of a damaged entry: %v", err)
	}
	plan := h.plan(chain)
	if e := plan["node.rows.b"]; e.Status != PlanRun || !strings.Contains(e.Reason, "is damaged") {
		t.Errorf("plan: node.rows.b is %s (%s), want run because its entry is damaged", e.Status, e.Reason)
	}
	if e := plan["node.rows.a"]; e.Status != PlanCached {
		t.Errorf("plan: node.rows.a is %s (%s), want cached", e.Status, e.Reason)
	}

	events, res2, err := h.runLogged(chain)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	damaged := 0
	for _, e := range events {
		switch e.Event {
		case EventDamaged:
			damaged++
			if e.Node != "node.rows.b" || e.Key != key || !strings.Contains(e.Error, "moved to quarantine/") {
				t.Errorf("damaged event %+v", e)
			}
		case EventDone, EventCached:
			states[e.Node] = e.Event
		}
	}
	if damaged != 1 || states["node.rows.b"] != EventDone || states["node.rows.a"] != EventCached || states["node.rows.c"] != EventCached {
		t.Errorf("run after the damage: %d damaged events, states %v; want node.rows.b reported and recomputed, the rest cached", damaged, states)
	}
	if keyOf(t, res2, "node.rows.b") != key {
		t.Error("the recomputed node has another key")
	}
	if before, after := res[findInst(res, "node.rows.b")].Output.Digest, res2[findInst(res2, "node.rows.b")].Output.Digest; before != after {
		t.Errorf("node.rows.b recomputed to %s, was %s", after, before)
	}
	if _, err := os.Stat(filepath.Join(h.store.Root(), "quarantine", string(key)+".json")); err != nil {
		t.Errorf("the damaged entry is not in quarantine/: %v", err)
	}
	if _, err := h.store.GetAction(key); err != nil {
		t.Errorf("the entry was not rewritten: %v", err)
	}
	events, _, err = h.runLogged(chain)
	for _, e := range events {
		if e.Event == EventDone || e.Event == EventDamaged {
			t.Errorf("third run: %s %s", e.Event, e.Node)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

func findInst(res map[*Instance]*Result, addr string) *Instance {
	for i := range res {
		if i.Addr == addr {
			return i
		}
	}
	return nil
}

// TestFsckRepairOfADamagedEntryIsSeenByPlanAndRun: damage a run cannot
// see (the entry's time kept) is found by fsck; --dry-run moves nothing;
// repair moves the entry to quarantine/ and bumps the generation, so plan
// and run stop saying cached and the node is recomputed.
func TestFsckRepairOfADamagedEntryIsSeenByPlanAndRun(t *testing.T) {
	h := newHarness(t)
	_, res, err := h.runLogged(chain)
	if err != nil {
		t.Fatal(err)
	}
	key := keyOf(t, res, "node.rows.b")
	path := damage(t, h.store, key, true)
	gen := h.store.Generation()

	rep, err := h.store.Fsck(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Kind != "bad-action" || rep.Problems[0].Name != key || rep.Problems[0].Fixed != "" {
		t.Fatalf("fsck --dry-run: %+v", rep.Problems)
	}
	if _, err := os.Stat(path); err != nil || h.store.Generation() != gen {
		t.Fatalf("fsck --dry-run changed the store: %v, generation %d → %d", err, gen, h.store.Generation())
	}

	rep, err = h.store.Fsck(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Fixed, "quarantine") {
		t.Fatalf("fsck: %+v", rep.Problems)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) || h.store.Generation() == gen {
		t.Fatalf("fsck left the entry (%v) or the generation (%d)", err, h.store.Generation())
	}
	if e := h.plan(chain)["node.rows.b"]; e.Status != PlanRun || !strings.Contains(e.Reason, "action entry is gone") {
		t.Errorf("plan after fsck: node.rows.b is %s (%s), want run", e.Status, e.Reason)
	}
	events, _, err := h.runLogged(chain)
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]bool{}
	for _, e := range events {
		if e.Event == EventDone {
			done[e.Node] = true
		}
	}
	if !done["node.rows.b"] || len(done) != 1 {
		t.Errorf("run after fsck executed %v, want node.rows.b only", done)
	}
	rep, err = h.store.Fsck(context.Background(), false)
	if err != nil || len(rep.Problems) != 0 {
		t.Errorf("fsck after the re-run: %v %+v", err, rep.Problems)
	}
}

// TestDamagedEntryInALargeSweep: in a sweep large enough that the run
// answers its instances ahead of its loop (aheadChecks), a damaged entry
// and a removed one are still recomputed, and the rest stay cached.
func TestDamagedEntryInALargeSweep(t *testing.T) {
	const sweep = `
node "rows" "s" {
  for_each = range(400)
  values   = [each.value]
}
`
	h := newHarness(t)
	_, res, err := h.runLogged(sweep)
	if err != nil {
		t.Fatal(err)
	}
	damage(t, h.store, keyOf(t, res, `node.rows.s["123"]`), false)
	gone := keyOf(t, res, `node.rows.s["321"]`)
	if err := os.Remove(filepath.Join(h.store.Root(), "ac", string(gone[:2]), string(gone)+".json")); err != nil {
		t.Fatal(err)
	}
	events, _, err := h.runLogged(sweep)
	if err != nil {
		t.Fatal(err)
	}
	done, cached := map[string]bool{}, 0
	for _, e := range events {
		switch e.Event {
		case EventDone:
			done[e.Node] = true
		case EventCached:
			cached++
		}
	}
	if len(done) != 2 || !done[`node.rows.s["123"]`] || !done[`node.rows.s["321"]`] || cached != 398 {
		t.Errorf("recomputed %v and %d cached; want node.rows.s[123] and [321] recomputed, 398 cached", done, cached)
	}
}

// TestLargeSweepAnsweredAheadFollowsItsInputs: a sweep large enough that
// the run answers its instances ahead of the loop, from the digests the
// snapshot records for their inputs. When the input's rows change, every
// instance and the fan-in recompute, though their keys computed from the
// recorded digests match the snapshot; when the input is only recomputed
// (its action entry removed) to the same rows, everything downstream
// stays cached.
func TestLargeSweepAnsweredAheadFollowsItsInputs(t *testing.T) {
	sweep := func(values string) string {
		return `
node "rows" "a" { values = ` + values + ` }
node "rows" "s" {
  for_each = range(300)
  inputs   = [node.rows.a]
  add      = each.value
}
node "rows" "all" { inputs = values(node.rows.s) }
`
	}
	h := newHarness(t)
	states, res, err := h.run(sweep("[1, 2]"), nil)
	if err != nil {
		t.Fatal(err)
	}
	count := func(states map[string]string) map[string]int {
		n := map[string]int{}
		for _, s := range states {
			n[s]++
		}
		return n
	}
	if n := count(states); n[string(StateDone)] != 302 {
		t.Fatalf("first run: %v", n)
	}

	gone := keyOf(t, res, "node.rows.a")
	if err := os.Remove(filepath.Join(h.store.Root(), "ac", string(gone[:2]), string(gone)+".json")); err != nil {
		t.Fatal(err)
	}
	states, _, err = h.run(sweep("[1, 2]"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(states); states["node.rows.a"] != string(StateDone) || n[string(StateCached)] != 301 {
		t.Errorf("input recomputed to the same rows: node.rows.a %s, %v; want it done and the rest cached", states["node.rows.a"], n)
	}

	states, _, err = h.run(sweep("[1, 2, 3]"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(states); n[string(StateDone)] != 302 {
		t.Errorf("input's rows changed: %v; want all 302 done", n)
	}
}
