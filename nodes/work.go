package nodes

import (
	"sync"
	"sync/atomic"
)

// Work counts one execution's own work as it goes: how many units of it
// there are (examples run, samples judged, calls made, texts embedded,
// steps trained) and how many are done. The engine reads it a few times a
// second and forwards what changed to whoever watches the run (progress
// events); node code only counts, and never prints.
//
// A node gets its execution's Work from WorkOf, once, and may then call
// its methods from any number of goroutines at once: Add is one atomic
// addition, cheap enough to call per item from a worker pool. A nil *Work
// (what WorkOf returns when nobody watches the run, or for a Run that is
// not the engine's) does nothing, so nodes never check.
//
// The counts are monotone within a unit: Add only adds, and a total only
// changes by Total or Grow. Naming another unit starts a new phase of the
// node's work, counted from zero ("examples", then "calls").
//
// Run.Progress(done, total) sets the same counts absolutely (a node that
// learns its position rather than counting, such as a training script
// printing its step); a node uses one or the other for a phase, never
// both, and may name the unit with Total first.
type Work struct {
	mu    sync.Mutex // serialises Total and Grow, which may start a phase
	unit  atomic.Pointer[string]
	done  atomic.Int64
	total atomic.Int64
}

// WorkReporter is implemented by the engine's Run. Node code calls
// WorkOf rather than asserting it.
type WorkReporter interface {
	// Work is the execution's Work, nil when nobody watches the run.
	Work() *Work
}

// WorkOf is the Work of the execution r belongs to: nil (a no-op) when r
// is not the engine's or nobody watches the run.
func WorkOf(r Run) *Work {
	if w, ok := r.(WorkReporter); ok {
		return w.Work()
	}
	return nil
}

// Total says the node will do n units of its work ("samples"). Called
// again with the same unit it changes the total (work found on the way);
// with another unit it starts a new phase, counted from zero.
func (w *Work) Total(unit string, n int) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.phase(unit)
	w.total.Store(int64(max(n, 0)))
	w.mu.Unlock()
}

// Grow adds n units to the total of unit, for work that arrives in
// rounds (every call of a helper that makes a batch of model calls adds
// its batch). Another unit than the current one starts a new phase whose
// total is n.
func (w *Work) Grow(unit string, n int) {
	if w == nil || n < 0 {
		return
	}
	w.mu.Lock()
	w.phase(unit)
	w.total.Add(int64(n))
	w.mu.Unlock()
}

// Add counts n more units done; n ≤ 0 is ignored, so the count never goes
// back.
func (w *Work) Add(n int) {
	if w == nil || n <= 0 {
		return
	}
	w.done.Add(int64(n))
}

// Set sets the counts absolutely, keeping the unit (Run.Progress).
func (w *Work) Set(done, total int64) {
	if w == nil {
		return
	}
	w.done.Store(done)
	w.total.Store(total)
}

// Load reads the counts: done, the total (0 when unknown) and the unit
// ("" when the node named none).
func (w *Work) Load() (done, total int64, unit string) {
	if w == nil {
		return 0, 0, ""
	}
	if u := w.unit.Load(); u != nil {
		unit = *u
	}
	return w.done.Load(), w.total.Load(), unit
}

// phase starts a new phase when unit is not the current one. w.mu held.
func (w *Work) phase(unit string) {
	if u := w.unit.Load(); u != nil && *u == unit {
		return
	}
	w.unit.Store(&unit)
	w.done.Store(0)
	w.total.Store(0)
}
