// Command lacuna runs declarative data pipelines whose nodes produce
// content-addressed Parquet artifacts. See README.md for a tour.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"

	_ "github.com/lacuna-dev/lacuna/nodes/bundle"
	_ "github.com/lacuna-dev/lacuna/nodes/discovery"
	_ "github.com/lacuna-dev/lacuna/nodes/generic"
	_ "github.com/lacuna-dev/lacuna/nodes/tasks"
)

type command struct {
	name, args, help string
	run              func(ctx context.Context, args []string) error
}

var commands []command

func init() {
	commands = []command{
		{"validate", "PIPELINE", "check a pipeline: syntax, references, types, cycles", cmdValidate},
		{"plan", "PIPELINE", "show what a run would do and why", cmdPlan},
		{"run", "PIPELINE", "run a pipeline (or --target nodes and what they need)", cmdRun},
		{"show", "[PIPELINE] ADDR|DIGEST", "provenance, digest, schema and row count of an artifact", cmdShow},
		{"cat", "[PIPELINE] ADDR|DIGEST", "print an artifact's rows", cmdCat},
		{"export", "PIPELINE --to DIR", "write every artifact under readable names, with DuckDB views", cmdExport},
		{"verify", "PIPELINE ADDR...", "recompute nodes ignoring the cache and compare digests", cmdVerify},
		{"graph", "PIPELINE", "print the node graph (DOT or Mermaid)", cmdGraph},
		{"fmt", "FILE...", "format pipeline files", cmdFmt},
		{"types", "", "list node types and their attributes", cmdTypes},
		{"gc", "PIPELINE...", "delete what the given pipelines do not reference", cmdGC},
		{"fsck", "", "verify every object in the store; quarantine corrupt ones", cmdFsck},
		{"version", "", "print the version", func(context.Context, []string) error { fmt.Println("lacuna", engine.Version); return nil }},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "lacuna %s: declarative pipelines of content-addressed Parquet artifacts\n\nUsage:\n", engine.Version)
	for _, c := range commands {
		fmt.Fprintf(w, "  lacuna %-8s %-26s %s\n", c.name, c.args, c.help)
	}
	fmt.Fprintln(w, "\nRun 'lacuna COMMAND -h' for a command's flags. The store is .lacuna/ beside the pipeline unless --store or LACUNA_STORE says otherwise.")
}

// exitError carries an exit status without a message of its own.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit %d", int(e)) }

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage(os.Stdout)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// A second signal exits at once.
		<-ctx.Done()
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		<-ch
		os.Exit(130)
	}()
	if path := os.Getenv("LACUNA_CPUPROFILE"); path != "" {
		// For benchmarking lacuna itself: go tool pprof lacuna PATH.
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	governMemory(ctx)
	name := os.Args[1]
	for _, c := range commands {
		if c.name == name {
			err := c.run(ctx, os.Args[2:])
			pprof.StopCPUProfile()
			if path := os.Getenv("LACUNA_MEMPROFILE"); path != "" {
				if f, ferr := os.Create(path); ferr == nil {
					pprof.Lookup("allocs").WriteTo(f, 0)
					f.Close()
				}
			}
			var ee exitError
			switch {
			case err == nil:
			case errors.As(err, &ee):
				os.Exit(int(ee))
			case errors.Is(err, flag.ErrHelp):
				os.Exit(0)
			default:
				fmt.Fprintln(os.Stderr, "lacuna "+name+": "+err.Error())
				os.Exit(1)
			}
			return
		}
	}
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	fmt.Fprintf(os.Stderr, "lacuna: unknown command %q\n\n", name)
	usage(os.Stderr)
	os.Exit(2)
}

// parseFlags parses flags given anywhere among the arguments, as users
// type them: `lacuna run p.hcl -j 4`.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if f := fs.Lookup(name); f != nil {
				if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
					continue
				}
				if i+1 < len(args) {
					flags = append(flags, args[i+1])
					i++
				}
			}
			continue
		}
		pos = append(pos, a)
	}
	if err := fs.Parse(flags); err != nil {
		return nil, err
	}
	return pos, nil
}

// multiFlag collects repeated flags.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// pipelineFlags are shared by the commands that load a pipeline.
type pipelineFlags struct {
	store    string
	vars     multiFlag
	varFiles multiFlag
	json     bool
}

func (p *pipelineFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.store, "store", "", "store directory (default: $LACUNA_STORE, else .lacuna beside the pipeline)")
	fs.Var(&p.vars, "var", "set a variable: NAME=VALUE (repeatable)")
	fs.Var(&p.varFiles, "var-file", "read variables from an HCL or JSON file (repeatable)")
	fs.BoolVar(&p.json, "json", false, "machine-readable output")
}

func newFlags(name, args string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: lacuna %s %s\n\nFlags:\n", name, args)
		fs.PrintDefaults()
	}
	return fs
}

// loaded is a pipeline ready to plan or run.
type loaded struct {
	path  string
	graph *engine.Graph
	store *artifacts.Store
}

// load parses, expands and opens the store, printing diagnostics.
func (p *pipelineFlags) load(path string) (*loaded, error) {
	vars := map[string]string{}
	for _, v := range p.vars {
		k, val, ok := strings.Cut(v, "=")
		if !ok {
			return nil, fmt.Errorf("--var %q: want NAME=VALUE", v)
		}
		vars[k] = val
	}
	if os.Getenv("GOGC") == "" {
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
	printDiags(os.Stderr, diags, cfg)
	if diags.HasErrors() {
		return nil, exitError(1)
	}
	cfg.ReleaseSyntax()
	st, err := openStore(p.store, cfg.Dir)
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(path)
	return &loaded{path: abs, graph: g, store: st}, nil
}

func openStore(flagValue, pipelineDir string) (*artifacts.Store, error) {
	root := flagValue
	if root == "" {
		root = os.Getenv("LACUNA_STORE")
	}
	if root == "" {
		root = filepath.Join(pipelineDir, ".lacuna")
	}
	return artifacts.Open(root, artifacts.WithSyncEach(os.Getenv("LACUNA_FSYNC") == "always" || os.Getenv("LACUNA_FSYNC") == "1"))
}

func (l *loaded) executor() *engine.Executor {
	return &engine.Executor{Store: l.store, Pipeline: l.path}
}

func isPipelinePath(s string) bool {
	if strings.HasSuffix(s, ".hcl") {
		return true
	}
	st, err := os.Stat(s)
	return err == nil && st.IsDir()
}
