package trainingdata_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/trainingdata"
)

// TestRAFTShowsTheOracleAmongDistractors: oracle_fraction of the rows
// (rounded half up) show the task's own bundle among k distractors, the
// rest k+1 distractors and no oracle; distractors come from the task's
// library first; the prompt shows the documents in the documents
// column's order and never the example the task was cut from; the rows
// are SFT's otherwise, and the same seed writes the same rows.
func TestRAFTShowsTheOracleAmongDistractors(t *testing.T) {
	dir := t.TempDir()
	head, kept := fixture(t, dir, libraries)
	byID := map[string]int{}
	for i, k := range kept {
		byID[k.TaskID] = i
	}
	libOf := map[string]string{}
	for _, a := range libraries {
		libOf[a.id()] = a.lib
	}
	cases := []struct {
		name, body string
		k          int
		p          float64
	}{
		{"RAFT's defaults", ``, 3, 0.8},
		{"the same seed", `seed = 0`, 3, 0.8},
		{"another seed", `seed = 5`, 3, 0.8},
		{"one distractor, half the oracles", "distractors = 1\n  oracle_fraction = 0.5", 1, 0.5},
		{"more distractors than a library has", `distractors = 6`, 6, 0.8},
		{"never the oracle", `oracle_fraction = 0`, 3, 0},
		// alpha.Flatten's third example is ExampleChunk, the source of
		// alpha.Chunk's tasks: shown nowhere in their prompts.
		{"every example", "distractors = 6\n  max_examples = 3", 6, 0.8},
	}
	src := head + "node \"task_split\" \"s\" { tasks = [node.import.tasks] }\n" +
		"node \"sft_data\" \"s\" {\n  split = node.task_split.s\n  bundles = " + allBundles + "\n}\n"
	for i, c := range cases {
		src += fmt.Sprintf("node \"raft_data\" \"c%d\" {\n  split   = node.task_split.s\n  bundles = %s\n  %s\n}\n", i, allBundles, c.body)
	}
	run := nodetest.Run(t, dir, src)
	sft := nodetest.Read[trainingdata.SFTRow](t, run, "node.sft_data.s")
	outs := make([][]trainingdata.RAFTRow, len(cases))
	for i, c := range cases {
		rows := nodetest.Read[trainingdata.RAFTRow](t, run, fmt.Sprintf("node.raft_data.c%d", i))
		outs[i] = rows
		t.Run(c.name, func(t *testing.T) {
			if len(rows) != len(sft) {
				t.Fatalf("%d rows, %d SFT rows", len(rows), len(sft))
			}
			present := 0
			for j, r := range rows {
				task := kept[byID[r.TaskID]]
				s := sft[j]
				if r.TaskID != s.TaskID || r.Completion != s.Completion || r.System != s.System || r.Split != "train" || r.Cell != "Full" {
					t.Errorf("%s: row differs from SFT's: %+v", r.TaskID, r.SFTRow)
				}
				if len(r.Documents) != c.k+1 || len(slices.Compact(slices.Sorted(slices.Values(r.Documents)))) != len(r.Documents) {
					t.Errorf("%s: documents %v, want %d distinct", r.TaskID, r.Documents, c.k+1)
				}
				if slices.Contains(r.Documents, task.APIID) != r.OraclePresent {
					t.Errorf("%s: oracle_present %v, documents %v", r.TaskID, r.OraclePresent, r.Documents)
				}
				if r.OraclePresent {
					present++
				}
				// Distractors from the task's library first: a library of
				// n APIs gives n-1 of them.
				sameLib := 0
				for _, d := range r.Documents {
					if d != task.APIID && libOf[d] == task.Library {
						sameLib++
					}
				}
				nLib := 0
				for _, a := range libraries {
					if a.lib == task.Library {
						nLib++
					}
				}
				if want := min(len(r.Documents)-btoi(r.OraclePresent), nLib-1); sameLib != want {
					t.Errorf("%s: %d distractors of library %s, want %d: %v", r.TaskID, sameLib, task.Library, want, r.Documents)
				}
				// The prompt shows the documents in order.
				at := 0
				for _, d := range r.Documents {
					sig := "source of " + d[strings.LastIndex(d, ".")+1:] + " "
					k := strings.Index(r.Prompt[at:], sig)
					if k < 0 {
						t.Errorf("%s: document %s not shown after position %d:\n%s", r.TaskID, d, at, r.Prompt)
						break
					}
					at += k + len(sig)
				}
				if strings.Contains(r.Prompt, "the task's source: "+task.Qualified[strings.LastIndex(task.Qualified, ".")+1:]+"\n") {
					t.Errorf("%s: a document shows the example the task was cut from", r.TaskID)
				}
			}
			if want := int(c.p*float64(len(rows)) + 0.5); present != want {
				t.Errorf("%d rows with the oracle, want %d", present, want)
			}
		})
	}
	t.Run("seeded", func(t *testing.T) {
		if fmt.Sprint(outs[0]) != fmt.Sprint(outs[1]) {
			t.Errorf("seed 0 written twice gave other rows")
		}
		if fmt.Sprint(outs[0]) == fmt.Sprint(outs[2]) {
			t.Errorf("seed 5 gave seed 0's rows")
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRAFTErrors: configuration errors at their attribute, and a pool
// without distractors fails the run.
func TestRAFTErrors(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"a chain-of-thought completion", `completion = "cot"`, `p.hcl:4,16-21: Unknown completion; completion must be "reference" (the task's reference answer): lacuna has no chain-of-thought answers, not "cot".`},
		{"a cell without documents", `cell = "baseline"`, `p.hcl:4,10-20: No documents`},
		{"no distractors", `distractors = 0`, `p.hcl:4,17-18: Invalid distractors`},
		{"an oracle fraction above 1", `oracle_fraction = 1.2`, `p.hcl:4,21-24: Invalid oracle_fraction`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := fmt.Sprintf("node \"raft_data\" \"x\" {\n  split   = node.import.tasks\n  bundles = [node.import.bundles]\n  %s\n}", c.body)
			if got := configError(t, src); !strings.Contains(got, c.want) {
				t.Errorf("diagnostics %q, want %q", got, c.want)
			}
		})
	}
	dir := t.TempDir()
	head, _ := fixture(t, dir, libraries[:1])
	src := head + `node "task_split" "s" {
  tasks         = [node.import.tasks]
  test_fraction = 0.4
}
node "raft_data" "x" {
  split   = node.task_split.s
  bundles = [node.import.bundles_alpha]
}
`
	if got, want := runErr(t, dir, src, "node.raft_data.x"), "No distractors: the bundles hold 1 API"; !strings.Contains(got, want) {
		t.Errorf("error %q, want %q", got, want)
	}
}
