package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
)

// Test-only node types.

type valueRow struct {
	Value int64 `parquet:"value"`
}

// rowsType emits `values` (or each input's rows plus `add`), counting runs.
type rowsType struct {
	name    string
	version *string
	runs    *atomic.Int64
}

type rowsConfig struct {
	Values []int64           `hcl:"values,optional"`
	Inputs []nodes.Ref       `hcl:"inputs,optional"`
	Add    int64             `hcl:"add,optional"`
	Fail   string            `hcl:"fail,optional"`
	Sleep  *int64            `hcl:"sleep_ms,optional"`
	Gate   *string           `hcl:"gate,optional"`
	Blob   *string           `hcl:"blob,optional"`
	Extra  map[string]string `hcl:"extra,optional"`
	// Loggers is how many goroutines log, report progress and set the
	// note at once.
	Loggers int `hcl:"loggers,optional"`
}

func (t rowsType) Name() string    { return t.name }
func (t rowsType) Version() string { return *t.version }
func (t rowsType) NewConfig() any  { return &rowsConfig{} }
func (t rowsType) Run(ctx context.Context, r nodes.Run) error {
	t.runs.Add(1)
	c := r.Config().(*rowsConfig)
	if c.Gate != nil {
		g := gateNamed(*c.Gate)
		n := concurrent.enter()
		defer concurrent.leave()
		select {
		case g.entered <- n:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if c.Sleep != nil {
		concurrent.enter()
		defer concurrent.leave()
		select {
		case <-time.After(time.Duration(*c.Sleep) * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if c.Loggers > 0 {
		var wg sync.WaitGroup
		for g := 0; g < c.Loggers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < 100; k++ {
					r.Logf("goroutine %d line %d", g, k)
					r.Progress(int64(k), 100)
					r.Note("goroutine %d", g)
				}
			}()
		}
		wg.Wait()
	}
	if c.Blob != nil {
		if _, err := r.PutBlob(strings.NewReader(*c.Blob)); err != nil {
			return err
		}
	}
	if c.Fail != "" {
		r.Logf("about to fail")
		return errors.New(c.Fail)
	}
	w, err := r.Output(artifacts.SchemaOf[valueRow]())
	if err != nil {
		return err
	}
	for _, v := range c.Values {
		w.Write(valueRow{v})
	}
	for _, in := range c.Inputs {
		rd, err := r.Input(in)
		if err != nil {
			return err
		}
		rows, err := artifacts.ReadAll[valueRow](rd)
		if err != nil {
			return err
		}
		for _, row := range rows {
			w.Write(valueRow{row.Value + c.Add})
		}
	}
	return nil
}

var (
	testVersion = "1"
	testRuns    atomic.Int64
	concurrent  gauge
)

type gauge struct {
	mu       sync.Mutex
	now, max int
}

// enter counts one more running node and returns how many run now.
func (g *gauge) enter() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now++
	g.max = max(g.max, g.now)
	return g.now
}
func (g *gauge) leave() { g.mu.Lock(); g.now--; g.mu.Unlock() }
func (g *gauge) reset() { g.mu.Lock(); g.now, g.max = 0, 0; g.mu.Unlock() }

func init() {
	nodes.Register(rowsType{"rows", &testVersion, &testRuns})
}

// gate holds the nodes configured with its name: each, once running,
// sends how many nodes run at that moment on entered, then waits for a
// value on release. A test steps the run with them instead of sleeping.
type gate struct {
	entered chan int
	release chan struct{}
}

var gates sync.Map // name → *gate

func gateNamed(name string) *gate {
	g, _ := gates.LoadOrStore(name, &gate{entered: make(chan int), release: make(chan struct{})})
	return g.(*gate)
}

// next is what the next node to pass the gate reports; a run that never
// gets there fails the test rather than hanging it.
func (g *gate) next(t *testing.T) int {
	t.Helper()
	select {
	case n := <-g.entered:
		return n
	case <-time.After(time.Minute):
		t.Fatal("no node reached the gate")
		return 0
	}
}

// harness runs pipeline sources against one store.
type harness struct {
	t     *testing.T
	dir   string
	store *artifacts.Store
}

func newHarness(t *testing.T) *harness {
	dir := t.TempDir()
	st, err := artifacts.Open(filepath.Join(dir, ".lacuna"))
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, dir: dir, store: st}
}

func (h *harness) graph(src string) *Graph {
	h.t.Helper()
	g, diags := ExpandSource(filepath.Join(h.dir, "p.hcl"), []byte(src), h.dir, Options{})
	if diags.HasErrors() {
		h.t.Fatal(diagText(diags))
	}
	return g
}

type runLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *runLog) add(e Event) { l.mu.Lock(); l.events = append(l.events, e); l.mu.Unlock() }

// states maps node address → done/cached/failed/skipped.
func (l *runLog) states() map[string]string {
	m := map[string]string{}
	for _, e := range l.events {
		switch e.Event {
		case EventDone, EventCached, EventFailed, EventSkipped:
			m[e.Node] = e.Event
		}
	}
	return m
}

func (h *harness) run(src string, mod func(*Executor)) (map[string]string, map[*Instance]*Result, error) {
	h.t.Helper()
	g := h.graph(src)
	log := &runLog{}
	x := &Executor{Store: h.store, Pipeline: filepath.Join(h.dir, "p.hcl"), Jobs: 4, Events: log.add}
	if mod != nil {
		mod(x)
	}
	res, _, err := x.Run(context.Background(), g, nil)
	return log.states(), res, err
}

func (h *harness) plan(src string) map[string]PlanEntry {
	h.t.Helper()
	x := &Executor{Store: h.store, Pipeline: filepath.Join(h.dir, "p.hcl")}
	entries, err := x.Plan(context.Background(), h.graph(src), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	m := map[string]PlanEntry{}
	for _, e := range entries {
		m[e.Node] = e
	}
	return m
}

const chain = `
node "rows" "a" { values = [1, 2, 3] }
node "rows" "b" {
  inputs = [node.rows.a]
  add    = 10
}
node "rows" "c" { inputs = [node.rows.b] }
node "rows" "other" { values = [9] }
`

func TestRerunRecomputesOnlyWhatChanged(t *testing.T) {
	h := newHarness(t)
	states, _, err := h.run(chain, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"node.rows.a", "node.rows.b", "node.rows.c", "node.rows.other"} {
		if states[n] != EventDone {
			t.Errorf("first run: %s is %q, want done", n, states[n])
		}
	}
	states, _, _ = h.run(chain, nil)
	for n, s := range states {
		if s != EventCached {
			t.Errorf("no-op re-run: %s is %s", n, s)
		}
	}
	edited := strings.Replace(chain, "add    = 10", "add    = 11", 1)
	plan := h.plan(edited)
	if p := plan["node.rows.b"]; p.Status != PlanRun || p.Reason != "config changed: add" {
		t.Errorf("plan b = %+v, want run because config changed: add", p)
	}
	if p := plan["node.rows.c"]; p.Status != PlanRun || !strings.Contains(p.Reason, "node.rows.b will run") {
		t.Errorf("plan c = %+v", p)
	}
	states, _, _ = h.run(edited, nil)
	want := map[string]string{"node.rows.a": EventCached, "node.rows.b": EventDone, "node.rows.c": EventDone, "node.rows.other": EventCached}
	for n, s := range want {
		if states[n] != s {
			t.Errorf("after edit: %s is %s, want %s", n, states[n], s)
		}
	}
	// Reverting the edit finds the old results again.
	states, _, _ = h.run(chain, nil)
	for n, s := range states {
		if s != EventCached {
			t.Errorf("after revert: %s is %s, want cached", n, s)
		}
	}
}

func TestPlanExplainsWhyNodesRun(t *testing.T) {
	h := newHarness(t)
	if p := h.plan(chain)["node.rows.a"]; p.Reason != "new" {
		t.Errorf("fresh plan reason %q, want new", p.Reason)
	}
	h.run(chain, nil)
	testVersion = "2"
	defer func() { testVersion = "1" }()
	if p := h.plan(chain)["node.rows.a"]; !strings.Contains(p.Reason, "logic version changed (1 → 2)") {
		t.Errorf("plan after version bump: %q", p.Reason)
	}
	h.run(chain, nil)
	edited := strings.Replace(chain, "values = [1, 2, 3]", "values = [1, 2, 4]", 1)
	plan := h.plan(edited)
	if p := plan["node.rows.a"]; p.Status != PlanRun || p.Reason != "config changed: values" {
		t.Errorf("plan a after editing its values = %+v", p)
	}
	if p := plan["node.rows.b"]; p.Status != PlanRun || p.Reason != "input node.rows.a will run" {
		t.Errorf("plan b while a will run = %+v", p)
	}
	// Once a has run, b's input has a known digest that differs from the
	// one b last ran on.
	x := &Executor{Store: h.store, Pipeline: filepath.Join(h.dir, "p.hcl"), Jobs: 2}
	if _, _, err := x.Run(context.Background(), h.graph(edited), []string{"node.rows.a"}); err != nil {
		t.Fatal(err)
	}
	if p := h.plan(edited)["node.rows.b"]; p.Status != PlanRun || !strings.HasPrefix(p.Reason, "input inputs changed (node.rows.a ") {
		t.Errorf("plan b after a changed = %+v, want run because input inputs changed (node.rows.a OLD → NEW)", p)
	}
	h.run(edited, nil)
	if p := h.plan(chain)["node.rows.a"]; p.Status != PlanCached {
		t.Errorf("a should still be cached from the first version-2 run, got %+v", p)
	}
}

func TestEarlyCutoffStopsRecompute(t *testing.T) {
	h := newHarness(t)
	src := `
node "rows" "a" {
  values = [1, 2]
  extra  = { note = "first" }
}
node "rows" "b" { inputs = [node.rows.a] }
node "rows" "c" { inputs = [node.rows.b] }
`
	h.run(src, nil)
	// a's config changes but its rows do not: a re-runs, b and c are cached.
	states, _, err := h.run(strings.Replace(src, "first", "second", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"node.rows.a": EventDone, "node.rows.b": EventCached, "node.rows.c": EventCached}
	for n, s := range want {
		if states[n] != s {
			t.Errorf("%s is %s, want %s", n, states[n], s)
		}
	}
}

func TestFailureIsNotCachedAndSkipsDependants(t *testing.T) {
	h := newHarness(t)
	src := `
node "rows" "bad" { fail = "boom" }
node "rows" "child" { inputs = [node.rows.bad] }
node "rows" "grandchild" { inputs = [node.rows.child] }
node "rows" "independent" {
  values   = [1]
  sleep_ms = 50
}
`
	states, res, err := h.run(src, func(x *Executor) { x.KeepGoing = true; x.Jobs = 1 })
	if err == nil {
		t.Fatal("run with a failing node returned no error")
	}
	want := map[string]string{"node.rows.bad": EventFailed, "node.rows.child": EventSkipped, "node.rows.grandchild": EventSkipped, "node.rows.independent": EventDone}
	for n, s := range want {
		if states[n] != s {
			t.Errorf("%s is %s, want %s", n, states[n], s)
		}
	}
	var bad *Result
	for i, r := range res {
		if i.Addr == "node.rows.bad" {
			bad = r
		}
	}
	f, ferr := h.store.GetFailure(bad.Key)
	if ferr != nil || f.Error != "boom" || !strings.Contains(f.Logs, "about to fail") {
		t.Errorf("failure record %+v, %v", f, ferr)
	}
	if _, err := h.store.GetAction(bad.Key); err == nil {
		t.Error("a failed node was cached")
	}
	if p := h.plan(src)["node.rows.bad"]; p.Status != PlanRun || p.Reason != "failed last time" {
		t.Errorf("plan after failure: %+v", p)
	}
	// Fixing the node runs it and its dependants.
	states, _, err = h.run(strings.Replace(src, `fail = "boom"`, `values = [5]`, 1), nil)
	// (grandchild may be cached: its key equals child's, same rows in.)
	if g := states["node.rows.grandchild"]; err != nil || (g != EventDone && g != EventCached) {
		t.Errorf("after fix: %v %v", states, err)
	}
}

func TestStopsAfterFailureWithoutKeepGoing(t *testing.T) {
	h := newHarness(t)
	src := `
node "rows" "bad" { fail = "boom" }
node "rows" "later" {
  for_each = toset(["a", "b", "c", "d"])
  values   = [1]
  sleep_ms = 20
  extra    = { k = each.key }
}
`
	_, res, _ := h.run(src, func(x *Executor) { x.Jobs = 1 })
	notRun := 0
	for _, r := range res {
		if r.State == "not_run" {
			notRun++
		}
	}
	if notRun == 0 {
		t.Error("without --keep-going the run went on after a failure")
	}
}

func TestRunnerLimitsConcurrency(t *testing.T) {
	h := newHarness(t)
	src := `
runner "gpu" { concurrency = 1 }
node "rows" "job" {
  for_each = toset(["a", "b", "c", "d"])
  runner   = runner.gpu
  values   = [1]
  gate     = "limits"
  extra    = { k = each.key }
}
`
	g := gateNamed("limits")
	// With a runner of concurrency 1 and -j 4, each node is alone when
	// it starts; the next starts only after the gate released the last.
	concurrent.reset()
	errc := make(chan error, 1)
	go func() { _, _, err := h.run(src, func(x *Executor) { x.Jobs = 4 }); errc <- err }()
	for k := 0; k < 4; k++ {
		if n := g.next(t); n != 1 {
			t.Errorf("node %d started with %d running; the runner allows 1", k, n)
		}
		g.release <- struct{}{}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	// Without the runner, -j 4 starts all four before any finishes: the
	// gate holds them until all four have arrived.
	concurrent.reset()
	src2 := strings.Replace(src, "runner   = runner.gpu\n", "", 1)
	src2 = strings.Replace(src2, "values   = [1]", "values   = [2]", 1)
	go func() { _, _, err := h.run(src2, func(x *Executor) { x.Jobs = 4 }); errc <- err }()
	var last int
	for k := 0; k < 4; k++ {
		last = max(last, g.next(t)) // the values arrive in any order
	}
	for k := 0; k < 4; k++ {
		g.release <- struct{}{}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if last != 4 {
		t.Errorf("without a runner, -j 4 ran at most %d at once", last)
	}
}

func TestInterruptedRunResumes(t *testing.T) {
	h := newHarness(t)
	src := `
node "rows" "step" {
  for_each = toset([for i in range(20) : tostring(i)])
  values   = [1]
  sleep_ms = 20
  extra    = { k = each.key }
}
`
	g := h.graph(src)
	ctx, cancel := context.WithCancel(context.Background())
	var done atomic.Int64
	x := &Executor{Store: h.store, Jobs: 2, Events: func(e Event) {
		if e.Event == EventDone && done.Add(1) == 5 {
			cancel()
		}
	}}
	_, sum, err := x.Run(ctx, g, nil)
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("want an interrupted error, got %v", err)
	}
	if sum.Executed < 5 || sum.Executed >= 20 {
		t.Fatalf("executed %d before the interrupt", sum.Executed)
	}
	before := testRuns.Load()
	states, _, err := h.run(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	cached := 0
	for _, s := range states {
		if s == EventCached {
			cached++
		}
	}
	if cached != sum.Executed {
		t.Errorf("resume reused %d results, the interrupted run committed %d", cached, sum.Executed)
	}
	if ran := testRuns.Load() - before; int(ran) != 20-sum.Executed {
		t.Errorf("resume ran %d nodes, want %d", ran, 20-sum.Executed)
	}
}

func TestConcurrentRunsComputeEachNodeOnce(t *testing.T) {
	h := newHarness(t)
	src := `
node "rows" "slow" {
  for_each = toset(["a", "b", "c", "d", "e", "f"])
  values   = [7]
  sleep_ms = 30
  extra    = { k = each.key }
}
node "rows" "all" { inputs = values(node.rows.slow) }
`
	before := testRuns.Load()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for k := 0; k < 2; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			// A second Store value on the same directory, as a second
			// process would have.
			st, err := artifacts.Open(h.store.Root())
			if err != nil {
				errs[k] = err
				return
			}
			x := &Executor{Store: st, Jobs: 3}
			_, _, errs[k] = x.Run(context.Background(), h.graph(src), nil)
		}(k)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if ran := testRuns.Load() - before; ran != 7 {
		t.Errorf("two concurrent runs executed %d nodes, want 7 (each once)", ran)
	}
	rep, err := h.store.Fsck(context.Background(), false)
	if err != nil || len(rep.Problems) > 0 {
		t.Errorf("fsck after concurrent runs: %+v %v", rep, err)
	}
}

func TestGCKeepsBlobsOfKeptActions(t *testing.T) {
	h := newHarness(t)
	_, res, err := h.run(`
node "rows" "a" {
  values = [1]
  blob   = "adapter weights"
}
node "rows" "b" {
  values = [2]
  blob   = "other weights"
}
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	keep := map[artifacts.Digest]bool{}
	var keptBlob, droppedBlob artifacts.Digest
	for i, r := range res {
		a, err := h.store.GetAction(r.Key)
		if err != nil || len(a.Blobs) != 1 {
			t.Fatalf("%s: action %+v, %v", i.Addr, a, err)
		}
		if i.Addr == "node.rows.a" {
			keep[r.Key], keptBlob = true, a.Blobs[0]
		} else {
			droppedBlob = a.Blobs[0]
		}
	}
	rep, err := h.store.GC(context.Background(), keep, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ActionsKept != 1 || rep.ActionsRemoved != 1 || rep.BlobsKept != 1 || rep.BlobsRemoved != 1 {
		t.Errorf("gc report %+v", rep)
	}
	if _, err := os.Stat(h.store.BlobPath(keptBlob)); err != nil {
		t.Error("gc removed a blob of a kept action")
	}
	if _, err := os.Stat(h.store.BlobPath(droppedBlob)); err == nil {
		t.Error("gc kept an unreferenced blob")
	}
}

func TestSameRowsGiveSameDigestAcrossNodes(t *testing.T) {
	h := newHarness(t)
	_, res, err := h.run(`
node "rows" "x" { values = [1, 2] }
node "rows" "y" {
  values = [1, 2]
  extra  = { different = "config" }
}
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ds []artifacts.Digest
	for _, r := range res {
		ds = append(ds, r.Output.Digest)
	}
	if ds[0] != ds[1] || ds[0] == "" {
		t.Errorf("same rows, digests %v", ds)
	}
}

func TestPlanMarksErrorsAndWhatTheyBlock(t *testing.T) {
	h := newHarness(t)
	os.WriteFile(filepath.Join(h.dir, "ok.jsonl"), []byte(`{"x": 1}`+"\n"), 0o644)
	src := `
node "import" "missing" { path = "missing.jsonl" }
node "sample" "downstream" {
  input = node.import.missing
  n     = 1
}
node "import" "fine" { path = "ok.jsonl" }
`
	plan := h.plan(src)
	if p := plan["node.import.missing"]; p.Status != PlanError || !strings.Contains(p.Reason, "missing.jsonl") {
		t.Errorf("missing import: %+v", p)
	}
	if p := plan["node.sample.downstream"]; p.Status != PlanBlocked || !strings.Contains(p.Reason, "node.import.missing cannot run") {
		t.Errorf("downstream: %+v", p)
	}
	if p := plan["node.import.fine"]; p.Status != PlanRun || p.Reason != "new" {
		t.Errorf("independent node: %+v", p)
	}
}

func TestTargetRunsOnlyWhatItNeeds(t *testing.T) {
	h := newHarness(t)
	g := h.graph(chain)
	log := &runLog{}
	x := &Executor{Store: h.store, Jobs: 2, Events: log.add}
	if _, _, err := x.Run(context.Background(), g, []string{"node.rows.b"}); err != nil {
		t.Fatal(err)
	}
	states := log.states()
	if len(states) != 2 || states["node.rows.a"] != EventDone || states["node.rows.b"] != EventDone {
		t.Errorf("--target node.rows.b ran %v", states)
	}
	if _, _, err := x.Run(context.Background(), g, []string{"node.rows.bb"}); err == nil || !strings.Contains(err.Error(), `Did you mean "node.rows.b"?`) {
		t.Errorf("unknown target: %v", err)
	}
}

func TestRunRepairsAnOutputRemovedFromTheStore(t *testing.T) {
	h := newHarness(t)
	_, res, err := h.run(chain, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b *Result
	for i, r := range res {
		if i.Addr == "node.rows.b" {
			b = r
		}
	}
	// Removing an object does not change the store generation: only the
	// stat of the snapshot's entry can notice.
	gen := h.store.Generation()
	if err := os.Remove(h.store.ObjectPath(b.Output.Digest)); err != nil {
		t.Fatal(err)
	}
	if h.store.Generation() != gen {
		t.Fatal("removing a file changed the generation; the test no longer tests the snapshot")
	}
	if p := h.plan(chain)["node.rows.b"]; p.Status != PlanRun || p.Reason != "output missing from store" {
		t.Errorf("plan b = %+v, want run because its output is missing", p)
	}
	states, _, err := h.run(chain, nil)
	if err != nil {
		t.Fatal(err)
	}
	// b's rows are the same, so c (its dependant) stays cached.
	want := map[string]string{"node.rows.a": EventCached, "node.rows.b": EventDone, "node.rows.c": EventCached, "node.rows.other": EventCached}
	for n, s := range want {
		if states[n] != s {
			t.Errorf("%s is %s, want %s", n, states[n], s)
		}
	}
	if _, err := os.Stat(h.store.ObjectPath(b.Output.Digest)); err != nil {
		t.Errorf("b's object not restored: %v", err)
	}
	states, _, _ = h.run(chain, nil)
	for n, s := range states {
		if s != EventCached {
			t.Errorf("run after the repair: %s is %s, want cached", n, s)
		}
	}
}

// Run with -race: the log, progress and note of one node written from
// several of its goroutines.
func TestNodeMayLogFromItsGoroutines(t *testing.T) {
	h := newHarness(t)
	_, res, err := h.run(`node "rows" "a" {
  values  = [1]
  loggers = 8
}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		a, err := h.store.GetAction(r.Key)
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Count(a.Logs, "\n"); lines != 800 {
			t.Errorf("log has %d lines, want 800", lines)
		}
		if !strings.HasPrefix(a.Note, "goroutine ") {
			t.Errorf("note %q", a.Note)
		}
	}
}
