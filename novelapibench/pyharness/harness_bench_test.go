package pyharness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// benchSamples are the fixture's task with the reference in place, each
// on inputs of its own (as a node's batch of distinct tasks).
func benchSamples(n int) []Sample {
	samples := make([]Sample, n)
	for i := range samples {
		task := fixtureTask()
		task.Inputs = []string{fmt.Sprintf("(DATA, %d)", i+2), fmt.Sprintf("([4, 5, %d], 3)", i)}
		samples[i] = Sample{Task: task, Solution: task.Reference}
	}
	return samples
}

// BenchmarkRunAll measures harness throughput: samples (each a sandboxed
// process running the real and the mock pass, with the spy) per second,
// two at a time as the tasks and c1 nodes run them.
func BenchmarkRunAll(b *testing.B) {
	f := newFixture(b, 2)
	samples := benchSamples(8)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runs, err := f.runner.RunAll(b.Context(), samples)
		if err != nil {
			b.Fatal(err)
		}
		for j, r := range runs {
			if r.Record == nil || r.Record.Stage != "ran" {
				b.Fatalf("sample %d did not run: %s %s", j, r.Problem, r.Output)
			}
		}
	}
	b.ReportMetric(float64(b.N*len(samples))/b.Elapsed().Seconds(), "tasks/s")
}

// BenchmarkPlainPython is BenchmarkRunAll's peer: the same task programs
// (prelude, the reference as solve, a loop calling it on each input and
// printing the result), each run by a plain python process, two at a
// time: no sandbox, no spy, no driver, one pass.
func BenchmarkPlainPython(b *testing.B) {
	f := newFixture(b, 2)
	py := python(b)
	dir := b.TempDir()
	var progs []string
	for i, s := range benchSamples(8) {
		src, _, _ := s.Task.ReferenceProgram()
		src += "\nfor _args in [" + strings.Join(s.Task.Inputs, ", ") + "]:\n    print(repr(solve(*_args)))\n"
		p := filepath.Join(dir, fmt.Sprintf("program%d.py", i))
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
		progs = append(progs, p)
	}
	run := func(ctx context.Context, prog string) error {
		cmd := exec.CommandContext(ctx, py, prog)
		cmd.Env = []string{"PYTHONPATH=" + f.pkg, "PATH=/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w: %s", prog, err, out)
		}
		return nil
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		errs := make([]error, len(progs))
		sem := make(chan struct{}, 2)
		for j, p := range progs {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				errs[j] = run(b.Context(), p)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*len(progs))/b.Elapsed().Seconds(), "tasks/s")
}
