package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
)

// callerType "calls a model" once per input row and sample: the answer is
// computed locally, but every call goes through the store's call cache as
// runners/llm's do, so plans can count what is cached. Its Resolve and
// PlanCalls fail with a ConfigError on request.
type callerType struct{}

type callerConfig struct {
	Input       nodes.Ref `hcl:"input"`
	Samples     int64     `hcl:"samples"`
	FailResolve *string   `hcl:"fail_resolve,optional"`
	FailPlan    *string   `hcl:"fail_plan,optional"`
}

func (callerType) Name() string    { return "caller" }
func (callerType) Version() string { return "1" }
func (callerType) NewConfig() any  { return &callerConfig{} }

func (callerType) Resolve(_ context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	if f := r.Config().(*callerConfig).FailResolve; f != nil {
		return nil, nodes.Errorf("fail_resolve", "Model server unreachable", "%s", *f)
	}
	return &nodes.Pinned{Identity: map[string]string{"model": "test@1"}}, nil
}

// callKey is the cache key of sample s of the call for value v.
func callKey(v, s int64) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "caller\x00%d\x00%d", v, s))
	return hex.EncodeToString(sum[:])
}

func callerValues(r nodes.Run) ([]int64, error) {
	rd, err := r.Input(r.Config().(*callerConfig).Input)
	if err != nil {
		return nil, err
	}
	rows, err := artifacts.ReadAll[valueRow](rd)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(rows))
	for n, row := range rows {
		out[n] = row.Value
	}
	return out, nil
}

func (callerType) CallsModels(any) bool { return true }

func (callerType) PlanCalls(_ context.Context, r nodes.Run) ([]nodes.CallPlan, error) {
	c := r.Config().(*callerConfig)
	if c.FailPlan != nil && *c.FailPlan == "panic" {
		panic("boom")
	}
	if c.FailPlan != nil {
		return nil, nodes.Errorf("fail_plan", "Missing bundle part", "%s", *c.FailPlan)
	}
	if _, err := r.Output(artifacts.SchemaOf[valueRow]()); err == nil {
		return nil, fmt.Errorf("Output worked while planning")
	}
	values, err := callerValues(r)
	if err != nil {
		return nil, err
	}
	p := nodes.CallPlan{Model: "test@1"}
	for _, v := range values {
		for s := int64(0); s < c.Samples; s++ {
			p.Calls++
			if _, ok, err := r.Calls().Get(callKey(v, s)); err != nil {
				return nil, err
			} else if ok {
				p.Cached++
				continue
			}
			p.PromptTokens += 100
			p.OutputTokens += 10
		}
	}
	return []nodes.CallPlan{p}, nil
}

func (callerType) Run(_ context.Context, r nodes.Run) error {
	c := r.Config().(*callerConfig)
	values, err := callerValues(r)
	if err != nil {
		return err
	}
	w, err := r.Output(artifacts.SchemaOf[valueRow]())
	if err != nil {
		return err
	}
	made, cached := 0, 0
	for _, v := range values {
		for s := int64(0); s < c.Samples; s++ {
			key := callKey(v, s)
			b, ok, err := r.Calls().Get(key)
			if err != nil {
				return err
			}
			if ok {
				cached++
			} else {
				made++
				b = fmt.Appendf(nil, "%d", v*100+s)
				if err := r.Calls().Put(key, b); err != nil {
					return err
				}
			}
			var answer int64
			fmt.Sscan(string(b), &answer)
			w.Write(valueRow{answer})
			r.Status("%d calls made, %d cached", made, cached)
		}
	}
	r.Report("usage", map[string]int{"calls": made, "cached": cached})
	return nil
}

func init() { nodes.Register(callerType{}) }

// releasedGraph expands src and drops its syntax, as the CLI does before
// planning or running.
func (h *harness) releasedGraph(src string) *Graph {
	h.t.Helper()
	cfg, diags := LoadSource(filepath.Join(h.dir, "p.hcl"), []byte(src), h.dir)
	if diags.HasErrors() {
		h.t.Fatal(diagText(diags))
	}
	g, diags := Expand(cfg, Options{})
	if diags.HasErrors() {
		h.t.Fatal(diagText(diags))
	}
	cfg.ReleaseSyntax()
	return g
}

func (h *harness) countCalls(src string) map[string]PlanEntry {
	h.t.Helper()
	x := &Executor{Store: h.store, Pipeline: filepath.Join(h.dir, "p.hcl"), CountCalls: true}
	entries, err := x.Plan(context.Background(), h.releasedGraph(src), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	m := map[string]PlanEntry{}
	for _, e := range entries {
		m[e.Node] = e
	}
	return m
}

const callerSrc = `
node "rows" "in" { values = [1, 2, 3] }
node "caller" "gen" {
  input   = node.rows.in
  samples = 2
}
`

func TestPlanCountsCallsCachedAndToMake(t *testing.T) {
	h := newHarness(t)
	e := h.countCalls(callerSrc)["node.caller.gen"]
	if e.Status != PlanRun || e.Calls != nil || !strings.Contains(e.CallsUnknown, "until its inputs exist") {
		t.Fatalf("before its input exists: %+v", e)
	}
	if _, _, err := h.run(`node "rows" "in" { values = [1, 2, 3] }`, nil); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{callKey(1, 0), callKey(3, 1)} {
		if err := h.store.Calls().Put(k, []byte("7")); err != nil {
			t.Fatal(err)
		}
	}
	e = h.countCalls(callerSrc)["node.caller.gen"]
	want := []nodes.CallPlan{{Model: "test@1", Calls: 6, Cached: 2, PromptTokens: 400, OutputTokens: 40}}
	if e.Status != PlanRun || e.CallsUnknown != "" || fmt.Sprint(e.Calls) != fmt.Sprint(want) {
		t.Fatalf("with 2 of 6 calls cached: %+v, want calls %v", e, want)
	}
	if e := h.plan(callerSrc)["node.caller.gen"]; e.Calls != nil {
		t.Errorf("a plan without CountCalls counted calls: %+v", e)
	}
	var status []Event
	_, res, err := h.run(callerSrc, func(x *Executor) {
		x.Events = func(e Event) {
			if e.Event == EventProgress {
				status = append(status, e)
			}
		}
	})
	if err != nil || len(res) != 2 {
		t.Fatalf("run: %v", err)
	}
	// The first Status is never throttled; the first call was cached.
	if len(status) == 0 || status[0].Node != "node.caller.gen" || status[0].Message != "0 calls made, 1 cached" {
		t.Errorf("status events %+v", status)
	}
	a, err := h.store.GetAction(h.countCalls(callerSrc)["node.caller.gen"].Key)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(a.Reports["usage"]); got != `{"cached":2,"calls":4}` {
		t.Errorf("usage report in provenance = %s", got)
	}
	if e := h.countCalls(callerSrc)["node.caller.gen"]; e.Status != PlanCached || e.Calls != nil || e.CallsUnknown != "" {
		t.Errorf("a cached node shows calls: %+v", e)
	}
}

func TestConfigErrorsOfResolveAndPlanCallsNameTheAttribute(t *testing.T) {
	h := newHarness(t)
	if _, _, err := h.run(`node "rows" "in" { values = [1, 2, 3] }`, nil); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(h.dir, "p.hcl")
	cases := []struct {
		name, attr, want string
	}{
		{"resolve", `fail_resolve = "connection refused"`, p + ":6:18: Model server unreachable: connection refused"},
		{"plan_calls", `fail_plan    = "no M_code"`, p + ":6:18: Missing bundle part: no M_code"},
		{"plan_calls_panics", `fail_plan    = "panic"`, "counting model calls: PlanCalls panicked: boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := callerSrc[:strings.LastIndex(callerSrc, "}")] + "  " + c.attr + "\n}\n"
			e := h.countCalls(src)["node.caller.gen"]
			if e.Status != PlanError || !strings.Contains(e.Reason, c.want) {
				t.Errorf("plan: %s %q, want an error containing %q", e.Status, e.Reason, c.want)
			}
			if c.name != "resolve" {
				return
			}
			// Its input not computed yet, the plan still says what
			// Resolve found: a wrong endpoint shows before the run.
			fresh := newHarness(t)
			fresh.dir = h.dir
			x := &Executor{Store: fresh.store, Pipeline: p, CountCalls: true}
			entries, err := x.Plan(context.Background(), h.releasedGraph(src), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Node == "node.caller.gen" && (e.Status != PlanError || !strings.Contains(e.Reason, c.want)) {
					t.Errorf("plan before its input exists: %s %q, want an error containing %q", e.Status, e.Reason, c.want)
				}
			}
			x = &Executor{Store: h.store, Pipeline: p, Jobs: 2}
			res, _, err := x.Run(context.Background(), h.releasedGraph(src), nil)
			if err == nil {
				t.Fatal("run succeeded")
			}
			for i, r := range res {
				if i.Addr == "node.caller.gen" && (r.Err == nil || r.Err.Error() != c.want) {
					t.Errorf("run: %v, want %q", r.Err, c.want)
				}
			}
		})
	}
}
