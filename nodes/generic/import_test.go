package generic_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
)

// importAll imports each file (absolute paths) as its own node of one
// pipeline, with extra attributes by base name, and returns the outcome;
// nodeName(i) is the node of files[i].
func importAll(t *testing.T, files []string, extra map[string]string) outcome {
	t.Helper()
	var src strings.Builder
	for i, f := range files {
		src.WriteString("node \"import\" \"n" + string(rune('a'+i/26)) + string(rune('a'+i%26)) + "\" {\n  path = \"" + f + "\"\n")
		src.WriteString(extra[filepath.Base(f)] + "\n")
		src.WriteString("}\n")
	}
	return run(t, t.TempDir(), src.String())
}

func nodeName(i int) string {
	return "node.import.n" + string(rune('a'+i/26)) + string(rune('a'+i%26))
}

// Import keeps the data exactly or refuses it with file:line (and column
// where it helps): nothing is changed silently.
func TestImportRefusesWhatItWouldChange(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs("testdata/import")
	cases := []struct{ file, want string }{
		{"dup_column.csv", `dup_column.csv:1:3: duplicate column "a" (columns 1 and 2)`},
		{"dup_key.jsonl", `dup_key.jsonl:2:18: duplicate key "a"`},
		{"dup_nested_key.jsonl", `dup_nested_key.jsonl:1:16: duplicate key "k"`},
		{"dup_escaped_key.jsonl", `dup_escaped_key.jsonl:1:17: duplicate key "a"`},
		{"big_int.jsonl", `big_int.jsonl:2: column "n": 123456789012345678901234567890`},
		{"int_in_double.jsonl", `int_in_double.jsonl:2: column "n": 9007199254740993`},
		{"inexact_float.jsonl", `inexact_float.jsonl:1: column "n": 0.30000000000000000001`},
		{"huge_exponent.jsonl", `huge_exponent.jsonl:1: column "n": 1e400`},
		{"big_int.csv", `big_int.csv:3: column "n": 123456789012345678901234567890`},
		{"invalid_utf8.jsonl", `invalid_utf8.jsonl:2:11: invalid UTF-8`},
		{"invalid_utf8_key.jsonl", `invalid_utf8_key.jsonl:1:6: invalid UTF-8`},
		{"invalid_utf8_nested.jsonl", `invalid_utf8_nested.jsonl:1:12: invalid UTF-8`},
		{"invalid_utf8.csv", `invalid_utf8.csv:3:1: invalid UTF-8`},
		{"invalid_utf8_header.csv", `invalid_utf8_header.csv:1:1: invalid UTF-8`},
		{"lone_surrogate.jsonl", `lone_surrogate.jsonl:1:8: escaped lone UTF-16 surrogate`},
		{"not_object.jsonl", `not_object.jsonl:2: not a JSON object`},
		{"array_of_numbers.json", `array_of_numbers.json:1: not a JSON object`},
		{"unclosed_array.json", `unclosed_array.json:3:1: unexpected end of file in the top-level array`},
		{"after_array.json", `after_array.json:2:1: data after the top-level array`},
		{"bad_number.jsonl", `bad_number.jsonl:1:7: "007" is not a JSON value`},
		{fifo, "pipe.jsonl is a named pipe (FIFO); only regular files can be read"},
		{"/dev/zero", "/dev/zero is a device"},
		{".", "is a directory"},
	}
	var files []string
	for _, c := range cases {
		f := c.file
		if !filepath.IsAbs(f) {
			f = filepath.Join(dir, f)
		}
		files = append(files, f)
	}
	files[len(files)-1] = filepath.Join(t.TempDir(), "dir.jsonl") // a directory with an extension import accepts
	if err := os.Symlink(dir, files[len(files)-1]); err != nil {
		t.Fatal(err)
	}
	o := importAll(t, files, map[string]string{"zero": `format = "jsonl"`})
	for i, c := range cases {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			r := o.results[nodeName(i)]
			if r == nil || r.State != "failed" || r.Err == nil || !strings.Contains(r.Err.Error(), c.want) {
				t.Fatalf("want failure %q, got %+v", c.want, r)
			}
		})
	}
}

func TestImportKeepsDataExactly(t *testing.T) {
	dir, _ := filepath.Abs("testdata/import")
	files := []string{"bom.csv", "bom.jsonl", "array.json", "exact.jsonl", "text_cells.csv", "big_int.jsonl"}
	for i := range files {
		files[i] = filepath.Join(dir, files[i])
	}
	o := importAll(t, files, map[string]string{
		"big_int.jsonl": `columns = { n = "string" }`,
		"exact.jsonl":   `columns = { i = "int64", f = "double", big = "string", nested = "json", mixed = "json" }`,
	})
	check := func(addr string, want string) {
		t.Helper()
		if got := fmtRows(o.rows(t, addr)); got != want {
			t.Errorf("%s:\n got %s\nwant %s", addr, got, want)
		}
	}
	check(nodeName(0), `[map[a:1 b:x]]`)
	check(nodeName(1), `[map[a:1 b:x]]`)
	check(nodeName(2), `[map[a:1 b:x] map[a:2 b:y]]`)
	check(nodeName(3), `[map[big:123456789012345678901234567890 f:0.1 i:9007199254740993 mixed:1 nested:map[a:é😀 b:1.2345678901234568e+29 c:[1.5 true <nil>]]] map[big:1 f:1e+300 i:-9223372036854775808 mixed:one nested:<nil>]]`)
	// A JSON column holds the file's text: key order, escapes and digits
	// (the map above is only how a reader decodes it).
	if got := jsonColumn(t, o, nodeName(3), "nested"); got != `{"b":123456789012345678901234567890,"a":"\u00e9\ud83d\ude00","c":[1.50,true,null]} <nil>` {
		t.Errorf("nested JSON text: %s", got)
	}
	if got := jsonColumn(t, o, nodeName(3), "mixed"); got != `1 "one"` {
		t.Errorf("mixed JSON text: %s", got)
	}
	check(nodeName(4), `[map[n:1 sign:+1 zip:007] map[n:2.5 sign:-1 zip:12345]]`)
	check(nodeName(5), `[map[n:1] map[n:123456789012345678901234567890]]`)
}

func fmtRows(rows []map[string]any) string { return fmt.Sprint(rows) }

// jsonColumn returns the stored text of a column, row by row.
func jsonColumn(t *testing.T, o outcome, addr, name string) string {
	t.Helper()
	rd, err := o.store.Open(o.results[addr].Output)
	if err != nil {
		t.Fatal(err)
	}
	leaf, ok := rd.Schema().Lookup(name)
	if !ok {
		t.Fatalf("no column %s", name)
	}
	var out []string
	for _, row := range rd.Rows() {
		v := row[leaf.ColumnIndex]
		if v.IsNull() {
			out = append(out, "<nil>")
		} else {
			out = append(out, string(v.ByteArray()))
		}
	}
	return strings.Join(out, " ")
}

// BenchmarkImportLargeFile imports generated files of about 32 MB through
// the engine: many small records, and one record on one line (a JSON
// column of 32 MB). peak-rss-MB is the process's peak resident memory, so
// run one case at a time (-bench 'ImportLargeFile/one_line') to read it.
func BenchmarkImportLargeFile(b *testing.B) {
	const size = 32 << 20
	gen := map[string]func(w io.Writer) int64{
		"many_records": func(w io.Writer) (n int64) {
			for i := 0; n < size; i++ {
				k, _ := fmt.Fprintf(w, `{"id": %d, "name": "record %d", "score": %d.5, "tags": ["a", "b"], "meta": {"k": %d}}`+"\n", i, i, i, i)
				n += int64(k)
			}
			return n
		},
		"one_line": func(w io.Writer) (n int64) {
			k, _ := io.WriteString(w, `{"id": 1, "items": [`)
			for n = int64(k); n < size; {
				k, _ = fmt.Fprintf(w, `{"k": "key-%08d", "v": %d, "x": 0.5}, `, n, n)
				n += int64(k)
			}
			k, _ = io.WriteString(w, `{}]}`+"\n")
			return n + int64(k)
		},
	}
	for name, g := range gen {
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			f, err := os.Create(filepath.Join(dir, "big.jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriter(f)
			b.SetBytes(g(w))
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			f.Close()
			src := []byte(`node "import" "big" { path = "big.jsonl" }`)
			for i := 0; b.Loop(); i++ {
				g, diags := engine.ExpandSource(filepath.Join(dir, "p.hcl"), src, dir, engine.Options{})
				if diags.HasErrors() {
					b.Fatal(diags.Error())
				}
				st, err := artifacts.Open(filepath.Join(dir, fmt.Sprintf("store%d", i)))
				if err != nil {
					b.Fatal(err)
				}
				x := &engine.Executor{Store: st, Jobs: 1}
				if _, _, err := x.Run(context.Background(), g, nil); err != nil {
					b.Fatal(err)
				}
				os.RemoveAll(filepath.Join(dir, fmt.Sprintf("store%d", i)))
			}
			var ru syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			b.ReportMetric(float64(ru.Maxrss)/1024, "peak-rss-MB")
		})
	}
}
