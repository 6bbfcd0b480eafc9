package generic

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/jobenv"
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
const MaxCommandText = jobenv.MaxText

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
		if !jobenv.ValidEnvName(k) {
			return nodes.Errorf("env", "Invalid variable name", "%q is not a variable name.", k)
		}
		if slices.Contains(jobenv.Reserved, k) {
			return nodes.Errorf("env", "Reserved variable", "%s is set by the node.", k)
		}
	}
	return nil
}

// Resolve pins where the command runs (jobenv.Resolve): a container's
// image by digest, or a local program by content. The runner's env enters
// the key too; its resources do not.
func (commandType) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	c := r.Config().(*commandConfig)
	argv0 := ""
	if len(c.Command) > 0 {
		argv0 = c.Command[0]
	}
	p, id, err := jobenv.Resolve(ctx, r, "command", argv0, c.Workdir)
	if err != nil {
		return nil, err
	}
	return &nodes.Pinned{Identity: id, Value: p}, nil
}

func (t commandType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	p, ok := r.Pinned().(*jobenv.Pin)
	if !ok {
		return errors.New("command: not resolved")
	}
	out, err := os.MkdirTemp("", "lacuna-command-out-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	log := jobenv.NewLineLog(r)
	job := jobenv.Job{
		Inputs:  c.Inputs,
		Workdir: c.Workdir,
		Log:     log,
		Env:     func(jobenv.Paths) map[string]string { return c.Env },
	}
	if len(c.Command) > 0 {
		job.Argv = func(jobenv.Paths) []string { return c.Command }
	}
	start := time.Now()
	where, err := p.Run(ctx, r, job, out)
	log.Close()
	if err != nil {
		return err
	}
	elapsed := time.Since(start).Round(time.Millisecond)
	outs, err := jobenv.Collect(r, out)
	if err != nil {
		return err
	}
	rows := make([]CommandRow, len(outs))
	var size int64
	for i, o := range outs {
		rows[i] = CommandRow{Name: o.Name, Kind: o.Kind, Size: o.Size, ContentBlob: o.Blob, Text: o.Text}
		size += o.Size
	}
	plural := "s"
	if len(rows) == 1 {
		plural = ""
	}
	r.Note("%d output%s, %d bytes; ran %s in %s", len(rows), plural, size, where, elapsed)
	return t.Write(r, rows)
}
