package filters_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/filters"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
)

// sample is one row of an imported evaluation: what C2 and C3 read of a
// solve node's rows.
type sample struct {
	TaskID string `json:"task_id"`
	Kind   string `json:"kind"`
	Model  string `json:"model"`
	Cell   string `json:"cell"`
	Passed bool   `json:"passed"`
}

// outcomes makes the samples of task k: one per entry of passed.
func outcomes(id, cell string, passed ...bool) []sample {
	var out []sample
	for _, p := range passed {
		out = append(out, sample{TaskID: id, Kind: "model", Model: "m", Cell: cell, Passed: p})
	}
	return out
}

// TestC2AndC3JudgeEachTaskOnItsSamples: C2 keeps a task its model fails
// at least min_failed of n times, C3 one its model solves at least
// min_passed times; tasks without samples are dropped with "no samples";
// a wrong number of samples, a knowledge cell in C2, another cell than
// C3's, calibration runs or two models are errors.
func TestC2AndC3JudgeEachTaskOnItsSamples(t *testing.T) {
	dir := t.TempDir()
	byID := taskstest.ReadTasks(t, taskstest.Run(t, dir, ""))
	var ids []string
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	a, b, c := ids[0], ids[1], ids[2]
	F, P := false, true
	cases := []struct {
		name    string
		node    string // the filter's block, samples = node.import.samples
		samples [][]sample
		keep    map[string]string // task → reason ("" kept); the rest "no samples"
		note    string
		err     string
	}{
		{
			name:    "c2 defaults",
			node:    `node "c2" "f" {`,
			samples: [][]sample{outcomes(a, "baseline", F, F, F), outcomes(b, "baseline", P, F, P), outcomes(c, "", P, F, F)},
			keep:    map[string]string{a: "", b: "C2: the model solved 2 of 3 samples without knowledge", c: ""},
			note:    "C2: 9 tasks, 2 kept (model solved 1 without knowledge; 6 without samples)",
		},
		{
			name:    "c2 n and min_failed",
			node:    "node \"c2\" \"f\" {\n  n = 2\n  min_failed = 1",
			samples: [][]sample{outcomes(a, "baseline", P, P), outcomes(b, "baseline", P, F)},
			keep:    map[string]string{a: "C2: the model solved 2 of 2 samples without knowledge", b: ""},
			note:    "C2: 9 tasks, 1 kept (model solved 1 without knowledge; 7 without samples)",
		},
		{
			name:    "c2 wrong number of samples",
			node:    `node "c2" "f" {`,
			samples: [][]sample{outcomes(a, "baseline", F, F, F), outcomes(b, "baseline", F, F)},
			err:     fmt.Sprintf("task %s has 2 samples, C2 wants n = 3", b),
		},
		{
			name:    "c2 knowledge cell",
			node:    `node "c2" "f" {`,
			samples: [][]sample{outcomes(a, "S+E", F, F, F)},
			err:     "written in cell S+E: C2 judges the model without knowledge",
		},
		{
			name:    "c2 calibration runs",
			node:    `node "c2" "f" {`,
			samples: [][]sample{{{TaskID: a, Kind: "reference", Passed: true}}},
			err:     "has a reference sample",
		},
		{
			name:    "c2 two models",
			node:    `node "c2" "f" {`,
			samples: [][]sample{outcomes(a, "baseline", F, F, F), {{TaskID: b, Kind: "model", Model: "other", Cell: "baseline"}}},
			err:     "solutions of several models (m, other)",
		},
		{
			name:    "c3 defaults",
			node:    `node "c3" "f" {`,
			samples: [][]sample{outcomes(a, "Full", F, F, P), outcomes(b, "Full", F, F, F)},
			keep:    map[string]string{a: "", b: "C3: the strong model solved 0 of 3 samples with the bundle (cell Full), want 1"},
			note:    "C3: 9 tasks, 1 kept (strong model solved too few of 1 with the bundle, cell Full; 7 without samples)",
		},
		{
			name:    "c3 keeps nothing",
			node:    `node "c3" "f" {`,
			samples: [][]sample{outcomes(a, "Full", F, F, F), outcomes(b, "Full", F, F, F)},
			keep:    map[string]string{a: "C3: the strong model solved 0 of 3 samples with the bundle (cell Full), want 1", b: "C3: the strong model solved 0 of 3 samples with the bundle (cell Full), want 1"},
			note:    "warning: C3 kept 0 of 9 tasks (is the strong model strong enough?); C3: 9 tasks, 0 kept (strong model solved too few of 2 with the bundle, cell Full; 7 without samples)",
		},
		{
			name:    "c3 another cell",
			node:    `node "c3" "f" {`,
			samples: [][]sample{outcomes(a, "Full", P), outcomes(b, "baseline", P, F, F)},
			err:     `task ` + b + ` has samples written in cell baseline: C3 judges the strong model given cell Full (set cell = "baseline" to judge those)`,
		},
		{
			name:    "c3 cell",
			node:    "node \"c3\" \"f\" {\n  cell = \"S+E\"",
			samples: [][]sample{outcomes(a, "S+E", F, P), outcomes(b, "", F)},
			keep:    map[string]string{a: "", b: "C3: the strong model solved 0 of 1 samples with the bundle (cell S+E), want 1"},
			note:    "C3: 9 tasks, 1 kept (strong model solved too few of 1 with the bundle, cell S+E; 7 without samples)",
		},
		{
			name:    "c3 samples of another model than the strong one",
			node:    "node \"c3\" \"f\" {\n  strong = model.su\n  under_test = model.sm\n  allow_self = false",
			samples: [][]sample{outcomes(a, "Full", P)},
			err:     "samples: written by m, not by the strong model u",
		},
		{
			name:    "c3 with the model under test, allowed",
			node:    "node \"c3\" \"f\" {\n  strong = model.sm\n  under_test = model.sm\n  allow_self = true",
			samples: [][]sample{outcomes(a, "Full", P)},
			keep:    map[string]string{a: ""},
			note:    "C3: 9 tasks, 1 kept (strong model solved too few of 0 with the bundle, cell Full; 8 without samples)",
		},
		{
			name:    "c3 min_passed",
			node:    "node \"c3\" \"f\" {\n  min_passed = 2",
			samples: [][]sample{outcomes(a, "Full", F, P, P), outcomes(b, "Full", P)},
			keep:    map[string]string{a: "", b: "C3: the strong model solved 1 of 1 samples with the bundle (cell Full), want 2"},
			note:    "C3: 9 tasks, 1 kept (strong model solved too few of 1 with the bundle, cell Full; 7 without samples)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var lines []string
			for _, group := range tc.samples {
				for _, s := range group {
					b, _ := json.Marshal(s)
					lines = append(lines, string(b))
				}
			}
			if err := os.WriteFile(filepath.Join(dir, "samples.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			src := taskstest.Pipeline + `
model "sm" { id = "m" }
model "su" { id = "u" }
node "import" "samples" {
  path    = "samples.jsonl"
  columns = { task_id = "string", kind = "string", model = "string", cell = "string", passed = "bool" }
}
` + tc.node + `
  tasks   = node.tasks.shapes
  samples = node.import.samples
}
`
			if strings.Contains(tc.node, `"c3"`) && !strings.Contains(tc.node, "strong") {
				src = strings.Replace(src, "  tasks   = node.tasks.shapes\n", "  tasks   = node.tasks.shapes\n  strong = model.sm\n  under_test = model.su\n", 1)
			}
			run := nodetest.RunErr(t, dir, src)
			res := run.Nodes["node."+strings.Fields(tc.node)[1][1:3]+".f"]
			if tc.err != "" {
				if res.Err == nil || !strings.Contains(res.Err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", res.Err, tc.err)
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			rows := nodetest.Read[filters.FilterRow](t, run, "node."+strings.Fields(tc.node)[1][1:3]+".f")
			if len(rows) != len(byID) {
				t.Fatalf("%d rows for %d tasks", len(rows), len(byID))
			}
			for _, r := range rows {
				if r.Row != byID[r.TaskID] {
					t.Errorf("%s: task columns differ from the task's", r.TaskID)
				}
				want, ok := tc.keep[r.TaskID]
				if !ok {
					want = "no samples"
				}
				if r.Keep != (want == "") || r.Reason != want {
					t.Errorf("%s: keep %v reason %q, want %q", r.TaskID, r.Keep, r.Reason, want)
				}
			}
			if got := run.Notes("done")["node."+strings.Fields(tc.node)[1][1:3]+".f"]; got != tc.note {
				t.Errorf("note %q, want %q", got, tc.note)
			}
		})
	}
}

// Bounds that cannot work are errors at load time, at the attribute.
func TestC2AndC3RejectInvalidBounds(t *testing.T) {
	for _, c := range []struct{ node, want string }{
		{"node \"c2\" \"f\" {\n  n = 3\n  min_failed = 4", "p.hcl:4,16-17: Invalid min_failed; min_failed must be between 1 and n (3)."},
		{"node \"c2\" \"f\" {\n  n = 0", "p.hcl:3,7-8: Invalid n; n must be at least 1."},
		{"node \"c3\" \"f\" {\n  min_passed = 0\n  strong = model.s\n  under_test = model.u", "p.hcl:3,16-17: Invalid min_passed; min_passed must be at least 1."},
		{"node \"c3\" \"f\" {\n  cell = \"full\"\n  strong = model.s\n  under_test = model.u", `p.hcl:3,10-16: Unknown cell; unknown cell "full"`},
		{"node \"c3\" \"f\" {\n  strong = model.u\n  under_test = model.u", "p.hcl:3,12-19: Strong model is the model under test; C3's strong model and the model under test are both u"},
		{"node \"c3\" \"f\" {\n  strong = model.s2\n  under_test = model.u", "p.hcl:3,12-20: Strong model is the model under test; C3's strong model and the model under test are both u"},
	} {
		dir := t.TempDir()
		src := "node \"import\" \"x\" { path = \"x.jsonl\" }\n" + c.node + `
  tasks   = node.import.x
  samples = node.import.x
}
model "s" { id = "strong" }
model "s2" { id = "u" }
model "u" { id = "u" }
`
		_, diags := engine.ExpandSource(filepath.Join(dir, "p.hcl"), []byte(src), dir, engine.Options{})
		if !strings.Contains(diags.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.node, diags, c.want)
		}
	}
}
