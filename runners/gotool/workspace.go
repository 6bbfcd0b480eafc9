package gotool

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// Workspace is where generated programs are written and run: a private
// directory under the toolchain's Cache/tmp and the sandbox wrapper
// (go test -exec) that runs their test binaries inside it. Bundle
// validation and harness runs both use one. A Workspace is used by one
// caller at a time; Close removes the directory unless Options.KeepWork.
type Workspace struct {
	Dir  string // the work directory (BatchOptions.WorkDir)
	Exec string // the sandbox wrapper (BatchOptions.Exec)
	// ExecFD is the wrapper for programs handed descriptors of their own
	// (BatchOptions.ExecFD; sandbox.ExecWrapperForDescriptors).
	ExecFD    string
	Isolation string // what isolates the programs: "bubblewrap" or "rlimits"
	sb        *sandbox.Sandbox
	keep      bool
}

// NewWorkspace makes a work directory named prefix-* and writes the
// wrapper of sb into it, with limits lim for every test binary.
func (t *Toolchain) NewWorkspace(sb *sandbox.Sandbox, prefix string, lim sandbox.Limits) (*Workspace, error) {
	dir, err := os.MkdirTemp(filepath.Join(t.Cache, "tmp"), prefix+"-")
	if err != nil {
		return nil, fmt.Errorf("work directory: %w", err)
	}
	w := &Workspace{Dir: dir, Isolation: sb.Isolation(), sb: sb, keep: t.opts.KeepWork}
	if w.Exec, err = sb.ExecWrapper(dir, lim); err == nil {
		w.ExecFD, err = sb.ExecWrapperForDescriptors(dir, lim)
	}
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sandbox wrapper: %w", err)
	}
	return w, nil
}

// BatchOptions are the options of a batch run in this workspace: the
// test binaries run through the sandbox wrapper, and the go command that
// compiles them runs under the sandbox's tool limits (BuildLimits unless
// topts.Build says otherwise).
func (w *Workspace) BatchOptions(topts TestOptions) BatchOptions {
	if topts.Sandbox == nil {
		topts.Sandbox = w.sb
	}
	return BatchOptions{Exec: w.Exec, ExecFD: w.ExecFD, WorkDir: w.Dir, TestOptions: topts}
}

// Close removes the work directory, unless it is kept for debugging.
func (w *Workspace) Close() error {
	if w.keep {
		return nil
	}
	return os.RemoveAll(w.Dir)
}
