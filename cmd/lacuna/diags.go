package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/lacuna-dev/lacuna/engine"
)

// printDiags prints diagnostics as compilers do, file:line:col first, with
// the offending source line and a caret under the range.
func printDiags(w io.Writer, diags hcl.Diagnostics, cfg *engine.Config) {
	for _, d := range diags {
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		if d.Subject == nil {
			fmt.Fprintf(w, "%s: %s\n", sev, d.Summary)
		} else {
			fmt.Fprintf(w, "%s:%d:%d: %s: %s\n", relPath(d.Subject.Filename), d.Subject.Start.Line, d.Subject.Start.Column, sev, d.Summary)
		}
		if d.Detail != "" {
			fmt.Fprintf(w, "  %s\n", d.Detail)
		}
		if d.Subject != nil {
			if line, ok := sourceLine(cfg, d.Subject); ok {
				fmt.Fprintf(w, "  %4d | %s\n", d.Subject.Start.Line, line)
				width := 1
				if d.Subject.End.Line == d.Subject.Start.Line && d.Subject.End.Column > d.Subject.Start.Column {
					width = d.Subject.End.Column - d.Subject.Start.Column
				}
				fmt.Fprintf(w, "       | %s%s\n", strings.Repeat(" ", max(0, d.Subject.Start.Column-1)), strings.Repeat("^", width))
			}
		}
	}
}

func sourceLine(cfg *engine.Config, rng *hcl.Range) (string, bool) {
	var src []byte
	if cfg != nil {
		if f, ok := cfg.Files[rng.Filename]; ok {
			src = f.Bytes
		}
	}
	if src == nil {
		b, err := os.ReadFile(rng.Filename)
		if err != nil {
			return "", false
		}
		src = b
	}
	lines := strings.Split(string(src), "\n")
	if rng.Start.Line < 1 || rng.Start.Line > len(lines) {
		return "", false
	}
	return strings.TrimRight(lines[rng.Start.Line-1], "\r"), true
}

func relPath(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "../../") {
		return r
	}
	return p
}
