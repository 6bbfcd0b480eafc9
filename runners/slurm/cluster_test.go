package slurm

// Tests against a real SLURM cluster: testdata/setup.sh starts a
// one-node cluster on this machine. Without sbatch or a controller that
// answers they skip, saying why, except under CI=true, where they fail.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func requireCluster(t *testing.T) {
	t.Helper()
	why := ""
	if _, err := exec.LookPath("sbatch"); err != nil {
		why = "sbatch is not installed: run runners/slurm/testdata/setup.sh as root to start a one-node SLURM cluster"
	} else if out, err := exec.Command("sinfo", "-h", "-o", "%T").CombinedOutput(); err != nil {
		why = fmt.Sprintf("no SLURM controller answers (sinfo: %v: %s): run runners/slurm/testdata/setup.sh as root", err, bytes.TrimSpace(out))
	} else if s := string(out); !strings.Contains(s, "idle") && !strings.Contains(s, "mix") && !strings.Contains(s, "alloc") {
		why = fmt.Sprintf("no SLURM node is up (sinfo: %q): run runners/slurm/testdata/setup.sh as root", strings.TrimSpace(s))
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// stateDir is a fresh state directory that slurmd (root, this machine)
// can write.
func stateDir(t *testing.T) string {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func countMarkers(t *testing.T, r *Runner, job *Job) map[string]bool {
	t.Helper()
	d, err := r.dirs(job)
	if err != nil {
		t.Fatal(err)
	}
	m, err := markers(d.done)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSweepOf100InstancesIsOneArrayPolledInBatches(t *testing.T) {
	requireCluster(t)
	dir := stateDir(t)
	minPoll := 500 * time.Millisecond
	r, err := New(dir, WithPollInterval(minPoll, 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	job := Job{
		Name:      "sweep100",
		Command:   `sleep 0.1; echo "ran $LACUNA_INSTANCE as task $SLURM_ARRAY_TASK_ID"`,
		Limit:     10,
		Resources: Resources{CPUs: 1, MemoryMB: 64, Time: 5 * time.Minute},
	}
	for i := range 100 {
		job.Instances = append(job.Instances, Instance{Name: fmt.Sprintf("i%03d", i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := r.Submit(ctx, job)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	t.Logf("100 instances in %s: %+v", elapsed.Round(10*time.Millisecond), st)
	if st.Sbatch != 1 || res.Submitted != 100 || st.Submitted != 100 || len(res.JobIDs) != 1 {
		t.Errorf("sbatch calls %d, submitted %d (stats %d), jobs %v: want one array of 100", st.Sbatch, res.Submitted, st.Submitted, res.JobIDs)
	}
	if st.Polls >= 100 {
		t.Errorf("%d polls for 100 tasks, want fewer than 100", st.Polls)
	}
	// One batched squeue per poll, no other squeue, and sacct never
	// needed: squeue still lists every finished task.
	if st.Squeue != st.Polls || st.Sacct != 0 {
		t.Errorf("squeue %d, sacct %d for %d polls: want one squeue per poll", st.Squeue, st.Sacct, st.Polls)
	}
	if maxPolls := int64(elapsed/minPoll) + 1; st.Polls > maxPolls {
		t.Errorf("%d polls in %s: more than one per interval (%d at most)", st.Polls, elapsed, maxPolls)
	}
	if n := len(countMarkers(t, r, &job)); n != 100 {
		t.Errorf("%d completion markers, want 100", n)
	}
	for _, ir := range res.Instances {
		if ir.State != StateCompleted || ir.ExitCode != 0 || ir.Reused || ir.Attached {
			t.Errorf("%s: %+v", ir.Name, ir)
		}
	}
	out, err := os.ReadFile(res.Instances[42].Stdout)
	if want := "ran i042 as task 42\n"; err != nil || string(out) != want {
		t.Errorf("instance 42's stdout %s: %q, %v; want %q", res.Instances[42].Stdout, out, err, want)
	}
	d, _ := r.dirs(&job)
	scripts, _ := filepath.Glob(filepath.Join(d.scripts, "*.sh"))
	if len(scripts) != 1 {
		t.Fatalf("scripts %v, want one", scripts)
	}
	if b, _ := os.ReadFile(scripts[0]); !strings.Contains(string(b), "#SBATCH --array=0-99%10\n") {
		t.Errorf("the script does not submit --array=0-99%%10:\n%s", b)
	}
	if recs, err := readJournal(d.journal); err != nil || len(recs) != 0 {
		t.Errorf("journal after completion: %d records, %v; want none", len(recs), err)
	}
	// Done: a second Submit reuses every instance and asks SLURM nothing.
	res, err = r.Submit(ctx, job)
	if err != nil || res.Reused != 100 || res.Submitted != 0 {
		t.Errorf("second Submit: reused %d, submitted %d, %v", res.Reused, res.Submitted, err)
	}
	if st2 := r.Stats(); st2.Sbatch != 1 || st2.Squeue != st.Squeue {
		t.Errorf("second Submit called SLURM: %+v", st2)
	}
}

func TestFailedInstanceIsReportedWithExitCodeAndLogAndRunsAgain(t *testing.T) {
	requireCluster(t)
	dir := stateDir(t)
	r, err := New(dir, WithPollInterval(200*time.Millisecond, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	flag := filepath.Join(dir, "broken")
	os.WriteFile(flag, nil, 0o644)
	job := Job{
		Name: "fails",
		Command: `echo "out of $LACUNA_INSTANCE"
if [ "$LACUNA_INSTANCE" = c ] && [ -e "$FLAG" ]; then echo "c is broken" >&2; exit 7; fi`,
		Env:       map[string]string{"FLAG": flag},
		Instances: []Instance{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}, {Name: "e"}},
		Limit:     5,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := r.Submit(ctx, job)
	var fe *FailedError
	if !errors.As(err, &fe) {
		t.Fatalf("Submit: %v, want a FailedError", err)
	}
	t.Logf("error: %v", err)
	if len(fe.Failed) != 1 {
		t.Fatalf("failed %+v, want only c", fe.Failed)
	}
	f := fe.Failed[0]
	if f.Name != "c" || f.State != StateFailed || f.ExitCode != 7 || !strings.Contains(f.LogTail, "c is broken") {
		t.Errorf("failed instance %+v", f)
	}
	if b, err := os.ReadFile(f.Stderr); err != nil || string(b) != "c is broken\n" {
		t.Errorf("its stderr log %s: %q, %v", f.Stderr, b, err)
	}
	for _, want := range []string{`"c"`, "FAILED with exit code 7", "c is broken", f.Stderr} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if n := len(countMarkers(t, r, &job)); n != 4 {
		t.Errorf("%d markers, want 4", n)
	}
	if res.Instances[0].State != StateCompleted {
		t.Errorf("a: %+v", res.Instances[0])
	}
	// Fixed: only c runs again.
	os.Remove(flag)
	res, err = r.Submit(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if res.Submitted != 1 || res.Reused != 4 || res.Instances[2].State != StateCompleted || res.Instances[2].Reused {
		t.Errorf("second Submit: submitted %d, reused %d, c %+v", res.Submitted, res.Reused, res.Instances[2])
	}
	if st := r.Stats(); st.Sbatch != 2 {
		t.Errorf("%d sbatch calls, want 2", st.Sbatch)
	}
}

// squeueStates returns the state of every task of job as squeue lists it.
func squeueStates(t *testing.T, job string) map[taskKey]taskStatus {
	t.Helper()
	out, err := exec.Command("squeue", "-h", "-r", "-t", "all", "-j", job, "-O", squeueFormat).Output()
	if err != nil {
		t.Fatalf("squeue -j %s: %v", job, err)
	}
	st, err := parseSqueue(string(out))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// journalJobID waits until the job's journal records a job id.
func journalJobID(t *testing.T, r *Runner, job *Job, timeout time.Duration) string {
	t.Helper()
	d, _ := r.dirs(job)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		recs, err := readJournal(d.journal)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if rec.JobID != "" {
				return rec.JobID
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no job id in %s after %s", d.journal, timeout)
	return ""
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestCancelledContextScancelsTheJobs(t *testing.T) {
	requireCluster(t)
	dir := stateDir(t)
	r, err := New(dir, WithPollInterval(200*time.Millisecond, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	job := Job{Name: "cancelled", Command: "sleep 120", Limit: 3}
	for i := range 6 {
		job.Instances = append(job.Instances, Instance{Name: fmt.Sprint("s", i)})
	}
	ctx, cancel := context.WithCancel(context.Background())
	type ret struct {
		res *Result
		err error
	}
	done := make(chan ret, 1)
	go func() {
		res, err := r.Submit(ctx, job)
		done <- ret{res, err}
	}()
	id := journalJobID(t, r, &job, 30*time.Second)
	waitFor(t, "a running task", 30*time.Second, func() bool {
		for _, s := range squeueStates(t, id) {
			if s.State == StateRunning {
				return true
			}
		}
		return false
	})
	cancel() // what SIGINT does in the CLI
	var got ret
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Submit did not return after its context was cancelled")
	}
	if !errors.Is(got.err, context.Canceled) {
		t.Errorf("Submit: %v, want context.Canceled", got.err)
	}
	if st := r.Stats(); st.Scancel != 1 {
		t.Errorf("%d scancel calls, want 1", st.Scancel)
	}
	waitFor(t, "every task CANCELLED", 60*time.Second, func() bool {
		st := squeueStates(t, id)
		if len(st) != 6 {
			return false
		}
		for _, s := range st {
			if s.State != StateCancelled {
				return false
			}
		}
		return true
	})
	if n := len(countMarkers(t, r, &job)); n != 0 {
		t.Errorf("%d markers of cancelled tasks", n)
	}
}

// resumeJob is the job that TestResumeAfterKill9OfTheSubmitter's child
// process submits and the test resumes: each instance leaves a start and
// an ok file named by its array job id, so the test counts its runs.
func resumeJob(name, runs string) Job {
	job := Job{
		Name:    name,
		Command: `touch "$RUNS/$LACUNA_INSTANCE.$SLURM_ARRAY_JOB_ID.start"; sleep 0.5; touch "$RUNS/$LACUNA_INSTANCE.$SLURM_ARRAY_JOB_ID.ok"`,
		Env:     map[string]string{"RUNS": runs},
		Limit:   4,
	}
	for i := range 24 {
		job.Instances = append(job.Instances, Instance{Name: fmt.Sprintf("r%02d", i)})
	}
	return job
}

type helperParams struct {
	State, Name, Runs string
}

// TestHelperSubmitter is the submitter that TestResumeAfterKill9OfTheSubmitter
// runs as a child process and kills.
func TestHelperSubmitter(t *testing.T) {
	env := os.Getenv("LACUNA_SLURM_SUBMIT_HELPER")
	if env == "" {
		t.Skip("helper process for TestResumeAfterKill9OfTheSubmitter")
	}
	var p helperParams
	if err := json.Unmarshal([]byte(env), &p); err != nil {
		t.Fatal(err)
	}
	r, err := New(p.State, WithPollInterval(250*time.Millisecond, time.Second), WithLeaseTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Submit(context.Background(), resumeJob(p.Name, p.Runs))
	t.Fatalf("Submit returned (%v): the test should have killed this process", err)
}

// runs counts, per instance, the start and ok files of its runs.
func runs(t *testing.T, dir string) (starts, oks map[string][]string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	starts, oks = map[string][]string{}, map[string][]string{}
	for _, e := range ents {
		parts := strings.Split(e.Name(), ".")
		if len(parts) != 3 {
			continue
		}
		if parts[2] == "start" {
			starts[parts[0]] = append(starts[parts[0]], parts[1])
		} else {
			oks[parts[0]] = append(oks[parts[0]], parts[1])
		}
	}
	return starts, oks
}

func TestResumeAfterKill9OfTheSubmitter(t *testing.T) {
	requireCluster(t)
	// The submitter is killed with its array half done. With scancel, the
	// array's tasks are killed too (a cluster that lost them): the resume
	// submits exactly the instances without a marker. Without, they go on
	// running: the resume re-attaches to them and submits nothing.
	for _, tc := range []struct {
		name          string
		cancelTheJobs bool
	}{
		{"jobs go on: re-attach", false},
		{"jobs cancelled: resubmit what did not finish", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := stateDir(t)
			runsDir := filepath.Join(dir, "runs")
			os.Mkdir(runsDir, 0o755)
			job := resumeJob("resume", runsDir)
			r, err := New(dir, WithPollInterval(250*time.Millisecond, time.Second), WithLeaseTTL(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}

			params, _ := json.Marshal(helperParams{State: dir, Name: job.Name, Runs: runsDir})
			child := exec.Command(os.Args[0], "-test.run=^TestHelperSubmitter$", "-test.v")
			child.Env = append(os.Environ(), "LACUNA_SLURM_SUBMIT_HELPER="+string(params))
			var childOut bytes.Buffer
			child.Stdout, child.Stderr = &childOut, &childOut
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			defer child.Process.Kill()
			id := journalJobID(t, r, &job, 30*time.Second)
			waitFor(t, "4 completion markers", 60*time.Second, func() bool { return len(countMarkers(t, r, &job)) >= 4 })
			child.Process.Kill() // SIGKILL: no scancel, no lease release
			child.Wait()
			killed := time.Now()
			if n := len(countMarkers(t, r, &job)); n == 24 {
				t.Fatalf("all instances done before the kill; child said:\n%s", childOut.String())
			}

			if tc.cancelTheJobs {
				if out, err := exec.Command("scancel", id).CombinedOutput(); err != nil {
					t.Fatalf("scancel %s: %v %s", id, err, out)
				}
				waitFor(t, "the killed submitter's tasks to end", 60*time.Second, func() bool {
					for _, s := range squeueStates(t, id) {
						if !s.State.Terminal() {
							return false
						}
					}
					return true
				})
			}
			before := countMarkers(t, r, &job)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			resumed := time.Now()
			res, err := r.Submit(ctx, job)
			if err != nil {
				t.Fatal(err)
			}
			st := r.Stats()
			t.Logf("killed after %d of 24 markers; resume started %s after the kill, took %s: %+v", len(before),
				resumed.Sub(killed).Round(10*time.Millisecond), time.Since(resumed).Round(10*time.Millisecond), st)

			if n := len(countMarkers(t, r, &job)); n != 24 {
				t.Errorf("%d markers after the resume, want 24", n)
			}
			var notDone []int
			for i, ir := range res.Instances {
				if ir.State != StateCompleted {
					t.Errorf("%s: %+v", ir.Name, ir)
				}
				if !before[ir.marker] {
					notDone = append(notDone, i)
				}
			}
			starts, oks := runs(t, runsDir)
			if tc.cancelTheJobs {
				// Submitted: exactly the instances without a marker, as
				// one array.
				if st.Sbatch != 1 || res.Submitted != len(notDone) || res.Reused != len(before) || res.Attached != 0 {
					t.Errorf("sbatch %d, submitted %d (want %d), reused %d (want %d), attached %d",
						st.Sbatch, res.Submitted, len(notDone), res.Reused, len(before), res.Attached)
				}
				newID := res.JobIDs[0]
				d, _ := r.dirs(&job)
				scripts, _ := filepath.Glob(filepath.Join(d.scripts, "*.sh"))
				var spec []string
				for _, s := range scripts {
					b, _ := os.ReadFile(s)
					for line := range strings.Lines(string(b)) {
						if a, ok := strings.CutPrefix(line, "#SBATCH --array="); ok {
							spec = append(spec, strings.TrimSpace(a))
						}
					}
				}
				slices.Sort(spec)
				want := []string{"0-23%4", arraySpec(notDone, 4)}
				slices.Sort(want)
				if !slices.Equal(spec, want) {
					t.Errorf("arrays submitted %v, want %v", spec, want)
				}
				for i, in := range job.Instances {
					want := []string{id}
					if slices.Contains(notDone, i) {
						want = []string{newID}
					}
					if !slices.Equal(oks[in.Name], want) {
						t.Errorf("%s completed in arrays %v, want %v", in.Name, oks[in.Name], want)
					}
				}
			} else {
				// Nothing submitted: every unfinished instance was
				// re-attached and ran once, in the killed submitter's
				// array.
				if st.Sbatch != 0 || res.Submitted != 0 || res.Attached+res.Reused != 24 || res.Attached == 0 {
					t.Errorf("sbatch %d, submitted %d, attached %d, reused %d: want 0 submitted, the rest attached",
						st.Sbatch, res.Submitted, res.Attached, res.Reused)
				}
				for name, s := range starts {
					if len(s) != 1 {
						t.Errorf("%s started %d times (jobs %v)", name, len(s), s)
					}
				}
			}
			// No instance completed twice.
			for _, in := range job.Instances {
				if len(oks[in.Name]) != 1 {
					t.Errorf("%s completed %d times (jobs %v)", in.Name, len(oks[in.Name]), oks[in.Name])
				}
			}
		})
	}
}

func TestSweepLargerThanMaxArraySizeIsSplitIntoArrays(t *testing.T) {
	requireCluster(t)
	dir := stateDir(t)
	r, err := New(dir, WithPollInterval(200*time.Millisecond, time.Second), WithMaxArraySize(4))
	if err != nil {
		t.Fatal(err)
	}
	job := Job{Name: "split", Command: `echo "$LACUNA_INDEX $LACUNA_INSTANCE $SLURM_ARRAY_TASK_ID"`, Limit: 4}
	for i := range 10 {
		job.Instances = append(job.Instances, Instance{Name: fmt.Sprint("x", i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := r.Submit(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Sbatch != 3 || len(res.JobIDs) != 3 {
		t.Errorf("sbatch %d, jobs %v: want arrays of 4, 4 and 2", st.Sbatch, res.JobIDs)
	}
	for i, ir := range res.Instances {
		b, err := os.ReadFile(ir.Stdout)
		if want := fmt.Sprintf("%d x%d %d\n", i, i, i%4); err != nil || string(b) != want {
			t.Errorf("instance %d printed %q (%v), want %q", i, b, err, want)
		}
	}
}

// Two Submits on one Runner share its polls; two Runners (two processes
// sharing the state directory) submitting the same job take turns on its
// lease, and the second reuses what the first completed.
func TestConcurrentSubmitsSharePollsAndTheLease(t *testing.T) {
	requireCluster(t)
	dir := stateDir(t)
	minPoll := 250 * time.Millisecond
	var logs bytes.Buffer // slog's handler serializes its writes
	a, err := New(dir, WithPollInterval(minPoll, time.Second), WithHolder("a"),
		WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(dir, WithPollInterval(minPoll, time.Second), WithHolder("b"))
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) Job {
		j := Job{Name: name, Command: "sleep 0.3", Limit: 4}
		for i := range 8 {
			j.Instances = append(j.Instances, Instance{Name: fmt.Sprint(i)})
		}
		return j
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type ret struct {
		res *Result
		err error
	}
	run := func(r *Runner, job Job) <-chan ret {
		ch := make(chan ret, 1)
		go func() {
			res, err := r.Submit(ctx, job)
			ch <- ret{res, err}
		}()
		return ch
	}
	start := time.Now()
	jobOne := mk("one")
	one, two := run(a, jobOne), run(a, mk("two"))
	journalJobID(t, a, &jobOne, 30*time.Second) // a holds job one's lease
	same := run(b, jobOne)
	r1, r2, r3 := <-one, <-two, <-same
	elapsed := time.Since(start)
	for _, r := range []ret{r1, r2, r3} {
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
	sa, sb := a.Stats(), b.Stats()
	t.Logf("in %s: runner a %+v; runner b %+v", elapsed.Round(10*time.Millisecond), sa, sb)
	if !strings.Contains(logs.String(), "msg=\"slurm: poll\" jobs=2 ") {
		t.Errorf("no poll of runner a asked for both jobs at once:\n%s", logs.String())
	}
	if maxPolls := int64(elapsed/minPoll) + 1; sa.Polls > maxPolls || sa.Squeue != sa.Polls {
		t.Errorf("runner a: %d polls, %d squeue calls in %s for two jobs: want one squeue per poll, one poll per interval (%d)",
			sa.Polls, sa.Squeue, elapsed, maxPolls)
	}
	if sa.Sbatch != 2 || sb.Sbatch != 0 || r3.res.Reused != 8 || r3.res.Submitted != 0 {
		t.Errorf("sbatch calls a %d, b %d; b reused %d, submitted %d: want a to submit both jobs and b to reuse job one",
			sa.Sbatch, sb.Sbatch, r3.res.Reused, r3.res.Submitted)
	}
}

// Slurm 22.05 without slurmdbd: squeue answers an error for ids it does
// not know, and sacct says accounting is disabled, once; the Runner
// then stops asking sacct.
func TestQueryOfJobsSqueueNoLongerListsAsksSacctOnce(t *testing.T) {
	requireCluster(t)
	r, err := New(stateDir(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		st, err := r.query(ctx, []string{"987654321"})
		if err != nil || len(st) != 0 {
			t.Fatalf("query of an unknown job: %v, %v", st, err)
		}
	}
	sacctWorks := exec.Command("sacct", "-n", "-X", "-j", "1").Run() == nil
	s := r.Stats()
	t.Logf("sacct usable: %v; %+v", sacctWorks, s)
	switch {
	case s.Squeue != 2:
		t.Errorf("%d squeue calls, want 2", s.Squeue)
	case sacctWorks && s.Sacct != 2:
		t.Errorf("accounting works, yet %d sacct calls, want 2", s.Sacct)
	case !sacctWorks && (s.Sacct != 1 || !r.noSacct.Load()):
		t.Errorf("accounting disabled: %d sacct calls (want 1), noSacct %v", s.Sacct, r.noSacct.Load())
	}
}

// A submitter that died inside sbatch (the job was made, its id never
// recorded) is resumed from the job's token: the resume finds the job
// with squeue and re-attaches instead of submitting again.
func TestSubmissionWhoseIDWasNeverRecordedIsFoundByItsToken(t *testing.T) {
	requireCluster(t)
	dir := stateDir(t)
	// An sbatch that submits, then fails before answering.
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	real, _ := exec.LookPath("sbatch")
	os.WriteFile(filepath.Join(bin, "sbatch"), []byte("#!/bin/sh\n"+shellQuote(real)+" \"$@\" >/dev/null\necho 'connection reset' >&2\nexit 1\n"), 0o755)
	for _, c := range []string{"squeue", "sacct", "scancel"} {
		p, _ := exec.LookPath(c)
		os.Symlink(p, filepath.Join(bin, c))
	}
	runsDir := filepath.Join(dir, "runs")
	os.Mkdir(runsDir, 0o755)
	job := resumeJob("token", runsDir)
	job.Instances = job.Instances[:8]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dying, err := New(dir, WithBinDir(bin), WithPollInterval(250*time.Millisecond, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dying.Submit(ctx, job); err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("Submit with the failing sbatch: %v", err)
	}
	r, err := New(dir, WithPollInterval(250*time.Millisecond, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Submit(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	t.Logf("resume: %+v", st)
	if st.Sbatch != 0 || res.Submitted != 0 || res.Attached+res.Reused != 8 {
		t.Errorf("sbatch %d, submitted %d, attached %d, reused %d: want the lost submission re-attached",
			st.Sbatch, res.Submitted, res.Attached, res.Reused)
	}
	_, oks := runs(t, runsDir)
	for _, in := range job.Instances {
		if len(oks[in.Name]) != 1 {
			t.Errorf("%s completed %d times", in.Name, len(oks[in.Name]))
		}
	}
}

// TestOnEndReportsEachInstanceAsItEnds: an instance that ends early is
// reported while its sibling still runs (the sibling waits for a file
// that only the report of the first creates), a failure with its exit
// code and log, and on a second Submit the reused ones at once; each
// instance exactly once.
func TestOnEndReportsEachInstanceAsItEnds(t *testing.T) {
	requireCluster(t)
	dir := stateDir(t)
	r, err := New(dir, WithPollInterval(200*time.Millisecond, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(dir, "gate")
	job := Job{
		Name: "onend",
		Command: `case "$LACUNA_INSTANCE" in
fast) exit 0 ;;
bad) echo "bad ends badly" >&2; exit 3 ;;
slow) for i in $(seq 600); do [ -e "$GATE" ] && exit 0; sleep 0.1; done; exit 9 ;;
esac`,
		Env:       map[string]string{"GATE": gate},
		Instances: []Instance{{Name: "fast"}, {Name: "slow"}, {Name: "bad"}},
	}
	var order []string
	ended := map[string]InstanceResult{}
	job.OnEnd = func(ir InstanceResult) {
		order = append(order, ir.Name)
		if _, dup := ended[ir.Name]; dup {
			t.Errorf("%s reported twice", ir.Name)
		}
		ended[ir.Name] = ir
		if ir.Name == "fast" {
			os.WriteFile(gate, nil, 0o644) // slow may end now
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = r.Submit(ctx, job)
	var fe *FailedError
	if !errors.As(err, &fe) || len(fe.Failed) != 1 || fe.Failed[0].Name != "bad" {
		t.Fatalf("Submit: %v, want bad failed", err)
	}
	if len(order) != 3 || slices.Index(order, "fast") > slices.Index(order, "slow") {
		t.Fatalf("reported %v: want all three, fast before slow (slow waits for fast's report)", order)
	}
	if ir := ended["slow"]; ir.State != StateCompleted {
		t.Errorf("slow: %+v (exit 9: it never saw the gate)", ir)
	}
	if ir := ended["bad"]; ir.State != StateFailed || ir.ExitCode != 3 || !strings.Contains(ir.LogTail, "bad ends badly") {
		t.Errorf("bad: %+v", ir)
	}
	// Again: fast and slow are reused (reported at once), bad runs again.
	order, ended = nil, map[string]InstanceResult{}
	r.Submit(ctx, job)
	if len(order) != 3 || !ended["fast"].Reused || !ended["slow"].Reused || ended["bad"].Reused {
		t.Errorf("second Submit reported %v: %+v", order, ended)
	}
}
