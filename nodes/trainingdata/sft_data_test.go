package trainingdata_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/experiments"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/trainingdata"
	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// modelBlocks are two models on url, the second with a system message of
// its own.
func modelBlocks(url string) string {
	return fmt.Sprintf(`
model "coder" {
  id          = "example/coder"
  endpoint    = %[1]q
  served_name = "test-model"
}
model "coder_sys" {
  id          = "example/coder-sys"
  endpoint    = %[1]q
  served_name = "test-model"
  system      = "You write code for the lacuna test suite."
}
`, url)
}

// TestSFTPromptsAreGenerates: for every cell setting, an sft_data row's
// system and prompt are exactly the messages the generate node sends for
// the same task (its prompt column), Go and Python tasks alike: training
// sees what evaluation asks.
func TestSFTPromptsAreGenerates(t *testing.T) {
	dir := t.TempDir()
	head, _ := fixture(t, dir, libraries)
	if err := os.MkdirAll(filepath.Join(dir, "tmpl"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tmpl", "task.tmpl"), []byte("Knowledge:\n{{.Knowledge}}\nDo: {{.Task.Description}}\n```{{.Task.Fence}}\n{{.Task.Context}}\n```"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(llmtest.Config{Models: []string{"test-model"}, Default: "```go\nout := 1\n```"})
	defer srv.Close()
	cases := []struct {
		name, gen, sft string
	}{
		{"Full", `cell = "Full"`, `cell = "Full"`},
		{"the default cell is Full", `cell = "Full"`, ``},
		{"baseline", ``, `cell = "baseline"`},
		{"S+E with one example", "cell = \"S+E\"\n  max_examples = 1", "cell = \"S+E\"\n  max_examples = 1"},
		{"templates", "cell = \"S\"\n  templates = \"tmpl\"", "cell = \"S\"\n  templates = \"tmpl\""},
		{"a model's system", "cell = \"Full\"\n  model = model.coder_sys", "system = \"You write code for the lacuna test suite.\""},
	}
	src := head + modelBlocks(srv.URL()) + `
node "task_split" "s" { tasks = [node.import.tasks] }
node "filter" "train" {
  input = node.task_split.s
  where = row.split == "train"
}
node "concat" "bundles" { inputs = [node.import.bundles_alpha, node.import.bundles_beta, node.import.bundles_gamma] }
`
	for i, c := range cases {
		gen := c.gen
		if !strings.Contains(gen, "model =") {
			gen += "\n  model = model.coder"
		}
		src += fmt.Sprintf(`node "generate" "c%d" {
  tasks   = node.filter.train
  bundles = node.concat.bundles
  %s
}
node "sft_data" "c%d" {
  split   = node.task_split.s
  bundles = %s
  %s
}
`, i, gen, i, allBundles, c.sft)
	}
	run := nodetest.Run(t, dir, src)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gen := map[string]string{}
			for _, g := range nodetest.Read[experiments.GenerateRow](t, run, fmt.Sprintf("node.generate.c%d", i)) {
				gen[g.TaskID] = g.Prompt
			}
			rows := nodetest.Read[trainingdata.SFTRow](t, run, fmt.Sprintf("node.sft_data.c%d", i))
			if len(rows) != len(gen) || len(rows) == 0 {
				t.Fatalf("%d SFT rows, %d generate rows", len(rows), len(gen))
			}
			python := 0
			for _, r := range rows {
				if want := "[system]\n" + r.System + "\n\n[user]\n" + r.Prompt; gen[r.TaskID] != want {
					t.Errorf("task %s: SFT messages\n%s\ngenerate's\n%s", r.TaskID, want, gen[r.TaskID])
				}
				if strings.HasPrefix(r.Completion, "```python") {
					python++
				}
			}
			if python == 0 {
				t.Errorf("no Python task in the train set: the fixture should have some")
			}
		})
	}
}

// TestSFTRowsAreTheSetsTasksWithTheirReferenceAnswer: one row per task of
// set which, in task_id order; the completion is the reference mask in
// the fence of the task's language, which the evaluation's extraction
// takes back out whole; the prompt shows the task's bundle but never the
// example the task was cut from.
func TestSFTRowsAreTheSetsTasksWithTheirReferenceAnswer(t *testing.T) {
	dir := t.TempDir()
	head, kept := fixture(t, dir, libraries)
	byID := map[string]int{}
	for i, k := range kept {
		byID[k.TaskID] = i
	}
	src := head + `node "task_split" "s" {
  tasks       = [node.import.tasks]
  test_sample = 3
}
node "sft_data" "train" {
  split   = node.task_split.s
  bundles = ` + allBundles + `
}
node "sft_data" "test_sample" {
  split   = node.task_split.s
  which   = "test_sample"
  bundles = ` + allBundles + `
}
`
	run := nodetest.Run(t, dir, src)
	sets := bySet(nodetest.Read[trainingdata.SplitRow](t, run, "node.task_split.s"))
	for _, which := range []string{"train", "test_sample"} {
		t.Run(which, func(t *testing.T) {
			rows := nodetest.Read[trainingdata.SFTRow](t, run, "node.sft_data."+which)
			var ids []string
			for _, r := range rows {
				ids = append(ids, r.TaskID)
				task := kept[byID[r.TaskID]]
				lang := "go"
				if task.Ecosystem == "python" {
					lang = "python"
				}
				if want := "```" + lang + "\n" + task.Mask + "\n```"; r.Completion != want {
					t.Errorf("%s: completion %q, want %q", r.TaskID, r.Completion, want)
				}
				if code, how := llm.ExtractCode(r.Completion, lang); code != task.Mask || how != "fence:"+lang {
					t.Errorf("%s: the evaluation extracts %q (%s) from the completion, not the mask", r.TaskID, code, how)
				}
				if r.Split != which || r.Cell != "Full" || r.APIID != task.APIID || r.Library != task.Library || r.Qualified != task.Qualified || r.Difficulty != task.Difficulty {
					t.Errorf("%s: row %+v", r.TaskID, r)
				}
				if !strings.Contains(r.Prompt, "source of "+strings.TrimPrefix(task.Qualified[strings.LastIndex(task.Qualified, "."):], ".")) {
					t.Errorf("%s: the prompt lacks its API's source:\n%s", r.TaskID, r.Prompt)
				}
				if strings.Contains(r.Prompt, "the task's source: "+task.Qualified[strings.LastIndex(task.Qualified, ".")+1:]+"\n") || !strings.Contains(r.Prompt, "another use of") {
					t.Errorf("%s: the prompt shows the example the task was cut from, or not the other one:\n%s", r.TaskID, r.Prompt)
				}
				if !strings.Contains(r.System, "expert") {
					t.Errorf("%s: system %q", r.TaskID, r.System)
				}
			}
			if fmt.Sprint(ids) != fmt.Sprint(sets[which]) {
				t.Errorf("rows of tasks %v, want set %s's %v", ids, which, sets[which])
			}
		})
	}
}

// TestSFTErrors: configuration errors at their attribute; an empty set or
// a task whose API has no bundle fails the run with what to fix.
func TestSFTErrors(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"an unknown set", "which = \"validation\"\n  bundles = [node.import.bundles]", `p.hcl:3,11-23: Unknown set; which must be one of "train", "test", "train_sample", "test_sample", not "validation".`},
		{"no bundles for Full", ``, `Bundles needed; cell Full shows the task's bundle`},
		{"an unknown cell", "cell = \"Ful\"\n  bundles = [node.import.bundles]", `p.hcl:3,10-15: Unknown cell`},
		{"max_examples without E", "cell = \"baseline\"\n  max_examples = 1", `p.hcl:4,18-19: No examples shown`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := fmt.Sprintf("node \"sft_data\" \"x\" {\n  split = node.import.tasks\n  %s\n}", c.body)
			if got := configError(t, src); !strings.Contains(got, c.want) {
				t.Errorf("diagnostics %q, want %q", got, c.want)
			}
		})
	}
	dir := t.TempDir()
	head, _ := fixture(t, dir, libraries)
	for _, c := range []struct{ name, body, want string }{
		{"an empty set", "which = \"test_sample\"\n  bundles = " + allBundles, `the split node.task_split.s has no task in set "test_sample"; its sets are test (7), train (28).`},
		{"a missing library's bundles", "bundles = [node.import.bundles_alpha]", `the bundles have no API example.com/beta.`},
		{"a bundle twice", "bundles = [node.import.bundles_alpha, node.import.bundles_alpha]", `the bundles hold API example.com/alpha.Chunk twice`},
		{"not a split", "split = node.import.tasks\n  bundles = " + allBundles, `no column split; split must come from a task_split node`},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := c.body
			if !strings.Contains(body, "split =") {
				body = "split = node.task_split.s\n  " + body
			}
			src := head + "node \"task_split\" \"s\" { tasks = [node.import.tasks] }\nnode \"sft_data\" \"x\" {\n  " + body + "\n}\n"
			if got := runErr(t, dir, src, "node.sft_data.x"); !strings.Contains(got, c.want) {
				t.Errorf("error %q, want %q", got, c.want)
			}
		})
	}
}
