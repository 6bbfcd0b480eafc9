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
	Processes int     // units that ran (the others did not compile)
	Sandboxes int     // sandboxes started to run them
	Build     float64 // seconds compiling
	Run       float64 // seconds running the processes
}

// RunConfig configures RunUnits.
type RunConfig struct {
	Dir      string // where channel files go (they are unlinked at once)
	Parallel int    // sandboxes at a time; default 1
	// Supervise runs the units of a test binary in chunks, a chunk in one
	// sandbox under the supervisor (internal/supervisor): each unit still
	// in a fresh process of its own, started one at a time, the sandbox
	// reset in between (leftover processes killed, /work emptied), which
	// spares a sandbox's start per unit. It needs bubblewrap (the
	// supervisor refuses to run outside its process namespace): without
	// it, every unit gets a sandbox of its own.
	Supervise bool
	// UnitWall bounds one harness process; default UnitWall.
	UnitWall time.Duration
}

const (
	// UnitWall bounds one harness process: its runs of the scenario, each
	// bounded at 10 s inside, stop at the first that times out.
	UnitWall = 60 * time.Second
	// superviseChunk is how many units one supervised sandbox runs: a
	// chunk is a unit of parallel work and of what a unit that kills its
	// supervisor can cost (the rest of the chunk runs again, unit by
	// unit).
	superviseChunk = 32
)

// RunUnits compiles harness units in one batched build and runs every
// one in a process of its own, from its package's shared test binary, in
// the sandbox (opts.Exec), cfg.Parallel sandboxes at a time. No unit's
// crash, exit, hang, leftover goroutines or processes, files or global
// state can reach another's record. The error is for the batch (the
// build could not run, ctx ended); what went wrong with one unit is in
// its UnitRun.
func RunUnits(ctx context.Context, tc *gotool.Toolchain, mod *modfetch.Module, units []gotool.Unit, opts gotool.BatchOptions, cfg RunConfig) ([]UnitRun, RunStats, error) {
	out := make([]UnitRun, len(units))
	stats := RunStats{Units: len(units)}
	if cfg.UnitWall <= 0 {
		cfg.UnitWall = UnitWall
	}
	start := time.Now()
	built, err := tc.BuildBatch(ctx, mod, units, opts)
	if err != nil {
		return nil, stats, err
	}
	defer built.Close()
	stats.Build = time.Since(start).Seconds()
	start = time.Now()
	byBinary := map[string][]int{}
	var binaries []string
	for i, u := range built.Units {
		if u.CompileError != "" {
			out[i].CompileError = u.CompileError
			continue
		}
		stats.Processes++
		if byBinary[u.Binary] == nil {
			binaries = append(binaries, u.Binary)
		}
		byBinary[u.Binary] = append(byBinary[u.Binary], i)
	}
	var alone []int // units to run in a sandbox of their own
	if cfg.Supervise {
		var chunks [][]int
		for _, bin := range binaries {
			idx := byBinary[bin]
			for len(idx) > 0 {
				n := min(superviseChunk, len(idx))
				chunks = append(chunks, idx[:n])
				idx = idx[n:]
			}
		}
		var mu sync.Mutex
		errs := parallel(len(chunks), cfg.Parallel, func(k int) error {
			missing, err := supervise(ctx, built, chunks[k], cfg.Dir, cfg.UnitWall, out)
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
		i := alone[k]
		ch, err := NewChannel(cfg.Dir)
		if err != nil {
			return err
		}
		defer ch.Close()
		p, err := built.Run(ctx, i, gotool.RunOptions{Wall: cfg.UnitWall + 30*time.Second, ExtraFiles: ch.Files()})
		if err != nil {
			return err
		}
		out[i].Process = p
		out[i].Record, out[i].Err = ch.Record(i)
		return nil
	})
	stats.Sandboxes += len(alone)
	stats.Run = time.Since(start).Seconds()
	if err := errors.Join(errs...); err != nil {
		return nil, stats, err
	}
	return out, stats, nil
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

// supervisedResult is the supervisor's line for one unit
// (internal/supervisor's lacunaResult).
type supervisedResult struct {
	Unit     int     `json:"unit"`
	Exit     int     `json:"exit"`
	TimedOut bool    `json:"timed_out"`
	Seconds  float64 `json:"seconds"`
	Output   string  `json:"output"`
	Record   string  `json:"record"` // hex
}

// supervise runs units (of one binary) in one sandbox under the
// supervisor and fills their runs in out; it returns the units it has no
// result for (the supervisor died before reaching them), to run alone.
func supervise(ctx context.Context, built *gotool.Built, units []int, dir string, unitWall time.Duration, out []UnitRun) (missing []int, err error) {
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
	keys := map[int][]byte{}
	w := bufio.NewWriter(control)
	for _, i := range units {
		if keys[i], err = newKey(); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "%d %s\n", i, hex.EncodeToString(keys[i]))
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	if _, err := control.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	// The supervisor reports a unit at least every unitWall: one that stops
	// longer (a unit stopped it with SIGSTOP) is killed, and the units it
	// did not report run again alone.
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
	wall := time.Duration(len(units))*unitWall + 30*time.Second
	_, err = built.Exec(run, built.Units[units[0]].Binary, gotool.RunOptions{
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
	got := map[int]bool{}
	sc := bufio.NewScanner(io.LimitReader(results, int64(len(units))*(maxRecord+(1<<20))))
	sc.Buffer(nil, 2*maxRecord)
	for sc.Scan() {
		var r supervisedResult
		if json.Unmarshal(sc.Bytes(), &r) != nil || keys[r.Unit] == nil || got[r.Unit] {
			break // a line cut short: the supervisor died writing it
		}
		got[r.Unit] = true
		u := &out[r.Unit]
		u.Process = &gotool.Process{Output: r.Output, ExitCode: r.Exit, TimedOut: r.TimedOut, Seconds: r.Seconds}
		if record, err := hex.DecodeString(r.Record); err != nil {
			u.Err = ErrTampered
		} else {
			u.Record, u.Err = ReadRecord(keys[r.Unit], record, r.Unit)
		}
	}
	for _, i := range units {
		if !got[i] {
			missing = append(missing, i)
		}
	}
	return missing, nil
}
