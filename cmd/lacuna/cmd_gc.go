package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
)

var cmdGC = newCommand("gc", "PIPELINE...",
	"delete what the given pipelines do not reference", `
GC deletes every action, object and blob of the store that the current
artifacts of the given pipelines do not reference. The pipelines must
share one store.`)

var gcFlags struct {
	pipelineFlags
	dryRun bool
}

func init() {
	gcFlags.pipelineFlags.add(cmdGC.Flag)
	cmdGC.Flag.BoolVar(&gcFlags.dryRun, "dry-run", false, "only report what would be deleted")
	cmdGC.Run = runGC
}

func runGC(ctx context.Context, cmd *Command, args []string) error {
	pos := args
	if len(pos) == 0 {
		return usageError("usage: lacuna gc PIPELINE... (everything these pipelines do not reference is deleted)")
	}
	keep := map[artifacts.Digest]bool{}
	var st *artifacts.Store
	for _, p := range pos {
		l, err := gcFlags.load(p)
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
	rep, err := st.GC(ctx, keep, gcFlags.dryRun)
	if err != nil {
		return err
	}
	if gcFlags.json {
		return json.NewEncoder(os.Stdout).Encode(rep)
	}
	verb := "removed"
	if gcFlags.dryRun {
		verb = "would remove"
	}
	fmt.Printf("%s %d actions, %d objects, %d blobs (%s bytes); kept %d actions, %d objects, %d blobs\n",
		verb, rep.ActionsRemoved, rep.ObjectsRemoved, rep.BlobsRemoved, commas(rep.BytesFreed), rep.ActionsKept, rep.ObjectsKept, rep.BlobsKept)
	return nil
}
