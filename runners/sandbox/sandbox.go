// Package sandbox runs untrusted programs (generated harnesses and
// solutions), and trusted tools on untrusted input (the go command
// compiling generated code, see RunTool).
//
// Under bubblewrap an untrusted program sees only: the system's binary and
// library directories (/usr, /bin, /sbin, /lib*) and a few files of /etc
// (passwd, group, hosts, nsswitch.conf, the dynamic linker's cache,
// localtime, alternatives), read-only; the host paths its caller lists,
// read-only; and /work, its working directory, a tmpfs of at most
// Limits.Disk bytes that lives inside the sandbox (/tmp points into it).
// Nothing it writes reaches the host, and nothing is left behind when it is
// killed. It has no network, its own pid namespace, only the environment
// its caller spells out (bubblewrap itself is started with that
// environment, so no process inside can read lacuna's), CPU, memory,
// file-size and process limits, an unprivileged uid (65534 when lacuna runs
// as root) and a wall clock that kills every process it started. As root,
// Spec.MountAsRoot has bubblewrap mount the read-only paths as root and
// the program drop to uid 65534 inside, for paths uid 65534 cannot reach
// on the host; it sees and may do the same.
//
// Without bubblewrap only the resource limits, the environment and the uid
// apply: the program runs in its host directory with the network and the
// file system of the user running lacuna. When lacuna does not run as root
// the program also has lacuna's uid, so it can read lacuna's own
// /proc/PID/environ: a minimal environment is then no protection for
// secrets. Warning says so, for the caller
// to show; the package itself never prints.
//
// Where lacuna may make memory cgroups (as root, with cgroup v2's memory
// controller delegable to it or cgroup v1's memory hierarchy mounted),
// each run of an untrusted program also has a cgroup of its own that
// bounds the memory all its processes hold together, shared memory and
// memfds included (see Limits.Memory and cgroup.go); where it may not,
// Warning says so and only the per-process rlimits bound memory.
//
// A Sandbox is immutable after New and safe for concurrent use.
package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Limits bound one run. Zero fields take the defaults.
type Limits struct {
	Wall time.Duration // wall clock, default 60 s
	CPU  time.Duration // CPU time of each process (RLIMIT_CPU), default Wall
	// Memory bounds the address space of each process (RLIMIT_AS) and,
	// where the sandbox has a memory cgroup (Identity's memory_cgroup),
	// what all the program's processes hold together: their memory,
	// SysV and POSIX shared memory, memfds, and under bubblewrap the
	// files in /work too, which are memory (the group's limit is then
	// Memory+Disk). Swap does not extend it where the kernel accounts
	// swap. Past it the kernel kills a process of the sandbox, and
	// Result.MemoryExceeded (Run) or a line starting with MemoryMarker
	// (ExecWrapper) says so. Default 4 GiB. RunTool's trusted tool has
	// the rlimit only.
	Memory   int64
	FileSize int64 // largest file written (RLIMIT_FSIZE), default 256 MiB
	Procs    int   // processes of the uid (RLIMIT_NPROC), default 256 (RunTool: 4096)
	// Disk is the size of /work under bubblewrap: everything the program
	// writes (/tmp included), its input files and, for ExecWrapper, the
	// copy of the program itself. Default 256 MiB. It is memory of the
	// host while the program runs, and freed when it ends.
	Disk int64
	// Output is how many bytes of output are kept: of stdout and of stderr
	// each for Run and RunTool, of the program's merged stdout and stderr
	// for ExecWrapper (one test binary prints for all its tests). Default
	// 16 MiB.
	Output int
	// Files is how many files each process may have open (RLIMIT_NOFILE),
	// default 256 (RunTool: 4096). Without a memory cgroup, memory held
	// in memfds or shared memory is bounded only through it (and
	// FileSize, and the size of SysV segments not at all): RLIMIT_AS does
	// not count such pages while they are not mapped.
	Files int
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
	if l.Disk <= 0 {
		l.Disk = 256 << 20
	}
	if l.Output <= 0 {
		l.Output = 16 << 20
	}
	if l.Files <= 0 {
		l.Files = 256
	}
	return l
}

// Spec is one untrusted program to run.
type Spec struct {
	Argv []string
	// Dir holds the program's input files. Under bubblewrap they are
	// copied into /work (and count against Limits.Disk; at most
	// maxInputFiles entries) and nothing the program writes comes back:
	// its results are its output. Without bubblewrap the program runs in
	// Dir itself, which uid 65534 must be able to reach when lacuna runs
	// as root.
	Dir string
	// Env is the program's whole environment; default PATH, HOME=/work,
	// TMPDIR=/tmp, LANG=C.UTF-8 (without bubblewrap HOME and TMPDIR are
	// Dir). Nothing of lacuna's is inherited.
	Env []string
	// ReadOnly lists host paths (absolute) the program may read, at the
	// same path: a toolchain, a verified module copy, a venv.
	ReadOnly []string
	// MountAsRoot applies when lacuna runs as root under bubblewrap: then
	// bubblewrap itself runs as root (no user namespace; its own network,
	// pid, ipc, uts and cgroup namespaces) and opens ReadOnly with root's
	// rights, and the program drops to uid/gid 65534 inside, with no
	// supplementary groups, no capabilities (bounding set emptied) and
	// no_new_privs, before prlimit applies the limits. A ReadOnly path then
	// need not be reachable by uid 65534 on the host (a pyenv interpreter
	// under a private /root): the sandbox makes its parents 0755, and only
	// the path's own permissions apply. Everything else is as without it:
	// the same mounts, all mounted nosuid and read-only but /work, no
	// network, the same limits. /work is then root's, mode 0777 (the input
	// files of Dir keep their modes, owned by root: the program may read,
	// not change them). Ignored otherwise.
	MountAsRoot bool
	Stdin       []byte
	Limits
}

// Result is what happened.
type Result struct {
	ExitCode  int           // -1 when killed by a signal
	Signal    string        // the signal that ended it, if any
	Stdout    []byte        // at most Limits.Output bytes
	Stderr    []byte        // at most Limits.Output bytes
	Truncated bool          // output went past Limits.Output and was cut
	TimedOut  bool          // the wall clock ran out and everything was killed
	Duration  time.Duration // wall time
	// MemoryExceeded: the sandbox's processes together reached the
	// memory cgroup's limit (see Limits.Memory) and the kernel killed
	// one of them ("killed: memory limit"). Only with a memory cgroup: a
	// program may also fail on its own near the limit (ENOMEM,
	// MemoryError) without a kill, which this does not report.
	MemoryExceeded bool
	// MemoryPeak is the most the sandbox's cgroup held at once, in
	// bytes; 0 without a memory cgroup or where the kernel does not say
	// (cgroup v2 before Linux 5.19).
	MemoryPeak int64
}

// Sandbox runs programs with the isolation this machine offers.
type Sandbox struct {
	bwrap   string   // bubblewrap's path; "" without it
	version string   // bubblewrap's version
	system  []string // bubblewrap arguments binding the system's directories
	prlimit string
	env     string     // env(1), which starts bubblewrap with a clean environment
	setpriv string     // setpriv(1), which drops root in ExecWrapper; "" unless root
	mem     *memCgroup // where each run's memory cgroup is made; nil without
	memWhy  string     // why there is no memory cgroup
}

// nobody is the unprivileged uid/gid programs run as when lacuna runs as
// root (root is exempt from RLIMIT_NPROC, so a fork bomb would not stop).
const nobody = 65534

// New finds prlimit, bubblewrap and where to make memory cgroups (and
// removes stale ones: see cgroup.go). Without bubblewrap or a memory
// cgroup it still works, with less isolation or resource limits only;
// Warning then says what that means.
func New() (*Sandbox, error) {
	s := &Sandbox{}
	var err error
	if s.prlimit, err = exec.LookPath("prlimit"); err != nil {
		return nil, errors.New("sandbox: prlimit (util-linux) is required to limit resources")
	}
	if s.env, err = exec.LookPath("env"); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if os.Geteuid() == 0 {
		if s.setpriv, err = exec.LookPath("setpriv"); err != nil {
			return nil, errors.New("sandbox: setpriv (util-linux) is required to run programs unprivileged")
		}
	}
	s.useMemCgroup()
	b, err := exec.LookPath("bwrap")
	if err != nil {
		return s, nil
	}
	out, err := exec.Command(b, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %s --version: %w", b, err)
	}
	s.bwrap = b
	s.version = strings.TrimPrefix(strings.TrimSpace(string(out)), "bubblewrap ")
	s.system = systemMounts()
	return s, nil
}

// Isolation names the mechanism: "bubblewrap" or "rlimits".
func (s *Sandbox) Isolation() string {
	if s.bwrap != "" {
		return "bubblewrap"
	}
	return "rlimits"
}

// useMemCgroup finds where to make memory cgroups and checks that a
// program can run in one, or records why not.
func (s *Sandbox) useMemCgroup() {
	c, err := openMemCgroup()
	if err == nil {
		c.gc(time.Now())
		p := process{argv: []string{s.env}, dir: "/", lim: Limits{Wall: 30 * time.Second}.withDefaults(),
			unprivileged: os.Geteuid() == 0, setpriv: s.setpriv, mem: c, memLimit: 64 << 20}
		var r *Result
		if r, err = p.run(context.Background()); err == nil && r.ExitCode != 0 {
			err = fmt.Errorf("a program in a memory cgroup exited %d: %s", r.ExitCode, bytes.TrimSpace(r.Stderr))
		}
	}
	if err != nil {
		s.memWhy = err.Error()
		return
	}
	s.mem = c
}

// Warning is what the user should be told about this sandbox, or "" when
// programs are isolated and their memory bounded as a whole.
func (s *Sandbox) Warning() string {
	var w []string
	if s.bwrap == "" {
		w = append(w, "WARNING: bubblewrap (bwrap) is not installed: untrusted code will run WITHOUT network or file-system isolation, with resource limits only. Install it: apt-get install bubblewrap")
	}
	if s.mem == nil {
		why := s.memWhy
		if why == "" {
			why = "not looked for"
		}
		w = append(w, "WARNING: no memory cgroup can be made for untrusted code ("+why+"): its memory is bounded per process only (RLIMIT_AS), which counts neither shared memory, memfds nor the sum over its processes, so one program can hold many times Limits.Memory. Run lacuna as root where cgroup v1's memory hierarchy is mounted or cgroup v2's memory controller can be delegated to it.")
	}
	return strings.Join(w, "\n")
}

// Identity is what an action key must include about running a program
// here with lim (through Run, ExecWrapper or RunTool): the mechanism,
// bubblewrap's version, the uid programs run as, whether a memory cgroup
// bounds the sandbox as a whole (memory_cgroup: cgroup-v1, cgroup-v2 or
// none; it changes what Memory means), and every limit (defaults
// applied) that can change a verdict. Callers add the read-only paths'
// contents and the environment they pass, which the key covers anyway.
func (s *Sandbox) Identity(lim Limits) map[string]string {
	lim = lim.withDefaults()
	id := map[string]string{
		"sandbox":       s.Isolation(),
		"uid":           "caller",
		"wall":          lim.Wall.String(),
		"cpu":           lim.CPU.String(),
		"memory":        strconv.FormatInt(lim.Memory, 10),
		"file_size":     strconv.FormatInt(lim.FileSize, 10),
		"procs":         strconv.Itoa(lim.Procs),
		"disk":          strconv.FormatInt(lim.Disk, 10),
		"output":        strconv.Itoa(lim.Output),
		"files":         strconv.Itoa(lim.Files),
		"memory_cgroup": "none",
	}
	if s.mem != nil {
		id["memory_cgroup"] = s.mem.version()
	}
	if s.bwrap != "" {
		id["bubblewrap"] = s.version
	}
	if os.Geteuid() == 0 {
		id["uid"] = strconv.Itoa(nobody)
	}
	return id
}

// systemMounts binds what programs need of the host: its binary and
// library directories (or their merged-/usr symlinks) and a few files of
// /etc, none of them secret.
func systemMounts() []string {
	var args []string
	for _, d := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, f := range []string{"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/nsswitch.conf", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives"} {
		args = append(args, "--ro-bind-try", f, f)
	}
	return args
}

// bwrapArgs is bubblewrap's command line up to the program: the system,
// the read-only paths, a fresh /dev and /proc, /work as a tmpfs of
// lim.Disk bytes with /tmp in it, then work (what goes into /work), then
// everything outside /work made read-only. asRoot is Spec.MountAsRoot's
// mode: no user namespace, the read-only paths' parents made 0755 and
// /work writable by the program's uid.
func (s *Sandbox) bwrapArgs(lim Limits, readOnly []string, work []string, asRoot bool) ([]string, error) {
	args := []string{s.bwrap, "--unshare-all", "--die-with-parent", "--new-session"}
	if asRoot {
		args = []string{s.bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session"}
	}
	args = append(args, s.system...)
	made := map[string]bool{}
	for _, p := range readOnly {
		if !filepath.IsAbs(p) || filepath.Clean(p) == "/" {
			return nil, fmt.Errorf("sandbox: read-only path %q: not an absolute path below /", p)
		}
		p = filepath.Clean(p)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("sandbox: read-only path: %w", err)
		}
		for _, own := range []string{"/work", "/tmp", "/proc", "/dev"} {
			if p == own || strings.HasPrefix(p, own+"/") {
				return nil, fmt.Errorf("sandbox: read-only path %q: %s belongs to the sandbox", p, own)
			}
		}
		if asRoot {
			args = append(args, parentDirs(p, made)...)
		}
		args = append(args, "--ro-bind", p, p)
	}
	args = append(args, "--dev", "/dev", "--proc", "/proc", "--size", strconv.FormatInt(lim.Disk, 10))
	if asRoot {
		args = append(args, "--perms", "0777", "--tmpfs", "/work", "--perms", "01777", "--dir", "/work/.tmp")
	} else {
		args = append(args, "--tmpfs", "/work", "--dir", "/work/.tmp")
	}
	args = append(args, "--symlink", "/work/.tmp", "/tmp")
	args = append(args, work...)
	return append(args, "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/work", "--"), nil
}

// parentDirs makes the parents of p in the sandbox's root 0755, top
// down, those not made yet (made) and not the system's own directories
// (bound read-only already): bubblewrap would copy their host modes, and a
// private /root would keep uid 65534 from p.
func parentDirs(p string, made map[string]bool) []string {
	var dirs []string
	for d := filepath.Dir(p); d != "/"; d = filepath.Dir(d) {
		dirs = append([]string{d}, dirs...)
	}
	var args []string
	for _, d := range dirs {
		if made[d] || systemDir(d) {
			continue
		}
		made[d] = true
		args = append(args, "--perms", "0755", "--dir", d)
	}
	return args
}

// systemDir says whether d is in the system's directories, which the
// sandbox binds whole.
func systemDir(d string) bool {
	for _, sys := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"} {
		if d == sys || strings.HasPrefix(d, sys+"/") {
			return true
		}
	}
	return false
}

// limitArgs is prlimit's command line up to the program.
func (s *Sandbox) limitArgs(lim Limits) []string {
	return []string{s.prlimit,
		"--as=" + strconv.FormatInt(lim.Memory, 10),
		"--cpu=" + strconv.FormatInt(int64((lim.CPU+time.Second-1)/time.Second), 10),
		"--fsize=" + strconv.FormatInt(lim.FileSize, 10),
		"--nproc=" + strconv.Itoa(lim.Procs),
		"--nofile=" + strconv.Itoa(lim.Files),
		"--core=0", "--"}
}

// defaultEnv is a program's environment when its caller gives none.
func defaultEnv(home, tmp string) []string {
	return []string{"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + tmp, "LANG=C.UTF-8"}
}

// maxInputFiles bounds the entries of Spec.Dir (each file is an open
// descriptor while bubblewrap starts).
const maxInputFiles = 256

// inputMounts opens the entries of dir for bubblewrap to copy into /work:
// its arguments, and the files to hand over as descriptors 3, 4, ...
func inputMounts(dir string) ([]string, []*os.File, error) {
	var args []string
	var files []*os.File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		dest := path.Join("/work", filepath.ToSlash(rel))
		if len(files) >= maxInputFiles {
			return fmt.Errorf("more than %d entries", maxInputFiles)
		}
		switch {
		case d.IsDir():
			args = append(args, "--dir", dest)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			args = append(args, "--symlink", target, dest)
		case d.Type().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			files = append(files, f)
			fi, err := f.Stat()
			if err != nil {
				return err
			}
			args = append(args, "--perms", fmt.Sprintf("%04o", fi.Mode().Perm()), "--file", strconv.Itoa(2+len(files)), dest)
		default:
			return fmt.Errorf("%s: not a regular file, directory or symlink", p)
		}
		return nil
	})
	if err != nil {
		for _, f := range files {
			f.Close()
		}
		return nil, nil, fmt.Errorf("sandbox: input directory %s: %w", dir, err)
	}
	return args, files, nil
}

// Run runs spec and waits for it, or for its wall clock, or for ctx.
func (s *Sandbox) Run(ctx context.Context, spec Spec) (*Result, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("sandbox: empty command")
	}
	if spec.Dir == "" {
		return nil, errors.New("sandbox: no work directory")
	}
	lim := spec.Limits.withDefaults()
	p := process{dir: spec.Dir, env: spec.Env, stdin: spec.Stdin, lim: lim, unprivileged: os.Geteuid() == 0,
		mem: s.mem, memLimit: s.memLimit(lim), setpriv: s.setpriv}
	if s.bwrap == "" {
		if p.env == nil {
			p.env = defaultEnv(spec.Dir, spec.Dir)
		}
		if p.unprivileged {
			if err := os.Chmod(spec.Dir, 0o777); err != nil {
				return nil, fmt.Errorf("sandbox: %w", err)
			}
		}
		p.argv = append(s.limitArgs(lim), spec.Argv...)
		return p.run(ctx)
	}
	if p.env == nil {
		p.env = defaultEnv("/work", "/tmp")
	}
	work, files, err := inputMounts(spec.Dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	asRoot := spec.MountAsRoot && p.unprivileged
	args, err := s.bwrapArgs(lim, spec.ReadOnly, work, asRoot)
	if err != nil {
		return nil, err
	}
	if asRoot {
		p.unprivileged = false
		args = append(args, s.setpriv, "--reuid="+strconv.Itoa(nobody), "--regid="+strconv.Itoa(nobody), "--clear-groups",
			"--inh-caps=-all", "--bounding-set=-all", "--no-new-privs")
	}
	p.argv = append(append(args, s.limitArgs(lim)...), spec.Argv...)
	p.dir, p.files = "/", files
	return p.run(ctx)
}

// memLimit is the memory cgroup's limit for a run with lim: under
// bubblewrap the files in /work are memory too.
func (s *Sandbox) memLimit(lim Limits) int64 {
	if s.bwrap != "" {
		return lim.Memory + lim.Disk
	}
	return lim.Memory
}

// dropRoot is setpriv's command line that drops root as Run's
// unprivileged programs do (the parent-death signal too, which changing
// the uid clears).
func dropRoot(setpriv string) []string {
	return []string{setpriv, "--reuid=" + strconv.Itoa(nobody), "--regid=" + strconv.Itoa(nobody), "--clear-groups", "--pdeathsig=SIGKILL"}
}

// process is one command to run with its limits.
type process struct {
	argv         []string
	dir          string
	env          []string
	stdin        []byte
	files        []*os.File // descriptors 3, 4, ...
	lim          Limits
	unprivileged bool // run as uid/gid 65534
	// mem, when set, is where the run's memory cgroup of memLimit bytes
	// is made; v1's shim must be root to join it, and then drops root
	// with setpriv for an unprivileged run.
	mem      *memCgroup
	memLimit int64
	setpriv  string
}

// run runs p in a process group of its own, killed as a whole at the wall
// clock or when ctx ends, with its output bounded as it is read, and in a
// memory cgroup of its own when p.mem is set, where every process left
// is killed too.
func (p process) run(ctx context.Context) (*Result, error) {
	argv, unprivileged := p.argv, p.unprivileged
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var group *memGroup
	if p.mem != nil {
		var err error
		if group, err = p.mem.newGroup(p.memLimit); err != nil {
			return nil, err
		}
		if p.mem.v == 2 {
			fd, err := syscall.Open(group.dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
			if err != nil {
				group.end()
				return nil, fmt.Errorf("sandbox: memory cgroup: %w", err)
			}
			defer syscall.Close(fd)
			attr.UseCgroupFD, attr.CgroupFD = true, fd
		} else {
			var drop []string
			if unprivileged {
				drop, unprivileged = dropRoot(p.setpriv), false
			}
			argv = group.joinArgv(argv, drop)
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, p.lim.Wall)
	defer cancel()
	cmd := exec.CommandContext(runCtx, argv[0], argv[1:]...)
	cmd.Dir = p.dir
	cmd.Env = p.env
	if cmd.Env == nil {
		cmd.Env = []string{} // never lacuna's own
	}
	cmd.Stdin = bytes.NewReader(p.stdin)
	cmd.ExtraFiles = p.files
	stdout, stderr := &capped{limit: p.lim.Output}, &capped{limit: p.lim.Output}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = attr
	if unprivileged {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody}
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
	if group != nil {
		oom, peak, merr := group.end()
		p.mem.gc(time.Now())
		// Killed before it could join (ctx, a wall clock shorter than
		// starting), the program never ran.
		if merr != nil && cmd.ProcessState != nil && ctx.Err() == nil && !res.TimedOut {
			return nil, merr
		}
		res.MemoryExceeded, res.MemoryPeak = oom, peak
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
