package engine

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/parquet-go/parquet-go"
)

// timedType writes one row per case: whether it passed (flipped while
// flipTimed is set, a verdict that changed) and how long it took, a
// volatile column that differs every run.
type timedType struct {
	nodes.Static[timedConfig, timedRow]
}

//lint:ignore U1000 used as nodes.Static's type argument (staticcheck misses that use)
type timedConfig struct {
	Cases int64 `hcl:"cases"`
}

type timedRow struct {
	Case    int64   `parquet:"case"`
	Passed  bool    `parquet:"passed"`
	Message string  `parquet:"message"`
	Seconds float64 `parquet:"seconds" volatile:"wall-clock time"`
}

var (
	timedRuns atomic.Int64
	flipTimed atomic.Bool
)

func (timedType) Name() string    { return "timed" }
func (timedType) Version() string { return "1" }
func (t timedType) Run(_ context.Context, r nodes.Run) error {
	n := timedRuns.Add(1)
	var rows []timedRow
	for i := range t.Config(r).Cases {
		passed := i%2 == 0
		msg := "ok"
		if i == 3 && flipTimed.Load() {
			passed, msg = !passed, "the verdict changed: a long message whose start is the same as before"
		}
		rows = append(rows, timedRow{Case: i, Passed: passed, Message: msg, Seconds: float64(n) + float64(i)/10})
	}
	return t.Write(r, rows)
}

func init() { nodes.Register(timedType{}) }

func TestVerifySetsVolatileColumnsAsideAndFindsChangedVerdicts(t *testing.T) {
	if got := nodes.VolatileColumns(timedType{}); len(got) != 1 || got[0] != "seconds" {
		t.Fatalf("volatile columns %v, want [seconds]", got)
	}
	h := newHarness(t)
	const src = `node "timed" "t" { cases = 5 }`
	_, first, err := h.run(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	cached := first[findInst(first, "node.timed.t")].Output.Digest
	recompute := func() *Comparison {
		t.Helper()
		_, res, err := h.run(src, func(x *Executor) { x.Recompute, x.NoCommit = map[string]bool{"node.timed.t": true}, true })
		if err != nil {
			t.Fatal(err)
		}
		r := res[findInst(res, "node.timed.t")]
		c, err := CompareOutputs(h.store, timedType{}, cached, r.Output.Digest)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	c := recompute()
	if c.Identical || !c.Reproducible || c.Volatile["seconds"] != 5 || c.Differing != 0 || c.First != "" {
		t.Errorf("a run that differs only in its timings: %+v, want reproducible with seconds differing in 5 rows", c)
	}

	flipTimed.Store(true)
	defer flipTimed.Store(false)
	c = recompute()
	if c.Reproducible || c.Differing != 1 || !strings.HasPrefix(c.First, "row 3, column passed: cached false, recomputed true") || c.Volatile["seconds"] != 5 {
		t.Errorf("a changed verdict: %+v, want not reproducible, row 3's passed first", c)
	}

	// Identical digests are not read at all.
	if c, err := CompareOutputs(h.store, timedType{}, cached, cached); err != nil || !c.Identical || !c.Reproducible {
		t.Errorf("same digest: %+v %v", c, err)
	}
	// The cached output was not replaced by verify (NoCommit).
	if p := h.plan(src)["node.timed.t"]; p.Digest != cached {
		t.Errorf("plan after verifying: %+v, want the first run's %s", p, cached)
	}
}

// Two long texts that differ near their end are shown from a little
// before where they differ, not from their common start.
func TestShowValuesPointsAtWhereTextsDiffer(t *testing.T) {
	prefix := strings.Repeat("same prefix ", 10)
	cases := []struct {
		a, b         parquet.Value
		wantA, wantB string
	}{
		{parquet.ValueOf(prefix + "tail A"), parquet.ValueOf(prefix + "tail B"), `…"ix same prefix tail A"`, `…"ix same prefix tail B"`},
		{parquet.ValueOf("short"), parquet.ValueOf("shorter"), `"short"`, `"shorter"`},
		{parquet.ValueOf(true), parquet.ValueOf(false), "true", "false"},
		{parquet.ValueOf(nil), parquet.ValueOf("x"), "null", `"x"`},
	}
	for _, c := range cases {
		a, b := showValues([]parquet.Value{c.a}, []parquet.Value{c.b})
		if a != c.wantA || b != c.wantB {
			t.Errorf("showValues(%v, %v) = %s, %s; want %s, %s", c.a, c.b, a, b, c.wantA, c.wantB)
		}
	}
}
