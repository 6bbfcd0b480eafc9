package gotool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lacuna-dev/lacuna/runners/modfetch"
)

// Built is a batch of units compiled into test binaries and not yet run:
// each unit then runs alone, in a process of its own (Run), so that no
// unit's exit, crash, leftover goroutine or global state reaches
// another's. Its methods are safe for concurrent use; Close ends it.
type Built struct {
	Units []BuiltUnit // by unit index

	batch  *batch
	exec   string   // the sandbox wrapper
	execFD string   // the wrapper for programs handed descriptors
	env    []string // the wrapper's environment (the go command's)
}

// BuiltUnit is one unit of a Built batch.
type BuiltUnit struct {
	// CompileError holds the compiler's messages about this unit's file
	// (as UnitResult.CompileError); the unit then has no Binary.
	CompileError string
	Binary       string // the test binary holding the unit's test
	Test         string // the test function to run: UnitName("Test", i)
}

// BuildBatch compiles units as RunBatch does (the same packages, and a
// unit that does not parse or compile set aside with its compiler
// messages, costing only itself) with `go test -c`, and runs nothing:
// unit i's test is then run alone with Run(ctx, i, ...). The go command
// runs under opts.Sandbox's tool limits, within opts.Wall (a build that
// runs out of it sets aside every unit it had not built); opts.Exec is
// the wrapper Run runs the binaries through; opts.Timeout and
// opts.Output do not apply. Close the result to remove its files.
func (t *Toolchain) BuildBatch(ctx context.Context, mod *modfetch.Module, units []Unit, opts BatchOptions) (*Built, error) {
	if opts.Exec == "" {
		return nil, errors.New("gotool: no sandbox wrapper to run the test binaries through")
	}
	b, err := t.newBatch(ctx, mod, units, opts.WorkDir, opts.Offline)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(b.work, "bin")
	binary := func(dir string) string { return filepath.Join(bin, filepath.Base(dir)+".test") }
	compile := func(dirs []string) (map[string]string, bool, error) {
		for _, d := range dirs {
			os.Remove(binary(d))
		}
		topts := opts.TestOptions
		topts.Packages = dirs
		run, err := t.compileTests(ctx, b.work, bin, topts)
		if err != nil {
			return nil, false, err
		}
		if run.TimedOut {
			return nil, true, nil
		}
		// A package whose dependency did not compile has no binary and no
		// build error of its own: it gets its dependencies' errors.
		var deps []string
		mine := map[string]bool{}
		for _, d := range dirs {
			mine[importPath(filepath.Base(d))] = true
		}
		for ip, msg := range run.BuildErrors {
			if !mine[ip] {
				deps = append(deps, msg)
			}
		}
		failed := map[string]string{}
		for _, d := range dirs {
			if _, err := os.Stat(binary(d)); err == nil {
				continue
			}
			ip := importPath(filepath.Base(d))
			msg, ok := run.BuildErrors[ip]
			if !ok {
				msg = strings.Join(deps, "")
			}
			if msg == "" {
				msg = "the go command made no test binary and said nothing about it"
			}
			failed[ip] = msg
		}
		return failed, false, nil
	}
	res := &Built{Units: make([]BuiltUnit, len(units)), batch: b, exec: opts.Exec, execFD: opts.ExecFD, env: t.Env()}
	record := func(p *pkg) ([]int, error) {
		for _, i := range p.members {
			res.Units[i].Binary = binary(p.dir)
		}
		return nil, nil
	}
	timedOut, err := b.rounds(compile, record)
	if err != nil {
		b.close()
		return nil, err
	}
	for _, i := range timedOut {
		b.compileError[i] = "the build ran out of its wall clock"
	}
	for i := range res.Units {
		res.Units[i].Test = UnitName("Test", i)
		if msg := b.compileError[i]; msg != "" {
			res.Units[i] = BuiltUnit{CompileError: msg, Test: res.Units[i].Test}
		}
	}
	return res, nil
}

// Close removes the binaries and the generated module, unless
// Options.KeepWork. No Run may be in progress.
func (b *Built) Close() error { return b.batch.close() }

// RunOptions configure one Run.
type RunOptions struct {
	Wall   time.Duration // default 60 s; the whole sandbox is killed at it
	Output int           // bytes of merged stdout and stderr kept; default 64 KiB
	// ExtraFiles are inherited by the program as descriptors 7, 8, ...
	// (7 + index), an out-of-band channel its output cannot forge;
	// descriptors 3 to 6 are the sandbox wrapper's own. Run neither
	// reads nor closes them.
	ExtraFiles []*os.File
	Args       []string // more arguments for the test binary
}

// Process is how one Run ended.
type Process struct {
	Output    string // merged stdout and stderr, at most RunOptions.Output bytes
	Truncated bool   // the output went past RunOptions.Output and was cut
	ExitCode  int    // -1 when killed by a signal (the wall clock)
	TimedOut  bool   // the wall clock ran out and the sandbox was killed
	Seconds   float64
}

// extraFD is the descriptor RunOptions.ExtraFiles[0] becomes.
const extraFD = 7

// Run runs unit i's test alone, `BINARY -test.paniconexit0
// -test.run=^TEST$ ARGS...`, in a
// process of its own through the sandbox wrapper, and waits for it. The
// process group it starts (and with bubblewrap the whole sandbox) is
// killed at ro.Wall or when ctx ends; a program that leaves its process
// group escapes that kill only without bubblewrap. Run returns ctx's
// error when ctx ended it, and an error when unit i has no binary.
// Whether the test ran at all (a unit without the test function passes
// with "no tests to run") is for the caller to check, out of band.
//
// ro.ExtraFiles stay open in every process of the sandbox until they
// all end: read their other ends concurrently with Run (a pipe holds
// 64 KiB), and stop reading when Run returns.
func (b *Built) Run(ctx context.Context, i int, ro RunOptions) (*Process, error) {
	if i < 0 || i >= len(b.Units) {
		return nil, fmt.Errorf("gotool: no unit %d in a batch of %d", i, len(b.Units))
	}
	u := b.Units[i]
	if u.Binary == "" {
		return nil, fmt.Errorf("gotool: unit %d has no test binary: it did not compile", i)
	}
	// -test.paniconexit0, as go test does: a test that calls os.Exit(0)
	// fails instead of passing silently.
	ro.Args = append([]string{"-test.paniconexit0", "-test.run=^" + u.Test + "$"}, ro.Args...)
	p, err := b.Exec(ctx, u.Binary, ro)
	if err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("gotool: run unit %d: %w", i, err)
	}
	return p, err
}

// Exec runs one of the batch's test binaries, `BINARY ARGS...` with
// ro.Args, through the sandbox wrapper, as Run does a unit's test: for a
// caller that drives the binary itself (a supervisor mode of its own).
// Safe for concurrent use.
func (b *Built) Exec(ctx context.Context, binary string, ro RunOptions) (*Process, error) {
	if ro.Wall <= 0 {
		ro.Wall = 60 * time.Second
	}
	if ro.Output <= 0 {
		ro.Output = 64 << 10
	}
	runCtx, cancel := context.WithTimeout(ctx, ro.Wall)
	defer cancel()
	wrapper := b.exec
	if len(ro.ExtraFiles) > 0 && b.execFD != "" {
		// Descriptors only the program may hold: no shell in between.
		wrapper = b.execFD
	}
	cmd := exec.CommandContext(runCtx, wrapper, append([]string{binary}, ro.Args...)...)
	cmd.Dir = b.batch.work
	cmd.Env = b.env
	// nil entries: descriptors 3 to 6 are closed in the wrapper.
	cmd.ExtraFiles = append(make([]*os.File, extraFD-3), ro.ExtraFiles...)
	out := &outputCap{limit: ro.Output}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Run()
	p := &Process{Seconds: time.Since(start).Seconds(), Output: out.buf.String(), Truncated: out.over}
	if cmd.Process != nil {
		// Whatever the program left in its group goes too.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	p.TimedOut = errors.Is(runCtx.Err(), context.DeadlineExceeded)
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		p.ExitCode = ee.ExitCode()
	case errors.Is(err, exec.ErrWaitDelay):
		p.ExitCode = cmd.ProcessState.ExitCode()
	case p.TimedOut:
		p.ExitCode = -1
	default:
		return nil, err
	}
	return p, nil
}

// RunAll runs the units idx, each alone with Run and the options opts(i),
// at most parallel (default 1) at a time, and calls done(i, p, err) as
// each ends, from RunAll's goroutines: done calls may be concurrent.
// When ctx ends, the units not yet started end with ctx's error. RunAll
// returns when every done has returned.
func (b *Built) RunAll(ctx context.Context, idx []int, parallel int, opts func(i int) RunOptions, done func(i int, p *Process, err error)) {
	if parallel < 1 {
		parallel = 1
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(parallel, len(idx)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := ctx.Err(); err != nil {
					done(i, nil, err)
					continue
				}
				p, err := b.Run(ctx, i, opts(i))
				done(i, p, err)
			}
		}()
	}
	for _, i := range idx {
		next <- i
	}
	close(next)
	wg.Wait()
}

// outputCap keeps the first limit bytes written to it.
type outputCap struct {
	buf   strings.Builder
	limit int
	over  bool
}

func (c *outputCap) Write(p []byte) (int, error) {
	if room := c.limit - c.buf.Len(); room < len(p) {
		c.buf.Write(p[:max(room, 0)])
		c.over = true
		return len(p), nil
	}
	return c.buf.Write(p)
}
