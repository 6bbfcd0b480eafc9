package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/lacuna-dev/lacuna/engine"
)

func onePipeline(pos []string, cmd string) (string, error) {
	if len(pos) != 1 {
		return "", fmt.Errorf("want one pipeline file or directory: lacuna %s PIPELINE", cmd)
	}
	return pos[0], nil
}

func cmdValidate(ctx context.Context, args []string) error {
	var pf pipelineFlags
	fs := newFlags("validate", "PIPELINE")
	pf.register(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	path, err := onePipeline(pos, "validate")
	if err != nil {
		return err
	}
	l, err := pf.load(path)
	if err != nil {
		return err
	}
	types := map[string]int{}
	for _, i := range l.graph.Instances {
		types[i.Decl.TypeName]++
	}
	if pf.json {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{"valid": true, "nodes": len(l.graph.Config.Nodes), "instances": len(l.graph.Instances), "types": types})
	}
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(types)) {
		parts = append(parts, fmt.Sprintf("%d %s", types[t], t))
	}
	fmt.Printf("%s is valid: %d nodes, %d instances (%s)\n", path, len(l.graph.Config.Nodes), len(l.graph.Instances), strings.Join(parts, ", "))
	return nil
}

func cmdPlan(ctx context.Context, args []string) error {
	var pf pipelineFlags
	var targets multiFlag
	fs := newFlags("plan", "PIPELINE")
	pf.register(fs)
	fs.Var(&targets, "target", "plan only this node and what it needs (repeatable)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	path, err := onePipeline(pos, "plan")
	if err != nil {
		return err
	}
	l, err := pf.load(path)
	if err != nil {
		return err
	}
	entries, err := l.executor().Plan(ctx, l.graph, targets)
	if err != nil {
		return err
	}
	if pf.json {
		enc := json.NewEncoder(os.Stdout)
		return enc.Encode(map[string]any{"pipeline": path, "nodes": entries, "counts": planCounts(entries)})
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

func cmdRun(ctx context.Context, args []string) error {
	var pf pipelineFlags
	var targets multiFlag
	fs := newFlags("run", "PIPELINE")
	pf.register(fs)
	jobs := fs.Int("j", runtime.NumCPU(), "nodes to run in parallel")
	keepGoing := fs.Bool("keep-going", false, "keep running independent nodes after a failure")
	fs.Var(&targets, "target", "run only this node and what it needs (repeatable)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	path, err := onePipeline(pos, "run")
	if err != nil {
		return err
	}
	l, err := pf.load(path)
	if err != nil {
		return err
	}
	x := l.executor()
	x.Jobs, x.KeepGoing = *jobs, *keepGoing
	log, err := openRunLog(l.store)
	if err != nil {
		return err
	}
	defer log.Close()
	var display progress
	switch {
	case pf.json:
		display = newJSONProgress(os.Stdout)
	case isTerminal(os.Stderr):
		display = newTTYProgress(os.Stderr)
	default:
		display = newPlainProgress(os.Stdout)
	}
	x.Events = func(e engine.Event) {
		log.write(e)
		display.event(e)
	}
	_, sum, err := x.Run(ctx, l.graph, targets)
	display.close()
	if err != nil {
		if sum != nil && !pf.json {
			printFailures(l, sum)
		}
		if errors.Is(ctx.Err(), context.Canceled) {
			fmt.Fprintln(os.Stderr, "lacuna run: "+err.Error())
			return exitError(130)
		}
		return err
	}
	return nil
}

func printFailures(l *loaded, sum *engine.Summary) {
	if sum.Failed > 0 {
		fmt.Fprintf(os.Stderr, "See 'lacuna show %s ADDR' for a failed node's logs.\n", relPath(l.path))
	}
}

func cmdGraph(ctx context.Context, args []string) error {
	var pf pipelineFlags
	fs := newFlags("graph", "PIPELINE")
	pf.register(fs)
	format := fs.String("format", "dot", "dot or mermaid")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	path, err := onePipeline(pos, "graph")
	if err != nil {
		return err
	}
	l, err := pf.load(path)
	if err != nil {
		return err
	}
	switch *format {
	case "dot":
		fmt.Print(l.graph.DOT())
	case "mermaid":
		fmt.Print(l.graph.Mermaid())
	default:
		return fmt.Errorf("--format %q: want dot or mermaid", *format)
	}
	return nil
}
