package pipelines_test

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/lacuna-dev/lacuna/analysis"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes/experiments"
	"github.com/lacuna-dev/lacuna/nodes/filters"
	"github.com/lacuna-dev/lacuna/nodes/judge"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
	"github.com/lacuna-dev/lacuna/runners/pypi/pypitest"
)

// pyStats are the releases of the fixture project "py-stats" (package
// pystats), as nodes/tasks' Python tests publish them: 2.0.0 adds scale,
// clamp (called in the shipped docs/usage.md), ordered (three levels of
// task), box (its doctest cannot tell a throwaway call: C1 drops it),
// mean (a failing doctest) and total (no example).
var pyStats = map[string]map[string]string{
	"1.0.0": {
		"pystats/__init__.py": "from pystats._core import add\n\n__all__ = [\"add\"]\n",
		"pystats/_core.py":    "def add(a, b):\n    \"\"\"Return the sum of a and b, for any two numbers.\"\"\"\n    return a + b\n",
	},
	"2.0.0": {
		"pystats/__init__.py": `"""Stats: a fixture package for tasks."""
from pystats._core import add, scale, mean, clamp, total, ordered, box

__all__ = ["add", "scale", "mean", "clamp", "total", "ordered", "box"]
`,
		"pystats/_core.py": `def add(a, b):
    """Return the sum of a and b, for any two numbers."""
    return a + b


def scale(xs, k=2):
    """Multiply every number of a list by the factor k.

    >>> scale([1, 2, 3])
    [2, 4, 6]
    """
    return [x * k for x in xs]


def ordered(xs, reverse=False):
    """Return the numbers of a list from the smallest to the largest.

    >>> data = [3, 1, 2]
    >>> ordered(data)
    [1, 2, 3]
    >>> total(ordered(data))
    6
    """
    return sorted(xs, reverse=reverse)


def mean(xs):
    """Return the arithmetic mean of a non-empty list of numbers.

    >>> mean([1, 2])
    2
    """
    return sum(xs) / len(xs)


def clamp(v, lo, hi):
    """Limit the value v to the closed interval from lo to hi."""
    return max(lo, min(v, hi))


def total(xs):
    """Return the sum of all the numbers of a list, zero when empty."""
    return sum(xs)


def box(v):
    """Wrap the value v in a list of one item.

    >>> box(3) is not None
    True
    """
    return [v]
`,
		"pystats/docs/usage.md": "# Usage\n\n```pycon\n>>> import pystats\n>>> pystats.clamp(5, 0, 3)\n3\n```\n",
	},
}

// pyAnswers are the scripted model's answers in the sweep besides the
// reference, each a wrong answer whatever the task, and the class the
// judge's fast path gives it.
var pyAnswers = []struct{ kind, code, class string }{
	{"reference", "", goharness.ClassOK},
	{"syntax", "return (xs\n", goharness.ClassWrongSyntax},
	{"import", "from pystats.nothere import total\nreturn total(xs)\n", goharness.ClassWrongImport},
	{"api", "import pystats\nreturn pystats.nothere(xs)\n", goharness.ClassWrongAPISelection},
}

// pyCells are the arms of the Python sweep: two cells with the oracle
// prepend, Full with BM25 retrieval in its place.
var pyCells = []string{"baseline", "Full", "Full@bm25"}

// pyScript is what the scripted models answer for the Python run.
type pyScript struct {
	mu      sync.Mutex
	tasks   []tasks.Row          // C1-kept, by task_id
	c2Easy  string               // solved without knowledge: C2 drops it
	c3Hard  string               // the strong model fails it: C3 drops it
	sweep   map[[2]string]int    // (task_id, cell) → index in pyAnswers of the greedy answer
	passes  map[[2]string]int    // (task_id, cell) → sampled answers that are the reference
	sampled map[[2]string]int    // (task_id, cell) → sampled requests answered
	sent    map[[2]string]string // (task_id, cell) → the sweep's system and user messages
}

func (s *pyScript) task(text string) (tasks.Row, bool) {
	var best tasks.Row
	for _, t := range s.tasks {
		ctx := strings.TrimRight(t.Context, "\n")
		if strings.Contains(text, ctx) && strings.Contains(text, t.Description) && len(ctx)+len(t.Description) > len(best.Context)+len(best.Description) {
			best = t
		}
	}
	return best, best.TaskID != ""
}

func (s *pyScript) answer(t tasks.Row, i int) string {
	code := pyAnswers[i].code
	if pyAnswers[i].kind == "reference" {
		code = t.Mask
	}
	return "Here is the body:\n```python\n" + strings.TrimRight(code, "\n") + "\n```\n"
}

// pyJunk passes no harness: the function returns None.
const pyJunk = "```python\npass\n```"

var (
	pySemSolution  = regexp.MustCompile("(?s)Solution to judge:\n```\\w*\n(.*?)\n```")
	pySemReference = regexp.MustCompile("(?s)Reference solution:\n```\\w*\n(.*?)\n```")
)

func (s *pyScript) reply(q llmtest.Request) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	text := q.Text()
	switch q.Model {
	case judgeID:
		m, ref := pySemSolution.FindStringSubmatch(text), pySemReference.FindStringSubmatch(text)
		if m == nil || ref == nil {
			// A verdict: asked only of the calibration mutants the fast
			// path leaves undecided, answered right for the exit mutant
			// and wrong for the throwaway one.
			switch {
			case strings.Contains(text, "_lacuna_os._exit(0)"):
				return `{"class": "WrongLogic", "rationale": "scripted: ends the process early"}`
			case strings.Contains(text, "_lacuna_discarded"):
				return `{"class": "WrongParam", "rationale": "scripted: a wrong verdict"}`
			}
			return "not a verdict"
		}
		// The semantic-equivalence score: the reference scores 1.
		if strings.TrimSpace(m[1]) == strings.TrimSpace(ref[1]) {
			return `{"equivalent": true, "score": 1}`
		}
		return `{"equivalent": false, "score": 0}`
	case strong:
		t, ok := s.task(text)
		if !ok || t.TaskID == s.c3Hard {
			return pyJunk
		}
		return s.answer(t, 0)
	case underTest:
		t, ok := s.task(text)
		if !ok {
			return pyJunk
		}
		if q.Seed != nil { // C2's samples
			if t.TaskID == s.c2Easy {
				return s.answer(t, 0)
			}
			return pyJunk
		}
		cell := cellOf(text)
		sent := text
		if len(q.Messages) > 0 && q.Messages[0].Role == "system" {
			sent = q.Messages[0].Content + "\n\n" + text
		}
		key := [2]string{t.TaskID, cell}
		if q.Temperature == nil || *q.Temperature != 0 { // a sampled run
			s.sampled[key]++
			if s.sampled[key] <= s.passes[key] {
				return s.answer(t, 0)
			}
			return pyJunk
		}
		s.sent[key] = sent
		i, ok := s.sweep[key]
		if !ok {
			return pyJunk
		}
		return s.answer(t, i)
	}
	return pyJunk
}

// TestNovelAPIBenchPythonEndToEnd runs pipelines/novelapibench.hcl on a
// Python library, the fixture project py-stats on a loopback index,
// against a scripted server playing the model under test, the strong
// model of C3 and the judge: C1 keeps five of six tasks (box's harness
// cannot tell a throwaway call), the model solves one without knowledge
// (C2 drops it), the strong model fails one with the Full bundle (C3
// drops it), and in the sweep the model answers the reference or a wrong
// answer the judge's fast path classifies, so every class and metric has
// an exact expected value. The calibration (solve, reused by c1) is
// judged too: its report measures the fast path and the judge model
// against the classes the mutants stand for. A second run makes no model
// call.
func TestNovelAPIBenchPythonEndToEnd(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bubblewrap not found: %v", err)
		}
		t.Skipf("bubblewrap not found: %v (the test fails instead under CI=true)", err)
	}
	mit := []string{"License-Expression: MIT"}
	nodetest.OfflinePython(t, pypitest.Published(t, "py-stats",
		pypitest.Release{Version: "1.0.0", Uploaded: pypitest.Day("2024-01-10"), Files: pyStats["1.0.0"], Metadata: mit},
		pypitest.Release{Version: "2.0.0", Uploaded: pypitest.Day("2024-09-01"), Files: pyStats["2.0.0"], Metadata: mit}))
	src, err := os.ReadFile("novelapibench.hcl")
	if err != nil {
		t.Fatal(err)
	}
	dir := nodetest.StoreDir(t)
	file := filepath.Join(dir, "novelapibench.hcl")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	s := &pyScript{sweep: map[[2]string]int{}, passes: map[[2]string]int{}, sampled: map[[2]string]int{}, sent: map[[2]string]string{}}
	srv := llmtest.New(llmtest.Config{Models: []string{underTest, strong, judgeID}, Script: []llmtest.Rule{{Reply: s.reply}}})
	defer srv.Close()
	vars := map[string]string{
		"endpoint":   srv.URL(),
		"model_id":   underTest,
		"strong_id":  strong,
		"judge_id":   judgeID,
		"libraries":  `{ stats = { ecosystem = "python", name = "py-stats", domain = "data" } }`,
		"cells":      `["baseline", "Full"]`,
		"retrievers": `["oracle", "bm25"]`,
		"samples":    "2",
		"k":          "[1, 2]",
	}
	st, err := artifacts.Open(filepath.Join(dir, ".lacuna"))
	if err != nil {
		t.Fatal(err)
	}

	// Phase 1: the model-free stages make the tasks; solve runs the
	// calibration mutants, C1 reads their runs.
	c1 := `node.c1.lib["stats"]`
	out := run(t, st, file, vars, c1)
	name := map[string]string{} // task_id → qualified/difficulty
	for _, r := range read[tasks.Row](t, st, out[`node.tasks.lib["stats"]`]) {
		name[r.TaskID] = r.Qualified + "/" + r.Difficulty
	}
	const boxDrop = "no outcome depends on the target: substituting its result changes nothing, so a throwaway call cannot be told apart"
	for _, r := range read[filters.C1Row](t, st, out[c1]) {
		switch {
		case r.Keep && r.Reason == "":
			s.tasks = append(s.tasks, r.Row)
		case name[r.TaskID] != "pystats.box/easy" || r.Reason != boxDrop:
			t.Errorf("c1 %s: keep %v reason %q", name[r.TaskID], r.Keep, r.Reason)
		}
	}
	sort.Slice(s.tasks, func(i, j int) bool { return name[s.tasks[i].TaskID] < name[s.tasks[j].TaskID] })
	var kept []string
	for _, r := range s.tasks {
		kept = append(kept, name[r.TaskID])
	}
	if want := "pystats.clamp/easy pystats.ordered/easy pystats.ordered/hard pystats.ordered/medium pystats.scale/easy"; strings.Join(kept, " ") != want {
		t.Fatalf("C1 kept %s, want %s", strings.Join(kept, " "), want)
	}
	s.c2Easy, s.c3Hard = s.tasks[0].TaskID, s.tasks[1].TaskID // clamp, ordered/easy
	rest := s.tasks[2:]
	for i, task := range rest {
		for c, cell := range pyCells {
			s.sweep[[2]string{task.TaskID, cell}] = (i + c) % len(pyAnswers)
			s.passes[[2]string{task.TaskID, cell}] = (2*i + c) % 3
		}
	}

	// The plan counts C2's calls: 3 samples of every C1-kept task.
	plan := planCalls(t, st, file, vars)
	if c := plan[`node.generate.c2["under_test/stats"]`]; len(c) != 1 || c[0].Calls != int64(3*len(s.tasks)) || c[0].Cached != 0 {
		t.Errorf("plan of C2's generate: %+v, want %d calls, 0 cached", c, 3*len(s.tasks))
	}

	// Phase 2: the whole pipeline. C2 and C3 keep a row for every task,
	// those dropped before with the reason they were.
	out = run(t, st, file, vars)
	c2Drop := "C2: the model solved 3 of 3 samples without knowledge"
	c3Drop := "C3: the strong model solved 0 of 1 samples with the bundle (cell Full), want 1"
	for addr, want := range map[string]map[string]string{
		`node.c2.lib["under_test/stats"]`: {"pystats.box/easy": boxDrop, "pystats.clamp/easy": c2Drop},
		`node.c3.lib["under_test/stats"]`: {"pystats.box/easy": boxDrop, "pystats.clamp/easy": c2Drop, "pystats.ordered/easy": c3Drop},
	} {
		rows := read[filters.FilterRow](t, st, out[addr])
		if len(rows) != len(name) {
			t.Errorf("%s: %d rows, want %d", addr, len(rows), len(name))
		}
		for _, r := range rows {
			reason, dropped := want[name[r.TaskID]]
			if r.Keep == dropped || r.Reason != reason {
				t.Errorf("%s %s: keep %v reason %q, want reason %q", addr, name[r.TaskID], r.Keep, r.Reason, reason)
			}
		}
	}

	// The prompts are Python's, and the BM25 arm prepends chunks of the
	// library's bundles.
	for _, task := range rest {
		for _, cell := range pyCells {
			p := s.sent[[2]string{task.TaskID, cell}]
			if !strings.Contains(p, "expert Python programmer") || !strings.Contains(p, "```python\n"+strings.TrimRight(task.Context, "\n")+"\n```") {
				t.Errorf("%s %s: the prompt received is not a Python task's:\n%s", name[task.TaskID], cell, p)
			}
		}
	}
	for _, r := range read[experiments.GenerateRow](t, st, out[`node.generate.sweep["under_test/stats/Full@bm25"]`]) {
		if r.Retriever != "bm25" || len(r.Retrieved) == 0 || r.ExtractedBy != "fence:python" {
			t.Errorf("Full@bm25 %s: retriever %q, %d chunks, extracted by %q", name[r.TaskID], r.Retriever, len(r.Retrieved), r.ExtractedBy)
		}
	}

	// Every greedy sample lands in the class its answer stands for, decided
	// by the fast path; the judge model scores the reference 1. Of the
	// sampled runs, as many pass as the script answered with the reference.
	for _, cell := range pyCells {
		addr := `node.judge.greedy["under_test/stats/` + cell + `"]`
		rows := read[judge.JudgeRow](t, st, out[addr])
		if len(rows) != len(rest) {
			t.Errorf("%s: %d samples, want %d", addr, len(rows), len(rest))
		}
		for _, r := range rows {
			a := pyAnswers[s.sweep[[2]string{r.TaskID, cell}]]
			if r.Class != a.class || r.Path != judge.PathRule || r.Model != underTest || r.Cell != cell || r.Passed != (a.class == goharness.ClassOK) {
				t.Errorf("%s %s %s (%s): class %s by %s (%s), passed %v, want %s", cell, name[r.TaskID], r.SampleID, a.kind, r.Class, r.Path, r.Rule, r.Passed, a.class)
			}
			if r.Sem == nil || (*r.Sem == 1) != (a.class == goharness.ClassOK) {
				t.Errorf("%s %s (%s): sem %v", cell, name[r.TaskID], a.kind, r.Sem)
			}
		}
		passedOf := map[string]int{}
		for _, r := range read[judge.JudgeRow](t, st, out[`node.judge.sweep["under_test/stats/`+cell+`"]`]) {
			if r.Passed {
				passedOf[r.TaskID]++
			}
		}
		for _, task := range rest {
			if got, w := passedOf[task.TaskID], s.passes[[2]string{task.TaskID, cell}]; got != w {
				t.Errorf("%s %s: %d sampled runs pass, want %d", cell, name[task.TaskID], got, w)
			}
		}
	}

	// The metrics, from the construction: pass@1 and the composition of
	// the failures from the greedy answers, pass@1 (sampled) and pass@2
	// (n = 2: 0 or 1) from the sampled ones, with Wilson's interval on
	// pass@1.
	metrics := readMaps(t, st, out[`node.metrics.table`])
	for _, cell := range pyCells {
		var row map[string]any
		for _, m := range metrics {
			if m["model"] == underTest && m["cell"] == cell && m["difficulty"] == "all" && m["library"] == "all" {
				row = m
			}
		}
		if row == nil {
			t.Fatalf("no pooled metrics row for %s", cell)
		}
		counts := map[string]int{}
		var sampled1, sampled2 []float64
		for _, task := range rest {
			counts[pyAnswers[s.sweep[[2]string{task.TaskID, cell}]].class]++
			c := s.passes[[2]string{task.TaskID, cell}]
			sampled1 = append(sampled1, float64(c)/2)
			sampled2 = append(sampled2, math.Min(float64(c), 1))
		}
		failures := len(rest) - counts[goharness.ClassOK]
		pct := func(n, of int) float64 { return math.Round(10000*float64(n)/float64(of)) / 100 }
		mean := func(xs []float64) float64 { return math.Round(10000*analysis.Mean(xs)) / 100 }
		ok := pct(counts[goharness.ClassOK], len(rest))
		lo, hi := wilsonPct(counts[goharness.ClassOK], len(rest))
		checks := map[string]float64{
			"pass_at_1": ok, "pass_at_1_lo": lo, "pass_at_1_hi": hi, "sem": ok,
			"pass_at_1_sampled": mean(sampled1), "pass_at_2": mean(sampled2),
			"wrong_syntax": pct(counts[goharness.ClassWrongSyntax], failures), "wrong_api_selection": pct(counts[goharness.ClassWrongAPISelection], failures),
			"wrong_import": pct(counts[goharness.ClassWrongImport], failures), "wrong_param": 0, "wrong_logic": 0, "wrong_shape_dtype": 0,
		}
		if got := row["tasks"]; got != int64(len(rest)) {
			t.Errorf("%s: tasks %v, want %d", cell, got, len(rest))
		}
		if got := row["failures"]; got != int64(failures) {
			t.Errorf("%s: failures %v, want %d", cell, got, failures)
		}
		for col, w := range checks {
			got, isNum := row[col].(float64)
			if !isNum || math.Abs(got-w) > 0.005 {
				t.Errorf("%s %s = %v, want %.2f", cell, col, row[col], w)
			}
		}
	}

	// The judge's calibration, exactly: the fast path decides the
	// reference, null, sibling, import and syntax solutions of the six
	// tasks, and box's throwaway mutant, which passes its harness (OK,
	// expected WrongLogic); the judge model the exit mutants (right) and
	// the other throwaway ones (wrong); the fallback clamp's perturb
	// mutant (hi changed: the right call, a wrong outcome, WrongParam),
	// which the scripted model does not answer.
	var key artifacts.Digest
	for _, e := range planEntries(t, st, file, vars) {
		if e.Node == `node.judge.calibration["stats"]` {
			key = e.Key
		}
	}
	a, err := st.GetAction(key)
	if err != nil {
		t.Fatalf("judge calibration: %v", err)
	}
	var rep judge.CalibrationReport
	if err := json.Unmarshal(a.Reports["calibration"], &rep); err != nil {
		t.Fatalf("calibration report %s: %v", a.Reports["calibration"], err)
	}
	want := judge.CalibrationReport{Samples: 43, Agree: 37, Agreement: 37.0 / 43,
		Confusion: map[string]map[string]int{"OK": {"OK": 6}, "WrongAPISelection": {"WrongAPISelection": 12}, "WrongImport": {"WrongImport": 6},
			"WrongSyntax": {"WrongSyntax": 6}, "WrongLogic": {"OK": 1, "WrongLogic": 6, "WrongParam": 5}, "WrongParam": {"WrongParam": 1}},
		ByPath: map[string]*judge.PathAgreement{
			judge.PathRule: {Samples: 31, Agree: 30, Confusion: map[string]map[string]int{"OK": {"OK": 6}, "WrongAPISelection": {"WrongAPISelection": 12},
				"WrongImport": {"WrongImport": 6}, "WrongSyntax": {"WrongSyntax": 6}, "WrongLogic": {"OK": 1}}},
			judge.PathLLM:      {Samples: 11, Agree: 6, Confusion: map[string]map[string]int{"WrongLogic": {"WrongLogic": 6, "WrongParam": 5}}},
			judge.PathFallback: {Samples: 1, Agree: 1, Confusion: map[string]map[string]int{"WrongParam": {"WrongParam": 1}}},
		}}
	if g, w := mustJSON(t, rep), mustJSON(t, want); g != w {
		t.Errorf("calibration report\n%s\nwant\n%s", g, w)
	}

	// A second run makes no model call: everything is cached.
	before := srv.Stats().Requests
	run(t, st, file, vars)
	if after := srv.Stats().Requests; after != before {
		t.Errorf("the second run made %d requests", after-before)
	}
	checkKeys(t, st, file, vars, "novelapibench_python")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
