package tasks_test

import (
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/experiments"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// TestLongNodesCountTheirWorkToItsEnd: on the offline shapes fixture,
// bundle counts the examples it runs, tasks the reference runs it
// observes, solve and c1 the samples they run, and generate the calls it
// makes (to a model on 127.0.0.1); each node's progress events are in its
// unit, never go back, and end at their total, which for solve and
// generate is one per row they wrote.
func TestLongNodesCountTheirWorkToItsEnd(t *testing.T) {
	srv := llmtest.New(llmtest.Config{Models: []string{"test-model"}, Delay: 20 * time.Millisecond, Default: "```go\n_ = 0\n```"})
	defer srv.Close()
	run := taskstest.Run(t, "", taskstest.Calibration+taskstest.C1Node+taskstest.ModelBlock(srv.URL())+`
node "generate" "g" {
  tasks   = node.tasks.shapes
  model   = model.coder
  samples = 3
  seed    = 1
}
`)
	samples := nodetest.Read[tasks.SampleRow](t, run, "node.solve.calibration")
	answers := nodetest.Read[experiments.GenerateRow](t, run, "node.generate.g")
	byNode := map[string][]engine.Event{}
	for _, e := range run.Events {
		if e.Event == engine.EventProgress && e.Unit != "" {
			byNode[e.Node] = append(byNode[e.Node], e)
		}
	}
	for _, c := range []struct {
		node, unit string
		total      int64 // 0: any
	}{
		{"node.bundle.shapes", "examples", 0},
		{"node.tasks.shapes", "samples", 0},
		{"node.solve.calibration", "samples", int64(len(samples))},
		{"node.c1.shapes", "samples", 0},
		{"node.generate.g", "calls", int64(len(answers))},
	} {
		evs := byNode[c.node]
		if len(evs) == 0 {
			t.Errorf("%s: no progress events with a unit", c.node)
			continue
		}
		for k, e := range evs {
			if e.Unit != c.unit {
				t.Errorf("%s: progress in %q, want %q", c.node, e.Unit, c.unit)
			}
			if k > 0 && (e.Done < evs[k-1].Done || e.Total < evs[k-1].Total) {
				t.Errorf("%s: progress went back: %d/%d after %d/%d", c.node, e.Done, e.Total, evs[k-1].Done, evs[k-1].Total)
			}
		}
		last := evs[len(evs)-1]
		if last.Total == 0 || last.Done != last.Total || c.total != 0 && last.Total != c.total {
			t.Errorf("%s: the last progress says %d of %d %s, want all of %d", c.node, last.Done, last.Total, last.Unit, c.total)
		}
		var seq []int64
		for _, e := range evs {
			seq = append(seq, e.Done)
		}
		t.Logf("%s: counts %v of %d %s", c.node, seq, last.Total, last.Unit)
	}
}
