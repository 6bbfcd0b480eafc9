package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/artifacts/arrowipc"
	"github.com/lacuna-dev/lacuna/engine"
	"golang.org/x/sys/unix"
)

var cmdExport = newCommand("export", "PIPELINE --to DIR",
	"write every artifact under readable names, with DuckDB views", `
Export copies every node's current artifact out of the store, verified, to
DIR/TYPE/NAME.parquet (a for_each instance's key in its name), or as Arrow IPC
files with --format arrow, and writes DIR/views.sql: one DuckDB view per
node type over its files, and DIR/lacuna-export.json: what it exported
(node, file, digest, rows). It exits 1 when a node has no artifact for its
current inputs (run the pipeline first).

DIR holds this export and nothing else: the export is written to a new
directory beside DIR, which then takes DIR's place, so a file a previous
export wrote and this one does not (a node renamed or removed) is gone,
and an interrupted export leaves the previous one whole. DIR must be
new, empty, or a previous lacuna export; a directory holding anything
else is refused unless --force, which replaces it and everything in it.
A directory holding the store, the pipeline or the working directory is
refused always.`)

var exportFlags struct {
	pipelineFlags
	to     string
	format string
	force  bool
}

func init() {
	exportFlags.pipelineFlags.add(cmdExport.Flag)
	cmdExport.Flag.StringVar(&exportFlags.to, "to", "", "directory to write (required)")
	cmdExport.Flag.StringVar(&exportFlags.format, "format", "parquet", "parquet or arrow (Arrow IPC files)")
	cmdExport.Flag.BoolVar(&exportFlags.force, "force", false, "replace --to even when it holds files that are not a lacuna export")
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
	dir, err := exportDir(*to, exportFlags.force, l)
	if err != nil {
		return err
	}
	entries, err := l.reader().Plan(ctx, l.graph, nil)
	if err != nil {
		return err
	}
	// Everything is written into tmp, which takes dir's place at the end.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".export-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // after a failure; renamed away on success
	if err := os.Chmod(tmp, 0o755); err != nil {
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
		dst := filepath.Join(tmp, rel)
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
		if err := writeViews(tmp, types); err != nil {
			return err
		}
	}
	manifest, err := json.MarshalIndent(map[string]any{exportMark: 1, "pipeline": l.path, "format": *format, "files": files, "not_computed": missing}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, exportManifest), append(manifest, '\n'), 0o644); err != nil {
		return err
	}
	if err := replaceDir(tmp, dir); err != nil {
		return fmt.Errorf("export to %s: %w", *to, err)
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

// exportManifest is the file naming what an export wrote; exportMark is
// its member that says a lacuna export wrote it.
const (
	exportManifest = "lacuna-export.json"
	exportMark     = "lacuna_export"
)

// exportDir checks that --to may take an export and returns its path (a
// symbolic link's target): a new or empty directory, or a previous
// export; another directory only with force; never one that holds the
// store, the pipeline or the working directory.
func exportDir(to string, force bool, l *loaded) (string, error) {
	dir, err := filepath.Abs(to)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	wd, _ := os.Getwd()
	for _, p := range []struct{ what, path string }{{"the store", l.store.Root()}, {"the pipeline", l.path}, {"the working directory", wd}} {
		if real, err := filepath.EvalSymlinks(p.path); err == nil {
			p.path = real
		}
		if rel, err := filepath.Rel(dir, p.path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return "", fmt.Errorf("--to %s holds %s: export to a directory of its own", to, p.what)
		}
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) || err == nil && len(entries) == 0:
		return dir, nil
	case err != nil:
		return "", err
	case isExport(dir) || force:
		return dir, nil
	}
	return "", fmt.Errorf("--to %s holds files that are not a lacuna export (%s...): give a new or empty directory, or --force to replace it and everything in it", to, entries[0].Name())
}

// isExport reports whether dir holds an export: its manifest, or the
// views.sql of an export written before manifests were.
func isExport(dir string) bool {
	if b, err := os.ReadFile(filepath.Join(dir, exportManifest)); err == nil {
		var m map[string]json.RawMessage
		return json.Unmarshal(b, &m) == nil && m[exportMark] != nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "views.sql"))
	return err == nil && strings.HasPrefix(string(b), viewsHeader)
}

// replaceDir gives directory tmp the name dir, and removes what was
// there: at once where the kernel can exchange two names
// (renameat2 RENAME_EXCHANGE), else by moving dir aside first.
func replaceDir(tmp, dir string) error {
	err := os.Rename(tmp, dir)
	if err == nil {
		return nil
	}
	if _, serr := os.Lstat(dir); serr != nil {
		return err
	}
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dir, unix.RENAME_EXCHANGE); err == nil {
		return os.RemoveAll(tmp) // the previous contents of dir
	}
	old := tmp + ".old"
	if err := os.Rename(dir, old); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.Rename(old, dir)
		return err
	}
	return os.RemoveAll(old)
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

// viewsHeader opens views.sql.
const viewsHeader = "-- DuckDB views over this export"

// writeViews writes views.sql: one DuckDB view per node type over all of
// that type's files, with the file name as a column to tell nodes apart.
func writeViews(dir string, types map[string]bool) error {
	var names []string
	for t := range types {
		names = append(names, t)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(viewsHeader + ": cd into this directory, then `duckdb -init views.sql`.\n")
	for _, t := range names {
		fmt.Fprintf(&b, "CREATE OR REPLACE VIEW %q AS SELECT * FROM read_parquet('%s/*.parquet', union_by_name = true, filename = true);\n", t, t)
	}
	return os.WriteFile(filepath.Join(dir, "views.sql"), []byte(b.String()), 0o644)
}
