package engine

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lacuna-dev/lacuna/nodes"
)

// Progress events (EventProgress) tell a run's observer how far a running
// node is in its own work. One execution's events are a bounded stream:
// at most one per progressEvery, plus its last, and only when something
// changed; every event carries the whole live state (Done of Total Units,
// and the Status line), so a display never merges events, and the counts
// of successive events of one unit never go back.
const (
	// progressEvery is the shortest interval between two progress events
	// of one execution, except its last (work done, or the node ended).
	progressEvery = 200 * time.Millisecond
	// sampleEvery is how often a node's Work is read while it runs.
	sampleEvery = 250 * time.Millisecond
)

// liveProgress is one execution's live progress: the node's Work (counted
// by the node's goroutines without locks), its last Status, and what the
// last event said. A sampler goroutine, started when the node first
// reports progress (asks for its Work, or calls Status or Progress),
// turns what changed into events; Status and Progress also send their
// own at once (throttled). mu orders the events: each is
// built from the state and sent under it, so a later event never carries
// older counts.
type liveProgress struct {
	work nodes.Work

	mu      sync.Mutex
	status  string
	sent    progressState // what the last event said
	sentAt  time.Time
	ended   bool // endProgress ran: no sampler may start
	stop    chan struct{}
	stopped chan struct{}
}

type progressState struct {
	done, total  int64
	unit, status string
}

// Work implements nodes.WorkReporter: the execution's counters, nil (a
// no-op) when nobody watches the run or while planning.
func (r *runEnv) Work() *nodes.Work {
	if r.planning || r.w.x.Events == nil {
		return nil
	}
	r.startSampler()
	return &r.prog.work
}

// startSampler starts the execution's sampler, once, when the node first
// reports progress in any way: what the throttle held back is then sent
// within sampleEvery, even when the node reports nothing more for long.
func (r *runEnv) startSampler() {
	p := &r.prog
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop == nil && !p.ended {
		p.stop, p.stopped = make(chan struct{}), make(chan struct{})
		go r.sample(p.stop, p.stopped)
	}
}

var _ nodes.WorkReporter = (*runEnv)(nil)

// sample sends what changed in the node's Work every sampleEvery, until
// stop is closed.
func (r *runEnv) sample(stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			r.emitProgress(false)
		}
	}
}

// endProgress stops the sampler and sends the last state, when no event
// said it yet: the observer's last counts of a node are its final ones.
// The engine calls it once the node's Run has returned.
func (r *runEnv) endProgress() {
	p := &r.prog
	p.mu.Lock()
	p.ended = true
	stop, stopped := p.stop, p.stopped
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-stopped
	}
	r.emitProgress(true)
}

// Status sets the node's live one-line description, sent with its counts.
func (r *runEnv) Status(format string, args ...any) {
	if r.planning || r.w.x.Events == nil {
		return
	}
	r.startSampler()
	msg := strings.TrimSpace(strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " "))
	r.prog.mu.Lock()
	r.prog.status = msg
	r.prog.mu.Unlock()
	r.emitProgress(false)
}

// Progress sets the node's counts absolutely (nodes.Work.Set); the event
// where done reaches total is never throttled.
func (r *runEnv) Progress(done, total int64) {
	if r.planning || r.w.x.Events == nil {
		return
	}
	r.startSampler()
	r.prog.work.Set(done, total)
	r.emitProgress(total > 0 && done == total)
}

// emitProgress sends the live state when it changed since the last event
// and, unless force, progressEvery has passed since that event.
func (r *runEnv) emitProgress(force bool) {
	if r.w.x.Events == nil {
		return
	}
	p := &r.prog
	p.mu.Lock()
	defer p.mu.Unlock()
	done, total, unit := p.work.Load()
	st := progressState{done: done, total: total, unit: unit, status: p.status}
	now := time.Now()
	if st == p.sent || !force && now.Sub(p.sentAt) < progressEvery {
		return
	}
	p.sent, p.sentAt = st, now
	r.w.emit(Event{Event: EventProgress, Node: r.inst.Addr, Type: r.inst.Decl.TypeName, Done: done, Total: total, Unit: unit, Message: st.status})
}
