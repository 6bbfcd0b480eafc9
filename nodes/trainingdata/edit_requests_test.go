package trainingdata_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/trainingdata"
	"github.com/parquet-go/parquet-go"
)

// answerRow is a generate row as far as edit_requests reads it.
type answerRow struct {
	TaskID   string `parquet:"task_id"`
	APIID    string `parquet:"api_id"`
	Solution string `parquet:"solution"`
}

// TestEditRequestsAreMEMITRequestsPerAPI: one request per API of the set
// (or of the bundles without a split; or, with complement, of the bundles
// with no task in the set), in api_id order: the prompt holds "{}" once
// and names the package, the subject never names the API, the target is
// its qualified name, the paraphrases are its tasks in the set, easy
// first, and target_true comes from the answers.
func TestEditRequestsAreMEMITRequestsPerAPI(t *testing.T) {
	dir := t.TempDir()
	head, kept := fixture(t, dir, libraries)
	answers := []answerRow{
		{"alpha-chunk-easy", "example.com/alpha.Chunk", "out := alpha.Split(xs, 2)"},
		{"alpha-chunk-medium", "example.com/alpha.Chunk", "out := alpha.Split(xs, 3)\nalpha.Split(xs, 4)"},
		{"alpha-chunk-hard", "example.com/alpha.Chunk", "out := alpha.Batch(xs, 3)"},
		{"gamma-dist-easy", "gamma.geometry.dist", "from gamma.metrics import distance\nreturn distance(xs, 1)"},
	}
	if err := parquet.WriteFile(filepath.Join(dir, "answers.parquet"), answers); err != nil {
		t.Fatal(err)
	}
	src := head + `node "import" "answers" { path = "answers.parquet" }
node "task_split" "s" {
  tasks   = [node.import.tasks]
  split   = "leave_one_library_out"
  holdout = ["beta"]
}
node "edit_requests" "train" {
  bundles = ` + allBundles + `
  split   = node.task_split.s
  answers = [node.import.answers]
}
node "edit_requests" "all" {
  bundles = ` + allBundles + `
  prompt  = "In {library}, the function to {} is"
}
node "edit_requests" "locality" {
  bundles    = ` + allBundles + `
  split      = node.task_split.s
  complement = true
  limit      = 3
  seed       = 1
}
`
	run := nodetest.Run(t, dir, src)
	byAPI := map[string][]string{} // kept tasks by API
	for _, k := range kept {
		byAPI[k.APIID] = append(byAPI[k.APIID], k.TaskID)
	}
	var trainAPIs, betaAPIs, allAPIs []string
	for _, a := range libraries {
		if a.prose != "" { // without a split, an API without documentation has no subject
			allAPIs = append(allAPIs, a.id())
		}
		if a.lib == "beta" {
			betaAPIs = append(betaAPIs, a.id())
		} else {
			trainAPIs = append(trainAPIs, a.id())
		}
	}
	slices.Sort(trainAPIs)
	slices.Sort(allAPIs)
	for _, c := range []struct {
		node string
		apis []string
	}{{"train", trainAPIs}, {"all", allAPIs}, {"locality", nil}} {
		t.Run(c.node, func(t *testing.T) {
			rows := nodetest.Read[trainingdata.EditRow](t, run, "node.edit_requests."+c.node)
			var ids []string
			for _, r := range rows {
				ids = append(ids, r.APIID)
				name := r.Qualified[strings.LastIndex(r.Qualified, ".")+1:]
				if strings.Count(r.Prompt, "{}") != 1 || r.Target != r.Qualified || strings.Contains(r.Subject, name) && !strings.HasPrefix(r.APIID, "gamma") || r.Subject == "" {
					t.Errorf("%s: prompt %q subject %q target %q", r.APIID, r.Prompt, r.Subject, r.Target)
				}
				if c.node == "all" {
					if want := "In " + r.Library + ", the function to {} is"; r.Prompt != want {
						t.Errorf("%s: prompt %q, want %q", r.APIID, r.Prompt, want)
					}
				} else if !strings.Contains(r.Prompt, r.ImportPath) || !strings.HasSuffix(r.Prompt, ", call") {
					t.Errorf("%s: prompt %q", r.APIID, r.Prompt)
				}
				if c.node != "train" {
					if len(r.Paraphrases) != 0 || r.Paraphrase != "" || len(r.TaskIDs) != 0 || r.TargetTrue != "" {
						t.Errorf("%s: paraphrases %v, tasks %v, target_true %q without tasks or answers of the set", r.APIID, r.Paraphrases, r.TaskIDs, r.TargetTrue)
					}
					continue
				}
				if fmt.Sprint(r.TaskIDs) != fmt.Sprint(sortedByLevel(byAPI[r.APIID])) || len(r.Paraphrases) != len(r.TaskIDs) || r.Paraphrase != r.Paraphrases[0] {
					t.Errorf("%s: tasks %v paraphrases %q, want the kept tasks %v", r.APIID, r.TaskIDs, r.Paraphrases, byAPI[r.APIID])
				}
				for _, p := range r.Paraphrases {
					if strings.Contains(p, "{}") || !strings.Contains(p, r.ImportPath) || !strings.HasSuffix(p, "this is done by calling") {
						t.Errorf("%s: paraphrase %q", r.APIID, p)
					}
				}
				want := map[string]string{"example.com/alpha.Chunk": "alpha.Split", "gamma.geometry.dist": "gamma.metrics.distance"}[r.APIID]
				if r.TargetTrue != want {
					t.Errorf("%s: target_true %q, want %q", r.APIID, r.TargetTrue, want)
				}
				if wantFrom := map[bool]string{true: "task", false: "prose"}[strings.HasSuffix(r.APIID, ".Mean")]; r.SubjectFrom != wantFrom {
					t.Errorf("%s: subject from %s (%q)", r.APIID, r.SubjectFrom, r.Subject)
				}
			}
			switch c.node {
			case "locality":
				if len(ids) != 3 {
					t.Errorf("locality: %d facts, want limit 3", len(ids))
				}
				for _, id := range ids {
					if !slices.Contains(betaAPIs, id) {
						t.Errorf("locality: %s has tasks in the set edited", id)
					}
				}
			default:
				if fmt.Sprint(ids) != fmt.Sprint(c.apis) {
					t.Errorf("APIs %v, want %v", ids, c.apis)
				}
			}
		})
	}
	t.Run("subjects", func(t *testing.T) {
		for _, r := range nodetest.Read[trainingdata.EditRow](t, run, "node.edit_requests.train") {
			want := map[string]string{
				"example.com/alpha.Chunk": "return an array of elements split into groups the length of size",
				"gamma.geometry.dist":     "return the distance between two points",
			}[r.APIID]
			if want != "" && r.Subject != want {
				t.Errorf("%s: subject %q, want %q", r.APIID, r.Subject, want)
			}
		}
	})
}

// sortedByLevel orders the fixture's task ids easy, medium, hard.
func sortedByLevel(ids []string) []string {
	var out []string
	for _, d := range levels {
		for _, id := range ids {
			if strings.HasSuffix(id, "-"+d) {
				out = append(out, id)
			}
		}
	}
	return out
}

// TestEditRequestsConfigErrors: configuration errors at their attribute.
func TestEditRequestsConfigErrors(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"which without a split", `which = "test"`, `p.hcl:3,11-17: No split`},
		{"complement without a split", `complement = true`, `p.hcl:3,16-20: No split`},
		{"a prompt without {}", `prompt = "To call"`, `p.hcl:3,12-21: Invalid prompt; prompt must hold "{}" exactly once`},
		{"a limit of 0", `limit = 0`, `p.hcl:3,11-12: Invalid limit`},
		{"an unknown set", "split = node.import.tasks\n  which = \"dev\"", `p.hcl:4,11-16: Unknown set`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := fmt.Sprintf("node \"edit_requests\" \"x\" {\n  bundles = [node.import.bundles]\n  %s\n}", c.body)
			if got := configError(t, src); !strings.Contains(got, c.want) {
				t.Errorf("diagnostics %q, want %q", got, c.want)
			}
		})
	}
}
