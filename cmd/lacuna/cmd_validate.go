package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

var cmdValidate = newCommand("validate", "PIPELINE",
	"check a pipeline: syntax, references, types, cycles", `
Validate parses the pipeline, evaluates its variables and for_each
expressions and checks every node's configuration (model endpoints,
filter expressions against their input's columns, the files nodes name),
without opening the store. Problems are printed as FILE:LINE:COL
diagnostics.`)

var validateFlags pipelineFlags

func init() {
	validateFlags.add(cmdValidate.Flag)
	cmdValidate.Run = runValidate
}

func runValidate(ctx context.Context, cmd *Command, args []string) error {
	path, err := onePipeline(args, cmd)
	if err != nil {
		return err
	}
	l, err := validateFlags.loadWith(path, storeValidate)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted: %w", err)
	}
	types := map[string]int{}
	for _, i := range l.graph.Instances {
		types[i.Decl.TypeName]++
	}
	if validateFlags.json {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{"valid": true, "nodes": len(l.graph.Config.Nodes), "instances": len(l.graph.Instances), "types": types})
	}
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(types)) {
		parts = append(parts, fmt.Sprintf("%d %s", types[t], t))
	}
	fmt.Printf("%s is valid: %d nodes, %d instances (%s)\n", path, len(l.graph.Config.Nodes), len(l.graph.Instances), strings.Join(parts, ", "))
	return nil
}
