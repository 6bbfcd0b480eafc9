package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/lacuna-dev/lacuna/annotations"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
)

var cmdGC = newCommand("gc", "[--calls] PIPELINE...",
	"delete what the given pipelines do not reference", `
GC deletes every action, object and blob of the store that the current
artifacts of the given pipelines do not reference: a blob is kept while
an action kept lists it in its entry's blobs. The pipelines must share
one store. The call cache (calls/: every completed model call) is
kept, since no artifact references it and its calls cost model time to
make again; --calls deletes it too, and with no PIPELINE deletes only it.
The label sets people saved (lacuna view's annotations, of every
pipeline of the store) are kept too.`)

var gcFlags struct {
	pipelineFlags
	dryRun bool
	calls  bool
}

func init() {
	gcFlags.pipelineFlags.add(cmdGC.Flag)
	cmdGC.Flag.BoolVar(&gcFlags.dryRun, "dry-run", false, "only report what would be deleted")
	cmdGC.Flag.BoolVar(&gcFlags.calls, "calls", false, "also delete the call cache (every cached model call)")
	cmdGC.Run = runGC
}

func runGC(ctx context.Context, cmd *Command, args []string) error {
	pos := args
	if len(pos) == 0 && !gcFlags.calls {
		return usageError("usage: lacuna gc [--calls] PIPELINE... (everything these pipelines do not reference is deleted), or lacuna gc --calls (the call cache only)")
	}
	verb := "removed"
	if gcFlags.dryRun {
		verb = "would remove"
	}
	var st *artifacts.Store
	var rep *artifacts.GCReport
	if len(pos) > 0 {
		keep := map[artifacts.Digest]bool{}
		for _, p := range pos {
			l, err := gcFlags.load(p)
			if err != nil {
				return err
			}
			if st != nil && st.Root() != l.store.Root() {
				return fmt.Errorf("%s uses store %s, not %s: collect one store at a time", p, l.store.Root(), st.Root())
			}
			st = l.store
			plan, err := l.reader().Plan(ctx, l.graph, nil)
			if err != nil {
				return err
			}
			lastKnown := 0
			for _, e := range plan {
				if e.Status == engine.PlanCached {
					keep[e.Key] = true
					if len(e.LastKnown) > 0 {
						lastKnown++
					}
				}
			}
			if lastKnown > 0 {
				fmt.Fprintf(os.Stderr, "note: %s: kept %d last-known results whose keys cannot be checked now (a model server down?)\n", p, lastKnown)
			}
		}
		var err error
		roots := func() ([]artifacts.Digest, error) { return annotations.Roots(st) }
		if rep, err = st.GC(ctx, keep, gcFlags.dryRun, artifacts.GCRoots(roots)); err != nil {
			return err
		}
	} else {
		var err error
		if st, err = gcFlags.openHere(); err != nil {
			return err
		}
	}
	out := gcResult{GCReport: rep}
	if gcFlags.calls {
		n, size, err := st.Calls().Clear(ctx, gcFlags.dryRun)
		if err != nil {
			return err
		}
		out.CallsRemoved, out.CallsBytesFreed = &n, &size
	}
	if gcFlags.json {
		return json.NewEncoder(os.Stdout).Encode(out)
	}
	if rep != nil {
		fmt.Printf("%s %d actions, %d objects, %d blobs (%s bytes); kept %d actions, %d objects, %d blobs\n",
			verb, rep.ActionsRemoved, rep.ObjectsRemoved, rep.BlobsRemoved, commas(rep.BytesFreed), rep.ActionsKept, rep.ObjectsKept, rep.BlobsKept)
	}
	if out.CallsRemoved != nil {
		fmt.Printf("%s %s cached model calls (%s bytes)\n", verb, commas(int64(*out.CallsRemoved)), commas(*out.CallsBytesFreed))
	}
	return nil
}

// gcResult is what `lacuna gc --json` prints: the collection's counts
// (absent with --calls and no pipeline) and, with --calls, the call
// cache's.
type gcResult struct {
	*artifacts.GCReport
	CallsRemoved    *int   `json:"calls_removed,omitempty"`
	CallsBytesFreed *int64 `json:"calls_bytes_freed,omitempty"`
}
