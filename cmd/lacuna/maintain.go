package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
)

func cmdVerify(ctx context.Context, args []string) error {
	var pf pipelineFlags
	fs := newFlags("verify", "PIPELINE ADDR...")
	pf.register(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return fmt.Errorf("usage: lacuna verify PIPELINE ADDR...")
	}
	l, err := pf.load(pos[0])
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
	if pf.json {
		json.NewEncoder(os.Stdout).Encode(out)
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

func cmdGC(ctx context.Context, args []string) error {
	var pf pipelineFlags
	fs := newFlags("gc", "PIPELINE...")
	pf.register(fs)
	dry := fs.Bool("dry-run", false, "only report what would be deleted")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("usage: lacuna gc PIPELINE... (everything these pipelines do not reference is deleted)")
	}
	keep := map[artifacts.Digest]bool{}
	var st *artifacts.Store
	for _, p := range pos {
		l, err := pf.load(p)
		if err != nil {
			return err
		}
		if st != nil && st.Root() != l.store.Root() {
			return fmt.Errorf("%s uses store %s, not %s: collect one store at a time", p, l.store.Root(), st.Root())
		}
		st = l.store
		plan, err := l.executor().Plan(ctx, l.graph, nil)
		if err != nil {
			return err
		}
		for _, e := range plan {
			if e.Status == engine.PlanCached {
				keep[e.Key] = true
			}
		}
	}
	rep, err := st.GC(ctx, keep, *dry)
	if err != nil {
		return err
	}
	if pf.json {
		return json.NewEncoder(os.Stdout).Encode(rep)
	}
	verb := "removed"
	if *dry {
		verb = "would remove"
	}
	fmt.Printf("%s %d actions, %d objects, %d blobs (%s bytes); kept %d actions, %d objects, %d blobs\n",
		verb, rep.ActionsRemoved, rep.ObjectsRemoved, rep.BlobsRemoved, commas(rep.BytesFreed), rep.ActionsKept, rep.ObjectsKept, rep.BlobsKept)
	return nil
}

func cmdFsck(ctx context.Context, args []string) error {
	var pf pipelineFlags
	fs := newFlags("fsck", "[--store DIR]")
	fs.StringVar(&pf.store, "store", "", "store directory (default: $LACUNA_STORE, else ./.lacuna)")
	fs.BoolVar(&pf.json, "json", false, "machine-readable output")
	dry := fs.Bool("dry-run", false, "report only; do not quarantine or remove anything")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	wd, _ := os.Getwd()
	st, err := openStore(pf.store, wd)
	if err != nil {
		return err
	}
	rep, err := st.Fsck(ctx, !*dry)
	if err != nil {
		return err
	}
	if pf.json {
		json.NewEncoder(os.Stdout).Encode(rep)
	} else {
		fmt.Printf("checked %d objects, %d actions, %d blobs in %s\n", rep.Objects, rep.Actions, rep.Blobs, st.Root())
		for _, p := range rep.Problems {
			fixed := ""
			if p.Fixed != "" {
				fixed = " (" + p.Fixed + ")"
			}
			fmt.Printf("%s %s: %s%s\n", p.Kind, p.Name, p.Detail, fixed)
		}
		if len(rep.Problems) == 0 {
			fmt.Println("no problems found")
		}
	}
	if len(rep.Problems) > 0 {
		return exitError(1)
	}
	return nil
}
