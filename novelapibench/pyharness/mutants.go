package pyharness

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Calibration mutants: solutions the harness must reject, each with the
// class the judge's fast path must give it ("" when the fast path leaves
// it to the LLM judge, as it should: only the LLM tells a wrong parameter
// from wrong logic).
const (
	MutantNull    = "null"    // the body returns None: the target never called
	MutantSibling = "sibling" // every use of the target's name replaced by a sibling API's
	MutantImport  = "import"  // the target's package misspelt in the import lines
	// MutantPerturb changes the first direct argument of a call of the
	// target (the calls in source order, as TargetCalls finds them) that
	// is a parameter of the solver function the expectation shows to
	// matter: its value on the first input is a number, a string or
	// bytes, and an input differing from the first only in that parameter
	// has another expected outcome. A number grows by one, a string or
	// bytes gets "x" appended (Cut's change of that input). A literal
	// argument is never changed: nothing shows that its change changes an
	// outcome (a flag the inputs do not exercise would leave the mutant
	// passing, and WrongParam unfounded); Cut lifts every literal of the
	// target's call into a parameter, so its tasks lose nothing by it.
	// Built only when such an argument exists.
	MutantPerturb = "perturb"
	MutantSyntax  = "syntax" // the last closing parenthesis dropped
	// MutantExit runs the reference's body, computing its final return's
	// expression (the target's calls made) into a variable, then ends the
	// process with os._exit(0) instead of returning it: no record,
	// whatever it printed. Built when the body ends in a return and some
	// input's expected outcome is a return: where every input raises, the
	// mutant raises as the reference does, before its exit, and passes.
	// It behaves like the reference too where every input takes a return
	// before the last line (an early return in an if); a body's returns
	// cannot be told from its nested functions' without parsing it, so
	// that case is not guarded: C1 then drops the task ("the exit mutant
	// passes the harness").
	MutantExit = "exit"
	// MutantThrowaway runs the reference's body, calls and all, and then
	// returns the reference's values as literals, the one of the input its
	// arguments are (each input runs in a process of its own, so it tells
	// them by their values): genuine calls on the task's data, correct
	// values, none of them computed through the calls. Only the
	// substitution layer rejects it. Built when every expected value can
	// be written as a literal and the body ends in a return.
	MutantThrowaway = "throwaway"
)

// Mutant is one calibration solution.
type Mutant struct {
	Kind string
	Code string // a body for the task's function
	// Class is the class the fast path must give it; "" for undecided.
	Class string
}

// fastPath is the class the fast path (Judge) must give each kind of
// mutant; the kinds not in it (perturb, exit, throwaway) it must leave
// undecided.
var fastPath = map[string]string{
	MutantNull:    ClassWrongAPISelection,
	MutantSibling: ClassWrongAPISelection,
	MutantImport:  ClassWrongImport,
	MutantSyntax:  ClassWrongSyntax,
}

// MutantOf is the mutant of this kind with this code, its Class the fast
// path's for the kind: a calibration sample read back from a solve node
// (nodes/tasks) is audited as the Mutants it was built from.
func MutantOf(kind, code string) Mutant {
	return Mutant{Kind: kind, Code: code, Class: fastPath[kind]}
}

// expected is the class each calibration solution stands for by
// construction, whichever part of the judge decides it.
var expected = map[string]string{
	"reference":     ClassOK,
	MutantNull:      ClassWrongAPISelection, // returns None: the target never called
	MutantSibling:   ClassWrongAPISelection, // a sibling API called instead: the target never named
	MutantImport:    ClassWrongImport,       // the right call, its package misspelt in the imports
	MutantPerturb:   ClassWrongParam,        // the right call, one of its arguments changed
	MutantSyntax:    ClassWrongSyntax,       // a parenthesis dropped: it cannot compile
	MutantExit:      ClassWrongLogic,        // the right calls, the process ended before the return
	MutantThrowaway: ClassWrongLogic,        // the right calls, their values returned as literals, none computed through them
}

// ExpectedClass is the class a calibration solution of this kind stands
// for by construction (the judge's calibration measures its agreement
// with it, nodes/tasks' report "calibration"): the reference OK, the null
// and sibling mutants WrongAPISelection, import WrongImport, perturb
// WrongParam, syntax WrongSyntax, exit and throwaway WrongLogic. Every
// kind Mutants builds has one; the three the fast path leaves undecided
// (perturb, exit, throwaway) are those that measure the LLM judge and the
// fallback. ok is false for any other kind (a model's sample). The classes
// agree with goharness.ExpectedClass for the kinds both ecosystems have.
func ExpectedClass(kind string) (class string, ok bool) {
	class, ok = expected[kind]
	return class, ok
}

// Mutants builds a task's calibration solutions from its reference.
// sibling is another API of the target's module to call instead ("" when
// there is none); exp gives the throwaway mutant its literals. A kind that
// cannot be built for the task is left out (see each kind's doc). The
// result depends only on the arguments.
func Mutants(t Task, sibling string, exp Expectation) []Mutant {
	ref := strings.Trim(dedent(t.Reference), "\n")
	name := t.Target.Name()
	out := []Mutant{MutantOf(MutantNull, "return None")}
	word := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`)
	if sibling != "" && sibling != name && word.MatchString(ref) {
		out = append(out, MutantOf(MutantSibling, word.ReplaceAllString(ref, sibling)))
	}
	pkg := t.Target.Package()
	importLine := regexp.MustCompile(`^\s*(import|from)\s`)
	pkgWord := regexp.MustCompile(`\b` + regexp.QuoteMeta(pkg) + `\b`)
	lines := strings.Split(ref, "\n")
	moved := false
	for i, l := range lines {
		if importLine.MatchString(l) && pkgWord.MatchString(l) {
			lines[i] = pkgWord.ReplaceAllString(l, pkg+"_lacuna_missing")
			moved = true
		}
	}
	if moved {
		out = append(out, MutantOf(MutantImport, strings.Join(lines, "\n")))
	}
	if p, ok := perturb(ref, t.Target, telling(t, exp)); ok {
		out = append(out, MutantOf(MutantPerturb, p))
	}
	if i := strings.LastIndex(ref, ")"); i >= 0 {
		out = append(out, MutantOf(MutantSyntax, ref[:i]+ref[i+1:]))
	}
	returns := false
	for _, e := range exp.Expected {
		returns = returns || e.Raises == ""
	}
	if k := finalReturn(ref); k >= 0 && returns {
		ls := strings.Split(ref, "\n")
		body := strings.Join(ls[:k], "\n")
		expr := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(ls[k]), "return"))
		out = append(out, MutantOf(MutantExit, body+"\n_lacuna_r = "+expr+"\nimport os as _lacuna_os\n_lacuna_os._exit(0)"))
		var lits []string
		for _, e := range exp.Expected {
			lit, ok := "", e.Exact && e.Raises == ""
			if ok {
				lit, ok = pyLiteral(e.Value)
			}
			if !ok {
				lits = nil
				break
			}
			lits = append(lits, lit)
		}
		if len(lits) > 0 && len(lits) == len(t.Inputs) {
			// Which input it is called on: its arguments (the function's
			// locals before the body runs) against the task's inputs,
			// evaluated as the harness evaluates them.
			srcs := make([]string, len(t.Inputs))
			for i, in := range t.Inputs {
				srcs[i] = strconv.Quote(in)
			}
			out = append(out, MutantOf(MutantThrowaway, "_lacuna_args = repr(tuple(locals().values()))\n"+body+"\n_lacuna_discarded = "+expr+
				"\n_lacuna_in = [eval(_s, globals()) for _s in ["+strings.Join(srcs, ", ")+"]]"+
				"\n_lacuna_i = [repr(_a if isinstance(_a, tuple) else (_a,)) for _a in _lacuna_in].index(_lacuna_args)"+
				"\nreturn ["+strings.Join(lits, ", ")+"][_lacuna_i]"))
		}
	}
	return out
}

// finalReturn is the index of the body's last line when it is a
// top-level return with a value (continuation lines not supported), -1
// otherwise.
func finalReturn(body string) int {
	ls := strings.Split(body, "\n")
	k := len(ls) - 1
	if k >= 0 && strings.HasPrefix(ls[k], "return ") && strings.Count(ls[k], "(") == strings.Count(ls[k], ")") && strings.Count(ls[k], "[") == strings.Count(ls[k], "]") {
		return k
	}
	return -1
}

// perturb changes the first direct argument (positional, or a keyword's
// value) of a call of the target (TargetCalls' lexical scan: a call in a
// string or a comment is none) that is a parameter of params (telling:
// its value's source on the first input), the calls in source order
// (MutantPerturb). A call in an f-string's replacement field is not
// changed. For a method target the scan cannot tell the target's calls
// from another object's method of the same name: the first such call with
// a telling argument is changed.
func perturb(code string, tg Target, params map[string]string) (string, bool) {
	if len(params) == 0 {
		return "", false
	}
	toks := pyTokens(code)
	names := targetNames(toks, tg)
	for i := range toks {
		_, end, ok := callAt(toks, i, names)
		if !ok {
			continue
		}
		for _, a := range splitTop(toks[i+2 : end]) {
			if len(a) == 3 && a[0].kind == tokName && a[1].text == "=" {
				a = a[2:] // a keyword's value
			}
			if len(a) != 1 || a[0].kind != tokName || params[a[0].text] == "" {
				continue
			}
			if repl := changed(a[0].text, params[a[0].text]); repl != "" {
				return code[:a[0].pos] + repl + code[a[0].pos+len(a[0].text):], true
			}
		}
	}
	return "", false
}

// changed is the change of the parameter arg, whose value is written as
// the literal value (a number, a string or bytes): the number plus one,
// "x" appended to the string or bytes; "" for any other value (an
// f-string).
func changed(arg, value string) string {
	if q := strings.IndexAny(value, `"'`); q >= 0 {
		switch prefix := strings.ToLower(value[:q]); {
		case strings.ContainsAny(prefix, "ft"):
			return ""
		case strings.Contains(prefix, "b"):
			return "(" + arg + ` + b"x")`
		}
		return "(" + arg + ` + "x")`
	}
	if value != "" && (value[0] >= '0' && value[0] <= '9' || value[0] == '-' || value[0] == '.') {
		return "(" + arg + " + 1)"
	}
	return ""
}

// telling maps each parameter of the solver function whose change is
// known to change the outcome to its value's source on the task's first
// input: the value is a single number or string token (possibly a
// negative number, or bytes), and some input differs from the first only
// in that parameter (Cut perturbs one parameter per input, as the perturb
// mutant changes it) while its expected outcome differs from the first's.
func telling(t Task, exp Expectation) map[string]string {
	sig := strings.TrimSpace(t.Signature)
	open, close := strings.IndexByte(sig, '('), strings.LastIndexByte(sig, ')')
	if open < 0 || close < open || len(t.Inputs) == 0 || len(exp.Expected) != len(t.Inputs) {
		return nil
	}
	var names []string
	for _, p := range splitTop(pyTokens(sig[open+1 : close])) {
		if len(p) > 0 && p[0].kind == tokName {
			names = append(names, p[0].text)
		} else {
			names = append(names, "")
		}
	}
	args := make([][]string, len(t.Inputs)) // per input, each argument's source
	for i, in := range t.Inputs {
		toks := pyTokens(in)
		parts := [][]pyToken{toks}
		if len(toks) > 1 && toks[0].text == "(" && matching(toks, 0) == len(toks)-1 {
			if ps := splitTop(toks[1 : len(toks)-1]); len(ps) > 1 { // a tuple: "(a, b)", "(a,)"
				if len(ps[len(ps)-1]) == 0 {
					ps = ps[:len(ps)-1]
				}
				parts = ps
			}
		}
		for _, p := range parts {
			args[i] = append(args[i], render(p))
		}
	}
	if len(args[0]) != len(names) {
		return nil
	}
	out := map[string]string{}
	for p, name := range names {
		toks := pyTokens(args[0][p])
		single := len(toks) == 1 && (toks[0].kind == tokNumber || toks[0].kind == tokString) ||
			len(toks) == 2 && toks[0].text == "-" && toks[1].kind == tokNumber
		if !single {
			continue
		}
		for j := 1; j < len(args); j++ {
			if onlyAt(args[0], args[j], p) && differ(exp.Expected[0], exp.Expected[j]) {
				out[name] = args[0][p]
				break
			}
		}
	}
	return out
}

// onlyAt: the argument lists a and b differ at p and nowhere else.
func onlyAt(a, b []string, p int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if (a[i] != b[i]) != (i == p) {
			return false
		}
	}
	return true
}

// differ: the two expected outcomes are known to differ (both exact, and
// one raised where the other did not, or of another type, or their
// values differ).
func differ(a, b Expected) bool {
	if !a.Exact || !b.Exact {
		return false
	}
	if a.Raises != "" || b.Raises != "" {
		return a.Raises != b.Raises
	}
	same, _ := compareValues(a.Value, b.Value)
	return !same
}

// pyLiteral writes a value description as a Python literal, for the kinds
// that have one (None, bool, int, float, str, bytes, list, tuple, dict,
// set of builtin type).
func pyLiteral(raw json.RawMessage) (string, bool) {
	var d map[string]any
	if err := decode(raw, &d); err != nil {
		return "", false
	}
	return literal(d)
}

func literal(d map[string]any) (string, bool) {
	typ, _ := d["type"].(string)
	if !strings.HasPrefix(typ, "builtins.") {
		return "", false
	}
	items := func(open, close string) (string, bool) {
		xs, _ := d["items"].([]any)
		var parts []string
		for _, x := range xs {
			switch x := x.(type) {
			case map[string]any:
				s, ok := literal(x)
				if !ok {
					return "", false
				}
				parts = append(parts, s)
			case []any:
				if len(x) != 2 {
					return "", false
				}
				k, kok := x[0].(map[string]any)
				v, vok := x[1].(map[string]any)
				if !kok || !vok {
					return "", false
				}
				ks, ok1 := literal(k)
				vs, ok2 := literal(v)
				if !ok1 || !ok2 {
					return "", false
				}
				parts = append(parts, ks+": "+vs)
			}
		}
		if open == "(" && len(parts) == 1 {
			return "(" + parts[0] + ",)", true
		}
		if open == "{" && len(parts) == 0 && d["t"] == "set" {
			return "set()", true
		}
		return open + strings.Join(parts, ", ") + close, true
	}
	switch d["t"] {
	case "none":
		return "None", true
	case "bool":
		if d["v"] == true {
			return "True", true
		}
		return "False", true
	case "int":
		s, _ := d["v"].(string)
		_, err := strconv.ParseFloat(s, 64)
		return s, err == nil
	case "float":
		f, ok := toFloat(d["v"])
		switch {
		case !ok:
			return "", false
		case math.IsNaN(f):
			return "float('nan')", true
		case math.IsInf(f, 1):
			return "float('inf')", true
		case math.IsInf(f, -1):
			return "float('-inf')", true
		}
		return "float(" + strconv.Quote(strconv.FormatFloat(f, 'g', -1, 64)) + ")", true
	case "str":
		s, _ := d["v"].(string)
		return pyQuote(s), true
	case "bytes":
		s, _ := d["v"].(string)
		return "bytes.fromhex(" + pyQuote(s) + ")", true
	case "list":
		return items("[", "]")
	case "tuple":
		return items("(", ")")
	case "set":
		return items("{", "}")
	case "dict":
		return items("{", "}")
	}
	return "", false
}

// pyQuote is a Python string literal for s (JSON's escapes are Python's).
func pyQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// MutantResult is how the harness and the judge took one mutant.
type MutantResult struct {
	Mutant
	Verdict   Verdict
	Judgement Judgement
	// OK: the harness rejected it and the fast path gave it its class
	// (undecided for a mutant without one).
	OK bool
}

// Audit is a task's calibration: the reference's own verdict and every
// mutant's.
type Audit struct {
	Reference Verdict
	Mutants   []MutantResult
}

// Calibrate runs the reference and the mutants against exp: the library
// entry point of calibration, which nodes/tasks runs as nodes (solve with
// calibration = true runs the same Mutants as samples; c1 audits each, as
// Calibrate does, with AuditMutant on the run as the sample stores it,
// its output KeptOutput).
func Calibrate(ctx context.Context, r *Runner, t Task, sibling string, exp Expectation) (Audit, error) {
	ms := Mutants(t, sibling, exp)
	samples := []Sample{{Task: t, Solution: t.Reference}}
	for _, m := range ms {
		samples = append(samples, Sample{Task: t, Solution: m.Code})
	}
	runs, err := r.RunAll(ctx, samples)
	if err != nil {
		return Audit{}, err
	}
	a := Audit{Reference: Check(exp, runs[0])}
	for i, m := range ms {
		run := runs[i+1]
		v := Check(exp, run)
		run.Output = KeptOutput(run.Output)
		a.Mutants = append(a.Mutants, AuditMutant(t, exp, m, v, run))
	}
	return a, nil
}

// KeptOutput is the part of a run's output that a sample keeps (a solve
// node's row) and that a calibration audit reads: its first 4096 bytes,
// then "\n[truncated]" when there was more.
func KeptOutput(s string) string {
	if len(s) <= keptOutput {
		return s
	}
	return s[:keptOutput] + "\n[truncated]"
}

const keptOutput = 4096

// AuditMutant is how the harness (v, its verdict on run) and the fast
// path took mutant m of task t: Calibrate's for each mutant, and c1's
// for a mutant run as a solve node's calibration sample (run read back
// from its row).
func AuditMutant(t Task, exp Expectation, m Mutant, v Verdict, run Run) MutantResult {
	j := Judge(t.Target, m.Code, exp, v, run)
	return MutantResult{Mutant: m, Verdict: v, Judgement: j, OK: !v.Passed && j.Class == orUndecided(m.Class)}
}

// C1 is reference validity (NovelAPIBench stage 4): the reference passes
// its own harness, some outcome is computed through the target (the
// substitution layer has something to check), and every calibration mutant is rejected
// with its class. reason says why a task is dropped.
func C1(exp Expectation, a Audit) (keep bool, reason string) {
	if !a.Reference.Passed {
		return false, "the reference fails its harness: " + a.Reference.Layer + ": " + a.Reference.Reason
	}
	dep := false
	for _, d := range exp.Dependent {
		dep = dep || d
	}
	if !dep {
		return false, "no outcome depends on the target: substituting its result changes nothing, so a throwaway call cannot be told apart"
	}
	for _, m := range a.Mutants {
		if !m.OK {
			if m.Verdict.Passed {
				return false, fmt.Sprintf("the %s mutant passes the harness", m.Kind)
			}
			return false, fmt.Sprintf("the %s mutant is judged %s (%s), want %s", m.Kind, m.Judgement.Class, m.Judgement.Rule, orUndecided(m.Class))
		}
	}
	return true, ""
}

func orUndecided(c string) string {
	if c == "" {
		return ClassUndecided
	}
	return c
}
