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
	"path/filepath"
	"strconv"
	"strings"
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
	args := s.argv(spec.Dir, lim, spec.Argv)
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

// argv wraps a command in prlimit and, where present, bubblewrap with dir
// as /work.
func (s *Sandbox) argv(dir string, lim Limits, command []string) []string {
	args := []string{s.prlimit,
		"--as=" + strconv.FormatInt(lim.Memory, 10),
		"--cpu=" + strconv.FormatInt(int64((lim.CPU+time.Second-1)/time.Second), 10),
		"--fsize=" + strconv.FormatInt(lim.FileSize, 10),
		"--nproc=" + strconv.Itoa(lim.Procs),
		"--core=0", "--"}
	args = append(args, command...)
	if s.bwrap == "" {
		return args
	}
	return append([]string{s.bwrap,
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/tmp",
		"--bind", dir, "/work",
		"--chdir", "/work",
		"--unshare-all", // network, pid, ipc, uts, cgroup, user
		"--die-with-parent",
		"--new-session",
	}, args...)
}

// ExecWrapper writes an executable script into dir that runs its
// arguments ("PROGRAM ARGS...") in this sandbox: it copies PROGRAM into a
// fresh private work directory and runs it there with lim, as the
// unprivileged uid when lacuna runs as root. It is what `go test -exec`
// takes: the go command compiles outside, the test binaries run inside.
// The wall clock is the caller's: kill the go command's process group and
// the sandbox dies with it (bubblewrap's --die-with-parent).
func (s *Sandbox) ExecWrapper(dir string, lim Limits) (string, error) {
	lim = lim.withDefaults()
	base := os.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	inner := s.argv(`"$w"`, lim, []string{"/usr/bin/env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/work", "LANG=C.UTF-8", "/work/prog"})
	if s.bwrap == "" {
		inner[len(inner)-1] = `"$w/prog"`
		for i, a := range inner {
			if a == "HOME=/work" {
				inner[i] = `HOME="$w"`
			}
		}
	}
	if os.Geteuid() == 0 {
		inner = append([]string{"setpriv", "--reuid=" + strconv.Itoa(nobody), "--regid=" + strconv.Itoa(nobody), "--clear-groups"}, inner...)
	}
	var b bytes.Buffer
	b.WriteString("#!/bin/sh\n# Written by lacuna: runs PROGRAM ARGS... in the sandbox (" + s.Isolation() + ").\n")
	fmt.Fprintf(&b, "w=$(mktemp -d %s/lacuna-exec-XXXXXXXX) || exit 125\n", base)
	b.WriteString("trap 'rm -rf \"$w\"' EXIT\n")
	b.WriteString("cp \"$1\" \"$w/prog\" || exit 125\nshift\nchmod 0777 \"$w\"; chmod 0755 \"$w/prog\"\n")
	if s.bwrap == "" {
		b.WriteString("cd \"$w\" || exit 125\n")
	}
	for i, a := range inner {
		if i > 0 {
			b.WriteByte(' ')
		}
		if strings.HasPrefix(a, `"$w`) || strings.HasPrefix(a, `HOME="$w`) {
			b.WriteString(a)
		} else {
			b.WriteString(shellQuote(a))
		}
	}
	b.WriteString(` "$@"` + "\n")
	p := filepath.Join(dir, "lacuna-sandbox-exec")
	if err := os.WriteFile(p, b.Bytes(), 0o755); err != nil {
		return "", err
	}
	return p, nil
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=/.:,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
