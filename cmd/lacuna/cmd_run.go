package main

import (
	"context"
	"os"
	"time"

	"github.com/lacuna-dev/lacuna/engine"
)

var cmdRun = newCommand("run", "PIPELINE",
	"run a pipeline (or --target nodes and what they need)", `
Run executes every node whose result is not in the store, up to -j at a
time, and commits each result as it finishes. Progress goes to the
terminal, or as lines to stdout; --json prints one JSON event a line and
ends with a summary. Long nodes say how far their own work is (examples
run, samples, model calls, texts embedded) with its rate and ETA: on a
terminal in the status line, else in a line every --progress-interval
for each node running that long. SIGINT or SIGTERM stops dispatching new
nodes: run again to resume where it stopped. --recompute ADDR runs a node again even
though its result is cached (a judge whose fallback rows should be asked
again, now that its model answers) and commits the new result; model calls
that completed before are still replayed from the call cache.

Nodes on a runner of kind "slurm" run as jobs of that cluster (a for_each
sweep is one job array): each job runs this pipeline with --local and the
instance as its --target, against the same store, which must be on storage
the cluster's nodes share; the store says what finished, so a run killed
and started again submits only what has no result (and re-attaches to
what is still running). --local runs every node in this process, whatever
its runner: what those jobs run.`)

var runFlags struct {
	pipelineFlags
	targetFlag
	jobsFlag
	keepGoing bool
	recompute multiFlag
	local     bool
	// progressInterval is how often a piped run prints a line about each
	// node that runs that long.
	progressInterval time.Duration
}

func init() {
	runFlags.pipelineFlags.add(cmdRun.Flag)
	runFlags.jobsFlag.add(cmdRun.Flag)
	cmdRun.Flag.BoolVar(&runFlags.keepGoing, "keep-going", false, "keep running independent nodes after a failure")
	runFlags.targetFlag.add(cmdRun.Flag, "run")
	cmdRun.Flag.BoolVar(&runFlags.local, "local", false, "run every node in this process, whatever its runner (what a SLURM runner's jobs run)")
	cmdRun.Flag.Var(&runFlags.recompute, "recompute", "run this node again even if its result is cached, and commit the new one (repeatable)")
	cmdRun.Flag.DurationVar(&runFlags.progressInterval, "progress-interval", 10*time.Second, "without a terminal, print a progress line every this long for each node running that long (0: none)")
	cmdRun.Run = runRun
}

func runRun(ctx context.Context, cmd *Command, args []string) error {
	path, err := onePipeline(args, cmd)
	if err != nil {
		return err
	}
	l, err := runFlags.loadWith(path, storeCreate)
	if err != nil {
		return err
	}
	x := l.executor()
	x.Jobs, x.KeepGoing = runFlags.n, runFlags.keepGoing
	if !runFlags.local {
		if x.Remotes, err = remotes(l, &runFlags.pipelineFlags); err != nil {
			return err
		}
	}
	for _, addr := range runFlags.recompute {
		if _, ok := l.graph.Lookup(addr); !ok {
			return usageError("--recompute " + addr + ": no such node instance in " + path)
		}
		if x.Recompute == nil {
			x.Recompute = map[string]bool{}
		}
		x.Recompute[addr] = true
	}
	servers, stopServers, err := modelServers(l.store, os.Stderr)
	if err != nil {
		return err
	}
	defer stopServers()
	x.Servers = servers
	log, err := openRunLog(l.store)
	if err != nil {
		return err
	}
	defer log.Close()
	var display progress
	switch {
	case runFlags.json:
		display = newJSONProgress(os.Stdout)
	case isTerminal(os.Stderr):
		display = newTTYProgress(os.Stderr)
	default:
		display = newPlainProgress(os.Stdout, runFlags.progressInterval)
	}
	x.Events = func(e engine.Event) {
		if e.Event == engine.EventStart {
			// The run log names the pipeline (lacuna log lists runs
			// by it): the start event's message.
			e.Message = l.path
		}
		log.write(e)
		display.event(e)
	}
	_, sum, err := x.Run(ctx, l.graph, runFlags.addrs)
	display.close()
	if err != nil && sum != nil && sum.Failed > 0 && !runFlags.json {
		printFailures(l)
	}
	return err
}

func printFailures(l *loaded) {
	os.Stderr.WriteString("See 'lacuna show " + relPath(l.path) + " ADDR' for a failed node's logs.\n")
}
