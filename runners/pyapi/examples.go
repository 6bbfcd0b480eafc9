package pyapi

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

//go:embed examples.py
var examplesHelper string

// ExamplesHelperSource is the embedded helper Doctests, DocFileExamples
// and Executor run; callers that cache examples or verdicts put its digest
// in their key.
func ExamplesHelperSource() string { return examplesHelper }

// Example origins.
const (
	// OriginDoctest: the ">>>" examples of a docstring or a documentation
	// file, one Example for all of them.
	OriginDoctest = "doctest"
	// OriginFenced: one Markdown code block tagged Python (```python,
	// ```py) without ">>>", its statements run as a script; the output a
	// step states after it is compared ("#> " comment lines, pydantic's
	// documentation, and pytest-examples' multi-line form: a
	// triple-quoted string right after a print), a step that states none
	// has its output not compared (Verdict.Compared counts those that
	// were). A block tagged {test="skip"} is skipped.
	OriginFenced = "fenced"
)

// Example is one E unit: the doctest of one docstring or of one shipped
// documentation file, or one fenced Python block of either, run as a
// whole (its steps share their globals).
type Example struct {
	// Name is the API's identity for a docstring ("shapes._geometry:double"),
	// the file's path for a documentation file; a fenced block's adds
	// "#fenced-N", N counting the text's Python blocks from 1
	// ("pydantic.networks:HttpUrl#fenced-2"), so that bundle rows and
	// tasks, which carry the name, say where an example came from.
	Name string
	// Origin is OriginDoctest, OriginFenced or OriginTest.
	Origin string
	// APIID is the API whose docstring holds it; "" for a documentation
	// file (the bundle ties those to APIs by the names their code uses).
	APIID string
	// Module is the module whose globals a docstring's doctest runs in (a
	// copy, as doctest.testmod does); "" for a documentation file and a
	// fenced block, whose examples import what they use.
	Module string
	// File is the documentation file, relative to the directory scanned;
	// "" for a docstring.
	File string
	// Text is the doctest run: the docstring or the file, Markdown fence
	// lines blanked (a fence is not expected output); a fenced block's
	// code.
	Text   string
	Steps  []Step
	Code   string // the steps' sources, in order: the example's program
	Output string // the steps' expected outputs, in order
	// Calls are the names its steps call (f of f(...), m of x.m(...)),
	// sorted, each once: what ties a documentation file's example to the
	// APIs it exercises. A test's (OriginTest) are every name its program
	// loads or reads as an attribute.
	Calls []string
}

// Step is one ">>>" statement and the output it is expected to print, or
// one top-level statement of a fenced block and the output it states: its
// "#> " comment lines, and pytest-examples' multi-line form (a
// triple-quoted string statement right after a print, dedented), which
// is not a step of its own.
type Step struct {
	Source string `json:"source"`
	Want   string `json:"want"`
	// Loose: Want holds pytest-examples' multi-line form, which black lays
	// out (a dict split over lines, trailing commas added), so it is
	// compared ignoring whitespace and a comma before a closing bracket.
	Loose bool     `json:"loose,omitempty"`
	Line  int      `json:"line"` // in Text, from 1
	Calls []string `json:"calls"`
}

type parsed struct {
	Name     string            `json:"name"`
	Text     string            `json:"text"`
	Error    string            `json:"error"`
	Examples []Step            `json:"examples"`
	Fenced   []fencedBlock     `json:"fenced"`
	Skips    map[string]string `json:"skips"` // by block index
}

type fencedBlock struct {
	Index int    `json:"index"`
	Code  string `json:"code"`
	Steps []Step `json:"steps"`
}

// fencedName is the name of block index of the text named name.
func fencedName(name string, index int) string { return fmt.Sprintf("%s#fenced-%d", name, index) }

// examples are p's: its doctest (when it has ">>>" steps) and its fenced
// blocks, each completed by fill (where it came from); a text doctest
// cannot parse, and a block that does not parse or is tagged to be
// skipped, go in skipped with why.
func (p parsed) examples(skipped map[string]string, fill func(*Example)) []Example {
	var out []Example
	switch {
	case p.Error != "":
		skipped[p.Name] = p.Error
	case len(p.Examples) > 0:
		e := newExample(p.Name, p.Examples)
		e.Origin, e.Text = OriginDoctest, p.Text
		fill(&e)
		out = append(out, e)
	}
	for _, b := range p.Fenced {
		e := newExample(fencedName(p.Name, b.Index), b.Steps)
		e.Origin, e.Text = OriginFenced, b.Code
		fill(&e)
		out = append(out, e)
	}
	for idx, why := range p.Skips {
		n, _ := strconv.Atoi(idx)
		skipped[fencedName(p.Name, n)] = why
	}
	return out
}

func newExample(name string, steps []Step) Example {
	e := Example{Name: name, Steps: steps}
	var code, out strings.Builder
	calls := map[string]bool{}
	for _, s := range steps {
		code.WriteString(s.Source)
		out.WriteString(s.Want)
		for _, c := range s.Calls {
			calls[c] = true
		}
	}
	e.Code, e.Output = code.String(), out.String()
	e.Calls = make([]string, 0, len(calls))
	for c := range calls {
		e.Calls = append(e.Calls, c)
	}
	sort.Strings(e.Calls)
	return e
}

// Doctests splits the docstrings of apis (each API's own, Doc) into
// examples with doctest.DocTestParser, and takes each fenced Python block
// without ">>>" as an example of its own (OriginFenced), split into its
// top-level statements with ast; both run by the embedded helper as a
// subprocess of python (parsing only: nothing of the library is imported).
// An API without ">>>" or a fence in its docstring has none; one whose
// docstring doctest cannot parse (inconsistent indentation), and a fenced
// block that does not parse or is tagged {test="skip"}, are in skipped
// with why (a fenced block by its example's name). A block of another
// language (```bash, ```json) is not an example. Docstrings are read as
// reStructuredText where it and Markdown disagree: a bare line of tildes
// is a section title's adornment, not a fence (~~~python still opens
// one); a fence-like line in a doctest's expected output is output.
func Doctests(ctx context.Context, python string, apis []API) (examples []Example, skipped map[string]string, err error) {
	type item struct {
		Name string `json:"name"`
		Text string `json:"text"`
	}
	var items []item
	byName := map[string]API{}
	for _, a := range apis {
		if strings.Contains(a.Doc, ">>>") || strings.Contains(a.Doc, "```") || strings.Contains(a.Doc, "~~~") {
			items = append(items, item{a.ID, a.Doc})
			byName[a.ID] = a
		}
	}
	skipped = map[string]string{}
	if len(items) == 0 {
		return nil, skipped, nil
	}
	in, err := json.Marshal(items)
	if err != nil {
		return nil, nil, err
	}
	out, err := runHelperInput(ctx, python, []string{"-I", "-S", "-B", "-X", "utf8", "-c", examplesHelper, "parse"}, in)
	if err != nil {
		return nil, nil, fmt.Errorf("doctests: %w", err)
	}
	var res []parsed
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, nil, fmt.Errorf("doctests: helper output: %w", err)
	}
	for _, p := range res {
		a := byName[p.Name]
		examples = append(examples, p.examples(skipped, func(e *Example) {
			e.APIID = a.ID
			if e.Origin == OriginDoctest {
				e.Module = a.Module()
			}
		})...)
	}
	return examples, skipped, nil
}

// DocFileExamples finds the doctests of the documentation files shipped
// under dir (an installed package's directory): *.rst, *.md and *.txt
// files holding ">>>", hidden and __pycache__ directories skipped, and
// the fenced Python blocks of its *.md files as Doctests takes them. A
// script file (an examples/*.py) is left out. A file doctest cannot parse,
// and a fenced block that does not parse, are in skipped with why.
func DocFileExamples(ctx context.Context, python, dir string) (examples []Example, skipped map[string]string, err error) {
	out, err := runHelper(ctx, python, []string{"-I", "-S", "-B", "-X", "utf8", "-c", examplesHelper, "scan", dir})
	if err != nil {
		return nil, nil, fmt.Errorf("doc examples in %s: %w", dir, err)
	}
	var res []parsed
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, nil, fmt.Errorf("doc examples in %s: helper output: %w", dir, err)
	}
	skipped = map[string]string{}
	for _, p := range res {
		examples = append(examples, p.examples(skipped, func(e *Example) { e.File = p.Name })...)
	}
	return examples, skipped, nil
}

// Example statuses, named as the Go bundle's (gotool) where they agree.
const (
	ExamplePassed       = "passed"
	ExampleFailed       = "failed"        // a step printed other than its expected output
	ExampleRuntimeError = "runtime_error" // a step raised an exception it did not expect, or the module did not import
	ExampleCompileError = "compile_error" // a step is not valid Python
	ExampleTimeout      = "timeout"       // the wall clock ran out
	ExampleCrashed      = "crashed"       // the interpreter died without a verdict (a signal, a memory limit)
)

// Verdict is what running one example found.
type Verdict struct {
	Status string
	// Got is the output of the first step that did not pass, when it
	// printed other than expected.
	Got string
	// Error is the exception of the failing step, or why the example could
	// not run (with the end of stderr for a crash).
	Error string
	Steps []StepResult
	// Compared counts the steps that state an output and whose printed
	// output was compared with it (passed or failed). An example with none
	// (a fenced block without "#> " lines, a doctest of statements only)
	// that passes is still valid: running without an error against the
	// version is the validation an example needs; Compared says which
	// valid examples were also output-checked.
	Compared int
	Duration time.Duration
}

// Valid reports whether the example passed: only then does a bundle keep
// it.
func (v Verdict) Valid() bool { return v.Status == ExamplePassed }

// OutputChecked reports whether the example passed with at least one
// step's output compared.
func (v Verdict) OutputChecked() bool { return v.Valid() && v.Compared > 0 }

// StepResult is one step's outcome, in order; the steps after a failing
// one still run, as doctest runs them.
type StepResult struct {
	Source string `json:"source"`
	Want   string `json:"want"`
	Got    string `json:"got"`
	Status string `json:"status"`
	Error  string `json:"error"`
}

// Executor runs examples against an environment, each in its own sandbox
// run: an interpreter of its own, the environment mounted read-only, no
// network, a wall clock. Untrusted code never runs in lacuna's process.
// As root, bubblewrap mounts the paths as root and the example runs as uid
// 65534 (sandbox.Spec.MountAsRoot): a path need not be reachable by that
// uid on the host, only readable itself.
// An Executor is safe for concurrent use when its Sandbox is.
type Executor struct {
	Sandbox *sandbox.Sandbox
	Python  string // the interpreter, e.g. the environment's bin/python
	// Paths go first on sys.path (site-packages, a source tree); they are
	// mounted read-only, and must not be under /tmp when the sandbox is
	// bubblewrap's (/tmp is the sandbox's own).
	Paths []string
	// ReadOnly are the other host paths the interpreter needs (a venv's
	// root, a Python installed outside /usr).
	ReadOnly []string
	// Flags are doctest option flags for every example ("ELLIPSIS",
	// "NORMALIZE_WHITESPACE"); inline directives work regardless.
	Flags []string
	// Limits bound each run; Wall is the example's timeout (default 60s).
	Limits sandbox.Limits
}

// Args is the interpreter's command line for one run, after the
// interpreter: part of what a cache of verdicts keys on.
func (x *Executor) Args() []string {
	args := []string{"-I", "-B", "-X", "utf8", "-c", examplesHelper, "run"}
	for _, p := range x.Paths {
		args = append(args, "--path", p)
	}
	for _, f := range x.Flags {
		args = append(args, "--flag", f)
	}
	return args
}

// Run runs ex and returns its verdict: a doctest as doctest.testmod runs
// it (Flags apply), a fenced example or a test's program as a script in a fresh __main__, its
// steps in order, stopping at the first that does not pass; a step's
// printed output is compared with its Want (trailing whitespace of lines
// and trailing blank lines ignored; all whitespace and commas before a
// closing bracket when Loose) only when it states one, so printing never
// fails a step that states no output, and an example without stated
// output passes when it runs without an error (Verdict.Compared is 0). The error is for what prevented
// running it at all (the sandbox could not start, an unknown flag);
// everything the example or the library does is in the verdict.
func (x *Executor) Run(ctx context.Context, ex Example) (Verdict, error) {
	for _, f := range x.Flags {
		if !doctestFlags[f] {
			return Verdict{}, fmt.Errorf("example %s: unknown doctest flag %q", ex.Name, f)
		}
	}
	type step struct {
		Source string `json:"source"`
		Want   string `json:"want"`
		Loose  bool   `json:"loose,omitempty"`
	}
	r := struct {
		Name   string `json:"name"`
		Module string `json:"module"`
		File   string `json:"file"`
		Text   string `json:"text"`
		Origin string `json:"origin"`
		Steps  []step `json:"steps,omitempty"`
	}{Name: ex.Name, Module: ex.Module, File: ex.File, Text: ex.Text, Origin: ex.Origin}
	if ex.Origin == OriginFenced || ex.Origin == OriginTest {
		for _, s := range ex.Steps {
			r.Steps = append(r.Steps, step{s.Source, s.Want, s.Loose})
		}
	}
	req, err := json.Marshal(r)
	if err != nil {
		return Verdict{}, err
	}
	dir, err := os.MkdirTemp("", "lacuna-pyexample-")
	if err != nil {
		return Verdict{}, fmt.Errorf("example %s: %w", ex.Name, err)
	}
	defer os.RemoveAll(dir)
	res, err := x.Sandbox.Run(ctx, sandbox.Spec{
		Argv:     append([]string{x.Python}, x.Args()...),
		Dir:      dir,
		ReadOnly: append(append([]string(nil), x.Paths...), x.ReadOnly...),
		// As root: mounted as root, run as uid 65534 (a pyenv under /root).
		MountAsRoot: true,
		Stdin:       req,
		Limits:      x.Limits,
	})
	if err != nil {
		return Verdict{}, fmt.Errorf("example %s: %w", ex.Name, err)
	}
	v := Verdict{Duration: res.Duration}
	if res.TimedOut {
		v.Status, v.Error = ExampleTimeout, "the wall clock ran out after "+res.Duration.Round(time.Millisecond).String()
		return v, nil
	}
	var out struct {
		Status, Got, Error string
		Steps              []StepResult
	}
	if err := json.Unmarshal(res.Stdout, &out); err != nil || out.Status == "" {
		why := fmt.Sprintf("exit status %d", res.ExitCode)
		if res.Signal != "" {
			why = "signal " + res.Signal
		}
		v.Status, v.Error = ExampleCrashed, strings.TrimSpace(why+": "+tail(res.Stderr, 2000))
		return v, nil
	}
	v.Status, v.Got, v.Error, v.Steps = out.Status, out.Got, out.Error, out.Steps
	for _, s := range v.Steps {
		if s.Want != "" && (s.Status == ExamplePassed || s.Status == ExampleFailed) {
			v.Compared++
		}
	}
	return v, nil
}

var doctestFlags = map[string]bool{
	"DONT_ACCEPT_TRUE_FOR_1": true, "DONT_ACCEPT_BLANKLINE": true, "NORMALIZE_WHITESPACE": true, "ELLIPSIS": true,
	"SKIP": true, "IGNORE_EXCEPTION_DETAIL": true, "REPORT_UDIFF": true, "REPORT_CDIFF": true, "REPORT_NDIFF": true,
	"REPORT_ONLY_FIRST_FAILURE": true, "FAIL_FAST": true,
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
