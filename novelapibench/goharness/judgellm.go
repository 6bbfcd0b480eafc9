package goharness

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/lacuna-dev/lacuna/runners/llm"
)

// expected is the class each calibration solution stands for, by
// construction (see the Mutant* kinds).
var expected = map[string]string{
	"reference":     ClassOK,
	MutantSyntax:    ClassWrongSyntax,       // a parenthesis dropped: it cannot parse
	MutantSibling:   ClassWrongAPISelection, // another API of the package called instead
	MutantNull:      ClassWrongAPISelection, // nothing is called: the target never is
	MutantImport:    ClassWrongImport,       // the right call, a wrong import path
	MutantPerturb:   ClassWrongParam,        // the right call, a literal argument changed
	MutantHardcoded: ClassWrongAPISelection, // the values written out, the target never called
	MutantThrowaway: ClassWrongLogic,        // the right call, its values overwritten after it
	MutantDiscarded: ClassWrongLogic,        // the right call, its result thrown away
	MutantExit:      ClassWrongLogic,        // the right call, the program cut short (os.Exit)
	MutantGoexit:    ClassWrongLogic,        // the right call, the program cut short (runtime.Goexit)
}

// ExpectedClass is the class a calibration solution of this kind stands
// for by construction: the reference is OK; the syntax mutant
// WrongSyntax; the sibling, null and hardcoded mutants WrongAPISelection
// (the target is never called); the import mutant WrongImport; the
// perturbed argument WrongParam; the throwaway, discarded, exit and goexit
// mutants WrongLogic (the call is right, the program around it is not).
// ok is false for any other kind (a model's sample).
func ExpectedClass(kind string) (class string, ok bool) {
	class, ok = expected[kind]
	return class, ok
}

// RunFailure is what a failed run says about itself, as the judge sees it.
type RunFailure struct {
	CompileError string
	RuntimeError string // a panic with its stack, a crash, an exit
	TimedOut     bool
	FailedLayers []string // the harness's layers that failed
	Failures     string   // the harness's reasons, one per line
}

// Bounds of what the LLM judge is shown (of a Python sample too).
const (
	MaxPromptCode    = 6000 // the task's context, the solution
	MaxPromptFailure = 1500 // each part of the failure
)

// argTrouble matches the go compiler's complaints about the arguments of
// a call of NAME (pkg.NAME, x.NAME, (*T).NAME).
const argTrouble = `(?:(?:not enough|too many) arguments in call to|in argument to|in call to) \(?[\w.*\[\]]*\bNAME\b(?:$|[^.(\w])|in call to [\w.]*\bNAME, cannot infer`

// Fallback decides a sample the fast path left to the LLM judge (Judge
// answered ClassNeedsLLM) when there is no judge model, its answer is
// malformed or it cannot be reached. The rules, in order:
//
//  1. a compile error about the target's arguments (too many / not
//     enough arguments in the call, a value that cannot be used in
//     argument to it, type arguments that cannot be inferred) →
//     WrongParam;
//  2. the solver's code never calls the target → WrongAPISelection,
//     whether or not it compiles (an answer that does something else
//     and leaves the context's names undefined is still the wrong API);
//  3. any other compile error → WrongLogic: the target is called, the
//     program around the call is wrong;
//  4. a panic whose innermost frame below the runtime is a function of
//     the target's package → WrongShapeDtype (a contract violated inside
//     the API's body);
//  5. the program left no record (the harness refused the span, it
//     crashed, exited or was tampered with) → WrongLogic;
//  6. the code names the target but the spy counted no direct call →
//     WrongAPISelection;
//  7. the call's arguments differ from the reference's (paramCorr < 1,
//     see ParamCorr) → WrongParam; skipped when paramCorr is nil
//     (undefined: the reference has no call of the target to compare
//     with);
//  8. anything else (a wrong result, a panic in the solver's own code, a
//     hang, a harness layer failed) → WrongLogic.
//
// Rule 7 is a heuristic: an argument written differently but equal in
// value counts as different; that is what the LLM judge is for.
func Fallback(s Sample, f RunFailure, tg Target, pkgName string, paramCorr *float64) (class, rule string) {
	code, prog, name := solverCode(s.Solution, s.Program, tg, pkgName)
	if f.CompileError != "" {
		if regexp.MustCompile(`(?m)` + strings.ReplaceAll(argTrouble, "NAME", regexp.QuoteMeta(tg.Name))).MatchString(f.CompileError) {
			return ClassWrongParam, "the compiler rejects the arguments of " + tg.Name + ": " + firstLine(f.CompileError)
		}
		if !callsTarget(prog, code, name, tg) {
			return ClassWrongAPISelection, "never calls " + tg.Name + " (and does not compile: " + firstLine(f.CompileError) + ")"
		}
		return ClassWrongLogic, "calls " + tg.Name + "; the code around it does not compile: " + firstLine(f.CompileError)
	}
	if !callsTarget(prog, code, name, tg) {
		return ClassWrongAPISelection, "never calls " + tg.Name
	}
	if fn := panicSite(f.RuntimeError); fn != "" && strings.HasPrefix(fn, tg.Package+".") {
		return ClassWrongShapeDtype, "panics inside " + tg.Package + ": " + fn
	}
	if !s.Ran {
		why := firstLine(f.RuntimeError)
		if why == "" {
			why = firstLine(f.Failures)
		}
		return ClassWrongLogic, "calls " + tg.Name + "; the program did not run to its end: " + why
	}
	if s.Direct == 0 {
		return ClassWrongAPISelection, "names " + tg.Name + " but never calls it"
	}
	calls := "calls " + tg.Name + " as the reference does"
	switch {
	case paramCorr == nil:
		calls = "calls " + tg.Name + " (the reference has no call of it: arguments not compared)"
	case *paramCorr < 1:
		return ClassWrongParam, fmt.Sprintf("calls %s with arguments other than the reference's (param_corr %.2f)", tg.Name, *paramCorr)
	}
	switch {
	case f.TimedOut:
		return ClassWrongLogic, calls + "; runs past its time limit"
	case f.RuntimeError != "":
		return ClassWrongLogic, calls + "; fails outside it: " + firstLine(f.RuntimeError)
	}
	return ClassWrongLogic, calls + "; the program around it is wrong"
}

// panicSite is the function a panic's stack says panicked: the first
// frame after panic(...) that is not the runtime's; "" without one.
func panicSite(stack string) string {
	i := strings.Index(stack, "\npanic(")
	if i < 0 {
		return ""
	}
	for _, line := range strings.Split(stack[i+1:], "\n")[1:] {
		if line == "" || strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "runtime.") || strings.HasPrefix(line, "panic(") {
			continue
		}
		return line
	}
	return ""
}

// JudgeInput is what the LLM judge is shown of one failed sample.
type JudgeInput struct {
	Target      Target
	Description string // the task
	Context     string // the program with the span masked
	Solution    string // the solver's answer
	// Calls are the solver's calls of the target's package (CallStructure);
	// Reference the reference's call of the target (TargetCall's String).
	Calls     []CallInfo
	Reference string
	Failure   RunFailure
}

// JudgeSchema constrains the judge's answer: one of the six failure
// classes and a short rationale.
var JudgeSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"class":{"type":"string","enum":["WrongSyntax","WrongAPISelection","WrongImport","WrongParam","WrongShapeDtype","WrongLogic"]},` +
	`"rationale":{"type":"string","maxLength":300}},"required":["class","rationale"],"additionalProperties":false}`)

// SemSchema constrains the semantic-equivalence answer.
var SemSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"equivalent":{"type":"boolean"},"score":{"type":"number","minimum":0,"maximum":1}},` +
	`"required":["equivalent","score"],"additionalProperties":false}`)

// Lang is what the judge's prompts say of a task's language: its name,
// the tag of its code fences, and what each of the six failure classes
// means in it. The classes, the answer's schema and its parsing are the
// same in every language.
type Lang struct {
	Name    string            // "Go"
	Fence   string            // "go"
	Classes map[string]string // each of FailureClasses → its meaning
}

// GoLang is Go's.
var GoLang = Lang{Name: "Go", Fence: "go", Classes: map[string]string{
	ClassWrongSyntax:       "the code is not valid Go.",
	ClassWrongAPISelection: "the target API is never invoked; a sibling or a non-existent symbol is called instead.",
	ClassWrongImport:       "the right symbol, but a wrong or missing import path.",
	ClassWrongParam:        "the right call, but a wrong argument (value, order, count or type).",
	ClassWrongShapeDtype:   "the right call, but it violates the API's contract, failing inside the API's body (a panic in the library, a wrong shape or type of data handed to it).",
	ClassWrongLogic:        "the right call with right arguments, but the program around it is wrong.",
}}

// JudgeSystem is the judge's system message: the six classes in
// FailureClasses' order, each with its meaning in l, and the answer's
// form (JudgeSchema).
func (l Lang) JudgeSystem() string {
	var b strings.Builder
	fmt.Fprintf(&b, "You classify why a solution to a %s coding task failed. The task asks for code that uses one API of a library; an execute-then-assert harness ran the solution and rejected it. Answer with exactly one class:\n", l.Name)
	for _, c := range FailureClasses {
		fmt.Fprintf(&b, "- %s: %s\n", c, l.Classes[c])
	}
	b.WriteString(`Answer as JSON: {"class": "...", "rationale": "one sentence"}.`)
	return b.String()
}

// SemPrompt renders the semantic-equivalence judge's messages for a task
// in l, every part bounded to MaxPromptCode bytes.
func (l Lang) SemPrompt(description, context, solution, reference string) (system, user string) {
	system = fmt.Sprintf(`You judge whether a solution to a %s coding task is semantically equivalent to the reference solution: whether it computes the same result through the same API for every input the task admits. Answer as JSON: {"equivalent": true|false, "score": a number from 0 (unrelated) to 1 (equivalent)}.`, l.Name)
	f := l.Fence
	return system, fmt.Sprintf("Task:\n%s\n\nContext (solutions replace <MASK>):\n```%s\n%s\n```\n\nReference solution:\n```%s\n%s\n```\n\nSolution to judge:\n```%s\n%s\n```\n",
		Clip(description, MaxPromptCode), f, Clip(context, MaxPromptCode), f, Clip(reference, MaxPromptCode), f, Clip(solution, MaxPromptCode))
}

// JudgePrompt renders the judge's system and user messages. Every part
// is bounded: the code to MaxPromptCode bytes, each part of the failure
// to MaxPromptFailure.
func JudgePrompt(in JudgeInput) (system, user string) {
	var b strings.Builder
	name := in.Target.Name
	if in.Target.Receiver != "" {
		name = in.Target.Receiver + "." + name
	}
	fmt.Fprintf(&b, "Target API: %s (package %s)\n\nTask:\n%s\n\nContext (the solution replaces <MASK>):\n```go\n%s\n```\n\n",
		name, in.Target.Package, Clip(in.Description, MaxPromptCode), Clip(in.Context, MaxPromptCode))
	fmt.Fprintf(&b, "Solution:\n```go\n%s\n```\n\nCalls of the target's package in the solution (from its syntax tree):\n", Clip(in.Solution, MaxPromptCode))
	if len(in.Calls) == 0 {
		b.WriteString("- none\n")
	}
	for _, c := range in.Calls {
		mark := ""
		if c.Target {
			mark = "  [the target]"
		}
		fmt.Fprintf(&b, "- %s%s\n", Clip(c.String(), 300), mark)
	}
	ref := in.Reference
	if ref == "" {
		ref = "(none found)"
	}
	fmt.Fprintf(&b, "The reference solution calls: %s\n\nFailure:\n", Clip(ref, 300))
	f := in.Failure
	if f.CompileError != "" {
		fmt.Fprintf(&b, "compile error:\n%s\n", Clip(f.CompileError, MaxPromptFailure))
	}
	if f.RuntimeError != "" {
		fmt.Fprintf(&b, "runtime error:\n%s\n", Clip(f.RuntimeError, MaxPromptFailure))
	}
	if f.TimedOut {
		b.WriteString("the program ran past its time limit\n")
	}
	if len(f.FailedLayers) > 0 {
		fmt.Fprintf(&b, "failed harness layers: %s\n", strings.Join(f.FailedLayers, ", "))
	}
	if f.Failures != "" {
		fmt.Fprintf(&b, "harness failures:\n%s\n", Clip(f.Failures, MaxPromptFailure))
	}
	return GoLang.JudgeSystem(), b.String()
}

// SemPrompt renders the semantic-equivalence judge's messages for a Go
// task (GoLang.SemPrompt).
func SemPrompt(description, context, solution, reference string) (system, user string) {
	return GoLang.SemPrompt(description, context, solution, reference)
}

// ParseVerdict reads the judge's answer: a JSON object with a class among
// the six failure classes and a rationale (clipped to 300 bytes), and no
// other member (JudgeSchema), found in the answer as llm.AnswerJSON finds it
// (a reasoning model's <think> blocks and a fence around the object are
// not part of it). An answer that is not such an object is an error saying
// why.
func ParseVerdict(answer string) (class, rationale string, err error) {
	var v struct {
		Class     *string `json:"class"`
		Rationale *string `json:"rationale"`
	}
	if err := decodeAnswer(answer, &v); err != nil {
		return "", "", err
	}
	if v.Class == nil || !slices.Contains(FailureClasses, *v.Class) {
		got := "none"
		if v.Class != nil {
			got = fmt.Sprintf("%q", *v.Class)
		}
		return "", "", fmt.Errorf("class %s is not one of the six", got)
	}
	if v.Rationale == nil {
		return "", "", fmt.Errorf("no rationale")
	}
	return *v.Class, Clip(strings.TrimSpace(*v.Rationale), 300), nil
}

// ParseSem reads the semantic-equivalence answer (SemSchema, found as
// llm.AnswerJSON finds it): the score in [0, 1].
func ParseSem(answer string) (score float64, err error) {
	var v struct {
		Equivalent *bool    `json:"equivalent"`
		Score      *float64 `json:"score"`
	}
	if err := decodeAnswer(answer, &v); err != nil {
		return 0, err
	}
	if v.Equivalent == nil || v.Score == nil || *v.Score < 0 || *v.Score > 1 {
		return 0, fmt.Errorf("needs equivalent (bool) and score in [0, 1]")
	}
	return *v.Score, nil
}

// decodeAnswer decodes the JSON object of a judge's answer (llm.AnswerJSON)
// into v, a struct of the schema's members: a member v does not have is an
// error, as the schemas forbid additional properties.
func decodeAnswer(answer string, v any) error {
	text := llm.AnswerJSON(answer)
	if !json.Valid([]byte(text)) {
		// Prose around one fenced object (a free-text judge's habit);
		// two fences are two answers, and none is taken.
		stripped, _ := llm.StripThink(answer)
		one := strings.Count(stripped, "```")+strings.Count(stripped, "~~~") == 2
		if code, how := llm.ExtractCode(stripped, "json"); one && strings.HasPrefix(how, "fence") && json.Valid([]byte(code)) {
			text = code
		}
	}
	if !json.Valid([]byte(text)) {
		return fmt.Errorf("not JSON: %w", json.Unmarshal([]byte(text), new(any)))
	}
	d := json.NewDecoder(strings.NewReader(text))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("not the schema's object: %w", err)
	}
	return nil
}

// Clip bounds s to n bytes (on a rune boundary), saying so.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && (s[i]&0xC0) == 0x80 {
		i--
	}
	return s[:i] + "\n[... truncated]"
}
