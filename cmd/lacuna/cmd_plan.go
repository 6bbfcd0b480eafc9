package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes"
)

var cmdPlan = newCommand("plan", "PIPELINE",
	"show what a run would do and why", `
Plan compares every node's action key with the store and prints, for each,
whether a run would execute it (and why: new, config changed, input
changed...), find it cached, or be blocked by a failed input. For a node
that calls a model it counts the calls a run would make, how many the
store's call cache already holds, and estimates the tokens of the rest,
per node and in total per model (its inputs must exist to count them).
Plan exits 1 when a node has an error (a configuration that does not
resolve, a model server that does not answer), after printing the plan.
With no store yet it plans against an empty one and creates none.`)

var planFlags struct {
	pipelineFlags
	targetFlag
}

func init() {
	planFlags.pipelineFlags.add(cmdPlan.Flag)
	planFlags.targetFlag.add(cmdPlan.Flag, "plan")
	cmdPlan.Run = runPlan
}

func runPlan(ctx context.Context, cmd *Command, args []string) error {
	path, err := onePipeline(args, cmd)
	if err != nil {
		return err
	}
	l, err := planFlags.loadWith(path, storeOrEmpty)
	if err != nil {
		return err
	}
	defer l.cleanup()
	x := l.executor()
	x.CountCalls = true
	entries, err := x.Plan(ctx, l.graph, planFlags.addrs)
	if err != nil {
		return err
	}
	totals := callTotals(entries)
	if planFlags.json {
		err = json.NewEncoder(os.Stdout).Encode(map[string]any{"pipeline": path, "nodes": entries, "counts": planCounts(entries), "calls": totals})
	} else {
		printPlan(os.Stdout, entries, totals)
	}
	if err == nil && planCounts(entries)[engine.PlanError] > 0 {
		return exitError(1) // the plan printed the errors
	}
	return err
}

func printPlan(out io.Writer, entries []engine.PlanEntry, totals []nodes.CallPlan) {
	w := newTable("STATUS", "NODE", "WHY")
	for _, e := range entries {
		why := e.Reason
		if e.Status == engine.PlanCached {
			why = fmt.Sprintf("%s, %d rows", e.Digest.Short(), e.Rows)
		}
		w.row(e.Status, e.Node, why)
		for _, c := range e.Calls {
			w.row("", "", callsLine(c, len(e.Calls) > 1))
		}
		if e.CallsUnknown != "" {
			w.row("", "", e.CallsUnknown)
		}
	}
	w.print(out)
	c := planCounts(entries)
	fmt.Fprintf(out, "\nPlan: %d to run, %d cached, %d blocked, %d with errors.\n", c["run"], c["cached"], c["blocked"], c["error"])
	for _, t := range totals {
		fmt.Fprintf(out, "Model %s: %s\n", t.Model, strings.TrimPrefix(callsLine(t, false), "calls: "))
	}
}

// callsLine describes one model's calls: "calls: 360 (120 cached, 240 to
// make; ~250k prompt + ~60k completion tokens est.)", naming the model when
// a node calls several.
func callsLine(c nodes.CallPlan, named bool) string {
	head := "calls"
	if named {
		head += " to " + c.Model
	}
	s := fmt.Sprintf("%s: %s (%s cached, %s to make", head, commas(c.Calls), commas(c.Cached), commas(c.Calls-c.Cached))
	if c.Calls > c.Cached {
		s += fmt.Sprintf("; ~%s prompt + ~%s completion tokens est.", approx(c.PromptTokens), approx(c.OutputTokens))
	}
	return s + ")"
}

// callTotals sums the plan's calls per model, in order of the models'
// names.
func callTotals(entries []engine.PlanEntry) []nodes.CallPlan {
	sum := map[string]*nodes.CallPlan{}
	for _, e := range entries {
		for _, c := range e.Calls {
			t := sum[c.Model]
			if t == nil {
				t = &nodes.CallPlan{Model: c.Model}
				sum[c.Model] = t
			}
			t.Calls += c.Calls
			t.Cached += c.Cached
			t.PromptTokens += c.PromptTokens
			t.OutputTokens += c.OutputTokens
		}
	}
	out := make([]nodes.CallPlan, 0, len(sum))
	for _, m := range slices.Sorted(maps.Keys(sum)) {
		out = append(out, *sum[m])
	}
	return out
}

// approx writes a token count to two or three significant digits: 950,
// 250k, 1.2M.
func approx(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	case n < 1_000_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	case n < 10_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	}
	return fmt.Sprintf("%.0fM", float64(n)/1e6)
}

func planCounts(entries []engine.PlanEntry) map[string]int {
	c := map[string]int{"run": 0, "cached": 0, "blocked": 0, "error": 0}
	for _, e := range entries {
		c[e.Status]++
	}
	return c
}
