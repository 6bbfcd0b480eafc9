package generic

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

func init() { nodes.Register(commandType{}) }

// commandConfig:
//
//	node "command" "train" {
//	  runner  = runner.gpu
//	  command = ["python3", "/src/train.py", "--epochs", "1"]
//	  inputs  = [node.import.tasks]
//	  env     = { SEED = "1" }
//	}
type commandConfig struct {
	// Command is the argv: its first element is looked up on PATH (or
	// is a path). In a container it replaces the image's entrypoint and
	// command; left out, the image's own run.
	Command []string    `hcl:"command,optional"`
	Inputs  []nodes.Ref `hcl:"inputs,optional"`
	// Env is added to the runner's env (and wins over it).
	Env map[string]string `hcl:"env,optional"`
	// Workdir is the working directory: on this machine relative to the
	// pipeline's directory (its default), in a container absolute (the
	// image's by default).
	Workdir string `hcl:"workdir,optional"`
}

// CommandRow is one top-level entry of the command's output directory.
type CommandRow struct {
	Name string `parquet:"name"`
	// Kind is "file" or "dir".
	Kind string `parquet:"kind"`
	// Size is the file's bytes, or the total of a directory's files.
	Size int64 `parquet:"size"`
	// ContentBlob is the blob of the file's bytes, or of the directory
	// (artifacts.PackDir: nodes.ExtractBlob unpacks it).
	ContentBlob string `parquet:"content_blob"`
	// Text is the file's content when it is valid UTF-8 of at most
	// MaxCommandText bytes, else "".
	Text string `parquet:"text"`
}

// MaxCommandText bounds CommandRow.Text.
const MaxCommandText = 64 << 10

// Where a command finds its inputs and writes its outputs in a container.
const (
	containerIn  = "/lacuna/in"
	containerOut = "/lacuna/out"
)

type commandType struct {
	nodes.Static[commandConfig, CommandRow]
}

var (
	_ nodes.Typed      = commandType{}
	_ nodes.Documented = commandType{}
	_ nodes.Validator  = commandType{}
	_ nodes.Resolver   = commandType{}
)

func (commandType) Name() string    { return "command" }
func (commandType) Version() string { return "1" }

// RunsInContainers: a command runs in its container runner's image.
func (commandType) RunsInContainers() bool { return true }
func (commandType) Doc() string {
	return "Runs `command` on the node's runner: a process on this machine (no runner, kind local, or inside a slurm job) or a container (kind container: its image pinned by digest at plan time; the digest is in the key). " +
		"The inputs are $LACUNA_IN/<i>.parquet (i: index in `inputs`), with $LACUNA_IN/inputs.json mapping each input's address to its file name; " +
		"each top-level entry the command leaves in $LACUNA_OUT becomes a row (name, kind file|dir, size, content_blob, text: a file's content when UTF-8 and at most 64 KiB). " +
		"Its stdout and stderr go to the node's log; a non-zero exit fails the node. " +
		"A container sees only the runner's env, `env` and LACUNA_IN/LACUNA_OUT (/lacuna/in, read-only; /lacuna/out), under the runner's cpus, memory and gpus. " +
		"A local process gets the same variables plus the run's PATH, and HOME and TMPDIR in a scratch directory; it runs in the pipeline's directory, is not confined, and its key covers its executable's content but not the files it reads: put what it depends on in a container image."
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (commandType) Validate(cfg any) error {
	c := cfg.(*commandConfig)
	for i, a := range c.Command {
		if i == 0 && a == "" {
			return nodes.Errorf("command", "Empty program", "the command's first element names the program.")
		}
		if strings.IndexByte(a, 0) >= 0 {
			return nodes.Errorf("command", "Invalid argument", "argument %d holds a NUL byte.", i)
		}
	}
	seen := map[string]bool{}
	for _, in := range c.Inputs {
		if seen[in.Node] {
			return nodes.Errorf("inputs", "Duplicate input", "%s is listed twice.", in.Node)
		}
		seen[in.Node] = true
	}
	for k := range c.Env {
		if !envNamePattern.MatchString(k) {
			return nodes.Errorf("env", "Invalid variable name", "%q is not a variable name.", k)
		}
		if k == "LACUNA_IN" || k == "LACUNA_OUT" {
			return nodes.Errorf("env", "Reserved variable", "%s is set by the node.", k)
		}
	}
	return nil
}

// commandPin is what Resolve fixed: a container's engine and image, or a
// local program's path and content.
type commandPin struct {
	runner nodes.Runner
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

func (p *commandPin) inContainer() bool { return p.engine != nil }

// Resolve pins where the command runs: a container's image (its tag's
// digest now, through the registry or, for an image no registry holds,
// the engine's image ID), or a local program (its content's digest). The
// runner's env enters the key too; its resources do not.
func (commandType) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	c := r.Config().(*commandConfig)
	rn, err := nodes.RunnerOf(r)
	if err != nil {
		return nil, err
	}
	for k := range rn.Env {
		if !envNamePattern.MatchString(k) || k == "LACUNA_IN" || k == "LACUNA_OUT" {
			return nil, fmt.Errorf("runner %s: env: %q cannot be set", rn.Name, k)
		}
	}
	p := &commandPin{runner: rn}
	id := map[string]string{}
	if len(rn.Env) > 0 {
		id["runner_env"] = envDigest(rn.Env)
	}
	switch rn.Kind {
	case "container":
		if rn.Image == "" {
			return nil, fmt.Errorf("runner %s: a container runner needs an image", rn.Name)
		}
		if c.Workdir != "" && !path.IsAbs(c.Workdir) {
			return nil, nodes.Errorf("workdir", "Relative workdir", "in a container the working directory is absolute (%q).", c.Workdir)
		}
		if p.memory, err = rn.MemoryBytes(); err != nil {
			return nil, err
		}
		if p.engine, err = container.NewEngine(rn.Engine, container.WithArgs(rn.Args...)); err != nil {
			return nil, fmt.Errorf("runner %s: %w", rn.Name, err)
		}
		if p.image, err = container.Resolve(ctx, rn.Image, container.WithLocal(p.engine), container.InsecureLoopback()); err != nil {
			return nil, fmt.Errorf("runner %s: %w", rn.Name, err)
		}
		id["image"] = p.image.String()
	default: // local; slurm: the instance runs inside its job, on the job's machine
		if len(c.Command) == 0 {
			return nil, nodes.Errorf("command", "No command", "a command that runs on this machine needs its argv (only a container has a default: its image's).")
		}
		p.dir = r.Dir()
		if c.Workdir != "" {
			p.dir = c.Workdir
			if !filepath.IsAbs(p.dir) {
				p.dir = filepath.Join(r.Dir(), p.dir)
			}
		}
		if p.dir, err = filepath.Abs(p.dir); err != nil {
			return nil, err
		}
		p.path = r.Getenv("PATH")
		if p.program, err = nodes.LookPath(c.Command[0], p.dir, p.path); err != nil {
			return nil, nodes.Errorf("command", "Program not found", "%v", err)
		}
		if p.programSum, err = nodes.ContentDigest(p.program); err != nil {
			return nil, err
		}
		id["program"] = p.programSum
	}
	return &nodes.Pinned{Identity: id, Value: p}, nil
}

// envDigest is a digest of a set of variables (their values may be
// secrets: the key holds only this).
func envDigest(env map[string]string) string {
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

// contentSum is a fast digest of a file's bytes (xxhash), uncached: the
// inputs linked into a local command's directory are summed before and
// after it runs, to tell that it did not write through a link.
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

func (t commandType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	p, ok := r.Pinned().(*commandPin)
	if !ok {
		return errors.New("command: not resolved")
	}
	work, err := os.MkdirTemp("", "lacuna-command-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	in, out := filepath.Join(work, "in"), filepath.Join(work, "out")
	for _, d := range []string{in, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	files := make([]string, len(c.Inputs))
	names := make(map[string]string, len(c.Inputs))
	for i, ref := range c.Inputs {
		if files[i], err = nodes.InputFile(r, ref); err != nil {
			return err
		}
		names[ref.Node] = strconv.Itoa(i) + ".parquet"
	}
	manifest, err := json.MarshalIndent(names, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(in, "inputs.json"), append(manifest, '\n'), 0o644); err != nil {
		return err
	}
	log := &lineLog{r: r}
	start := time.Now()
	where := ""
	if p.inContainer() {
		where, err = runContainer(ctx, r, c, p, in, files, out, log)
	} else {
		where = "on this machine"
		err = runLocal(ctx, c, p, work, in, files, out, log)
	}
	log.Close()
	if err != nil {
		return err
	}
	elapsed := time.Since(start).Round(time.Millisecond)
	rows, err := collect(r, out)
	if err != nil {
		return err
	}
	var size int64
	for _, row := range rows {
		size += row.Size
	}
	plural := "s"
	if len(rows) == 1 {
		plural = ""
	}
	r.Note("%d output%s, %d bytes; ran %s in %s", len(rows), plural, size, where, elapsed)
	return t.Write(r, rows)
}

// runContainer runs the command in the pinned image: inputs mounted one
// file each under /lacuna/in, read-only, the output directory at
// /lacuna/out. It returns the container's description for the note.
func runContainer(ctx context.Context, r nodes.Run, c *commandConfig, p *commandPin, in string, files []string, out string, log io.Writer) (string, error) {
	env := map[string]string{}
	for k, v := range p.runner.Env {
		env[k] = v
	}
	for k, v := range c.Env {
		env[k] = v
	}
	env["LACUNA_IN"], env["LACUNA_OUT"] = containerIn, containerOut
	mounts := []container.Mount{{Source: filepath.Join(in, "inputs.json"), Target: containerIn + "/inputs.json"}}
	for i, f := range files {
		mounts = append(mounts, container.Mount{Source: f, Target: containerIn + "/" + strconv.Itoa(i) + ".parquet"})
	}
	spec := container.Spec{
		Image:   p.image,
		Name:    containerName(r.Node()),
		Inputs:  mounts,
		Output:  container.Mount{Source: out, Target: containerOut},
		Env:     env,
		Workdir: c.Workdir,
		CPUs:    p.runner.CPUs,
		Memory:  p.memory,
		Log:     log,
	}
	if len(c.Command) > 0 {
		spec.Entrypoint, spec.Args = c.Command[0], c.Command[1:]
	}
	for i := 0; i < p.runner.GPUs; i++ {
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

// runLocal runs the command as a process of its own group in p.dir, with
// the inputs linked under in; the group is killed when ctx is cancelled
// and once the command has exited, so nothing it started outlives it.
func runLocal(ctx context.Context, c *commandConfig, p *commandPin, work, in string, files []string, out string, log *lineLog) error {
	sum, err := nodes.ContentDigest(p.program)
	if err != nil {
		return err
	}
	if sum != p.programSum {
		return fmt.Errorf("command: %s changed after it was resolved (content %s, resolved %s)", p.program, sum, p.programSum)
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
	home, tmp := filepath.Join(work, "home"), filepath.Join(work, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	env := map[string]string{"PATH": p.path, "HOME": home, "TMPDIR": tmp}
	for k, v := range p.runner.Env {
		env[k] = v
	}
	for k, v := range c.Env {
		env[k] = v
	}
	env["LACUNA_IN"], env["LACUNA_OUT"] = in, out
	cmd := exec.CommandContext(ctx, p.program, c.Command[1:]...)
	cmd.Args[0] = c.Command[0]
	cmd.Dir = p.dir
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	sort.Strings(cmd.Env)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A child that keeps the output pipe open is not waited for.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("command %s: %w", c.Command[0], err)
	}
	err = cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if ctx.Err() != nil {
		return fmt.Errorf("command %s: %w", c.Command[0], ctx.Err())
	}
	// A local process is not confined: make sure it left the store's
	// objects as they were (a container mounts them read-only).
	for i, f := range files {
		if sum, serr := contentSum(f); serr != nil || sum != sums[i] {
			return fmt.Errorf("command %s wrote to input %s ($LACUNA_IN/%d.parquet, the store's object): inputs are read-only", c.Command[0], c.Inputs[i].Node, i)
		}
	}
	var xerr *exec.ExitError
	if errors.As(err, &xerr) {
		msg := fmt.Sprintf("command %s (%s) failed: %s", c.Command[0], p.program, xerr.ProcessState)
		if last := log.Last(); last != "" {
			msg += ": " + last
		}
		return errors.New(msg)
	}
	if err != nil {
		return fmt.Errorf("command %s: %w", c.Command[0], err)
	}
	return nil
}

// collect turns the top-level entries of the output directory, sorted by
// name, into rows, storing each as a blob.
func collect(r nodes.Run, out string) ([]CommandRow, error) {
	entries, err := os.ReadDir(out)
	if err != nil {
		return nil, err
	}
	rows := make([]CommandRow, 0, len(entries))
	for _, e := range entries {
		full := filepath.Join(out, e.Name())
		st, err := os.Lstat(full)
		if err != nil {
			return nil, err
		}
		row := CommandRow{Name: e.Name()}
		switch {
		case st.Mode().IsRegular():
			row.Kind, row.Size = "file", st.Size()
			if row.ContentBlob, row.Text, err = putFile(r, full, st.Size()); err != nil {
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
			row.ContentBlob = string(d)
		default:
			return nil, fmt.Errorf("output %s is a %v: a command's outputs are files and directories", e.Name(), st.Mode().Type())
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
	if size > MaxCommandText {
		d, err := r.PutBlob(f)
		return string(d), "", err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return "", "", err
	}
	d, err := r.PutBlob(bytes.NewReader(data))
	text := ""
	if utf8.Valid(data) && len(data) <= MaxCommandText {
		text = string(data)
	}
	return string(d), text, err
}

// lineLog writes what a command prints into the node's log, one line per
// Logf; a line longer than maxLogLine is cut into pieces. Safe for
// concurrent writers.
type lineLog struct {
	r    nodes.Run
	mu   sync.Mutex
	buf  []byte
	last string // the last non-empty line
}

// Last is the last non-empty line written so far.
func (l *lineLog) Last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := strings.TrimSpace(string(l.buf)); s != "" {
		return s
	}
	return l.last
}

func (l *lineLog) line(s string) {
	l.r.Logf("%s", s)
	if t := strings.TrimSpace(s); t != "" {
		l.last = t
	}
}

const maxLogLine = 16 << 10

func (l *lineLog) Write(p []byte) (int, error) {
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
func (l *lineLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.line(string(l.buf))
		l.buf = nil
	}
	return nil
}
