package slurm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A Job is one command template run once per instance: a for_each sweep.
// Submit sends the instances that have not completed as one job array.
type Job struct {
	// Name identifies the work across processes and resumes: the same
	// Name and the same instances (name, command, environment) are the
	// same work, whose completed instances are never run again. It is
	// also the SLURM job name (characters other than letters, digits,
	// '-', '_' and '.' written as '_'). Required.
	Name string
	// Command is a bash command line run once per instance, in Dir, with
	// LACUNA_INSTANCE set to the instance's name, LACUNA_INDEX to its
	// index in Instances (also its SLURM_ARRAY_TASK_ID unless the sweep
	// is larger than the cluster's MaxArraySize, see WithMaxArraySize),
	// and Env and the instance's Env exported over the environment sbatch
	// passes on (SLURM's default, --export=ALL: the submitter's; add
	// "--export=NONE" to SbatchArgs for a clean one). It succeeds when it
	// exits 0. Required.
	Command   string
	Instances []Instance // required, names unique
	Env       map[string]string
	// Dir is the working directory of each instance (absolute, on a path
	// the compute nodes see); default the job's directory in the state
	// directory.
	Dir string
	// LogDir receives each array task's stdout and stderr as
	// <array job id>_<index>.out and .err; default logs/ in the job's
	// directory. Absolute, on shared storage.
	LogDir    string
	Resources Resources
	// Limit is the array's throttle: at most Limit instances run at once
	// (--array=...%Limit). Zero: no limit.
	Limit int
	// SbatchArgs are further sbatch options, written as #SBATCH lines
	// (for instance "--qos=short", "--constraint=a100").
	SbatchArgs []string
	// OnEnd, when set, is called once for each instance as soon as it has
	// ended (completed, failed, cancelled or lost; reused when its marker
	// existed), with its result (LogTail read when it did not complete),
	// one call at a time, from Submit's goroutine. An instance still
	// running when Submit returns early (ctx done) is not reported. Not
	// part of the work's identity.
	OnEnd func(InstanceResult)
}

// An Instance is one element of a Job's sweep.
type Instance struct {
	Name string            // unique within the job; any text
	Env  map[string]string // exported for this instance only, over Job.Env
}

// Resources are what each instance asks of the cluster. Zero fields are
// not requested (the cluster's defaults apply).
type Resources struct {
	CPUs     int           // --cpus-per-task
	MemoryMB int           // --mem, in MiB, per node (one instance is one task on one node)
	GPUs     int           // --gres=gpu:N
	GPUType  string        // --gres=gpu:TYPE:N when GPUs > 0
	Time     time.Duration // --time, rounded up to a minute
	// Partition and Account name the partition (--partition) and the
	// account charged (--account).
	Partition string
	Account   string
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (j *Job) validate() error {
	if j.Name == "" {
		return errors.New("slurm: Job.Name is empty")
	}
	if strings.ContainsAny(j.Name, "\n\r") {
		return fmt.Errorf("slurm: Job.Name %q has a line break", j.Name)
	}
	if strings.TrimSpace(j.Command) == "" {
		return fmt.Errorf("slurm: job %s: Command is empty", j.Name)
	}
	if len(j.Instances) == 0 {
		return fmt.Errorf("slurm: job %s: no instances", j.Name)
	}
	if j.Limit < 0 {
		return fmt.Errorf("slurm: job %s: negative Limit %d", j.Name, j.Limit)
	}
	seen := make(map[string]bool, len(j.Instances))
	for _, in := range j.Instances {
		if seen[in.Name] {
			return fmt.Errorf("slurm: job %s: instance %q appears twice", j.Name, in.Name)
		}
		seen[in.Name] = true
		for k := range in.Env {
			if !envName.MatchString(k) {
				return fmt.Errorf("slurm: job %s: instance %q: bad variable name %q", j.Name, in.Name, k)
			}
		}
	}
	for k := range j.Env {
		if !envName.MatchString(k) {
			return fmt.Errorf("slurm: job %s: bad variable name %q", j.Name, k)
		}
	}
	for _, a := range j.SbatchArgs {
		if !strings.HasPrefix(a, "-") || strings.ContainsAny(a, "\n\r") {
			return fmt.Errorf("slurm: job %s: sbatch argument %q is not one option", j.Name, a)
		}
	}
	r := j.Resources
	if r.CPUs < 0 || r.MemoryMB < 0 || r.GPUs < 0 || r.Time < 0 {
		return fmt.Errorf("slurm: job %s: negative resources %+v", j.Name, r)
	}
	for _, s := range []string{r.GPUType, r.Partition, r.Account} {
		if strings.ContainsAny(s, " \t\n\r:,") {
			return fmt.Errorf("slurm: job %s: resource name %q has a space, colon or comma", j.Name, s)
		}
	}
	return nil
}

// markerName is the completion marker's file name for instance in:
// readable, collision-free and tied to what the instance runs, so that
// changing the command or the environment is new work.
func (j *Job) markerName(in Instance) string {
	h := sha256.New()
	write := func(s string) { fmt.Fprintf(h, "%d:%s", len(s), s) }
	write("lacuna-slurm-instance/1")
	write(in.Name)
	write(j.Command)
	write(j.Dir)
	for _, env := range []map[string]string{j.Env, in.Env} {
		keys := slices.Sorted(maps.Keys(env))
		write(strconv.Itoa(len(keys)))
		for _, k := range keys {
			write(k)
			write(env[k])
		}
	}
	return safeName(in.Name, 40) + "-" + hex.EncodeToString(h.Sum(nil))[:20]
}

// safeName keeps the first n bytes of s that are safe in a file name.
func safeName(s string, n int) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= n {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := strings.TrimLeft(b.String(), ".")
	if out == "" {
		out = "_"
	}
	return out
}

// arraySpec writes indices (sorted, distinct) as sbatch's --array value:
// ranges where consecutive, and the throttle.
func arraySpec(indices []int, limit int) string {
	var parts []string
	for i := 0; i < len(indices); {
		j := i
		for j+1 < len(indices) && indices[j+1] == indices[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(indices[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", indices[i], indices[j]))
		}
		i = j + 1
	}
	s := strings.Join(parts, ",")
	if limit > 0 {
		s += "%" + strconv.Itoa(limit)
	}
	return s
}

// slurmTime formats d as sbatch's days-hours:minutes:seconds, rounded up
// to a minute (SLURM's granularity).
func slurmTime(d time.Duration) string {
	m := int64((d + time.Minute - 1) / time.Minute)
	return fmt.Sprintf("%d-%02d:%02d:00", m/(24*60), m/60%24, m%60)
}

// shellQuote quotes s for bash as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// scriptTask is one array task of a batch script.
type scriptTask struct {
	array  int // SLURM_ARRAY_TASK_ID
	index  int // in Job.Instances
	inst   Instance
	marker string
}

// batchScript is the sbatch script that runs tasks as one array. The
// task whose SLURM_ARRAY_TASK_ID is a task's array index runs Command for its
// instance and, when Command exits 0, writes the instance's completion
// marker into doneDir: a temporary file renamed to its name, so a marker
// is either absent or whole. The script exits with Command's status (75
// when the marker cannot be written: the instance did not complete).
func (j *Job) batchScript(tasks []scriptTask, token, workDir, logDir, doneDir string) string {
	var b strings.Builder
	sb := func(format string, a ...any) { fmt.Fprintf(&b, "#SBATCH "+format+"\n", a...) }
	b.WriteString("#!/bin/bash\n# Written by lacuna (runners/slurm) for job " + strings.ReplaceAll(j.Name, "\n", " ") + ".\n")
	sb("--job-name=%s", safeName(j.Name, 120))
	idx := make([]int, len(tasks))
	for i, t := range tasks {
		idx[i] = t.array
	}
	sb("--array=%s", arraySpec(idx, j.Limit))
	sb("--output=%s/%%A_%%a.out", logDir)
	sb("--error=%s/%%A_%%a.err", logDir)
	sb("--chdir=%s", workDir)
	sb("--comment=%s", commentPrefix+token)
	sb("--ntasks=1")
	sb("--nodes=1")
	r := j.Resources
	if r.CPUs > 0 {
		sb("--cpus-per-task=%d", r.CPUs)
	}
	if r.MemoryMB > 0 {
		sb("--mem=%dM", r.MemoryMB)
	}
	if r.GPUs > 0 {
		if r.GPUType != "" {
			sb("--gres=gpu:%s:%d", r.GPUType, r.GPUs)
		} else {
			sb("--gres=gpu:%d", r.GPUs)
		}
	}
	if r.Time > 0 {
		sb("--time=%s", slurmTime(r.Time))
	}
	if r.Partition != "" {
		sb("--partition=%s", r.Partition)
	}
	if r.Account != "" {
		sb("--account=%s", r.Account)
	}
	for _, a := range j.SbatchArgs {
		sb("%s", a)
	}
	b.WriteString("set -u\n")
	for _, k := range slices.Sorted(maps.Keys(j.Env)) {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(j.Env[k]))
	}
	b.WriteString("case \"${SLURM_ARRAY_TASK_ID:-}\" in\n")
	for _, t := range tasks {
		name, _ := json.Marshal(t.inst.Name)
		fmt.Fprintf(&b, "%d)\n\tLACUNA_INSTANCE=%s\n\tLACUNA_INDEX=%d\n\tlacuna_marker=%s\n\tlacuna_json=%s\n", t.array,
			shellQuote(t.inst.Name), t.index, shellQuote(t.marker), shellQuote(string(name)))
		for _, k := range slices.Sorted(maps.Keys(t.inst.Env)) {
			fmt.Fprintf(&b, "\texport %s=%s\n", k, shellQuote(t.inst.Env[k]))
		}
		b.WriteString("\t;;\n")
	}
	b.WriteString("*)\n\techo \"lacuna: no instance for array task ${SLURM_ARRAY_TASK_ID:-(unset)}\" >&2\n\texit 2\n\t;;\nesac\n")
	b.WriteString("export LACUNA_INSTANCE LACUNA_INDEX\n")
	fmt.Fprintf(&b, "lacuna_done=%s\n", shellQuote(doneDir))
	fmt.Fprintf(&b, "bash -c %s\n", shellQuote(j.Command))
	b.WriteString(`rc=$?
if [ "$rc" -eq 0 ]; then
	tmp="$lacuna_done/.$lacuna_marker.${SLURM_JOB_ID:-0}.tmp"
	if printf '{"instance":%s,"job":"%s","task":%s,"host":"%s","finished":"%s"}\n' \
		"$lacuna_json" "${SLURM_ARRAY_JOB_ID:-}" "$SLURM_ARRAY_TASK_ID" "$(hostname)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$tmp" &&
		mv -f "$tmp" "$lacuna_done/$lacuna_marker"; then
		exit 0
	fi
	rm -f "$tmp"
	echo "lacuna: cannot write the completion marker $lacuna_done/$lacuna_marker" >&2
	exit 75
fi
exit "$rc"
`)
	return b.String()
}

// commentPrefix starts the --comment of every job Submit makes, followed
// by the submission's token: how a submission whose job id was never
// recorded (the submitter died inside sbatch) is found again.
const commentPrefix = "lacuna:"
