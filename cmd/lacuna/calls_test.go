package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes"
)

func TestPlanPrintsCallsPerNodeAndTotalsPerModel(t *testing.T) {
	entries := []engine.PlanEntry{
		{Node: "node.generate.a", Status: engine.PlanRun, Reason: "new", Calls: []nodes.CallPlan{
			{Model: "qwen", Calls: 360, Cached: 120, PromptTokens: 250_400, OutputTokens: 60_000},
		}},
		{Node: "node.judge.a", Status: engine.PlanRun, Reason: "new", Calls: []nodes.CallPlan{
			{Model: "qwen", Calls: 40, Cached: 40},
			{Model: "judge", Calls: 1200, Cached: 0, PromptTokens: 2_340_000, OutputTokens: 950},
		}},
		{Node: "node.solve.a", Status: engine.PlanRun, Reason: "input node.generate.a will run", CallsUnknown: "model calls unknown until its inputs exist"},
	}
	var out bytes.Buffer
	printPlan(&out, entries, callTotals(entries))
	for _, want := range []string{
		"run     node.generate.a  new\n                         calls: 360 (120 cached, 240 to make; ~250k prompt + ~60k completion tokens est.)\n",
		"                         calls to qwen: 40 (40 cached, 0 to make)\n",
		"                         calls to judge: 1,200 (0 cached, 1,200 to make; ~2.3M prompt + ~950 completion tokens est.)\n",
		"node.solve.a     input node.generate.a will run\n                         model calls unknown until its inputs exist\n",
		"Plan: 3 to run, 0 cached, 0 blocked, 0 with errors.\n",
		"Model judge: 1,200 (0 cached, 1,200 to make; ~2.3M prompt + ~950 completion tokens est.)\nModel qwen: 400 (160 cached, 240 to make; ~250k prompt + ~60k completion tokens est.)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestShowPrintsReportsReadably(t *testing.T) {
	usage := `{"calls":240,"cached":120,"retries":3,"prompt_tokens":250000,"completion_tokens":60123,"latency_p50_s":1.23456,"latency_p99_s":12.5,"models":{"qwen":{"calls":240}},"note":"ok","stops":["a","b"]}`
	a := &artifacts.Action{Key: "0123456789abcdef", Type: "generate", Version: "1", Config: json.RawMessage(`{}`),
		Reports: map[string]json.RawMessage{"usage": json.RawMessage(usage), "extract": json.RawMessage(`[1,2]`)}}
	var out bytes.Buffer
	printShow(&out, map[string]any{"node": "node.generate.a", "action": a})
	want := `  report    extract
    [1, 2]
  report    usage
    calls              240
    cached             120
    retries            3
    prompt_tokens      250,000
    completion_tokens  60,123
    latency_p50_s      1.23
    latency_p99_s      12.5
    models
      qwen
        calls  240
    note               ok
    stops              [a, b]
`
	if !strings.Contains(out.String(), want) {
		t.Errorf("show output:\n%s\nwant it to contain:\n%s", out.String(), want)
	}
	// --json carries the reports as the node recorded them.
	b, err := json.Marshal(map[string]any{"action": a})
	if err != nil || !bytes.Contains(b, []byte(`"reports":{"extract":[1,2],"usage":`+usage+`}`)) {
		t.Errorf("json: %s, %v", b, err)
	}
}

func TestPlainProgressPrintsChangedStatusAtMostEveryFewSeconds(t *testing.T) {
	var out bytes.Buffer
	p := newPlainProgress(&out, 0)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.now = func() time.Time { return now }
	status := func(msg string) engine.Event {
		return engine.Event{Event: engine.EventProgress, Node: "node.generate.a", Message: msg}
	}
	for _, step := range []struct {
		e       engine.Event
		advance time.Duration
	}{
		{e: engine.Event{Event: engine.EventStart, Total: 2}},
		{e: engine.Event{Event: engine.EventRunning, Node: "node.generate.a"}},
		{e: status("10/600 calls, 4.0 calls/s")},
		{e: status("10/600 calls, 4.0 calls/s"), advance: plainStatusEvery}, // unchanged: not repeated
		{e: status("30/600 calls, 4.1 calls/s"), advance: time.Second},
		{e: engine.Event{Event: engine.EventProgress, Node: "node.generate.a", Done: 30, Total: 600}},
		{e: status("120/600 calls, 14.2 calls/s"), advance: time.Second}, // changed, but 1s after the last line
		{e: engine.Event{Event: engine.EventDone, Node: "node.generate.a", Rows: 600, Seconds: 61, Message: "600 answers"}},
	} {
		now = now.Add(step.advance)
		p.event(step.e)
	}
	want := "running 2 nodes\n" +
		"[0/2] status   node.generate.a  10/600 calls, 4.0 calls/s\n" +
		"[0/2] status   node.generate.a  30/600 calls, 4.1 calls/s\n" +
		"[1/2] done     node.generate.a  600 rows  61.00s  · 600 answers\n"
	if out.String() != want {
		t.Errorf("plain progress:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestTTYStatusLineShowsARunningNodesStatus(t *testing.T) {
	var c counts
	c.update(engine.Event{Event: engine.EventStart, Total: 3})
	c.update(engine.Event{Event: engine.EventRunning, Node: "node.generate.a"})
	c.update(engine.Event{Event: engine.EventProgress, Node: "node.generate.a", Done: 120, Total: 600})
	c.update(engine.Event{Event: engine.EventProgress, Node: "node.generate.a", Message: "120/600 calls, 14.2 calls/s, 3.1k tok/s"})
	var out bytes.Buffer
	p := &ttyProgress{w: &out, c: c, width: 80}
	p.redraw()
	line := strings.TrimPrefix(out.String(), "\r\x1b[2K")
	if n := len([]rune(line)); n != 79 || !strings.HasSuffix(line, "…") {
		t.Errorf("status line of %d columns on an 80-column terminal, want 79 ending in …: %q", n, line)
	}
	p.width = 0
	out.Reset()
	p.redraw()
	if !strings.HasSuffix(out.String(), " · generate.a 20% (120/600 calls, 14.2 calls/s, 3.1k tok/s)") {
		t.Errorf("unclipped status line %q", out.String())
	}
}

type modelFieldConfig struct {
	Model nodes.Model  `hcl:"model"`
	Judge *nodes.Model `hcl:"judge,optional"`
}

type modelFieldType struct{}

func (modelFieldType) Name() string                         { return "model_field" }
func (modelFieldType) Version() string                      { return "1" }
func (modelFieldType) NewConfig() any                       { return &modelFieldConfig{} }
func (modelFieldType) Run(context.Context, nodes.Run) error { return nil }

func TestTypesDescribesAModelField(t *testing.T) {
	ti := describeType(modelFieldType{})
	want := []attrInfo{{"model", true, "a model block (model.NAME)"}, {"judge", false, "a model block (model.NAME)"}}
	if len(ti.Attributes) != 2 || ti.Attributes[0] != want[0] || ti.Attributes[1] != want[1] {
		t.Errorf("attributes %+v, want %+v", ti.Attributes, want)
	}
}

func TestFsckChecksCallsAndGCDeletesThemOnlyWithCalls(t *testing.T) {
	dir := t.TempDir()
	st, err := artifacts.Open(filepath.Join(dir, ".lacuna"))
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)}
	for _, k := range keys {
		if err := st.Calls().Put(k, []byte(`{"text":"x"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".lacuna", "calls", "cc", keys[2]), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := lacuna(t, dir, "fsck")
	if r.code != 1 || !strings.Contains(r.stdout, ", 3 calls in ") || !strings.Contains(r.stdout, "corrupt-call "+keys[2]+": ") {
		t.Fatalf("fsck exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = lacuna(t, dir, "fsck"); r.code != 0 || !strings.Contains(r.stdout, ", 2 calls in ") {
		t.Fatalf("fsck after repair exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = lacuna(t, dir, "gc"); r.code != 2 {
		t.Errorf("gc with no pipeline and no --calls exited %d", r.code)
	}
	if r = lacuna(t, dir, "gc", "--calls", "--dry-run"); r.code != 0 || !strings.Contains(r.stdout, "would remove 2 cached model calls") {
		t.Fatalf("gc --calls --dry-run exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = lacuna(t, dir, "gc", "--calls", "--json"); r.code != 0 || strings.TrimSpace(r.stdout) != `{"calls_removed":2,"calls_bytes_freed":`+jsonInt(2*(15+17+12))+`}` {
		t.Fatalf("gc --calls --json exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, ok, _ := st.Calls().Get(keys[0]); ok {
		t.Error("gc --calls kept a call")
	}
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestRunNamesTheAttributeOfANodesConfigError: a ConfigError a node
// returns while it runs is reported at the attribute's file:line:col.
func TestRunNamesTheAttributeOfANodesConfigError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte(`{"x": 1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := `node "import" "a" { path = "a.jsonl" }
node "concat" "all" {
  inputs        = [node.import.a]
  source_column = "x"
}
`
	if err := os.WriteFile(filepath.Join(dir, "p.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := lacuna(t, dir, "run", "p.hcl")
	if want := `p.hcl:4:19: Column exists: the inputs already have a column "x".`; r.code != 1 || !strings.Contains(r.stdout, want) {
		t.Errorf("run exited %d, want 1 and %q in:\n%s%s", r.code, want, r.stdout, r.stderr)
	}
}
