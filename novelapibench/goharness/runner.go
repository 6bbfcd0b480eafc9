package goharness

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lacuna-dev/lacuna/runners/gotool"
	"github.com/lacuna-dev/lacuna/runners/modfetch"
)

// UnitRun is what running one harness unit gave.
type UnitRun struct {
	// CompileError: the unit did not compile (nothing ran).
	CompileError string
	// Record is the harness's record; nil when Err says why there is none.
	Record *Record
	// Err is ErrNoRecord (the process crashed, exited or hung: Process
	// says how) or ErrTampered.
	Err     error
	Process *gotool.Process
}

// RunStats say where a batch's time went.
type RunStats struct {
	Units     int     // harness units
	Processes int     // processes run: one per variant of a unit that compiled
	Sandboxes int     // sandboxes started to run them
	Build     float64 // seconds compiling
	Run       float64 // seconds running the processes
}

// RunConfig configures RunUnits.
type RunConfig struct {
	Dir      string // where channel files go (they are unlinked at once)
	Parallel int    // sandboxes at a time; default 1
	// Supervise runs the processes of a test binary in chunks, a chunk in
	// one sandbox under the supervisor (internal/supervisor): each
	// process still a fresh one, started one at a time, the sandbox reset
	// in between (leftover processes killed, /work emptied), which spares
	// a sandbox's start per process. It needs bubblewrap (the supervisor
	// refuses to run outside its process namespace): without it, every
	// process gets a sandbox of its own.
	Supervise bool
	// UnitWall bounds one harness process; default UnitWall.
	UnitWall time.Duration
	// Done, when set, is told how many units finished, as they finish:
	// those that did not compile once the build ends, then each unit once
	// all its processes have run. It may be called from several
	// goroutines at once; the counts add up to the number of units when
	// RunUnits returns without an error. For progress displays.
	Done func(units int)
}

const (
	// UnitWall bounds one harness process: its runs of the scenario, each
	// bounded at 10 s inside, stop at the first that times out.
	UnitWall = 60 * time.Second
	// superviseChunk is how many units one supervised sandbox runs (each
	// in a process per variant): a chunk is a unit of parallel work and
	// of what a process that kills its supervisor can cost (the rest of
	// the chunk runs again, process by process).
	superviseChunk = 32
)

// job is one process: a unit's variant.
type job struct {
	unit    int
	variant byte
}

// jobRun is what one process gave.
type jobRun struct {
	record  *Record
	err     error
	process *gotool.Process
}

// RunUnits compiles harness units in one batched build and runs each of
// a unit's variants in a process of its own, from its package's shared
// test binary, in the sandbox (opts.Exec), cfg.Parallel sandboxes at a
// time, and joins a unit's variants into one Record. No process's crash,
// exit, hang, leftover goroutines or processes, files or global state
// can reach another's record, another unit's or another variant's of the
// same unit. The error is for the batch (the build could not run, ctx
// ended); what went wrong with one unit is in its UnitRun.
func RunUnits(ctx context.Context, tc *gotool.Toolchain, mod *modfetch.Module, units []Unit, opts gotool.BatchOptions, cfg RunConfig) ([]UnitRun, RunStats, error) {
	out := make([]UnitRun, len(units))
	stats := RunStats{Units: len(units)}
	if cfg.UnitWall <= 0 {
		cfg.UnitWall = UnitWall
	}
	start := time.Now()
	plain := make([]gotool.Unit, len(units))
	for i, u := range units {
		plain[i] = u.Unit
	}
	built, err := tc.BuildBatch(ctx, mod, plain, opts)
	if err != nil {
		return nil, stats, err
	}
	defer built.Close()
	stats.Build = time.Since(start).Seconds()
	start = time.Now()
	byBinary := map[string][]job{}
	var binaries []string
	runs := map[job]*jobRun{}
	left := make([]atomic.Int32, len(units)) // a unit's processes yet to run
	notBuilt := 0
	for i, u := range built.Units {
		if u.CompileError != "" {
			out[i].CompileError = u.CompileError
			notBuilt++
			continue
		}
		if byBinary[u.Binary] == nil {
			binaries = append(binaries, u.Binary)
		}
		for _, v := range []byte(units[i].variants()) {
			byBinary[u.Binary] = append(byBinary[u.Binary], job{i, v})
			runs[job{i, v}] = &jobRun{}
			left[i].Add(1)
			stats.Processes++
		}
	}
	done := func(n int) {
		if cfg.Done != nil && n > 0 {
			cfg.Done(n)
		}
	}
	ran := func(jobs ...job) {
		n := 0
		for _, j := range jobs {
			if left[j.unit].Add(-1) == 0 {
				n++
			}
		}
		done(n)
	}
	done(notBuilt)
	var alone []job // processes to run in a sandbox of their own
	if cfg.Supervise {
		var chunks [][]job
		for _, bin := range binaries {
			jobs := byBinary[bin]
			for len(jobs) > 0 {
				n, seen := 0, map[int]bool{}
				for n < len(jobs) && (len(seen) < superviseChunk || seen[jobs[n].unit]) {
					seen[jobs[n].unit] = true
					n++
				}
				chunks = append(chunks, jobs[:n])
				jobs = jobs[n:]
			}
		}
		var mu sync.Mutex
		errs := parallel(len(chunks), cfg.Parallel, func(k int) error {
			missing, err := supervise(ctx, built, chunks[k], cfg.Dir, cfg.UnitWall, runs)
			if err == nil {
				ran(without(chunks[k], missing)...)
			}
			mu.Lock()
			alone = append(alone, missing...)
			stats.Sandboxes++
			mu.Unlock()
			return err
		})
		if err := errors.Join(errs...); err != nil {
			return nil, stats, err
		}
	} else {
		for _, bin := range binaries {
			alone = append(alone, byBinary[bin]...)
		}
	}
	errs := parallel(len(alone), cfg.Parallel, func(k int) error {
		j := alone[k]
		ch, err := NewChannel(cfg.Dir, j.variant)
		if err != nil {
			return err
		}
		defer ch.Close()
		p, err := built.Run(ctx, j.unit, gotool.RunOptions{Wall: cfg.UnitWall + 30*time.Second, ExtraFiles: ch.Files()})
		if err != nil {
			return err
		}
		r := runs[j]
		r.process = p
		r.record, r.err = ch.Record(j.unit)
		ran(j)
		return nil
	})
	stats.Sandboxes += len(alone)
	stats.Run = time.Since(start).Seconds()
	if err := errors.Join(errs...); err != nil {
		return nil, stats, err
	}
	for i := range out {
		if out[i].CompileError == "" {
			out[i] = join(i, units[i].variants(), runs)
		}
	}
	return out, stats, nil
}

// without is jobs less those in drop.
func without(jobs, drop []job) []job {
	if len(drop) == 0 {
		return jobs
	}
	skip := map[job]bool{}
	for _, j := range drop {
		skip[j] = true
	}
	var out []job
	for _, j := range jobs {
		if !skip[j] {
			out = append(out, j)
		}
	}
	return out
}

// join makes a unit's run of its variants' processes: the normal
// variant's record and process, with the other variants' observations.
// A record that fails authentication in any variant makes the unit's
// ErrTampered; another variant's process that wrote no record is an
// observation of that variant saying so (Observation.Lost).
func join(unit int, variants string, runs map[job]*jobRun) UnitRun {
	n := runs[job{unit, VariantNormal}]
	u := UnitRun{Record: n.record, Err: n.err, Process: n.process}
	for _, v := range []byte(variants) {
		r := runs[job{unit, v}]
		if errors.Is(r.err, ErrTampered) {
			u.Record, u.Err = nil, r.err
			return u
		}
		if v == VariantNormal {
			continue
		}
		if u.Process != nil && r.process != nil {
			u.Process.Seconds += r.process.Seconds
		}
		if u.Record == nil {
			continue
		}
		var obs []Observation
		var runs int
		switch {
		case r.record != nil && v == VariantSubstituted:
			obs, runs = r.record.Substituted, r.record.SubstitutedRuns
		case r.record != nil:
			obs, runs = r.record.Perturbed, r.record.PerturbedRuns
		default:
			lost := Observation{Lost: "its process ended without a record"}
			if r.err != nil {
				lost.Lost = r.err.Error()
			}
			if r.process != nil {
				lost.TimedOut = r.process.TimedOut
				lost.Lost += fmt.Sprintf(" (exit %d): %s", r.process.ExitCode, cut(r.process.Output, 2000))
			}
			obs, runs = []Observation{lost}, 1
		}
		if v == VariantSubstituted {
			u.Record.Substituted, u.Record.SubstitutedRuns = obs, runs
		} else {
			u.Record.Perturbed, u.Record.PerturbedRuns = obs, runs
		}
	}
	return u
}

// parallel calls f(0..n-1), at most p at a time, and returns their
// errors.
func parallel(n, p int, f func(k int) error) []error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(max(p, 1), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				errs[k] = f(k)
			}
		}()
	}
	for k := range n {
		next <- k
	}
	close(next)
	wg.Wait()
	return errs
}

// supervisedResult is the supervisor's line for one process
// (internal/supervisor's lacunaResult).
type supervisedResult struct {
	Unit     int     `json:"unit"`
	Variant  string  `json:"variant"`
	Exit     int     `json:"exit"`
	TimedOut bool    `json:"timed_out"`
	Seconds  float64 `json:"seconds"`
	Output   string  `json:"output"`
	Record   string  `json:"record"` // hex
}

// supervise runs jobs (of one binary) in one sandbox under the
// supervisor and fills their runs; it returns the jobs it has no result
// for (the supervisor died before reaching them), to run alone.
func supervise(ctx context.Context, built *gotool.Built, jobs []job, dir string, unitWall time.Duration, runs map[job]*jobRun) (missing []job, err error) {
	control, err := tempUnlinked(dir, "control-")
	if err != nil {
		return nil, err
	}
	defer control.Close()
	results, err := tempUnlinked(dir, "results-")
	if err != nil {
		return nil, err
	}
	defer results.Close()
	keys := map[job][]byte{}
	w := bufio.NewWriter(control)
	for _, j := range jobs {
		if keys[j], err = newKey(); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "%d %c %s\n", j.unit, j.variant, hex.EncodeToString(keys[j]))
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	if _, err := control.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	// The supervisor reports a process at least every unitWall: one that
	// stops longer (a unit stopped it with SIGSTOP) is killed, and the
	// processes it did not report run again alone.
	run, stalled := context.WithCancel(ctx)
	defer stalled()
	go func() {
		last, since := int64(-1), time.Now()
		for run.Err() == nil {
			time.Sleep(time.Second)
			if fi, err := results.Stat(); err == nil && fi.Size() != last {
				last, since = fi.Size(), time.Now()
			} else if time.Since(since) > unitWall+10*time.Second {
				stalled()
			}
		}
	}()
	wall := time.Duration(len(jobs))*unitWall + 30*time.Second
	_, err = built.Exec(run, built.Units[jobs[0].unit].Binary, gotool.RunOptions{
		Wall: wall, ExtraFiles: []*os.File{control, results}, Args: []string{SuperviseArg, unitWall.String()}})
	stalled()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return nil, err
	}
	if _, err := results.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	got := map[job]bool{}
	sc := bufio.NewScanner(io.LimitReader(results, int64(len(jobs))*(maxRecord+(1<<20))))
	sc.Buffer(nil, 2*maxRecord)
	for sc.Scan() {
		var r supervisedResult
		if json.Unmarshal(sc.Bytes(), &r) != nil || len(r.Variant) != 1 {
			break // a line cut short: the supervisor died writing it
		}
		j := job{r.Unit, r.Variant[0]}
		if keys[j] == nil || got[j] {
			break
		}
		got[j] = true
		jr := runs[j]
		jr.process = &gotool.Process{Output: r.Output, ExitCode: r.Exit, TimedOut: r.TimedOut, Seconds: r.Seconds}
		if record, err := hex.DecodeString(r.Record); err != nil {
			jr.err = ErrTampered
		} else {
			jr.record, jr.err = ReadRecord(keys[j], record, r.Unit, j.variant)
		}
	}
	for _, j := range jobs {
		if !got[j] {
			missing = append(missing, j)
		}
	}
	return missing, nil
}
