package nodes

import (
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"
)

// Runner is a runner block (`runner "gpu" { kind = "container" ... }`) as
// a node sees it: where and with what resources its instance runs (or,
// named by a model's serve block, its server: Serve.ServeRunner). The
// zero value is no runner: this process, on this machine. Fields left out
// of the block are zero.
type Runner struct {
	// Name is the block's label ("gpu" for runner.gpu).
	Name string
	// Kind is "local", "container" or "slurm" ("" when not set: local).
	Kind        string
	Concurrency int
	// Image is a container runner's image, by tag or digest.
	Image string
	// Engine is a container runner's engine: podman, docker or a path.
	Engine string
	// CPUs and Memory ("16G", "512M"; a bare number is MiB, as SLURM's
	// --mem) bound each instance; MemoryBytes reads Memory.
	CPUs   float64
	Memory string
	GPUs   int
	// GPUType, Partition, Account and Time are SLURM's.
	GPUType   string
	Partition string
	Account   string
	Time      string
	// Env is what each instance gets in its environment (a container gets
	// only these).
	Env map[string]string
	// Args are further options: a container engine's global arguments
	// ("--runtime=runc"), or #SBATCH lines.
	Args []string
}

// ContainerType is implemented by node types that run their work in the
// image of a container runner (command): only those may name one.
type ContainerType interface {
	RunsInContainers() bool
}

// RunnerEnv is implemented by the engine's Resolve and Run of an instance:
// the runner block the instance names (`runner = runner.X`). Node code
// calls RunnerOf rather than asserting it.
type RunnerEnv interface {
	// Runner is the instance's runner block, the zero Runner when it
	// names none; an error when the block cannot be read as a Runner
	// (gpus = 1.5).
	Runner() (Runner, error)
}

// RunnerOf is the runner of the instance that x (a Resolve or a Run)
// belongs to: the zero Runner when it names none, or when x is not the
// engine's.
func RunnerOf(x any) (Runner, error) {
	if re, ok := x.(RunnerEnv); ok {
		return re.Runner()
	}
	return Runner{}, nil
}

// InputFiles is implemented by the engine's Run: where an input artifact's
// Parquet file is, for a program outside lacuna to read (a container
// mounts it read-only). Node code calls InputFile rather than asserting it.
type InputFiles interface {
	// InputFile is the path of the input's object in the store, verified
	// as Input verifies it (its rows and the checksum of its bytes) just
	// before it returns. Objects are immutable: the file must only be
	// read.
	InputFile(ref Ref) (string, error)
}

// InputFile is the verified path of input ref's Parquet file (see
// InputFiles).
func InputFile(r Run, ref Ref) (string, error) {
	f, ok := r.(InputFiles)
	if !ok {
		return "", fmt.Errorf("input %s: this run (%T) cannot name its inputs' files", ref.Node, r)
	}
	return f.InputFile(ref)
}

// runnerBlock is the runner block's schema (engine/blocks.go) as gocty
// decodes it: every attribute is present, null when not set.
type runnerBlock struct {
	Kind        *string           `cty:"kind"`
	Concurrency *big.Float        `cty:"concurrency"`
	Image       *string           `cty:"image"`
	Engine      *string           `cty:"engine"`
	CPUs        *big.Float        `cty:"cpus"`
	Memory      *string           `cty:"memory"`
	GPUs        *big.Float        `cty:"gpus"`
	GPUType     *string           `cty:"gpu_type"`
	Partition   *string           `cty:"partition"`
	Account     *string           `cty:"account"`
	Time        *string           `cty:"time"`
	Env         map[string]string `cty:"env"`
	Args        []string          `cty:"args"`
}

// DecodeRunner reads the value of runner block name (an object with the
// runner schema's attributes, as the engine evaluates it).
func DecodeRunner(name string, v cty.Value) (Runner, error) {
	var b runnerBlock
	if err := gocty.FromCtyValue(v, &b); err != nil {
		return Runner{}, fmt.Errorf("runner %s: %w", name, err)
	}
	r := Runner{Name: name, Env: b.Env, Args: b.Args}
	for _, s := range []struct {
		dst *string
		src *string
	}{{&r.Kind, b.Kind}, {&r.Image, b.Image}, {&r.Engine, b.Engine}, {&r.Memory, b.Memory}, {&r.GPUType, b.GPUType}, {&r.Partition, b.Partition}, {&r.Account, b.Account}, {&r.Time, b.Time}} {
		if s.src != nil {
			*s.dst = *s.src
		}
	}
	for _, n := range []struct {
		attr string
		dst  *int
		src  *big.Float
	}{{"concurrency", &r.Concurrency, b.Concurrency}, {"gpus", &r.GPUs, b.GPUs}} {
		if n.src == nil {
			continue
		}
		i, acc := n.src.Int64()
		if acc != big.Exact || i < 0 || i > 1<<20 {
			return Runner{}, fmt.Errorf("runner %s: %s = %s: want a whole number from 0", name, n.attr, n.src.Text('g', 10))
		}
		*n.dst = int(i)
	}
	if b.CPUs != nil {
		r.CPUs, _ = b.CPUs.Float64()
		if r.CPUs < 0 {
			return Runner{}, fmt.Errorf("runner %s: cpus = %g: want a positive number", name, r.CPUs)
		}
	}
	return r, nil
}

var memoryPattern = regexp.MustCompile(`^(\d+)\s*([KMGT]?)(I?B?)$`)

// MemoryBytes reads Memory: "16G", "512M", "64K", "1T" (binary units; an
// "i" or "B" after the unit is allowed), "4096B" as bytes and a bare
// number as MiB. Zero when Memory is empty.
func (r Runner) MemoryBytes() (int64, error) {
	if r.Memory == "" {
		return 0, nil
	}
	m := memoryPattern.FindStringSubmatch(strings.ToUpper(strings.TrimSpace(r.Memory)))
	if m == nil {
		return 0, fmt.Errorf("runner %s: memory %q: want a size such as 512M or 16G", r.Name, r.Memory)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	shift := map[string]uint{"K": 10, "": 20, "M": 20, "G": 30, "T": 40}[m[2]]
	if m[2] == "" && m[3] == "B" {
		shift = 0 // "1024B": bytes
	}
	if err != nil || n > (1<<62)>>shift {
		return 0, fmt.Errorf("runner %s: memory %q is too large", r.Name, r.Memory)
	}
	return n << shift, nil
}
