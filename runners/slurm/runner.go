package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A Runner submits Jobs to one SLURM cluster and tracks them. All its
// Submit calls share one tracker, which polls the cluster with one
// batched squeue call per interval for every task it tracks.
//
// A Runner is safe for concurrent use. Its state directory must be on
// storage that the submitting host and the compute nodes share, at the
// same path.
type Runner struct {
	stateDir string
	bin      map[string]string // command name -> path
	minPoll  time.Duration
	maxPoll  time.Duration
	factor   float64
	leaseTTL time.Duration
	holder   string
	lostPoll int // consecutive polls a task may be missing before it is lost
	maxArray int
	log      *slog.Logger

	stats counters

	mu       sync.Mutex
	watches  map[*watch]bool
	polling  bool
	noSacct  atomic.Bool   // sacct answered that accounting is disabled
	pollWake chan struct{} // signalled when a watch is added
}

// An Option configures a Runner.
type Option func(*Runner)

// WithPollInterval sets the tracker's interval: it starts at min after
// every change it sees and grows by half (factor 1.5) at each poll that
// sees none, up to max. Defaults 2 s and 60 s.
func WithPollInterval(min, max time.Duration) Option {
	return func(r *Runner) {
		if min > 0 {
			r.minPoll = min
		}
		if max >= r.minPoll {
			r.maxPoll = max
		}
	}
}

// WithBinDir runs sbatch, squeue, sacct and scancel from dir instead of
// finding them on PATH.
func WithBinDir(dir string) Option {
	return func(r *Runner) {
		for _, c := range []string{"sbatch", "squeue", "sacct", "scancel"} {
			r.bin[c] = filepath.Join(dir, c)
		}
	}
}

// WithMaxArraySize is the cluster's MaxArraySize (default 1001, SLURM's
// default): array task ids must be below it. A sweep whose indices reach
// it is submitted as several arrays of at most n tasks, one sbatch each.
func WithMaxArraySize(n int) Option {
	return func(r *Runner) {
		if n > 0 {
			r.maxArray = n
		}
	}
}

// WithLeaseTTL sets how long a job's lease lives without renewal
// (default 30 s): a process that resumes a job after the previous
// submitter was killed waits up to this long for its lease to expire.
func WithLeaseTTL(d time.Duration) Option {
	return func(r *Runner) {
		if d > 0 {
			r.leaseTTL = d
		}
	}
}

// WithHolder names this process in the leases it takes (default: host,
// pid and a random suffix).
func WithHolder(id string) Option { return func(r *Runner) { r.holder = id } }

// WithLogger logs submissions, polls and cancellations to l (default:
// nothing is logged).
func WithLogger(l *slog.Logger) Option { return func(r *Runner) { r.log = l } }

// New returns a Runner keeping its records under stateDir (made absolute
// against the working directory).
func New(stateDir string, opts ...Option) (*Runner, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("slurm: state directory: %w", err)
	}
	if strings.ContainsAny(abs, " \t\n\r%") {
		return nil, fmt.Errorf("slurm: state directory %q: SLURM's #SBATCH lines cannot name a path with whitespace or %%", abs)
	}
	r := &Runner{
		stateDir: abs,
		bin:      map[string]string{"sbatch": "sbatch", "squeue": "squeue", "sacct": "sacct", "scancel": "scancel"},
		minPoll:  2 * time.Second,
		maxPoll:  60 * time.Second,
		factor:   1.5,
		leaseTTL: 30 * time.Second,
		holder:   defaultHolder(),
		lostPoll: 2,
		maxArray: 1001,
		log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		watches:  make(map[*watch]bool),
		pollWake: make(chan struct{}, 1),
	}
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

// Stats counts what a Runner asked of SLURM.
type Stats struct {
	Polls   int64 // tracker polls (each is one squeue call, plus one sacct call when tasks left squeue)
	Sbatch  int64 // sbatch calls
	Squeue  int64 // squeue calls (polls, re-attachment checks, lookups of unrecorded submissions)
	Sacct   int64 // sacct calls
	Scancel int64 // scancel calls
	// Submitted counts array tasks submitted; Attached, tasks of earlier
	// submissions re-attached to instead; Reused, instances skipped
	// because their completion marker existed.
	Submitted int64
	Attached  int64
	Reused    int64
}

type counters struct {
	polls, sbatch, squeue, sacct, scancel, submitted, attached, reused atomic.Int64
}

// Stats returns the counts so far.
func (r *Runner) Stats() Stats {
	c := &r.stats
	return Stats{
		Polls: c.polls.Load(), Sbatch: c.sbatch.Load(), Squeue: c.squeue.Load(), Sacct: c.sacct.Load(),
		Scancel: c.scancel.Load(), Submitted: c.submitted.Load(), Attached: c.attached.Load(), Reused: c.reused.Load(),
	}
}

// cmdError is a SLURM command that failed, with what it printed.
type cmdError struct {
	cmd    string
	err    error
	stderr string
}

func (e *cmdError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		return fmt.Sprintf("%s: %v", e.cmd, e.err)
	}
	return fmt.Sprintf("%s: %v: %s", e.cmd, e.err, msg)
}

func (e *cmdError) Unwrap() error { return e.err }

// command runs one SLURM command and returns its stdout.
func (r *Runner) command(ctx context.Context, name string, args ...string) (string, error) {
	switch name {
	case "sbatch":
		r.stats.sbatch.Add(1)
	case "squeue":
		r.stats.squeue.Add(1)
	case "sacct":
		r.stats.sacct.Add(1)
	case "scancel":
		r.stats.scancel.Add(1)
	}
	cmd := exec.CommandContext(ctx, r.bin[name], args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return stdout.String(), &cmdError{cmd: name, err: err, stderr: stderr.String()}
	}
	return stdout.String(), nil
}

// query asks SLURM for the state of every task of the given array jobs:
// one squeue call, and one sacct call for the jobs squeue no longer lists
// (finished longer ago than MinJobAge) when accounting is enabled.
func (r *Runner) query(ctx context.Context, jobs []string) (map[taskKey]taskStatus, error) {
	out, err := r.command(ctx, "squeue", "-h", "-r", "-t", "all", "-j", strings.Join(jobs, ","), "-O", squeueFormat)
	if err != nil {
		// Every id unknown to the controller (all purged) is an error
		// for squeue, not an empty answer.
		var ce *cmdError
		if !errors.As(err, &ce) || !strings.Contains(ce.stderr, "Invalid job id") {
			return nil, err
		}
		out = ""
	}
	st, err := parseSqueue(out)
	if err != nil {
		return nil, err
	}
	present := make(map[string]bool)
	for k := range st {
		present[k.job] = true
	}
	var gone []string
	for _, j := range jobs {
		if !present[j] {
			gone = append(gone, j)
		}
	}
	if len(gone) == 0 || r.noSacct.Load() {
		return st, nil
	}
	out, err = r.command(ctx, "sacct", "-n", "-P", "-X", "-j", strings.Join(gone, ","), "-o", sacctFormat)
	if err != nil {
		var ce *cmdError
		if errors.As(err, &ce) && strings.Contains(strings.ToLower(ce.stderr), "accounting storage is disabled") {
			r.noSacct.Store(true)
			r.log.Info("slurm: accounting is disabled; jobs that left squeue are judged by their completion markers")
			return st, nil
		}
		r.log.Warn("slurm: sacct failed", "err", err)
		return st, nil
	}
	acct, err := parseSacct(out)
	if err != nil {
		r.log.Warn("slurm: sacct output", "err", err)
		return st, nil
	}
	for k, v := range acct {
		if _, ok := st[k]; !ok {
			st[k] = v
		}
	}
	return st, nil
}

// scancel cancels jobs (array job ids: all their tasks), even when ctx
// is already done.
func (r *Runner) scancel(ctx context.Context, jobs []string) error {
	if len(jobs) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	r.log.Info("slurm: cancelling", "jobs", jobs)
	_, err := r.command(cctx, "scancel", jobs...)
	return err
}

// watch is the tracker's view of one Submit: the tasks it waits for.
type watch struct {
	doneDir string
	tasks   map[taskKey]*InstanceResult
	missing map[taskKey]int // consecutive polls a task was absent
	left    int             // tasks not yet terminal
	changed chan struct{}   // signalled (buffered 1) after a poll that changed something
	err     error           // set when polling failed for good
}

// track registers w with the tracker, starting its poll loop if needed.
func (r *Runner) track(w *watch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watches[w] = true
	if !r.polling {
		r.polling = true
		go r.pollLoop()
		return
	}
	signal(r.pollWake) // a new watch: poll within the minimum interval
}

func (r *Runner) untrack(w *watch) {
	r.mu.Lock()
	delete(r.watches, w)
	r.mu.Unlock()
}

// maxPollErrors is how many polls in a row may fail before the tracked
// Submits fail (their jobs are left running: a resume re-attaches).
const maxPollErrors = 10

func (r *Runner) pollLoop() {
	interval := r.minPoll
	failures := 0
	timer := time.NewTimer(interval)
	defer timer.Stop()
	next := time.Now().Add(interval)
	for {
		select {
		case <-timer.C:
		case <-r.pollWake:
			interval = r.minPoll
			if time.Until(next) > interval {
				timer.Reset(interval)
				next = time.Now().Add(interval)
			}
			continue
		}
		r.mu.Lock()
		jobSet := map[string]bool{}
		for w := range r.watches {
			for k, ir := range w.tasks {
				if !ir.State.Terminal() {
					jobSet[k.job] = true
				}
			}
		}
		if len(jobSet) == 0 {
			r.polling = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		jobs := slices.Sorted(maps.Keys(jobSet))
		r.stats.polls.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		st, err := r.query(ctx, jobs)
		cancel()
		changed := false
		r.mu.Lock()
		if err != nil {
			failures++
			r.log.Warn("slurm: poll failed", "err", err, "failures", failures)
			if failures >= maxPollErrors {
				for w := range r.watches {
					w.err = fmt.Errorf("slurm: %d polls in a row failed: %w", failures, err)
					signal(w.changed)
				}
			}
		} else {
			failures = 0
			for w := range r.watches {
				if w.apply(st, r.lostPoll) {
					changed = true
					signal(w.changed)
				}
			}
		}
		r.mu.Unlock()
		if changed {
			interval = r.minPoll
		} else {
			interval = min(time.Duration(float64(interval)*r.factor), r.maxPoll)
		}
		r.log.Debug("slurm: poll", "jobs", len(jobs), "changed", changed, "next", interval)
		timer.Reset(interval)
		next = time.Now().Add(interval)
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// apply updates w's tasks from one poll's answer and reports whether
// anything changed. A task absent from the answer is complete when its
// marker exists, and lost after lostAfter polls in a row without it.
func (w *watch) apply(st map[taskKey]taskStatus, lostAfter int) bool {
	changed := false
	for k, ir := range w.tasks {
		if ir.State.Terminal() {
			continue
		}
		s, ok := st[k]
		if !ok {
			if fileExists(filepath.Join(w.doneDir, ir.marker)) {
				s = taskStatus{State: StateCompleted}
			} else {
				w.missing[k]++
				if w.missing[k] < lostAfter {
					continue
				}
				s = taskStatus{State: StateLost, Reason: "the task left SLURM's queue with no final state and no completion marker"}
			}
		}
		delete(w.missing, k)
		if s.State == ir.State && s.Reason == ir.Reason {
			continue
		}
		changed = true
		ir.State, ir.ExitCode, ir.Signal, ir.Reason = s.State, s.ExitCode, s.Signal, s.Reason
		if ir.State.Terminal() {
			w.left--
		}
	}
	return changed
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
