package slurm

import (
	"os"
	"path/filepath"
	"testing"
)

// A task that leaves squeue's answer is judged by its completion marker:
// complete when it exists, lost when it is still missing after lostAfter
// polls.
func TestWatchJudgesTasksThatLeftTheQueueByTheirMarkers(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "m-done"), []byte("{}\n"), 0o644)
	done := &InstanceResult{Name: "done", State: StateRunning, marker: "m-done"}
	gone := &InstanceResult{Name: "gone", State: StatePending, marker: "m-gone"}
	running := &InstanceResult{Name: "running", State: StatePending, marker: "m-running"}
	failed := &InstanceResult{Name: "failed", State: StateRunning, marker: "m-failed"}
	w := &watch{doneDir: dir, missing: map[taskKey]int{}, left: 4, tasks: map[taskKey]*InstanceResult{
		{"7", 0}: done, {"7", 1}: gone, {"7", 2}: running, {"7", 3}: failed,
	}}
	poll := map[taskKey]taskStatus{
		{"7", 2}: {State: StateRunning, Reason: "None"},
		{"7", 3}: {State: StateFailed, ExitCode: 3, Reason: "NonZeroExitCode"},
	}
	if !w.apply(poll, 2) {
		t.Fatal("first poll: no change reported")
	}
	if done.State != StateCompleted || gone.State != StatePending || running.State != StateRunning ||
		failed.State != StateFailed || failed.ExitCode != 3 || w.left != 2 {
		t.Fatalf("after one poll: done %s, gone %s, running %s, failed %+v, left %d", done.State, gone.State, running.State, failed, w.left)
	}
	if w.apply(poll, 2) != true || gone.State != StateLost || w.left != 1 {
		t.Fatalf("after two polls: gone %s, left %d", gone.State, w.left)
	}
	if w.apply(poll, 2) {
		t.Error("a poll with nothing new reported a change")
	}
}
