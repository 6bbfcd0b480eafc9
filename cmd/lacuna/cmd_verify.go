package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
)

var cmdVerify = newCommand("verify", "PIPELINE ADDR...",
	"recompute nodes ignoring the cache and compare digests", `
Verify recomputes the given nodes (inputs come from the store), commits
nothing, and compares each new content digest with the cached one. When
the digests differ it compares the rows, setting aside the columns the
node's type declares volatile (timings such as solve's seconds and
generate's latency_s): a node whose other columns are the same is
reproducible, its volatile differences reported beside it; otherwise it is a MISMATCH, with the first row and column that
differ. It exits 1 when a node is not reproducible.`)

var verifyFlags pipelineFlags

func init() {
	verifyFlags.add(cmdVerify.Flag)
	cmdVerify.Run = runVerify
}

func runVerify(ctx context.Context, cmd *Command, args []string) error {
	pos := args
	if len(pos) < 2 {
		return usageError("usage: lacuna verify PIPELINE ADDR...")
	}
	l, err := verifyFlags.load(pos[0])
	if err != nil {
		return err
	}
	x := l.executor()
	plan, err := x.Plan(ctx, l.graph, pos[1:])
	if err != nil {
		return err
	}
	want := map[string]engine.PlanEntry{}
	for _, e := range plan {
		want[e.Node] = e
	}
	targets, _ := l.graph.Select(pos[1:])
	var check []string
	for _, t := range targets {
		for _, a := range pos[1:] {
			if t.Addr == a || t.Decl.Addr() == a {
				if want[t.Addr].Status != engine.PlanCached {
					return fmt.Errorf("%s has no cached artifact to verify (plan: %s, %s); run it first", t.Addr, want[t.Addr].Status, want[t.Addr].Reason)
				}
				check = append(check, t.Addr)
			}
		}
	}
	x.Recompute = map[string]bool{}
	for _, c := range check {
		x.Recompute[c] = true
	}
	x.NoCommit = true
	results, _, err := x.Run(ctx, l.graph, check)
	if err != nil {
		return err
	}
	bad := 0
	type verdict struct {
		Node     string           `json:"node"`
		Cached   artifacts.Digest `json:"cached"`
		Computed artifacts.Digest `json:"computed"`
		// Match: reproducible, with the same digest or the same rows
		// once the type's volatile columns are set aside.
		Match bool `json:"match"`
		*engine.Comparison
	}
	var out []verdict
	for inst, r := range results {
		if !x.Recompute[inst.Addr] {
			continue
		}
		c, err := engine.CompareOutputs(l.store, inst.Type(), want[inst.Addr].Digest, r.Output.Digest)
		if err != nil {
			return fmt.Errorf("%s: %w", inst.Addr, err)
		}
		v := verdict{inst.Addr, want[inst.Addr].Digest, r.Output.Digest, c.Reproducible, c}
		if !v.Match {
			bad++
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b verdict) int { return strings.Compare(a.Node, b.Node) })
	if verifyFlags.json {
		if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
			return err
		}
	} else {
		for _, v := range out {
			switch {
			case v.Identical:
				fmt.Printf("ok        %s  %s\n", v.Node, v.Computed)
			case v.Match:
				fmt.Printf("ok        %s  %s (cached %s; only volatile columns differ: %s)\n", v.Node, v.Computed, v.Cached, volatileList(v.Volatile))
			default:
				msg := fmt.Sprintf("MISMATCH  %s  cached %s, recomputed %s", v.Node, v.Cached, v.Computed)
				if v.Differing > 0 {
					msg += fmt.Sprintf(": %d row(s) differ; first at %s", v.Differing, v.First)
				} else if v.First != "" {
					msg += ": " + v.First
				}
				if len(v.Volatile) > 0 {
					msg += fmt.Sprintf(" (volatile columns differ too: %s)", volatileList(v.Volatile))
				}
				fmt.Println(msg)
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d node(s) are not reproducible", bad)
	}
	return nil
}

// volatileList reads "seconds in 89 rows, latency_s in 3 rows".
func volatileList(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s in %d rows", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
