package pyenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Python is a base interpreter environments are made from.
type Python struct {
	// Path is the interpreter's resolved executable (sys.executable).
	Path string
	// Implementation ("cpython"), Version (exact: "3.11.7") and Platform
	// (sysconfig.get_platform(): "linux-x86_64").
	Implementation, Version, Platform string
	environ                           []string
}

// ID is the interpreter's identity in a lock: "cpython 3.11.7
// linux-x86_64". The path is not part of it.
func (p *Python) ID() string { return p.Implementation + " " + p.Version + " " + p.Platform }

const probePy = `import json, platform, sys, sysconfig
print(json.dumps({"path": sys.executable, "impl": sys.implementation.name,
  "version": platform.python_version(), "platform": sysconfig.get_platform(),
  "venv": sys.prefix != sys.base_prefix}))`

// FindPython asks the interpreter at path (a name is looked up in PATH)
// what it is. A venv's interpreter is refused: environments are made from
// a base interpreter.
func FindPython(ctx context.Context, path string, opt Options) (*Python, error) {
	exe, err := exec.LookPath(path)
	if err != nil {
		return nil, fmt.Errorf("pyenv: python: %w", err)
	}
	env := cleanEnviron(opt.Environ)
	out, err := run(ctx, env, "", exe, "-I", "-c", probePy)
	if err != nil {
		return nil, fmt.Errorf("pyenv: python %s: %w", path, err)
	}
	var r struct {
		Path, Impl, Version, Platform string
		Venv                          bool
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("pyenv: python %s: %w", path, err)
	}
	if r.Venv {
		return nil, fmt.Errorf("pyenv: python %s is a virtual environment's; give a base interpreter", path)
	}
	return &Python{Path: r.Path, Implementation: r.Impl, Version: r.Version, Platform: r.Platform, environ: env}, nil
}

// cleanEnviron drops what would change what an installer installs or
// what the interpreter imports, and sets what keeps them quiet and local.
func cleanEnviron(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "PIP_"), strings.HasPrefix(k, "UV_"), strings.HasPrefix(k, "PYTHON"),
			k == "VIRTUAL_ENV", strings.HasPrefix(k, "CONDA_"), k == "__PYVENV_LAUNCHER__":
			continue
		}
		out = append(out, kv)
	}
	return append(out,
		"PIP_CONFIG_FILE=/dev/null", "PIP_NO_INPUT=1", "PIP_DISABLE_PIP_VERSION_CHECK=1",
		"UV_NO_CONFIG=1", "PYTHONNOUSERSITE=1")
}

// run runs a command and returns its standard output; a failure's error
// carries the interesting part of what it printed.
func run(ctx context.Context, env []string, dir, name string, args ...string) ([]byte, error) {
	return runIn(ctx, env, dir, nil, name, args...)
}

// runStdin is run with stdin.
func runStdin(ctx context.Context, env []string, stdin io.Reader, name string, args ...string) ([]byte, error) {
	return runIn(ctx, env, "", stdin, name, args...)
}

func runIn(ctx context.Context, env []string, dir string, stdin io.Reader, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdin = stdin
	// Cancelling kills the installer's whole process group: its build
	// subprocesses too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout bytes.Buffer
	all := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&stdout, all), all
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return stdout.Bytes(), fmt.Errorf("%s stopped: %w", filepath.Base(name), ctx.Err())
		}
		return stdout.Bytes(), &toolError{err: err, out: all.String()}
	}
	return stdout.Bytes(), nil
}

// lockedBuffer gathers a command's output in the order it was written.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// toolError is a failed installer or interpreter run.
type toolError struct {
	err error
	out string
}

func (e *toolError) Error() string {
	head := e.err.Error()
	if r := failureReason(e.out); r != "" {
		head = r + " (" + head + ")"
	}
	if msg := summarize(e.out); msg != "" {
		return head + ":\n" + msg
	}
	return head
}

// collectingRE finds what pip was collecting (pip names it once).
var collectingRE = regexp.MustCompile(`(?m)^\s*Collecting (\S+)`)

// failureReason names the kind of failure pip's or uv's output shows, or
// is "".
func failureReason(out string) string {
	has := func(s ...string) bool {
		for _, x := range s {
			if strings.Contains(out, x) {
				return true
			}
		}
		return false
	}
	switch {
	case has("did not run successfully", "Failed building wheel", "Failed to build"):
		if m := collectingRE.FindAllStringSubmatch(out, -1); m != nil {
			return "no wheel of " + m[len(m)-1][1] + " fits this interpreter and building from the sdist failed"
		}
		return "no wheel fits this interpreter and building from the sdist failed"
	case has("No matching distribution found", "there is no version of", "not found in the package registry"):
		return "no such release on the index, or none with a file for this interpreter"
	case has("ResolutionImpossible", "No solution found when resolving"):
		return "conflicting dependencies"
	}
	return ""
}

func (e *toolError) Unwrap() error { return e.err }

// networkFailures are what pip's and uv's output say when a request got
// no answer or a 5xx or 429 one, after their own retries: file downloads
// go straight to the file host (the loopback index makes the files' URLs
// absolute), so only the installer sees them. The pip ones were seen from
// pip 23.2.1 against loopback servers that answer 503 or 429, close the
// connection, hang, or cut a download short
// (TestTransientFailuresAreErrUnavailable); the uv ones are uv's and
// reqwest's wording, not provoked here (uv cannot be had offline).
var networkFailures = []string{
	// pip (urllib3), after its retries: refused, reset, timed out, too
	// many 5xx answers.
	"Max retries exceeded",
	// pip: "504 Server Error: Gateway Timeout for url" (a 5xx it does not
	// retry).
	"Server Error:",
	// pip: "429 Client Error: Too Many Requests for url"; uv: "HTTP status
	// client error (429 Too Many Requests)".
	"Too Many Requests",
	// pip reads a download cut short as a hash mismatch. A file changed
	// at the host reads the same; failing rather than recording it as the
	// release's answer is the safer way for that too.
	"DO NOT MATCH THE HASHES",
	// uv: no answer, a 5xx answer, or either after its retries.
	"error sending request",
	"HTTP status server error",
	"Request failed after",
}

// transient says whether a failed installer run's err is transient: ctx
// ended, the installer was killed by a signal, or its output shows a
// network failure (networkFailures).
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var te *toolError
	if !errors.As(err, &te) {
		return false
	}
	var exit *exec.ExitError
	if errors.As(te.err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return true
		}
	}
	for _, s := range networkFailures {
		if strings.Contains(te.out, s) {
			return true
		}
	}
	return false
}

// summarize keeps the last lines of a tool's output that say something
// (no progress bars, no blank lines), at most 25.
func summarize(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimRight(l, " \r")
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "━") || strings.HasPrefix(t, "Downloading ") && strings.Contains(t, "kB") {
			continue
		}
		keep = append(keep, l)
	}
	if len(keep) > 25 {
		keep = keep[len(keep)-25:]
	}
	return strings.Join(keep, "\n")
}

const listPy = `import importlib.metadata as m, json
print(json.dumps(sorted([d.metadata["Name"], d.version] for d in m.distributions())))`

// checkInstalled compares what python sees installed with lock.
func checkInstalled(ctx context.Context, env []string, python string, lock *Lock) error {
	out, err := run(ctx, env, "", python, "-I", "-c", listPy)
	if err != nil {
		return fmt.Errorf("list installed distributions: %w", err)
	}
	var got [][2]string
	if err := json.Unmarshal(out, &got); err != nil {
		return fmt.Errorf("list installed distributions: %w", err)
	}
	var have, want []string
	for _, d := range got {
		have = append(have, Normalize(d[0])+"=="+d[1])
	}
	for _, p := range lock.Packages {
		want = append(want, p.Name+"=="+p.Version)
	}
	sort.Strings(have)
	sort.Strings(want)
	if strings.Join(have, " ") != strings.Join(want, " ") {
		return fmt.Errorf("the environment holds %v, the lock says %v", have, want)
	}
	return nil
}
