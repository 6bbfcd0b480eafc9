package pyharness

import (
	"testing"
)

// BenchmarkRunAll measures harness throughput: samples (each a sandboxed
// process running the real and the mock pass) per second, two at a time.
func BenchmarkRunAll(b *testing.B) {
	f := newFixture(b, 2)
	task := fixtureTask()
	samples := make([]Sample, 8)
	for i := range samples {
		samples[i] = Sample{Task: task, Solution: task.Reference}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.runner.RunAll(b.Context(), samples); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(samples))/b.Elapsed().Seconds(), "samples/s")
}
