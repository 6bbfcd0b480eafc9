package bm25_test

import (
	"testing"

	"github.com/lacuna-dev/lacuna/runners/bm25"
)

// The benchmarks use the released ToolSense corpus (see released); they skip
// when it is absent. bench/bm25.sh compares the same work with rank_bm25.

func BenchmarkNewReleasedCatalog(b *testing.B) {
	r := loadReleased(b)
	b.ReportAllocs()
	for b.Loop() {
		bm25.New(r.docs, bm25.Options{})
	}
}

func BenchmarkScoresReleasedQueries(b *testing.B) {
	r := loadReleased(b)
	ix := bm25.New(r.docs, bm25.Options{})
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		ix.Scores(r.queries[n%len(r.queries)])
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "queries/s")
}

func BenchmarkTop50ReleasedQueries(b *testing.B) {
	r := loadReleased(b)
	ix := bm25.New(r.docs, bm25.Options{})
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		ix.Top(r.queries[n%len(r.queries)], 50)
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "queries/s")
}
