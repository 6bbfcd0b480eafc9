package pyharness

import (
	"fmt"
	"strings"

	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
)

// PythonLang is what the judge's prompts say of Python: the six classes
// are goharness's, each worded for Python. The answer's schema and its
// parsing are goharness's (JudgeSchema, ParseVerdict; SemSchema,
// ParseSem).
var PythonLang = goharness.Lang{Name: "Python", Fence: "python", Classes: map[string]string{
	ClassWrongSyntax:       "the code is not valid Python (a SyntaxError, IndentationError or TabError compiling it).",
	ClassWrongAPISelection: "the target API is never invoked; a sibling or a non-existent attribute of the package is called instead.",
	ClassWrongImport:       "the right symbol, but a wrong or missing import (an ImportError or ModuleNotFoundError, a name used without importing it, the right name at a wrong module path).",
	ClassWrongParam:        "the right call, but a wrong argument (value, order, count, keyword or type).",
	ClassWrongShapeDtype:   "the right call, but it violates the API's contract, failing inside the API's body (an exception raised inside the library's code, a wrong shape or type of data handed to it).",
	ClassWrongLogic:        "the right call with right arguments, but the function around it is wrong (a wrong result, an exception in the solver's own code, a time-out).",
}}

// maxPromptCalls bounds each list of calls the judge is shown.
const maxPromptCalls = 10

// JudgeInput is what the LLM judge is shown of one Python sample the fast
// path left undecided.
type JudgeInput struct {
	Target      Target
	Description string // the task
	Context     string // the program with the solution's place masked
	Solution    string // the solver's answer
	// Recorded says the spy's record exists (the program ran far enough);
	// Calls are then the shapes of the solver's direct calls of the target
	// it recorded (Record.Calls), ReferenceCalls the reference's
	// (Expectation.Calls).
	Recorded       bool
	Calls          []Call
	ReferenceCalls []Call
	// Source are the solution's calls of the target's name read from its
	// source (TargetCalls), Reference the reference's first (nil: none).
	Source    []SourceCall
	Reference *SourceCall
	// Evidence is the fast path's (Judgement.Evidence): the harness's
	// layer and reason, the exception and its traceback.
	Evidence string
}

// JudgePrompt renders the judge's system and user messages for a Python
// sample, as goharness.JudgePrompt does for Go. The target is named by its
// first public path (Target.Paths[0], the one tasks use), its defining
// module and qualified name in brackets. Every part is bounded: the
// task, the context and the solution to goharness.MaxPromptCode bytes,
// each call to 300, each list of calls to its first maxPromptCalls, the
// evidence to twice goharness.MaxPromptFailure (the exception's message
// and its traceback).
func JudgePrompt(in JudgeInput) (system, user string) {
	var b strings.Builder
	clip := goharness.Clip
	api := strings.Replace(in.Target.ID, ":", ".", 1) // where it is defined
	if len(in.Target.Paths) > 0 && in.Target.Paths[0] != api {
		api = in.Target.Paths[0] + " [defined as " + api + "]" // the public path, as the task uses it
	}
	fmt.Fprintf(&b, "Target API: %s (package %s)\n\nTask:\n%s\n\nContext (the solution replaces <MASK>):\n```python\n%s\n```\n\n",
		api, in.Target.Package(), clip(in.Description, goharness.MaxPromptCode), clip(in.Context, goharness.MaxPromptCode))
	fmt.Fprintf(&b, "Solution:\n```python\n%s\n```\n\n", clip(in.Solution, goharness.MaxPromptCode))
	list := func(head string, n int, item func(i int) string) {
		b.WriteString(head + "\n")
		if n == 0 {
			b.WriteString("- none\n")
		}
		for i := range min(n, maxPromptCalls) {
			fmt.Fprintf(&b, "- %s\n", clip(item(i), 300))
		}
		if n > maxPromptCalls {
			fmt.Fprintf(&b, "- ... and %d more\n", n-maxPromptCalls)
		}
	}
	list("Calls of the target's name in the solution (from its source):", len(in.Source), func(i int) string { return in.Source[i].String() })
	ref := "(none found)"
	if in.Reference != nil {
		ref = in.Reference.String()
	}
	fmt.Fprintf(&b, "The reference solution calls: %s\n\n", clip(ref, 300))
	if in.Recorded {
		list("Direct calls of the target the harness recorded when the solution ran (positional arguments _, keywords by name):", len(in.Calls), func(i int) string { return in.Target.Name() + CallShape(in.Calls[i]) })
	} else {
		b.WriteString("Direct calls of the target the harness recorded when the solution ran: unknown (the program left no record)\n")
	}
	list("The reference's, recorded the same way:", len(in.ReferenceCalls), func(i int) string { return in.Target.Name() + CallShape(in.ReferenceCalls[i]) })
	fmt.Fprintf(&b, "\nFailure:\n%s\n", clip(in.Evidence, 2*goharness.MaxPromptFailure))
	return PythonLang.JudgeSystem(), b.String()
}

// SemPrompt renders the semantic-equivalence judge's messages for a
// Python task (goharness.Lang.SemPrompt).
func SemPrompt(description, context, solution, reference string) (system, user string) {
	return PythonLang.SemPrompt(description, context, solution, reference)
}
