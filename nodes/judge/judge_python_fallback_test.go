package judge

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
	"github.com/lacuna-dev/lacuna/novelapibench/pyharness"
)

// judgePython on recorded runs of pystats.scale's task: a run whose
// environment did not load is NotRun and never asked about; a call the
// source scan cannot see (map, partial, an assigned name) leaves
// param_corr unknown and the fallback compares the spy's recorded call
// shapes instead; a call inside an f-string is read; a pass that ran past
// its limit is WrongLogic, not a missing call.
func TestJudgePythonReadsCallsTheSourceScanCannotSee(t *testing.T) {
	scale := pyharness.Target{ID: "pystats._core:scale", Paths: []string{"pystats.scale"}}
	spec, err := json.Marshal(pyharness.Task{Target: scale})
	if err != nil {
		t.Fatal(err)
	}
	one := []pyharness.Call{{Args: 1}}
	expect, err := json.Marshal(pyharness.Expectation{Calls: one})
	if err != nil {
		t.Fatal(err)
	}
	task := tasks.Row{TaskID: "t", Ecosystem: "python", Spec: string(spec), Expect: string(expect), Mask: "from pystats import scale\nreturn [scale(x) for x in xss]\n"}
	ran := func(calls ...pyharness.Call) *pyharness.Record {
		return &pyharness.Record{Stage: "ran", Direct: len(calls), Calls: calls}
	}
	for _, tc := range []struct {
		name, solution string
		rec            *pyharness.Record
		class, rule    string
		corr           string // "" for null
		asks           bool
	}{
		{"the environment did not load", "from pystats import scale\nreturn [scale(x) for x in xss]\n",
			&pyharness.Record{Stage: "load", Error: &pyharness.PyError{Type: "ModuleNotFoundError", Message: "No module named 'pystats'"}},
			ClassNotRun, "did not load: ModuleNotFoundError", "", false},
		{"map of the target, shaped as the reference's", "from pystats import scale\nreturn list(map(scale, xss))\n", ran(one[0], one[0]),
			goharness.ClassWrongLogic, "the outcome is wrong", "", true},
		{"an assigned name, shaped as the reference's", "from pystats import scale\ng = scale\nreturn [g(x) for x in xss]\n", ran(one[0]),
			goharness.ClassWrongLogic, "the outcome is wrong", "", true},
		{"partial with a keyword the reference never passes", "import functools\nfrom pystats import scale\nreturn [functools.partial(scale, k=2)(x) for x in xss]\n",
			ran(pyharness.Call{Args: 1, Kwargs: []string{"k"}}),
			goharness.ClassWrongParam, "as scale(_, k=_), never shaped as the reference's scale(_)", "", true},
		{"a call inside an f-string", "from pystats import scale\nreturn [f'{scale(x)}' for x in xss]\n", ran(one[0]),
			goharness.ClassWrongLogic, "the outcome is wrong", "1", true},
		{"the target's name never called", "from pystats import scale\nreturn sorted(xss)\n", ran(),
			goharness.ClassWrongAPISelection, "never calls it", "0", true},
		{"a pass ran past its limit", "from pystats import scale\nwhile True: pass\n",
			&pyharness.Record{Stage: "timeout", Error: &pyharness.PyError{Type: "Timeout", Message: "the real pass ran past its limit"}},
			goharness.ClassWrongLogic, "did not finish: Timeout: the real pass ran past its limit (undecided: ran past its time limit)", "0", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs, err := json.Marshal(pyharness.Run{Record: tc.rec})
			if err != nil {
				t.Fatal(err)
			}
			s := tasks.SampleRow{TaskID: "t", SampleID: "s", Kind: "model", Solution: tc.solution, Observation: string(obs), SpyDirect: int64(tc.rec.Direct),
				FailedLayers: []string{"comparative"}, Failures: "input 0: 3 != 2"}
			row, ask, err := judgePython(s, task)
			if err != nil {
				t.Fatal(err)
			}
			corr := ""
			if row.ParamCorr != nil {
				corr = fmt.Sprintf("%g", *row.ParamCorr)
			}
			if row.Class != tc.class || !strings.Contains(row.Rule, tc.rule) || corr != tc.corr || (ask != nil) != tc.asks {
				t.Errorf("%s (%q), param_corr %q, asks %v; want %s (%q), param_corr %q, asks %v", row.Class, row.Rule, corr, ask != nil, tc.class, tc.rule, tc.corr, tc.asks)
			}
		})
	}
}
