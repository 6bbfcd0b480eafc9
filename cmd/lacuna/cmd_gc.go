package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/lacuna-dev/lacuna/annotations"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
)

var cmdGC = newCommand("gc", "[--calls] PIPELINE...",
	"delete what no pipeline of the store references", `
GC deletes every action, object and blob of the store that no pipeline's
results reference: a blob is kept while an action kept lists it in its
entry's blobs. Its roots are the current results of the given pipelines
(the nodes they declare now, with their current inputs) and, for every
other pipeline that ever ran against the store, the results its last runs
recorded in the store's names/ snapshots: pipelines sharing one store (the
shipped pipelines share pipelines/.lacuna) never lose each other's work.
It prints what it keeps, pipeline by pipeline, and what it removed (every
result with --dry-run or --json). --forget PIPELINE drops a pipeline's
recorded results from the roots (its snapshot is deleted), for a pipeline
that is gone or whose results are no longer wanted. The given pipelines
must share one store.

The call cache (calls/: every completed model call) is kept, since no
artifact references it and its calls cost model time to make again;
--calls deletes it too, and with no PIPELINE deletes only it. The label
sets people saved (lacuna view's annotations, of every pipeline of the
store) are kept too.`)

var gcFlags struct {
	pipelineFlags
	dryRun bool
	calls  bool
	forget multiFlag
}

func init() {
	gcFlags.pipelineFlags.add(cmdGC.Flag)
	cmdGC.Flag.BoolVar(&gcFlags.dryRun, "dry-run", false, "only report what would be deleted")
	cmdGC.Flag.BoolVar(&gcFlags.calls, "calls", false, "also delete the call cache (every cached model call)")
	cmdGC.Flag.Var(&gcFlags.forget, "forget", "collect the results another pipeline's runs recorded too: delete its snapshot (a pipeline file path; repeatable)")
	cmdGC.Run = runGC
}

// gcRoot is what gc keeps for one pipeline.
type gcRoot struct {
	Pipeline string `json:"pipeline"`
	// Current: the pipeline was given, its roots are its current
	// results; else they are what its snapshot recorded.
	Current bool `json:"current"`
	Results int  `json:"results"`
	// Gone: the pipeline's file no longer exists.
	Gone bool `json:"gone,omitempty"`
}

func runGC(ctx context.Context, cmd *Command, args []string) error {
	pos := args
	if len(pos) == 0 && !gcFlags.calls {
		return usageError("usage: lacuna gc [--calls] [--forget PIPELINE] PIPELINE... (everything no pipeline references is deleted), or lacuna gc --calls (the call cache only)")
	}
	if len(pos) == 0 && len(gcFlags.forget) > 0 {
		return usageError("--forget needs a PIPELINE to collect with")
	}
	verb := "removed"
	if gcFlags.dryRun {
		verb = "would remove"
	}
	var st *artifacts.Store
	var rep *artifacts.GCReport
	var roots []gcRoot
	if len(pos) > 0 {
		keep := map[artifacts.Digest]bool{}
		named := map[string]bool{}
		for _, p := range pos {
			l, err := gcFlags.load(p)
			if err != nil {
				return err
			}
			if st != nil && st.Root() != l.store.Root() {
				return fmt.Errorf("%s uses store %s, not %s: collect one store at a time", p, l.store.Root(), st.Root())
			}
			st = l.store
			named[l.path] = true
			plan, err := l.reader().Plan(ctx, l.graph, nil)
			if err != nil {
				return err
			}
			lastKnown, n := 0, 0
			for _, e := range plan {
				if e.Status == engine.PlanCached {
					keep[e.Key] = true
					n++
					if len(e.LastKnown) > 0 {
						lastKnown++
					}
				}
			}
			roots = append(roots, gcRoot{Pipeline: l.path, Current: true, Results: n})
			if lastKnown > 0 {
				fmt.Fprintf(os.Stderr, "note: %s: kept %d last-known results whose keys cannot be checked now (a model server down?)\n", p, lastKnown)
			}
		}
		snaps, err := st.Snapshots()
		if err != nil {
			return err
		}
		forget := map[string]bool{}
		for _, f := range gcFlags.forget {
			abs := absPath(f)
			if named[abs] {
				return usageError(fmt.Sprintf("--forget %s: it is also a PIPELINE to keep", f))
			}
			found := false
			for _, snap := range snaps {
				found = found || snap.Pipeline == abs
			}
			if !found {
				return fmt.Errorf("--forget %s: %s records no results of %s", f, relPath(st.Root()), abs)
			}
			forget[abs] = true
		}
		for _, snap := range snaps {
			if named[snap.Pipeline] || forget[snap.Pipeline] {
				continue
			}
			n := 0
			for _, node := range snap.Nodes {
				if node.Key != "" && !node.Failed && st.ActionIntact(node.Key, snap.Written) {
					keep[node.Key] = true
					n++
				}
			}
			_, statErr := os.Stat(snap.Pipeline)
			roots = append(roots, gcRoot{Pipeline: snap.Pipeline, Results: n, Gone: errors.Is(statErr, fs.ErrNotExist)})
		}
		annotated := func() ([]artifacts.Digest, error) { return annotations.Roots(st) }
		if rep, err = st.GC(ctx, keep, gcFlags.dryRun, artifacts.GCRoots(annotated)); err != nil {
			return err
		}
		if !gcFlags.dryRun {
			for p := range forget {
				if err := st.ForgetSnapshot(p); err != nil {
					return err
				}
			}
		}
	} else {
		var err error
		if st, err = gcFlags.openHere(); err != nil {
			return err
		}
	}
	out := gcResult{GCReport: rep, Roots: roots}
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
	for _, r := range roots {
		if r.Current {
			fmt.Printf("keeping %s results of %s (its current nodes)\n", commas(int64(r.Results)), relPath(r.Pipeline))
			continue
		}
		why := "recorded by its last runs"
		if r.Gone {
			why = "recorded by its last runs; its file is gone"
		}
		fmt.Printf("keeping %s results of %s (%s; --forget %s collects them)\n", commas(int64(r.Results)), relPath(r.Pipeline), why, relPath(r.Pipeline))
	}
	if rep != nil {
		fmt.Printf("%s %d actions, %d objects, %d blobs (%s bytes); kept %d actions, %d objects, %d blobs\n",
			verb, rep.ActionsRemoved, rep.ObjectsRemoved, rep.BlobsRemoved, commas(rep.BytesFreed), rep.ActionsKept, rep.ObjectsKept, rep.BlobsKept)
		const shown = 20
		for i, a := range rep.Removed {
			if i == shown && !gcFlags.dryRun {
				fmt.Printf("  ... and %d more (--dry-run or --json lists them all)\n", len(rep.Removed)-shown)
				break
			}
			node := a.Node
			if node == "" {
				node = "(an entry that does not read)"
			}
			fmt.Printf("  %s %s: action %s, %s rows\n", verb, node, a.Key.Short(), commas(a.Rows))
		}
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
	Roots           []gcRoot `json:"roots,omitempty"`
	CallsRemoved    *int     `json:"calls_removed,omitempty"`
	CallsBytesFreed *int64   `json:"calls_bytes_freed,omitempty"`
}
