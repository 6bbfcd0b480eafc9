package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func setup(t *testing.T) (*Sandbox, string) {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return s, workDir(t)
}

// workDir is a directory under os.TempDir, which uid 65534 can reach when
// the tests run as root without bubblewrap (t.TempDir's parent is
// private).
func workDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "lacuna-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func needIsolation(t *testing.T, s *Sandbox) {
	t.Helper()
	if s.Isolation() != "bubblewrap" {
		t.Skip("SKIPPED LOUDLY: bubblewrap is not installed: no isolation to test (`make test` installs it)")
	}
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

// worldReadable makes a directory outside /tmp (which is private inside
// the sandbox) that uid 65534 could read on the host.
func worldReadable(t *testing.T, content string) (dir, file string) {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "lacuna-outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

func TestRunsAProgramOnItsInputsAndCapturesItsOutput(t *testing.T) {
	s, dir := setup(t)
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("hello\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "run.sh"), []byte("echo from sub\n"), 0o755)
	r, err := s.Run(context.Background(), Spec{Argv: sh("cat in.txt; sh sub/run.sh; echo err >&2; echo made > out.txt; cat out.txt; exit 3"), Dir: dir, Limits: Limits{Wall: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 3 || string(r.Stdout) != "hello\nfrom sub\nmade\n" || string(r.Stderr) != "err\n" || r.TimedOut || r.Truncated {
		t.Errorf("result %+v (stdout %q, stderr %q)", r, r.Stdout, r.Stderr)
	}
}

func TestNoNetworkEvenToLoopback(t *testing.T) {
	s, dir := setup(t)
	needIsolation(t, s)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to probe the network: ", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan bool, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- true
		}
	}()
	probe := fmt.Sprintf("(exec 3<>/dev/tcp/127.0.0.1/%d) && echo connected || echo refused", ln.Addr().(*net.TCPAddr).Port)
	// The probe works: outside the sandbox it connects.
	out, err := exec.Command(bash, "-c", probe).Output()
	if err != nil || string(out) != "connected\n" {
		t.Fatalf("the probe does not connect outside the sandbox: %q %v", out, err)
	}
	<-accepted
	r, err := s.Run(context.Background(), Spec{Argv: []string{"/bin/bash", "-c", probe}, Dir: dir, Limits: Limits{Wall: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Stdout) != "refused\n" {
		t.Errorf("inside the sandbox the probe printed %q (stderr %q), want refused", r.Stdout, r.Stderr)
	}
	select {
	case <-accepted:
		t.Error("the test's listener accepted a connection from the sandbox")
	default:
	}
}

func TestCannotWriteOutsideItsWorkDir(t *testing.T) {
	s, dir := setup(t)
	needIsolation(t, s)
	outside, _ := worldReadable(t, "")
	os.Chmod(outside, 0o777)
	target := filepath.Join(outside, "escaped")
	hostTmp := fmt.Sprintf("/tmp/host-tmp-%d", os.Getpid())
	r, err := s.Run(context.Background(), Spec{
		Argv:   sh(fmt.Sprintf("echo x > %s; echo y > %s; echo z > ../escaped; echo r > /rootfile; echo d > /dev/devfile; echo made > out; echo done", target, hostTmp)),
		Dir:    dir,
		Limits: Limits{Wall: 10 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.Stdout), "done") {
		t.Fatalf("program did not run: %+v", r)
	}
	for _, p := range []string{target, hostTmp, filepath.Join(filepath.Dir(dir), "escaped"), filepath.Join(dir, "out"), "/rootfile", "/dev/devfile"} {
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("the sandbox wrote %s on the host", p)
		}
	}
	for _, want := range []string{"/rootfile: Read-only file system", "/dev/devfile: Read-only file system"} {
		if !strings.Contains(string(r.Stderr), want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
		}
	}
}

func TestSeesOnlyTheSystemAndThePathsItIsGiven(t *testing.T) {
	s, dir := setup(t)
	needIsolation(t, s)
	hidden, hiddenFile := worldReadable(t, "hidden-content\n")
	given, givenFile := worldReadable(t, "given-content\n")
	r, err := s.Run(context.Background(), Spec{
		Argv:     sh(fmt.Sprintf("cat %s; cat %s; ls %s; ls /root /home /opt /etc/shadow; ls /", hiddenFile, givenFile, hidden)),
		Dir:      dir,
		ReadOnly: []string{given},
		Limits:   Limits{Wall: 10 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.Stdout), "given-content") {
		t.Errorf("a read-only path the caller gave is not readable: %q %q", r.Stdout, r.Stderr)
	}
	if strings.Contains(string(r.Stdout), "hidden-content") {
		t.Errorf("a world-readable file outside the sandbox was read: %q", r.Stdout)
	}
	for _, p := range []string{hiddenFile, hidden, "/root", "/home", "/opt", "/etc/shadow"} {
		if e := string(r.Stderr); !strings.Contains(e, p+": No such file or directory") && !strings.Contains(e, p+"': No such file or directory") {
			t.Errorf("%s is visible inside the sandbox:\nstdout %s\nstderr %s", p, r.Stdout, r.Stderr)
		}
	}
	for _, bad := range []string{"/work/x", "/", "relative", filepath.Join(given, "missing")} {
		if _, err := s.Run(context.Background(), Spec{Argv: sh("true"), Dir: dir, ReadOnly: []string{bad}}); err == nil {
			t.Errorf("read-only path %q was accepted", bad)
		}
	}
}

func TestSecretsInLacunasEnvironmentReachNoProcess(t *testing.T) {
	s, dir := setup(t)
	needIsolation(t, s)
	secret := "sk-lacuna-test-" + strconv.Itoa(os.Getpid())
	t.Setenv("LACUNA_TEST_API_KEY", secret)
	// Every environment the program can read: its own, the sandbox's
	// first process (bubblewrap's), every other process it sees.
	const probe = "cat /proc/self/environ /proc/1/environ /proc/[0-9]*/environ | tr '\\0' '\\n'; echo; echo processes $(ls -d /proc/[0-9]* | wc -l)"
	run := func(t *testing.T) string {
		r, err := s.Run(context.Background(), Spec{Argv: sh(probe), Dir: dir, Limits: Limits{Wall: 10 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		return string(r.Stdout) + string(r.Stderr)
	}
	wrapper := func(t *testing.T) string {
		w, err := s.ExecWrapper(dir, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		prog := filepath.Join(dir, "probe.sh")
		os.WriteFile(prog, []byte("#!/bin/sh\n"+probe+"\n"), 0o755)
		out, _ := exec.Command(w, prog).CombinedOutput() // inherits the secret, as the go command does
		return string(out)
	}
	tool := func(t *testing.T) string {
		r, err := s.RunTool(context.Background(), Tool{Argv: []string{"/usr/bin/env"}, Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(r.Stdout), "CGO_ENABLED=0") {
			t.Errorf("a tool runs with cgo unless asked:\n%s", r.Stdout)
		}
		return string(r.Stdout) + string(r.Stderr)
	}
	for _, c := range []struct {
		name string
		run  func(*testing.T) string
	}{{"Run", run}, {"ExecWrapper", wrapper}, {"RunTool", tool}} {
		t.Run(c.name, func(t *testing.T) {
			got := c.run(t)
			if !strings.Contains(got, "PATH=") {
				t.Fatalf("the probe read no environment:\n%s", got)
			}
			if strings.Contains(got, secret) {
				t.Errorf("the secret reached the program:\n%s", got)
			}
		})
	}
}

func TestWorkDirIsCapped(t *testing.T) {
	s, dir := setup(t)
	needIsolation(t, s)
	const disk = 8 << 20
	// Twenty files of 1 MiB, in /work and in /tmp, each under the file
	// size limit: together they are past the cap.
	script := `i=0; while [ $i -lt 20 ]; do head -c 1048576 /dev/zero > f$i; head -c 1048576 /dev/zero > /tmp/t$i; i=$((i+1)); done; echo used $(du -sk /work | cut -f1)`
	r, err := s.Run(context.Background(), Spec{Argv: sh(script), Dir: dir, Limits: Limits{Wall: 20 * time.Second, Disk: disk}})
	if err != nil {
		t.Fatal(err)
	}
	var used int64
	if _, err := fmt.Sscanf(string(r.Stdout), "used %d", &used); err != nil {
		t.Fatalf("no usage reported: %q %q", r.Stdout, r.Stderr)
	}
	if used*1024 > disk || used*1024 < disk/2 {
		t.Errorf("%d KiB written under a cap of %d KiB", used, disk>>10)
	}
	if !strings.Contains(string(r.Stderr), "No space left on device") {
		t.Errorf("writes past the cap did not fail: %q", r.Stderr)
	}
}

func TestForkBombIsContained(t *testing.T) {
	s, dir := setup(t)
	r, err := s.Run(context.Background(), Spec{Argv: sh("bomb() { bomb | bomb & }; bomb; sleep 30"), Dir: dir, Limits: Limits{Wall: 3 * time.Second, Procs: 64}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut && r.ExitCode == 0 {
		t.Errorf("fork bomb ended normally: %+v", r)
	}
	// The host can still start processes afterwards.
	if r2, err := s.Run(context.Background(), Spec{Argv: sh("echo alive"), Dir: dir, Limits: Limits{Wall: 5 * time.Second}}); err != nil || string(r2.Stdout) != "alive\n" {
		t.Errorf("after the bomb: %+v %v", r2, err)
	}
}

// Open files are bounded: memory a program keeps in memfds or shared
// memory is not counted by RLIMIT_AS, only through this and FileSize.
func TestOpenFilesAreBounded(t *testing.T) {
	s, dir := setup(t)
	script := `ulimit -n; n=0; while [ $n -lt 100 ]; do exec {fd}</dev/null || { echo stopped after $n; exit 0; }; n=$((n+1)); done; echo opened all`
	r, err := s.Run(context.Background(), Spec{Argv: []string{"/bin/bash", "-c", script}, Dir: dir, Limits: Limits{Wall: 10 * time.Second, Files: 32}})
	if err != nil {
		t.Fatal(err)
	}
	if out := string(r.Stdout); !strings.HasPrefix(out, "32\n") || !strings.Contains(out, "stopped after") {
		t.Errorf("with 32 files: %q %q", out, r.Stderr)
	}
}

func TestInfiniteLoopIsKilledAtTheWallClock(t *testing.T) {
	s, dir := setup(t)
	r, err := s.Run(context.Background(), Spec{Argv: sh("(while :; do :; done) & while :; do :; done"), Dir: dir, Limits: Limits{Wall: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut || r.ExitCode != -1 {
		t.Errorf("result %+v", r)
	}
}

func TestHugeAllocationFails(t *testing.T) {
	s, dir := setup(t)
	// The shell holds 1 GB in a variable: past a 256 MiB address space.
	r, err := s.Run(context.Background(), Spec{Argv: sh(`x=$(head -c 1000000000 /dev/zero | tr '\0' a); echo allocated ${#x}`), Dir: dir, Limits: Limits{Wall: 20 * time.Second, Memory: 256 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode == 0 || strings.Contains(string(r.Stdout), "allocated") {
		t.Errorf("1 GB allocation under a 256 MiB limit: %+v (stdout %q stderr %q)", r, r.Stdout, r.Stderr)
	}
}

// peakRSS is this process's peak resident memory in bytes.
func peakRSS(t *testing.T) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Maxrss << 10
}

func TestHugeOutputIsBounded(t *testing.T) {
	s, dir := setup(t)
	before := peakRSS(t)
	r, err := s.Run(context.Background(), Spec{Argv: sh("head -c 1073741824 /dev/zero; echo tail"), Dir: dir, Limits: Limits{Wall: 60 * time.Second, Output: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Stdout) != 1<<20 || !r.Truncated {
		t.Errorf("kept %d bytes, truncated=%v", len(r.Stdout), r.Truncated)
	}
	if grown := peakRSS(t) - before; grown > 64<<20 {
		t.Errorf("1 GB of output grew the peak RSS by %d MiB", grown>>20)
	}
}

func TestExecWrapperCutsOutputWithAMarker(t *testing.T) {
	s, dir := setup(t)
	const limit = 1 << 20
	w, err := s.ExecWrapper(dir, Limits{Output: limit, Wall: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, script string
		wantLen      int // bytes of program output kept
		cut          bool
	}{
		{"far past the limit", "head -c 4294967296 /dev/zero; echo tail; exit 0", limit, true},
		{"stderr too", "head -c 4294967296 /dev/zero >&2", limit, true},
		{"exactly the limit", "head -c 1048576 /dev/zero; exit 5", limit, false},
		{"under the limit", "echo out; echo err >&2; exit 5", len("out\nerr\n"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prog := filepath.Join(dir, "prog.sh")
			os.WriteFile(prog, []byte("#!/bin/sh\n"+c.script+"\n"), 0o755)
			cmd := exec.Command(w, prog)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Read as the go command does, keeping only a count and the tail.
			n, tail := readCounting(out)
			err = cmd.Wait()
			marker := fmt.Sprintf("\n%s%d bytes]\n", TruncatedMarker, limit)
			if c.cut {
				if n != int64(c.wantLen+len(marker)) || !strings.HasSuffix(tail, marker) {
					t.Errorf("got %d bytes ending %q, want %d and the marker", n, tail, c.wantLen+len(marker))
				}
				if err == nil {
					t.Error("a program cut short exited 0")
				}
			} else {
				var ee *exec.ExitError
				if n != int64(c.wantLen) || strings.Contains(tail, TruncatedMarker) || !errors.As(err, &ee) || ee.ExitCode() != 5 {
					t.Errorf("got %d bytes ending %q, exit %v; want %d, no marker, exit 5", n, tail, err, c.wantLen)
				}
			}
			if stderr.Len() != 0 {
				t.Errorf("the wrapper wrote to stderr: %q", stderr.String())
			}
		})
	}
}

func readCounting(r io.Reader) (int64, string) {
	var n int64
	var tail []byte
	buf := make([]byte, 64<<10)
	for {
		k, err := r.Read(buf)
		n += int64(k)
		tail = append(tail, buf[:k]...)
		if len(tail) > 256 {
			tail = tail[len(tail)-256:]
		}
		if err != nil {
			return n, string(tail)
		}
	}
}

func TestLargeFileWriteIsLimited(t *testing.T) {
	s, dir := setup(t)
	r, err := s.Run(context.Background(), Spec{Argv: sh("head -c 10000000 /dev/zero > big; echo status $?; wc -c < big"), Dir: dir, Limits: Limits{Wall: 10 * time.Second, FileSize: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	var status, size int
	if _, err := fmt.Sscanf(string(r.Stdout), "status %d\n%d", &status, &size); err != nil {
		t.Fatalf("unexpected output %q (stderr %q): %v", r.Stdout, r.Stderr, err)
	}
	if status == 0 || size > 1<<20 {
		t.Errorf("a file of %d bytes was written past a 1 MiB limit (status %d)", size, status)
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
	outside, _ := worldReadable(t, "")
	os.Chmod(outside, 0o777)
	wrapper, err := s.ExecWrapper(dir, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "prog.sh")
	script := fmt.Sprintf(`#!/bin/bash
echo "args:$*"
echo "pwd:$(pwd)"
echo "uid:$(id -u)"
echo x > %s/escaped && echo "wrote outside"
echo x > local && echo "wrote local"
(exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo "connected"
exit 7
`, outside, ln.Addr().(*net.TCPAddr).Port)
	os.WriteFile(prog, []byte(script), 0o755)
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

func TestKilledExecWrapperLeavesNothingBehind(t *testing.T) {
	s, dir := setup(t)
	needIsolation(t, s)
	wrapper, err := s.ExecWrapper(dir, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	token := fmt.Sprintf("lacuna-hung-%d-%d", os.Getpid(), time.Now().UnixNano())
	// Files named with the token, wherever a work directory could be.
	leftovers := func() []string {
		var all []string
		for _, base := range []string{"/dev/shm", os.TempDir(), dir} {
			for _, pattern := range []string{"*" + token + "*", "*/*" + token + "*", "*/*/*" + token + "*"} {
				m, _ := filepath.Glob(filepath.Join(base, pattern))
				all = append(all, m...)
			}
		}
		return all
	}
	prog := filepath.Join(dir, "hung.sh")
	// A hung test binary with 16 MiB in its work directory.
	os.WriteFile(prog, []byte("#!/bin/sh\nhead -c 16777216 /dev/zero > \"big-$1\" && echo ready\nwhile :; do sleep 1; done\n"), 0o755)
	cmd := exec.Command(wrapper, prog, token)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	stop.Stop()
	if line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the program did not start: %q", line)
	}
	if running := processesWith(token); len(running) == 0 {
		t.Fatal("cannot see the sandboxed processes from the host")
	}
	// What the go command does to a test binary past its timeout.
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for len(processesWith(token)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := processesWith(token); len(left) > 0 {
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("processes of the killed sandbox still run: %v", left)
	}
	if left := leftovers(); len(left) > 0 {
		t.Errorf("files left behind: %q", left)
	}
	// The killed wrapper's memory cgroup is left for gc, empty.
	if s.mem != nil {
		groups, _ := filepath.Glob(filepath.Join(s.mem.dir, "x-*"))
		for _, g := range groups {
			if procs, _ := readWords(filepath.Join(g, "cgroup.procs")); len(procs) > 0 {
				t.Errorf("memory cgroup %s still holds processes %v", g, procs)
			}
		}
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

func TestIdentityNamesTheMechanismAndTheLimits(t *testing.T) {
	s, _ := setup(t)
	id := s.Identity(Limits{})
	if id["sandbox"] != s.Isolation() {
		t.Errorf("sandbox %q, want %q", id["sandbox"], s.Isolation())
	}
	if s.Isolation() == "bubblewrap" {
		out, err := exec.Command(s.bwrap, "--version").Output()
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.Fields(string(out))[1]; id["bubblewrap"] != want {
			t.Errorf("bubblewrap version %q, want %q", id["bubblewrap"], want)
		}
	}
	same := s.Identity(Limits{Wall: 60 * time.Second, Memory: 4 << 30})
	for k, v := range id {
		if same[k] != v {
			t.Errorf("the defaults spelled out change %s: %q vs %q", k, v, same[k])
		}
	}
	for _, lim := range []Limits{{Wall: time.Second}, {CPU: time.Second}, {Memory: 1 << 30}, {FileSize: 1 << 20}, {Procs: 8}, {Disk: 1 << 20}, {Output: 1 << 10}} {
		if fmt.Sprint(s.Identity(lim)) == fmt.Sprint(id) {
			t.Errorf("limits %+v do not change the identity", lim)
		}
	}
	want := "none"
	if s.mem != nil {
		want = "cgroup-v" + strconv.Itoa(s.mem.v)
	}
	if id["memory_cgroup"] != want {
		t.Errorf("memory_cgroup %q, want %q", id["memory_cgroup"], want)
	}
	bare := (&Sandbox{}).Identity(Limits{})
	if bare["sandbox"] != "rlimits" || bare["bubblewrap"] != "" || bare["memory_cgroup"] != "none" {
		t.Errorf("without bubblewrap or a memory cgroup: %v", bare)
	}
}

func TestWarningOnlyWithoutIsolationOrAMemoryCgroup(t *testing.T) {
	s, _ := setup(t)
	if got := s.Warning(); (got == "") != (s.Isolation() == "bubblewrap" && s.mem != nil) {
		t.Errorf("isolation %s, memory cgroup %v (%s), warning %q", s.Isolation(), s.mem != nil, s.memWhy, got)
	}
	if w := (&Sandbox{}).Warning(); !strings.Contains(w, "bubblewrap") || !strings.Contains(w, "no memory cgroup") {
		t.Errorf("without bubblewrap or a memory cgroup the warning is %q", w)
	}
	noCgroup := *s
	noCgroup.mem, noCgroup.memWhy = nil, "cgroup v1: permission denied"
	if w := noCgroup.Warning(); !strings.Contains(w, "WARNING: no memory cgroup") || !strings.Contains(w, "permission denied") || !strings.Contains(w, "RLIMIT_AS") {
		t.Errorf("without a memory cgroup the warning is %q", w)
	}
}

// The wrapper's own descriptors are 3 and 4: descriptors 7 and up that
// its caller passes reach the program, with bubblewrap and without, an
// out-of-band channel besides the output the wrapper merges and cuts.
func TestExecWrapperPassesDescriptorsSevenAndUp(t *testing.T) {
	s, _ := setup(t)
	modes := map[string]*Sandbox{}
	if s.bwrap != "" {
		modes["bubblewrap"] = s
	}
	rl := *s
	rl.bwrap = ""
	modes["rlimits"] = &rl
	for name, s := range modes {
		t.Run(name, func(t *testing.T) {
			dir := workDir(t)
			wrapper, err := s.ExecWrapper(dir, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			prog := filepath.Join(dir, "prog.sh")
			script := "#!/bin/sh\nread secret <&7\necho \"got $secret\" >&8\necho on stdout\nfor fd in 3 4 5 6; do if { true >&$fd; } 2>/dev/null; then echo \"descriptor $fd open\"; fi; done\n"
			if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
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
			cmd := exec.Command(wrapper, prog)
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			// nil: descriptors 3 to 6 are closed in the wrapper.
			cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, inR, outW}
			got := make(chan string, 1)
			go func() {
				b, _ := io.ReadAll(outR)
				got <- string(b)
			}()
			stdout, err := cmd.CombinedOutput()
			outW.Close()
			if err != nil {
				t.Fatalf("%v\n%s", err, stdout)
			}
			if oob := <-got; oob != "got s3cret\n" {
				t.Errorf("descriptor 8 carried %q, want \"got s3cret\\n\"", oob)
			}
			if string(stdout) != "on stdout\n" {
				t.Errorf("output %q, want only \"on stdout\\n\"", stdout)
			}
		})
	}
}

// TestExecWrapperForDescriptorsKeepsThemFromOtherProcesses: under
// bubblewrap the program is the only process of its sandbox that holds
// the descriptors it was handed (with ExecWrapper, the output limiter's
// shells hold them too, where the program could reopen them through
// /proc/PID/fd when it runs as the files' owner).
func TestExecWrapperForDescriptorsKeepsThemFromOtherProcesses(t *testing.T) {
	s, _ := setup(t)
	if s.bwrap == "" {
		t.Skip("needs bubblewrap")
	}
	for _, tc := range []struct {
		name   string
		wrap   func(string, Limits, ...string) (string, error)
		others bool // other processes hold descriptor 7
	}{
		{"limiter", s.ExecWrapper, true},
		{"for descriptors", s.ExecWrapperForDescriptors, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := workDir(t)
			wrapper, err := tc.wrap(dir, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			prog := filepath.Join(dir, "prog.sh")
			// Count the processes other than this shell with a descriptor 7.
			script := "#!/bin/sh\nn=0\nfor d in /proc/[0-9]*; do [ \"${d#/proc/}\" = \"$$\" ] && continue; [ -e \"$d/fd/7\" ] && n=$((n+1)); done\necho \"others=$n\"\n"
			if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			cmd := exec.Command(wrapper, prog)
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, r}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if got := strings.TrimSpace(string(out)) != "others=0"; got != tc.others {
				t.Errorf("%s: other processes hold descriptor 7 = %v, want %v", out, got, tc.others)
			}
		})
	}
}

// TestMountAsRootReadsPrivatePathsAndKeepsTheIsolation: as root, a
// read-only path under a directory uid 65534 cannot enter on the host is
// readable with MountAsRoot, while the program still runs as uid 65534
// without capabilities or a way to regain them, without network, unable
// to write outside /work or to see what it was not given, and unable to
// read lacuna's environment.
func TestMountAsRootReadsPrivatePathsAndKeepsTheIsolation(t *testing.T) {
	s, dir := setup(t)
	needIsolation(t, s)
	if os.Geteuid() != 0 {
		t.Skip("MountAsRoot applies only when lacuna runs as root")
	}
	private, err := os.MkdirTemp("/var/tmp", "lacuna-private-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(private) })
	given := filepath.Join(private, "given")
	if err := os.Mkdir(given, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(given, "file"), []byte("given-content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	_, hiddenFile := worldReadable(t, "hidden-content\n")
	secret := "sk-lacuna-test-" + strconv.Itoa(os.Getpid())
	t.Setenv("LACUNA_TEST_API_KEY", secret)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("listener-reached\n"))
			c.Close()
		}
	}()
	script := fmt.Sprintf(`echo uid $(id -u) groups $(id -G)
grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status
cat %[1]s/file; cat %[2]s
(exec 3<>/dev/tcp/127.0.0.1/%[3]d && cat <&3) || echo refused
echo x > %[1]s/w; echo x > /rootfile; echo x > /var/escaped
echo made > /work/out && echo work-writable; echo t > /tmp/t && echo tmp-writable
cat /proc/[0-9]*/environ | tr '\0' '\n' | grep -c LACUNA_TEST_API_KEY
`, given, hiddenFile, ln.Addr().(*net.TCPAddr).Port)
	r, err := s.Run(context.Background(), Spec{Argv: []string{"/bin/bash", "-c", script}, Dir: dir, ReadOnly: []string{given}, MountAsRoot: true, Limits: Limits{Wall: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	out := string(r.Stdout)
	for _, want := range []string{"uid 65534 groups 65534\n", "CapEff:\t0000000000000000\n", "CapBnd:\t0000000000000000\n", "NoNewPrivs:\t1\n",
		"given-content\n", "refused\n", "work-writable\n", "tmp-writable\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s\nstderr:\n%s", want, out, r.Stderr)
		}
	}
	if !strings.HasSuffix(out, "\n0\n") {
		t.Errorf("lacuna's environment is readable inside:\n%s", out)
	}
	for _, bad := range []string{"hidden-content", "listener-reached", secret} {
		if strings.Contains(out, bad) {
			t.Errorf("stdout has %q:\n%s", bad, out)
		}
	}
	for _, p := range []string{filepath.Join(given, "w"), "/rootfile", "/var/escaped"} {
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("the sandbox wrote %s on the host", p)
		}
	}
	if !strings.Contains(string(r.Stderr), "/rootfile: Read-only file system") {
		t.Errorf("stderr: %s", r.Stderr)
	}
}

// TestMountAsRootWallClockLeavesNothingBehind: the program runs in a
// session of its own, as another uid than bubblewrap, so killing the
// process group does not reach it: bubblewrap's death must take the pid
// namespace with it.
func TestMountAsRootWallClockLeavesNothingBehind(t *testing.T) {
	s, dir := setup(t)
	needIsolation(t, s)
	if os.Geteuid() != 0 {
		t.Skip("MountAsRoot applies only when lacuna runs as root")
	}
	token := fmt.Sprintf("lacuna-hung-root-%d-%d", os.Getpid(), time.Now().UnixNano())
	r, err := s.Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", "(sleep 300; : " + token + ") & while :; do :; done", token}, Dir: dir, MountAsRoot: true, Limits: Limits{Wall: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut || r.ExitCode != -1 {
		t.Errorf("result %+v", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(processesWith(token)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := processesWith(token); len(left) > 0 {
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("processes of the killed sandbox still run: %v", left)
	}
}
