package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/lacuna-dev/lacuna/engine"
)

var cmdPlan = newCommand("plan", "PIPELINE",
	"show what a run would do and why", `
Plan compares every node's action key with the store and prints, for each,
whether a run would execute it (and why: new, config changed, input
changed...), find it cached, or be blocked by a failed input.`)

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
	l, err := planFlags.load(path)
	if err != nil {
		return err
	}
	entries, err := l.executor().Plan(ctx, l.graph, planFlags.addrs)
	if err != nil {
		return err
	}
	if planFlags.json {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{"pipeline": path, "nodes": entries, "counts": planCounts(entries)})
	}
	w := newTable("STATUS", "NODE", "WHY")
	for _, e := range entries {
		why := e.Reason
		if e.Status == engine.PlanCached {
			why = fmt.Sprintf("%s, %d rows", e.Digest.Short(), e.Rows)
		}
		w.row(e.Status, e.Node, why)
	}
	w.print(os.Stdout)
	c := planCounts(entries)
	fmt.Printf("\nPlan: %d to run, %d cached, %d blocked, %d with errors.\n", c["run"], c["cached"], c["blocked"], c["error"])
	return nil
}

func planCounts(entries []engine.PlanEntry) map[string]int {
	c := map[string]int{"run": 0, "cached": 0, "blocked": 0, "error": 0}
	for _, e := range entries {
		c[e.Status]++
	}
	return c
}
