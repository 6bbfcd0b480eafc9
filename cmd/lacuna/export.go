package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/artifacts/arrowipc"
	"github.com/lacuna-dev/lacuna/engine"
)

var cmdExport = newCommand("export", "PIPELINE --to DIR",
	"write every artifact under readable names, with DuckDB views", `
Export copies every node's current artifact out of the store, verified, to
DIR/TYPE/NAME.parquet (a for_each instance's key in its name), or as Arrow IPC
files with --format arrow, and writes DIR/views.sql: one DuckDB view per
node type over its files. It exits 1 when a node has no artifact for its
current inputs (run the pipeline first).`)

var exportFlags struct {
	pipelineFlags
	to     string
	format string
}

func init() {
	exportFlags.pipelineFlags.add(cmdExport.Flag)
	cmdExport.Flag.StringVar(&exportFlags.to, "to", "", "directory to write (required)")
	cmdExport.Flag.StringVar(&exportFlags.format, "format", "parquet", "parquet or arrow (Arrow IPC files)")
	cmdExport.Run = runExport
}

func runExport(ctx context.Context, cmd *Command, args []string) error {
	pf, to, format := &exportFlags.pipelineFlags, &exportFlags.to, &exportFlags.format
	path, err := onePipeline(args, cmd)
	if err != nil {
		return err
	}
	if *to == "" {
		return usageError("--to DIR is required")
	}
	if *format != "parquet" && *format != "arrow" {
		return usageError(fmt.Sprintf("--format %q: want parquet or arrow", *format))
	}
	l, err := pf.load(path)
	if err != nil {
		return err
	}
	entries, err := l.reader().Plan(ctx, l.graph, nil)
	if err != nil {
		return err
	}
	ext := ".parquet"
	if *format == "arrow" {
		ext = ".arrow"
	}
	type exported struct {
		Node   string `json:"node"`
		File   string `json:"file"`
		Digest string `json:"digest"`
		Rows   int64  `json:"rows"`
		// LastKnown: the last run's result, or computed from such,
		// because these nodes' keys cannot be checked now.
		LastKnown []string `json:"last_known,omitempty"`
	}
	lastKnown := 0
	var files []exported
	var missing []string
	types := map[string]bool{}
	for _, e := range entries {
		if e.Status != engine.PlanCached {
			missing = append(missing, e.Node)
			continue
		}
		inst, _ := l.graph.Lookup(e.Node)
		rel := filepath.Join(inst.Decl.TypeName, inst.Address.FileStem()+ext)
		dst := filepath.Join(*to, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		a, err := l.store.GetAction(e.Key)
		if err != nil {
			return err
		}
		if *format == "arrow" {
			err = exportArrow(l, a.Output, dst)
		} else {
			err = copyVerified(l, a.Output, dst)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", e.Node, err)
		}
		types[inst.Decl.TypeName] = true
		files = append(files, exported{e.Node, rel, string(e.Digest), e.Rows, e.LastKnown})
		if len(e.LastKnown) > 0 {
			lastKnown++
		}
	}
	if *format == "parquet" {
		if err := writeViews(*to, types); err != nil {
			return err
		}
	}
	if pf.json {
		if err := json.NewEncoder(os.Stdout).Encode(map[string]any{"dir": *to, "files": files, "not_computed": missing}); err != nil {
			return err
		}
	} else {
		fmt.Printf("exported %d artifacts to %s", len(files), *to)
		if *format == "parquet" {
			fmt.Printf(" (DuckDB: cd %s && duckdb -init views.sql)", *to)
		}
		fmt.Println()
	}
	if lastKnown > 0 {
		fmt.Fprintf(os.Stderr, "note: %d of them are last runs' results, or computed from such, whose keys cannot be checked now (a model server down?): lacuna plan says why\n", lastKnown)
	}
	if len(missing) > 0 {
		return fmt.Errorf("%d node(s) have no artifact for their current inputs (run the pipeline first): %s", len(missing), strings.Join(missing[:min(5, len(missing))], ", "))
	}
	return nil
}

// copyVerified copies an object after checking it, so an export never
// hands out a corrupt file.
func copyVerified(l *loaded, obj artifacts.Object, dst string) error {
	if _, err := l.store.Open(obj); err != nil {
		return err
	}
	src, err := os.Open(l.store.ObjectPath(obj.Digest))
	if err != nil {
		return err
	}
	defer src.Close()
	return writeAtomically(dst, func(f *os.File) error {
		_, err := io.Copy(f, src)
		return err
	})
}

func exportArrow(l *loaded, obj artifacts.Object, dst string) error {
	r, err := l.store.Open(obj)
	if err != nil {
		return err
	}
	return writeAtomically(dst, func(f *os.File) error { return arrowipc.Write(f, r) })
}

// writeAtomically writes dst through a temporary file, so that an
// interrupted export leaves no half-written file under a real name.
func writeAtomically(dst string, write func(*os.File) error) error {
	tmp := dst + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dst)
}

// writeViews writes views.sql: one DuckDB view per node type over all of
// that type's files, with the file name as a column to tell nodes apart.
func writeViews(dir string, types map[string]bool) error {
	var names []string
	for t := range types {
		names = append(names, t)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("-- DuckDB views over this export: cd into this directory, then `duckdb -init views.sql`.\n")
	for _, t := range names {
		fmt.Fprintf(&b, "CREATE OR REPLACE VIEW %q AS SELECT * FROM read_parquet('%s/*.parquet', union_by_name = true, filename = true);\n", t, t)
	}
	return os.WriteFile(filepath.Join(dir, "views.sql"), []byte(b.String()), 0o644)
}
