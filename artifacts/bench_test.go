package artifacts

import (
	"fmt"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// BenchmarkOpenSmallObject is the read of one small artifact (a benchmark
// sample node's output), uncached: a concat of N inputs pays it N times.
func BenchmarkOpenSmallObject(b *testing.B) {
	s, _ := Open(b.TempDir(), WithCacheBytes(0))
	var rows []toolRow
	for i := 0; i < 5; i++ {
		rows = append(rows, toolRow{Name: fmt.Sprintf("tool %d", i), Score: float64(i), Tags: []string{"a", "b"}})
	}
	w, _ := s.NewWriter(SchemaOf[toolRow](), map[string]string{MetaNode: "node.sample.s"})
	for _, r := range rows {
		w.Write(r)
	}
	obj, _ := w.Commit()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Open(obj); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteSmallObject is the write of one small artifact by an
// action, as the engine does it (the writers log included).
func BenchmarkWriteSmallObject(b *testing.B) {
	s, _ := Open(b.TempDir())
	row := toolRow{Name: "tool", Score: 1, Tags: []string{"a"}}
	meta := map[string]string{MetaNode: "node.sample.s", MetaActionKey: "0123456789abcdef"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w, _ := s.NewWriter(SchemaOf[toolRow](), meta)
		row.Score = float64(i)
		w.Write(row)
		if _, err := w.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeSnapshot decodes the snapshot of a 100,000-node sweep
// (what every no-op run of it reads first).
func BenchmarkDecodeSnapshot(b *testing.B) {
	snap := &Snapshot{Pipeline: "pipeline.hcl", Generation: 1, Nodes: map[string]SnapshotNode{}}
	for i := range 100_000 {
		d := digestOf(uint64(i))
		snap.Nodes[fmt.Sprintf("node.sample.s[%q]", fmt.Sprint(i))] = SnapshotNode{Key: d, Output: Object{Digest: d, FileSum: d, Size: 1115, Rows: 5, Writer: d}}
	}
	data := string(encodeSnapshot(snap))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeSnapshot(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteLongRow writes an artifact of three rows, the middle one
// holding a 64 MiB string: "store" as the Writer does (a long row, written
// from the value in place), "parquet-go" with parquet-go writing every
// row itself, the row group flushed around the long row (the same bytes).
func BenchmarkWriteLongRow(b *testing.B) {
	s, _ := Open(b.TempDir())
	schema := parquet.NewSchema("row", parquet.Group{"id": parquet.Int(64), "text": parquet.Optional(parquet.String())})
	var rows []parquet.Row
	for i, text := range []string{"short", longText(64 << 20), "short"} {
		rows = append(rows, schema.Deconstruct(nil, map[string]any{"id": int64(i), "text": text}))
	}
	n := int64(0) // -count runs a sub-benchmark again on the same store
	for _, peer := range []string{"store", "parquet-go"} {
		b.Run(peer, func(b *testing.B) {
			b.SetBytes(64 << 20)
			for b.Loop() {
				// A new first row each time: a new object, not a commit of
				// an existing one (which reads it back).
				n++
				rows[0] = schema.Deconstruct(rows[0][:0], map[string]any{"id": n, "text": peer})
				writeLongRows(b, s, schema, nil, rows, peer == "parquet-go")
			}
		})
	}
}
