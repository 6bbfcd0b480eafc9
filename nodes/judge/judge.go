package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
	"github.com/lacuna-dev/lacuna/novelapibench/pyharness"
	"github.com/lacuna-dev/lacuna/runners/llm"
)

func init() { nodes.Register(judgeType{}) }

// judgeConfig:
//
//	node "judge" "qwen" {
//	  tasks          = node.tasks.lo
//	  samples        = node.solve.qwen
//	  model          = model.judge   # optional: the LLM judge
//	  sem            = true          # optional: semantic-equivalence scores (needs model)
//	  on_judge_error = "fail"        # or "fallback"
//	  limit          = 3             # optional: the samples of the first 3 tasks
//	}
type judgeConfig struct {
	Tasks   nodes.Ref `hcl:"tasks"`
	Samples nodes.Ref `hcl:"samples"`
	// Model is the judge model for the samples the fast path leaves
	// undecided; without it the deterministic fallback decides them. Its
	// system, when set, replaces the judge's built-in system prompts
	// (request).
	Model *nodes.Model `hcl:"model,optional"`
	// Sem asks the judge model for each sample's semantic equivalence
	// with the reference.
	Sem bool `hcl:"sem,optional"`
	// OnJudgeError says what a judge model call that failed after its
	// retries does when the judge was unreachable (5xx, 429, timeouts,
	// dropped connections): "fail" (the default) fails the node once every
	// call has been made, so that nothing the judge never answered is
	// stored as if it had, and a re-run makes only the failed calls (the
	// others are cached); "fallback" lets the fallback decide those
	// samples. A refused call (llm.Refused: a 4xx other than 408 and 429,
	// or a 5xx whose message is about the request, as llama-cpp-python
	// answers a response_format it does not take; the same request is
	// refused every time, so failing would fail every re-run) goes to the
	// fallback under either. A fallen-back sample has path fallback, its
	// rule prefixed "judge unreachable; " or "judge refused: HTTP ...; ",
	// and Sem null; a malformed answer goes to the fallback either way.
	// Fallback rows are the node's output like any other: they stay in the
	// cached output until the node is recomputed (lacuna run --recompute on
	// it, or a change of its config), even once the judge would answer.
	OnJudgeError *string `hcl:"on_judge_error,optional"`
	// UnderTest names the model whose samples are judged. The judge model
	// must be another (the paper's is GPT-5-mini judging open models): a
	// model grading its own answers is a plan error unless AllowSelf. Where
	// UnderTest is not set, a sample written by the judge model is the same
	// error when the node runs.
	// Both are absent from the key while unset (key:"omitnull"): a judge
	// without them keeps its key from before they were added.
	UnderTest *nodes.Model `hcl:"under_test,optional" key:"omitnull"`
	AllowSelf *bool        `hcl:"allow_self,optional" key:"omitnull"`
	// Limit judges only the samples of the first Limit tasks in task_id
	// order (a quick slice: a judge model's calibration calls are one per
	// undecided calibration sample of every task); the others are left
	// out of the output. Absent from the key while unset.
	Limit *int `hcl:"limit,optional" key:"omitnull"`
}

func (c *judgeConfig) allowSelf() bool { return c.AllowSelf != nil && *c.AllowSelf }

// What a failed judge call does (judgeConfig.OnJudgeError).
const (
	OnJudgeErrorFail     = "fail"
	OnJudgeErrorFallback = "fallback"
)

func (c *judgeConfig) onJudgeError() string {
	if c.OnJudgeError == nil {
		return OnJudgeErrorFail
	}
	return *c.OnJudgeError
}

// Paths: which part of the judge decided a sample's class.
const (
	PathRule     = "rule"     // the deterministic fast path (goharness.Judge, pyharness.Judge), and NotRun
	PathLLM      = "llm"      // the judge model
	PathFallback = "fallback" // goharness.Fallback (Python: pyFallback): no judge model, its answer was unusable, it refused the call, or (on_judge_error = "fallback") it was unreachable
)

// ClassNotRun marks a Python sample solve never ran (the task has no
// harness, or the sandbox cannot mount its environment) or whose
// environment or target did not load (pyharness.ClassNotRun): not one of the
// failure classes, since nothing about the solution failed. Its path is
// rule, its rule solve's reason; it is never sent to the judge model (for
// a verdict or sem), and the metrics node leaves it out of every rate and
// class distribution, counting it apart (not_run). Go samples never have
// it.
const ClassNotRun = pyharness.ClassNotRun

// JudgeRow is one sample's class in the failure taxonomy (OK or one of the
// six failure classes; NotRun for a Python sample never run) with what
// the metrics node needs.
type JudgeRow struct {
	TaskID     string `parquet:"task_id"`
	SampleID   string `parquet:"sample_id"`
	Kind       string `parquet:"kind"`  // reference, a calibration mutant, or model
	Model      string `parquet:"model"` // the model that wrote the sample ("" for built-in solutions)
	Cell       string `parquet:"cell"`
	APIID      string `parquet:"api_id"`
	Library    string `parquet:"library"`
	Difficulty string `parquet:"difficulty"`
	Passed     bool   `parquet:"passed"`
	SpyDirect  int64  `parquet:"spy_direct"`
	// APICalled: the solver's code names the target and the spy counted
	// a direct call (calls the task's context makes do not count).
	APICalled bool `parquet:"api_called"`
	// ParamCorr is the solver's calls of the target against the
	// reference's, argument by argument, in [0, 1]: for a Go task
	// goharness.ParamCorr (positional: the gofmt-printed argument at each
	// position), for a Python task pyharness.ParamCorr (positional
	// arguments by position, keywords by name, each compared as
	// normalised source: tokens rejoined, outer parentheses dropped,
	// plain strings in single quotes; read lexically in lacuna's process,
	// the code never run; a call in an f-string's field is read). Both:
	// only the reference's first call of the target is compared, and the
	// solver's best-matching call counts; 0 when the solver's code never
	// calls the target; null when the reference has no recognisable call
	// of it (undefined), and for NotRun. Python also: null (unknown, not
	// 0) when the solution's source shows no call of the target's name but
	// the spy counted direct calls (spy_direct > 0): a call the lexical
	// scan cannot see, as map(scale, xs), functools.partial(scale, k=2) or
	// g = scale; g(xs).
	ParamCorr *float64 `parquet:"param_corr,optional"`
	// Sem is the judge model's semantic-equivalence score in [0, 1]; null
	// without sem, and where the answer was unusable.
	Sem   *float64 `parquet:"sem,optional"`
	Class string   `parquet:"class"` // OK, WrongSyntax, WrongAPISelection, WrongImport, WrongParam, WrongShapeDtype, WrongLogic; NotRun (ClassNotRun, Python only)
	// Rule is the rule that fired (rule, fallback paths) or the judge
	// model's rationale (llm path).
	Rule string `parquet:"rule"`
	Path string `parquet:"path"` // rule, llm or fallback
	// Expected is the class a calibration solution stands for by
	// construction (goharness.ExpectedClass); "" for a model's samples.
	Expected string `parquet:"expected"`
}

type judgeType struct {
	nodes.Static[judgeConfig, JudgeRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed       = judgeType{}
	_ nodes.Documented  = judgeType{}
	_ nodes.Validator   = judgeType{}
	_ nodes.Resolver    = judgeType{}
	_ nodes.CallPlanner = judgeType{}
)

func (judgeType) Name() string    { return "judge" }
func (judgeType) Version() string { return "12" }
func (judgeType) Doc() string {
	return "Classifies every sample into OK or one of the six failure classes (NovelAPIBench §3.3): deterministic rules first " +
		"(OK, WrongSyntax, WrongAPISelection, WrongImport), then the judge model (model = ...) for the rest, prompted with the task, " +
		"the code, its call structure and the truncated failure, its answer constrained to the six classes by a JSON schema " +
		"(the model block's system, when set, replaces the judge's built-in system prompt, for verdicts and sem alike); " +
		"a deterministic fallback decides when there is no judge model or its answer is unusable, or when the judge refuses a call " +
		"(a 4xx other than 408 and 429, or a 5xx whose message is about the request, the rule saying \"judge refused: HTTP ...\"). A judge call still unreachable after its retries " +
		"fails the node once the other calls are made and cached, so a re-run makes only the failed ones (on_judge_error = \"fail\", " +
		"the default); with on_judge_error = \"fallback\" the fallback decides those samples too, the rule saying \"judge unreachable\". " +
		"Fallback rows stay in the cached output until the node is recomputed (lacuna run --recompute ADDR, or a config change). " +
		"With sem = true the judge model also " +
		"scores each sample's semantic equivalence with the reference. Calibration samples are checked against their class by " +
		"construction (report \"calibration\"). Python tasks (ecosystem \"python\") take the same path with pyharness.Judge's fast path " +
		"(SyntaxError, import errors, a wrong name on the target's module, the target never named) and the judge model's Python prompt " +
		"(the spy's recorded call shapes and the exception's traceback among its evidence); a Python sample solve never ran is NotRun " +
		"(not a failure class: never sent to the judge model, left out of metrics). `limit` judges only the samples of the first N tasks " +
		"(task_id order), e.g. a slice's calibration. param_corr compares the solver's calls of the target " +
		"with the reference's argument by argument (Python: positional by position, keywords by name)."
}

func (judgeType) Validate(cfg any) error {
	c := cfg.(*judgeConfig)
	if c.Sem && c.Model == nil {
		return nodes.Errorf("sem", "Sem needs a judge model", "sem = true asks a judge model for semantic equivalence: set model = model.X.")
	}
	if c.Limit != nil && *c.Limit < 1 {
		return nodes.Errorf("limit", "Invalid limit", "limit must be at least 1.")
	}
	if m := c.onJudgeError(); m != OnJudgeErrorFail && m != OnJudgeErrorFallback {
		return nodes.Errorf("on_judge_error", "Invalid on_judge_error", "on_judge_error is %q or %q, not %q.", OnJudgeErrorFail, OnJudgeErrorFallback, m)
	}
	if c.Model != nil && c.UnderTest != nil && c.Model.ID == c.UnderTest.ID && !c.allowSelf() {
		return nodes.Errorf("model", "Judge model is the model under test", selfJudged+".", c.Model.ID)
	}
	return nil
}

// selfJudged explains why a model may not judge its own samples.
const selfJudged = "the judge model and the model under test are both %s: a model would grade its own answers. " +
	"Name another judge model (the paper uses GPT-5-mini), or set allow_self = true to do this on purpose"

// Resolve checks the judge model against its server and pins what it
// reports; without a model there is nothing outside to pin.
func (judgeType) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	c := r.Config().(*judgeConfig)
	if c.Model == nil {
		return nil, nil
	}
	m, id, err := llmenv.Resolve(ctx, r, "model", "judge", *c.Model)
	if err != nil {
		return nil, err
	}
	return &nodes.Pinned{Identity: id, Value: m}, nil
}

// judged is the work of one run: the rows with the fast path's and the
// fallback's decisions, and the model calls that may replace them.
type judged struct {
	rows  []JudgeRow
	calls []judgeCall
}

// judgeCall is one model call for row Row: a verdict (sem false) or a
// semantic-equivalence score.
type judgeCall struct {
	Row  int
	Sem  bool
	Call llm.Call
}

func (t judgeType) prepare(r nodes.Run) (*judged, *llmenv.Model, error) {
	c := t.Config(r)
	tks, err := tasks.ReadTasks(r, c.Tasks)
	if err != nil {
		return nil, nil, err
	}
	in, err := r.Input(c.Samples)
	if err != nil {
		return nil, nil, err
	}
	samples, err := artifacts.ReadAll[tasks.SampleRow](in)
	if err != nil {
		return nil, nil, err
	}
	if c.Limit != nil {
		samples = firstTasks(samples, tks, *c.Limit)
	}
	m, _ := r.Pinned().(*llmenv.Model)
	if c.Model != nil && m == nil {
		return nil, nil, fmt.Errorf("judge: the model was not resolved")
	}
	if c.Model != nil && !c.allowSelf() {
		for _, s := range samples {
			if s.Model == c.Model.ID {
				return nil, nil, fmt.Errorf("samples: task %s's sample %s was written by the judge model: "+selfJudged, s.TaskID, s.SampleID, s.Model)
			}
		}
	}
	byID := map[string]tasks.Row{}
	refs := map[string]*goharness.CallInfo{} // the reference's call of the target, by task
	for _, t := range tks {
		byID[t.TaskID] = t
		if t.Ecosystem != "python" {
			refs[t.TaskID] = goharness.TargetCall(t.Mask, t.Reference, tasks.Target(t), t.PkgName)
		}
	}
	j := &judged{rows: make([]JudgeRow, 0, len(samples))}
	for i, s := range samples {
		task, ok := byID[s.TaskID]
		if !ok {
			return nil, nil, fmt.Errorf("sample %s/%s: no such task", s.TaskID, s.SampleID)
		}
		if task.Ecosystem == "python" {
			row, ask, err := judgePython(s, task)
			if err != nil {
				return nil, nil, err
			}
			if ask != nil && m != nil {
				sys, user := pyharness.JudgePrompt(*ask)
				j.calls = append(j.calls, judgeCall{Row: i, Call: request(m, sys, user, goharness.JudgeSchema, "failure_class")})
			}
			if c.Sem && m != nil && row.Class != ClassNotRun {
				sys, user := pyharness.SemPrompt(task.Description, task.Context, s.Solution, task.Mask)
				j.calls = append(j.calls, judgeCall{Row: i, Sem: true, Call: request(m, sys, user, goharness.SemSchema, "semantic_equivalence")})
			}
			j.rows = append(j.rows, row)
			continue
		}
		tg := tasks.Target(task)
		ran := s.CompileError == "" && s.Observation != ""
		gs := goharness.Sample{Program: s.Program, Solution: s.Solution, Passed: s.Passed, CompileError: s.CompileError, Ran: ran, Direct: s.SpyDirect}
		row := JudgeRow{TaskID: s.TaskID, SampleID: s.SampleID, Kind: s.Kind, Model: s.Model, Cell: s.Cell, APIID: s.APIID,
			Library: task.Library, Difficulty: task.Difficulty, Passed: s.Passed, SpyDirect: s.SpyDirect, Path: PathRule}
		row.Expected, _ = goharness.ExpectedClass(s.Kind)
		calls := goharness.CallStructure(s.Solution, s.Program, tg, task.PkgName)
		for _, c := range calls {
			row.APICalled = row.APICalled || (c.Target && s.SpyDirect > 0)
		}
		ref := refs[s.TaskID]
		if corr, ok := goharness.MatchCalls(calls, ref); ok {
			row.ParamCorr = &corr
		}
		row.Class, row.Rule = goharness.Judge(gs, tg, task.PkgName)
		if row.Class == goharness.ClassNeedsLLM {
			fail := goharness.RunFailure{CompileError: s.CompileError, RuntimeError: s.RuntimeError, TimedOut: s.TimedOut, FailedLayers: s.FailedLayers, Failures: s.Failures}
			row.Class, row.Rule = goharness.Fallback(gs, fail, tg, task.PkgName, row.ParamCorr)
			row.Path = PathFallback
			if m != nil {
				in := goharness.JudgeInput{Target: tg, Description: task.Description, Context: task.Context, Solution: s.Solution, Calls: calls, Failure: fail}
				if ref != nil {
					in.Reference = ref.String()
				}
				sys, user := goharness.JudgePrompt(in)
				j.calls = append(j.calls, judgeCall{Row: i, Call: request(m, sys, user, goharness.JudgeSchema, "failure_class")})
			}
		}
		if c.Sem && m != nil {
			sys, user := goharness.SemPrompt(task.Description, task.Context, s.Solution, task.Mask)
			j.calls = append(j.calls, judgeCall{Row: i, Sem: true, Call: request(m, sys, user, goharness.SemSchema, "semantic_equivalence")})
		}
		j.rows = append(j.rows, row)
	}
	return j, m, nil
}

// firstTasks keeps the samples of the first n tasks in task_id order.
func firstTasks(samples []tasks.SampleRow, tks []tasks.Row, n int) []tasks.SampleRow {
	ids := make([]string, len(tks))
	for i, t := range tks {
		ids[i] = t.TaskID
	}
	slices.Sort(ids)
	keep := map[string]bool{}
	for _, id := range ids[:min(n, len(ids))] {
		keep[id] = true
	}
	return slices.DeleteFunc(samples, func(s tasks.SampleRow) bool { return !keep[s.TaskID] })
}

// request is one judge call: the model block's sampling settings
// (temperature 0 when it sets none: a judge should not vary), the
// judge's own system message unless the model block sets system, which
// replaces it (for verdicts and sem scores alike: it must then say what
// the answer is, the six classes or the equivalence score; the schema
// still constrains the answer), the answer constrained by schema.
func request(m *llmenv.Model, system, user string, schema []byte, name string) llm.Call {
	cfg := m.Config
	if cfg.System != nil && *cfg.System != "" {
		system = *cfg.System
	}
	zero := 0.0
	req := m.Request() // the block's sampling defaults and params
	req.Schema, req.SchemaName = schema, name
	if req.Temperature == nil {
		req.Temperature = &zero
	}
	if cfg.MaxTokens == nil {
		req.MaxTokens = 512
	}
	if req.API == "completions" {
		req.Prompt = system + "\n\n" + user + "\n\nAnswer (JSON):\n"
	} else {
		req.Messages = []llm.Message{{Role: "system", Content: system}, {Role: "user", Content: user}}
	}
	return llm.Call{Request: req}
}

// unique lists the calls to make: identical questions (a sample run
// twice, as the reference is) are asked once. first maps every call to the
// one that asks its question.
func (j *judged) unique() (unique, first []int, err error) {
	seen := map[string]int{}
	first = make([]int, len(j.calls))
	for i, c := range j.calls {
		b, err := json.Marshal(c.Call)
		if err != nil {
			return nil, nil, fmt.Errorf("judge: encode call: %w", err)
		}
		f, ok := seen[string(b)]
		if !ok {
			f = i
			seen[string(b)] = i
			unique = append(unique, i)
		}
		first[i] = f
	}
	return unique, first, nil
}

// PlanCalls counts the judge model's calls: one per distinct question of a
// sample the fast path leaves undecided, and of each sample with sem (of
// the first limit tasks' samples, with limit); the completion tokens of
// each call still to make are estimated by llmenv.Estimate: the cached
// answers' mean, else a short verdict (60) when the model block sets no
// max_tokens, else a share of its max_tokens (a reasoning judge thinks
// first).
// CallsModels: the judge calls a model when it has one.
func (judgeType) CallsModels(cfg any) bool { return cfg.(*judgeConfig).Model != nil }

func (t judgeType) PlanCalls(ctx context.Context, r nodes.Run) ([]nodes.CallPlan, error) {
	j, m, err := t.prepare(r)
	if err != nil || m == nil {
		return nil, err
	}
	unique, _, err := j.unique()
	if err != nil {
		return nil, err
	}
	calls := make([]llm.Call, len(unique))
	for n, i := range unique {
		calls[n] = j.calls[i].Call
	}
	perAnswer := 60 // a verdict is short...
	if m.Config.MaxTokens != nil {
		perAnswer = 0 // ... unless the model block says how long (a reasoning judge thinks first): Estimate takes a share of the request's
	}
	return []nodes.CallPlan{llmenv.Estimate(m.Client(r), m.Config.ID, calls, perAnswer)}, nil
}

func (t judgeType) Run(ctx context.Context, r nodes.Run) error {
	j, m, err := t.prepare(r)
	if err != nil {
		return err
	}
	var problems map[string]int
	var failed callFailures
	if m != nil {
		problems, failed, err = j.ask(ctx, r, m.Client(r), m.Endpoint.Concurrency, t.Config(r).onJudgeError())
		if err != nil {
			return err
		}
	}
	out := j.rows
	t.log(r, out, problems, failed)
	return t.Write(r, out)
}

// ask makes the judge model's calls, at most the model's concurrency at
// once, and puts usable answers into the rows: a verdict replaces the
// fallback's class (path llm); a score sets Sem. An answer is usable when
// goharness.ParseVerdict (ParseSem) reads it: the JSON object of the
// schema, a reasoning model's <think> blocks and a fence around it left
// aside. The client's schema check (Response.SchemaHeld) sees the fence as
// part of the answer, so it only names the violation of an answer the
// parser rejects. An unusable answer (the schema not held, not JSON, not a
// class) leaves the fallback's decision, its rule saying why, and Sem
// null; problems counts them by reason.
//
// A call the judge refused (callFailure) leaves the sample the
// fallback's decision, its rule prefixed with the failure, and Sem null.
// A call unreachable after its retries is what onError says: with "fail"
// ask returns an error once every call has been made (the answered ones
// are cached as they complete, failures never are, so a re-run makes only
// the failed calls); with "fallback" it goes as a refused one. failed
// counts the failed calls.
func (j *judged) ask(ctx context.Context, r nodes.Run, cl *llm.Client, conc int, onError string) (problems map[string]int, failed callFailures, err error) {
	type answer struct {
		resp *llm.Response
		err  error
	}
	unique, first, err := j.unique()
	if err != nil {
		return nil, failed, err
	}
	answers := make([]answer, len(j.calls))
	reqs := make([]llm.Call, len(unique))
	for n, i := range unique {
		reqs[n] = j.calls[i].Call
	}
	llmenv.DoAll(ctx, r, cl, reqs, conc, false, func(n int, resp *llm.Response, err error) {
		answers[unique[n]] = answer{resp, err}
	})
	if err := ctx.Err(); err != nil {
		return nil, failed, err
	}
	r.Report("usage", cl.Stats())
	for _, i := range unique {
		if err := answers[i].err; err != nil {
			failed.add(err)
		} else if w := answers[i].resp.Warning; w != "" {
			if failed.fallbacks == 0 {
				failed.fallback = w
			}
			failed.fallbacks++
		}
	}
	if failed.unreachable > 0 && onError == OnJudgeErrorFail {
		return nil, failed, fmt.Errorf("judge: %d of %d judge model calls failed after their retries (%s; the first unreachable: %w); "+
			"the %d answered are cached, so a re-run makes only the failed calls (on_judge_error = %q lets the fallback decide the unreachable ones' samples instead)",
			failed.n(), len(unique), failed, failed.firstUnreachable, len(unique)-failed.n(), OnJudgeErrorFallback)
	}
	for i := range j.calls {
		answers[i] = answers[first[i]]
	}
	problems = map[string]int{}
	for i, c := range j.calls {
		row := &j.rows[c.Row]
		a := answers[i]
		if a.err != nil {
			why := callFailure(a.err)
			r.Logf("%s/%s: %s: %v", row.TaskID, row.SampleID, why, a.err)
			if !c.Sem {
				row.Rule = why + "; " + row.Rule
			}
			continue
		}
		if c.Sem {
			s, err := goharness.ParseSem(a.resp.Text)
			if err == nil {
				row.Sem = &s
				continue
			}
			problems["sem answer unusable"]++
			r.Logf("%s/%s: sem answer unusable: %v", row.TaskID, row.SampleID, err)
			continue
		}
		class, rationale, err := goharness.ParseVerdict(a.resp.Text)
		if err == nil {
			row.Class, row.Rule, row.Path = class, rationale, PathLLM
			continue
		}
		why := unusable(a.resp, err)
		problems[strings.SplitN(why, " (", 2)[0]]++
		row.Rule = why + "; " + row.Rule
	}
	return problems, failed, nil
}

// callFailures counts the judge model's calls that failed after their
// retries: refused (llm.Refused: the server will not answer this request)
// or unreachable (anything else: 5xx, 429, timeouts, dropped
// connections); and the answers the client obtained through its
// structured-output fallback (llm.Response.Warning; the first one's).
type callFailures struct {
	unreachable, refused int
	firstUnreachable     error
	fallbacks            int
	fallback             string
}

func (f *callFailures) add(err error) {
	if llm.Refused(err) {
		f.refused++
		return
	}
	if f.firstUnreachable == nil {
		f.firstUnreachable = err
	}
	f.unreachable++
}

func (f callFailures) n() int { return f.unreachable + f.refused }

func (f callFailures) String() string {
	return fmt.Sprintf("%d unreachable, %d refused", f.unreachable, f.refused)
}

// callFailure names a failed call for a row's rule: "judge refused: HTTP
// 400 Bad Request: the answer's first line" for a refusal of the request
// (llm.Refused: a 4xx other than 408 and 429, or a 5xx whose message is
// about the request), "judge unreachable" otherwise.
func callFailure(err error) string {
	var se *llm.StatusError
	if !errors.As(err, &se) || !se.Refused {
		return "judge unreachable"
	}
	why := fmt.Sprintf("judge refused: HTTP %d %s", se.Status, http.StatusText(se.Status))
	if body, _, _ := strings.Cut(strings.TrimSpace(se.Body), "\n"); body != "" {
		if len(body) > 120 {
			body = strings.ToValidUTF8(body[:120], "") + "..."
		}
		why += ": " + body
	}
	return why
}

// unusable says why a verdict could not be read: the schema the client
// found broken (an old server that ignores structured output answers
// free text), or the parser's reason.
func unusable(resp *llm.Response, err error) string {
	if resp.SchemaHeld != nil && !*resp.SchemaHeld {
		return "judge answer broke the schema (" + resp.SchemaError + ")"
	}
	return "judge answer unusable (" + err.Error() + ")"
}

// CalibrationReport is the judge's agreement with the classes calibration
// solutions have by construction.
type CalibrationReport struct {
	Samples   int                       `json:"samples"`
	Agree     int                       `json:"agree"`
	Agreement float64                   `json:"agreement"`
	Confusion map[string]map[string]int `json:"confusion"` // expected class → assigned class → samples
	// ByPath is the same per deciding path.
	ByPath map[string]*PathAgreement `json:"by_path"`
}

// PathAgreement is a CalibrationReport restricted to one path.
type PathAgreement struct {
	Samples   int                       `json:"samples"`
	Agree     int                       `json:"agree"`
	Confusion map[string]map[string]int `json:"confusion"`
}

// Calibration computes the agreement of rows whose class is known by
// construction (Expected set), NotRun rows left out (nothing was judged);
// nil when there are none.
func Calibration(rows []JudgeRow) *CalibrationReport {
	rep := &CalibrationReport{Confusion: map[string]map[string]int{}, ByPath: map[string]*PathAgreement{}}
	add := func(m map[string]map[string]int, exp, got string) {
		if m[exp] == nil {
			m[exp] = map[string]int{}
		}
		m[exp][got]++
	}
	for _, row := range rows {
		if row.Expected == "" || row.Class == ClassNotRun {
			continue
		}
		p := rep.ByPath[row.Path]
		if p == nil {
			p = &PathAgreement{Confusion: map[string]map[string]int{}}
			rep.ByPath[row.Path] = p
		}
		rep.Samples++
		p.Samples++
		if row.Class == row.Expected {
			rep.Agree++
			p.Agree++
		}
		add(rep.Confusion, row.Expected, row.Class)
		add(p.Confusion, row.Expected, row.Class)
	}
	if rep.Samples == 0 {
		return nil
	}
	rep.Agreement = float64(rep.Agree) / float64(rep.Samples)
	return rep
}

// classOrder sorts classes as the paper does: OK, then the six, then
// NotRun.
func classOrder(classes []string) []string {
	order := append(append([]string{goharness.ClassOK}, goharness.FailureClasses...), ClassNotRun)
	slices.SortStableFunc(classes, func(a, b string) int {
		ia, ib := slices.Index(order, a), slices.Index(order, b)
		if ia < 0 {
			ia = len(order)
		}
		if ib < 0 {
			ib = len(order)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	return classes
}

// log writes the kind × class table, the calibration agreement and its
// confusion table, and the note.
func (judgeType) log(r nodes.Run, out []JudgeRow, problems map[string]int, failed callFailures) {
	byKind := map[string]map[string]int{}
	classes := map[string]int{}
	paths := map[string]int{}
	for _, row := range out {
		if byKind[row.Kind] == nil {
			byKind[row.Kind] = map[string]int{}
		}
		byKind[row.Kind][row.Class]++
		classes[row.Class]++
		paths[row.Path]++
	}
	cols := classOrder(tasks.SortedKeys(classes))
	table(r, "kind", byKind, tasks.SortedKeys(byKind), cols)
	for _, p := range tasks.SortedKeys(problems) {
		r.Logf("%d unusable judge answers: %s", problems[p], p)
	}
	var parts []string
	for _, cl := range cols {
		parts = append(parts, fmt.Sprintf("%s %d", cl, classes[cl]))
	}
	note := fmt.Sprintf("%d samples: %s; paths: rule %d, llm %d, fallback %d", len(out), strings.Join(parts, ", "), paths[PathRule], paths[PathLLM], paths[PathFallback])
	unusable := 0
	for _, n := range problems {
		unusable += n
	}
	if unusable > 0 {
		note += fmt.Sprintf("; %d judge answers unusable (see the log)", unusable)
	}
	if failed.n() > 0 {
		note += fmt.Sprintf("; %d judge calls failed (%s), their samples decided by the fallback and their sem null", failed.n(), failed)
	}
	if failed.fallbacks > 0 {
		r.Logf("%d judge answers obtained through the structured-output fallback: %s", failed.fallbacks, failed.fallback)
		note += fmt.Sprintf("; warning: %d judge answers through the structured-output fallback (the server refused json_schema; see the log)", failed.fallbacks)
	}
	if cal := Calibration(out); cal != nil {
		r.Report("calibration", cal)
		r.Logf("calibration: %d of %d samples in their class by construction (%.1f%%)", cal.Agree, cal.Samples, 100*cal.Agreement)
		exp := classOrder(tasks.SortedKeys(cal.Confusion))
		var got []string
		for _, m := range cal.Confusion {
			for c := range m {
				if !slices.Contains(got, c) {
					got = append(got, c)
				}
			}
		}
		table(r, "expected", cal.Confusion, exp, classOrder(got))
		for _, p := range tasks.SortedKeys(cal.ByPath) {
			pa := cal.ByPath[p]
			r.Logf("calibration, path %s: %d of %d agree", p, pa.Agree, pa.Samples)
		}
		note += fmt.Sprintf("; calibration agreement %d/%d", cal.Agree, cal.Samples)
	}
	r.Note("%s", note)
}

// table logs counts by row label and column.
func table(r nodes.Run, corner string, m map[string]map[string]int, rows, cols []string) {
	r.Logf("%-18s %s", corner, strings.Join(cols, "  "))
	for _, k := range rows {
		var cells []string
		for _, cl := range cols {
			cells = append(cells, fmt.Sprintf("%*d", len(cl), m[k][cl]))
		}
		r.Logf("%-18s %s", k, strings.Join(cells, "  "))
	}
}
