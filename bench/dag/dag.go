// Package dag writes the benchmark pipeline: one import, N sample nodes
// over it, and a concat fanning them in, as lacuna HCL and as the same DAG
// for Snakemake (the peer the benchmark compares with).
package dag

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Style is how the N sample nodes are declared.
type Style string

const (
	// Blocks declares N node blocks and a concat listing all N.
	Blocks Style = "blocks"
	// ForEach declares one sample block with for_each over range(N).
	ForEach Style = "for_each"
)

// DataRows is the size of the imported table.
const DataRows = 1000

// Write creates dir/pipeline.hcl, dir/data.jsonl and dir/Snakefile.
func Write(dir string, n int, style Style) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var data strings.Builder
	for i := 0; i < DataRows; i++ {
		fmt.Fprintf(&data, "{\"id\": %d, \"group\": \"g%d\", \"text\": \"row %d of the benchmark table\"}\n", i, i%7, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "data.jsonl"), []byte(data.String()), 0o644); err != nil {
		return err
	}
	var p strings.Builder
	p.WriteString("node \"import\" \"data\" { path = \"data.jsonl\" }\n\n")
	switch style {
	case ForEach:
		fmt.Fprintf(&p, "node \"sample\" \"s\" {\n  for_each = range(%d)\n  input    = node.import.data\n  n        = 5\n  seed     = each.value\n}\n\n", n)
		p.WriteString("node \"concat\" \"all\" { inputs = values(node.sample.s) }\n")
	default:
		for i := 0; i < n; i++ {
			fmt.Fprintf(&p, "node \"sample\" \"s%d\" {\n  input = node.import.data\n  n     = 5\n  seed  = %d\n}\n", i, i)
		}
		p.WriteString("\nnode \"concat\" \"all\" {\n  inputs = [\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&p, "    node.sample.s%d,\n", i)
		}
		p.WriteString("  ]\n}\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "pipeline.hcl"), []byte(p.String()), 0o644); err != nil {
		return err
	}
	// Shell rules: Snakemake's run: blocks start a Python interpreter per
	// job, which would measure Python start-up rather than the scheduler.
	snake := fmt.Sprintf(`# The same DAG for Snakemake: import, %d samples, concat.
N = %d

rule all:
    input: "out/all.jsonl"

rule data:
    input: "data.jsonl"
    output: "out/data.jsonl"
    shell: "cp {input} {output}"

rule sample:
    input: "out/data.jsonl"
    output: "out/s/{i}.jsonl"
    shell: "shuf -n 5 --random-source=<(yes {wildcards.i}) {input} > {output}"

rule concat:
    input: expand("out/s/{i}.jsonl", i=range(N))
    output: "out/all.jsonl"
    shell: "cat {input} > {output}"
`, n, n)
	return os.WriteFile(filepath.Join(dir, "Snakefile"), []byte(snake), 0o644)
}

// EditOne changes one sample node's seed, the edit the incremental
// benchmark re-runs after.
func EditOne(dir string, style Style) error {
	path := filepath.Join(dir, "pipeline.hcl")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	switch style {
	case ForEach:
		s = strings.Replace(s, "seed     = each.value", "seed     = each.value == 0 ? 1000000 : each.value", 1)
	default:
		s = strings.Replace(s, "  seed  = 0\n", "  seed  = 1000000\n", 1)
	}
	if s == string(b) {
		return fmt.Errorf("edit: pattern not found in %s", path)
	}
	return os.WriteFile(path, []byte(s), 0o644)
}
