package serve

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// group starts `sh -c 'sleep 600 & sleep 600'` as the leader of its own
// process group (as Start starts a server, without the death signal: these
// stand for servers whose owner died) and returns it with its start time.
func group(t *testing.T) (*exec.Cmd, uint64) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 600 & sleep 600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-done })
	st, err := startTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, st
}

// deadProcess is a pid and start time of a process that has exited.
func deadProcess(t *testing.T) (int, uint64) {
	t.Helper()
	cmd := exec.Command("sleep", "0.01")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := startTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	return cmd.Process.Pid, st
}

// groupGone waits a little for group pid to have no live process.
func groupGone(pid int) bool {
	for range 100 {
		if !groupAlive(pid) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func TestReapEndsServersWhoseOwnerDied(t *testing.T) {
	dir := t.TempDir()
	self, err := startTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	deadOwner, deadOwnerStart := deadProcess(t)

	orphan, orphanStart := group(t)      // owner dead, server alive: killed
	kept, keptStart := group(t)          // owner alive (this test): kept
	reused, reusedStart := group(t)      // its pid now names another process: not killed
	gonePID, goneStart := deadProcess(t) // owner dead, server gone: lease removed

	leases := map[string]Lease{
		"orphan": {PID: orphan.Process.Pid, StartTime: orphanStart, Owner: deadOwner, OwnerStartTime: deadOwnerStart},
		"kept":   {PID: kept.Process.Pid, StartTime: keptStart, Owner: os.Getpid(), OwnerStartTime: self},
		"reused": {PID: reused.Process.Pid, StartTime: reusedStart + 1, Owner: deadOwner, OwnerStartTime: deadOwnerStart},
		"gone":   {PID: gonePID, StartTime: goneStart, Owner: deadOwner, OwnerStartTime: deadOwnerStart},
	}
	files := map[string]string{}
	for name, l := range leases {
		f, err := writeLease(dir, l)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	// Not leases: left alone.
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644)

	t0 := time.Now()
	reaped, err := Reap(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reaped %d leases in %s", len(reaped), time.Since(t0))
	got := map[int]bool{}
	for _, l := range reaped {
		got[l.PID] = true
	}
	if len(reaped) != 3 || !got[orphan.Process.Pid] || !got[reused.Process.Pid] || !got[gonePID] {
		t.Errorf("reaped %+v, want the orphan's, the reused pid's and the gone server's leases", reaped)
	}
	if !groupGone(orphan.Process.Pid) {
		t.Error("the orphaned server's process group survived Reap")
	}
	if !groupAlive(kept.Process.Pid) || !groupAlive(reused.Process.Pid) {
		t.Error("Reap killed a server whose owner lives, or a process that reused a server's pid")
	}
	for name, f := range files {
		_, err := os.Stat(f)
		if exists := err == nil; exists != (name == "kept") {
			t.Errorf("lease %s: exists=%v after Reap", name, exists)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Error("Reap removed a file that is not a lease")
	}
	// A second Reap finds nothing more; a missing directory holds nothing.
	if again, err := Reap(dir); err != nil || len(again) != 0 {
		t.Errorf("second Reap: %v, %v", again, err)
	}
	if none, err := Reap(filepath.Join(dir, "missing")); err != nil || none != nil {
		t.Errorf("Reap of a missing directory: %v, %v", none, err)
	}
}

func TestStartTimeNamesAProcessAcrossPidReuse(t *testing.T) {
	a, err := startTime(os.Getpid())
	if err != nil || a == 0 {
		t.Fatalf("startTime(self) = %d, %v", a, err)
	}
	b, _ := startTime(os.Getpid())
	if a != b {
		t.Fatalf("start time moved: %d then %d", a, b)
	}
	pid, st := deadProcess(t)
	if alive(pid, st) {
		t.Fatalf("exited process %d reported alive", pid)
	}
	if !alive(os.Getpid(), a) || alive(os.Getpid(), a+1) {
		t.Fatal("alive does not compare start times")
	}
}

func TestReapRunsTheRemoveCommandOfAWrappedServer(t *testing.T) {
	dir := t.TempDir()
	deadOwner, deadOwnerStart := deadProcess(t)
	gonePID, goneStart := deadProcess(t) // the container's client, killed with its owner
	marker := filepath.Join(t.TempDir(), "removed")
	removed := Lease{PID: gonePID, StartTime: goneStart, Owner: deadOwner, OwnerStartTime: deadOwnerStart,
		Container: "lacuna-serve-000000000001", Remove: []string{"sh", "-c", `echo "$0" >> ` + marker, "lacuna-serve-000000000001"}}
	failing := Lease{PID: gonePID, StartTime: goneStart + 1, Owner: deadOwner, OwnerStartTime: deadOwnerStart,
		Container: "lacuna-serve-000000000002", Remove: []string{"sh", "-c", "echo engine unreachable >&2; exit 3"}}
	var files []string
	for _, l := range []Lease{removed, failing} {
		f, err := writeLease(dir, l)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	reaped, err := Reap(dir)
	if err == nil || !strings.Contains(err.Error(), "engine unreachable") || !strings.Contains(err.Error(), failing.Container) {
		t.Errorf("a failing remove command: %v", err)
	}
	if len(reaped) != 1 || reaped[0].Container != removed.Container {
		t.Errorf("reaped %+v, want the lease of %s only", reaped, removed.Container)
	}
	if got, _ := os.ReadFile(marker); string(got) != removed.Container+"\n" {
		t.Errorf("the remove command ran with %q", got)
	}
	if _, err := os.Stat(files[0]); err == nil {
		t.Error("the removed container's lease is left")
	}
	if _, err := os.Stat(files[1]); err != nil {
		t.Error("the lease of a container that could not be removed is gone: the next Reap cannot retry")
	}
}

// echoWrapper wraps a server's command line in `env`, and removes by
// running `true`.
type echoWrapper struct{}

func (echoWrapper) Wrap(name string, command, args []string) ([]string, []string, error) {
	return append(append([]string{"env", "INSTANCE=" + name}, command...), args...), []string{"true", name}, nil
}

func TestAWrappedSpecNeedsNoCommand(t *testing.T) {
	s := llamaSpec()
	s.Command = nil
	if err := s.Validate(); err == nil {
		t.Error("a spec with neither command nor wrapper is valid")
	}
	s.Wrapper = echoWrapper{}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	run, remove, err := s.wrap("lacuna-serve-x")
	if err != nil {
		t.Fatal(err)
	}
	if run[0] != "env" || run[1] != "INSTANCE=lacuna-serve-x" || run[2] != "-m" || remove[1] != "lacuna-serve-x" {
		t.Errorf("run %q, remove %q", run, remove)
	}
	a, b := llamaSpec(), llamaSpec()
	b.Wrapper = echoWrapper{}
	if a.Identity() != b.Identity() {
		t.Error("the wrapper changed the identity (Server names what runs)")
	}
	ka, _ := shareKey(a)
	kb, _ := shareKey(b)
	if ka == kb {
		t.Error("a wrapped and an unwrapped server share a pool entry")
	}
}
