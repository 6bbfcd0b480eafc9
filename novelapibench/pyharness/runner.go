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
	// Limits bound each sample's process; Wall defaults to 60 s, of which
	// each of the two passes (real and mock) gets at most a third.
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

// Run is what running one sample gave.
type Run struct {
	// Record is the driver's record; nil when Problem says why there is
	// none.
	Record *Record
	// Problem: the process wrote no record (it crashed, exited early, was
	// killed or hung) or a record that failed authentication (Tampered).
	Problem  string
	Tampered bool
	ExitCode int
	TimedOut bool
	Output   string // what the process printed, stdout and stderr, cut at 64 KiB
}

// Record is what the driver reports, authenticated.
type Record struct {
	// Stage: "ran" (both passes ran), "compile" (the program does not
	// compile), "load" (the environment or the target did not load: the
	// task's fault, not the solution's), "program" (the program's
	// module-level code raised), "timeout", "tampered" (the driver found
	// its data replaced by the solution).
	Stage string   `json:"stage"`
	Error *PyError `json:"error,omitempty"`
	// Patched is how many places the spy replaced the target at.
	Patched int `json:"patched"`
	// Direct counts the real pass's calls of the target made from the
	// solution's own lines; Indirect all others (the library calling
	// itself, the prelude). MockDirect counts the mock pass's.
	Direct     int    `json:"direct"`
	Indirect   int    `json:"indirect"`
	MockDirect int    `json:"mock_direct"`
	Calls      []Call `json:"calls"`
	// Real and Mock are the outcomes of the solver function on each input:
	// with the target genuine, and with the solution's own calls of it
	// answered by a unittest.mock.MagicMock.
	Real []Outcome `json:"real"`
	Mock []Outcome `json:"mock"`
}

// Call is the shape of one direct call: how many positional arguments,
// which keywords.
type Call struct {
	Args   int      `json:"args"`
	Kwargs []string `json:"kwargs"`
}

// Outcome is one call of the solver function: a value, or an exception.
type Outcome struct {
	Value  json.RawMessage `json:"value,omitempty"`
	Raised *PyError        `json:"raised,omitempty"`
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
	Program  string   `json:"program"`
	First    int      `json:"first"`
	Last     int      `json:"last"`
	Function string   `json:"function"`
	Inputs   []string `json:"inputs"`
	Module   string   `json:"module"`
	QualName string   `json:"qualname"`
	Modules  []string `json:"modules"`
	Paths    []string `json:"paths"`
	Timeout  float64  `json:"timeout"`
}

const (
	maxOutput = 64 << 10
	maxRecord = 16 << 20
)

// Run runs one sample in a fresh sandboxed process. The error is only for
// what kept it from running at all.
func (r *Runner) Run(ctx context.Context, s Sample) (Run, error) {
	if err := s.Task.Validate(); err != nil {
		return Run{}, fmt.Errorf("pyharness: task: %w", err)
	}
	prog, first, last := s.Task.Program(s.Solution)
	cfg, err := json.Marshal(config{
		Program: prog, First: first, Last: last, Function: s.Task.Function(), Inputs: s.Task.Inputs,
		Module: s.Task.Target.Module(), QualName: s.Task.Target.QualName(), Modules: s.Task.Target.modules(),
		Paths: r.paths, Timeout: (r.lim.Wall / 3).Seconds(),
	})
	if err != nil {
		return Run{}, fmt.Errorf("pyharness: %w", err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return Run{}, fmt.Errorf("pyharness: key: %w", err)
	}
	keyR, keyW, err := os.Pipe()
	if err != nil {
		return Run{}, fmt.Errorf("pyharness: %w", err)
	}
	defer keyR.Close()
	_, err = keyW.Write(key)
	keyW.Close()
	if err != nil {
		return Run{}, fmt.Errorf("pyharness: key: %w", err)
	}
	recR, recW, err := os.Pipe()
	if err != nil {
		return Run{}, fmt.Errorf("pyharness: %w", err)
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
		return Run{}, fmt.Errorf("pyharness: start: %w", err)
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
		return Run{}, ctx.Err()
	}
	run := Run{ExitCode: cmd.ProcessState.ExitCode(), TimedOut: runCtx.Err() != nil, Output: out.String()}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && !errors.Is(waitErr, exec.ErrWaitDelay) && !run.TimedOut {
		return Run{}, fmt.Errorf("pyharness: %w", waitErr)
	}
	run.Record, run.Problem, run.Tampered = parseRecord(key, data)
	if run.Record == nil && run.Problem == "" {
		run.Problem = "no record"
	}
	if run.Record == nil && !run.Tampered {
		switch {
		case run.TimedOut:
			run.Problem = fmt.Sprintf("no record: killed at the wall clock (%s)", r.lim.Wall)
		default:
			run.Problem = fmt.Sprintf("no record: the process ended (exit status %d) without writing one", run.ExitCode)
		}
	}
	return run, nil
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

// RunAll runs samples, Config.Parallel at a time, each in a process of
// its own: a sample's verdict is what Run gives it alone. The runs are in
// the samples' order; the error is the first that kept a sample from
// running.
func (r *Runner) RunAll(ctx context.Context, samples []Sample) ([]Run, error) {
	runs := make([]Run, len(samples))
	errs := make([]error, len(samples))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < r.parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				runs[i], errs[i] = r.Run(ctx, samples[i])
			}
		}()
	}
	for i := range samples {
		next <- i
	}
	close(next)
	wg.Wait()
	return runs, errors.Join(errs...)
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
