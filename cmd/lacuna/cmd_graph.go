package main

import (
	"context"
	"fmt"
)

var cmdGraph = newCommand("graph", "PIPELINE",
	"print the node graph (DOT or Mermaid)", `
Graph prints the expanded node graph, one vertex per node instance, as
Graphviz DOT (--format dot) or a Mermaid flowchart (--format mermaid).`)

var graphFlags struct {
	pipelineFlags
	format string
}

func init() {
	graphFlags.pipelineFlags.add(cmdGraph.Flag)
	cmdGraph.Flag.StringVar(&graphFlags.format, "format", "dot", "dot or mermaid")
	cmdGraph.Run = runGraph
}

func runGraph(ctx context.Context, cmd *Command, args []string) error {
	path, err := onePipeline(args, cmd)
	if err != nil {
		return err
	}
	l, err := graphFlags.loadWith(path, storeNone)
	if err != nil {
		return err
	}
	switch graphFlags.format {
	case "dot":
		fmt.Print(l.graph.DOT())
	case "mermaid":
		fmt.Print(l.graph.Mermaid())
	default:
		return usageError(fmt.Sprintf("--format %q: want dot or mermaid", graphFlags.format))
	}
	return nil
}
