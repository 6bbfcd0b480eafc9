package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lacuna-dev/lacuna/annotations"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/report"
)

var cmdReport = newCommand("report", "PIPELINE [--out DIR]",
	"write an HTML report of the pipeline's results, with figures and tables", `
Report reads what the pipeline has computed and writes a self-contained
HTML page (figures inlined as SVG, no network), each figure as SVG and PNG
(figures/), each table as Markdown and CSV (tables/), and report.json, an
index of the sections, tables, figures and the artifacts' content digests.
It finds nodes by type, so it reads any pipeline: NovelAPIBench's Table 1
(pass@1 and pass@k per model × cell with their intervals), the failure
composition, the difficulty, library and retriever breakdowns, the judge's
calibration confusion matrix and agreement (with Cohen's κ against
people's labels where there are any), and the tasks C1 keeps per
library; ToolSense's Rc@k per tier, Rf@k and IS@k, and probe accuracy
with its positional bias. Nodes not computed yet are listed, never
filled in (docs/report.md).

The report goes to --out, by default .lacuna-report/NAME beside the
pipeline (NAME: the pipeline file's name without .hcl). A directory that
holds files must hold an earlier report, which is replaced. The same
artifacts give the same files. It prints the path of index.html, or with
--json the index.`)

var reportFlags struct {
	pipelineFlags
	out string
}

func init() {
	reportFlags.pipelineFlags.add(cmdReport.Flag)
	cmdReport.Flag.StringVar(&reportFlags.out, "out", "", "directory to write (default: .lacuna-report/NAME beside the pipeline)")
	cmdReport.Run = runReport
}

func runReport(ctx context.Context, cmd *Command, args []string) error {
	pf := &reportFlags.pipelineFlags
	path, err := onePipeline(args, cmd)
	if err != nil {
		return err
	}
	l, err := pf.load(path)
	if err != nil {
		return err
	}
	entries, err := l.reader().Plan(ctx, l.graph, nil)
	if err != nil {
		return err
	}
	var nodes []report.Node
	lastKnown := 0
	for _, e := range entries {
		n := report.Node{Addr: e.Node, Type: e.Type}
		if e.Status == engine.PlanCached {
			a, err := l.store.GetAction(e.Key)
			if err != nil {
				return fmt.Errorf("%s: %w", e.Node, err)
			}
			n.Object, n.Config, n.LastKnown = a.Output, a.Config, len(e.LastKnown) > 0
			if n.LastKnown {
				lastKnown++
			}
		} else {
			n.Pending = e.Status
			if e.Reason != "" {
				n.Pending += ": " + e.Reason
			}
		}
		nodes = append(nodes, n)
	}
	labels, err := annotations.Load(l.store, l.path)
	if err != nil {
		return err
	}
	name := strings.TrimSuffix(filepath.Base(l.path), ".hcl")
	rep, err := report.Build(report.Input{Title: name, Run: "lacuna run " + runArgs(path), Store: l.store, Nodes: nodes, Labels: labels})
	if err != nil {
		return err
	}
	out := reportFlags.out
	if out == "" {
		dir := l.path
		if st, err := os.Stat(l.path); err != nil || !st.IsDir() {
			dir = filepath.Dir(l.path)
		}
		out = filepath.Join(dir, ".lacuna-report", name)
	}
	idx, err := rep.Write(out)
	if err != nil {
		return err
	}
	html := filepath.Join(out, idx.HTML)
	if lastKnown > 0 {
		fmt.Fprintf(os.Stderr, "note: %d of the artifacts are last runs' results, or computed from such, whose keys cannot be checked now (a model server down?): lacuna plan says why\n", lastKnown)
	}
	if pf.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Dir string `json:"dir"`
			*report.Index
		}{out, idx})
	}
	fmt.Println(html)
	return nil
}

// runArgs is the pipeline argument and the flags that select its
// artifacts, as `lacuna run` takes them.
func runArgs(path string) string {
	parts := []string{}
	if reportFlags.dir != "" {
		parts = append(parts, "--store "+reportFlags.dir)
	}
	for _, v := range reportFlags.vars {
		parts = append(parts, "--var "+quoteArg(v))
	}
	for _, f := range reportFlags.varFiles {
		parts = append(parts, "--var-file "+quoteArg(f))
	}
	return strings.Join(append(parts, quoteArg(path)), " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func quoteArg(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@,+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
