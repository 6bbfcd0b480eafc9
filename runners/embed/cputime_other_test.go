//go:build !unix

package embed

// cpuSeconds is 0 where getrusage is missing: benchmarks then report no
// CPU-time rates.
func cpuSeconds() float64 { return 0 }
