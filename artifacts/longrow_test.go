package artifacts

import (
	"bytes"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// longText is n bytes of text that compresses poorly.
func longText(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:-_"
	var b strings.Builder
	b.Grow(n)
	x := uint64(0x9E3779B97F4A7C15)
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b.WriteByte(alphabet[x%uint64(len(alphabet))])
	}
	return b.String()
}

// TestLongRowsAreWrittenAsParquetGoWrites writes rows with long values
// through the Writer, and again with parquet-go writing every row itself
// while flushing the row group before and after each long row: the files
// must be the same bytes, and read back as the rows written.
func TestLongRowsAreWrittenAsParquetGoWrites(t *testing.T) {
	flat := parquet.Group{
		"b":    parquet.Optional(parquet.Leaf(parquet.BooleanType)),
		"i32":  parquet.Optional(parquet.Int(32)),
		"i64":  parquet.Int(64),
		"f32":  parquet.Optional(parquet.Leaf(parquet.FloatType)),
		"f64":  parquet.Optional(parquet.Leaf(parquet.DoubleType)),
		"s":    parquet.Optional(parquet.String()),
		"req":  parquet.String(),
		"j":    parquet.Optional(parquet.JSON()),
		"raw":  parquet.Optional(parquet.Leaf(parquet.ByteArrayType)),
		"uuid": parquet.Optional(parquet.UUID()),
	}
	full := map[string]any{
		"b": true, "i32": int32(-7), "i64": int64(42), "f32": float32(1.5), "f64": 2.25,
		"s": "short", "req": "r", "j": []byte(`{"a":1}`), "raw": []byte{0, 1, 2},
		"uuid": [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
	}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range full {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	long := longText(5000)
	cases := []struct {
		name  string
		at    int // longValueAt for the case
		group parquet.Group
		rows  []map[string]any
	}{
		{"a long string between short rows", 1000, flat, []map[string]any{full, with("s", long), full}},
		{"long values in every byte-array column", 1000, flat, []map[string]any{
			with("s", long, "req", long[:1500], "j", []byte(`"`+long[:3000]+`"`), "raw", []byte(long[10:4000])),
		}},
		{"nulls beside a long value", 1000, flat, []map[string]any{
			{"i64": int64(1), "req": long},
			{"i64": int64(2), "req": "x", "s": nil},
		}},
		{"long rows first, last and one after another", 1000, flat, []map[string]any{
			with("s", long), with("s", long[1:]), full, with("req", long), with("s", nil), with("s", long[2:]),
		}},
		{"a value of exactly the threshold", 5000, flat, []map[string]any{with("s", long[:4999]), with("s", long)}},
		{"plain-encoded bytes", 1000, parquet.Group{
			"id": parquet.Int(64),
			"p":  parquet.Optional(parquet.Encoded(parquet.String(), &parquet.Plain)),
		}, []map[string]any{{"id": int64(1), "p": long}, {"id": int64(2), "p": "x"}}},
		{"a long value over a zstd frame", inPlaceChunk, flat, []map[string]any{
			full, with("s", longText(2*inPlaceChunk+12345)), with("req", longText(inPlaceChunk)), full,
		}},
	}
	// And 300 rows of random nulls and lengths about the threshold.
	rng := rand.New(rand.NewPCG(1, 2))
	var random []map[string]any
	for range 300 {
		m := map[string]any{}
		for k, v := range full {
			if rng.IntN(4) > 0 || k == "i64" || k == "req" {
				m[k] = v
			}
		}
		for _, k := range []string{"s", "req", "j", "raw"} {
			if _, ok := m[k]; ok && rng.IntN(3) == 0 {
				text := long[:rng.IntN(2000)]
				if k == "j" {
					m[k] = []byte(`"` + text + `"`)
				} else {
					m[k] = text
				}
			}
		}
		random = append(random, m)
	}
	cases = append(cases, struct {
		name  string
		at    int
		group parquet.Group
		rows  []map[string]any
	}{"random rows", 1000, flat, random})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func(at int) { longValueAt = at }(longValueAt)
			longValueAt = tc.at
			schema := parquet.NewSchema("row", tc.group)
			var rows []parquet.Row
			for _, m := range tc.rows {
				rows = append(rows, schema.Deconstruct(nil, m))
			}
			meta := map[string]string{MetaNode: "node.test.long"}

			ours, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			theirs, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			got, long := writeLongRows(t, ours, schema, meta, rows, false)
			want, _ := writeLongRows(t, theirs, schema, meta, rows, true)
			if long == 0 {
				t.Fatal("no row of the case is long")
			}

			if got.Digest != want.Digest {
				t.Errorf("content digest %s, parquet-go's %s", got.Digest, want.Digest)
			}
			gotBytes, _ := os.ReadFile(ours.ObjectPath(got.Digest))
			wantBytes, _ := os.ReadFile(theirs.ObjectPath(want.Digest))
			if !bytes.Equal(gotBytes, wantBytes) {
				t.Errorf("the file differs from parquet-go's: %d bytes, parquet-go's %d; first difference at byte %d", len(gotBytes), len(wantBytes), firstDiff(gotBytes, wantBytes))
			}
			r, err := ours.Open(got)
			if err != nil {
				t.Fatal(err)
			}
			back := r.Rows()
			if len(back) != len(rows) {
				t.Fatalf("read %d rows, wrote %d", len(back), len(rows))
			}
			for i := range rows {
				if !back[i].Equal(rows[i]) {
					t.Errorf("row %d read back differs", i)
				}
			}
		})
	}
}

// writeLongRows writes rows to a new artifact in s, one WriteRows call
// each, and returns it with the number of long rows among them.
// byParquetGo has parquet-go write every row itself, the row group flushed
// before and after each long row: the file the Writer's must equal.
func writeLongRows(tb testing.TB, s *Store, schema *parquet.Schema, meta map[string]string, rows []parquet.Row, byParquetGo bool) (Object, int) {
	tb.Helper()
	w, err := s.NewWriter(schema, meta)
	if err != nil {
		tb.Fatal(err)
	}
	detect := w.long
	if detect == nil {
		tb.Fatal("the schema takes no long rows")
	}
	if byParquetGo {
		w.long = nil
	}
	flush := func() {
		if err := w.w.Flush(); err != nil {
			tb.Fatal(err)
		}
	}
	long := 0
	for _, r := range rows {
		isLong := detect.isLong(r)
		if isLong {
			long++
			if byParquetGo {
				flush()
			}
		}
		if err := w.WriteRows([]parquet.Row{r}); err != nil {
			tb.Fatal(err)
		}
		if isLong && byParquetGo {
			flush()
		}
	}
	obj, err := w.Commit()
	if err != nil {
		tb.Fatal(err)
	}
	return obj, long
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestALongRowIsNeverCopiedWhole writes a row with a 32 MiB value and
// counts the bytes the write allocates: a small part of the value (a few
// MiB of buffers). parquet-go writing the row itself (or re-encoding the
// long row's row group instead of copying it) allocates several times the
// value.
func TestALongRowIsNeverCopiedWhole(t *testing.T) {
	const size = 32 << 20
	schema := parquet.NewSchema("row", parquet.Group{"id": parquet.Int(64), "text": parquet.Optional(parquet.String())})
	row := schema.Deconstruct(nil, map[string]any{"id": int64(1), "text": longText(size)})
	for _, ours := range []bool{true, false} {
		// A store each: committing an object that exists reads it back.
		s, err := Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		writeLongRows(t, s, schema, nil, []parquet.Row{row}, !ours)
		runtime.ReadMemStats(&after)
		allocated := float64(after.TotalAlloc-before.TotalAlloc) / size
		t.Logf("long rows written by the store: %v; allocated %.2f× the value", ours, allocated)
		if ours && allocated > 0.5 {
			t.Errorf("writing a long row allocated %.2f× its value, want at most 0.5×", allocated)
		}
		if !ours && allocated < 1 {
			t.Errorf("parquet-go writing the row allocated %.2f× its value: the test no longer measures a copy", allocated)
		}
	}
}

// TestLongRowsPastTheRowGroupLimit: past maxLongRows long rows, the rest
// of an artifact's rows are parquet-go's, in the row group they fill.
func TestLongRowsPastTheRowGroupLimit(t *testing.T) {
	defer func(at, most int) { longValueAt, maxLongRows = at, most }(longValueAt, maxLongRows)
	longValueAt, maxLongRows = 100, 3
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	schema := parquet.NewSchema("row", parquet.Group{"id": parquet.Int(64), "text": parquet.Optional(parquet.String())})
	w, err := s.NewWriter(schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rows []parquet.Row
	for i := range 6 {
		rows = append(rows, schema.Deconstruct(nil, map[string]any{"id": int64(i), "text": longText(200 + i)}))
	}
	// Two calls, the limit reached within the first.
	if err := w.WriteRows(rows[:4]); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRows(rows[4:]); err != nil {
		t.Fatal(err)
	}
	obj, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(s.ObjectPath(obj.Digest))
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int64
	for _, g := range f.RowGroups() {
		sizes = append(sizes, g.NumRows())
	}
	if want := []int64{1, 1, 1, 3}; !slices.Equal(sizes, want) {
		t.Errorf("row groups of %v rows, want %v", sizes, want)
	}
	r, err := s.Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range r.Rows() {
		if !row.Equal(rows[i]) {
			t.Errorf("row %d read back differs", i)
		}
	}
}
