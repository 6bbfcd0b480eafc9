package engine

import (
	"fmt"
	"os"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
)

// Compile-time checks: the optional interfaces node code asks for.
var (
	_ nodes.RunnerEnv  = resolveEnv{}
	_ nodes.RunnerEnv  = (*runEnv)(nil)
	_ nodes.InputFiles = (*runEnv)(nil)
)

// runner decodes the runner block the instance names (the zero Runner
// when it names none).
func (i *Instance) runner() (nodes.Runner, error) {
	if i.Runner == "" {
		return nodes.Runner{}, nil
	}
	if i.runnerBlock == nil || i.runnerBlock.IsNull() || !i.runnerBlock.IsKnown() {
		return nodes.Runner{}, fmt.Errorf("runner %s: its block has no value", i.Runner)
	}
	return nodes.DecodeRunner(i.Runner, *i.runnerBlock)
}

// Runner is the instance's runner block (nodes.RunnerEnv).
func (r resolveEnv) Runner() (nodes.Runner, error) { return r.inst.runner() }

// Runner is the instance's runner block (nodes.RunnerEnv).
func (r *runEnv) Runner() (nodes.Runner, error) { return r.inst.runner() }

// InputFile is the path of an input's object in the store, once its rows
// (Input) and then the bytes now in the file (their checksum against what
// Input verified, which may have come from the store's cache of decoded
// objects) are verified (nodes.InputFiles).
func (r *runEnv) InputFile(ref nodes.Ref) (string, error) {
	rd, err := r.Input(ref)
	if err != nil {
		return "", err
	}
	path := r.w.x.Store.ObjectPath(rd.Object.Digest)
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", ref.Node, err)
	}
	if sum := artifacts.SumBytes(data); sum != rd.Object.FileSum {
		return "", fmt.Errorf("read %s: object %s: file checksum %s, verified %s: %w", ref.Node, rd.Object.Digest, sum, rd.Object.FileSum, artifacts.ErrCorrupt)
	}
	return path, nil
}
