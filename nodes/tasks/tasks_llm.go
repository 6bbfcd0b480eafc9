package tasks

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"text/template"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/bundle"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
	"github.com/lacuna-dev/lacuna/novelapibench/pyharness"
	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/pyapi"
)

// The llm generator (seed §3.1 stage 3, "Task generation"): one model
// call per bundle shows the bundle (S, E, M_prose, M_code) and asks for
// three difficulty-graded tasks (easy: near-direct invocation; medium:
// integration with a little data or control-flow context; hard:
// composition with auxiliary calls of the package), each a whole
// assertion-free scenario program (package main) whose main marks the span
// the solver writes between a line "// <MASK>" and a line "// </MASK>",
// with a description that does not name the API. Each scenario becomes a
// goharness.Task (TaskFromScenario) and its reference is observed exactly
// as a cut task's (observe), so the harness's guarantees are the same.
//
// The fallback ("bundles whose examples cannot be exercised standalone
// fall back to three easy variants"): a bundle with no valid example is
// asked for three easy variants instead of graded tasks; a bundle whose
// graded answer yields no kept medium and no kept hard task (each missing
// from the answer, malformed, naming the API, or its reference failing to
// compile or run) is asked again, once, for three easy variants, and its
// tasks are then those variants that are kept: the graded answer's tasks
// are all dropped ("replaced by the easy-variant fallback"), its easy one
// included, so that the bundle has three easy variants as the paper says.
//
// A Python bundle (ecosystem = "python", tasks_llm_python.go) is asked
// the same way for scripts whose span sits between a line "# <MASK>" and
// a line "# </MASK>"; each becomes a pyharness.Task (TasksFromScenarios)
// observed as a cut Python task is, and the fallback rule is the same.
//
// The prompt is a template file per ecosystem; its bytes are in the key.
//
//go:embed prompts/generate_go.txt
var generateGoPrompt string

//go:embed prompts/generate_python.txt
var generatePythonPrompt string

var (
	generateGoTmpl     = template.Must(template.New("generate_go.txt").Option("missingkey=error").Parse(generateGoPrompt))
	generatePythonTmpl = template.Must(template.New("generate_python.txt").Option("missingkey=error").Parse(generatePythonPrompt))
)

// promptDigest is the digest of the generator's prompt file for the
// ecosystem, for the key.
func promptDigest(python bool) string {
	if python {
		return fmt.Sprintf("%016x", xxhash.Sum64String("generate_python.txt\x00"+generatePythonPrompt))
	}
	return fmt.Sprintf("%016x", xxhash.Sum64String("generate_go.txt\x00"+generateGoPrompt))
}

// generateMaxTokens bounds an answer when the model block sets no
// max_tokens: three programs and their descriptions, with room for a
// reasoning model's thinking.
const generateMaxTokens = 8192

// generateSchema constrains the answer: a list of tasks, each with its
// difficulty, description and program.
func generateSchema(variants bool) json.RawMessage {
	levels := `["easy","medium","hard"]`
	if variants {
		levels = `["easy"]`
	}
	return json.RawMessage(`{"type":"object","properties":{"tasks":{"type":"array","items":{"type":"object","properties":{` +
		`"difficulty":{"type":"string","enum":` + levels + `},"description":{"type":"string"},"program":{"type":"string"}},` +
		`"required":["difficulty","description","program"],"additionalProperties":false}}},"required":["tasks"],"additionalProperties":false}`)
}

// llmPinned is what Resolve fixed for the llm generator: the
// ecosystem's environment (goenv's pinned value, what RunAll reads
// through envRun; for Python pyenv's *Python, what pyenv.From reads) and
// the model as its server reported it.
type llmPinned struct {
	env   any
	model *llmenv.Model
}

// envRun is a run whose pinned value is the ecosystem's environment
// alone: the view RunAll, prepare and pyenv.From expect.
type envRun struct {
	nodes.Run
	env any
}

func (r envRun) Pinned() any { return r.env }

// resolveLLM adds the model (checked against its server) and the prompt's
// digest to the environment's pin; for Python the scenario reader's
// digest too.
func resolveLLM(ctx context.Context, r nodes.Resolve, c *config, g *nodes.Pinned) (*nodes.Pinned, error) {
	m, id, err := llmenv.Resolve(ctx, r, "model", "model", *c.Model)
	if err != nil {
		return nil, err
	}
	for k, v := range g.Identity {
		id[k] = v
	}
	python := c.Ecosystem == "python"
	id["prompts"] = promptDigest(python)
	if python {
		id["helper.scenario"] = fmt.Sprintf("%016x", xxhash.Sum64String(pyharness.ScenarioHelperSource()))
	}
	return &nodes.Pinned{Identity: id, Value: &llmPinned{env: g.Value, model: m}}, nil
}

// CallsModels: only the llm generator calls a model.
func (tasksType) CallsModels(cfg any) bool { return cfg.(*config).Generator == "llm" }

// PlanCalls counts the llm generator's calls: one per bundle it asks
// (graded tasks, or easy variants for a bundle with no valid example),
// and the easy-variant fallbacks the call cache already holds. A fallback
// not made yet cannot be foreseen: whether it is asked depends on running
// the graded answer's references.
func (t tasksType) PlanCalls(ctx context.Context, r nodes.Run) ([]nodes.CallPlan, error) {
	c := t.Config(r)
	if c.Generator != "llm" {
		return nil, nil
	}
	p := r.Pinned().(*llmPinned)
	in, err := r.Input(c.Bundles)
	if err != nil {
		return nil, err
	}
	bundles, err := bundle.ReadRows(in)
	if err != nil {
		return nil, err
	}
	cl := p.model.Client(r)
	var calls []llm.Call
	for _, u := range llmUnits(bundles, c.Ecosystem == "python") {
		if u.skip != "" {
			continue
		}
		first, err := generateCall(p.model, u, u.variants)
		if err != nil {
			return nil, err
		}
		calls = append(calls, first)
		if !u.variants {
			fb, err := generateCall(p.model, u, true)
			if err != nil {
				return nil, err
			}
			if cl.Cached(fb) {
				calls = append(calls, fb)
			}
		}
	}
	return []nodes.CallPlan{llmenv.Estimate(cl, p.model.Config.ID, calls, 0)}, nil
}

// llmUnit is one bundle's work.
type llmUnit struct {
	b  bundle.Row
	tg goharness.Target // a Go bundle's target
	// py: a Python bundle's, its target pyTarget's.
	py  bool
	api pyapi.API
	// variants: asked for easy variants from the start (no valid
	// example); skip: not asked at all, and why.
	variants bool
	skip     string
	cands    []*candidate // every task its answers proposed, in order
	fellBack bool         // the fallback was asked
}

// candidate is one task an answer proposed.
type candidate struct {
	unit       *llmUnit
	round      string // "graded" or "variants"
	index      int    // its place in the answer
	difficulty string
	desc       string // the model's description
	spec       goharness.Task
	row        Row
	program    string // the model's scenario
	py         pyharness.Task
	dropped    string // why it is not a task ("" while it is one)
}

// llmUnits are the bundles' units; python: Python bundles.
func llmUnits(bundles []bundle.Row, python bool) []*llmUnit {
	var out []*llmUnit
	for _, b := range bundles {
		u := &llmUnit{b: b}
		if python {
			u.py, u.api = true, pyTarget(b)
		} else {
			u.tg = target(b)
		}
		switch {
		case python && b.Kind == "property":
			u.skip = "a property: read, not called"
		case !python && b.Kind != "func" && b.Kind != "method":
			u.skip = "a " + b.Kind + ": the spy instruments functions and methods only"
		default:
			u.variants = true
			for _, e := range b.Examples {
				if e.Valid {
					u.variants = false
				}
			}
		}
		out = append(out, u)
	}
	return out
}

// target is the API a bundle is about, as goharness names it.
func target(b bundle.Row) goharness.Target {
	tg := goharness.Target{ID: b.APIID, Package: b.ImportPath, Module: b.Module, Name: b.Qualified[strings.LastIndex(b.Qualified, ".")+1:]}
	if b.Kind == "method" {
		parts := strings.Split(b.Qualified, ".")
		tg.Receiver = parts[len(parts)-2]
	}
	return tg
}

// promptData is what the prompt templates read (Package: a Python
// bundle's top-level package).
type promptData struct {
	Qualified, Name, Kind, ImportPath, Module, Version, Package string
	Signature, MProse, MCode                                    string
	Examples                                                    []promptExample
	Variants                                                    bool
}

type promptExample struct{ Code, Output string }

// generateCall is a bundle's call: the graded prompt, or the easy
// variants' (variants). It carries the model block's request settings,
// temperature 0 when the block sets none (a generator asked once per
// bundle should not vary), max_tokens generateMaxTokens when it sets
// none, the block's system message when it has one, and the answer's
// schema.
func generateCall(m *llmenv.Model, u *llmUnit, variants bool) (llm.Call, error) {
	b, name, tmpl := u.b, u.tg.Name, generateGoTmpl
	if u.py {
		name, tmpl = pyharness.Target{ID: b.APIID}.Name(), generatePythonTmpl
	}
	d := promptData{Qualified: b.Qualified, Name: name, Kind: b.Kind, ImportPath: b.ImportPath,
		Module: b.Module, Version: b.Version, Signature: b.Signature, MProse: strings.TrimSpace(b.MProse), MCode: strings.TrimSpace(b.MCode), Variants: variants}
	if u.py {
		d.Package = pyharness.Target{ID: b.APIID}.Package()
	}
	for _, e := range b.Examples {
		if e.Valid {
			d.Examples = append(d.Examples, promptExample{Code: strings.TrimSpace(e.Code), Output: strings.TrimRight(e.Output, "\n")})
		}
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, d); err != nil {
		return llm.Call{}, fmt.Errorf("prompt %s: %w", tmpl.Name(), err)
	}
	req := m.Request()
	zero := 0.0
	if req.Temperature == nil {
		req.Temperature = &zero
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = generateMaxTokens
	}
	req.Schema, req.SchemaName = generateSchema(variants), "tasks"
	sys := ""
	if m.Config.System != nil {
		sys = *m.Config.System
	}
	if req.API == "completions" {
		req.Prompt = strings.TrimSpace(sys+"\n\n"+buf.String()) + "\n\nAnswer (JSON):\n"
	} else {
		req.Messages = []llm.Message{{Role: "user", Content: buf.String()}}
		if sys != "" {
			req.Messages = append([]llm.Message{{Role: "system", Content: sys}}, req.Messages...)
		}
	}
	return llm.Call{Request: req}, nil
}

// answer is one call's outcome: its text, or why there is none.
type answer struct {
	text    string
	refused string // the server refused the call (a 4xx other than 429)
}

// ask makes calls through the model, at most its concurrency at once. A
// refused call is an answer with its reason; any other failure after the
// client's retries (5xx, 429, an unreachable server) fails the node once
// the round is done: the answered calls are cached, so a re-run makes only
// the missing ones.
func ask(ctx context.Context, r nodes.Run, p *llmPinned, cl *llm.Client, calls []llm.Call) ([]answer, error) {
	out := make([]answer, len(calls))
	var firstErr error
	failed := 0
	llmenv.DoAll(ctx, r, cl, calls, p.model.Endpoint.Concurrency, false, func(i int, resp *llm.Response, err error) {
		if err == nil {
			out[i].text = resp.Text
			return
		}
		if why := refusal(err); why != "" {
			out[i].refused = why
			return
		}
		failed++
		if firstErr == nil {
			firstErr = err
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if firstErr != nil {
		return nil, fmt.Errorf("tasks: %d of %d generation calls failed after their retries (the first: %w); the answered calls are cached, so a re-run makes only the missing ones", failed, len(calls), firstErr)
	}
	return out, nil
}

// refusal is why a failed call was refused, for a 4xx other than 429 (the
// server will not answer this request), "" otherwise.
func refusal(err error) string {
	var se *llm.StatusError
	if !errors.As(err, &se) || se.Status/100 != 4 || se.Status == http.StatusTooManyRequests {
		return ""
	}
	why := fmt.Sprintf("generation refused: HTTP %d %s", se.Status, http.StatusText(se.Status))
	if body, _, _ := strings.Cut(strings.TrimSpace(se.Body), "\n"); body != "" {
		why += ": " + clip(body, 120)
	}
	return why
}

// clip bounds a reason kept in a row.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// proposal is one task of an answer, as the schema has it.
type proposal struct {
	Difficulty  string `json:"difficulty"`
	Description string `json:"description"`
	Program     string `json:"program"`
}

// propose reads an answer of u's (round "graded" or "variants") into
// candidates: each proposed task becomes one, with the reason it is
// dropped when it cannot be a task. A graded answer's difficulty given
// twice keeps the first; one missing is a dropped candidate of its own
// ("the answer has no hard task"). A variants answer keeps its first three
// easy tasks.
func propose(u *llmUnit, round, text string) []*candidate {
	drop := func(difficulty, why string) *candidate {
		return &candidate{unit: u, round: round, index: -1, difficulty: difficulty, dropped: why}
	}
	var ans struct {
		Tasks []proposal `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(llm.AnswerJSON(text)), &ans); err != nil {
		return []*candidate{drop("all", "malformed answer: not the JSON asked for ("+clip(err.Error(), 120)+")")}
	}
	var out []*candidate
	seen := map[string]int{}
	for i, p := range ans.Tasks {
		c := &candidate{unit: u, round: round, index: i, difficulty: p.Difficulty, desc: strings.TrimSpace(p.Description)}
		out = append(out, c)
		switch {
		case round == "variants" && p.Difficulty != goharness.Easy:
			c.dropped = fmt.Sprintf("difficulty %q: the fallback asks for easy variants", p.Difficulty)
			continue
		case p.Difficulty != goharness.Easy && p.Difficulty != goharness.Medium && p.Difficulty != goharness.Hard:
			c.dropped = fmt.Sprintf("difficulty %q is not easy, medium or hard", p.Difficulty)
			continue
		case round == "graded" && seen[p.Difficulty] > 0:
			c.dropped = "a second " + p.Difficulty + " task"
			continue
		case round == "variants" && seen[p.Difficulty] >= 3:
			c.dropped = "a fourth easy variant"
			continue
		}
		seen[p.Difficulty]++
		switch {
		case c.desc == "":
			c.dropped = "no description"
		case u.namesTarget(c.desc):
			c.dropped = "its description names " + u.name()
		default:
			c.program = p.Program
		}
	}
	if round == "graded" {
		for _, level := range []string{goharness.Easy, goharness.Medium, goharness.Hard} {
			if seen[level] == 0 {
				out = append(out, drop(level, "the answer has no "+level+" task"))
			}
		}
	} else if n := seen[goharness.Easy]; n < 3 {
		out = append(out, drop(goharness.Easy, fmt.Sprintf("the answer has %d easy variants, not 3", n)))
	}
	return out
}

// name is the target's name, as the description must not write it.
func (u *llmUnit) name() string {
	if u.py {
		return pyharness.Target{ID: u.b.APIID}.Name()
	}
	return u.tg.Name
}

// namesTarget reports whether text names the target.
func (u *llmUnit) namesTarget(text string) bool {
	if u.py {
		return pyharness.NamesTarget(text, pyharness.Target{ID: u.b.APIID})
	}
	return goharness.NamesTarget(text, u.tg)
}

// scenarios is what the llm generator needs of an ecosystem: the
// candidates' programs made tasks (a program that cannot be one drops its
// candidate, with the reason), and their references observed.
type scenarios interface {
	// specify makes the task of every candidate with a program.
	specify(ctx context.Context, cands []*candidate) error
	// observe builds the rows of the candidates not dropped and observes
	// their references; one that fails drops its candidate.
	observe(ctx context.Context, cands []*candidate) (counts [2]int, err error)
	// observed says what observe's counts, summed, are, for the note.
	observed(counts [2]int) string
}

// goScenarios are Go's: goharness.TaskFromScenario and observe.
type goScenarios struct{ r nodes.Run }

func (goScenarios) specify(_ context.Context, cands []*candidate) error {
	for _, c := range cands {
		if c.dropped != "" || c.program == "" {
			continue
		}
		spec, err := goharness.TaskFromScenario(c.program, c.difficulty, c.unit.tg)
		if err != nil {
			c.dropped = "malformed program: the scenario " + clip(err.Error(), 200)
			continue
		}
		c.spec = spec
	}
	return nil
}

func (g goScenarios) observe(ctx context.Context, cands []*candidate) ([2]int, error) {
	observed, second, err := observeCandidates(ctx, g.r, cands)
	return [2]int{observed, second}, err
}

func (goScenarios) observed(n [2]int) string {
	return fmt.Sprintf("%d references observed (up to %d runs each), %d with a second input", n[0], observeRuns, n[1])
}

// rowOf is a kept candidate's task row, its description still the
// model's (finish completes it once the reference is observed).
func (c *candidate) rowOf() Row {
	b, t := c.unit.b, c.spec
	spec, _ := json.Marshal(t)
	return Row{
		TaskID:  fmt.Sprintf("%016x", xxhash.Sum64String(fmt.Sprintf("%s\x00%s\x00llm\x00%s\x00%d", b.APIID, c.difficulty, c.round, c.index))),
		Library: b.Library, Module: b.Module, Version: b.Version, APIID: b.APIID, ImportPath: b.ImportPath,
		Qualified: b.Qualified, PkgName: pkgNameIn(t, b.ImportPath), Family: b.Family, FamilyRep: b.FamilyRep,
		Difficulty: c.difficulty, Description: c.desc, Context: t.Context(), Mask: t.ReferenceAnswer(), Reference: t.Program(t.ReferenceAnswer()),
		Generator: "llm", Example: sourceExample(b, t.Mask), Spec: string(spec), Ecosystem: "go",
	}
}

// sourceExample is the first valid example of b whose program holds the
// span (whitespace aside), "" when none does: a scenario that copies an
// example's call keeps that example's name, so that the knowledge cells
// withhold it from E as they withhold a cut task's source.
func sourceExample(b bundle.Row, span string) string {
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	want := flat(span)
	for _, e := range b.Examples {
		if e.Valid && want != "" && strings.Contains(flat(e.Code), want) {
			return e.Name
		}
	}
	return ""
}

// answerFormat is the sentence a cut task's description ends its
// specification with (goharness.Describe), for the solver's answer.
const answerFormat = "Answer with the import declarations your code needs (the program imports only what its own code uses), then the statements that replace the marker; a whole program (package main) is accepted too."

// finish completes a kept candidate's description once its reference is
// observed: the model's text, the library's module when the text does not
// name it, the answer's format and, as a check after the specification,
// what the finished program prints when every run printed the same. It
// drops the candidate when the output would name the API.
func (c *candidate) finish(exp *goharness.Expectation) {
	var b strings.Builder
	b.WriteString(c.desc)
	if !strings.Contains(c.desc, c.unit.b.Module) {
		b.WriteString("\nUse the library " + c.unit.b.Module + ".")
	}
	b.WriteString("\n" + answerFormat)
	if out := strings.TrimRight(exp.Output, "\n"); exp.OutputMode == goharness.ModeExact && out != "" {
		b.WriteString("\nFor these inputs the finished program prints:\n" + out)
	}
	if goharness.NamesTarget(b.String(), c.unit.tg) {
		c.dropped = "its expected output names " + c.unit.tg.Name
		return
	}
	c.row.Description = b.String()
}

// observeCandidates builds the rows of the candidates not dropped and
// observes their references (observe); a reference that does not compile
// or run drops its candidate, with observe's reason.
func observeCandidates(ctx context.Context, r nodes.Run, cands []*candidate) (observed, second int, err error) {
	var rows []Row
	var specs []goharness.Task
	var which []*candidate
	for _, c := range cands {
		if c.dropped == "" && c.program != "" {
			c.row = c.rowOf()
			rows, specs, which = append(rows, c.row), append(specs, c.spec), append(which, c)
		}
	}
	if len(rows) == 0 {
		return 0, 0, nil
	}
	if observed, second, err = observe(ctx, r, rows, specs); err != nil {
		return 0, 0, err
	}
	for i, c := range which {
		c.row = rows[i]
		if rows[i].ObserveError != "" {
			c.dropped = clip(rows[i].ObserveError, 300)
			continue
		}
		var exp goharness.Expectation
		if err := json.Unmarshal([]byte(rows[i].Expect), &exp); err != nil {
			return 0, 0, fmt.Errorf("task %s: expect: %w", rows[i].TaskID, err)
		}
		c.finish(&exp)
	}
	return observed, second, nil
}

// Dropped is one generated task that is not a row, in the report
// "dropped" (and, as "difficulty: reason", in the missing column of the
// API's rows).
type Dropped struct {
	APIID      string `json:"api_id"`
	Difficulty string `json:"difficulty"` // "all" for an answer that is not the JSON asked
	Round      string `json:"round"`      // graded or variants
	Reason     string `json:"reason"`
}

// runLLM is Run for generator = "llm".
func (t tasksType) runLLM(ctx context.Context, r nodes.Run, bundles []bundle.Row) error {
	p := r.Pinned().(*llmPinned)
	er := envRun{Run: r, env: p.env}
	python := t.Config(r).Ecosystem == "python"
	var kit scenarios = goScenarios{r: er}
	if python {
		py, err := newPyScenarios(er, t.Config(r).Bundles.Node, bundles)
		if err != nil {
			return err
		}
		kit = py
	}
	cl := p.model.Client(r)
	units := llmUnits(bundles, python)
	// Round one: every bundle asked once, graded or (no valid example)
	// for easy variants.
	var asked []*llmUnit
	for _, u := range units {
		if u.skip == "" {
			asked = append(asked, u)
		}
	}
	calls := 0
	counts, err := t.generate(ctx, er, kit, p, cl, asked, func(u *llmUnit) bool { return u.variants })
	if err != nil {
		return err
	}
	calls += len(asked)
	// The fallback: a graded answer that yields no medium and no hard task.
	var fallback []*llmUnit
	for _, u := range asked {
		if u.variants {
			continue
		}
		kept := false
		for _, c := range u.cands {
			kept = kept || c.dropped == "" && c.difficulty != goharness.Easy // pyharness.Easy is the same word
		}
		if !kept {
			u.fellBack = true
			for _, c := range u.cands {
				if c.dropped == "" {
					c.dropped = "replaced by the easy-variant fallback (no medium or hard task was kept)"
				}
			}
			fallback = append(fallback, u)
		}
	}
	if len(fallback) > 0 {
		roundTwo, err := t.generate(ctx, er, kit, p, cl, fallback, func(*llmUnit) bool { return true })
		if err != nil {
			return err
		}
		calls += len(fallback)
		counts = [2]int{counts[0] + roundTwo[0], counts[1] + roundTwo[1]}
	}
	var rows []Row
	var dropped []Dropped
	levels := map[string]int{}
	reasons := map[string]int{}
	for _, u := range units {
		if u.skip != "" {
			r.Logf("%s: no task: %s", u.b.Qualified, u.skip)
			continue
		}
		var miss []string
		var mine []Row
		for _, c := range u.cands {
			if c.dropped == "" {
				mine = append(mine, c.row)
				continue
			}
			dropped = append(dropped, Dropped{APIID: u.b.APIID, Difficulty: c.difficulty, Round: c.round, Reason: c.dropped})
			miss = append(miss, c.difficulty+": "+c.dropped)
			rule, _, _ := strings.Cut(c.dropped, ":")
			reasons[rule]++
			r.Logf("%s: %s %s task dropped: %s", u.b.Qualified, c.round, c.difficulty, c.dropped)
		}
		for _, row := range mine {
			row.Missing = strings.Join(miss, "; ")
			levels[row.Difficulty]++
			rows = append(rows, row)
		}
	}
	r.Report("dropped", dropped)
	r.Report("usage", cl.Stats())
	var why []string
	for _, k := range SortedKeys(reasons) {
		why = append(why, fmt.Sprintf("%s %d", k, reasons[k]))
	}
	note := fmt.Sprintf("%d tasks from %d bundles by generator llm (easy %d, medium %d, hard %d; %d model calls, %d easy-variant fallbacks); %s; %d generated tasks dropped",
		len(rows), len(bundles), levels[goharness.Easy], levels[goharness.Medium], levels[goharness.Hard], calls, len(fallback), kit.observed(counts), len(dropped))
	if len(why) > 0 {
		note += " (" + strings.Join(why, ", ") + ")"
	}
	r.Note("%s", note)
	return t.Write(r, rows)
}

// generate asks each unit once (easy variants when variants says so,
// graded tasks otherwise), turns the answers into candidates, makes their
// tasks and observes those that are tasks (kit). It returns observe's
// counts.
func (tasksType) generate(ctx context.Context, r nodes.Run, kit scenarios, p *llmPinned, cl *llm.Client, units []*llmUnit, variants func(*llmUnit) bool) ([2]int, error) {
	calls := make([]llm.Call, len(units))
	for i, u := range units {
		c, err := generateCall(p.model, u, variants(u))
		if err != nil {
			return [2]int{}, err
		}
		calls[i] = c
	}
	answers, err := ask(ctx, r, p, cl, calls)
	if err != nil {
		return [2]int{}, err
	}
	var fresh []*candidate
	for i, u := range units {
		round := "graded"
		if variants(u) {
			round = "variants"
		}
		var cands []*candidate
		if why := answers[i].refused; why != "" {
			cands = []*candidate{{unit: u, round: round, index: -1, difficulty: "all", dropped: why}}
		} else {
			cands = propose(u, round, answers[i].text)
		}
		u.cands = append(u.cands, cands...)
		fresh = append(fresh, cands...)
	}
	if err := kit.specify(ctx, fresh); err != nil {
		return [2]int{}, err
	}
	return kit.observe(ctx, fresh)
}
