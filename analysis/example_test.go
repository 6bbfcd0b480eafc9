package analysis_test

import (
	"fmt"

	"github.com/lacuna-dev/lacuna/analysis"
)

// pass@k of a task with 20 samples of which 3 passed, and its pass@k
// where k exceeds the samples (undefined, not 0).
func ExamplePassAtK() {
	for _, k := range []int{1, 5, 25} {
		v, ok := analysis.PassAtK(20, 3, k)
		fmt.Printf("pass@%d = %.4f (%v)\n", k, v, ok)
	}
	// Output:
	// pass@1 = 0.1500 (true)
	// pass@5 = 0.6009 (true)
	// pass@25 = 0.0000 (false)
}

// A 95% interval for the mean of per-task pass@1 values, resampling tasks.
func ExampleBootstrap() {
	perTask := []float64{0, 0.25, 1, 0.5, 0, 1, 0.75, 0.2, 0.1, 0.9}
	ci, _ := analysis.Bootstrap(perTask, 1000, 0.95, 1, analysis.StreamOf("qwen|S+E"))
	again, _ := analysis.Bootstrap(perTask, 1000, 0.95, 1, analysis.StreamOf("qwen|S+E"))
	fmt.Println(ci == again, ci.Lo < analysis.Mean(perTask), analysis.Mean(perTask) < ci.Hi)
	// Output: true true true
}
