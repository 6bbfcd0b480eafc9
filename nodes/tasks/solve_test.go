package tasks_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
)

// TestSolveCalibrationRunsTheReferenceAndEveryMutant: the reference twice
// and the mutants of each task, through its harness; the references pass,
// the mutants fail except where the harness is known to be weak.
func TestSolveCalibrationRunsTheReferenceAndEveryMutant(t *testing.T) {
	run := taskstest.Run(t, "", taskstest.Calibration)
	byTask := taskstest.ReadTasks(t, run)
	samples := nodetest.Read[tasks.SampleRow](t, run, "node.solve.calibration")
	kinds := map[string]int{}
	refs := map[string]int{}
	for _, s := range samples {
		task, ok := byTask[s.TaskID]
		if !ok {
			t.Fatalf("sample %s of no task %s", s.SampleID, s.TaskID)
		}
		kinds[s.Kind]++
		if s.Kind == "reference" {
			refs[s.TaskID]++
		}
		shouldPass := s.Kind == "reference" || (s.Kind == "perturb" && taskstest.Weak[taskstest.Name(task)])
		if shouldPass != s.Passed {
			t.Errorf("%s %s: passed=%v layers %v compile %q runtime %q", taskstest.Name(task), s.Kind, s.Passed, s.FailedLayers, s.CompileError, s.RuntimeError)
		}
		if s.Kind == "syntax" && s.CompileError == "" {
			t.Errorf("%s syntax: no compile error", taskstest.Name(task))
		}
	}
	for _, k := range []string{"reference", "null", "sibling", "import", "perturb", "syntax"} {
		if kinds[k] == 0 {
			t.Errorf("no %s samples (kinds %v)", k, kinds)
		}
	}
	for id, task := range byTask {
		if refs[id] != 2 {
			t.Errorf("%s: %d reference runs, want 2", taskstest.Name(task), refs[id])
		}
	}
}

// TestSolveRunsGivenSolutions: rows of task_id and solution (sample_id
// optional) from any node, here an import, run through the harnesses.
func TestSolveRunsGivenSolutions(t *testing.T) {
	dir := t.TempDir()
	var clamp tasks.Row
	for _, task := range taskstest.ReadTasks(t, taskstest.Run(t, dir, "")) {
		if taskstest.Name(task) == "shapes.Clamp easy" {
			clamp = task
		}
	}
	if clamp.TaskID == "" {
		t.Fatal("no easy task for Clamp")
	}
	cases := []struct {
		sampleID, solution string
		wantID             string // the sample_id solve gives it
		passed, compiles   bool
	}{
		{"", clamp.Mask, "s0", true, true},
		{"", "", "s1", false, true},                                                 // the span left empty
		{"broken", strings.Replace(clamp.Mask, ")", "", 1), "broken", false, false}, // a syntax break
		// Reads the harness's key from the test binary's symbol table and
		// memory (the key signs the record): refused before the build.
		{"keytheft", strings.Replace(clamp.Mask, "\n\n", "\n"+keyTheft, 1), "keytheft", false, false},
		// A return the run never takes (defensive code) passes; one it
		// takes ends the scenario before its end marker and fails there.
		{"return-never", strings.Replace(clamp.Mask, "\n\n", "\n\nif false {\n\treturn\n}\n", 1), "return-never", true, true},
		{"return-early", clamp.Mask + "\nreturn", "return-early", false, true},
		// An import no module provides: the build is offline, so it is a
		// compile error, not a request to a proxy or to the host.
		{"evil", "import \"evil.example.com/shapes\"\n\n" + clamp.Mask, "evil", false, false},
	}
	var lines []string
	for _, c := range cases {
		row := map[string]string{"task_id": clamp.TaskID, "solution": c.solution, "sample_id": c.sampleID}
		b, _ := json.Marshal(row)
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, "solutions.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := taskstest.Run(t, dir, `
node "import" "solutions" { path = "solutions.jsonl" }
node "solve" "model" {
  tasks     = node.tasks.shapes
  solutions = node.import.solutions
}
`)
	if st := run.Nodes["node.tasks.shapes"].State; st != "cached" {
		t.Errorf("tasks %s on the second run, want cached", st)
	}
	got := nodetest.Read[tasks.SampleRow](t, run, "node.solve.model")
	if len(got) != len(cases) {
		t.Fatalf("%d samples, want %d", len(got), len(cases))
	}
	for i, c := range cases {
		s := got[i]
		if s.SampleID != c.wantID || s.Kind != "model" || s.TaskID != clamp.TaskID || s.Solution != c.solution {
			t.Errorf("case %d: sample %s kind %s task %s solution %q", i, s.SampleID, s.Kind, s.TaskID, s.Solution)
		}
		if s.Passed != c.passed || (s.CompileError == "") != c.compiles {
			t.Errorf("case %d (%s): passed=%v compile error %q, want passed=%v compiles=%v", i, c.wantID, s.Passed, s.CompileError, c.passed, c.compiles)
		}
		if c.wantID == "return-early" && !strings.Contains(s.Failures, "did not run to its end") {
			t.Errorf("an early return: failures %q, layers %v", s.Failures, s.FailedLayers)
		}
		if c.wantID == "evil" && !strings.Contains(s.CompileError, "module lookup disabled by GOPROXY=off") {
			t.Errorf("evil import: compile error %q", s.CompileError)
		}
		if c.wantID == "keytheft" && (!strings.Contains(s.CompileError, `imports "debug/elf", which a solution may not`) || !slices.Equal(s.FailedLayers, []string{"span"}) || strings.Contains(s.Output, "STOLEN")) {
			t.Errorf("key theft: compile error %q, layers %v, output %q", s.CompileError, s.FailedLayers, s.Output)
		}
	}
}

// keyTheft finds the harness's key by the test binary's symbol table and
// reads it through unsafe: before imports were checked and harness
// binaries stripped, it printed "STOLEN 32".
const keyTheft = `import (
	"debug/elf"
	"os"
	"strings"
	"unsafe"
)

if exe, err := os.Executable(); err == nil {
	if f, err := elf.Open(exe); err == nil {
		syms, err := f.Symbols()
		fmt.Println("symbols:", len(syms), err)
		for _, s := range syms {
			if strings.HasSuffix(s.Name, ".lacunaKey") {
				key := *(*[]byte)(unsafe.Pointer(uintptr(s.Value)))
				fmt.Println("STOLEN", len(key))
			}
		}
	}
}
`
