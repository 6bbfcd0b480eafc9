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
	"time"

	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// benchSet is the benchmark's tasks (the reference in place) and the
// directory their package is in: the fixture's scale on inputs of its own
// per task (as a node's batch of distinct tasks), or, when
// LACUNA_BENCH_MORE_ITERTOOLS names a directory holding more_itertools
// (bench/pyharness.sh unpacks the 11.2.1 wheel there), eight tasks on it.
func benchSet(b *testing.B) (dir string, samples []Sample) {
	if dir := os.Getenv("LACUNA_BENCH_MORE_ITERTOOLS"); dir != "" {
		mi := func(api, prelude, sig, ref string, inputs ...string) Sample {
			_, name, _ := strings.Cut(api, ":")
			t := Task{Target: Target{ID: api, Paths: []string{"more_itertools." + name}}, Example: "bench", Difficulty: Easy,
				Prelude: prelude, Signature: sig, Reference: "from more_itertools import " + name + "\n" + ref, Inputs: inputs}
			return Sample{Task: t, Solution: t.Reference}
		}
		return dir, []Sample{
			mi("more_itertools.more:chunked", "", "def solve(xs, n):", "return list(chunked(xs, n))", "([1, 2, 3, 4, 5], 2)", "([1, 2, 3], 3)"),
			mi("more_itertools.more:windowed", "", "def solve(xs, n):", "return list(windowed(xs, n))", "([1, 2, 3, 4], 3)", "([1, 2], 3)"),
			mi("more_itertools.more:interleave_randomly", "its = ([1, 2, 3], 'abc')", "def solve(its):", "return list(interleave_randomly(*its))", "(its,)"),
			mi("more_itertools.more:dft", "import cmath", "def solve(xarr):", "return list(dft(xarr))", "([1, 2 - 1j, -1j, -1 + 2j],)", "([1, 2],)"),
			mi("more_itertools.recipes:flatten", "", "def solve(xss):", "return list(flatten(xss))", "([[1, 2], [3]],)", "([[], [4]],)"),
			mi("more_itertools.more:split_at", "", "def solve(s):", "return list(split_at(s, lambda c: c == 'x'))", "('axbxc',)", "('xx',)"),
			mi("more_itertools.more:distinct_permutations", "", "def solve(xs):", "return sorted(distinct_permutations(xs))", "([1, 1, 2],)", "([3, 3],)"),
			mi("more_itertools.recipes:sliding_window", "", "def solve(xs, n):", "return list(sliding_window(xs, n))", "(range(6), 4)", "('abc', 2)"),
		}
	}
	f := newFixture(b, 1)
	samples = make([]Sample, 8)
	for i := range samples {
		task := fixtureTask()
		task.Inputs = []string{fmt.Sprintf("(DATA, %d)", i+2), fmt.Sprintf("([4, 5, %d], 3)", i)}
		samples[i] = Sample{Task: task, Solution: task.Reference}
	}
	return f.pkg, samples
}

// BenchmarkRunAll measures harness throughput: samples (each a sandboxed
// process per variant, normal and substituted, and per input, with the
// spy) per second, two processes at a time as the tasks and c1 nodes run
// them.
func BenchmarkRunAll(b *testing.B) {
	dir, samples := benchSet(b)
	sb, err := sandbox.New()
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewRunner(sb, Config{
		Python: python(b), Paths: []string{dir}, ReadOnly: []string{dir},
		Limits: sandbox.Limits{Wall: 30 * time.Second, Memory: 1 << 30}, Parallel: 2, Dir: worldDir(b),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runs, err := r.RunAll(b.Context(), samples)
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
	pkg, samples := benchSet(b)
	py := python(b)
	dir := b.TempDir()
	var progs []string
	for i, s := range samples {
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
		cmd.Env = []string{"PYTHONPATH=" + pkg, "PATH=/usr/bin:/bin"}
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
