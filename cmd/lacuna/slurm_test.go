package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// needSlurm skips unless a SLURM controller answers (CI=true: fails;
// runners/slurm/testdata/setup.sh starts a one-node cluster).
func needSlurm(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("sbatch")
	if err == nil {
		err = exec.Command("sinfo", "-h").Run()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no SLURM cluster (%v): run runners/slurm/testdata/setup.sh as root", err)
		}
		t.Skipf("no SLURM cluster (%v): runners/slurm/testdata/setup.sh starts one", err)
	}
}

const slurmSweep = `
runner "cluster" {
  kind        = "slurm"
  concurrency = 8
  cpus        = 1
  memory      = "256M"
  time        = "10m"
}
node "import" "sweep" {
  for_each = toset([for i in range(%d) : tostring(i)])
  runner   = runner.cluster
  path     = "data/${each.key}.jsonl"
}
`

// TestSlurmRunnerRunsASweepAsOneArrayAndResumesAfterKill9 runs a
// 100-instance sweep on the real one-node cluster as one job array,
// kills lacuna with SIGKILL while the array runs, and resumes: the
// resumed run re-attaches to what is still running and submits nothing
// again, so every instance runs exactly once (one log per array task, one
// array job), and every result is in the store.
func TestSlurmRunnerRunsASweepAsOneArrayAndResumesAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("submits 100 SLURM jobs")
	}
	needSlurm(t)
	const n = 100
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "data"), 0o755)
	for i := range n {
		os.WriteFile(filepath.Join(dir, "data", fmt.Sprintf("%d.jsonl", i)), fmt.Appendf(nil, "{\"i\": %d}\n", i), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "p.hcl"), fmt.Appendf(nil, slurmSweep, n), 0o644)
	store := filepath.Join(dir, ".lacuna")
	markers := func() int {
		m, _ := filepath.Glob(filepath.Join(store, "slurm", "jobs", "*", "done", "*"))
		return len(m)
	}

	deadline := time.Now().Add(3 * time.Minute)
	killMidRun(t, dir, []string{"LACUNA_SLURM_POLL=300ms"}, func(string) bool {
		return markers() >= 15 || time.Now().After(deadline)
	}, "run", "p.hcl", "--json")
	killedAt := markers()
	if killedAt >= n {
		t.Fatalf("the sweep finished before lacuna could be killed")
	}

	start := time.Now()
	r := lacuna(t, dir, "run", "p.hcl", "--json")
	if r.code != 0 {
		t.Fatalf("resumed run: %s%s", r.stdout, r.stderr)
	}
	s := summary(t, r.stdout)
	if s["executed"].(float64)+s["cached"].(float64) != n {
		t.Errorf("resumed summary %v: want all %d", s, n)
	}
	logs, _ := filepath.Glob(filepath.Join(store, "slurm", "jobs", "*", "logs", "*.out"))
	arrays := map[string]bool{}
	for _, l := range logs {
		id, _, _ := strings.Cut(filepath.Base(l), "_")
		arrays[id] = true
	}
	t.Logf("killed with %d of %d done; the resume took %v; %d task logs in %d array job(s)", killedAt, n, time.Since(start).Round(time.Second), len(logs), len(arrays))
	if len(logs) != n || len(arrays) != 1 {
		t.Errorf("%d task logs in %d array jobs: want each of the %d instances run once, in one array", len(logs), len(arrays), n)
	}
	// Everything is in the store: a third run has nothing to do.
	s = summary(t, lacuna(t, dir, "run", "p.hcl", "--json").stdout)
	if s["cached"] != float64(n) {
		t.Errorf("third run %v: want all cached", s)
	}
}

// TestSlurmRecomputeRunsTheInstanceAgain: `run --recompute ADDR` of an
// instance on a slurm runner submits it again and its task recomputes it
// (it does not answer from the store, nor reuse the completion of the
// first run), also when asked again; a plain run after them submits
// nothing.
func TestSlurmRecomputeRunsTheInstanceAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("submits SLURM jobs")
	}
	needSlurm(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "data"), 0o755)
	for i := range 2 {
		os.WriteFile(filepath.Join(dir, "data", fmt.Sprintf("%d.jsonl", i)), fmt.Appendf(nil, "{\"i\": %d}\n", i), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "p.hcl"), fmt.Appendf(nil, slurmSweep, 2), 0o644)
	logs := func() int {
		l, _ := filepath.Glob(filepath.Join(dir, ".lacuna", "slurm", "jobs", "*", "logs", "*.out"))
		return len(l)
	}
	for _, step := range []struct {
		args           []string
		executed, logs int
	}{
		{[]string{"run", "p.hcl", "--json"}, 2, 2},
		{[]string{"run", "p.hcl", "--json", "--recompute", `node.import.sweep["1"]`}, 1, 3},
		{[]string{"run", "p.hcl", "--json", "--recompute", `node.import.sweep["0"]`, "--recompute", `node.import.sweep["1"]`}, 2, 5},
		{[]string{"run", "p.hcl", "--json"}, 0, 5},
	} {
		r := lacuna(t, dir, step.args...)
		if r.code != 0 {
			t.Fatalf("%v: %s%s", step.args, r.stdout, r.stderr)
		}
		if s := summary(t, r.stdout); s["executed"] != float64(step.executed) || logs() != step.logs {
			t.Errorf("%v: summary %v and %d task logs; want %d executed and %d task logs in all", step.args, s, logs(), step.executed, step.logs)
		}
	}
}
