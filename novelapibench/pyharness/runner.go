package pyharness

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

//go:embed driver.py
var driverSource string

// DriverSource is the embedded driver every sample runs under; callers
// that cache verdicts put its digest in their key.
func DriverSource() string { return driverSource }

// SolutionFile is the file name the program (prelude and solution) is
// compiled under.
const SolutionFile = "<lacuna-solution>"

// Sample is one program to run: a task with a solution in place.
type Sample struct {
	Task     Task
	Solution string
}

// Runner runs samples, each in a sandboxed process of its own.
type Runner struct {
	python   string
	paths    []string
	sb       *sandbox.Sandbox
	lim      sandbox.Limits
	dir      string
	wrapper  string
	driver   string
	parallel int
}

// Config configures a Runner.
type Config struct {
	// Python is the interpreter (an environment's bin/python), at a path
	// that exists inside the sandbox: under /usr, or below one of
	// ReadOnly.
	Python string
	// Paths are directories put first on sys.path (a fixture package, a
	// target directory of installed packages).
	Paths []string
	// ReadOnly are the host paths mounted read-only: the environment, the
	// base interpreter's prefix (InterpreterMounts), Paths. When lacuna
	// runs as root, they and Python must be reachable by uid 65534 (NewRunner
	// checks).
	ReadOnly []string
	// Limits bound each of a sample's processes (a variant on one input);
	// Wall defaults to 60 s, of which the pass gets at most a half.
	Limits sandbox.Limits
	// Parallel is how many samples RunAll runs at once; default 1.
	Parallel int
	// Dir is where the runner keeps its driver and wrapper (a directory
	// of its own is made in it); default os.TempDir(). When lacuna runs
	// as root without bubblewrap, uid 65534 must be able to reach it.
	Dir string
}

// NewRunner writes the driver and the sandbox's wrapper into a directory
// of their own. Close removes it. A Runner is safe for concurrent use.
func NewRunner(sb *sandbox.Sandbox, cfg Config) (*Runner, error) {
	if cfg.Python == "" {
		return nil, errors.New("pyharness: no interpreter")
	}
	if cfg.Limits.Wall <= 0 {
		cfg.Limits.Wall = 60 * time.Second
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 1
	}
	if os.Geteuid() == 0 {
		for _, p := range append([]string{cfg.Python}, cfg.ReadOnly...) {
			if err := reachable(p); err != nil {
				return nil, err
			}
		}
	}
	dir, err := os.MkdirTemp(cfg.Dir, "lacuna-pyharness-")
	if err != nil {
		return nil, fmt.Errorf("pyharness: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pyharness: %w", err)
	}
	r := &Runner{python: cfg.Python, paths: cfg.Paths, sb: sb, lim: cfg.Limits, dir: dir, parallel: cfg.Parallel}
	r.driver = filepath.Join(dir, "driver.py")
	if err := os.WriteFile(r.driver, []byte("#!"+cfg.Python+" -I\n"+driverSource), 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pyharness: %w", err)
	}
	if r.wrapper, err = sb.ExecWrapperForDescriptors(dir, cfg.Limits, cfg.ReadOnly...); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pyharness: %w", err)
	}
	return r, nil
}

// reachable checks that uid 65534, which the sandbox runs programs as when
// lacuna runs as root, can traverse every directory above p: otherwise
// every sample would end without a record for a reason of the machine's.
func reachable(p string) error {
	abs, err := filepath.Abs(p)
	if err != nil {
		return fmt.Errorf("pyharness: %w", err)
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("pyharness: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("pyharness: %s cannot be reached by the sandbox's user (uid 65534): %s is mode %o", p, d, fi.Mode().Perm())
		}
		if d == "/" {
			return nil
		}
	}
}

// Close removes the runner's files.
func (r *Runner) Close() error { return os.RemoveAll(r.dir) }

// Run is what running one sample gave: its variants' processes joined.
type Run struct {
	// Record is the driver's records joined; nil when Problem says why
	// there is none.
	Record *Record
	// Problem: a process of the normal variant wrote no record (it
	// crashed, exited early, was killed or hung), or a process wrote a
	// record that failed authentication (Tampered).
	Problem  string
	Tampered bool
	ExitCode int
	TimedOut bool
	Output   string // what the normal variant's processes printed, stdout and stderr, cut at 64 KiB
}

// Record is what the driver reported, authenticated, a process per
// variant and input joined: the normal variant's on every input, then
// (when they all ran) the substituted variant's.
type Record struct {
	// Stage: "ran" (every process ran), "compile" (the program does not
	// compile), "load" (the environment or the target did not load: the
	// task's fault, not the solution's), "program" (the program's
	// module-level code raised), "timeout", "tampered" (the driver found
	// its data replaced by the solution): the first of the normal
	// variant's processes, in the inputs' order, that did not run.
	Stage string   `json:"stage"`
	Error *PyError `json:"error,omitempty"`
	// Patched is how many places the spy replaced the target at.
	Patched int `json:"patched"`
	// Direct counts the normal variant's calls of the target made from
	// the solution's own lines; Indirect all others (the library calling
	// itself, the prelude). SubstitutedDirect counts the substituted
	// variant's.
	Direct            int    `json:"direct"`
	Indirect          int    `json:"indirect"`
	SubstitutedDirect int    `json:"substituted_direct"`
	Calls             []Call `json:"calls"`
	// Args are, per input, the distinct argument tuples of the normal
	// variant's direct calls, sorted: each argument as "name=value" (bound to the
	// target's parameters, defaults applied; a callable is "callable"),
	// joined by "\x1f". ArgsFree is the same with every sequence's items
	// sorted. ArgsCut: more than 64 distinct tuples or 10,000 calls (then
	// they are not asserted).
	Args     [][]string `json:"args"`
	ArgsFree [][]string `json:"args_free"`
	ArgsCut  bool       `json:"args_cut"`
	// Real and Substituted are the outcomes of the solver function on
	// each input: with the target genuine, and with the solution's own
	// calls of it substituted (their results replaced by other values of
	// the same type and shape derived from them; see the package
	// documentation). Substituted is empty when the normal variant did
	// not run on every input.
	Real        []Outcome `json:"real"`
	Substituted []Outcome `json:"substituted,omitempty"`
}

// Call is the shape of one direct call: how many positional arguments,
// which keywords.
type Call struct {
	Args   int      `json:"args"`
	Kwargs []string `json:"kwargs"`
}

// Outcome is one call of the solver function: a value, or an exception;
// or, for the substituted variant, why its process gave none (Lost: it
// ended without a record, or timed out).
type Outcome struct {
	Value  json.RawMessage `json:"value,omitempty"`
	Raised *PyError        `json:"raised,omitempty"`
	Lost   string          `json:"lost,omitempty"`
}

// PyError describes a Python exception.
type PyError struct {
	Type       string `json:"type"`
	TypeModule string `json:"type_module"`
	Message    string `json:"message"`
	// Name is the exception's name attribute: the missing name of a
	// NameError, the module of an ImportError, the attribute of an
	// AttributeError.
	Name string `json:"name,omitempty"`
	// ObjModule is the module an AttributeError was raised on.
	ObjModule string `json:"obj_module,omitempty"`
	// File is the file of the innermost frame that raised it (the import
	// machinery's left out): SolutionFile for the program's own code.
	File      string `json:"file,omitempty"`
	Line      int    `json:"line,omitempty"`
	Traceback string `json:"traceback,omitempty"`
}

func (e *PyError) String() string {
	if e == nil {
		return ""
	}
	return e.Type + ": " + e.Message
}

type config struct {
	Program    string   `json:"program"`
	First      int      `json:"first"`
	Last       int      `json:"last"`
	Function   string   `json:"function"`
	Inputs     []string `json:"inputs"`
	Module     string   `json:"module"`
	QualName   string   `json:"qualname"`
	Modules    []string `json:"modules"`
	Paths      []string `json:"paths"`
	Timeout    float64  `json:"timeout"`
	Substitute bool     `json:"substitute"`
}

const (
	maxOutput = 64 << 10
	maxRecord = 16 << 20
)

// Run runs one sample: each variant (normal, substituted) on each of
// its task's inputs in a fresh sandboxed process of its own, so that no
// state (module globals, the environment, files, counters) tells the
// variants or the inputs apart. The error is only for what kept it from
// running at all.
func (r *Runner) Run(ctx context.Context, s Sample) (Run, error) {
	runs, err := r.RunAll(ctx, []Sample{s})
	if err != nil {
		return Run{}, err
	}
	return runs[0], nil
}

// process is what one process (a sample's variant on one input) gave.
type process struct {
	record   *Record
	problem  string
	tampered bool
	exitCode int
	timedOut bool
	output   string
}

// runProcess runs one variant of a sample on its input i in a fresh
// sandboxed process. The variant travels on stdin with the rest of the
// configuration, read to its end before any of the solution's code runs.
func (r *Runner) runProcess(ctx context.Context, s Sample, i int, substitute bool) (process, error) {
	prog, first, last := s.Task.Program(s.Solution)
	cfg, err := json.Marshal(config{
		Program: prog, First: first, Last: last, Function: s.Task.Function(), Inputs: []string{s.Task.Inputs[i]},
		Module: s.Task.Target.Module(), QualName: s.Task.Target.QualName(), Modules: s.Task.Target.modules(),
		Paths: r.paths, Timeout: (r.lim.Wall / 2).Seconds(), Substitute: substitute,
	})
	if err != nil {
		return process{}, fmt.Errorf("pyharness: %w", err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return process{}, fmt.Errorf("pyharness: key: %w", err)
	}
	keyR, keyW, err := os.Pipe()
	if err != nil {
		return process{}, fmt.Errorf("pyharness: %w", err)
	}
	defer keyR.Close()
	_, err = keyW.Write(key)
	keyW.Close()
	if err != nil {
		return process{}, fmt.Errorf("pyharness: key: %w", err)
	}
	recR, recW, err := os.Pipe()
	if err != nil {
		return process{}, fmt.Errorf("pyharness: %w", err)
	}
	defer recR.Close()
	runCtx, cancel := context.WithTimeout(ctx, r.lim.Wall)
	defer cancel()
	cmd := exec.CommandContext(runCtx, r.wrapper, r.driver)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Stdin = bytes.NewReader(cfg)
	out := &capped{limit: maxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, keyR, recW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		recW.Close()
		return process{}, fmt.Errorf("pyharness: start: %w", err)
	}
	keyR.Close()
	recW.Close()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(recR, maxRecord+1))
		got <- b
	}()
	waitErr := cmd.Wait()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	var data []byte
	select {
	case data = <-got:
	case <-time.After(2 * time.Second):
		recR.Close() // something left behind holds the record's pipe
		data = <-got
	}
	if ctx.Err() != nil {
		return process{}, ctx.Err()
	}
	p := process{exitCode: cmd.ProcessState.ExitCode(), timedOut: runCtx.Err() != nil, output: out.String()}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && !errors.Is(waitErr, exec.ErrWaitDelay) && !p.timedOut {
		return process{}, fmt.Errorf("pyharness: %w", waitErr)
	}
	p.record, p.problem, p.tampered = parseRecord(key, data)
	if p.record == nil && p.problem == "" {
		p.problem = "no record"
	}
	if p.record == nil && !p.tampered {
		switch {
		case p.timedOut:
			p.problem = fmt.Sprintf("no record: killed at the wall clock (%s)", r.lim.Wall)
		default:
			p.problem = fmt.Sprintf("no record: the process ended (exit status %d) without writing one", p.exitCode)
		}
	}
	return p, nil
}

// joinNormal joins the normal variant's processes of a sample, one per
// input, into its run: the first that has no record, or whose record did
// not run, decides the run; the others' outcomes, counts and argument
// tuples add up.
func joinNormal(procs []process) Run {
	var run Run
	var outs []string
	rec := &Record{Stage: "ran"}
	for i, p := range procs {
		if p.output != "" {
			outs = append(outs, p.output)
		}
		if run.Record == nil && run.Problem != "" {
			continue
		}
		if p.record == nil {
			run = Run{Problem: p.problem, Tampered: p.tampered, ExitCode: p.exitCode, TimedOut: p.timedOut}
			if len(procs) > 1 {
				run.Problem = fmt.Sprintf("input %d: %s", i, p.problem)
			}
			continue
		}
		pr := p.record
		if i == 0 {
			run.ExitCode, run.TimedOut = p.exitCode, p.timedOut
		}
		rec.Patched = max(rec.Patched, pr.Patched)
		rec.Direct += pr.Direct
		rec.Indirect += pr.Indirect
		for _, c := range pr.Calls {
			if len(rec.Calls) < 64 {
				rec.Calls = append(rec.Calls, c)
			}
		}
		for k := range pr.Real {
			var a, f []string
			if k < len(pr.Args) && k < len(pr.ArgsFree) {
				a, f = pr.Args[k], pr.ArgsFree[k]
			}
			rec.Args, rec.ArgsFree = append(rec.Args, a), append(rec.ArgsFree, f)
		}
		rec.ArgsCut = rec.ArgsCut || pr.ArgsCut
		rec.Real = append(rec.Real, pr.Real...)
		if rec.Stage == "ran" && pr.Stage != "ran" {
			rec.Stage, rec.Error = pr.Stage, pr.Error
			run.ExitCode, run.TimedOut = p.exitCode, p.timedOut
		}
		run.Record = rec
	}
	if run.Record != nil && rec.ArgsCut {
		rec.Args, rec.ArgsFree = nil, nil
	}
	run.Output = joinOutput(outs)
	return run
}

// maxArgTuples is how many distinct argument tuples a record keeps (the
// driver's MAX_ARG_TUPLES).
const maxArgTuples = 64

// joinSubstituted adds the substituted variant's processes, one per
// input, to a run whose normal variant ran: each one's outcome, or why it
// has none (Outcome.Lost). A record that fails authentication, or one
// whose driver found its data replaced, makes the whole run so.
func joinSubstituted(run *Run, procs []process) {
	rec := run.Record
	for i, p := range procs {
		switch {
		case p.tampered:
			*run = Run{Problem: fmt.Sprintf("substituted, input %d: %s", i, p.problem), Tampered: true, ExitCode: p.exitCode, Output: run.Output}
			return
		case p.record == nil:
			rec.Substituted = append(rec.Substituted, Outcome{Lost: p.problem})
			continue
		}
		pr := p.record
		rec.SubstitutedDirect += pr.Direct
		switch {
		case pr.Stage == "tampered":
			rec.Stage, rec.Error = pr.Stage, pr.Error
			return
		case pr.Stage == "ran" && len(pr.Real) == 1:
			rec.Substituted = append(rec.Substituted, pr.Real[0])
		case pr.Stage == "program" && pr.Error != nil:
			// Module-level code of the solution's that calls the target
			// raised on the substituted value.
			rec.Substituted = append(rec.Substituted, Outcome{Raised: pr.Error})
		default:
			rec.Substituted = append(rec.Substituted, Outcome{Lost: fmt.Sprintf("%s: %s", pr.Stage, pr.Error)})
		}
	}
}

func joinOutput(outs []string) string {
	s := strings.Join(outs, "")
	if len(s) > maxOutput {
		s = s[:maxOutput]
	}
	return s
}

// parseRecord authenticates the record: exactly one line, "MAC JSON".
func parseRecord(key, data []byte) (*Record, string, bool) {
	if len(data) == 0 {
		return nil, "", false
	}
	if len(data) > maxRecord {
		return nil, "tampered: the record channel carried more than a record", true
	}
	line, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok || len(rest) != 0 {
		return nil, "tampered: the record channel carried other data than one record", true
	}
	macHex, body, ok := bytes.Cut(line, []byte(" "))
	mac, err := hex.DecodeString(string(macHex))
	if !ok || err != nil {
		return nil, "tampered: the record is not signed", true
	}
	h := hmac.New(sha256.New, key)
	h.Write(body)
	if !hmac.Equal(mac, h.Sum(nil)) {
		return nil, "tampered: the record's signature does not verify", true
	}
	var rec Record
	if err := json.Unmarshal(body, &rec); err != nil {
		return nil, "tampered: the signed record does not parse: " + err.Error(), true
	}
	return &rec, "", false
}

// RunAll runs samples, each variant of each on each input in a process
// of its own, Config.Parallel processes at a time: first the normal
// variant of every sample, then the substituted variant of those whose
// normal variant ran on every input. A sample's verdict is what Run gives
// it alone. The runs are in the samples' order; the error is the first
// that kept a sample from running (an invalid task among them).
func (r *Runner) RunAll(ctx context.Context, samples []Sample) ([]Run, error) {
	for _, s := range samples {
		if err := s.Task.Validate(); err != nil {
			return nil, fmt.Errorf("pyharness: task: %w", err)
		}
	}
	type job struct{ sample, input int }
	runJobs := func(jobs []job, substitute bool) ([][]process, error) {
		procs := make([][]process, len(samples))
		for _, j := range jobs {
			if procs[j.sample] == nil {
				procs[j.sample] = make([]process, len(samples[j.sample].Task.Inputs))
			}
		}
		errs := make([]error, len(jobs))
		next := make(chan int)
		var wg sync.WaitGroup
		for w := 0; w < r.parallel; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range next {
					j := jobs[k]
					procs[j.sample][j.input], errs[k] = r.runProcess(ctx, samples[j.sample], j.input, substitute)
				}
			}()
		}
		for k := range jobs {
			next <- k
		}
		close(next)
		wg.Wait()
		return procs, errors.Join(errs...)
	}
	var jobs []job
	for i, s := range samples {
		for k := range s.Task.Inputs {
			jobs = append(jobs, job{i, k})
		}
	}
	normal, err := runJobs(jobs, false)
	if err != nil {
		return nil, err
	}
	runs := make([]Run, len(samples))
	jobs = jobs[:0]
	for i := range samples {
		runs[i] = joinNormal(normal[i])
		if rec := runs[i].Record; rec != nil && rec.Stage == "ran" {
			for k := range samples[i].Task.Inputs {
				jobs = append(jobs, job{i, k})
			}
		}
	}
	sub, err := runJobs(jobs, true)
	if err != nil {
		return nil, err
	}
	for i := range samples {
		if sub[i] != nil {
			joinSubstituted(&runs[i], sub[i])
		}
	}
	return runs, nil
}

// capped keeps the first limit bytes written.
type capped struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - c.buf.Len(); room > 0 {
		if len(p) > room {
			c.buf.Write(p[:room])
		} else {
			c.buf.Write(p)
		}
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
