package sandbox

import (
	"context"
	"errors"
	"strings"
)

// Tool is a trusted program run on untrusted input: the go command
// compiling generated code.
type Tool struct {
	Argv []string
	Dir  string // working directory, on the host
	// Env is the tool's whole environment: nothing of lacuna's is
	// inherited. CGO_ENABLED=0 is added unless Env sets CGO_ENABLED.
	Env   []string
	Stdin []byte
	// Limits bound the tool; Disk does not apply (the tool writes the
	// host's file system, each file bounded by FileSize), and Procs
	// defaults to 4096: RLIMIT_NPROC counts every process of lacuna's user
	// (root is exempt), not only the tool's. Identity(Limits) describes a
	// tool's run when Procs is set.
	Limits
}

// RunTool runs a trusted tool on untrusted input under limits: RLIMIT_AS,
// RLIMIT_CPU, RLIMIT_FSIZE and RLIMIT_NPROC on each of its processes, a
// wall clock that kills its whole process group, an explicit environment
// with cgo off unless asked, and its output bounded as it is read. It runs
// outside bubblewrap, as lacuna's user, because the go command reads and
// writes lacuna's build and module caches (and may fetch modules);
// with cgo off, compiling runs none of the input's code, only the
// compiler's on it, and the limits stop a compile bomb. It has no memory
// cgroup: the trusted compiler hides no memory in shared memory or
// memfds, and the go command runs several compilers at once, each under
// RLIMIT_AS, so one group of Memory for them all would fail builds that
// pass now (and ToolCommand's callers start the tool themselves).
//
// To compile generated code with it (what the Go toolchain runner does):
//
//	res, err := sb.RunTool(ctx, sandbox.Tool{
//		Argv: []string{goPath, "build", "-o", out, "."},
//		Dir:  moduleDir,
//		Env: []string{"PATH=" + filepath.Dir(goPath) + ":/usr/bin:/bin",
//			"HOME=" + home, "GOCACHE=" + buildCache, "GOMODCACHE=" + modCache,
//			"GOTOOLCHAIN=local", "GOFLAGS=-mod=mod", "GOWORK=off"},
//		Limits: sandbox.Limits{Wall: 5 * time.Minute, Memory: 2 << 30},
//	})
//
// then treat a non-zero res.ExitCode as a compile error (res.Stderr says
// which, "out of memory" for a bomb) and run the binary with Run or
// ExecWrapper. GOTOOLCHAIN=local keeps a go.mod from fetching a toolchain.
func (s *Sandbox) RunTool(ctx context.Context, t Tool) (*Result, error) {
	if len(t.Argv) == 0 {
		return nil, errors.New("sandbox: empty command")
	}
	argv, env, lim := s.ToolCommand(t)
	p := process{argv: argv, dir: t.Dir, env: env, stdin: t.Stdin, lim: lim}
	return p.run(ctx)
}

// ToolCommand is what RunTool runs for t: the argv with t's rlimits
// applied as soft limits, the environment (cgo off unless t.Env sets CGO_ENABLED) and the
// limits with their defaults. It is for a caller that must stream the
// tool's output as it comes (the go command's test events): that caller
// then owns the wall clock (lim.Wall), the kill of the process group and
// the bound on what it keeps of the output, as RunTool does them.
func (s *Sandbox) ToolCommand(t Tool) (argv, env []string, lim Limits) {
	if t.Procs <= 0 {
		t.Procs = 4096
	}
	if t.Files <= 0 {
		t.Files = 4096
	}
	lim = t.Limits.withDefaults()
	env = append([]string{}, t.Env...)
	cgo := false
	for _, kv := range env {
		cgo = cgo || strings.HasPrefix(kv, "CGO_ENABLED=")
	}
	if !cgo {
		env = append(env, "CGO_ENABLED=0")
	}
	// Soft limits only: the tool is trusted not to raise them, and the
	// programs it starts (go test -exec: the sandbox wrapper) must be free
	// to set their own, which a lowered hard limit would forbid.
	args := s.limitArgs(lim)
	for i, a := range args {
		if strings.HasPrefix(a, "--") && strings.Contains(a, "=") {
			args[i] = a + ":"
		}
	}
	return append(args, t.Argv...), env, lim
}
