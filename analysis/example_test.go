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

// A 95% interval for the mean of per-task values in [0, 1]. When all ten
// tasks pass, the percentile bootstrap collapses to [1, 1]; MeanCI gives
// Wilson's interval for 10 of 10.
func ExampleMeanCI() {
	perTask := []float64{0, 0.25, 1, 0.5, 0, 1, 0.75, 0.2, 0.1, 0.9}
	ci, ok := analysis.MeanCI(perTask, 0.95)
	fmt.Printf("mean %.3f in [%.3f, %.3f] (%v)\n", analysis.Mean(perTask), ci.Lo, ci.Hi, ok)

	allPass := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	boot, _ := analysis.Bootstrap(allPass, 1000, 0.95, 1, analysis.StreamOf("qwen|S+E"))
	ci, _ = analysis.MeanCI(allPass, 0.95)
	fmt.Printf("all pass: bootstrap [%.3f, %.3f], MeanCI [%.3f, %.3f]\n", boot.Lo, boot.Hi, ci.Lo, ci.Hi)

	_, ok = analysis.MeanCI([]float64{0.5, 1.2}, 0.95)
	fmt.Println("a value above 1:", ok)
	// Output:
	// mean 0.470 in [0.240, 0.713] (true)
	// all pass: bootstrap [1.000, 1.000], MeanCI [0.722, 1.000]
	// a value above 1: false
}
