package engine

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
)

// walk is the state of one run or plan: the pipeline's snapshot as it was
// when the walk began and what the walk learned since. A walk is valid for
// one call of Run or Plan. The scheduling loop (walk.walk) owns results and
// the queues; runOne goroutines share only updates (under mu) and emit
// (serialised by emitMu).
type walk struct {
	x         *Executor
	gen       uint64                 // the store generation the walk began at
	snap      *artifacts.Snapshot    // the pipeline's last results
	snapValid bool                   // no deletion since snap was written
	objects   *artifacts.ObjectIndex // which objects cas/ holds, read once per shard
	ahead     *aheadChecks           // snapshot hits checked ahead of the loop; nil outside a run's walk

	mu      sync.Mutex
	updates map[string]artifacts.SnapshotNode // saved at the end of Run

	remote remoteBatches // instances on Remotes, batched per node

	keyBuf []byte // the scheduling loop's scratch for canonical configs

	emitMu sync.Mutex
}

func (x *Executor) newWalk() *walk {
	w := &walk{x: x, gen: x.Store.Generation(), updates: map[string]artifacts.SnapshotNode{}, objects: x.Store.NewObjectIndex()}
	if x.Store.SnapshotSize(x.Pipeline) >= prefetchObjects {
		// The walk will ask about most shards at once: read them while
		// the snapshot loads.
		go w.objects.Prefetch(1)
	}
	w.snap, w.snapValid = x.Store.LoadSnapshot(x.Pipeline)
	return w
}

// prefetchObjects is the snapshot size (bytes) from which a walk reads
// every cas/ shard up front: about a thousand nodes, a few times the 256
// shards.
const prefetchObjects = 100 << 10

// emit sends e to the executor's Events, one call at a time.
func (w *walk) emit(e Event) {
	if w.x.Events == nil {
		return
	}
	e.Time = time.Now()
	w.emitMu.Lock()
	w.x.Events(e)
	w.emitMu.Unlock()
}

func (w *walk) record(addr string, n artifacts.SnapshotNode) {
	w.mu.Lock()
	w.updates[addr] = n
	w.mu.Unlock()
}

// save merges what the walk learned into the pipeline's snapshot, unless
// the snapshot already says all of it.
func (w *walk) save() error {
	if w.snapValid && w.gen == w.snap.Generation && !w.snapshotChanged() {
		return nil
	}
	if err := w.x.Store.SaveSnapshot(w.x.Pipeline, w.gen, w.updates); err != nil {
		return fmt.Errorf("save the pipeline's snapshot (the next run re-checks the action cache instead): %w", err)
	}
	return nil
}

func (w *walk) snapshotChanged() bool {
	for addr, n := range w.updates {
		if w.snap.Nodes[addr] != n {
			return true
		}
	}
	return false
}

// lastKnown is the output the pipeline's last run recorded for i, when
// the executor reads last-known results (Executor.LastKnown), the store
// still has it, and the last run computed it with the same logic version
// and the same canonical config (cfg, which holds the inputs' digests):
// only what Resolve pins (a model server's identity) is left unchecked.
func (w *walk) lastKnown(i *Instance, cfg []byte) (artifacts.Object, artifacts.Digest, bool) {
	if !w.x.LastKnown || w.snap == nil || cfg == nil {
		return artifacts.Object{}, "", false
	}
	n, ok := w.snap.Nodes[i.Addr]
	if !ok || n.Failed || n.Output.Digest == "" || !w.objects.Has(n.Output.Digest) {
		return artifacts.Object{}, "", false
	}
	a, err := w.x.Store.GetAction(n.Key)
	if err != nil || a.Version != i.Type().Version() || !bytes.Equal(compact(a.Config), compact(cfg)) {
		return artifacts.Object{}, "", false
	}
	return n.Output, n.Key, true
}

// fromSnapshot is the output the pipeline's snapshot holds for i at key,
// when the store still has it (the walk's object index: one read of each
// cas/ shard per walk) and its action entry is intact
// (artifacts.Store.ActionIntact: a stat, and a read only for an entry
// modified since the snapshot was written), so that an object removed from
// cas/, or an action entry removed or damaged, is recomputed rather than
// trusted.
func (w *walk) fromSnapshot(i *Instance, key artifacts.Digest) (artifacts.SnapshotNode, bool) {
	if !w.snapValid {
		return artifacts.SnapshotNode{}, false
	}
	n, ok := w.snap.Nodes[i.Addr]
	if !ok || n.Key != key || n.Failed || n.Output.Digest == "" {
		return artifacts.SnapshotNode{}, false
	}
	if !w.objects.Has(n.Output.Digest) {
		return artifacts.SnapshotNode{}, false
	}
	if !w.ahead.intact(w.x.Store, key, w.snap.Written) {
		return artifacts.SnapshotNode{}, false // runOne and Plan say why
	}
	return n, true
}

// aheadChecks answers snapshotHit for the walk's instances ahead of the
// scheduling loop, on other goroutines, in the order of the walk: on a
// no-op run of a large sweep the loop then finds most answers ready
// instead of computing a key, looking its object up and stat-ing its
// action entry for one instance after another.
//
// A worker computes an instance's key from the output digests the
// snapshot records for its inputs, then checks the snapshot's output at
// that key as fromSnapshot does (object index, ActionChecker). The loop
// takes a hit only when the digests its inputs actually have are those
// the worker assumed: the key of a type that resolves nothing outside
// the pipeline is a function of its config and its inputs' digests
// alone, so the answer is then exactly the one the loop would compute.
// Anything else (a miss, an answer not ready yet, inputs whose digests
// changed) the loop computes itself, as without the checks. Safe for
// concurrent use; end stops the workers.
type aheadChecks struct {
	w   *walk
	ctx context.Context

	slot       []int32            // Instance.index → index into insts, keys and state, or -1
	snapDigest []artifacts.Digest // Instance.index → the output the snapshot records for it ("" none)
	insts      []*Instance
	keys       []artifacts.Digest // the snapshot's key of each: what a hit computes
	state      []atomic.Uint32    // aheadUnknown, aheadClaimed, aheadHit or aheadMiss

	checker *artifacts.ActionChecker
	stop    atomic.Bool
	workers sync.WaitGroup
}

const (
	aheadUnknown = iota // no one has started on it
	aheadClaimed        // a worker or the loop is computing it
	aheadHit
	aheadMiss
)

// checkAhead starts answering, on GOMAXPROCS goroutines, the instances of
// insts that the snapshot answers and whose key is pure computation, and
// returns the checks (nil when the snapshot cannot answer or the walk is
// small). Call end when the walk ends.
func (w *walk) checkAhead(ctx context.Context, g *Graph, insts []*Instance) *aheadChecks {
	if !w.snapValid || len(insts) < 256 {
		return nil
	}
	c := &aheadChecks{w: w, ctx: ctx, slot: make([]int32, len(g.Instances)), snapDigest: make([]artifacts.Digest, len(g.Instances))}
	for k := range c.slot {
		c.slot[k] = -1
	}
	c.insts = make([]*Instance, 0, len(insts))
	c.keys = make([]artifacts.Digest, 0, len(insts))
	for _, i := range insts {
		n, ok := w.snap.Nodes[i.Addr]
		if !ok || n.Failed || n.Output.Digest == "" {
			continue
		}
		c.snapDigest[i.index] = n.Output.Digest
		if _, ok := i.Type().(nodes.Resolver); ok || w.x.Recompute[i.Addr] {
			continue
		}
		c.slot[i.index] = int32(len(c.keys))
		c.insts = append(c.insts, i)
		c.keys = append(c.keys, n.Key)
	}
	c.state = make([]atomic.Uint32, len(c.keys))
	c.checker = w.x.Store.NewActionChecker(w.snap.Written)
	workers := runtime.GOMAXPROCS(0)
	c.workers.Add(workers)
	for g := range workers {
		go func() {
			defer c.workers.Done()
			var buf []byte // canonical configs, computed for their keys alone
			// Interleaved, so that every worker stays near the front the
			// loop is at.
			for k := g; k < len(c.keys) && !c.stop.Load(); k += workers {
				if c.state[k].CompareAndSwap(aheadUnknown, aheadClaimed) {
					var answer uint32
					answer, buf = c.answer(k, buf)
					c.state[k].Store(answer)
				}
			}
		}()
	}
	return c
}

// answer is aheadHit when the snapshot answers c.insts[k] at the key its
// inputs' recorded digests give, else aheadMiss; buf is scratch for the
// canonical config, returned for the next answer.
func (c *aheadChecks) answer(k int, buf []byte) (uint32, []byte) {
	i := c.insts[k]
	for _, in := range i.Inputs {
		if c.snapDigest[in.index] == "" {
			return aheadMiss, buf
		}
	}
	key, cfg, _, err := c.w.x.keyOfIn(c.ctx, buf, i, inputDigests(i, func(in *Instance) artifacts.Digest { return c.snapDigest[in.index] }))
	if cfg != nil {
		buf = cfg
	}
	if err != nil || key != c.keys[k] || !c.w.objects.Has(c.snapDigest[i.index]) || !c.checker.Intact(key) {
		return aheadMiss, buf
	}
	return aheadHit, buf
}

// hit is the snapshot's answer for i when a worker found it a hit with
// the digests digest gives i's inputs; ok is false when the loop must
// compute i itself (then no worker starts on it). c may be nil.
func (c *aheadChecks) hit(i *Instance, digest func(in *Instance) artifacts.Digest) (artifacts.Digest, bool) {
	if c == nil {
		return "", false
	}
	k := c.slot[i.index]
	if k < 0 {
		return "", false
	}
	if c.state[k].Load() != aheadHit {
		c.state[k].CompareAndSwap(aheadUnknown, aheadClaimed)
		return "", false
	}
	for _, in := range i.Inputs {
		if digest(in) != c.snapDigest[in.index] {
			return "", false
		}
	}
	return c.keys[k], true
}

// intact is ActionIntact of key against the snapshot's time, through the
// checks' ActionChecker when there are checks (c may be nil).
func (c *aheadChecks) intact(s *artifacts.Store, key artifacts.Digest, since time.Time) bool {
	if c == nil {
		return s.ActionIntact(key, since)
	}
	return c.checker.Intact(key)
}

// end stops the workers of c, waits for them and closes its checker (nil:
// nothing).
func (c *aheadChecks) end() {
	if c != nil {
		c.stop.Store(true)
		c.workers.Wait()
		c.checker.Close()
	}
}

// inputDigests looks up the digests of i's inputs by address, given the
// digest of each input instance: a scan of i.Inputs for the few inputs
// most instances have, a binary search of them (sorted by address) for a
// fan-in, which allocates nothing however many there are.
func inputDigests(i *Instance, digest func(in *Instance) artifacts.Digest) func(addr string) artifacts.Digest {
	if len(i.Inputs) > 8 && slices.IsSortedFunc(i.Inputs, byAddr) {
		return func(addr string) artifacts.Digest {
			k, found := slices.BinarySearchFunc(i.Inputs, addr, func(in *Instance, addr string) int { return strings.Compare(in.Addr, addr) })
			if !found {
				return ""
			}
			return digest(i.Inputs[k])
		}
	}
	return func(addr string) artifacts.Digest {
		for _, in := range i.Inputs {
			if in.Addr == addr {
				return digest(in)
			}
		}
		return ""
	}
}

// readyQueue holds the instances whose inputs are done, one FIFO per
// runner, so that taking the next instance a free runner allows is O(1).
type readyQueue struct {
	byRunner map[string][]*Instance
	runners  []string // sorted, for a deterministic dispatch order
}

func (q *readyQueue) push(i *Instance) {
	if _, ok := q.byRunner[i.Runner]; !ok {
		q.runners = append(q.runners, i.Runner)
		sort.Strings(q.runners)
	}
	q.byRunner[i.Runner] = append(q.byRunner[i.Runner], i)
}

// pop takes the oldest ready instance of a runner free(runner) allows.
func (q *readyQueue) pop(free func(runner string) bool) (*Instance, bool) {
	for _, r := range q.runners {
		l := q.byRunner[r]
		if len(l) == 0 || !free(r) {
			continue
		}
		i := l[0]
		l[0] = nil
		q.byRunner[r] = l[1:]
		return i, true
	}
	return nil, false
}

// walk runs insts (a topologically ordered selection of g) and returns
// every instance's result and the counts.
func (w *walk) walk(ctx context.Context, g *Graph, insts []*Instance) (map[*Instance]*Result, *Summary) {
	x := w.x
	jobs := x.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	w.emit(Event{Event: EventStart, Total: int64(len(insts))})
	if !x.Force {
		w.ahead = w.checkAhead(ctx, g, insts)
		defer w.ahead.end()
	}

	// Per-instance state in slices indexed by Instance.index (its
	// position in g.Instances): a map entry per instance would cost more
	// memory than the instance itself.
	selected := make([]bool, len(g.Instances))
	waiting := make([]int, len(g.Instances))
	slab := make([]Result, len(insts))
	results := make(map[*Instance]*Result, len(insts)) // what walk returns
	res := make([]*Result, len(g.Instances))           // the loop's index of it
	ready := &readyQueue{byRunner: map[string][]*Instance{}}
	for k, i := range insts {
		selected[i.index] = true
		slab[k] = Result{Inst: i, State: StateNotRun}
		results[i] = &slab[k]
		res[i.index] = &slab[k]
		waiting[i.index] = len(i.Inputs)
		if len(i.Inputs) == 0 {
			ready.push(i)
		}
	}

	resultDigest := func(in *Instance) artifacts.Digest { return res[in.index].Output.Digest }

	type finished struct {
		inst *Instance
		res  Result
	}
	doneCh := make(chan finished, jobs) // a finished node never waits for the loop
	running := 0
	perRunner := map[string]int{}
	sum := &Summary{}
	stopped := false
	pending := len(insts)

	// Instances on a Remote wait for their jobs without using a local
	// slot, and all go to it at once: it applies the runner's limit to its
	// jobs (a job array's throttle), so that a sweep is one array.
	localRunning := 0
	runnerFree := func(r string) bool {
		if w.isRemote(r) {
			return true // the Remote throttles its jobs (a job array's limit)
		}
		if localRunning >= jobs {
			return false
		}
		limit := g.Runners[r]
		return r == "" || limit <= 0 || perRunner[r] < limit
	}
	// skip marks what depends on a failed instance, iteratively: a chain
	// of a million instances must not grow the stack.
	skip := func(failed *Instance) {
		stack := []*Instance{failed}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, d := range i.dependants {
				if !selected[d.index] || res[d.index].State != StateNotRun {
					continue
				}
				res[d.index].State = StateSkipped
				sum.Skipped++
				pending--
				w.emit(Event{Event: EventSkipped, Node: d.Addr, Type: d.Decl.TypeName, Cause: failed.Addr})
				stack = append(stack, d)
			}
		}
	}

	// finish records what happened to i and readies its dependants.
	finish := func(i *Instance, out Result) {
		r := res[i.index]
		*r = out
		r.Inst = i
		switch r.State {
		case StateDone:
			sum.Executed++
			sum.Rows += r.Output.Rows
		case StateCached:
			sum.Cached++
		default:
			sum.Failed++
			skip(i)
			if !x.KeepGoing {
				stopped = true
			}
			return
		}
		for _, d := range i.dependants {
			if !selected[d.index] {
				continue
			}
			waiting[d.index]--
			if waiting[d.index] == 0 && res[d.index].State == StateNotRun {
				ready.push(d)
			}
		}
	}

	for pending > 0 {
		if !stopped && ctx.Err() != nil {
			stopped = true
		}
		for !stopped {
			i, ok := ready.pop(runnerFree)
			if !ok {
				break
			}
			out, k, hit := w.snapshotHit(ctx, i, resultDigest)
			if hit {
				pending--
				finish(i, out)
				continue
			}
			running++
			perRunner[i.Runner]++
			if !w.isRemote(i.Runner) {
				localRunning++
			}
			go func(i *Instance) {
				// The results of i's inputs are final: the loop no
				// longer writes them.
				inputs := func() map[string]artifacts.Object {
					m := make(map[string]artifacts.Object, len(i.Inputs))
					for _, in := range i.Inputs {
						m[in.Addr] = res[in.index].Output
					}
					return m
				}
				doneCh <- finished{i, w.runOne(ctx, i, resultDigest, inputs, k)}
			}(i)
		}
		if running == 0 {
			// Nothing runs and nothing can start: the rest never will.
			break
		}
		var f finished
		select {
		case f = <-doneCh:
		case <-ctx.Done():
			stopped = true
			f = <-doneCh
		}
		running--
		perRunner[f.inst.Runner]--
		if !w.isRemote(f.inst.Runner) {
			localRunning--
		}
		pending--
		finish(f.inst, f.res)
	}
	for _, r := range results {
		if r.State == StateNotRun {
			sum.NotRun++
		}
	}
	return results, sum
}
