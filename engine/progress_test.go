package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
)

// workType counts its own work from a pool of goroutines, as the long
// nodes do: items items, workers at once, each item taking item_ms.
type workType struct{}

type workConfig struct {
	Items   int    `hcl:"items"`
	Workers int    `hcl:"workers"`
	Unit    string `hcl:"unit"`
	ItemMS  int    `hcl:"item_ms,optional"`
	Status  string `hcl:"status,optional"`
	Fail    bool   `hcl:"fail,optional"`
}

// workSeen is what the last workType run saw of nodes.WorkOf.
var workSeen struct {
	sync.Mutex
	nilWork bool
}

func (workType) Name() string    { return "test_work" }
func (workType) Version() string { return "1" }
func (workType) NewConfig() any  { return &workConfig{} }
func (workType) Run(ctx context.Context, r nodes.Run) error {
	c := r.Config().(*workConfig)
	work := nodes.WorkOf(r)
	workSeen.Lock()
	workSeen.nilWork = work == nil
	workSeen.Unlock()
	work.Total(c.Unit, c.Items)
	if c.Status != "" {
		r.Status("%s", c.Status)
	}
	items := make(chan int)
	var wg sync.WaitGroup
	for range c.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range items {
				time.Sleep(time.Duration(c.ItemMS) * time.Millisecond)
				work.Add(1)
			}
		}()
	}
	for i := range c.Items {
		items <- i
	}
	close(items)
	wg.Wait()
	if c.Fail {
		return context.DeadlineExceeded
	}
	w, err := r.Output(artifacts.SchemaOf[valueRow]())
	if err != nil {
		return err
	}
	return w.Write(valueRow{int64(c.Items)})
}

func init() { nodes.Register(workType{}) }

// TestNodeWorkReachesTheObserverMonotoneAndEndsAtItsTotal: a node counting
// its items from eight goroutines is seen by the run's observer as a
// bounded stream of progress events, in its unit, whose counts never go
// back and whose last, before the node's done event, is its total.
func TestNodeWorkReachesTheObserverMonotoneAndEndsAtItsTotal(t *testing.T) {
	for _, c := range []struct {
		name, src string
		final     string // the node's last event
	}{
		{"done", `node "test_work" "w" {
  items   = 400
  workers = 8
  unit    = "samples"
  item_ms = 20
  status  = "warming up"
}`, EventDone},
		{"failed", `node "test_work" "w" {
  items   = 400
  workers = 8
  unit    = "samples"
  item_ms = 20
  fail    = true
}`, EventFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			var events []Event
			h.run(c.src, func(x *Executor) {
				x.Events = func(e Event) {
					if e.Node == "node.test_work.w" {
						events = append(events, e)
					}
				}
			})
			var prog []Event
			for _, e := range events {
				if e.Event == EventProgress {
					prog = append(prog, e)
				}
			}
			if len(prog) < 3 {
				t.Fatalf("%d progress events for a node of about a second, want several: %+v", len(prog), events)
			}
			last := events[len(events)-1]
			if last.Event != c.final || events[len(events)-2].Event != EventProgress {
				t.Errorf("the node's last events are %+v, %+v: want its final progress, then %s", events[len(events)-2], last, c.final)
			}
			for k, e := range prog {
				if e.Unit != "samples" || e.Total != 400 || e.Type != "test_work" {
					t.Errorf("progress event %d: %+v, want unit samples, total 400", k, e)
				}
				if k == 0 {
					continue
				}
				if e.Done < prog[k-1].Done {
					t.Errorf("progress went back: %d after %d", e.Done, prog[k-1].Done)
				}
				if gap := e.Time.Sub(prog[k-1].Time); k < len(prog)-1 && gap < progressEvery*9/10 {
					t.Errorf("progress events %d and %d %v apart, want at least %v", k-1, k, gap, progressEvery)
				}
			}
			if end := prog[len(prog)-1]; end.Done != 400 {
				t.Errorf("the last progress event says %d of 400", end.Done)
			}
			if prog[0].Message != "warming up" && c.name == "done" {
				t.Errorf("the status travels with the counts: %+v", prog[0])
			}
		})
	}
}

// TestWorkIsANoOpWhenNobodyWatches: without an observer the node's Work
// is nil, which counts nothing and allocates nothing.
func TestWorkIsANoOpWhenNobodyWatches(t *testing.T) {
	h := newHarness(t)
	if _, _, err := h.run(`node "test_work" "w" {
  items   = 10
  workers = 2
  unit    = "samples"
}`, func(x *Executor) { x.Events = nil }); err != nil {
		t.Fatal(err)
	}
	workSeen.Lock()
	defer workSeen.Unlock()
	if !workSeen.nilWork {
		t.Error("nodes.WorkOf gave a Work to a run nobody watches")
	}
	var w *nodes.Work
	if n := testing.AllocsPerRun(100, func() { w.Total("samples", 3); w.Add(1) }); n != 0 {
		t.Errorf("a nil Work allocates %v times a call", n)
	}
	live := &nodes.Work{}
	if n := testing.AllocsPerRun(100, func() { live.Add(1) }); n != 0 {
		t.Errorf("Add allocates %v times a call", n)
	}
}

// BenchmarkWorkAdd is a node's cost of counting an item from many
// goroutines, with nobody watching (nil: the no-op) and watched.
func BenchmarkWorkAdd(b *testing.B) {
	for _, c := range []struct {
		name string
		w    *nodes.Work
	}{{"unwatched", nil}, {"watched", &nodes.Work{}}} {
		b.Run(c.name, func(b *testing.B) {
			c.w.Total("samples", b.N)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					c.w.Add(1)
				}
			})
		})
	}
}
