package generic

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/parquet-go/parquet-go"
)

// memChildEnv makes the test binary, run again by
// TestImportMemoryIsBoundedByTheLargestRecord, the process that imports:
// its peak RSS is then the import's alone, not that of the tests before.
const memChildEnv = "LACUNA_TEST_IMPORT_MEMORY_CHILD"

// recordMiB is the size of the large record: big enough that the
// process's own few tens of MiB do not hide a factor, small enough to
// stay well under 30 s on a loaded machine.
const recordMiB = 64

// bigRecords write the large record's line in each shape: a long string (a
// string column), and a long nested value (a JSON column, kept as its
// text).
var bigRecords = map[string]func(w io.Writer, n int){
	"string": func(w io.Writer, n int) {
		io.WriteString(w, `{"id": 2, "text": "`)
		writeFill(w, n)
		io.WriteString(w, "\"}\n")
	},
	"json": func(w io.Writer, n int) {
		io.WriteString(w, `{"id": 2, "text": {"parts": ["`)
		for written := 0; written < n; written += 1 << 20 {
			if written > 0 {
				io.WriteString(w, `", "`)
			}
			writeFill(w, min(1<<20, n-written))
		}
		io.WriteString(w, "\"]}}\n")
	},
}

// writeFill writes n bytes of text that compresses poorly (as real text
// in a large record does, more or less), without escapes.
func writeFill(w io.Writer, n int) {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:-_"
	buf := make([]byte, 0, 64<<10)
	x := uint64(0x9E3779B97F4A7C15)
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		buf = append(buf, alphabet[x%uint64(len(alphabet))])
		if len(buf) == cap(buf) {
			w.Write(buf)
			buf = buf[:0]
		}
	}
	w.Write(buf)
}

const small = `{"id": 1, "text": "small"}` + "\n"

// maxImportGrowth bounds the whole import's peak RSS growth, in records
// (measured 2.1-2.2×: reading the record is most of it), and
// maxWriterGrowth the store's writer's alone (measured 1.1-1.2×).
const (
	maxImportGrowth = 3
	maxWriterGrowth = 1.5
)

// TestImportMemoryIsBoundedByTheLargestRecord measures, each in a process
// of its own, the peak RSS growth of reading a JSONL file whose one large
// record is recordMiB MiB (between small ones) as the import does (both
// passes), of importing it, and of writing the same rows straight to the
// store. Reading and the whole import must stay within maxImportGrowth×
// the record, the writer within maxWriterGrowth×: it writes a long row
// from the row's value in place (artifacts.longRows), where parquet-go
// alone holds the value, its column buffer's copy and the encoded page at
// once (3.1× measured), and a byte-array column's minimum and maximum,
// which would be whole copies of the value in the page header and the
// footer, are not written (10-11× with them).
func TestImportMemoryIsBoundedByTheLargestRecord(t *testing.T) {
	if mode := os.Getenv(memChildEnv); mode != "" {
		memoryChild(t, mode)
		return
	}
	if testing.Short() {
		t.Skip("imports a large file in subprocesses")
	}
	for _, shape := range []string{"string", "json"} {
		t.Run(shape, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "big.jsonl")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			w := bufio.NewWriterSize(f, 1<<20)
			w.WriteString(small)
			bigRecords[shape](w, recordMiB<<20)
			w.WriteString(strings.Replace(small, "1", "3", 1))
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			st, _ := os.Stat(path)
			record := float64(st.Size() - 2*int64(len(small)))
			read := childGrowth(t, "read:"+dir) / record
			imp := childGrowth(t, "import:"+dir) / record
			writer := childGrowth(t, "write:"+shape+":"+t.TempDir()) / record
			t.Logf("%s record of %.1f MiB, peak RSS growth: reading it (both passes) %.2f× the record, the whole import %.2f×, the store's writer alone writing the same rows %.2f×",
				shape, record/(1<<20), read, imp, writer)
			if read > maxImportGrowth {
				t.Errorf("reading the file grew peak RSS by %.2f× its largest record, want at most %v×", read, maxImportGrowth)
			}
			if imp > maxImportGrowth {
				t.Errorf("the import grew peak RSS by %.2f× its largest record, want at most %v×", imp, maxImportGrowth)
			}
			if writer > maxWriterGrowth {
				t.Errorf("the store's writer grew peak RSS by %.2f× the record, want at most %v×", writer, maxWriterGrowth)
			}
		})
	}
}

// childGrowth runs the test binary again as a memory child (memoryChild)
// and returns how much its peak RSS grew during the work, in bytes.
func childGrowth(t *testing.T, mode string) float64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestImportMemoryIsBoundedByTheLargestRecord$", "-test.v")
	cmd.Env = append(os.Environ(), memChildEnv+"="+mode)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %s: %v\n%s", mode, err, out)
	}
	return float64(memLine(t, out, "PEAK") - memLine(t, out, "BASE"))
}

// memoryChild does the work of one child and prints the process's
// resident high-water mark before and after: "import:DIR" imports
// DIR/big.jsonl; "write:SHAPE:DIR" writes the rows that import makes of a
// SHAPE record straight to a store in DIR, building the large value in
// memory once.
func memoryChild(t *testing.T, mode string) {
	kind, arg, _ := strings.Cut(mode, ":")
	fmt.Printf("BASE %d\n", vmHWM(t))
	switch kind {
	case "read":
		// Both of the import's passes over the file, as Run makes them,
		// without the writer.
		kept := 0
		for _, kinds := range []bool{true, false} {
			if _, err := eachRecord(context.Background(), filepath.Join(arg, "big.jsonl"), "big.jsonl", "jsonl", kinds, nil, func(rec map[string]any, _ int) error {
				kept += len(rec)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		if kept != 12 {
			t.Fatalf("read %d values, want 12", kept)
		}
	case "import":
		res := nodetest.Run(t, arg, `node "import" "big" { path = "big.jsonl" }`)
		if rows := res.Nodes["node.import.big"].Output.Rows; rows != 3 {
			t.Fatalf("imported %d rows, want 3", rows)
		}
	case "write":
		shape, dir, _ := strings.Cut(arg, ":")
		st, err := artifacts.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		// The value as the import hands it to the writer: a string, or
		// a JSON column's compact text.
		text := parquet.Optional(parquet.String())
		var big any
		if shape == "json" {
			text = parquet.Optional(parquet.JSON())
			var b bytes.Buffer
			b.Grow(recordMiB<<20 + recordMiB*4 + 64)
			io.WriteString(&b, `{"parts":["`)
			for written := 0; written < recordMiB<<20; written += 1 << 20 {
				if written > 0 {
					io.WriteString(&b, `","`)
				}
				writeFill(&b, min(1<<20, recordMiB<<20-written))
			}
			io.WriteString(&b, `"]}`)
			big = b.Bytes()
		} else {
			var b strings.Builder
			b.Grow(recordMiB << 20)
			writeFill(&b, recordMiB<<20)
			big = b.String()
		}
		w, err := st.NewWriter(parquet.NewSchema("row", parquet.Group{"id": parquet.Optional(parquet.Int(64)), "text": text}), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range []any{"small", big, "small"} {
			if err := w.Write(map[string]any{"id": int64(i + 1), "text": v}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("unknown memory child %q", mode)
	}
	fmt.Printf("PEAK %d\n", vmHWM(t))
}

// vmHWM is the process's peak resident set size in bytes (Linux).
func vmHWM(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status:", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmHWM in /proc/self/status")
	return 0
}

func memLine(t *testing.T, out []byte, tag string) int64 {
	t.Helper()
	for _, line := range bytes.Split(out, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(tag+" ")); ok {
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("child printed no %s line:\n%s", tag, out)
	return 0
}
