package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
)

// Flag groups shared by commands. Each adds its flags to a command's flag
// set with add, so that a flag means the same thing, with the same help,
// in every command that has it.

// multiFlag collects repeated flags.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// storeFlag is --store: where the store is.
type storeFlag struct{ dir string }

func (s *storeFlag) add(fs *flag.FlagSet, dflt string) {
	fs.StringVar(&s.dir, "store", "", "store directory (default: $LACUNA_STORE, else "+dflt+")")
}

// root is the store's directory: --store, else $LACUNA_STORE, else
// .lacuna in dir.
func (s *storeFlag) root(dir string) string {
	if s.dir != "" {
		return s.dir
	}
	if env.store != "" {
		return env.store
	}
	return filepath.Join(dir, ".lacuna")
}

// create opens the store, creating it when there is none: for run, the
// one command that writes results.
func (s *storeFlag) create(dir string) (*artifacts.Store, error) {
	return artifacts.Open(s.root(dir), artifacts.WithSyncEach(env.syncEach))
}

// open opens an existing store. Reading commands use it: they never leave
// an empty store behind, and a missing one is a clear error.
func (s *storeFlag) open(dir string) (*artifacts.Store, error) {
	root := s.root(dir)
	st, err := artifacts.OpenExisting(root, artifacts.WithSyncEach(env.syncEach))
	if errors.Is(err, artifacts.ErrNoStore) {
		return nil, noStoreError(root)
	}
	return st, err
}

// noStore is the error of a reading command given no store.
type noStore struct{ root string }

func (e *noStore) Error() string {
	return fmt.Sprintf("no store at %s; run `lacuna run` first or pass --store", e.root)
}

func noStoreError(root string) error { return &noStore{relPath(absPath(root))} }

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// openHere opens the existing store of a command given no pipeline:
// ./.lacuna by default.
func (s *storeFlag) openHere() (*artifacts.Store, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return s.open(wd)
}

// jsonFlag is --json: machine-readable output.
type jsonFlag struct{ json bool }

func (j *jsonFlag) add(fs *flag.FlagSet) {
	fs.BoolVar(&j.json, "json", false, "machine-readable output")
}

// pipelineFlags are the flags of every command that loads a pipeline:
// --store, --var, --var-file and --json.
type pipelineFlags struct {
	storeFlag
	jsonFlag
	vars     multiFlag
	varFiles multiFlag
}

func (p *pipelineFlags) add(fs *flag.FlagSet) {
	p.storeFlag.add(fs, ".lacuna beside the pipeline")
	fs.Var(&p.vars, "var", "set a variable: NAME=VALUE (repeatable)")
	fs.Var(&p.varFiles, "var-file", "read variables from an HCL or JSON file (repeatable)")
	p.jsonFlag.add(fs)
}

// targetFlag is --target: restrict a command to nodes and what they need.
type targetFlag struct{ addrs multiFlag }

func (t *targetFlag) add(fs *flag.FlagSet, verb string) {
	fs.Var(&t.addrs, "target", verb+" only this node and what it needs (repeatable)")
}

// jobsFlag is -j: how many nodes run at once.
type jobsFlag struct{ n int }

func (j *jobsFlag) add(fs *flag.FlagSet) {
	fs.IntVar(&j.n, "j", runtime.NumCPU(), "nodes to run in parallel")
}

// loaded is a pipeline ready to plan or run.
type loaded struct {
	path  string
	graph *engine.Graph
	store *artifacts.Store // nil for storeNone
	// cleanup removes what loading made for the command alone (the
	// empty store of storeOrEmpty); the command calls it when done.
	cleanup func()
}

// storeUse is what a command needs of the pipeline's store.
type storeUse int

const (
	// storeExisting: the store must exist (cat, show, export, verify,
	// gc): a missing one is noStoreError, and none is created.
	storeExisting storeUse = iota
	// storeNone: the command does not open the store (graph).
	storeNone
	// storeValidate: as storeNone, and the files nodes name (an import's
	// path) are checked with the rest, so that validate reports every
	// problem in one pass (engine.CheckFiles).
	storeValidate
	// storeCreate: the store is created when missing (run).
	storeCreate
	// storeOrEmpty: a missing store reads as an empty one, made in a
	// temporary directory and removed by cleanup (plan: what a first run
	// would do), and nothing is created beside the pipeline.
	storeOrEmpty
)

// load parses and expands the pipeline at path and opens its existing
// store, printing diagnostics to stderr.
func (p *pipelineFlags) load(path string) (*loaded, error) {
	return p.loadWith(path, storeExisting)
}

// loadWith is load with the store opened as use says.
func (p *pipelineFlags) loadWith(path string, use storeUse) (*loaded, error) {
	vars := map[string]string{}
	for _, v := range p.vars {
		k, val, ok := strings.Cut(v, "=")
		if !ok {
			return nil, usageError(fmt.Sprintf("--var %q: want NAME=VALUE", v))
		}
		vars[k] = val
	}
	if !env.gogcSet {
		// Loading a large pipeline makes much short-lived garbage and
		// little live heap: collecting less often while loading halves
		// the time of a no-op run of 10,000 nodes. Runs collect as usual,
		// keeping peak memory down while nodes decode Parquet.
		old := debug.SetGCPercent(400)
		defer debug.SetGCPercent(old)
	}
	cfg, diags := engine.Load(path)
	if diags.HasErrors() {
		printDiags(os.Stderr, diags, cfg)
		return nil, exitError(1)
	}
	g, d := engine.Expand(cfg, engine.Options{Vars: vars, VarFiles: p.varFiles})
	diags = append(diags, d...)
	if use == storeValidate && g != nil {
		// Files named by nodes must exist now; plan and run leave them to
		// the nodes, so that cat and show still reach the last results of
		// a pipeline whose input file moved.
		diags = append(diags, engine.CheckFiles(g)...)
		// In the order of the file, as a person fixes them.
		sort.SliceStable(diags, func(i, j int) bool {
			a, b := diags[i].Subject, diags[j].Subject
			if a == nil || b == nil {
				return a == nil && b != nil
			}
			if a.Filename != b.Filename {
				return a.Filename < b.Filename
			}
			return a.Start.Byte < b.Start.Byte
		})
	}
	printDiags(os.Stderr, diags, cfg)
	if diags.HasErrors() {
		return nil, exitError(1)
	}
	cfg.ReleaseSyntax()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	l := &loaded{path: abs, graph: g, cleanup: func() {}}
	switch use {
	case storeExisting:
		l.store, err = p.open(cfg.Dir)
	case storeCreate:
		l.store, err = p.create(cfg.Dir)
	case storeOrEmpty:
		l.store, err = p.open(cfg.Dir)
		var none *noStore
		if errors.As(err, &none) {
			fmt.Fprintf(os.Stderr, "note: no store at %s yet: planning against an empty one (nothing is created)\n", none.root)
			var tmp string
			if tmp, err = os.MkdirTemp("", "lacuna-empty-store-"); err != nil {
				break
			}
			l.cleanup = func() { os.RemoveAll(tmp) }
			l.store, err = artifacts.Open(tmp)
		}
	}
	if err != nil {
		l.cleanup()
		return nil, err
	}
	return l, nil
}

func (l *loaded) executor() *engine.Executor {
	return &engine.Executor{Store: l.store, Pipeline: l.path, Environ: nodeEnviron}
}

// reader is the executor of commands that only read results (cat, show,
// export, gc): a node whose key cannot be computed now, such as one whose
// model server is down, is taken at the output the last run recorded.
func (l *loaded) reader() *engine.Executor {
	x := l.executor()
	x.LastKnown = true
	return x
}

// onePipeline is the single PIPELINE argument of a command.
func onePipeline(pos []string, cmd *Command) (string, error) {
	if len(pos) != 1 {
		return "", usageError(fmt.Sprintf("want one pipeline file or directory: lacuna %s %s", cmd.Name, cmd.UsageLine))
	}
	return pos[0], nil
}

func isPipelinePath(s string) bool {
	if strings.HasSuffix(s, ".hcl") {
		return true
	}
	st, err := os.Stat(s)
	return err == nil && st.IsDir()
}
