package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func setup(t *testing.T) (*Sandbox, string) {
	t.Helper()
	s, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	dir, cleanup, err := WorkDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return s, dir
}

func needIsolation(t *testing.T, s *Sandbox) {
	if s.Isolation() != "bubblewrap" {
		t.Skip("bubblewrap is not installed: no isolation to test (`make test` installs it)")
	}
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

func TestRunsAProgramAndCapturesItsOutput(t *testing.T) {
	s, dir := setup(t)
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("hello\n"), 0o644)
	r, err := s.Run(context.Background(), Spec{Argv: sh("cat in.txt; echo err >&2; echo made > out.txt; exit 3"), Dir: dir, Limits: Limits{Wall: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 3 || string(r.Stdout) != "hello\n" || string(r.Stderr) != "err\n" || r.TimedOut {
		t.Errorf("result %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != "made\n" {
		t.Errorf("work dir write: %q", b)
	}
}

func TestNoNetworkEvenToLoopback(t *testing.T) {
	s, dir := setup(t)
	needIsolation(t, s)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan bool, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
			accepted <- true
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	prog := fmt.Sprintf("import socket\ntry:\n    socket.create_connection(('127.0.0.1', %d), timeout=2)\n    print('connected')\nexcept OSError as e:\n    print('refused', e)\n", port)
	r, err := s.Run(context.Background(), Spec{Argv: []string{"python3", "-c", prog}, Dir: dir, Limits: Limits{Wall: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(r.Stdout), "connected") {
		t.Errorf("the sandbox reached the host's loopback: %s", r.Stdout)
	}
	select {
	case <-accepted:
		t.Error("the test's listener accepted a connection from the sandbox")
	case <-time.After(200 * time.Millisecond):
	}
}

func TestCannotWriteOutsideItsWorkDir(t *testing.T) {
	s, dir := setup(t)
	needIsolation(t, s)
	// A directory anyone may write to (as the unprivileged sandbox uid
	// could without isolation), outside /tmp (which is private inside).
	outside, err := os.MkdirTemp("/var/tmp", "lacuna-escape-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(outside)
	os.Chmod(outside, 0o777)
	target := filepath.Join(outside, "escaped")
	r, err := s.Run(context.Background(), Spec{
		Argv:   sh(fmt.Sprintf("echo x > %s; echo y > /tmp/host-tmp-%d; echo z > ../escaped; echo done", target, os.Getpid())),
		Dir:    dir,
		Limits: Limits{Wall: 10 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.Stdout), "done") {
		t.Fatalf("program did not run: %+v", r)
	}
	for _, p := range []string{target, fmt.Sprintf("/tmp/host-tmp-%d", os.Getpid()), filepath.Join(filepath.Dir(dir), "escaped")} {
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("the sandbox wrote %s on the host", p)
		}
	}
}

func TestForkBombIsContained(t *testing.T) {
	s, dir := setup(t)
	start := time.Now()
	r, err := s.Run(context.Background(), Spec{Argv: sh("bomb() { bomb | bomb & }; bomb; sleep 30"), Dir: dir, Limits: Limits{Wall: 3 * time.Second, Procs: 64}})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("fork bomb took %v to stop", d)
	}
	if !r.TimedOut && r.ExitCode == 0 {
		t.Errorf("fork bomb ended normally: %+v", r)
	}
	// The host can still start processes afterwards.
	if r2, err := s.Run(context.Background(), Spec{Argv: sh("echo alive"), Dir: dir, Limits: Limits{Wall: 5 * time.Second}}); err != nil || string(r2.Stdout) != "alive\n" {
		t.Errorf("after the bomb: %+v %v", r2, err)
	}
}

func TestInfiniteLoopIsKilledAtTheWallClock(t *testing.T) {
	s, dir := setup(t)
	start := time.Now()
	r, err := s.Run(context.Background(), Spec{Argv: sh("(while :; do :; done) & while :; do :; done"), Dir: dir, Limits: Limits{Wall: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut || r.ExitCode != -1 {
		t.Errorf("result %+v", r)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v to kill", d)
	}
}

func TestHugeAllocationFails(t *testing.T) {
	s, dir := setup(t)
	r, err := s.Run(context.Background(), Spec{Argv: []string{"python3", "-c", "b = bytearray(10 * 1024**3); print('allocated')"}, Dir: dir, Limits: Limits{Wall: 20 * time.Second, Memory: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode == 0 || strings.Contains(string(r.Stdout), "allocated") || !strings.Contains(string(r.Stderr), "MemoryError") {
		t.Errorf("10 GB allocation: %+v (stderr %q)", r, r.Stderr)
	}
}

func TestHugeOutputIsBounded(t *testing.T) {
	s, dir := setup(t)
	start := time.Now()
	r, err := s.Run(context.Background(), Spec{Argv: sh("head -c 1073741824 /dev/zero; echo tail"), Dir: dir, Limits: Limits{Wall: 30 * time.Second, Output: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Stdout) != 1<<20 || !r.Truncated {
		t.Errorf("kept %d bytes, truncated=%v", len(r.Stdout), r.Truncated)
	}
	t.Logf("1 GB of output drained in %v", time.Since(start))
}

func TestLargeFileWriteIsLimited(t *testing.T) {
	s, dir := setup(t)
	r, err := s.Run(context.Background(), Spec{Argv: sh("head -c 10000000 /dev/zero > big; echo $?"), Dir: dir, Limits: Limits{Wall: 10 * time.Second, FileSize: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "big")); err != nil || st.Size() > 1<<20 {
		t.Errorf("file of %v bytes written past a 1 MiB limit (%v): %+v", st.Size(), err, r)
	}
}

func TestExecWrapperRunsProgramsInsideTheSandbox(t *testing.T) {
	s, dir := setup(t)
	needIsolation(t, s)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	outside := t.TempDir()
	wrapper, err := s.ExecWrapper(dir, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "prog.sh")
	script := fmt.Sprintf(`#!/bin/sh
echo "args:$*"
echo "pwd:$(pwd)"
echo "uid:$(id -u)"
echo x > %s/escaped && echo "wrote outside"
echo x > local && echo "wrote local"
(exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo "connected"
exit 7
`, outside, ln.Addr().(*net.TCPAddr).Port)
	os.WriteFile(prog, []byte(strings.Replace(script, "#!/bin/sh", "#!/bin/bash", 1)), 0o755)
	out, err := exec.Command(wrapper, prog, "-test.v", "a b").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("exit: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{"args:-test.v a b", "pwd:/work", "wrote local"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	for _, bad := range []string{"wrote outside", "connected"} {
		if strings.Contains(got, bad) {
			t.Errorf("sandbox let the program do %q:\n%s", bad, got)
		}
	}
	if os.Geteuid() == 0 && !strings.Contains(got, "uid:65534") {
		t.Errorf("not run as nobody:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Error("file written outside the sandbox")
	}
}
