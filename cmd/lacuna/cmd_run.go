package main

import (
	"context"
	"os"

	"github.com/lacuna-dev/lacuna/engine"
)

var cmdRun = newCommand("run", "PIPELINE",
	"run a pipeline (or --target nodes and what they need)", `
Run executes every node whose result is not in the store, up to -j at a
time, and commits each result as it finishes. Progress goes to the
terminal, or as lines to stdout; --json prints one JSON event a line and
ends with a summary. SIGINT or SIGTERM stops dispatching new nodes: run
again to resume where it stopped.`)

var runFlags struct {
	pipelineFlags
	targetFlag
	jobsFlag
	keepGoing bool
}

func init() {
	runFlags.pipelineFlags.add(cmdRun.Flag)
	runFlags.jobsFlag.add(cmdRun.Flag)
	cmdRun.Flag.BoolVar(&runFlags.keepGoing, "keep-going", false, "keep running independent nodes after a failure")
	runFlags.targetFlag.add(cmdRun.Flag, "run")
	cmdRun.Run = runRun
}

func runRun(ctx context.Context, cmd *Command, args []string) error {
	path, err := onePipeline(args, cmd)
	if err != nil {
		return err
	}
	l, err := runFlags.load(path)
	if err != nil {
		return err
	}
	x := l.executor()
	x.Jobs, x.KeepGoing = runFlags.n, runFlags.keepGoing
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
		display = newPlainProgress(os.Stdout)
	}
	x.Events = func(e engine.Event) {
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
