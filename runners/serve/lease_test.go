package serve

import (
	"os"
	"os/exec"
	"path/filepath"
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
