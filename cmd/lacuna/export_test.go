package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// nestedRow is the row of testdata/export's nested.parquet: the Parquet
// shapes JSONL import does not make (int32, float32, bytes, LIST, bare
// repeated values, groups, optional values).
type nestedRow struct {
	ID     int64    `parquet:"id"`
	Small  int32    `parquet:"small"`
	Ratio  float32  `parquet:"ratio"`
	Blob   []byte   `parquet:"blob"`
	Words  []string `parquet:"words,list"`
	Counts []int64  `parquet:"counts"`
	Point  struct {
		X float64 `parquet:"x"`
		Y float64 `parquet:"y"`
	} `parquet:"point"`
	Parent *int64 `parquet:"parent,optional"`
}

// columnKind names a top-level Parquet column's kind, from which
// check_export.py derives the pandas dtype it expects.
func columnKind(f parquet.Field) string {
	var lt format.LogicalTypeValue
	if l := f.Type().LogicalType(); l != nil {
		lt = l.Value
	}
	_, isList := lt.(*format.ListType)
	switch {
	case f.Repeated(), isList:
		return "list"
	case !f.Leaf():
		return "struct"
	}
	switch f.Type().Kind() {
	case parquet.Boolean:
		return "bool"
	case parquet.Int32:
		return "int32"
	case parquet.Int64:
		return "int64"
	case parquet.Float:
		return "float32"
	case parquet.Double:
		return "float64"
	case parquet.ByteArray:
		switch lt.(type) {
		case *format.StringType:
			return "string"
		case *format.JsonType:
			return "json"
		}
		return "bytes"
	}
	return "unknown " + f.Type().String()
}

type exportedFile struct {
	File    string                    `json:"file"`
	Rows    int64                     `json:"rows"`
	Columns map[string]map[string]any `json:"columns"`
}

// expectedExport is what check_export.py is told to find: the rows lacuna
// reports per view and file, and each file's column kinds from its schema.
func expectedExport(t *testing.T, dir, exportJSON string) (map[string]any, map[string]bool) {
	t.Helper()
	var rep struct {
		Files []struct {
			File string
			Rows int64
		}
	}
	if err := json.Unmarshal([]byte(exportJSON), &rep); err != nil {
		t.Fatalf("export --json: %v\n%s", err, exportJSON)
	}
	views := map[string]int64{}
	kinds := map[string]bool{}
	var files []exportedFile
	for _, f := range rep.Files {
		views[strings.Split(filepath.ToSlash(f.File), "/")[0]] += f.Rows
		fh, err := os.Open(filepath.Join(dir, f.File))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := fh.Stat()
		pf, err := parquet.OpenFile(fh, st.Size())
		if err != nil {
			t.Fatalf("%s: %v", f.File, err)
		}
		cols := map[string]map[string]any{}
		for _, c := range pf.Schema().Fields() {
			k := columnKind(c)
			kinds[k] = true
			cols[c.Name()] = map[string]any{"kind": k, "optional": c.Optional()}
		}
		fh.Close()
		files = append(files, exportedFile{f.File, f.Rows, cols})
	}
	if len(files) == 0 {
		t.Fatal("nothing exported")
	}
	return map[string]any{"dir": dir, "views": views, "files": files}, kinds
}

// TestExportReadsInDuckDBAndPandas exports pipelines covering every column
// kind and has real DuckDB run views.sql and read every file, and real
// pandas (pyarrow) read every file with the dtypes its schema calls for.
// `make test` provides the Python (LACUNA_TEST_PYTHON); in CI it is
// required.
func TestExportReadsInDuckDBAndPandas(t *testing.T) {
	python := os.Getenv("LACUNA_TEST_PYTHON")
	if python == "" {
		msg := "LACUNA_TEST_PYTHON is not set: run `make test`, which builds .cache/venv from testdata/requirements.txt (duckdb, pandas, pyarrow)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	script, err := filepath.Abs("testdata/check_export.py")
	if err != nil {
		t.Fatal(err)
	}
	toolsense, err := filepath.Abs("../../pipelines/examples/toolsense_data.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) string // returns the pipeline path
		kinds []string                  // column kinds the export must cover
		files int                       // node instances, each its own file
	}{
		{"every column kind", func(t *testing.T) string {
			dir := t.TempDir()
			for _, f := range []string{"pipeline.hcl", "scalars.jsonl"} {
				b, err := os.ReadFile(filepath.Join("testdata/export", f))
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(dir, f), b, 0o644)
			}
			one := int64(1)
			rows := []nestedRow{{ID: 1, Small: -2, Ratio: 0.25, Blob: []byte{0, 1}, Words: []string{"x", "y"}, Counts: []int64{3}, Parent: &one}, {ID: 2}}
			rows[1].Point.X = 1.5
			if err := parquet.WriteFile(filepath.Join(dir, "nested.parquet"), rows); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dir, "pipeline.hcl")
		}, []string{"int32", "int64", "float32", "float64", "bool", "string", "json", "bytes", "list", "struct"}, 6},
		{"ToolSense", func(t *testing.T) string {
			if _, err := os.Stat("../../../shared/data/toolsense"); err != nil {
				msg := "ToolSense data is not at ../shared/data/toolsense beside the repository: " + err.Error()
				if os.Getenv("CI") == "true" {
					t.Fatal(msg)
				}
				t.Skip(msg)
			}
			return toolsense
		}, []string{"string", "json"}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pipeline := tc.setup(t)
			work := t.TempDir()
			store := filepath.Join(work, "store")
			if r := lacuna(t, work, "run", pipeline, "--store", store); r.code != 0 {
				t.Fatalf("run: %s%s", r.stdout, r.stderr)
			}
			out := filepath.Join(work, "export")
			r := lacuna(t, work, "export", pipeline, "--store", store, "--to", out, "--json")
			if r.code != 0 {
				t.Fatalf("export: %s%s", r.stdout, r.stderr)
			}
			want, kinds := expectedExport(t, out, r.stdout)
			for _, k := range tc.kinds {
				if !kinds[k] {
					t.Errorf("the export has no %s column", k)
				}
			}
			in, _ := json.Marshal(want)
			cmd := exec.Command(python, script)
			cmd.Stdin = bytes.NewReader(in)
			b, err := cmd.CombinedOutput()
			if err != nil || !strings.HasPrefix(string(b), "checked ") {
				t.Fatalf("check_export.py: %v\n%s", err, b)
			}
			t.Log(strings.TrimSpace(string(b)))
			names := map[string]bool{}
			for _, f := range want["files"].([]exportedFile) {
				names[f.File] = true
			}
			if len(names) != tc.files {
				t.Errorf("%d distinct files exported, want one for each of %d node instances", len(names), tc.files)
			}
		})
	}
}

// TestExportReplacesItsPreviousOutput: an export into a previous export
// leaves exactly its own files (a stale file, which views.sql's globs
// would read, is gone); a directory holding other files is refused,
// untouched, unless --force; one holding the store never.
func TestExportReplacesItsPreviousOutput(t *testing.T) {
	dir := benchDAG(t, 2)
	lacuna(t, dir, "run", "pipeline.hcl")
	out := filepath.Join(dir, "export")
	files := func() []string {
		var got []string
		filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(out, p)
				got = append(got, rel)
			}
			return nil
		})
		return got
	}
	want := "concat/all.parquet import/data.parquet lacuna-export.json sample/s0.parquet sample/s1.parquet views.sql"
	for _, tc := range []struct {
		name  string
		setup func()
		args  []string
		code  int
		want  string // the files after, space-separated
	}{
		{"into a new directory", func() {}, nil, 0, want},
		{"over a previous export with a stale file", func() {
			os.WriteFile(filepath.Join(out, "sample", "s9.parquet"), []byte("stale"), 0o644)
		}, nil, 0, want},
		{"over a previous export by an older lacuna (no manifest)", func() {
			os.Remove(filepath.Join(out, "lacuna-export.json"))
			os.WriteFile(filepath.Join(out, "sample", "s9.parquet"), []byte("stale"), 0o644)
		}, nil, 0, want},
		{"into a directory of other files", func() {
			os.RemoveAll(out)
			os.MkdirAll(out, 0o755)
			os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine"), 0o644)
		}, nil, 1, "notes.txt"},
		{"into a directory of other files, forced", func() {}, []string{"--force"}, 0, want},
		{"into an empty directory", func() {
			os.RemoveAll(out)
			os.MkdirAll(out, 0o755)
		}, nil, 0, want},
	} {
		tc.setup()
		r := lacuna(t, dir, append([]string{"export", "pipeline.hcl", "--to", out}, tc.args...)...)
		if r.code != tc.code {
			t.Errorf("%s: exit %d, want %d: %s", tc.name, r.code, tc.code, r.stderr)
		}
		if got := strings.Join(files(), " "); got != tc.want {
			t.Errorf("%s: files %s, want %s", tc.name, got, tc.want)
		}
	}
	var m struct {
		Export int `json:"lacuna_export"`
		Files  []struct{ Node, File string }
	}
	b, _ := os.ReadFile(filepath.Join(out, "lacuna-export.json"))
	if err := json.Unmarshal(b, &m); err != nil || m.Export != 1 || len(m.Files) != 4 {
		t.Errorf("manifest %s (%v)", b, err)
	}
	r := lacuna(t, dir, "export", "pipeline.hcl", "--to", "x/..", "--force")
	if r.code != 1 || !strings.Contains(r.stderr, "holds the store") {
		t.Errorf("export over the pipeline's directory: %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "pipeline.hcl")); err != nil {
		t.Fatal("export removed the pipeline")
	}
	os.WriteFile(filepath.Join(dir, "a-file"), []byte("x"), 0o644)
	if r := lacuna(t, dir, "export", "pipeline.hcl", "--to", filepath.Join(dir, "a-file")); r.code == 0 {
		t.Error("export over a file succeeded")
	}
}

// TestLongValuesReadInDuckDBAndPandas imports records whose values are
// megabytes long (their pages are compressed in place as runs of zstd
// frames: artifacts/STORE.md), exports them, and has real DuckDB and real
// pandas read every value back: each value's SHA-256 must be the one of
// the text imported.
func TestLongValuesReadInDuckDBAndPandas(t *testing.T) {
	python := os.Getenv("LACUNA_TEST_PYTHON")
	if python == "" {
		msg := "LACUNA_TEST_PYTHON is not set: run `make test`, which builds .cache/venv"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	long := func(n int, alphabet string) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	texts := []string{"short", long(5<<20+11, "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ0123456789"), long(3<<20, "ab"), "end"}
	var jsonl bytes.Buffer
	var want []string
	for i, s := range texts {
		line, _ := json.Marshal(map[string]any{"id": i, "text": s})
		jsonl.Write(append(line, '\n'))
		want = append(want, fmt.Sprintf("%x", sha256.Sum256([]byte(s))))
	}
	os.WriteFile(filepath.Join(dir, "long.jsonl"), jsonl.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "p.hcl"), []byte(`node "import" "long" { path = "long.jsonl" }`+"\n"), 0o644)
	if r := lacuna(t, dir, "run", "p.hcl"); r.code != 0 {
		t.Fatalf("run: %s%s", r.stdout, r.stderr)
	}
	if r := lacuna(t, dir, "export", "p.hcl", "--to", "out"); r.code != 0 {
		t.Fatalf("export: %s%s", r.stdout, r.stderr)
	}
	const script = `
import duckdb, hashlib, json, sys
import pandas as pd
f = sys.argv[1]
con = duckdb.connect()
d = [hashlib.sha256(r[0].encode()).hexdigest() for r in con.execute("select text from read_parquet(?) order by id", [f]).fetchall()]
p = [hashlib.sha256(s.encode()).hexdigest() for s in pd.read_parquet(f).sort_values("id")["text"]]
print(json.dumps({"duckdb": d, "pandas": p}))
`
	out, err := exec.Command(python, "-c", script, filepath.Join(dir, "out", "import", "long.parquet")).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	var got map[string][]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python printed %s", out)
	}
	for _, reader := range []string{"duckdb", "pandas"} {
		if !slices.Equal(got[reader], want) {
			t.Errorf("%s read values whose SHA-256 are %v, want %v", reader, got[reader], want)
		}
	}
}
