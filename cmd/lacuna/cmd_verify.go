package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
)

var cmdVerify = newCommand("verify", "PIPELINE ADDR...",
	"recompute nodes ignoring the cache and compare digests", `
Verify recomputes the given nodes (inputs come from the store), commits
nothing, and compares each new content digest with the cached one. It
exits 1 when a node is not reproducible.`)

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
		Match    bool             `json:"match"`
	}
	var out []verdict
	for inst, r := range results {
		if !x.Recompute[inst.Addr] {
			continue
		}
		v := verdict{inst.Addr, want[inst.Addr].Digest, r.Output.Digest, want[inst.Addr].Digest == r.Output.Digest}
		if !v.Match {
			bad++
		}
		out = append(out, v)
	}
	if verifyFlags.json {
		if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
			return err
		}
	} else {
		for _, v := range out {
			if v.Match {
				fmt.Printf("ok        %s  %s\n", v.Node, v.Computed)
			} else {
				fmt.Printf("MISMATCH  %s  cached %s, recomputed %s\n", v.Node, v.Cached, v.Computed)
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d node(s) are not reproducible", bad)
	}
	return nil
}
