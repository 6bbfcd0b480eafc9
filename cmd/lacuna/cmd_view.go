package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/user"
	"sync"
	"time"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/view"
)

var cmdView = newCommand("view", "PIPELINE",
	"browse the pipeline's DAG, artifacts and samples in a local web UI; label samples", `
View serves a web UI over the pipeline's store on a loopback address
(--addr, default 127.0.0.1 on a free port) and prints its URL. It shows
the DAG with each node's state, its provenance (action key, inputs,
versions, identity, timings, reports), logs and failures; any artifact,
paged, filtered and sorted; the NovelAPIBench drill-down of a judged
sample (task, bundle, the prompt of each cell, the answer, the harness's
verdict layer by layer, the judge's class and rationale); a ToolSense
query's ranked tools with the gold tools marked; two judge or retrieve
nodes side by side; and the labels people give samples and RRB items,
with Cohen's kappa against the judge. Pages are also JSON
(?format=json).

It only reads the store, except to save a label (a POST from its own
page): each save is an artifact holding the whole label set (see
artifacts/STORE.md, annotations/). It runs until interrupted. Node
states come from a plan of the pipeline made for each page (at most
every 2 seconds), so a run in another terminal shows on reload. See
docs/view.md.`)

var viewFlags struct {
	pipelineFlags
	addr      string
	annotator string
}

func init() {
	viewFlags.pipelineFlags.add(cmdView.Flag)
	cmdView.Flag.StringVar(&viewFlags.addr, "addr", "127.0.0.1:0", "loopback address to listen on (port 0: a free port)")
	cmdView.Flag.StringVar(&viewFlags.annotator, "annotator", "", "the name the annotation forms start with (default: your user name)")
	cmdView.Run = runView
}

func runView(ctx context.Context, cmd *Command, args []string) error {
	path, err := onePipeline(args, cmd)
	if err != nil {
		return err
	}
	if err := loopbackAddr(viewFlags.addr); err != nil {
		return usageError(err.Error())
	}
	l, err := viewFlags.load(path)
	if err != nil {
		return err
	}
	annotator := viewFlags.annotator
	if annotator == "" {
		if u, err := user.Current(); err == nil {
			annotator = u.Username
		}
	}
	srv, err := view.New(view.Config{Store: l.store, Pipeline: l.path, Plan: viewPlan(l), Annotator: annotator})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", viewFlags.addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("lacuna view: http://%s/\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// loopbackAddr accepts HOST:PORT whose host is a loopback IP address or
// localhost: the viewer is for the person at this machine.
func loopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: want HOST:PORT, e.g. 127.0.0.1:8080", addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--addr %q: lacuna view listens on a loopback address only (127.0.0.1, ::1 or localhost)", addr)
	}
	return nil
}

// viewPlan is the viewer's Plan: the reader's plan of the whole
// pipeline (a node whose key cannot be computed now, say its model
// server is down, at its last-known result), one at a time, reused for
// 2 seconds.
func viewPlan(l *loaded) func(context.Context) ([]view.Node, error) {
	var (
		mu   sync.Mutex
		last []view.Node
		at   time.Time
	)
	return func(ctx context.Context) ([]view.Node, error) {
		mu.Lock()
		defer mu.Unlock()
		if last != nil && time.Since(at) < 2*time.Second {
			return last, nil
		}
		entries, err := l.reader().Plan(ctx, l.graph, nil)
		if err != nil {
			return nil, err
		}
		byAddr := make(map[string]engine.PlanEntry, len(entries))
		for _, e := range entries {
			byAddr[e.Node] = e
		}
		out := make([]view.Node, 0, len(l.graph.Instances))
		for _, i := range l.graph.Instances {
			e := byAddr[i.Addr]
			n := view.Node{Addr: i.Addr, Type: i.Decl.TypeName, Status: e.Status, Reason: e.Reason, Key: e.Key, LastKnown: len(e.LastKnown) > 0}
			for _, in := range i.Inputs {
				n.Inputs = append(n.Inputs, in.Addr)
			}
			out = append(out, n)
		}
		last, at = out, time.Now()
		return out, nil
	}
}
