package artifacts

import (
	"fmt"
	"testing"
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
