// Package sandbox runs untrusted programs (generated harnesses and
// solutions): no network, a private work directory, everything else
// read-only, CPU / memory / file-size / process limits, an unprivileged
// uid, and a wall-clock timeout that kills every process the program
// started. Isolation uses bubblewrap; without it only the resource limits
// apply, and New says so loudly.
package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Limits bound one run. Zero fields take the defaults.
type Limits struct {
	Wall     time.Duration // wall clock, default 60 s
	CPU      time.Duration // CPU time (RLIMIT_CPU), default Wall
	Memory   int64         // address space in bytes (RLIMIT_AS), default 4 GiB
	FileSize int64         // largest file written (RLIMIT_FSIZE), default 256 MiB
	Procs    int           // processes of the sandbox user (RLIMIT_NPROC), default 256
	Output   int           // bytes kept of stdout and of stderr each, default 1 MiB
}

func (l Limits) withDefaults() Limits {
	if l.Wall <= 0 {
		l.Wall = 60 * time.Second
	}
	if l.CPU <= 0 {
		l.CPU = l.Wall
	}
	if l.Memory <= 0 {
		l.Memory = 4 << 30
	}
	if l.FileSize <= 0 {
		l.FileSize = 256 << 20
	}
	if l.Procs <= 0 {
		l.Procs = 256
	}
	if l.Output <= 0 {
		l.Output = 1 << 20
	}
	return l
}

// Spec is one program to run.
type Spec struct {
	Argv []string
	// Dir is a host directory the program sees read-write as /work, its
	// working directory; it should hold only what the program may touch.
	Dir   string
	Env   []string // default: PATH, HOME=/work, LANG=C.UTF-8
	Stdin []byte
	Limits
}

// Result is what happened.
type Result struct {
	ExitCode  int           // -1 when killed by a signal
	Signal    string        // the signal that ended it, if any
	Stdout    []byte        // at most Limits.Output bytes
	Stderr    []byte        // at most Limits.Output bytes
	Truncated bool          // output went past Limits.Output
	TimedOut  bool          // the wall clock ran out and everything was killed
	Duration  time.Duration // wall time
}

// Sandbox runs programs with the isolation this machine offers.
type Sandbox struct {
	bwrap   string
	prlimit string
}

// Isolation names the mechanism: "bubblewrap" or "rlimits".
func (s *Sandbox) Isolation() string {
	if s.bwrap != "" {
		return "bubblewrap"
	}
	return "rlimits"
}

// New finds bubblewrap and prlimit. Without bubblewrap it still works, with
// resource limits only, and writes a warning to warn (os.Stderr when nil):
// generated code then runs with the network and the file system of the
// user running lacuna.
func New(warn *os.File) (*Sandbox, error) {
	s := &Sandbox{}
	p, err := exec.LookPath("prlimit")
	if err != nil {
		return nil, errors.New("sandbox: prlimit (util-linux) is required to limit resources")
	}
	s.prlimit = p
	if b, err := exec.LookPath("bwrap"); err == nil {
		s.bwrap = b
		return s, nil
	}
	if warn == nil {
		warn = os.Stderr
	}
	fmt.Fprintln(warn, "lacuna: WARNING: bubblewrap (bwrap) is not installed: untrusted code will run WITHOUT network or file-system isolation, with resource limits only. Install it: apt-get install bubblewrap")
	return s, nil
}

// nobody is the unprivileged uid/gid programs run as when lacuna runs as
// root (root is exempt from RLIMIT_NPROC, so a fork bomb would not stop).
const nobody = 65534

// Run runs spec and waits for it, or for its wall clock, or for ctx.
func (s *Sandbox) Run(ctx context.Context, spec Spec) (*Result, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("sandbox: empty command")
	}
	if spec.Dir == "" {
		return nil, errors.New("sandbox: no work directory")
	}
	lim := spec.Limits.withDefaults()
	args := []string{s.prlimit,
		"--as=" + strconv.FormatInt(lim.Memory, 10),
		"--cpu=" + strconv.FormatInt(int64((lim.CPU+time.Second-1)/time.Second), 10),
		"--fsize=" + strconv.FormatInt(lim.FileSize, 10),
		"--nproc=" + strconv.Itoa(lim.Procs),
		"--core=0", "--"}
	args = append(args, spec.Argv...)
	if s.bwrap != "" {
		args = append([]string{s.bwrap,
			"--ro-bind", "/", "/",
			"--dev", "/dev",
			"--proc", "/proc",
			"--tmpfs", "/tmp",
			"--bind", spec.Dir, "/work",
			"--chdir", "/work",
			"--unshare-all", // network, pid, ipc, uts, cgroup, user
			"--die-with-parent",
			"--new-session",
		}, args...)
	}
	runCtx, cancel := context.WithTimeout(ctx, lim.Wall)
	defer cancel()
	cmd := exec.CommandContext(runCtx, args[0], args[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	if cmd.Env == nil {
		cmd.Env = []string{"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "HOME=/work", "LANG=C.UTF-8"}
		if s.bwrap == "" {
			cmd.Env[1] = "HOME=" + spec.Dir
		}
	}
	cmd.Stdin = bytes.NewReader(spec.Stdin)
	stdout, stderr := &capped{limit: lim.Output}, &capped{limit: lim.Output}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody}
		if err := os.Chmod(spec.Dir, 0o777); err != nil {
			return nil, err
		}
	}
	// Timeout or cancel: kill the whole process group (and with bubblewrap
	// the pid namespace goes with its first process).
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Run()
	res := &Result{
		Duration:  time.Since(start),
		Stdout:    stdout.buf.Bytes(),
		Stderr:    stderr.buf.Bytes(),
		Truncated: stdout.over || stderr.over,
		TimedOut:  errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil,
	}
	// Whatever the program left behind in its group goes too.
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode, res.Signal = -1, ws.Signal().String()
		}
	case errors.Is(err, exec.ErrWaitDelay):
		res.ExitCode = cmd.ProcessState.ExitCode()
	case ctx.Err() != nil:
		return res, ctx.Err()
	case res.TimedOut:
		res.ExitCode, res.Signal = -1, "killed"
	default:
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if res.TimedOut {
		res.ExitCode, res.Signal = -1, "killed (wall clock)"
	}
	return res, nil
}

// capped keeps the first limit bytes and counts the rest away, so that a
// program printing a gigabyte costs memory for only what is kept.
type capped struct {
	buf   bytes.Buffer
	limit int
	over  bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.limit - c.buf.Len(); room < len(p) {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		c.over = true
		return len(p), nil
	}
	return c.buf.Write(p)
}

// WorkDir creates a private work directory, on tmpfs (/dev/shm) where the
// machine has one, and returns it with its cleanup.
func WorkDir() (string, func(), error) {
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "lacuna-sandbox-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}
