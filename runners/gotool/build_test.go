package gotool

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// testUnit is a unit of group "g" whose file imports imports and holds
// body; the package-level variable state is declared by the first unit
// written to a package, as generated harnesses share declarations.
func testUnit(body string, imports ...string) Unit {
	return Unit{Group: "g", Source: func(pkg string, declared map[string]string) string {
		var b strings.Builder
		b.WriteString("package " + pkg + "\n\nimport (\n\t\"testing\"\n")
		for _, imp := range imports {
			b.WriteString("\t\"" + imp + "\"\n")
		}
		b.WriteString(")\n\n")
		if _, ok := declared["state"]; !ok {
			declared["state"] = "var state string"
			b.WriteString("var state string\n\n")
		}
		return b.String() + body
	}}
}

func build(t testing.TB, units []Unit) *Built {
	t.Helper()
	tc, ws, mod := workspace(t)
	built, err := tc.BuildBatch(context.Background(), mod, units, ws.BatchOptions(TestOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { built.Close() })
	return built
}

// A unit that does not parse or compile is set aside with its compiler's
// messages; the others of its package still get the binary they share.
func TestBuildBatchSetsAsideOnlyTheUnitsThatDoNotCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	other := testUnit("func Test_u6(t *testing.T) {}\n")
	other.Group = "h"
	built := build(t, []Unit{
		testUnit("func Test_u0(t *testing.T) {}\n"),
		testUnit("func Test_u1(t *testing.T) { x := undefinedThing }\n"),
		testUnit("func Test_u2(t *testing.T) { t.Fatal(\"fails\") }\n"),
		testUnit("func Test_u3(t *testing.T) { {\n"),
		testUnit("func Test_u4(t *testing.T) {}\n"),
		testUnit("func Test_u5(t *testing.T) { nothere.F() }\n", "example.com/shapes/nothere"),
		other,
	})
	for i, want := range []string{"", "undefinedThing", "", "expected", "", "example.com/shapes/nothere", ""} {
		u := built.Units[i]
		if u.Test != UnitName("Test", i) {
			t.Errorf("unit %d: test %q", i, u.Test)
		}
		if want == "" {
			if u.CompileError != "" || u.Binary == "" {
				t.Errorf("unit %d compiles, got %+v", i, u)
			}
			continue
		}
		if !strings.Contains(u.CompileError, want) || u.Binary != "" {
			t.Errorf("unit %d does not compile (%q), got %+v", i, want, u)
		}
		if _, err := built.Run(context.Background(), i, RunOptions{}); err == nil {
			t.Errorf("unit %d has no binary, yet Run did not fail", i)
		}
	}
	if built.Units[0].Binary != built.Units[4].Binary {
		t.Errorf("units 0 and 4 of one group do not share their binary: %q, %q", built.Units[0].Binary, built.Units[4].Binary)
	}
	if built.Units[6].Binary == built.Units[0].Binary {
		t.Errorf("units of two groups share the binary %q", built.Units[0].Binary)
	}
	for i, code := range map[int]int{0: 0, 2: 1, 4: 0, 6: 0} {
		p, err := built.Run(context.Background(), i, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.ExitCode != code || p.TimedOut {
			t.Errorf("unit %d: exit %d (timed out %v), want %d\n%s", i, p.ExitCode, p.TimedOut, code, p.Output)
		}
	}
}

// Units run from one binary, several at a time, each in its own process:
// one's exit, goroutine panic or global state reaches no other, and an
// exit with status 0 in a test fails, as under go test.
func TestEachUnitRunsAloneFromTheSharedBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	units := []Unit{
		testUnit("func Test_u0(t *testing.T) { os.Exit(3) }\n", "os"),
		testUnit("func Test_u1(t *testing.T) { go func() { panic(\"left behind\") }(); time.Sleep(time.Minute) }\n", "time"),
		testUnit("func Test_u2(t *testing.T) { state = \"dirty\" }\n"),
		testUnit("func Test_u3(t *testing.T) { if state != \"\" { t.Fatal(\"state left by another unit:\", state) } }\n"),
		testUnit("func Test_u4(t *testing.T) { time.Sleep(100 * time.Millisecond) }\n", "time"),
		testUnit("func Test_u5(t *testing.T) { os.Exit(0) }\n", "os"),
	}
	built := build(t, units)
	for i := range units {
		if built.Units[i].Binary != built.Units[0].Binary {
			t.Fatalf("unit %d is not in the shared binary: %+v", i, built.Units[i])
		}
	}
	type ended struct {
		p   *Process
		err error
	}
	var mu sync.Mutex
	got := map[int]ended{}
	built.RunAll(context.Background(), []int{0, 1, 2, 3, 4, 5}, 3, func(int) RunOptions { return RunOptions{} }, func(i int, p *Process, err error) {
		mu.Lock()
		defer mu.Unlock()
		got[i] = ended{p, err}
	})
	for i, want := range []struct {
		code int
		says string
	}{{3, ""}, {2, "left behind"}, {0, ""}, {0, ""}, {0, ""}, {2, "os.Exit(0)"}} {
		e := got[i]
		if e.err != nil {
			t.Fatalf("unit %d: %v", i, e.err)
		}
		if e.p.ExitCode != want.code || !strings.Contains(e.p.Output, want.says) {
			t.Errorf("unit %d: exit %d, want %d with %q; output:\n%s", i, e.p.ExitCode, want.code, want.says, e.p.Output)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var errs []error
	built.RunAll(ctx, []int{2, 3}, 1, func(int) RunOptions { return RunOptions{} }, func(i int, p *Process, err error) {
		errs = append(errs, err)
	})
	if len(errs) != 2 || !errors.Is(errs[0], context.Canceled) || !errors.Is(errs[1], context.Canceled) {
		t.Errorf("after ctx ended, RunAll reported %v", errs)
	}
}

// Descriptors 7 and 8 given to Run reach the test inside the sandbox:
// it reads a secret from one and answers on the other, out of band.
func TestRunPassesDescriptorsSevenAndUpToTheTest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	built := build(t, []Unit{testUnit(`func Test_u0(t *testing.T) {
	in, out := os.NewFile(7, "in"), os.NewFile(8, "out")
	secret, err := bufio.NewReader(in).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(out, "the secret is %s", secret)
	fmt.Println("printed, not the channel")
}
`, "bufio", "fmt", "os")})
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	fmt.Fprintln(inW, "s3cret")
	inW.Close()
	oob := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(outR)
		oob <- string(b)
	}()
	p, err := built.Run(context.Background(), 0, RunOptions{ExtraFiles: []*os.File{inR, outW}})
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	if p.ExitCode != 0 {
		t.Fatalf("exit %d:\n%s", p.ExitCode, p.Output)
	}
	if got := <-oob; got != "the secret is s3cret\n" {
		t.Errorf("descriptor 8 carried %q", got)
	}
	if !strings.Contains(p.Output, "printed, not the channel") || strings.Contains(p.Output, "s3cret") {
		t.Errorf("output %q", p.Output)
	}
}

// A unit that hangs is killed at its wall clock, with every process it
// started, a child in a session of its own included; its output is kept,
// within RunOptions.Output.
func TestAHangingUnitIsKilledAtItsWallClock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	built := build(t, []Unit{testUnit(`func Test_u0(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "while :; do sleep 1; done", os.Args[len(os.Args)-1])
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Println(strings.Repeat("x", 100))
	fmt.Fprintln(os.NewFile(7, "ready"), "started")
	time.Sleep(time.Hour)
}
`, "fmt", "os", "os/exec", "strings", "syscall", "time")})
	token := fmt.Sprintf("lacuna-hung-%d-%d", os.Getpid(), time.Now().UnixNano())
	readyR, readyW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer readyR.Close()
	running := make(chan int, 1)
	go func() {
		line, _ := bufio.NewReader(readyR).ReadString('\n')
		if line != "started\n" {
			running <- 0
			return
		}
		running <- len(processesWith(token))
	}()
	p, err := built.Run(context.Background(), 0, RunOptions{Wall: 2 * time.Second, Output: 50, Args: []string{token}, ExtraFiles: []*os.File{readyW}})
	readyW.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The wrapper, the test binary, the child: all name the token.
	if n := <-running; n < 3 {
		t.Fatalf("%d processes seen while the unit ran, want at least 3 (output %q)", n, p.Output)
	}
	if !p.TimedOut || p.ExitCode != -1 {
		t.Errorf("timed out %v, exit %d; output:\n%s", p.TimedOut, p.ExitCode, p.Output)
	}
	if p.Output != strings.Repeat("x", 50) || !p.Truncated {
		t.Errorf("output %q (truncated %v), want the first 50 bytes", p.Output, p.Truncated)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(processesWith(token)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := processesWith(token); len(left) > 0 {
		t.Errorf("processes of the killed unit still run: %v", left)
	}
}

// processesWith lists the host processes whose command line holds token.
func processesWith(token string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(b, []byte(token)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// A unit the compiler cannot finish (here it runs out of 1 GiB) fails
// the build with no position: BuildBatch builds each unit of its package
// alone, and the bomb costs only itself.
func TestACompileBombInBuildBatchCostsOnlyItself(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	var bomb strings.Builder
	bomb.WriteString("const c0 = \"xxxxxxxxxxxxxxxx\"\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&bomb, "const c%d = c%d + c%d\n", i, i-1, i-1)
	}
	bomb.WriteString("\nfunc Test_u1(t *testing.T) { println(len(c30)) }\n")
	tc, ws, mod := workspace(t)
	built, err := tc.BuildBatch(context.Background(), mod, []Unit{
		testUnit("func Test_u0(t *testing.T) {}\n"),
		testUnit(bomb.String()),
		testUnit("func Test_u2(t *testing.T) {}\n"),
	}, ws.BatchOptions(TestOptions{Build: sandbox.Limits{Memory: 1 << 30}}))
	if err != nil {
		t.Fatal(err)
	}
	defer built.Close()
	if u := built.Units[1]; u.Binary != "" || !strings.Contains(u.CompileError, "out of memory") {
		t.Errorf("the bomb: %.300q, binary %q; want a compile error saying out of memory", u.CompileError, u.Binary)
	}
	for _, i := range []int{0, 2} {
		p, err := built.Run(context.Background(), i, RunOptions{})
		if err != nil || p.ExitCode != 0 {
			t.Errorf("unit %d beside the bomb: %v %+v", i, err, p)
		}
	}
}

// BenchmarkRunUnitProcess is what isolation costs per unit: n units
// compiled once, then each run alone through the sandbox wrapper, one
// at a time (alone) and two at a time (alone-parallel-2), against the
// shared binary running all n tests in one process (one-process, what
// go test -exec does for a package), and the whole go test run of a
// batch, build included (go-test-batch, warm build cache), and its build
// alone (build-batch). Each reports ms/unit.
func BenchmarkRunUnitProcess(b *testing.B) {
	const n = 50
	units := make([]Unit, n)
	for i := range units {
		units[i] = testUnit(fmt.Sprintf("func Test_u%d(t *testing.T) {\n\tif s := fmt.Sprint(%d*%d); s == \"\" {\n\t\tt.Fatal(s)\n\t}\n}\n", i, i, i), "fmt")
	}
	tc, ws, mod := workspace(b)
	opts := ws.BatchOptions(TestOptions{})
	built, err := tc.BuildBatch(context.Background(), mod, units, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer built.Close()
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	check := func(i int, p *Process, err error) {
		if err != nil || p.ExitCode != 0 {
			b.Fatalf("unit %d: %v %+v", i, err, p)
		}
	}
	perUnit := func(b *testing.B) { b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*n), "ms/unit") }
	b.Run("alone", func(b *testing.B) {
		for b.Loop() {
			for _, i := range all {
				p, err := built.Run(context.Background(), i, RunOptions{})
				check(i, p, err)
			}
		}
		perUnit(b)
	})
	b.Run("alone-parallel-2", func(b *testing.B) {
		for b.Loop() {
			built.RunAll(context.Background(), all, 2, func(int) RunOptions { return RunOptions{} }, check)
		}
		perUnit(b)
	})
	b.Run("one-process", func(b *testing.B) {
		for b.Loop() {
			// The last -test.run wins: every test of the binary.
			p, err := built.Run(context.Background(), 0, RunOptions{Args: []string{"-test.run=^Test_u", "-test.v"}})
			check(0, p, err)
			if got := strings.Count(p.Output, "--- PASS"); got != n {
				b.Fatalf("%d tests passed, want %d:\n%s", got, n, p.Output)
			}
		}
		perUnit(b)
	})
	b.Run("go-test-batch", func(b *testing.B) {
		for b.Loop() {
			res, err := tc.RunBatch(context.Background(), mod, units, opts)
			if err != nil {
				b.Fatal(err)
			}
			for i, r := range res {
				if tr := r.Tests[UnitName("Test", i)]; !tr.Passed {
					b.Fatalf("unit %d: %+v", i, r)
				}
			}
		}
		perUnit(b)
	})
	b.Run("build-batch", func(b *testing.B) {
		for b.Loop() {
			bb, err := tc.BuildBatch(context.Background(), mod, units, opts)
			if err != nil {
				b.Fatal(err)
			}
			bb.Close()
		}
		perUnit(b)
	})
}
