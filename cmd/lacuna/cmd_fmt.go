package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

var cmdFmt = newCommand("fmt", "[FILE|DIR...]",
	"format pipeline files", `
Fmt rewrites pipeline files (FILE, or every .hcl file in DIR; default .)
in the canonical HCL layout and prints the names of those it changed. A
file that does not parse is left alone and its errors printed.`)

var fmtCheck bool

func init() {
	cmdFmt.Flag.BoolVar(&fmtCheck, "check", false, "list files that are not formatted and exit 1; change nothing")
	cmdFmt.Run = runFmt
}

func runFmt(ctx context.Context, cmd *Command, args []string) error {
	pos := args
	if len(pos) == 0 {
		pos = []string{"."}
	}
	var files []string
	for _, p := range pos {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			m, err := filepath.Glob(filepath.Join(p, "*.hcl"))
			if err != nil {
				return err
			}
			files = append(files, m...)
		} else {
			files = append(files, p)
		}
	}
	unformatted := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		// Refuse to reformat what does not parse: the user needs the error.
		if _, diags := hclsyntax.ParseConfig(src, f, hcl.InitialPos); diags.HasErrors() {
			printDiags(os.Stderr, diags, nil)
			return exitError(1)
		}
		out := hclwrite.Format(src)
		if bytes.Equal(out, src) {
			continue
		}
		unformatted++
		if fmtCheck {
			fmt.Println(f)
			continue
		}
		if err := os.WriteFile(f, out, 0o644); err != nil {
			return err
		}
		fmt.Println(f)
	}
	if fmtCheck && unformatted > 0 {
		return exitError(1)
	}
	return nil
}
