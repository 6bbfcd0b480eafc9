// Package jobenv is what node types that run a program on a runner share
// (command, train, edit): pinning where it runs (a container image by
// digest, or a program on this machine by content), running it with the
// node's inputs read-only and an output directory, its output lines in
// the node's log, and turning what it left into blobs. It knows nothing
// of what the program does.
package jobenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/runners/container"
)

// Where a job finds its inputs, writes its outputs and keeps its work in
// a container.
const (
	ContainerIn   = "/lacuna/in"
	ContainerOut  = "/lacuna/out"
	ContainerWork = "/lacuna/work"
)

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidEnvName says whether s is a variable name a job may be given.
func ValidEnvName(s string) bool { return envNamePattern.MatchString(s) }

// Reserved are the variables a job is given by Run.
var Reserved = []string{"LACUNA_IN", "LACUNA_OUT", "LACUNA_WORK"}

func reserved(k string) bool {
	for _, r := range Reserved {
		if k == r {
			return true
		}
	}
	return false
}

// Pin is where a job runs, fixed by Resolve: a container's engine and
// image, or a local program's path and content. It is read-only after
// Resolve and safe to share.
type Pin struct {
	Runner nodes.Runner
	// container
	engine *container.Engine
	image  container.Pinned
	memory int64
	// local
	program    string // absolute
	programSum string
	path       string // the run's PATH
	dir        string // absolute working directory
}

// InContainer says whether the job runs in a container.
func (p *Pin) InContainer() bool { return p.engine != nil }

// Program is the local program's absolute path ("" in a container).
func (p *Pin) Program() string { return p.program }

// Resolve pins where a node's job runs: its runner's container image
// (its tag's digest now, through the registry or, for an image no
// registry holds, the engine's image ID), or the local program argv0
// (looked up on the run's PATH from workdir, relative to the pipeline's
// directory; its content's digest). argv0 may be "" only for a container,
// which then runs its image's own command. The identity entries it
// returns (image or program, and the runner's env as a digest) enter the
// node's key; the runner's resources do not. attr names the node's
// attribute that holds argv0, for errors.
func Resolve(ctx context.Context, r nodes.Resolve, attr, argv0, workdir string) (*Pin, map[string]string, error) {
	rn, err := nodes.RunnerOf(r)
	if err != nil {
		return nil, nil, err
	}
	for k := range rn.Env {
		if !ValidEnvName(k) || reserved(k) {
			return nil, nil, fmt.Errorf("runner %s: env: %q cannot be set", rn.Name, k)
		}
	}
	p := &Pin{Runner: rn}
	id := map[string]string{}
	if len(rn.Env) > 0 {
		id["runner_env"] = EnvDigest(rn.Env)
	}
	switch rn.Kind {
	case "container":
		if rn.Image == "" {
			return nil, nil, fmt.Errorf("runner %s: a container runner needs an image", rn.Name)
		}
		if workdir != "" && !path.IsAbs(workdir) {
			return nil, nil, nodes.Errorf("workdir", "Relative workdir", "in a container the working directory is absolute (%q).", workdir)
		}
		if p.memory, err = rn.MemoryBytes(); err != nil {
			return nil, nil, err
		}
		if p.engine, err = container.NewEngine(rn.Engine, container.WithArgs(rn.Args...)); err != nil {
			return nil, nil, fmt.Errorf("runner %s: %w", rn.Name, err)
		}
		if p.image, err = container.Resolve(ctx, rn.Image, container.WithLocal(p.engine), container.InsecureLoopback()); err != nil {
			return nil, nil, fmt.Errorf("runner %s: %w", rn.Name, err)
		}
		id["image"] = p.image.String()
	default: // local; slurm: the instance runs inside its job, on the job's machine
		if argv0 == "" {
			return nil, nil, nodes.Errorf(attr, "No command", "a command that runs on this machine needs its argv (only a container has a default: its image's).")
		}
		p.dir = r.Dir()
		if workdir != "" {
			p.dir = workdir
			if !filepath.IsAbs(p.dir) {
				p.dir = filepath.Join(r.Dir(), p.dir)
			}
		}
		if p.dir, err = filepath.Abs(p.dir); err != nil {
			return nil, nil, err
		}
		p.path = r.Getenv("PATH")
		if p.program, err = nodes.LookPath(argv0, p.dir, p.path); err != nil {
			return nil, nil, nodes.Errorf(attr, "Program not found", "%v", err)
		}
		if p.programSum, err = nodes.ContentDigest(p.program); err != nil {
			return nil, nil, err
		}
		id["program"] = p.programSum
	}
	return p, id, nil
}

// EnvDigest is a digest of a set of variables (their values may be
// secrets: keys hold only this).
func EnvDigest(env map[string]string) string {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	h := xxhash.New()
	for _, k := range names {
		h.WriteString(k + "=" + env[k] + "\x00")
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// Paths are where a job sees its directories: on this machine the host
// paths, in a container the mount points.
type Paths struct {
	In, Out, Work string
	// Mounts maps each Job.Mounts entry's Name to where the job sees it.
	Mounts map[string]string
}

// Mount is a host directory or file a job reads (the scripts it runs),
// mounted read-only in a container at Target.
type Mount struct {
	Name   string
	Source string
	Target string
}

// Job is one execution of a pinned program.
type Job struct {
	// Argv builds the argv from where the job sees its directories. Its
	// first element must be the argv0 given to Resolve (on this machine;
	// in a container it is the entrypoint: empty Argv runs the image's
	// own command).
	Argv func(Paths) []string
	// Env is added to the runner's env (and wins over it), besides
	// LACUNA_IN, LACUNA_OUT and, with Work, LACUNA_WORK.
	Env func(Paths) map[string]string
	// Inputs are the node's inputs: each is linked (mounted) under In as
	// "<i>.parquet", with In/inputs.json mapping each address to its name.
	Inputs []nodes.Ref
	// Mounts are further read-only paths.
	Mounts []Mount
	// Work, when set, is a directory the job may write that outlives it
	// (checkpoints a later run resumes from); the caller owns it.
	Work string
	// Workdir is the working directory (see Resolve).
	Workdir string
	// Log receives the job's stdout and stderr.
	Log io.Writer
}

// Run runs job on p with a fresh output directory out (which must exist
// and be empty) and returns where it ran, for the node's note. On this
// machine the program runs in its own process group, killed when ctx is
// cancelled and once it has exited, with HOME and TMPDIR in a scratch
// directory; its inputs are checked not to have been written through
// their links. A non-zero exit is an error ending with the job's last
// output line.
func (p *Pin) Run(ctx context.Context, r nodes.Run, job Job, out string) (string, error) {
	scratch, err := os.MkdirTemp("", "lacuna-job-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(scratch)
	in := filepath.Join(scratch, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		return "", err
	}
	files := make([]string, len(job.Inputs))
	names := make(map[string]string, len(job.Inputs))
	for i, ref := range job.Inputs {
		if files[i], err = nodes.InputFile(r, ref); err != nil {
			return "", err
		}
		names[ref.Node] = strconv.Itoa(i) + ".parquet"
	}
	manifest, err := json.MarshalIndent(names, "", "  ")
	manifest = append(manifest, '\n')
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(in, "inputs.json"), manifest, 0o644); err != nil {
		return "", err
	}
	if p.InContainer() {
		return p.runContainer(ctx, r, job, in, files, out)
	}
	return "on this machine", p.runLocal(ctx, job, scratch, in, files, out)
}

func (p *Pin) runContainer(ctx context.Context, r nodes.Run, job Job, in string, files []string, out string) (string, error) {
	paths := Paths{In: ContainerIn, Out: ContainerOut, Mounts: map[string]string{}}
	mounts := []container.Mount{{Source: filepath.Join(in, "inputs.json"), Target: ContainerIn + "/inputs.json"}}
	for i, f := range files {
		mounts = append(mounts, container.Mount{Source: f, Target: ContainerIn + "/" + strconv.Itoa(i) + ".parquet"})
	}
	for _, m := range job.Mounts {
		mounts = append(mounts, container.Mount{Source: m.Source, Target: m.Target})
		paths.Mounts[m.Name] = m.Target
	}
	spec := container.Spec{
		Image:   p.image,
		Name:    containerName(r.Node()),
		Inputs:  mounts,
		Output:  container.Mount{Source: out, Target: ContainerOut},
		Workdir: job.Workdir,
		CPUs:    p.Runner.CPUs,
		Memory:  p.memory,
		Log:     job.Log,
	}
	if job.Work != "" {
		paths.Work = ContainerWork
		spec.Work = &container.Mount{Source: job.Work, Target: ContainerWork}
	}
	env := map[string]string{}
	for k, v := range p.Runner.Env {
		env[k] = v
	}
	if job.Env != nil {
		for k, v := range job.Env(paths) {
			env[k] = v
		}
	}
	env["LACUNA_IN"], env["LACUNA_OUT"] = ContainerIn, ContainerOut
	if paths.Work != "" {
		env["LACUNA_WORK"] = paths.Work
	}
	spec.Env = env
	if job.Argv != nil {
		if argv := job.Argv(paths); len(argv) > 0 {
			spec.Entrypoint, spec.Args = argv[0], argv[1:]
		}
	}
	for i := 0; i < p.Runner.GPUs; i++ {
		spec.GPUs.Devices = append(spec.GPUs.Devices, strconv.Itoa(i))
	}
	if p.engine.Kind() == container.Docker {
		// docker's daemon runs as root: the outputs belong to lacuna's
		// user only if the process runs as that user.
		spec.User = fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	}
	r.Logf("container %s: image %s (%s), engine %s", spec.Name, p.image.String(), p.image.Ref, p.engine.Kind())
	res, err := p.engine.Run(ctx, spec)
	if err != nil {
		return "", err
	}
	d := p.image.Digest
	if len(d) > len("sha256:")+12 {
		d = d[:len("sha256:")+12] + "…"
	}
	return "in container " + res.Container + " of " + d, nil
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// containerName is a unique container name that says which node it runs
// ("lacuna-command-train-3f2a9c").
func containerName(node string) string {
	base := strings.Trim(unsafeName.ReplaceAllString(strings.TrimPrefix(node, "node."), "-"), "-.")
	if len(base) > 100 {
		base = base[:100]
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return "lacuna-" + base + "-" + hex.EncodeToString(b[:])
}

// contentSum is a fast digest of a file's bytes (xxhash), uncached: the
// inputs linked into a local job's directory are summed before and after
// it runs, to tell that it did not write through a link.
func contentSum(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := xxhash.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	return fmt.Sprintf("%016x", h.Sum64()), nil
}

func (p *Pin) runLocal(ctx context.Context, job Job, scratch, in string, files []string, out string) error {
	sum, err := nodes.ContentDigest(p.program)
	if err != nil {
		return err
	}
	if sum != p.programSum {
		return fmt.Errorf("%s changed after it was resolved (content %s, resolved %s)", p.program, sum, p.programSum)
	}
	sums := make([]string, len(files))
	for i, f := range files {
		if err := os.Symlink(f, filepath.Join(in, strconv.Itoa(i)+".parquet")); err != nil {
			return err
		}
		if sums[i], err = contentSum(f); err != nil {
			return err
		}
	}
	home, tmp := filepath.Join(scratch, "home"), filepath.Join(scratch, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	paths := Paths{In: in, Out: out, Work: job.Work, Mounts: map[string]string{}}
	for _, m := range job.Mounts {
		paths.Mounts[m.Name] = m.Source
	}
	env := map[string]string{"PATH": p.path, "HOME": home, "TMPDIR": tmp}
	for k, v := range p.Runner.Env {
		env[k] = v
	}
	if job.Env != nil {
		for k, v := range job.Env(paths) {
			env[k] = v
		}
	}
	env["LACUNA_IN"], env["LACUNA_OUT"] = in, out
	if job.Work != "" {
		env["LACUNA_WORK"] = job.Work
	}
	argv := job.Argv(paths)
	cmd := exec.CommandContext(ctx, p.program, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = p.dir
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	sort.Strings(cmd.Env)
	cmd.Stdout, cmd.Stderr = job.Log, job.Log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A child that keeps the output pipe open is not waited for.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("command %s: %w", argv[0], err)
	}
	err = cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if ctx.Err() != nil {
		return fmt.Errorf("command %s: %w", argv[0], ctx.Err())
	}
	// A local process is not confined: make sure it left the store's
	// objects as they were (a container mounts them read-only).
	for i, f := range files {
		if sum, serr := contentSum(f); serr != nil || sum != sums[i] {
			return fmt.Errorf("command %s wrote to input %s ($LACUNA_IN/%d.parquet, the store's object): inputs are read-only", argv[0], job.Inputs[i].Node, i)
		}
	}
	var xerr *exec.ExitError
	if errors.As(err, &xerr) {
		msg := fmt.Sprintf("command %s (%s) failed: %s", argv[0], p.program, xerr.ProcessState)
		if l, ok := job.Log.(interface{ Last() string }); ok {
			if last := l.Last(); last != "" {
				msg += ": " + last
			}
		}
		return errors.New(msg)
	}
	if err != nil {
		return fmt.Errorf("command %s: %w", argv[0], err)
	}
	return nil
}

// Output is one top-level entry of a job's output directory, stored as a
// blob.
type Output struct {
	Name string
	// Kind is "file" or "dir".
	Kind string
	// Size is the file's bytes, or the total of a directory's files.
	Size int64
	// Blob is the blob of the file's bytes, or of the directory
	// (artifacts.PackDir: nodes.ExtractBlob unpacks it).
	Blob string
	// Text is the file's content when it is valid UTF-8 of at most
	// MaxText bytes, else "".
	Text string
}

// MaxText bounds Output.Text.
const MaxText = 64 << 10

// Collect turns the top-level entries of the output directory, sorted by
// name, into Outputs, storing each as a blob.
func Collect(r nodes.Run, out string) ([]Output, error) {
	entries, err := os.ReadDir(out)
	if err != nil {
		return nil, err
	}
	rows := make([]Output, 0, len(entries))
	for _, e := range entries {
		full := filepath.Join(out, e.Name())
		st, err := os.Lstat(full)
		if err != nil {
			return nil, err
		}
		row := Output{Name: e.Name()}
		switch {
		case st.Mode().IsRegular():
			row.Kind, row.Size = "file", st.Size()
			if row.Blob, row.Text, err = putFile(r, full, st.Size()); err != nil {
				return nil, fmt.Errorf("output %s: %w", e.Name(), err)
			}
		case st.IsDir():
			row.Kind = "dir"
			err = filepath.WalkDir(full, func(_ string, d fs.DirEntry, err error) error {
				if err != nil || !d.Type().IsRegular() {
					return err
				}
				info, err := d.Info()
				if err == nil {
					row.Size += info.Size()
				}
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("output %s: %w", e.Name(), err)
			}
			d, err := nodes.PutBlobDir(r, full)
			if err != nil {
				return nil, fmt.Errorf("output %s: %w", e.Name(), err)
			}
			row.Blob = string(d)
		default:
			return nil, fmt.Errorf("output %s is a %v: a job's outputs are files and directories", e.Name(), st.Mode().Type())
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// putFile stores a file as a blob and returns its digest, and its text
// when it is short UTF-8.
func putFile(r nodes.Run, p string, size int64) (string, string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	if size > MaxText {
		d, err := r.PutBlob(f)
		return string(d), "", err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return "", "", err
	}
	d, err := r.PutBlob(bytes.NewReader(data))
	text := ""
	if utf8.Valid(data) && len(data) <= MaxText {
		text = string(data)
	}
	return string(d), text, err
}

// LineLog writes what a job prints into the node's log, one line per
// Logf; a line longer than maxLogLine is cut into pieces. OnLine, when
// set, sees every line too (progress parsing). Safe for concurrent
// writers.
type LineLog struct {
	r      nodes.Run
	OnLine func(string)
	mu     sync.Mutex
	buf    []byte
	last   string // the last non-empty line
}

// NewLineLog returns a LineLog writing to r's log.
func NewLineLog(r nodes.Run) *LineLog { return &LineLog{r: r} }

// Last is the last non-empty line written so far.
func (l *LineLog) Last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := strings.TrimSpace(string(l.buf)); s != "" {
		return s
	}
	return l.last
}

func (l *LineLog) line(s string) {
	l.r.Logf("%s", s)
	if t := strings.TrimSpace(s); t != "" {
		l.last = t
	}
	if l.OnLine != nil {
		l.OnLine(s)
	}
}

const maxLogLine = 16 << 10

func (l *LineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 && len(l.buf) < maxLogLine {
			return len(p), nil
		}
		if i < 0 || i > maxLogLine {
			i = maxLogLine
		}
		l.line(strings.TrimSuffix(string(l.buf[:i]), "\r"))
		if i < len(l.buf) && l.buf[i] == '\n' {
			i++
		}
		l.buf = append(l.buf[:0], l.buf[i:]...)
	}
}

// Close logs what is left of an unterminated last line.
func (l *LineLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.line(string(l.buf))
		l.buf = nil
	}
	return nil
}
