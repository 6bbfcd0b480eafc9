package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
)

// pinnedType reads a file in Resolve and writes what Resolve pinned. Its
// afterResolve hook edits the file between Resolve and Run, as a user
// saving the file at that moment would.
type pinnedType struct{}

type pinnedConfig struct {
	Path string `hcl:"path"`
}

type pinnedRow struct {
	Content string `parquet:"content"`
	Env     string `parquet:"env"`
}

var afterResolve func()

func (pinnedType) Name() string    { return "pinned_file" }
func (pinnedType) Version() string { return "1" }
func (pinnedType) NewConfig() any  { return &pinnedConfig{} }
func (pinnedType) Resolve(_ context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	b, err := os.ReadFile(filepath.Join(r.Dir(), r.Config().(*pinnedConfig).Path))
	if err != nil {
		return nil, err
	}
	if afterResolve != nil {
		afterResolve()
	}
	v := pinnedRow{Content: string(b), Env: r.Getenv("PINNED_TEST")}
	return &nodes.Pinned{Identity: map[string]string{"content": v.Content, "env": v.Env}, Value: v}, nil
}
func (pinnedType) Run(_ context.Context, r nodes.Run) error {
	w, err := r.Output(artifacts.SchemaOf[pinnedRow]())
	if err != nil {
		return err
	}
	return w.Write(r.Pinned().(pinnedRow))
}

func init() { nodes.Register(pinnedType{}) }

func TestRunComputesFromWhatResolvePinned(t *testing.T) {
	h := newHarness(t)
	file := filepath.Join(h.dir, "in.txt")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const src = `node "pinned_file" "f" { path = "in.txt" }`
	output := func(res map[*Instance]*Result) pinnedRow {
		t.Helper()
		for i, r := range res {
			if i.Addr == "node.pinned_file.f" {
				rd, err := h.store.Open(r.Output)
				if err != nil {
					t.Fatal(err)
				}
				rows, err := artifacts.ReadAll[pinnedRow](rd)
				if err != nil || len(rows) != 1 {
					t.Fatalf("rows %v, %v", rows, err)
				}
				return rows[0]
			}
		}
		t.Fatal("no result")
		return pinnedRow{}
	}
	env := func(v string) func(*Executor) {
		return func(x *Executor) { x.Environ = []string{"PINNED_TEST=" + v, "OTHER=x"} }
	}

	write("A")
	afterResolve = func() { write("B") } // saved just after the key was computed
	defer func() { afterResolve = nil }()
	_, res, err := h.run(src, env("1"))
	if err != nil {
		t.Fatal(err)
	}
	if got := output(res); got.Content != "A" || got.Env != "1" {
		t.Fatalf("first run wrote %+v, want the pinned content A and env 1", got)
	}
	afterResolve = nil

	// The file now holds B: the key must differ from the one that holds A.
	if p := h.plan(src)["node.pinned_file.f"]; p.Status != PlanRun || !strings.Contains(p.Reason, "identity changed: content A → B") {
		t.Fatalf("plan after the edit: %+v", p)
	}
	states, res, err := h.run(src, env("1"))
	if err != nil || states["node.pinned_file.f"] != EventDone || output(res).Content != "B" {
		t.Fatalf("second run: %v %v %+v", states, err, output(res))
	}

	// Back to A: the first run's rows are reused, and they say A.
	write("A")
	states, res, err = h.run(src, env("1"))
	if err != nil || states["node.pinned_file.f"] != EventCached || output(res).Content != "A" {
		t.Fatalf("run after reverting: %v %v %+v", states, err, output(res))
	}

	// The environment reaches Resolve only through the executor.
	states, res, err = h.run(src, env("2"))
	if err != nil || states["node.pinned_file.f"] != EventDone || output(res).Env != "2" {
		t.Fatalf("run with another environment: %v %v %+v", states, err, output(res))
	}
}

// A node whose key cannot be computed now (its Resolve fails, as with a
// model server that is down) is an error to plan and run, and its last
// run's result to the read-only commands (Executor.LastKnown).
func TestLastKnownResultWhenResolveFails(t *testing.T) {
	h := newHarness(t)
	file := filepath.Join(h.dir, "in.txt")
	if err := os.WriteFile(file, []byte("A"), 0o644); err != nil {
		t.Fatal(err)
	}
	const src = `node "pinned_file" "f" { path = "in.txt" }`
	_, res, err := h.run(src, func(*Executor) {})
	if err != nil {
		t.Fatal(err)
	}
	var first Result
	for _, r := range res {
		first = *r
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if p := h.plan(src)["node.pinned_file.f"]; p.Status != PlanError {
		t.Fatalf("plan: %+v, want an error", p)
	}
	x := &Executor{Store: h.store, Pipeline: filepath.Join(h.dir, "p.hcl"), LastKnown: true}
	entries, err := x.Plan(context.Background(), h.graph(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := entries[0]
	if e.Status != PlanCached || e.Key != first.Key || e.Digest != first.Output.Digest || !strings.Contains(e.Reason, "cannot be checked now") ||
		len(e.LastKnown) != 1 || e.LastKnown[0] != "node.pinned_file.f" {
		t.Fatalf("last-known plan: %+v, want the first run's %s / %s", e, first.Key, first.Output.Digest)
	}

	// Another config is not the last run's: no last-known result for it.
	const other = `node "pinned_file" "f" { path = "other.txt" }`
	entries, err = x.Plan(context.Background(), h.graph(other), nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := entries[0]; e.Status != PlanError {
		t.Fatalf("last-known plan after a config change: %+v, want an error", e)
	}
}
