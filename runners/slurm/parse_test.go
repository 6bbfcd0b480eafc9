package slurm

import (
	"maps"
	"testing"
)

// The inputs are lines as slurm 22.05's squeue and sacct print them.
func TestParseSqueue(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  string
		want map[taskKey]taskStatus
	}{
		{"pending tasks of an array, one line each with -r",
			"151|2|151|PENDING|0|JobArrayTaskLimit|\n151|1|153|RUNNING|0|None|\n",
			map[taskKey]taskStatus{
				{"151", 2}: {State: StatePending, Reason: "JobArrayTaskLimit"},
				{"151", 1}: {State: StateRunning, Reason: "None"},
			}},
		{"exit status 7 is wait status 1792",
			"1|3|5|FAILED|1792|NonZeroExitCode|\n1|0|2|COMPLETED|0|None|\n",
			map[taskKey]taskStatus{
				{"1", 3}: {State: StateFailed, ExitCode: 7, Reason: "NonZeroExitCode"},
				{"1", 0}: {State: StateCompleted, Reason: "None"},
			}},
		{"killed by SIGTERM",
			"151|0|152|CANCELLED|15|None|\n",
			map[taskKey]taskStatus{{"151", 0}: {State: StateCancelled, Signal: 15, Reason: "None"}}},
		{"a job that is not an array",
			"11|N/A|11|TIMEOUT|0|TimeLimit|\n",
			map[taskKey]taskStatus{{"11", -1}: {State: StateTimeout, Reason: "TimeLimit"}}},
		{"empty", "", map[taskKey]taskStatus{}},
	} {
		got, err := parseSqueue(tc.out)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, err := parseSqueue("garbage line\n"); err == nil {
		t.Error("parseSqueue accepted a line without fields")
	}
}

func TestParseSacct(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  string
		want map[taskKey]taskStatus
	}{
		{"tasks, a pending range, cancelled by a user",
			"151_0|COMPLETED|0:0\n151_1|FAILED|7:0\n151_2|CANCELLED by 0|0:15\n151_[3-5,8%2]|PENDING|0:0\n",
			map[taskKey]taskStatus{
				{"151", 0}: {State: StateCompleted},
				{"151", 1}: {State: StateFailed, ExitCode: 7},
				{"151", 2}: {State: StateCancelled, Signal: 15},
				{"151", 3}: {State: StatePending},
				{"151", 4}: {State: StatePending},
				{"151", 5}: {State: StatePending},
				{"151", 8}: {State: StatePending},
			}},
		{"out of memory, node failure, a plain job",
			"200_4|OUT_OF_MEMORY|0:125\n200_5|NODE_FAIL|1:0\n201|PREEMPTED|0:0\n",
			map[taskKey]taskStatus{
				{"200", 4}:  {State: StateOutOfMemory, Signal: 125},
				{"200", 5}:  {State: StateNodeFail, ExitCode: 1},
				{"201", -1}: {State: StatePreempted},
			}},
	} {
		got, err := parseSacct(tc.out)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestStateTerminal(t *testing.T) {
	for s, want := range map[State]bool{
		StatePending: false, StateRunning: false, StateCompleting: false, "SUSPENDED": false, "REQUEUED": false,
		StateCompleted: true, StateFailed: true, StateCancelled: true, StateTimeout: true, StateOutOfMemory: true,
		StateNodeFail: true, StatePreempted: true, StateLost: true, StateBootFail: true, StateDeadline: true,
	} {
		if s.Terminal() != want {
			t.Errorf("%s.Terminal() = %v", s, !want)
		}
	}
	if normState("CANCELLED by 0") != StateCancelled || normState("running") != StateRunning {
		t.Error("normState")
	}
}
