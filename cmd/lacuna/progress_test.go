package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes"
)

// slowWorkType is a node that counts its own work (nodes.Work) from a
// pool of goroutines, items items of item_ms each: the long nodes' way.
type slowWorkType struct{}

type slowWorkConfig struct {
	Items   int `hcl:"items"`
	ItemMS  int `hcl:"item_ms"`
	Workers int `hcl:"workers,optional"`
}

type slowWorkRow struct {
	Items int64 `parquet:"items"`
}

func (slowWorkType) Name() string    { return "test_slow_work" }
func (slowWorkType) Version() string { return "1" }
func (slowWorkType) NewConfig() any  { return &slowWorkConfig{} }
func (slowWorkType) Run(ctx context.Context, r nodes.Run) error {
	c := r.Config().(*slowWorkConfig)
	work := nodes.WorkOf(r)
	work.Total("samples", c.Items)
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(c.Workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				time.Sleep(time.Duration(c.ItemMS) * time.Millisecond)
				work.Add(1)
			}
		}()
	}
	for i := range c.Items {
		next <- i
	}
	close(next)
	wg.Wait()
	w, err := r.Output(artifacts.SchemaOf[slowWorkRow]())
	if err != nil {
		return err
	}
	return w.Write(slowWorkRow{int64(c.Items)})
}

// With LACUNA_TEST_AS_LACUNA=1 this test binary is lacuna, with the test
// node types: a CLI test runs it as it runs the real binary. Test files'
// init functions run after the package's own (the go command compiles
// them after its other files), so every command is registered by now.
func init() {
	nodes.Register(slowWorkType{})
	if os.Getenv("LACUNA_TEST_AS_LACUNA") == "1" {
		main()
	}
}

// TestPipedRunPrintsPeriodicProgressOfLongNodes runs a pipeline whose
// node counts 90 samples over about four and a half seconds, piped, with
// a one-second --progress-interval (four ticks: on a loaded machine the
// node starts late enough that the first may find it running under a
// second, and so print nothing for it): its progress lines carry its counts,
// share, rate and ETA and never go back, a node finishing at once prints
// none, and the run log holds the node's progress up to its total.
func TestPipedRunPrintsPeriodicProgressOfLongNodes(t *testing.T) {
	dir := t.TempDir()
	src := `
node "test_slow_work" "long" {
  items   = 90
  item_ms = 50
}
node "test_slow_work" "quick" {
  items   = 3
  item_ms = 1
}
`
	if err := os.WriteFile(filepath.Join(dir, "p.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "run", "p.hcl", "--progress-interval", "1s")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LACUNA_TEST_AS_LACUNA=1", "LACUNA_STORE=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("lacuna run: %v\n%s%s", err, out.String(), errb.String())
	}
	line := regexp.MustCompile(`^\[[01]/2\] progress node\.test_slow_work\.long  (\d+)/90 samples \((\d+)%\)(, [\d.]+/s, ETA (\d+)s)?$`)
	var counts []int
	withETA := 0
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "quick") && !strings.Contains(l, "done") {
			t.Errorf("a node that finished at once printed %q", l)
		}
		if !strings.Contains(l, "progress") {
			continue
		}
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("progress line %q, want %s", l, line)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if pct, _ := strconv.Atoi(m[2]); pct != n*100/90 {
			t.Errorf("%q: %d of 90 is not %d%%", l, n, pct)
		}
		if len(counts) > 0 && n < counts[len(counts)-1] {
			t.Errorf("progress went back: %q after %d", l, counts[len(counts)-1])
		}
		counts = append(counts, n)
		if m[3] != "" {
			withETA++
		}
	}
	if len(counts) < 2 || withETA == 0 {
		t.Errorf("want a progress line a second, one at least with a rate and ETA, in a four-and-a-half-second run:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "done     node.test_slow_work.long  1 rows") {
		t.Errorf("no done line:\n%s", out.String())
	}

	logs, err := filepath.Glob(filepath.Join(dir, ".lacuna", "runs", "*.jsonl"))
	if err != nil || len(logs) != 1 {
		t.Fatalf("run logs %v (%v)", logs, err)
	}
	f, err := os.Open(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var logged []engine.Event
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var e engine.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Event == engine.EventProgress && e.Node == "node.test_slow_work.long" {
			logged = append(logged, e)
		}
	}
	// About twenty progress events in four and a half seconds; the log
	// keeps one every runLogProgressEvery, and the last.
	if len(logged) == 0 || len(logged) > 3 || logged[len(logged)-1].Done != 90 || logged[0].Unit != "samples" {
		t.Errorf("progress in the run log: %+v, want a few, in samples, the last at 90", logged)
	}
}

// workEvents feeds c a running node and its progress events, each at
// start plus its offset.
func workEvents(c *counts, start time.Time, node string, evs ...engine.Event) {
	c.update(engine.Event{Event: engine.EventRunning, Node: node, Time: start})
	for _, e := range evs {
		e.Event, e.Node, e.Time = engine.EventProgress, node, start.Add(time.Duration(e.Seconds*float64(time.Second)))
		c.update(e)
	}
}

func TestTTYStatusLineShowsEachNodesWorkAndTheRunsETA(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		total int
		evs   []engine.Event
		now   time.Duration
		want  []string
	}{
		{
			name: "rate over the last seconds, other nodes unknown", total: 3,
			evs: []engine.Event{{Seconds: 2, Done: 0, Total: 1200, Unit: "samples"}, {Seconds: 10, Done: 328, Total: 1200, Unit: "samples"}},
			now: 10 * time.Second,
			// 328 in the 8 s since the first count: 41/s, 872 left: 21 s.
			want: []string{"ETA ≥21s · solve.lo 328/1,200 samples, 41/s, ETA 21s"},
		},
		{
			name: "the only node left", total: 1,
			evs:  []engine.Event{{Seconds: 1, Done: 10, Total: 100, Unit: "calls"}, {Seconds: 5, Done: 30, Total: 100, Unit: "calls"}},
			now:  5 * time.Second,
			want: []string{"ETA 14s · solve.lo 30/100 calls, 5.0/s, ETA 14s"},
		},
		{
			name: "a stalled node slows down", total: 1,
			evs:  []engine.Event{{Seconds: 1, Done: 10, Total: 100, Unit: "calls"}, {Seconds: 5, Done: 30, Total: 100, Unit: "calls"}},
			now:  21 * time.Second,
			want: []string{"solve.lo 30/100 calls, 1.0/s, ETA 1m10s"},
		},
		{
			name: "no rate yet", total: 2,
			evs:  []engine.Event{{Seconds: 1, Total: 50, Unit: "examples"}},
			now:  1500 * time.Millisecond,
			want: []string{"ETA ? · solve.lo 0/50 examples"},
		},
		{
			name: "a total not known", total: 1,
			evs:  []engine.Event{{Seconds: 1, Done: 1, Unit: "texts"}, {Seconds: 3, Done: 121, Unit: "texts"}},
			now:  3 * time.Second,
			want: []string{"solve.lo 121 texts, 60/s"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var cs counts
			cs.update(engine.Event{Event: engine.EventStart, Total: int64(c.total)})
			cs.start = t0
			workEvents(&cs, t0, "node.solve.lo", c.evs...)
			got := cs.line(t0.Add(c.now), 0)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("status line\n%q\nlacks %q", got, w)
				}
			}
		})
	}
}

func TestRunETACountsFinishedNodesForThoseWithoutWork(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var c counts
	c.update(engine.Event{Event: engine.EventStart, Total: 4})
	c.start = t0
	c.update(engine.Event{Event: engine.EventDone, Node: "node.a"})
	// One node done in 10 s; a working node needs 10 s more at its rate;
	// the two not started, 10 s each at the run's pace, are 20 s: the ETA
	// is the longer, 20 s.
	workEvents(&c, t0, "node.b", engine.Event{Seconds: 0, Done: 0, Total: 40, Unit: "rows"}, engine.Event{Seconds: 10, Done: 20, Total: 40, Unit: "rows"})
	if got := c.eta(t0.Add(10 * time.Second)); got != "20s" {
		t.Errorf("ETA %s, want 20s", got)
	}
}

// TestPlainProgressPrintsAPeriodicLinePerLongNode: a node that reports
// its work gets a line every interval once it has run that long, with its
// status in it (not a status line of its own); a node without counts
// gets a line saying how long it has run; a node done within the
// interval gets none.
func TestPlainProgressPrintsAPeriodicLinePerLongNode(t *testing.T) {
	var out bytes.Buffer
	p := newPlainProgress(&out, 0)
	p.interval = 10 * time.Second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	p.now = func() time.Time { return now }
	at := func(d time.Duration, e engine.Event) {
		now = t0.Add(d)
		e.Time = now
		p.event(e)
	}
	tick := func(d time.Duration) {
		now = t0.Add(d)
		p.mu.Lock()
		p.tick()
		p.mu.Unlock()
	}
	at(0, engine.Event{Event: engine.EventStart, Total: 3})
	at(0, engine.Event{Event: engine.EventRunning, Node: "node.solve.lo"})
	at(0, engine.Event{Event: engine.EventRunning, Node: "node.bundle.lo"})
	at(0, engine.Event{Event: engine.EventRunning, Node: "node.c2.lo"})
	at(2*time.Second, engine.Event{Event: engine.EventProgress, Node: "node.solve.lo", Total: 1200, Unit: "samples", Message: "building harnesses"})
	at(3*time.Second, engine.Event{Event: engine.EventDone, Node: "node.c2.lo", Rows: 5, Seconds: 3})
	tick(5 * time.Second) // nothing has run 10 s
	at(10*time.Second, engine.Event{Event: engine.EventProgress, Node: "node.solve.lo", Done: 328, Total: 1200, Unit: "samples"})
	tick(10 * time.Second)
	tick(15 * time.Second) // 5 s after the last lines
	at(19*time.Second, engine.Event{Event: engine.EventProgress, Node: "node.solve.lo", Done: 738, Total: 1200, Unit: "samples"})
	tick(20 * time.Second)
	want := "running 3 nodes\n" +
		"[1/3] done     node.c2.lo  5 rows  3.00s\n" +
		"[1/3] running  node.bundle.lo  for 10s\n" +
		"[1/3] progress node.solve.lo  328/1,200 samples (27%), 41/s, ETA 21s  · building harnesses\n" +
		"[1/3] running  node.bundle.lo  for 20s\n" +
		"[1/3] progress node.solve.lo  738/1,200 samples (61%), 41/s, ETA 11s  · building harnesses\n"
	if out.String() != want {
		t.Errorf("plain progress:\n%s\nwant:\n%s", out.String(), want)
	}
}
