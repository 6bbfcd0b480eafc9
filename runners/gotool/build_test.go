package gotool

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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
	built := build(t, []Unit{
		testUnit("func Test_u0(t *testing.T) {}\n"),
		testUnit("func Test_u1(t *testing.T) { x := undefinedThing }\n"),
		testUnit("func Test_u2(t *testing.T) { t.Fatal(\"fails\") }\n"),
		testUnit("func Test_u3(t *testing.T) { {\n"),
		testUnit("func Test_u4(t *testing.T) {}\n"),
	})
	for i, want := range []string{"", "undefinedThing", "", "expected", ""} {
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
	for i, code := range map[int]int{0: 0, 2: 1, 4: 0} {
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
// one's exit, goroutine panic or global state reaches no other.
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
	built.RunAll(context.Background(), []int{0, 1, 2, 3, 4}, 3, func(int) RunOptions { return RunOptions{} }, func(i int, p *Process, err error) {
		mu.Lock()
		defer mu.Unlock()
		got[i] = ended{p, err}
	})
	for i, want := range []struct {
		code int
		says string
	}{{3, ""}, {2, "left behind"}, {0, ""}, {0, ""}, {0, ""}} {
		e := got[i]
		if e.err != nil {
			t.Fatalf("unit %d: %v", i, e.err)
		}
		if e.p.ExitCode != want.code || !strings.Contains(e.p.Output, want.says) {
			t.Errorf("unit %d: exit %d, want %d with %q; output:\n%s", i, e.p.ExitCode, want.code, want.says, e.p.Output)
		}
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
