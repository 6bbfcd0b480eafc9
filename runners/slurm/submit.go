package slurm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Result is what Submit knows of each instance when it returns.
type Result struct {
	Instances []InstanceResult // in Job.Instances order
	// JobIDs are the array jobs this call submitted or re-attached to.
	JobIDs []string
	// Submitted counts instances this call sent to sbatch; Attached,
	// instances running in an earlier submission that it tracked
	// instead; Reused, instances complete before it started.
	Submitted, Attached, Reused int
}

// InstanceResult is one instance's outcome.
type InstanceResult struct {
	Name  string
	Index int // in Job.Instances, and the array task id
	State State
	// ExitCode is the command's exit status when it exited; Signal the
	// signal that ended it, 0 when none.
	ExitCode, Signal int
	Reason           string // SLURM's reason, or why the task is lost
	// JobID is the task's SLURM id, "<array job id>_<index>"; empty for
	// a reused instance.
	JobID string
	// Stdout and Stderr are the task's log files.
	Stdout, Stderr string
	// LogTail is the end of the task's stderr (of its stdout when stderr
	// is empty), read when it did not complete.
	LogTail  string
	Reused   bool // its completion marker existed before Submit started
	Attached bool // it ran in an earlier submission, re-attached to
	marker   string
}

// FailedError is returned by Submit when instances ended without
// completing.
type FailedError struct {
	Job    string
	Total  int
	Failed []InstanceResult
}

func (e *FailedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "slurm job %s: %d of %d instances did not complete", e.Job, len(e.Failed), e.Total)
	for i, f := range e.Failed {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(e.Failed)-i)
			break
		}
		fmt.Fprintf(&b, "; %q (job %s) %s", f.Name, f.JobID, f.State)
		if f.Signal != 0 {
			fmt.Fprintf(&b, " by signal %d", f.Signal)
		} else if f.State != StateLost && f.State != StateCancelled {
			fmt.Fprintf(&b, " with exit code %d", f.ExitCode)
		}
		if f.Reason != "" && f.Reason != "None" {
			fmt.Fprintf(&b, " (%s)", f.Reason)
		}
		if f.Stderr != "" {
			fmt.Fprintf(&b, ", log %s", f.Stderr)
		}
		if t := strings.TrimSpace(f.LogTail); t != "" {
			fmt.Fprintf(&b, ": %s", lastLines(t, 3))
		}
	}
	return b.String()
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// journalRecord is one submission in a job's journal: written before
// sbatch runs (JobID empty) and again with the job id once sbatch
// answers.
type journalRecord struct {
	Token     string        `json:"token"`
	Job       string        `json:"job"`
	JobID     string        `json:"job_id,omitempty"`
	Array     string        `json:"array"`
	LogDir    string        `json:"log_dir"`
	Submitted time.Time     `json:"submitted"`
	Tasks     []journalTask `json:"tasks"`
}

type journalTask struct {
	Task   int    `json:"task"`  // array index
	Index  int    `json:"index"` // in Job.Instances when submitted
	Name   string `json:"name"`
	Marker string `json:"marker"`
}

// jobDirs are the paths of one job in the state directory.
type jobDirs struct {
	root, done, journal, scripts, lease, logs, work string
}

func (r *Runner) dirs(job *Job) (jobDirs, error) {
	sum := sha256.Sum256([]byte(job.Name))
	root := filepath.Join(r.stateDir, "jobs", safeName(job.Name, 60)+"-"+hex.EncodeToString(sum[:])[:12])
	d := jobDirs{
		root:    root,
		done:    filepath.Join(root, "done"),
		journal: filepath.Join(root, "journal"),
		scripts: filepath.Join(root, "scripts"),
		lease:   filepath.Join(root, "lease"),
		logs:    filepath.Join(root, "logs"),
		work:    root,
	}
	if job.LogDir != "" {
		d.logs = job.LogDir
	}
	if job.Dir != "" {
		d.work = job.Dir
	}
	for _, p := range []string{d.logs, d.work} {
		if !filepath.IsAbs(p) {
			return d, fmt.Errorf("slurm: job %s: %s is not absolute", job.Name, p)
		}
		if strings.ContainsAny(p, " \t\n\r%") {
			return d, fmt.Errorf("slurm: job %s: %q: SLURM's #SBATCH lines cannot name a path with whitespace or %%", job.Name, p)
		}
	}
	for _, p := range []string{d.done, d.journal, d.scripts, d.lease, d.logs, d.work} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return d, fmt.Errorf("slurm: %w", err)
		}
	}
	return d, nil
}

// Submit runs job's instances on the cluster and returns when every one
// has ended, or ctx is done.
//
// It first takes the job's lease (waiting while another process holds
// it), then skips the instances whose completion marker exists,
// re-attaches to the instances that an earlier submission recorded in
// the job's journal and that SLURM still lists as pending or running,
// and submits the rest as one array job (sbatch --parsable, one array
// task per instance, its index the instance's position in
// Job.Instances). The submission is journalled before sbatch runs and
// again with its job id, so a submitter killed at any point (kill -9
// included) is resumed by calling Submit again with the same Job: no
// completed instance runs again and no live task is submitted twice.
//
// While it waits, the Runner's tracker polls SLURM (see Runner). When ctx
// is done Submit cancels (scancel) every job it submitted or re-attached
// to and returns ctx's error. When instances end without completing it
// returns a *FailedError naming them with their exit codes and the end
// of their logs. The Result is returned with every error after
// validation, filled as far as Submit got.
func (r *Runner) Submit(ctx context.Context, job Job) (*Result, error) {
	if err := job.validate(); err != nil {
		return nil, err
	}
	d, err := r.dirs(&job)
	if err != nil {
		return nil, err
	}
	res := &Result{Instances: make([]InstanceResult, len(job.Instances))}
	for i, in := range job.Instances {
		res.Instances[i] = InstanceResult{Name: in.Name, Index: i, marker: job.markerName(in)}
	}

	lk := &Locker{Dir: d.lease, TTL: r.leaseTTL, Holder: r.holder}
	lease, err := lk.Acquire(ctx)
	if err != nil {
		return res, fmt.Errorf("slurm job %s: %w", job.Name, err)
	}
	kctx, stopKeep := context.WithCancel(ctx)
	lost := lease.KeepAlive(kctx)
	defer func() {
		stopKeep()
		for range lost { // let a renewal in flight finish before releasing
		}
		lease.Release()
	}()

	done, err := markers(d.done)
	if err != nil {
		return res, err
	}
	for i := range res.Instances {
		if ir := &res.Instances[i]; done[ir.marker] {
			ir.State, ir.Reused = StateCompleted, true
			res.Reused++
		}
	}

	// report calls job.OnEnd for the instances that have ended since it
	// last ran. The tracker updates res.Instances under r.mu.
	reported := make([]bool, len(res.Instances))
	report := func() {
		if job.OnEnd == nil {
			return
		}
		var ended []InstanceResult
		r.mu.Lock()
		for i := range res.Instances {
			if ir := res.Instances[i]; !reported[i] && ir.State.Terminal() {
				reported[i] = true
				ended = append(ended, ir)
			}
		}
		r.mu.Unlock()
		for _, ir := range ended {
			if ir.State != StateCompleted {
				ir.LogTail = logTail(ir.Stderr, ir.Stdout)
			}
			job.OnEnd(ir)
		}
	}
	report()
	defer report()

	w := &watch{doneDir: d.done, tasks: map[taskKey]*InstanceResult{}, missing: map[taskKey]int{}, changed: make(chan struct{}, 1)}
	records, err := r.reattach(ctx, &job, d, res, w)
	if err != nil {
		return res, err
	}

	var todo []scriptTask
	for i := range res.Instances {
		if ir := &res.Instances[i]; !ir.Reused && !ir.Attached {
			todo = append(todo, scriptTask{array: i, index: i, inst: job.Instances[i], marker: ir.marker})
		}
	}
	for _, chunk := range r.chunks(todo) {
		rec, err := r.sbatch(ctx, &job, d, chunk)
		if rec != nil {
			records = append(records, rec)
		}
		if err != nil {
			return res, err
		}
		res.JobIDs = append(res.JobIDs, rec.JobID)
		res.Submitted += len(chunk)
		for _, t := range chunk {
			ir := &res.Instances[t.index]
			ir.State = StatePending
			r.setLogs(ir, rec.JobID, t.array, rec.LogDir)
			w.tasks[taskKey{rec.JobID, t.array}] = ir
		}
	}
	r.stats.submitted.Add(int64(res.Submitted))
	r.stats.attached.Add(int64(res.Attached))
	r.stats.reused.Add(int64(res.Reused))

	report()
	if err := r.wait(ctx, w, lost, report); err != nil {
		return res, fmt.Errorf("slurm job %s: %w", job.Name, err)
	}

	var failed []InstanceResult
	for i := range res.Instances {
		ir := &res.Instances[i]
		if ir.State != StateCompleted {
			ir.LogTail = logTail(ir.Stderr, ir.Stdout)
			failed = append(failed, *ir)
		}
	}
	// Every task recorded for this job's instances has ended: completed
	// ones have markers, the others are submitted again by the next
	// Submit. Those records are history now. A record of other work (an
	// earlier command or environment: other markers) stays until that
	// work is done, for a Submit of it to re-attach to.
	current := make(map[string]bool, len(res.Instances))
	for _, ir := range res.Instances {
		current[ir.marker] = true
	}
	for _, rec := range records {
		settled := true
		for _, t := range rec.Tasks {
			if !current[t.Marker] && !fileExists(filepath.Join(d.done, t.Marker)) {
				settled = false
				break
			}
		}
		if settled {
			os.Remove(filepath.Join(d.journal, rec.Token+".json"))
		}
	}
	if len(failed) > 0 {
		return res, &FailedError{Job: job.Name, Total: len(res.Instances), Failed: failed}
	}
	return res, nil
}

// wait tracks w until its tasks have ended, ctx is done (then it cancels
// them), polling fails for good or the lease is lost, calling changed
// after each poll that changed a task's state.
func (r *Runner) wait(ctx context.Context, w *watch, lost <-chan error, changed func()) error {
	if len(w.tasks) == 0 {
		return nil
	}
	w.left = 0
	for _, ir := range w.tasks {
		if !ir.State.Terminal() {
			w.left++
		}
	}
	r.track(w)
	defer r.untrack(w)
	for {
		r.mu.Lock()
		left, perr := w.left, w.err
		r.mu.Unlock()
		if left == 0 {
			return nil
		}
		if perr != nil {
			return perr
		}
		select {
		case <-w.changed:
			changed()
		case <-ctx.Done():
			jobs := map[string]bool{}
			r.mu.Lock()
			for k := range w.tasks {
				jobs[k.job] = true
			}
			r.mu.Unlock()
			if err := r.scancel(ctx, slices.Sorted(maps.Keys(jobs))); err != nil {
				return fmt.Errorf("%w; scancel: %v", ctx.Err(), err)
			}
			return ctx.Err()
		case err, ok := <-lost:
			if ok {
				return fmt.Errorf("stopped tracking: %w", err)
			}
			lost = nil
		}
	}
}

// chunks splits tasks into the arrays to submit: one array whose task
// ids are the instances' indices when the highest is below the cluster's
// MaxArraySize, else arrays of at most MaxArraySize tasks numbered from 0.
func (r *Runner) chunks(tasks []scriptTask) [][]scriptTask {
	if len(tasks) == 0 {
		return nil
	}
	if tasks[len(tasks)-1].index < r.maxArray {
		return [][]scriptTask{tasks}
	}
	var out [][]scriptTask
	for c := range slices.Chunk(tasks, r.maxArray) {
		c = slices.Clone(c)
		for i := range c {
			c[i].array = i
		}
		out = append(out, c)
	}
	return out
}

func (r *Runner) setLogs(ir *InstanceResult, jobID string, task int, logDir string) {
	ir.JobID = fmt.Sprintf("%s_%d", jobID, task)
	ir.Stdout = filepath.Join(logDir, ir.JobID+".out")
	ir.Stderr = filepath.Join(logDir, ir.JobID+".err")
}

// reattach reads the job's journal and tracks, in w, the instances that
// an earlier submission still runs. It returns the records read.
func (r *Runner) reattach(ctx context.Context, job *Job, d jobDirs, res *Result, w *watch) ([]*journalRecord, error) {
	records, err := readJournal(d.journal)
	if err != nil || len(records) == 0 {
		return records, err
	}
	// A record without a job id: its submitter died before sbatch
	// answered. Its job, if sbatch made one, carries its token.
	var unknown []*journalRecord
	for _, rec := range records {
		if rec.JobID == "" {
			unknown = append(unknown, rec)
		}
	}
	if len(unknown) > 0 {
		ids, err := r.jobsByToken(ctx)
		if err != nil {
			return records, err
		}
		for _, rec := range unknown {
			if id, ok := ids[rec.Token]; ok {
				rec.JobID = id
				if err := writeJournal(d.journal, rec); err != nil {
					return records, err
				}
			}
		}
	}
	byMarker := make(map[string]*InstanceResult, len(res.Instances))
	for i := range res.Instances {
		if ir := &res.Instances[i]; !ir.Reused {
			byMarker[ir.marker] = ir
		}
	}
	type cand struct {
		ir     *InstanceResult
		logDir string
	}
	cands := map[taskKey]cand{}
	jobs := map[string]bool{}
	for _, rec := range records {
		if rec.JobID == "" {
			continue
		}
		for _, t := range rec.Tasks {
			if ir, ok := byMarker[t.Marker]; ok && !ir.Reused {
				// A listing of done/ may be stale (NFS caches
				// directories); a lookup is not.
				if fileExists(filepath.Join(d.done, t.Marker)) {
					ir.State, ir.Reused = StateCompleted, true
					res.Reused++
					continue
				}
				cands[taskKey{rec.JobID, t.Task}] = cand{ir, rec.LogDir}
				jobs[rec.JobID] = true
			}
		}
	}
	if len(cands) == 0 {
		return records, nil
	}
	st, err := r.query(ctx, slices.Sorted(maps.Keys(jobs)))
	if err != nil {
		return records, fmt.Errorf("slurm job %s: checking earlier submissions: %w", job.Name, err)
	}
	attachedJobs := map[string]bool{}
	for _, k := range slices.SortedFunc(maps.Keys(cands), func(a, b taskKey) int {
		return strings.Compare(a.String(), b.String())
	}) {
		c := cands[k]
		s, ok := st[k]
		switch {
		case c.ir.Attached || c.ir.Reused:
			// already settled by another record
		case ok && s.State == StateCompleted:
			// Its marker was written after we listed the markers.
			c.ir.State, c.ir.Reused = StateCompleted, true
			res.Reused++
		case ok && !s.State.Terminal():
			c.ir.State, c.ir.Attached, c.ir.Reason = s.State, true, s.Reason
			r.setLogs(c.ir, k.job, k.index, c.logDir)
			w.tasks[k] = c.ir
			res.Attached++
			attachedJobs[k.job] = true
		}
	}
	res.JobIDs = append(res.JobIDs, slices.Sorted(maps.Keys(attachedJobs))...)
	return records, nil
}

// jobsByToken maps the tokens of this user's jobs that SLURM still lists
// to their job ids (one squeue call).
func (r *Runner) jobsByToken(ctx context.Context) (map[string]string, error) {
	out, err := r.command(ctx, "squeue", "--me", "-h", "-t", "all", "-O", "ArrayJobID:|,Comment:|")
	if err != nil {
		return nil, err
	}
	ids := map[string]string{}
	for line := range strings.Lines(out) {
		id, comment, ok := strings.Cut(strings.TrimSpace(line), "|")
		if !ok {
			continue
		}
		if tok, ok := strings.CutPrefix(strings.TrimSuffix(comment, "|"), commentPrefix); ok {
			ids[tok] = strings.TrimSpace(id)
		}
	}
	return ids, nil
}

// sbatch journals and submits tasks as one array job. The record is
// returned once written, also when sbatch then fails: sbatch may have
// submitted the job before failing, and a later Submit finds it by its
// token.
func (r *Runner) sbatch(ctx context.Context, job *Job, d jobDirs, tasks []scriptTask) (*journalRecord, error) {
	token := time.Now().UTC().Format("20060102T150405") + "-" + randomHex(6)
	rec := &journalRecord{Token: token, Job: job.Name, LogDir: d.logs, Submitted: time.Now().UTC()}
	idx := make([]int, len(tasks))
	for i, t := range tasks {
		idx[i] = t.array
		rec.Tasks = append(rec.Tasks, journalTask{Task: t.array, Index: t.index, Name: t.inst.Name, Marker: t.marker})
	}
	rec.Array = arraySpec(idx, job.Limit)
	script := filepath.Join(d.scripts, token+".sh")
	if err := os.WriteFile(script, []byte(job.batchScript(tasks, token, d.work, d.logs, d.done)), 0o644); err != nil {
		return nil, fmt.Errorf("slurm: %w", err)
	}
	if err := writeJournal(d.journal, rec); err != nil {
		return nil, err
	}
	// sbatch is not interrupted by ctx: a job it submitted must get its
	// id recorded (and then be cancelled by the caller).
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	out, err := r.command(sctx, "sbatch", "--parsable", script)
	if err != nil {
		return rec, fmt.Errorf("slurm job %s: %w", job.Name, err)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return rec, fmt.Errorf("slurm job %s: sbatch answered %q, not a job id", job.Name, out)
	}
	rec.JobID = id
	r.log.Info("slurm: submitted", "job", job.Name, "id", id, "array", rec.Array)
	if err := writeJournal(d.journal, rec); err != nil {
		return rec, err
	}
	return rec, nil
}

func writeJournal(dir string, rec *journalRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(dir, rec.Token+".json", append(b, '\n')); err != nil {
		return fmt.Errorf("slurm: journal: %w", err)
	}
	return nil
}

// readJournal reads a job's journal records, oldest first.
func readJournal(dir string) ([]*journalRecord, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("slurm: journal: %w", err)
	}
	var recs []*journalRecord
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("slurm: journal: %w", err)
		}
		rec := new(journalRecord)
		if err := json.Unmarshal(b, rec); err != nil {
			return nil, fmt.Errorf("slurm: journal %s: %w", e.Name(), err)
		}
		recs = append(recs, rec)
	}
	slices.SortFunc(recs, func(a, b *journalRecord) int { return a.Submitted.Compare(b.Submitted) })
	return recs, nil
}

// markers lists the completion markers in dir.
func markers(dir string) (map[string]bool, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("slurm: markers: %w", err)
	}
	m := make(map[string]bool, len(ents))
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			m[e.Name()] = true
		}
	}
	return m, nil
}

// logTail returns the last few KiB of the first non-empty log.
func logTail(paths ...string) string {
	for _, p := range paths {
		if p == "" {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		const max = 2048
		fi, err := f.Stat()
		if err == nil && fi.Size() > max {
			f.Seek(-max, io.SeekEnd)
		}
		b, _ := io.ReadAll(io.LimitReader(f, max))
		f.Close()
		if s := strings.TrimSpace(string(b)); s != "" {
			return s
		}
	}
	return ""
}
