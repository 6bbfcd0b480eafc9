package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// State is a SLURM job state as squeue and sacct name it (the first word:
// sacct's "CANCELLED by 0" is CANCELLED), or StateLost.
type State string

// The states Submit reports. Any other state SLURM reports is kept as
// written and counts as not terminal.
const (
	StatePending     State = "PENDING"
	StateRunning     State = "RUNNING"
	StateCompleting  State = "COMPLETING"
	StateCompleted   State = "COMPLETED"
	StateFailed      State = "FAILED"
	StateCancelled   State = "CANCELLED"
	StateTimeout     State = "TIMEOUT"
	StateOutOfMemory State = "OUT_OF_MEMORY"
	StateNodeFail    State = "NODE_FAIL"
	StatePreempted   State = "PREEMPTED"
	StateBootFail    State = "BOOT_FAIL"
	StateDeadline    State = "DEADLINE"
	// StateLost: the task left SLURM's queue (or was never seen in it)
	// with no final state known to squeue or sacct and no completion
	// marker.
	StateLost State = "LOST"
)

// Terminal reports whether the task has ended: it will not run again
// unless resubmitted.
func (s State) Terminal() bool {
	switch s {
	case StateCompleted, StateFailed, StateCancelled, StateTimeout, StateOutOfMemory,
		StateNodeFail, StatePreempted, StateBootFail, StateDeadline, StateLost, "REVOKED", "SPECIAL_EXIT":
		return true
	}
	return false
}

// taskKey names one array task: the array's job id and the task's index.
type taskKey struct {
	job   string
	index int
}

func (k taskKey) String() string { return fmt.Sprintf("%s_%d", k.job, k.index) }

// taskStatus is what one poll learnt about one array task.
type taskStatus struct {
	State    State
	ExitCode int // the command's exit status when it exited
	Signal   int // the signal that ended it, 0 when none
	Reason   string
}

// squeueFormat is the -O field list parseSqueue reads; Reason is last as
// the one free-text field.
const squeueFormat = "ArrayJobID:|,ArrayTaskID:|,JobID:|,State:|,exit_code:|,Reason:|"

// parseSqueue reads `squeue -h -r -t all -O squeueFormat` output. With -r
// every array task is one line, pending ones included.
func parseSqueue(out string) (map[taskKey]taskStatus, error) {
	res := make(map[taskKey]taskStatus)
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.SplitN(line, "|", 6)
		if len(f) < 6 {
			return nil, fmt.Errorf("squeue: unexpected line %q", line)
		}
		for i := range 5 {
			f[i] = strings.TrimSpace(f[i])
		}
		job, idx := f[0], -1
		if job == "" || job == "(null)" || job == "0" {
			job = f[2]
		}
		if n, err := strconv.Atoi(f[1]); err == nil {
			idx = n
		}
		st := taskStatus{State: normState(f[3]), Reason: strings.TrimSuffix(strings.TrimSpace(f[5]), "|")}
		if f[4] != "" {
			// squeue prints the wait status as the kernel returns it.
			ws, err := strconv.Atoi(f[4])
			if err != nil {
				return nil, fmt.Errorf("squeue: exit code %q in %q", f[4], line)
			}
			st.ExitCode, st.Signal = ws>>8&0xff, ws&0x7f
		}
		res[taskKey{job, idx}] = st
	}
	return res, nil
}

// sacctFormat is the --format parseSacct reads.
const sacctFormat = "JobID,State,ExitCode"

// parseSacct reads `sacct -n -P -X -o sacctFormat` output. Array tasks not
// yet started are one line with a bracketed index list ("151_[5-9%2]").
func parseSacct(out string) (map[taskKey]taskStatus, error) {
	res := make(map[taskKey]taskStatus)
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) < 3 {
			return nil, fmt.Errorf("sacct: unexpected line %q", line)
		}
		st := taskStatus{State: normState(f[1])}
		if code, sig, ok := strings.Cut(f[2], ":"); ok {
			st.ExitCode, _ = strconv.Atoi(code)
			st.Signal, _ = strconv.Atoi(sig)
		}
		id := f[0]
		job, rest, isArray := strings.Cut(id, "_")
		if !isArray {
			res[taskKey{id, -1}] = st
			continue
		}
		if strings.HasPrefix(rest, "[") {
			idx, err := parseIndexList(strings.Trim(rest, "[]"))
			if err != nil {
				return nil, fmt.Errorf("sacct: job id %q: %w", id, err)
			}
			for _, i := range idx {
				res[taskKey{job, i}] = st
			}
			continue
		}
		i, err := strconv.Atoi(rest)
		if err != nil {
			continue // a heterogeneous job's component or another form: not ours
		}
		res[taskKey{job, i}] = st
	}
	return res, nil
}

// parseIndexList reads "0-4,7,9-11%2" (the throttle is ignored).
func parseIndexList(s string) ([]int, error) {
	s, _, _ = strings.Cut(s, "%")
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("index %q", part)
		}
		b := a
		if isRange {
			// "0-99:2" has a step.
			hi, step, hasStep := strings.Cut(hi, ":")
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("index %q", part)
			}
			inc := 1
			if hasStep {
				if inc, err = strconv.Atoi(step); err != nil || inc <= 0 {
					return nil, fmt.Errorf("index %q", part)
				}
			}
			for i := a; i <= b; i += inc {
				out = append(out, i)
			}
			continue
		}
		out = append(out, b)
	}
	return out, nil
}

func normState(s string) State {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, ' '); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimRight(s, "+")
	return State(strings.ToUpper(s))
}
