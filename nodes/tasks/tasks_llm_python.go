package tasks

import (
	"context"
	"fmt"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/bundle"
	"github.com/lacuna-dev/lacuna/nodes/pyenv"
	"github.com/lacuna-dev/lacuna/novelapibench/pyharness"
	rpyenv "github.com/lacuna-dev/lacuna/runners/pyenv"
)

// pyScenarios are the llm generator's Python half: each scenario script
// becomes a pyharness.Task (TasksFromScenarios, run by the interpreter of
// the bundle's v_new environment; nothing of the library is imported
// there) and is observed as a cut Python task is (observePython: the
// sandbox, pyObserveRuns processes, Derive, UsableInputs), so the harness,
// the mutants and C1 treat it as they treat a cut task.
type pyScenarios struct {
	r    nodes.Run // its pinned value the *pyenv.Python
	p    *pyenv.Python
	envs *pyEnvs
}

// newPyScenarios opens the environments of the bundles (v_new's each):
// a bundle that is not a Python bundle fails the node, as it fails the
// examples generator.
func newPyScenarios(r nodes.Run, upstream string, bundles []bundle.Row) (*pyScenarios, error) {
	p, err := pyenv.From(r)
	if err != nil {
		return nil, err
	}
	k := &pyScenarios{r: r, p: p, envs: &pyEnvs{p: p, upstream: upstream, envs: map[string]*rpyenv.Env{}}}
	for _, b := range bundles {
		if b.Ecosystem != "python" || b.VNewEnv == "" {
			return nil, fmt.Errorf("bundle %s (%s) is not a Python bundle with v_new_env: the bundles input must be a bundle with ecosystem = \"python\"", b.Qualified, b.Library)
		}
	}
	return k, nil
}

func (k *pyScenarios) specify(ctx context.Context, cands []*candidate) error {
	byEnv := map[string][]*candidate{}
	var order []string
	for _, c := range cands {
		if c.dropped != "" || c.program == "" {
			continue
		}
		d := c.unit.b.VNewEnv
		if byEnv[d] == nil {
			order = append(order, d)
		}
		byEnv[d] = append(byEnv[d], c)
	}
	for _, d := range order {
		cs := byEnv[d]
		env, err := k.envs.get(ctx, k.r, d, cs[0].unit.b.Library, cs[0].unit.b.Version)
		if err != nil {
			return err
		}
		items := make([]pyharness.Scenario, len(cs))
		for i, c := range cs {
			items[i] = pyharness.Scenario{API: c.unit.api, Script: c.program, Difficulty: c.difficulty}
		}
		res, err := pyharness.TasksFromScenarios(ctx, env.Python(), items)
		if err != nil {
			return fmt.Errorf("%s: %w", cs[0].unit.b.Library, err)
		}
		for i, c := range cs {
			if res[i].Refused != "" {
				c.dropped = "malformed program: the scenario " + clip(res[i].Refused, 200)
				continue
			}
			c.py = res[i].Task
		}
	}
	return nil
}

func (k *pyScenarios) observe(ctx context.Context, cands []*candidate) ([2]int, error) {
	var made []pyMade
	var which []*candidate
	for _, c := range cands {
		if c.dropped == "" && c.program != "" {
			made = append(made, pyMade{task: c.py, row: c.pyRowOf()})
			which = append(which, c)
		}
	}
	if len(made) == 0 {
		return [2]int{}, nil
	}
	observed, dropped, err := observePython(ctx, k.r, k.p, k.envs, made)
	if err != nil {
		return [2]int{}, err
	}
	for i, c := range which {
		c.py, c.row = made[i].task, made[i].row
		if c.row.ObserveError != "" {
			c.dropped = clip(c.row.ObserveError, 300)
			continue
		}
		c.pyFinish()
	}
	return [2]int{observed, dropped}, nil
}

func (k *pyScenarios) observed(n [2]int) string {
	return fmt.Sprintf("%d references observed (%d runs each), %d inputs dropped (perturbed ones that tell nothing apart)", n[0], pyObserveRuns, n[1])
}

// pyRowOf is a kept Python candidate's task row, its description still
// the model's (pyFinish completes it once the reference is observed).
func (c *candidate) pyRowOf() Row {
	b, t := c.unit.b, c.py
	ref, _, _ := t.ReferenceProgram()
	return Row{
		TaskID:  fmt.Sprintf("%016x", xxhash.Sum64String(fmt.Sprintf("%s\x00%s\x00llm\x00%s\x00%d", b.APIID, c.difficulty, c.round, c.index))),
		Library: b.Library, Ecosystem: "python", Module: b.Module, Version: b.Version, APIID: b.APIID, ImportPath: b.ImportPath,
		Qualified: b.Qualified, PkgName: t.Target.Package(), Family: b.Family, FamilyRep: b.FamilyRep,
		Difficulty: c.difficulty, Description: c.desc, Context: t.Context(), Mask: t.Reference, Reference: ref,
		Generator: "llm", Example: sourceExample(b, scenarioSpan(c.program)), VNewEnv: b.VNewEnv, Kind: b.Kind,
	}
}

// scenarioSpan is the text between a scenario's marker lines.
func scenarioSpan(script string) string {
	var span []string
	in := false
	for _, l := range strings.Split(script, "\n") {
		switch strings.TrimSpace(l) {
		case pyharness.MaskOpen:
			in = true
		case pyharness.MaskClose:
			return strings.Join(span, "\n")
		default:
			if in {
				span = append(span, l)
			}
		}
	}
	return ""
}

// pyAnswerFormat ends a Python task's specification, as Describe's does.
const pyAnswerFormat = "Answer with the body of %s, the import lines your code needs first (the program imports only what its own code uses); a whole definition of %s is accepted too."

// pyFinish completes a kept Python candidate's description once its
// reference is observed: the model's text, the library's package when the
// text does not name it, what the solver's function takes (the script's
// variables of those names), the package's code its body runs before the
// span (which the solver writes too: the prelude cannot import the
// package), what it returns (the variables the rest of the script read),
// and the answer's format. It drops the candidate when the text would
// name the API.
func (c *candidate) pyFinish() {
	t := c.py
	fn := "`" + t.Function() + "`"
	pkg := t.Target.Package()
	var b strings.Builder
	b.WriteString(c.desc)
	if !strings.Contains(c.desc, pkg) {
		b.WriteString("\nUse the library " + pkg + ".")
	}
	params := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(t.Signature), "def "), ":")
	b.WriteString("\nWrite the code as the body of `" + params + "`")
	if strings.HasSuffix(params, "()") {
		b.WriteString(", which takes no parameters")
	} else {
		b.WriteString(": its parameters are the scenario's variables of those names")
	}
	b.WriteString(".")
	if len(t.Site.Setup) > 0 {
		b.WriteString("\nThe body first runs this code, as the scenario does before the part to write (write it too; its imports are yours to write):\n" + strings.Join(t.Site.Setup, "\n"))
	}
	b.WriteString("\n" + fn + " returns `" + t.Site.Returns + "`: what the rest of the scenario reads of your code's work, after it.")
	b.WriteString("\n" + fmt.Sprintf(pyAnswerFormat, fn, fn))
	if pyharness.NamesTarget(b.String(), t.Target) {
		c.dropped = "its specification names " + t.Target.Name()
		return
	}
	c.row.Description = b.String()
}
