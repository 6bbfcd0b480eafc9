package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/bundle"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
	"github.com/lacuna-dev/lacuna/runners/goapi"
)

func init() { nodes.Register(tasksType{}) }

// config:
//
//	node "tasks" "lo"  { bundles = node.bundle.lo }
//	node "tasks" "gen" { bundles = node.bundle.lo  generator = "llm"  model = model.gen }
type config struct {
	Bundles nodes.Ref `hcl:"bundles"`
	// Generator is "examples" (the default: deterministic, cut from each
	// bundle's validated examples) or "llm" (the paper's one model call
	// per bundle for three graded tasks, tasks_llm.go).
	Generator string `hcl:"generator,optional"`
	// Model is the llm generator's model (nil otherwise). Unset, it is
	// left out of the key (omitnull): the examples generator's keys are
	// those it had before the llm generator.
	Model *nodes.Model `hcl:"model,optional" key:"omitnull"`
	// Ecosystem is "go" (default) or "python": the bundles' (a Python
	// bundle's tasks are cut and observed with novelapibench/pyharness in
	// v_new's environment, nodes/pyenv's sandbox).
	Ecosystem string `hcl:"ecosystem,optional"`
}

// Row is one task: the paper's tuple (description, context, mask,
// reference, harness) with what is needed to run solutions through it.
type Row struct {
	TaskID     string `parquet:"task_id"`
	Library    string `parquet:"library"`
	Module     string `parquet:"module"`
	Version    string `parquet:"version"`
	APIID      string `parquet:"api_id"`
	ImportPath string `parquet:"import_path"`
	Qualified  string `parquet:"qualified_name"`
	PkgName    string `parquet:"pkg_name"` // the name the program imports the target's package by
	Family     string `parquet:"family"`
	FamilyRep  bool   `parquet:"family_rep"`
	Difficulty string `parquet:"difficulty"` // easy, medium, hard
	// Description never names the target (checked: a level whose
	// description would is not emitted).
	Description string `parquet:"description"`
	// Context is the program with the span marked <MASK>, importing only
	// what its own code uses: the solver writes the other imports.
	Context string `parquet:"context"`
	// Mask is the reference answer: the import lines the span needs
	// that the context lacks, then the span as the example has it.
	Mask      string `parquet:"mask"`
	Reference string `parquet:"reference"` // the whole reference program
	Harness   string `parquet:"harness"`   // the test file, reference solution in place
	Generator string `parquet:"generator"` // examples or llm
	Example   string `parquet:"example"`   // the Example function it was cut from (llm: the example holding its span, or "")
	// Missing names the levels this API has no task for, and why.
	Missing string `parquet:"missing"`
	// Spec and Expect are the task and the reference's observation as
	// JSON: what the harness is rebuilt from for every solution.
	Spec   string `parquet:"spec"`
	Expect string `parquet:"expect"`
	// ObserveError says why the reference could not be observed (it then
	// has no Expect, and C1 drops the task).
	ObserveError string `parquet:"observe_error"`
	// Ecosystem is the bundle's (go, python). A Python task's Spec is a
	// pyharness.Task and Expect a pyharness.Expectation; its Harness is
	// empty (pyharness's driver is the harness, rebuilt from Spec), Mask
	// is the reference body and PkgName the top-level package.
	Ecosystem string `parquet:"ecosystem"`
	// VNewEnv is a Python task's environment (the bundle's v_new_env):
	// where its samples run.
	VNewEnv string `parquet:"v_new_env"`
	// Kind is a Python task's target kind (the bundle's: function,
	// method, class, ...); c1 picks the sibling mutant's API among those
	// of the same kind.
	Kind string `parquet:"kind"`
}

type tasksType struct{ nodes.Static[config, Row] }

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed       = tasksType{}
	_ nodes.Documented  = tasksType{}
	_ nodes.Validator   = tasksType{}
	_ nodes.Resolver    = tasksType{}
	_ nodes.CallPlanner = tasksType{}
)

func (tasksType) Name() string    { return "tasks" }
func (tasksType) Version() string { return "21" }
func (tasksType) Doc() string {
	return "Cuts graded coding tasks (easy, medium, hard) from each bundle's validated examples, and observes the reference " +
		"in the sandbox under the target-API spy: the expectations its execute-then-assert harness checks. " +
		"With ecosystem = \"python\": cut from the doctests with novelapibench/pyharness and observed in v_new's environment. " +
		"With generator = \"llm\" and model = model.NAME: one call per bundle (prompts/generate_go.txt, or for Python generate_python.txt, " +
		"its bytes in the key; temperature 0 unless the model block sets one) asks for three assertion-free scenario programs (easy, medium, " +
		"hard; Python: scripts, the span between \"# <MASK>\" and \"# </MASK>\" lines, made a task of the cutter's shape) with the " +
		"span to write marked and a description that does not name the API; each is observed like a cut task, and one that is " +
		"malformed, names the API or whose reference does not compile or run is dropped, the reason in missing and the report " +
		"\"dropped\". A bundle with no valid example, or whose answer yields no medium and no hard task, is asked for three easy " +
		"variants instead (the paper's fallback). A Go example or scenario that waits on the clock (time.Sleep, a timer, a ticker), " +
		"or a Python example that does (time.sleep, asyncio.sleep, threading.Timer, signal.alarm or setitimer), makes no task: " +
		"what it prints depends on how fast the machine runs it, so its harness would keep, pass or fail it by chance."
}

func (tasksType) Validate(cfg any) error {
	c := cfg.(*config)
	if c.Ecosystem != "" && c.Ecosystem != "go" && c.Ecosystem != "python" {
		return nodes.Errorf("ecosystem", "Ecosystem not supported", "tasks handles ecosystems \"go\" (default) and \"python\", not %q.", c.Ecosystem)
	}
	switch c.Generator {
	case "", "examples":
		if c.Model != nil {
			return nodes.Errorf("model", "Model without the llm generator", "model is the llm generator's: set generator = \"llm\" or remove model.")
		}
		return nil
	case "llm":
		if c.Model == nil {
			return nodes.Errorf("generator", "Generator without a model", "generator \"llm\" asks a model for each bundle's tasks: set model = model.NAME.")
		}
		return nil
	}
	return nodes.Errorf("generator", "Unknown generator", "generator must be \"examples\" or \"llm\", not %q.", c.Generator)
}

// Resolve pins the toolchain and the sandbox the harnesses are built and
// run with: both are in the key, so upgrading Go recomputes the verdicts.
// The llm generator pins its model and its prompt's digest too.
func (tasksType) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	c := r.Config().(*config)
	var p *nodes.Pinned
	var err error
	if c.Ecosystem == "python" {
		p, err = ResolvePython(ctx, r)
	} else {
		p, err = ResolveGo(ctx, r)
	}
	if err != nil || c.Generator != "llm" {
		return p, err
	}
	return resolveLLM(ctx, r, c, p)
}

func (t tasksType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	in, err := r.Input(c.Bundles)
	if err != nil {
		return err
	}
	bundles, err := bundle.ReadOriginalRows(in)
	if err != nil {
		return err
	}
	if c.Ecosystem == "python" && c.Generator == "llm" {
		return t.runLLM(ctx, r, bundles)
	}
	if c.Ecosystem == "python" {
		return t.runPython(ctx, r, bundles)
	}
	for _, b := range bundles {
		if b.Ecosystem == "python" {
			return fmt.Errorf("bundle %s (%s) is a Python library's: set ecosystem = \"python\" on tasks", b.Qualified, b.Library)
		}
	}
	if c.Generator == "llm" {
		return t.runLLM(ctx, r, bundles)
	}
	var rows []Row
	var specs []goharness.Task
	levels := map[string]int{}
	noTask := map[string]int{}
	for _, b := range bundles {
		made, why := cut(b)
		if len(made) == 0 {
			noTask[why]++
			continue
		}
		for _, m := range made {
			levels[m.row.Difficulty]++
			rows = append(rows, m.row)
			specs = append(specs, m.spec)
		}
	}
	for _, k := range SortedKeys(noTask) {
		r.Logf("no task for %d APIs: %s", noTask[k], k)
	}
	observed, second, err := observe(ctx, r, rows, specs)
	if err != nil {
		return err
	}
	r.Note("%d tasks from %d bundles (easy %d, medium %d, hard %d); %d references observed (up to %d runs each), %d with a second input", len(rows), len(bundles), levels[goharness.Easy], levels[goharness.Medium], levels[goharness.Hard], observed, observeRuns, second)
	return t.Write(r, rows)
}

// observe is the execute step: it runs every reference under the spy,
// observeRuns times, as many with its calls of the target substituted,
// and on the second input where one is derived, each in processes of its
// own, and records in each row what the runs agree on (Expect) and
// the harness, or why the reference could not be observed (ObserveError).
// It returns how many were observed, and how many of those with a second
// input.
func observe(ctx context.Context, r nodes.Run, rows []Row, specs []goharness.Task) (observed, second int, err error) {
	sols := make([]Solution, len(rows))
	for i := range rows {
		sols[i] = Solution{Task: i, SampleID: "observe", Kind: "reference", Code: specs[i].ReferenceAnswer()}
	}
	obs, recs, err := RunAll(ctx, r, rows, sols, true)
	if err != nil {
		return 0, 0, err
	}
	// A second input can break the build (a changed literal that a
	// constant expression needed) or crash the process (a panic in a
	// goroutine the library starts): observe those again without it.
	var retry []Solution
	for i, s := range obs {
		if _, ok := goharness.PerturbBefore(specs[i]); ok && (s.CompileError != "" || recs[i] == nil) {
			retry = append(retry, Solution{Task: i, SampleID: "observe", Kind: "reference", Code: specs[i].ReferenceAnswer(), NoPerturb: true})
		}
	}
	if len(retry) > 0 {
		again, recs2, err := RunAll(ctx, r, rows, retry, true)
		if err != nil {
			return 0, 0, err
		}
		for k, s := range retry {
			obs[s.Task], recs[s.Task] = again[k], recs2[k]
		}
	}
	for i, s := range obs {
		switch {
		case s.CompileError != "":
			rows[i].ObserveError = "reference does not compile: " + s.CompileError
		case recs[i] == nil:
			rows[i].ObserveError = "reference failed: " + s.RuntimeError
		default:
			exp, err := goharness.Derive(recs[i])
			if err != nil {
				rows[i].ObserveError = "reference failed: " + err.Error()
				break
			}
			b, _ := json.Marshal(exp)
			rows[i].Expect = string(b)
			observed++
			if exp.Perturbed != nil {
				second++
			}
		}
		if access := s.spyAccess; access != "" {
			imports, span := goharness.SplitAnswer(specs[i].ReferenceAnswer())
			rows[i].Harness = goharness.Harness(goharness.UnitSpec{Task: specs[i], Solution: span, SolverImports: imports, SpyAccess: access,
				SpyImport: rows[i].ImportPath, Module: rows[i].Module, Runs: 1}).Source("harness", map[string]string{})
		}
	}
	return observed, second, nil
}

type made struct {
	row  Row
	spec goharness.Task
}

// cut makes the tasks of one bundle from its first valid example that
// supports each level; why says why there are none.
func cut(b bundle.Row) ([]made, string) {
	if b.Kind == "type" {
		return nil, "a type: no call to build a task around"
	}
	tg := goharness.Target{ID: b.APIID, Package: b.ImportPath, Module: b.Module, Name: b.Qualified[strings.LastIndex(b.Qualified, ".")+1:]}
	if b.Kind == "method" {
		parts := strings.Split(b.Qualified, ".")
		tg.Receiver = parts[len(parts)-2]
	}
	got := map[string]made{}
	missing := map[string]string{}
	for _, e := range b.Examples {
		if !e.Valid || !cutsFrom(e.Kind, "go") {
			continue
		}
		ex := goapi.Example{Name: e.Name, Program: e.Code, Output: e.Output, HasOutput: true, Unordered: e.Unordered}
		tasks, skipped, err := goharness.TasksFromExample(ex, tg)
		if err != nil {
			missing["easy"] = err.Error()
			continue
		}
		for level, why := range skipped {
			if _, done := got[level]; !done {
				missing[level] = why
			}
		}
		for _, t := range tasks {
			if _, done := got[t.Difficulty]; done {
				continue
			}
			desc, ok := goharness.Describe(t, tg, b.MProse)
			if !ok {
				missing[t.Difficulty] = "its description would name the target"
				continue
			}
			delete(missing, t.Difficulty)
			spec, _ := json.Marshal(t)
			got[t.Difficulty] = made{spec: t, row: Row{
				TaskID:  fmt.Sprintf("%016x", xxhash.Sum64String(b.APIID+"\x00"+t.Difficulty+"\x00examples\x00"+e.Name)),
				Library: b.Library, Module: b.Module, Version: b.Version, APIID: b.APIID, ImportPath: b.ImportPath,
				Qualified: b.Qualified, PkgName: pkgNameIn(t, b.ImportPath), Family: b.Family, FamilyRep: b.FamilyRep,
				Difficulty: t.Difficulty, Description: desc, Context: t.Context(), Mask: t.ReferenceAnswer(), Reference: t.Program(t.ReferenceAnswer()),
				Generator: "examples", Example: e.Name, Spec: string(spec), Ecosystem: "go",
			}}
		}
	}
	if len(got) == 0 {
		why := "no valid example supports a task"
		for _, w := range missing {
			why = w
			break
		}
		return nil, why
	}
	var miss []string
	for _, level := range []string{goharness.Easy, goharness.Medium, goharness.Hard} {
		if w, ok := missing[level]; ok {
			if _, have := got[level]; !have {
				miss = append(miss, level+": "+w)
			}
		}
	}
	var out []made
	for _, level := range []string{goharness.Easy, goharness.Medium, goharness.Hard} {
		if m, ok := got[level]; ok {
			m.row.Missing = strings.Join(miss, "; ")
			out = append(out, m)
		}
	}
	return out, ""
}

// cutsFrom reports whether tasks are cut from a bundle example of that
// kind: the API's own examples only (Go: its Example functions; Python:
// its doctests and those of the documentation files), as before bundles
// held other kinds. Another API's example, a test, a benchmark or a README
// block is shown in E, never cut: its program was not written to show
// this API's use. Rows from before kinds ("") are the API's own.
func cutsFrom(kind, ecosystem string) bool {
	return kind == "" || kind == bundle.KindExample || ecosystem == "python" && kind == bundle.KindReadme
}

// pkgNameIn is the name the task's program imports a package by.
func pkgNameIn(t goharness.Task, importPath string) string {
	for _, im := range t.Imports {
		name, path, _ := strings.Cut(im, " ")
		if strings.Trim(path, `"`) == importPath {
			return name
		}
	}
	return ""
}
