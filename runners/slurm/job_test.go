package slurm

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestArraySpecCompressesRuns(t *testing.T) {
	for _, tc := range []struct {
		idx   []int
		limit int
		want  string
	}{
		{[]int{0, 1, 2, 3}, 0, "0-3"},
		{[]int{0, 1, 2, 3}, 2, "0-3%2"},
		{[]int{5}, 4, "5%4"},
		{[]int{0, 2, 3, 4, 7, 9, 10}, 0, "0,2-4,7,9-10"},
	} {
		if got := arraySpec(tc.idx, tc.limit); got != tc.want {
			t.Errorf("arraySpec(%v, %d) = %q, want %q", tc.idx, tc.limit, got, tc.want)
		}
		back, err := parseIndexList(arraySpec(tc.idx, tc.limit))
		if err != nil || !slices.Equal(back, tc.idx) {
			t.Errorf("parseIndexList(arraySpec(%v)) = %v, %v", tc.idx, back, err)
		}
	}
}

func TestSlurmTimeRoundsUpToMinutes(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{30 * time.Second, "0-00:01:00"},
		{time.Minute, "0-00:01:00"},
		{90 * time.Minute, "0-01:30:00"},
		{49*time.Hour + 59*time.Second, "2-01:01:00"},
	} {
		if got := slurmTime(tc.d); got != tc.want {
			t.Errorf("slurmTime(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestJobValidation(t *testing.T) {
	ok := Job{Name: "j", Command: "true", Instances: []Instance{{Name: "a"}}}
	for _, tc := range []struct {
		name string
		edit func(*Job)
		want string // "" = valid
	}{
		{"valid", func(*Job) {}, ""},
		{"no name", func(j *Job) { j.Name = "" }, "Name is empty"},
		{"no command", func(j *Job) { j.Command = " " }, "Command is empty"},
		{"no instances", func(j *Job) { j.Instances = nil }, "no instances"},
		{"duplicate", func(j *Job) { j.Instances = []Instance{{Name: "a"}, {Name: "a"}} }, "twice"},
		{"bad env", func(j *Job) { j.Env = map[string]string{"A-B": "x"} }, "bad variable name"},
		{"bad instance env", func(j *Job) { j.Instances[0].Env = map[string]string{"1X": ""} }, "bad variable name"},
		{"bad sbatch arg", func(j *Job) { j.SbatchArgs = []string{"qos=x"} }, "not one option"},
		{"negative limit", func(j *Job) { j.Limit = -1 }, "negative Limit"},
		{"negative cpus", func(j *Job) { j.Resources.CPUs = -1 }, "negative resources"},
		{"partition with comma", func(j *Job) { j.Resources.Partition = "a,b" }, "comma"},
	} {
		j := ok
		j.Instances = []Instance{{Name: "a"}}
		tc.edit(&j)
		err := j.validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestMarkerNameChangesWithTheWorkOnly(t *testing.T) {
	base := Job{Name: "j", Command: "echo hi", Env: map[string]string{"A": "1"}, Instances: []Instance{{Name: "x/y z", Env: map[string]string{"B": "2"}}}}
	m0 := base.markerName(base.Instances[0])
	if !strings.HasPrefix(m0, "x_y_z-") || strings.ContainsAny(m0, "/ ") {
		t.Errorf("marker %q: want a readable, safe prefix", m0)
	}
	for _, tc := range []struct {
		name string
		edit func(*Job)
		same bool
	}{
		{"nothing", func(*Job) {}, true},
		{"resources", func(j *Job) { j.Resources = Resources{CPUs: 4, GPUs: 1, Time: time.Hour} }, true},
		{"limit and logs", func(j *Job) { j.Limit = 3; j.LogDir = "/elsewhere" }, true},
		{"command", func(j *Job) { j.Command = "echo ho" }, false},
		{"job env", func(j *Job) { j.Env = map[string]string{"A": "2"} }, false},
		{"instance env", func(j *Job) { j.Instances = []Instance{{Name: "x/y z", Env: map[string]string{"B": "3"}}} }, false},
		{"env moved between maps", func(j *Job) {
			j.Env = map[string]string{"A": "1", "B": "2"}
			j.Instances = []Instance{{Name: "x/y z"}}
		}, false},
		{"dir", func(j *Job) { j.Dir = "/w" }, false},
		{"instance name", func(j *Job) { j.Instances = []Instance{{Name: "x/y_z", Env: map[string]string{"B": "2"}}} }, false},
	} {
		j := base
		tc.edit(&j)
		if got := j.markerName(j.Instances[0]); (got == m0) != tc.same {
			t.Errorf("%s: marker %q vs %q, same=%v want %v", tc.name, got, m0, got == m0, tc.same)
		}
	}
}

// The batch script is run here with bash, as slurmd would run one array
// task, without a cluster.
func TestBatchScriptRunsTheInstanceOfItsTaskAndWritesItsMarker(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("bash is not installed")
		}
		t.Skip("bash is not installed")
	}
	dir := t.TempDir()
	done := filepath.Join(dir, "done")
	os.Mkdir(done, 0o755)
	names := []string{"plain", `it's "quoted" $(touch pwned) ü`, "fails", "exits zero early"}
	job := Job{
		Name: "script-test",
		Command: `printf '%s|%s|%s|%s' "$LACUNA_INSTANCE" "$LACUNA_INDEX" "$JOBVAR" "${INSTVAR:-}" > "out.$LACUNA_INDEX"
if [ "$LACUNA_INSTANCE" = fails ]; then echo broken >&2; exit 7; fi
if [ "$LACUNA_INSTANCE" = "exits zero early" ]; then exit 0; fi
true`,
		Env: map[string]string{"JOBVAR": "j'v"},
		Resources: Resources{CPUs: 2, MemoryMB: 1500, GPUs: 2, GPUType: "a100", Time: 90 * time.Minute,
			Partition: "gpu", Account: "proj"},
		Limit:      3,
		SbatchArgs: []string{"--qos=short"},
	}
	var tasks []scriptTask
	for i, n := range names {
		in := Instance{Name: n}
		if i == 1 {
			in.Env = map[string]string{"INSTVAR": "iv"}
		}
		job.Instances = append(job.Instances, in)
		// Sparse indices, as a resume submits them.
		tasks = append(tasks, scriptTask{array: i * 2, index: i, inst: in, marker: job.markerName(in)})
	}
	script := job.batchScript(tasks, "tok", dir, filepath.Join(dir, "logs"), done)
	for _, want := range []string{
		"#SBATCH --array=0,2,4,6%3\n", "#SBATCH --cpus-per-task=2\n", "#SBATCH --mem=1500M\n",
		"#SBATCH --gres=gpu:a100:2\n", "#SBATCH --time=0-01:30:00\n", "#SBATCH --partition=gpu\n",
		"#SBATCH --account=proj\n", "#SBATCH --qos=short\n", "#SBATCH --comment=lacuna:tok\n",
		"#SBATCH --output=" + dir + "/logs/%A_%a.out\n", "#SBATCH --job-name=script-test\n",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	path := filepath.Join(dir, "job.sh")
	os.WriteFile(path, []byte(script), 0o644)
	for i, tc := range []struct {
		wantRC  int
		wantOut string
	}{
		{0, "plain|0|j'v|"},
		{0, `it's "quoted" $(touch pwned) ü|1|j'v|iv`},
		{7, "fails|2|j'v|"},
		{0, "exits zero early|3|j'v|"},
	} {
		idx := tasks[i].array
		cmd := exec.Command("bash", path)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID="+strconv.Itoa(idx), "SLURM_ARRAY_JOB_ID=77", "SLURM_JOB_ID="+strconv.Itoa(100+idx))
		out, err := cmd.CombinedOutput()
		rc := 0
		if ee, ok := err.(*exec.ExitError); ok {
			rc = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if rc != tc.wantRC {
			t.Errorf("task %d: exit %d (%s), want %d", idx, rc, out, tc.wantRC)
		}
		got, _ := os.ReadFile(filepath.Join(dir, "out."+strconv.Itoa(i)))
		if string(got) != tc.wantOut {
			t.Errorf("task %d ran with %q, want %q", idx, got, tc.wantOut)
		}
		b, err := os.ReadFile(filepath.Join(done, tasks[i].marker))
		if tc.wantRC != 0 {
			if err == nil {
				t.Errorf("task %d failed but wrote its marker", idx)
			}
			continue
		}
		var m struct {
			Instance, Job string
			Task          int
		}
		if err := json.Unmarshal(b, &m); err != nil || m.Instance != names[i] || m.Job != "77" || m.Task != idx {
			t.Errorf("task %d marker %q (%v)", idx, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("an instance name was executed")
	}
	// A task id with no instance fails without running anything.
	cmd := exec.Command("bash", path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=1")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "no instance for array task 1") {
		t.Errorf("task 1 (not in the array): %v %s", err, out)
	}
	ents, _ := os.ReadDir(done)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary marker %s left", e.Name())
		}
	}
	if len(ents) != 3 {
		t.Errorf("%d markers, want 3", len(ents))
	}
}
