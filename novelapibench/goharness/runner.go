package goharness

import (
	"context"
	"errors"
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
	Build     float64 // seconds compiling
	Run       float64 // seconds running the processes
}

// RunWall bounds one harness process: its runs of the scenario, each
// bounded at 10 s inside, and the sandbox's start.
const RunWall = 3 * time.Minute

// RunUnits compiles harness units in one batched build and runs every
// one in a process of its own, from its package's shared test binary,
// through the sandbox (opts.Exec), parallel at a time, each with its own
// Channel (files in dir). No unit's crash, exit, hang, leftover
// goroutines or global state can reach another's record. The error is
// for the batch (the build could not run, ctx ended); what went wrong
// with one unit is in its UnitRun.
func RunUnits(ctx context.Context, tc *gotool.Toolchain, mod *modfetch.Module, units []gotool.Unit, opts gotool.BatchOptions, dir string, parallel int) ([]UnitRun, RunStats, error) {
	out := make([]UnitRun, len(units))
	stats := RunStats{Units: len(units)}
	start := time.Now()
	built, err := tc.BuildBatch(ctx, mod, units, opts)
	if err != nil {
		return nil, stats, err
	}
	stats.Build = time.Since(start).Seconds()
	defer built.Close()
	var idx []int
	for i, u := range built.Units {
		if u.CompileError != "" {
			out[i].CompileError = u.CompileError
			continue
		}
		idx = append(idx, i)
	}
	channels := make([]*Channel, len(units))
	var setup error
	for _, i := range idx {
		if channels[i], err = NewChannel(dir); err != nil {
			setup = err
			break
		}
	}
	defer func() {
		for _, c := range channels {
			if c != nil {
				c.Close()
			}
		}
	}()
	if setup != nil {
		return nil, stats, setup
	}
	start = time.Now()
	stats.Processes = len(idx)
	errs := make([]error, len(units))
	built.RunAll(ctx, idx, parallel, func(i int) gotool.RunOptions {
		return gotool.RunOptions{Wall: RunWall, ExtraFiles: channels[i].Files()}
	}, func(i int, p *gotool.Process, err error) {
		if err != nil {
			errs[i] = err
			return
		}
		out[i].Process = p
		out[i].Record, out[i].Err = channels[i].Record(i)
	})
	stats.Run = time.Since(start).Seconds()
	if err := errors.Join(errs...); err != nil {
		return nil, stats, err
	}
	return out, stats, nil
}
