package pyharness

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/lacuna-dev/lacuna/runners/pyapi"
)

//go:embed scenario.py
var scenarioHelper string

// ScenarioHelperSource is the embedded helper TasksFromScenarios runs (it
// loads CutHelperSource's helpers too); callers that cache tasks put its
// digest in their key.
func ScenarioHelperSource() string { return scenarioHelper }

// The lines that mark a scenario's span (TasksFromScenarios): each alone
// on its line, the opening one before the closing one.
const (
	MaskOpen  = "# <MASK>"
	MaskClose = "# </MASK>"
)

// Scenario is a scenario script a generator (a model) wrote about API:
// a whole assertion-free Python script whose top-level statements between
// a line MaskOpen and a line MaskClose are the span the solver writes.
type Scenario struct {
	API        pyapi.API
	Script     string
	Difficulty string
}

// ScenarioResult is what TasksFromScenarios made of one scenario: its
// task, or why there is none (Refused).
type ScenarioResult struct {
	Task    Task
	Refused string
}

// TasksFromScenarios builds a task from each scenario, as Cut builds one
// from an example, with the span the scenario marks instead of one cut by
// level, in one run of the embedded helper (ScenarioHelperSource) by
// python; nothing of the library is imported. The task has Cut's shape,
// so the harness, Derive, UsableInputs, the mutants and C1 treat it as
// they treat a cut task:
//
//   - the prelude is the script's statements before the span that use
//     nothing of the package (its imports of other modules, helpers,
//     data); the package's statements before the span that the span
//     needs, transitively (building what it is called on), run in the
//     body before the span (Site.Setup), as an easy cut task's do; the
//     other package statements before it are left out, and the imports
//     of the package are the reference's own import lines (the names
//     the body uses, imported as the script does);
//   - solve's parameters are the prelude's variables the body reads;
//     the inputs are the script's own values (the parameters' names),
//     then one per parameter bound to a literal, perturbed as Cut
//     perturbs them;
//   - solve returns (Site.Returns) what the rest of the script reads of
//     the span's work, in the order it first reads it: the variables the
//     span binds, and those bound before it that the span reads (a
//     receiver it changes, a list it fills); a tuple of several. The code
//     after the span is otherwise left out: its prints are what the
//     harness's comparison of the returned values replaces.
//
// A scenario is refused, saying why, when it does not parse, marks no
// span, two spans or an empty one, marks it inside a statement (the
// markers must sit between top-level statements), when its span never
// calls the target (Cut's rule for a call of it), returns, yields,
// awaits or declares global or nonlocal names at its own level, when the
// code before the span names the target outside the package's import
// statements (the context would give the answer away), when the rest of
// the script reads nothing the span sets, or when the task does not
// compile. Task.Example is empty (the caller names the source). err is
// for a helper that could not run. Safe for concurrent use.
func TasksFromScenarios(ctx context.Context, python string, items []Scenario) ([]ScenarioResult, error) {
	type target struct {
		Name     string   `json:"name"`
		QualName string   `json:"qualname"`
		Kind     string   `json:"kind"`
		Module   string   `json:"module"`
		Package  string   `json:"package"`
		Path     string   `json:"path"`
		Paths    []string `json:"paths"`
	}
	type request struct {
		Target target `json:"target"`
		Script string `json:"script"`
	}
	in := struct {
		Cut      string    `json:"cut"`
		Requests []request `json:"requests"`
	}{Cut: cutHelper}
	for _, it := range items {
		tg := Target{ID: it.API.ID}
		r := request{Script: it.Script, Target: target{Name: tg.Name(), QualName: tg.QualName(), Kind: it.API.Kind, Module: tg.Module(),
			Package: tg.Package(), Path: it.API.Path, Paths: it.API.Paths}}
		if r.Target.Path == "" && len(it.API.Paths) > 0 {
			r.Target.Path = it.API.Paths[0]
		}
		in.Requests = append(in.Requests, r)
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	out, err := runScenarioHelper(ctx, python, stdin)
	if err != nil {
		return nil, fmt.Errorf("pyharness: scenario: %w", err)
	}
	var answers []struct {
		Refused string `json:"refused"`
		Task    *struct {
			Prelude   string   `json:"prelude"`
			Signature string   `json:"signature"`
			Reference string   `json:"reference"`
			Inputs    []string `json:"inputs"`
			Site      Site     `json:"site"`
		} `json:"task"`
	}
	if err := json.Unmarshal(out, &answers); err != nil {
		return nil, fmt.Errorf("pyharness: scenario: helper output: %w", err)
	}
	if len(answers) != len(items) {
		return nil, fmt.Errorf("pyharness: scenario: %d answers for %d scenarios", len(answers), len(items))
	}
	res := make([]ScenarioResult, len(items))
	for i, a := range answers {
		if a.Task == nil {
			res[i].Refused = a.Refused
			if a.Refused == "" {
				res[i].Refused = "the scenario reader gave no task"
			}
			continue
		}
		t := Task{Target: Target{ID: items[i].API.ID, Paths: items[i].API.Paths}, Difficulty: items[i].Difficulty,
			Prelude: a.Task.Prelude, Signature: a.Task.Signature, Reference: a.Task.Reference, Inputs: a.Task.Inputs, Site: a.Task.Site}
		if err := t.Validate(); err != nil {
			res[i].Refused = "its task is invalid: " + err.Error()
			continue
		}
		res[i].Task = t
	}
	return res, nil
}

func runScenarioHelper(ctx context.Context, python string, stdin []byte) ([]byte, error) {
	return runHelper(ctx, python, scenarioHelper, stdin)
}
