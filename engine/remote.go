package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
)

// Remote runs instances somewhere other than this process: a cluster's
// nodes (runner kind "slurm"). Each instance runs as `lacuna run` of the
// same pipeline with that instance as its only target, against the same
// store, so what it computes is committed to the store's action cache
// exactly as a local run commits it, under the same key; the store (never
// the scheduler) says what finished. Dispatch gets the instances of one
// node that became ready together (a for_each sweep: one job array), calls
// ended(k, err) as soon as insts[k]'s job has ended (err nil when it
// succeeded, else why it did not, with its log), so that what depends on
// that instance starts while its siblings still run, and returns when
// every one has ended. An instance whose job succeeded but whose key the
// store does not hold (the job computed another key: a different
// environment) fails with that said; one Dispatch never ended fails too.
//
// Dispatch is called from several goroutines at once, and must stop the
// jobs it started (scancel) when ctx is cancelled. It may call ended from
// any goroutine, at most once for each k. A process that died before its
// jobs ended leaves them running: the next run finds their results in the
// store, or dispatches what has none.
type Remote interface {
	Dispatch(ctx context.Context, node string, insts []RemoteInstance, ended func(k int, err error))
}

// RemoteInstance is an instance to run elsewhere and the key its run must
// commit: work with another key is other work (a job done under an older
// key does not count).
type RemoteInstance struct {
	Addr string
	Key  artifacts.Digest
	// Recompute asks for the instance to run again although its key may
	// be cached (run --force or --recompute ADDR): the job must not answer
	// from the store, and a completion recorded for the key before this
	// run is not this run's.
	Recompute bool
}

// RemoteWindow is how long the first ready instance of a node waits for
// its siblings before the batch is dispatched: a sweep's instances become
// ready together and go as one job array.
var RemoteWindow = 300 * time.Millisecond

// remoteBatches groups the instances of one (runner, node) that become
// ready within RemoteWindow into one Dispatch. Safe for concurrent use.
type remoteBatches struct {
	mu      sync.Mutex
	pending map[[2]string]*remoteBatch
}

type remoteBatch struct {
	insts []RemoteInstance
	outs  []chan error // each instance's outcome, buffered 1
}

// do dispatches inst (an instance of node) on rm, batched with its
// siblings, and returns its job's outcome as soon as that job has ended.
func (b *remoteBatches) do(ctx context.Context, rm Remote, runner, node string, inst RemoteInstance) error {
	k := [2]string{runner, node}
	b.mu.Lock()
	if b.pending == nil {
		b.pending = map[[2]string]*remoteBatch{}
	}
	batch, ok := b.pending[k]
	if !ok {
		batch = &remoteBatch{}
		b.pending[k] = batch
		go func() {
			select {
			case <-time.After(RemoteWindow):
			case <-ctx.Done():
			}
			b.mu.Lock()
			delete(b.pending, k)
			insts, outs := batch.insts, batch.outs
			b.mu.Unlock()
			var mu sync.Mutex
			sent := make([]bool, len(insts))
			end := func(j int, err error) {
				mu.Lock()
				defer mu.Unlock()
				if j < 0 || j >= len(outs) || sent[j] {
					return
				}
				sent[j] = true
				outs[j] <- err
			}
			rm.Dispatch(ctx, node, insts, end)
			for j := range insts {
				end(j, fmt.Errorf("runner %s returned without the outcome of this instance's job", runner))
			}
		}()
	}
	out := make(chan error, 1)
	batch.insts = append(batch.insts, inst)
	batch.outs = append(batch.outs, out)
	b.mu.Unlock()
	return <-out
}

// runRemote runs i on its runner's Remote and reads what the job
// committed under key.
func (w *walk) runRemote(ctx context.Context, rm Remote, i *Instance, key artifacts.Digest) (*artifacts.Action, error) {
	err := w.remote.do(ctx, rm, i.Runner, i.Decl.Address().String(), RemoteInstance{Addr: i.Addr, Key: key, Recompute: w.x.Force || w.x.Recompute[i.Addr]})
	a, ok, damaged := w.x.cached(key)
	if ok {
		return a, nil
	}
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("interrupted: %w", ctx.Err())
	case err != nil:
		return nil, fmt.Errorf("on runner %s: %w", i.Runner, err)
	case damaged != nil:
		return nil, fmt.Errorf("on runner %s: the job ended but its action entry is damaged: %w", i.Runner, damaged)
	}
	return nil, errors.New("on runner " + i.Runner + ": the job ended but the store holds no result under key " + string(key) +
		" (the job computed another key: does it see the same pipeline, variables and environment?)")
}

// remoteFor is the Remote that runs i, nil when i runs here.
func (w *walk) remoteFor(i *Instance) Remote {
	if i.Runner == "" || w.x.NoCommit {
		return nil
	}
	return w.x.Remotes[i.Runner]
}

// isRemote says whether the runner's instances run on a Remote.
func (w *walk) isRemote(runner string) bool {
	return runner != "" && !w.x.NoCommit && w.x.Remotes[runner] != nil
}
