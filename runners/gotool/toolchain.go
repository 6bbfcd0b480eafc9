package gotool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// Options are the environment the go command runs in. The caller fills
// them (the CLI, from the process environment); this package reads no
// environment variables. The zero value runs with an empty base
// environment and the caches under the store.
type Options struct {
	// Environ is the environment every go command starts from (the
	// user's: GOPROXY, GOSUMDB, GONOSUMDB, GOPRIVATE, GOFLAGS, HOME, PATH
	// are respected); Env overrides the caches and build settings.
	Environ []string
	// GOROOT is where to look for bin/go when go is not on PATH.
	GOROOT string
	// GoCache, when set, is the build cache (GOCACHE) to use instead of
	// Cache/build: one build cache shared between stores, as CI and
	// tests do.
	GoCache string
	// KeepWork keeps generated modules and work directories after a run,
	// for debugging harnesses.
	KeepWork bool
}

// Toolchain runs the go command with its caches in one directory (under
// the store), so that every build after the first is warm: module
// downloads in Cache/mod (GOMODCACHE), compiled packages in Cache/build
// (GOCACHE), test binaries in Cache/tmp (GOTMPDIR). A Toolchain is safe
// for concurrent use; its fields must not change after NewToolchain.
type Toolchain struct {
	Go    string // the go binary
	Cache string
	// BuildCache is GOCACHE: Cache/build, or Options.GoCache when set.
	BuildCache string

	opts Options
}

// NewToolchain finds the go command (the PATH of opts.Environ, then
// opts.GOROOT/bin, then /usr/local/go/bin) and prepares its cache
// directories under cache.
func NewToolchain(cache string, opts Options) (*Toolchain, error) {
	goBin, err := lookPath("go", opts.Environ)
	if err != nil {
		var candidates []string
		if opts.GOROOT != "" {
			candidates = append(candidates, filepath.Join(opts.GOROOT, "bin", "go"))
		}
		for _, c := range append(candidates, "/usr/local/go/bin/go") {
			if st, err2 := os.Stat(c); err2 == nil && !st.IsDir() {
				goBin, err = c, nil
				break
			}
		}
	}
	if err != nil {
		return nil, errors.New("the go command is needed to build and run Go code: install Go (https://go.dev/dl) or put it on PATH")
	}
	t := &Toolchain{Go: goBin, Cache: cache, BuildCache: filepath.Join(cache, "build"), opts: opts}
	if opts.GoCache != "" {
		t.BuildCache = opts.GoCache
	}
	for _, d := range []string{"mod", "build", "tmp"} {
		if err := os.MkdirAll(filepath.Join(cache, d), 0o755); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// lookPath finds an executable named file in the PATH of environ (not the
// process's: this package reads no environment).
func lookPath(file string, environ []string) (string, error) {
	for _, kv := range environ {
		path, ok := strings.CutPrefix(kv, "PATH=")
		if !ok {
			continue
		}
		for _, dir := range filepath.SplitList(path) {
			if dir == "" || !filepath.IsAbs(dir) {
				continue // like exec.LookPath, never the current directory
			}
			p := filepath.Join(dir, file)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return "", exec.ErrNotFound
}

// Env is the environment of every go command: Options.Environ (GOPROXY,
// GOSUMDB, GONOSUMDB, GOPRIVATE and GOFLAGS are respected) with the caches
// redirected, -mod=mod so that generated modules get their go.sum entries
// (checked against the checksum database as usual), -modcacherw so that
// deleting the store needs no chmod, no workspace, the local toolchain
// only and no cgo.
func (t *Toolchain) Env() []string {
	var env []string
	flags := ""
	for _, kv := range t.opts.Environ {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "GOMODCACHE", "GOCACHE", "GOTMPDIR", "GOWORK", "GOTOOLCHAIN", "CGO_ENABLED", "GOFLAGS", "GOOS", "GOARCH":
			if k == "GOFLAGS" {
				flags = v
			}
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"GOMODCACHE="+filepath.Join(t.Cache, "mod"),
		"GOCACHE="+t.BuildCache,
		"GOTMPDIR="+filepath.Join(t.Cache, "tmp"),
		"GOFLAGS="+strings.TrimSpace(flags+" -mod=mod -modcacherw"),
		"GOWORK=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
}

// downloadAll downloads, online, every module in the build list of the
// module at dir (its go.mod's requirements and theirs): what an Offline
// build of it may then use.
func (t *Toolchain) downloadAll(ctx context.Context, dir string) error {
	cmd := exec.CommandContext(ctx, t.Go, "mod", "download", "all")
	cmd.Dir, cmd.Env = dir, t.Env()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go mod download all: %v\n%s", err, bytes.TrimSpace(out))
	}
	return nil
}

// BinaryDied ends the output of a test whose binary died while it ran
// (os.Exit, a panic in a goroutine, a crash): the test is reported failed
// with what it printed, the crash's reason included.
const BinaryDied = "[lacuna: the test binary died during this test]"

// TestOptions configure one `go test` run.
type TestOptions struct {
	Packages []string      // default ./...
	Exec     string        // -exec program: the sandbox wrapper
	Timeout  time.Duration // per test binary (go test -timeout); default 60 s
	Wall     time.Duration // the whole command, build included; default 10 min
	Output   int           // bytes of output kept per test; default 16 KiB
	Args     []string      // extra go test flags
	// Sandbox, when set, runs the go command itself under its tool
	// limits (sandbox.RunTool's): compiling generated code is bounded in
	// memory, CPU, file size and processes, with cgo off.
	Sandbox *sandbox.Sandbox
	// Build bounds the go command under Sandbox; zero fields take
	// BuildLimits' values.
	Build sandbox.Limits
	// Offline builds with GOPROXY=off: modules come from the module cache
	// only, so an import of a package no module in the build list provides
	// is a compile error ("module lookup disabled by GOPROXY=off"), never
	// a request to a proxy or, through ",direct", to the host the import
	// path names. For generated code (a model's answer chooses its
	// imports). BuildBatch and RunBatch first download, online, every
	// module in the generated module's graph (`go mod download all`: the
	// target module's requirements, none of the units'), so that an empty
	// or deleted module cache never turns into compile errors.
	Offline bool
	// OnTest, when set, is told of each test's result as go test reports
	// it, before Test returns (one call at a time). For progress displays.
	OnTest func(TestResult)
}

// BuildLimits bound the go command while it compiles generated code:
// 4 GiB of address space and 1 GiB per file for each process (the
// compiler, the linker), CPU time as long as the whole command's wall
// clock. A compile bomb fails as a compile error instead of taking the
// host's memory.
var BuildLimits = sandbox.Limits{Memory: 4 << 30, FileSize: 1 << 30}

// TestResult is the outcome of one test or example.
type TestResult struct {
	Package string
	Test    string
	Passed  bool
	Skipped bool
	Output  string // what the test printed, bounded
	Seconds float64
}

// TestRun is what one `go test -json` reported.
type TestRun struct {
	Tests []TestResult
	// BuildErrors maps a package that did not compile to the compiler's
	// output (and, when a dependency did not compile, that dependency to
	// its own).
	BuildErrors map[string]string
	// Failed lists packages whose test binary failed outside any test
	// (a panic in init, a timeout, a crash of the sandbox).
	Failed   map[string]string
	TimedOut bool
	Seconds  float64
}

// Test runs `go test -json` over the module at dir: the go command
// compiles outside any sandbox and hands every test binary to opts.Exec,
// so many programs share one build and one process tree.
func (t *Toolchain) Test(ctx context.Context, dir string, opts TestOptions) (*TestRun, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	args := []string{"-count=1", "-timeout", opts.Timeout.String()}
	if opts.Exec != "" {
		args = append(args, "-exec", opts.Exec)
	}
	return t.goTest(ctx, dir, args, opts)
}

// compileTests runs `go test -c -json -o out/` over opts.Packages of the
// module at dir: every package that compiles gets its test binary,
// out/BASE.test (BASE: the last element of its import path), and nothing
// runs. A package that does not compile is in BuildErrors; one whose
// dependency does not compile has no binary and no entry of its own.
func (t *Toolchain) compileTests(ctx context.Context, dir, out string, opts TestOptions) (*TestRun, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	return t.goTest(ctx, dir, []string{"-c", "-o", out + string(filepath.Separator)}, opts)
}

// goTest runs `go test -json` with args (before opts.Args and the
// packages) and parses its events.
func (t *Toolchain) goTest(ctx context.Context, dir string, args []string, opts TestOptions) (*TestRun, error) {
	if opts.Wall <= 0 {
		opts.Wall = 10 * time.Minute
	}
	if opts.Output <= 0 {
		opts.Output = 16 << 10
	}
	// -gcflags=-e: every compile error of a package, not the first ten, so
	// that one round sets aside every unit that does not compile.
	args = append([]string{"test", "-json", "-vet=off", "-gcflags=-e"}, args...)
	args = append(args, opts.Args...)
	if len(opts.Packages) == 0 {
		args = append(args, "./...")
	} else {
		args = append(args, opts.Packages...)
	}
	runCtx, cancel := context.WithTimeout(ctx, opts.Wall)
	defer cancel()
	argv, env := append([]string{t.Go}, args...), t.Env()
	if opts.Offline {
		env = append(env, "GOPROXY=off") // the last of a key wins
	}
	if opts.Sandbox != nil {
		lim := opts.Build
		if lim.Memory == 0 {
			lim.Memory = BuildLimits.Memory
		}
		if lim.FileSize == 0 {
			lim.FileSize = BuildLimits.FileSize
		}
		if lim.CPU == 0 {
			lim.CPU = opts.Wall
		}
		argv, env, _ = opts.Sandbox.ToolCommand(sandbox.Tool{Argv: argv, Env: env, Limits: lim})
	}
	cmd := exec.CommandContext(runCtx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &limitWriter{w: &stderr, n: 64 << 10}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	run := &TestRun{BuildErrors: map[string]string{}, Failed: map[string]string{}}
	parseErr := run.parse(out, opts.Output, opts.OnTest)
	io.Copy(io.Discard, out)
	err = cmd.Wait()
	run.Seconds = time.Since(start).Seconds()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		run.TimedOut = true
		return run, nil
	}
	if parseErr != nil {
		return nil, fmt.Errorf("go test -json: %w", parseErr)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return nil, fmt.Errorf("go test: %w", err)
	}
	if err != nil && len(run.Tests) == 0 && len(run.BuildErrors) == 0 && len(run.Failed) == 0 {
		// Nothing ran and nothing says why: module resolution, a bad go.mod.
		return nil, fmt.Errorf("go test: %v\n%s", err, strings.TrimSpace(stderr.String()))
	}
	return run, nil
}

// testEvent is one line of `go test -json` (cmd/test2json), including the
// build events of Go 1.24 and later.
type testEvent struct {
	Action      string
	Package     string
	ImportPath  string
	Test        string
	Output      string
	Elapsed     float64
	FailedBuild string
}

func (run *TestRun) parse(r io.Reader, keep int, onTest func(TestResult)) error {
	type acc struct {
		out  strings.Builder
		over bool
	}
	outputs := map[[2]string]*acc{}
	builds := map[string]*strings.Builder{}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br, 1<<20)
		if len(line) > 0 {
			var e testEvent
			if json.Unmarshal(line, &e) != nil {
				continue // a line too long to keep, or not an event
			}
			switch e.Action {
			case "build-fail":
				// The only report of a failed build under -c; without -c a
				// "fail" event of the package follows and says the same.
				ip := testedPackage(e.ImportPath)
				if _, ok := run.BuildErrors[ip]; !ok {
					msg := ""
					if b := builds[e.ImportPath]; b != nil {
						msg = b.String()
					}
					run.BuildErrors[ip] = msg
				}
			case "build-output":
				b := builds[e.ImportPath]
				if b == nil {
					b = &strings.Builder{}
					builds[e.ImportPath] = b
				}
				if b.Len() < 64<<10 {
					b.WriteString(e.Output)
				}
			case "output":
				k := [2]string{e.Package, e.Test}
				a := outputs[k]
				if a == nil {
					a = &acc{}
					outputs[k] = a
				}
				if room := keep - a.out.Len(); room >= len(e.Output) {
					a.out.WriteString(e.Output)
				} else if !a.over {
					a.over = true
					a.out.WriteString(e.Output[:max(room, 0)])
					a.out.WriteString("\n[output truncated]\n")
				}
			case "pass", "fail", "skip":
				k := [2]string{e.Package, e.Test}
				text := ""
				if a := outputs[k]; a != nil {
					text = a.out.String()
					delete(outputs, k)
				}
				switch {
				case e.Test != "":
					run.Tests = append(run.Tests, TestResult{Package: e.Package, Test: e.Test, Passed: e.Action == "pass", Skipped: e.Action == "skip", Output: text, Seconds: e.Elapsed})
					if onTest != nil {
						onTest(run.Tests[len(run.Tests)-1])
					}
				case e.Action == "fail" && e.FailedBuild != "":
					msg := ""
					if b := builds[e.FailedBuild]; b != nil {
						msg = b.String()
					}
					run.BuildErrors[e.Package] = msg
				case e.Action == "fail":
					// A binary that died (os.Exit, a panic in a goroutine, a
					// crash) never ends the test it was in: that test fails
					// with what it printed, the crash's reason, and the
					// package's failure names it.
					var died []string
					for k, a := range outputs {
						if k[0] != e.Package || k[1] == "" {
							continue
						}
						run.Tests = append(run.Tests, TestResult{Package: e.Package, Test: k[1], Output: a.out.String() + "\n" + BinaryDied + "\n"})
						died = append(died, k[1])
						delete(outputs, k)
					}
					if len(died) > 0 {
						sort.Strings(died)
						text = diedPrefix + strings.Join(died, ", ") + "\n" + text
					}
					run.Failed[e.Package] = text
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// testedPackage is the package a build of the go command is for: the
// build "p [p.test]" (p with its test files) and the test main "p.test"
// are p's.
func testedPackage(importPath string) string {
	p, _, _ := strings.Cut(importPath, " ")
	return strings.TrimSuffix(p, ".test")
}

// readLine reads one line, keeping at most limit bytes of it.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) <= limit {
			line = append(line, chunk...)
		} else {
			line = line[:0:0] // too long: drop it whole
			limit = -1
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if limit < 0 {
			return nil, err
		}
		return line, err
	}
}

type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
