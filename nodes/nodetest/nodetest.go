// Package nodetest runs pipelines in the tests of node types: HCL source
// through the real engine into a real store, with modules served by an
// offline file:// proxy. It is for tests only.
package nodetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/runners/modfetch/proxytest"
)

// Result is what one run of a pipeline did.
type Result struct {
	Store  *artifacts.Store
	Nodes  map[string]*engine.Result // by instance address
	Events []engine.Event
}

// Run runs the pipeline src as dir/p.hcl with its store in dir/.lacuna:
// running again in the same dir reuses what the first run computed. A
// failed node fails the test.
func Run(tb testing.TB, dir, src string) *Result {
	tb.Helper()
	r, err := run(tb, dir, src)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// RunErr is Run for a pipeline expected to fail: the nodes' results say
// how (Result.Err, State).
func RunErr(tb testing.TB, dir, src string) *Result {
	tb.Helper()
	r, _ := run(tb, dir, src)
	return r
}

func run(tb testing.TB, dir, src string) (*Result, error) {
	tb.Helper()
	file := filepath.Join(dir, "p.hcl")
	g, diags := engine.ExpandSource(file, []byte(src), dir, engine.Options{})
	if diags.HasErrors() {
		tb.Fatal(diags.Error())
	}
	st, err := artifacts.Open(filepath.Join(dir, ".lacuna"))
	if err != nil {
		tb.Fatal(err)
	}
	r := &Result{Store: st, Nodes: map[string]*engine.Result{}}
	// The test's environment is the run's, as the CLI hands it over.
	x := &engine.Executor{Store: st, Jobs: 2, Pipeline: file, Environ: os.Environ(), KeepGoing: true, Events: func(e engine.Event) { r.Events = append(r.Events, e) }}
	res, _, err := x.Run(context.Background(), g, nil)
	for i, out := range res {
		r.Nodes[i.Addr] = out
	}
	return r, err
}

// Read returns the rows of a node's output.
func Read[T any](tb testing.TB, r *Result, addr string) []T {
	tb.Helper()
	n, ok := r.Nodes[addr]
	if !ok {
		tb.Fatalf("no node %s in the run", addr)
	}
	rd, err := r.Store.Open(n.Output)
	if err != nil {
		tb.Fatal(err)
	}
	rows, err := artifacts.ReadAll[T](rd)
	if err != nil {
		tb.Fatal(err)
	}
	return rows
}

// Notes maps each node that emitted event (engine.EventDone,
// engine.EventCached) to its result note.
func (r *Result) Notes(event string) map[string]string {
	out := map[string]string{}
	for _, e := range r.Events {
		if e.Event == event {
			out[e.Node] = e.Message
		}
	}
	return out
}

// ShapesHead starts a pipeline over the offline fixture (OfflineShapes):
// a model with cutoff 2024-06-01, the library example.com/shapes and
// node.version_resolve.shapes. Tests append the nodes they are about.
const ShapesHead = `
model "m" {
  id     = "example/model"
  cutoff = "2024-06-01"
}
library "shapes" {
  ecosystem = "go"
  name      = "example.com/shapes"
}
node "version_resolve" "shapes" {
  library = library.shapes
  cutoff  = model.m.cutoff
}
`

// OfflineShapes serves the test module example.com/shapes
// (runners/modfetch/proxytest/testdata/shapes: v1.0.0 on 2024-01-10, v1.1.0 on
// 2024-09-01) as GOPROXY=file://..., without a checksum database, and
// points the Go build cache at the user's so tests do not rebuild the
// standard library. It skips the test when there is no go command.
func OfflineShapes(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		tb.Skip("no go command")
	}
	proxy := tb.TempDir()
	if err := proxytest.WriteShapes(proxy); err != nil {
		tb.Fatal(err)
	}
	tb.Setenv("GOPROXY", "file://"+proxy)
	tb.Setenv("GOSUMDB", "off")
	tb.Setenv("GOFLAGS", "")
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		tb.Setenv("LACUNA_GOCACHE", strings.TrimSpace(string(out)))
	}
}

// Plan plans src (written as dir/p.hcl) against the store in dir/.lacuna
// as `lacuna plan` does, counting model calls (CountCalls), and returns
// its entries. No node runs; a server a node calls is asked only what
// planning asks (its model list).
func Plan(tb testing.TB, dir, src string) []engine.PlanEntry {
	tb.Helper()
	file := filepath.Join(dir, "p.hcl")
	g, diags := engine.ExpandSource(file, []byte(src), dir, engine.Options{})
	if diags.HasErrors() {
		tb.Fatal(diags.Error())
	}
	st, err := artifacts.Open(filepath.Join(dir, ".lacuna"))
	if err != nil {
		tb.Fatal(err)
	}
	x := &engine.Executor{Store: st, Pipeline: file, Environ: os.Environ(), CountCalls: true}
	entries, err := x.Plan(context.Background(), g, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return entries
}
