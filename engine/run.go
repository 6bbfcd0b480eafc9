package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/parquet-go/parquet-go"
)

// Version is the lacuna version recorded in provenance.
var Version = "0.1.0-dev"

// Executor runs instance graphs against a store. Its fields are settings:
// Run and Plan only read them, so one Executor may serve several runs, one
// after another or at once; everything one run learns lives in a walk.
//
// Guarantees: an instance runs only after all its inputs succeeded; at most
// Jobs instances run at once, and at most a runner's concurrency of those
// that name it. A failed instance is recorded (store fail/ entry, run log)
// but never cached; its dependants are skipped and reported once, as
// skipped, never as failures of their own. Work on one action key is
// serialised across processes by the store's key lock, so two runs of one
// pipeline compute each node once and the second reuses the first's result.
// An output the snapshot names but the store no longer holds (an object
// removed from cas/) is recomputed, and what depends on it only when its
// digest changed. Cancelling ctx stops dispatching, cancels running nodes
// and returns after they have stopped; a later run resumes from what was
// committed.
type Executor struct {
	Store *artifacts.Store
	// Jobs is the number of instances run in parallel (default: CPUs).
	Jobs int
	// KeepGoing continues with independent work after a failure.
	KeepGoing bool
	// Force ignores cached results for every selected instance.
	Force bool
	// Recompute ignores cached results for these addresses only (verify).
	Recompute map[string]bool
	// NoCommit records nothing (action cache, snapshot) for the instances
	// it recomputes because of Force or Recompute: verify compares
	// without changing what later runs use.
	NoCommit bool
	// Pipeline identifies the pipeline for plan explanations (its path).
	Pipeline string
	// Events receives progress; calls are serialised.
	Events func(Event)
	// Environ is the environment nodes see through nodes.Resolve (the CLI
	// passes the process's); nodes read no other. Set it before the first
	// Run or Plan and do not change it: Getenv indexes it once.
	Environ []string
	// CountCalls makes Plan count the model calls of the instances that
	// will run (nodes.CallPlanner): that reads the call cache, so only
	// `lacuna plan` asks for it.
	CountCalls bool
	// Remotes runs the instances of the runners it names elsewhere (a
	// cluster: Remote), by runner name. Their instances do not count
	// against Jobs, and go to the Remote as soon as they are ready: the
	// Remote applies the runner's concurrency to its jobs. verify
	// (NoCommit) runs them here.
	Remotes map[string]Remote
	// Servers starts the model servers nodes ask for (model blocks with
	// serve { }); nil: such nodes fail their first call, saying why.
	Servers nodes.ModelServers
	// LastKnown makes Plan report an instance whose key cannot be
	// computed now (its Resolve fails: a model server that is down) as
	// cached with the output the pipeline's last run recorded, when the
	// store still has it, saying so in the entry's reason. For read-only
	// commands (cat, show, export, gc): run and plan never set it.
	LastKnown bool

	envOnce sync.Once
	envMap  map[string]string
}

// Event is one thing that happened in a run, as printed by `run --json`.
type Event struct {
	Event   string           `json:"event"`
	Time    time.Time        `json:"time"`
	Node    string           `json:"node,omitempty"`
	Type    string           `json:"type,omitempty"`
	Key     artifacts.Digest `json:"key,omitempty"`
	Digest  artifacts.Digest `json:"digest,omitempty"`
	Rows    int64            `json:"rows,omitempty"`
	Done    int64            `json:"done,omitempty"`
	Total   int64            `json:"total,omitempty"`
	Unit    string           `json:"unit,omitempty"`
	Seconds float64          `json:"seconds,omitempty"`
	Error   string           `json:"error,omitempty"`
	Cause   string           `json:"cause,omitempty"`
	Message string           `json:"message,omitempty"`
	*Summary
}

// Event names.
const (
	EventStart    = "start"    // Total = instances selected
	EventRunning  = "running"  // an instance started executing
	EventDone     = "done"     // executed and committed
	EventCached   = "cached"   // reused from the action cache
	EventFailed   = "failed"   // Error says why
	EventSkipped  = "skipped"  // Cause names the failed input
	EventDamaged  = "damaged"  // the action entry was damaged: moved to quarantine/, the instance recomputes (Error says what was wrong)
	EventProgress = "progress" // a running node's own work: Done of Total Units, and its Status (Message); see nodes.Work
	EventSummary  = "summary"  // the last event
)

// Summary counts what a run did.
type Summary struct {
	Executed int     `json:"executed"`
	Cached   int     `json:"cached"`
	Failed   int     `json:"failed"`
	Skipped  int     `json:"skipped"`
	NotRun   int     `json:"not_run"`
	Rows     int64   `json:"rows"`
	Seconds  float64 `json:"seconds"`
}

// State is what a run did with one instance.
type State string

// States of an instance after a run.
const (
	StateNotRun  State = "not_run" // never started (interrupted, or stopped after a failure)
	StateDone    State = "done"    // executed and committed
	StateCached  State = "cached"  // reused from the snapshot or the action cache
	StateFailed  State = "failed"  // Result.Err says why
	StateSkipped State = "skipped" // an input failed
)

// Result is the outcome of one instance.
type Result struct {
	Inst   *Instance
	State  State
	Key    artifacts.Digest
	Output artifacts.Object
	Err    error
}

// Run executes the selected instances (all when targets is empty) and what
// they need. The error is non-nil when any instance failed, the run was
// interrupted or its snapshot could not be saved; results describe every
// selected instance.
func (x *Executor) Run(ctx context.Context, g *Graph, targets []string) (map[*Instance]*Result, *Summary, error) {
	start := time.Now()
	insts, err := g.Select(targets)
	if err != nil {
		return nil, nil, err
	}
	unlock, err := x.Store.LockShared(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("lock store: %w", err)
	}
	defer unlock()
	x.Store.CleanTemp()
	w := x.newWalk()
	results, sum := w.walk(ctx, g, insts)
	sum.Seconds = time.Since(start).Seconds()
	saveErr := w.save()
	// Rows and Seconds repeat the summary's: the event's own fields hide the
	// embedded ones in JSON.
	w.emit(Event{Event: EventSummary, Summary: sum, Rows: sum.Rows, Seconds: sum.Seconds})
	var syncErr error
	if err := x.Store.Sync(); err != nil {
		syncErr = fmt.Errorf("sync store: %w", err)
	}
	switch {
	case ctx.Err() != nil:
		return results, sum, errors.Join(fmt.Errorf("interrupted: %d of %d nodes not run; run again to resume", sum.NotRun, len(insts)), saveErr, syncErr)
	case sum.Failed > 0:
		return results, sum, errors.Join(fmt.Errorf("%d node(s) failed", sum.Failed), saveErr, syncErr)
	}
	return results, sum, errors.Join(saveErr, syncErr)
}

// keyOf computes an instance's key once its inputs' digests are known. A
// Resolver's Resolve runs here, once: its identity enters the key and its
// value is what Run receives (pinned), so the two cannot disagree.
func (x *Executor) keyOf(ctx context.Context, i *Instance, digest func(addr string) artifacts.Digest) (artifacts.Digest, []byte, *nodes.Pinned, error) {
	return x.keyOfIn(ctx, nil, i, digest)
}

// keyOfIn is keyOf with the canonical config appended to buf[:0]: a caller
// that computes many keys and keeps few configs reuses one buffer (and
// copies a config it keeps).
func (x *Executor) keyOfIn(ctx context.Context, buf []byte, i *Instance, digest func(addr string) artifacts.Digest) (artifacts.Digest, []byte, *nodes.Pinned, error) {
	cfg, err := appendCanonicalConfig(buf[:0], i, digest)
	if err != nil {
		return "", nil, nil, err
	}
	pinned := &nodes.Pinned{}
	if rv, ok := i.Type().(nodes.Resolver); ok {
		p, err := rv.Resolve(ctx, resolveEnv{x: x, inst: i})
		if err != nil {
			// The config is known: Plan compares it with the last run's.
			return "", cfg, nil, located(i.Decl, err)
		}
		if p != nil {
			pinned = p
		}
	}
	return actionKey(i, cfg, pinned.Identity), cfg, pinned, nil
}

// resolveOnly runs i's Resolve, when its type has one, for its error
// alone (Plan checks model-calling nodes whose inputs will run).
func (x *Executor) resolveOnly(ctx context.Context, i *Instance) error {
	rv, ok := i.Type().(nodes.Resolver)
	if !ok {
		return nil
	}
	if _, err := rv.Resolve(ctx, resolveEnv{x: x, inst: i}); err != nil {
		return located(i.Decl, err)
	}
	return nil
}

// resolveEnv implements nodes.Resolve for one instance.
type resolveEnv struct {
	x    *Executor
	inst *Instance
}

func (r resolveEnv) Config() any  { return r.inst.Config }
func (r resolveEnv) Node() string { return r.inst.Addr }
func (r resolveEnv) Dir() string  { return r.inst.Decl.Dir() }
func (r resolveEnv) Environ() []string {
	return append([]string(nil), r.x.Environ...)
}
func (r resolveEnv) Getenv(key string) string {
	r.x.envOnce.Do(func() {
		r.x.envMap = make(map[string]string, len(r.x.Environ))
		for _, kv := range r.x.Environ {
			if k, v, ok := strings.Cut(kv, "="); ok {
				r.x.envMap[k] = v
			}
		}
	})
	return r.x.envMap[key]
}
func (r resolveEnv) CacheDir(name string) (string, error) { return r.x.Store.CacheDir(name) }

// cached returns the action of key when its output is still in the store.
// An entry that is there but damaged (artifacts.ErrDamagedAction) is a
// miss, returned as damaged; one that cannot be read for another reason is
// a miss (computing the action rewrites it).
func (x *Executor) cached(key artifacts.Digest) (a *artifacts.Action, ok bool, damaged error) {
	a, err := x.Store.GetAction(key)
	if err != nil {
		if errors.Is(err, artifacts.ErrDamagedAction) {
			return nil, false, err
		}
		return nil, false, nil
	}
	if _, err := os.Stat(x.Store.ObjectPath(a.Output.Digest)); err != nil {
		return nil, false, nil
	}
	if len(x.Store.MissingBlobs(a.Blobs)) > 0 {
		return nil, false, nil
	}
	return a, true, nil
}

// actionBlobs is what an action's entry lists as its blobs (what gc
// keeps): those the node wrote and those its output's rows refer to
// (artifacts.BlobRefs), each of which must be in the store. Only an
// output with blob columns is read again.
func (x *Executor) actionBlobs(obj artifacts.Object, schema *parquet.Schema, written []artifacts.Digest) ([]artifacts.Digest, error) {
	all := slices.Clone(written)
	if len(artifacts.BlobColumns(schema)) > 0 {
		rd, err := x.Store.Open(obj)
		if err != nil {
			return nil, err
		}
		refs, err := artifacts.BlobRefs(rd)
		if err != nil {
			return nil, fmt.Errorf("output: %w", err)
		}
		if missing := x.Store.MissingBlobs(refs); len(missing) > 0 {
			return nil, fmt.Errorf("output: its rows refer to blob %s, which is not in the store (write it with PutBlob)", missing[0])
		}
		all = append(all, refs...)
	}
	slices.Sort(all)
	return slices.Compact(all), nil
}

// keyed is an instance's key with what it was computed from.
type keyed struct {
	key    artifacts.Digest
	cfg    []byte
	pinned *nodes.Pinned
}

// snapshotHit answers i from the pipeline's snapshot on the scheduling
// loop itself, without a goroutine, when nothing forces it to run, the
// snapshot names it, and its key is pure computation (its type resolves
// nothing outside the pipeline): a no-op run of a large sweep is then one
// loop over its instances, most of them answered ahead (aheadChecks).
// digest gives the digests of i's inputs. When the key was computed but
// the snapshot does not answer, k carries it to runOne.
func (w *walk) snapshotHit(ctx context.Context, i *Instance, digest func(in *Instance) artifacts.Digest) (res Result, k *keyed, hit bool) {
	x := w.x
	if x.Force || x.Recompute[i.Addr] || !w.snapValid {
		return Result{}, nil, false
	}
	if key, ok := w.ahead.hit(i, digest); ok {
		n := w.snap.Nodes[i.Addr]
		return w.cachedFromSnapshot(i, key, n), nil, true
	}
	if _, ok := w.snap.Nodes[i.Addr]; !ok {
		return Result{}, nil, false
	}
	if _, ok := i.Type().(nodes.Resolver); ok {
		return Result{}, nil, false
	}
	key, cfg, pinned, err := x.keyOfIn(ctx, w.keyBuf, i, inputDigests(i, digest))
	w.keyBuf = cfg
	if err != nil {
		return Result{}, nil, false // runOne reports it
	}
	n, ok := w.fromSnapshot(i, key)
	if !ok {
		return Result{}, &keyed{key, slices.Clone(cfg), pinned}, false
	}
	return w.cachedFromSnapshot(i, key, n), nil, true
}

// cachedFromSnapshot says that i is cached at key with the snapshot's n.
func (w *walk) cachedFromSnapshot(i *Instance, key artifacts.Digest, n artifacts.SnapshotNode) Result {
	w.emit(Event{Event: EventCached, Node: i.Addr, Type: i.Decl.TypeName, Key: key, Digest: n.Output.Digest, Rows: n.Output.Rows, Message: n.Note})
	return Result{State: StateCached, Key: key, Output: n.Output}
}

// runOne computes one instance, or finds it cached. It runs on its own
// goroutine; it touches the walk only through record and emit. k is the
// instance's key when the loop computed it already, else nil.
//
// digest gives the digests of i's inputs; inputsOf builds the map of their
// outputs that running i needs (a fan-in's is large: a cached instance
// never builds it).
func (w *walk) runOne(ctx context.Context, i *Instance, digest func(in *Instance) artifacts.Digest, inputsOf func() map[string]artifacts.Object, k *keyed) Result {
	x, emit := w.x, w.emit
	fail := func(key artifacts.Digest, err error) Result {
		emit(Event{Event: EventFailed, Node: i.Addr, Type: i.Decl.TypeName, Key: key, Error: err.Error()})
		return Result{State: StateFailed, Key: key, Err: err}
	}
	if k == nil {
		key, cfg, pinned, err := x.keyOf(ctx, i, inputDigests(i, digest))
		if err != nil {
			return fail("", err)
		}
		k = &keyed{key, cfg, pinned}
	}
	key, cfg, pinned := k.key, k.cfg, k.pinned
	identity := pinned.Identity
	force := x.Force || x.Recompute[i.Addr]
	hit := func(out artifacts.Object, note string) Result {
		emit(Event{Event: EventCached, Node: i.Addr, Type: i.Decl.TypeName, Key: key, Digest: out.Digest, Rows: out.Rows, Message: note})
		return Result{State: StateCached, Key: key, Output: out}
	}
	if !force {
		if n, ok := w.fromSnapshot(i, key); ok {
			return hit(n.Output, n.Note) // the snapshot already says so
		}
		if a, ok, _ := x.cached(key); ok {
			w.record(i.Addr, artifacts.SnapshotNode{Key: key, Output: a.Output, Note: a.Note})
			return hit(a.Output, a.Note)
		}
	}
	if rm := w.remoteFor(i); rm != nil {
		// The job takes the key's lock and commits; the store says what
		// it computed.
		emit(Event{Event: EventRunning, Node: i.Addr, Type: i.Decl.TypeName, Key: key, Message: "dispatched to runner " + i.Runner})
		started := time.Now()
		a, err := w.runRemote(ctx, rm, i, key)
		if err != nil {
			w.record(i.Addr, artifacts.SnapshotNode{Key: key, Failed: true})
			return fail(key, err)
		}
		w.record(i.Addr, artifacts.SnapshotNode{Key: key, Output: a.Output, Note: a.Note})
		emit(Event{Event: EventDone, Node: i.Addr, Type: i.Decl.TypeName, Key: key, Digest: a.Output.Digest, Rows: a.Output.Rows, Seconds: time.Since(started).Seconds(), Message: a.Note})
		return Result{State: StateDone, Key: key, Output: a.Output}
	}
	unlock, err := x.Store.LockKey(ctx, key)
	if err != nil {
		return fail(key, err)
	}
	defer unlock()
	if !force {
		// Another process may have computed it while we waited.
		a, ok, damaged := x.cached(key)
		if ok {
			w.record(i.Addr, artifacts.SnapshotNode{Key: key, Output: a.Output, Note: a.Note})
			return hit(a.Output, a.Note)
		}
		if damaged != nil {
			// Under the key's lock no other process writes the entry:
			// what is moved aside is the damaged one, never a fresh one.
			de := &artifacts.DamagedActionError{Path: string(key), Why: damaged.Error()}
			errors.As(damaged, &de)
			msg := fmt.Sprintf("action entry %s was damaged (%s): moved to quarantine/, recomputing", de.Path, de.Why)
			if err := x.Store.QuarantineAction(key); err != nil {
				msg = fmt.Sprintf("action entry %s is damaged (%s), recomputing; %v", de.Path, de.Why, err)
			}
			emit(Event{Event: EventDamaged, Node: i.Addr, Type: i.Decl.TypeName, Key: key, Error: msg})
		}
	}
	emit(Event{Event: EventRunning, Node: i.Addr, Type: i.Decl.TypeName, Key: key})
	started := time.Now()
	inputs := inputsOf()
	env := &runEnv{w: w, inst: i, key: key, inputs: inputs, pinned: pinned.Value}
	err = located(i.Decl, env.call(ctx))
	env.endProgress()
	secs := time.Since(started).Seconds()
	if err == nil && env.out == nil {
		err = errors.New("node produced no output")
	}
	var obj artifacts.Object
	var blobs []artifacts.Digest
	if err == nil {
		obj, err = env.out.Commit()
		if err == nil {
			blobs, err = x.actionBlobs(obj, env.out.Schema(), env.blobs)
		}
	}
	if err != nil {
		if env.out != nil {
			env.out.Abort()
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted: %w", ctx.Err())
		}
		ferr := x.Store.PutFailure(&artifacts.Failure{Key: key, Node: i.Addr, Type: i.Decl.TypeName, Error: err.Error(), Logs: env.logs.String(), Started: started, Seconds: secs, Host: hostname(), Reports: env.reports})
		if ferr != nil {
			err = fmt.Errorf("%w (recording the failure in the store also failed: %v)", err, ferr)
		}
		if !x.NoCommit || !force {
			w.record(i.Addr, artifacts.SnapshotNode{Key: key, Failed: true})
		}
		return fail(key, err)
	}
	if !x.NoCommit || !force {
		a := &artifacts.Action{
			Key: key, Output: obj, Node: i.Addr, Type: i.Decl.TypeName, Version: i.Type().Version(),
			Config: cfg, Identity: identity, Blobs: blobs,
			Started: started.UTC(), Seconds: secs, Host: hostname(), Tool: "lacuna " + Version, Logs: env.logs.String(),
			Note: env.note, Reports: env.reports,
		}
		names := inputNames(i)
		for _, in := range i.Inputs {
			a.Inputs = append(a.Inputs, artifacts.Input{Name: names[in.Addr], Node: in.Addr, Digest: inputs[in.Addr].Digest})
		}
		if err := x.Store.PutAction(a); err != nil {
			return fail(key, err)
		}
		w.record(i.Addr, artifacts.SnapshotNode{Key: key, Output: obj, Note: env.note})
	}
	emit(Event{Event: EventDone, Node: i.Addr, Type: i.Decl.TypeName, Key: key, Digest: obj.Digest, Rows: obj.Rows, Seconds: secs, Message: env.note})
	return Result{State: StateDone, Key: key, Output: obj}
}

// inputNames maps each input address to the config attribute it arrives
// through.
func inputNames(i *Instance) map[string]string {
	fields, _ := configFields(i.Type())
	rv := reflectElem(i.Config)
	names := map[string]string{}
	for _, f := range fields {
		switch v := rv.Field(f.Index).Interface().(type) {
		case nodes.Ref:
			names[v.Node] = f.Name
		case []nodes.Ref:
			for _, r := range v {
				if _, ok := names[r.Node]; !ok {
					names[r.Node] = f.Name
				}
			}
		}
	}
	return names
}

var (
	hostOnce sync.Once
	host     string
)

func hostname() string {
	hostOnce.Do(func() { host, _ = os.Hostname() })
	return host
}

// runEnv implements nodes.Run for one execution, or for a
// nodes.CallPlanner's PlanCalls (planning). Logf, Note, Progress, Status,
// Work, Report, PutBlob, OpenBlob and ExtractBlob may be called from any
// goroutine of the node (mu guards what they write); the engine reads
// logs, blobs, note and reports only after Run has returned.
type runEnv struct {
	w      *walk
	inst   *Instance
	key    artifacts.Digest
	inputs map[string]artifacts.Object
	out    *artifacts.Writer

	mu      sync.Mutex
	logs    boundedBuffer
	blobs   []artifacts.Digest
	note    string
	reports map[string]json.RawMessage
	pinned  any
	// prog is the live progress: the node's Work, its Status and what
	// was last sent of them (progress.go).
	prog liveProgress
	// planning: the env is a nodes.CallPlanner's at plan time, where
	// nothing may be written (Output and PutBlob fail).
	planning bool
}

func (r *runEnv) call(ctx context.Context) (err error) {
	defer func() {
		if p := recover(); p != nil {
			r.Logf("panic: %v\n%s", p, truncate(string(debug.Stack()), 8000))
			err = fmt.Errorf("node panicked: %v (stack trace in its log: lacuna show)", p)
		}
	}()
	return r.inst.Type().Run(ctx, r)
}

func (r *runEnv) Config() any  { return r.inst.Config }
func (r *runEnv) Node() string { return r.inst.Addr }
func (r *runEnv) Dir() string  { return r.inst.Decl.Dir() }

func (r *runEnv) Input(ref nodes.Ref) (*artifacts.Reader, error) {
	obj, ok := r.inputs[ref.Node]
	if !ok {
		return nil, fmt.Errorf("%s is not an input of %s", ref.Node, r.inst.Addr)
	}
	rd, err := r.w.x.Store.Open(obj)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ref.Node, err)
	}
	return rd, nil
}

func (r *runEnv) Output(schema *parquet.Schema) (*artifacts.Writer, error) {
	if r.planning {
		return nil, errors.New("Output is not available while planning")
	}
	if r.out != nil {
		return nil, errors.New("Output called twice")
	}
	if err := nodes.CheckOutput(r.inst.Type(), schema); err != nil {
		return nil, err
	}
	w, err := r.w.x.Store.NewWriter(schema, map[string]string{
		artifacts.MetaNode:          r.inst.Addr,
		artifacts.MetaType:          r.inst.Decl.TypeName,
		artifacts.MetaActionKey:     string(r.key),
		artifacts.MetaSchemaVersion: r.inst.Type().Version(),
	})
	if err != nil {
		return nil, err
	}
	r.out = w
	return w, nil
}

func (r *runEnv) Pinned() any { return r.pinned }

func (r *runEnv) InputDigest(ref nodes.Ref) artifacts.Digest { return r.inputs[ref.Node].Digest }

func (r *runEnv) Previous() (*artifacts.Reader, bool) {
	n, ok := r.w.snap.Nodes[r.inst.Addr]
	if !ok || n.Output.Digest == "" {
		return nil, false
	}
	rd, err := r.w.x.Store.Open(n.Output)
	if err != nil {
		return nil, false
	}
	return rd, true
}

func (r *runEnv) PutBlob(rd io.Reader) (artifacts.Digest, error) {
	if r.planning {
		return "", errors.New("PutBlob is not available while planning")
	}
	d, err := r.w.x.Store.PutBlob(rd)
	if err == nil {
		r.mu.Lock()
		r.blobs = append(r.blobs, d)
		r.mu.Unlock()
	}
	return d, err
}

var _ nodes.BlobRun = (*runEnv)(nil)

func (r *runEnv) OpenBlob(d artifacts.Digest) (*artifacts.BlobReader, error) {
	return r.w.x.Store.OpenBlob(d)
}

func (r *runEnv) ExtractBlob(d artifacts.Digest, dir string) error {
	return r.w.x.Store.ExtractBlob(d, dir)
}

func (r *runEnv) Logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	r.mu.Lock()
	r.logs.WriteString(msg)
	r.mu.Unlock()
}

func (r *runEnv) Note(format string, args ...any) {
	note := strings.TrimSpace(strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " "))
	r.mu.Lock()
	r.note = note
	r.mu.Unlock()
}

func (r *runEnv) CacheDir(name string) (string, error) { return r.w.x.Store.CacheDir(name) }

func (r *runEnv) Calls() nodes.CallCache { return r.w.x.Store.Calls() }

func (r *runEnv) Report(name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	r.mu.Lock()
	if r.reports == nil {
		r.reports = map[string]json.RawMessage{}
	}
	r.reports[name] = b
	r.mu.Unlock()
}

// boundedBuffer keeps the first 64 KiB of a node's log.
type boundedBuffer struct{ bytes.Buffer }

const maxLog = 64 << 10

func (b *boundedBuffer) WriteString(s string) (int, error) { return b.Write([]byte(s)) }

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := maxLog - b.Len(); room < len(p) {
		if room > 0 {
			b.Buffer.Write(p[:room])
			b.Buffer.WriteString("\n[log truncated]\n")
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
