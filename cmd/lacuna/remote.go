package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/runners/slurm"
)

// runTime reads "2h", "90m" (Go durations) or SLURM's "HH:MM:SS".
func runTime(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	var h, m, sec int
	if _, err := fmt.Sscanf(s, "%d:%d:%d", &h, &m, &sec); err == nil {
		return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second, nil
	}
	return 0, fmt.Errorf("time %q: want a duration such as 2h or HH:MM:SS", s)
}

// remotes builds the Remote of each slurm runner of the pipeline: its
// instances run as `lacuna run --local --target ADDR` of the same
// pipeline, variables and store, each a task of a job array.
func remotes(l *loaded, pf *pipelineFlags) (map[string]engine.Remote, error) {
	out := map[string]engine.Remote{}
	var id [8]byte
	rand.Read(id[:])
	runID := hex.EncodeToString(id[:])
	for name, v := range l.graph.RunnerBlocks {
		rb, err := nodes.DecodeRunner(name, v)
		if err != nil {
			return nil, err
		}
		if rb.Kind != "slurm" {
			continue
		}
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		r, err := slurm.New(filepath.Join(l.store.Root(), "slurm"), slurm.WithPollInterval(env.slurmPoll, 0))
		if err != nil {
			return nil, fmt.Errorf("runner %s: %w", name, err)
		}
		res := slurm.Resources{CPUs: int(math.Ceil(rb.CPUs)), GPUs: rb.GPUs, GPUType: rb.GPUType, Partition: rb.Partition, Account: rb.Account}
		if rb.Memory != "" {
			b, err := rb.MemoryBytes()
			if err != nil {
				return nil, fmt.Errorf("runner %s: %w", name, err)
			}
			res.MemoryMB = int((b + 1<<20 - 1) >> 20)
		}
		if t := rb.Time; t != "" {
			if res.Time, err = runTime(t); err != nil {
				return nil, fmt.Errorf("runner %s: %w", name, err)
			}
		}
		args := []string{"run", "--local", "--store", l.store.Root(), "-j", strconv.Itoa(max(res.CPUs, 1))}
		for _, v := range pf.vars {
			args = append(args, "--var", v)
		}
		for _, f := range pf.varFiles {
			abs, err := filepath.Abs(f)
			if err != nil {
				return nil, err
			}
			args = append(args, "--var-file", abs)
		}
		cmd := shellQuote(exe)
		for _, a := range args {
			cmd += " " + shellQuote(a)
		}
		// An instance lacuna must recompute carries LACUNA_RECOMPUTE (this
		// run's id: its completion marker is then this run's, not an
		// earlier one's), and its task recomputes it.
		cmd += ` ${LACUNA_RECOMPUTE:+--recompute "$LACUNA_INSTANCE"} --target "$LACUNA_INSTANCE" ` + shellQuote(l.path)
		out[name] = &slurmRemote{runner: name, r: r, command: cmd, runID: runID, dir: filepath.Dir(l.path), res: res, limit: rb.Concurrency, env: rb.Env, sbatch: rb.Args}
	}
	return out, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// slurmRemote runs a node's instances as one job array (runners/slurm).
// The job's name is the node's address, so a resumed lacuna re-attaches
// to the array tasks an earlier one left running; an instance's key is in
// its environment, so a task done under another key is other work.
type slurmRemote struct {
	runner  string
	r       *slurm.Runner
	command string
	runID   string // this lacuna run's, for instances it recomputes
	dir     string
	res     slurm.Resources
	limit   int
	env     map[string]string
	sbatch  []string
}

func (s *slurmRemote) Dispatch(ctx context.Context, node string, insts []engine.RemoteInstance, ended func(int, error)) {
	job := slurm.Job{Name: "lacuna-" + node, Command: s.command, Dir: s.dir, Resources: s.res, Limit: s.limit, Env: s.env, SbatchArgs: s.sbatch}
	for _, in := range insts {
		env := map[string]string{"LACUNA_KEY": string(in.Key)}
		if in.Recompute {
			env["LACUNA_RECOMPUTE"] = s.runID
		}
		job.Instances = append(job.Instances, slurm.Instance{Name: in.Addr, Env: env})
	}
	// Each task's end is its instance's: what depends on it starts while
	// the rest of the array runs.
	job.OnEnd = func(ir slurm.InstanceResult) { ended(ir.Index, taskError(ir)) }
	res, err := s.r.Submit(ctx, job)
	for k := range insts {
		switch {
		case res == nil || k >= len(res.Instances):
			ended(k, err)
		case res.Instances[k].State.Terminal():
			ended(k, taskError(res.Instances[k])) // OnEnd said so already
		case err != nil:
			ended(k, err)
		}
	}
}

// taskError is why an array task did not complete, with the end of its
// log; nil when it completed.
func taskError(ir slurm.InstanceResult) error {
	if ir.State == slurm.StateCompleted {
		return nil
	}
	msg := fmt.Sprintf("slurm task %s ended %s", ir.JobID, ir.State)
	if ir.ExitCode != 0 {
		msg += fmt.Sprintf(" (exit status %d)", ir.ExitCode)
	}
	if ir.Reason != "" {
		msg += ": " + ir.Reason
	}
	if ir.Stderr != "" {
		msg += "; log " + ir.Stderr
	}
	if t := strings.TrimSpace(ir.LogTail); t != "" {
		msg += "\n" + t
	}
	return errors.New(msg)
}
