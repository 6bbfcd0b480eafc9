package goharness

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"strings"

	"github.com/lacuna-dev/lacuna/runners/goapi"
)

// solverCode is the solver's code as the judge reads it and the name it
// calls the target's package by: a whole program (package main with its
// imports) is its own program, all of it the solver's; a span answer is
// the span after its import lines, and an import of the target's package
// among those lines names the package. pkgName is the task's name for the
// package; program the program that ran (the span in place).
func solverCode(solution, program string, tg Target, pkgName string) (code, prog, name string) {
	if f, err := parser.ParseFile(token.NewFileSet(), "solution.go", solution, parser.ImportsOnly); err == nil && f.Name.Name == "main" {
		for _, im := range f.Imports {
			if strings.Trim(im.Path.Value, `"`) == tg.Package {
				pkgName = goapi.ImportName(im)
			}
		}
		return solution, solution, pkgName
	}
	imports, span := SplitAnswer(solution)
	for _, im := range imports {
		n, path, _ := strings.Cut(im, " ")
		if strings.Trim(path, `"`) == tg.Package {
			pkgName = n
		}
	}
	return span, program, pkgName
}

// CallInfo is one call of the solver's code that concerns the target's
// package, as its source prints (gofmt-normalised).
type CallInfo struct {
	Func   string   // pkg.Name, or x.Name for a method
	Args   []string // argument expressions, normalised (ParamCorr)
	Target bool     // it calls the target
}

// String is the call as source: Func(arg, ...).
func (c CallInfo) String() string { return c.Func + "(" + strings.Join(c.Args, ", ") + ")" }

// CallStructure lists, in source order, the calls of the solver's code
// (solverCode) that concern the target's package: every pkg.X(...) of
// the package, and for a method target every call of a method named like
// the target on a value. It is what the LLM judge is shown of the code's
// syntax tree. nil when the code does not parse.
func CallStructure(solution, program string, tg Target, pkgName string) []CallInfo {
	code, prog, name := solverCode(solution, program, tg, pkgName)
	fset := token.NewFileSet()
	f, err := parseSolver(fset, code)
	if err != nil {
		return nil
	}
	imported := importedNames(prog, name)
	var out []CallInfo
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := calledFunc(call).(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x := ""
		if id, ok := sel.X.(*ast.Ident); ok {
			x = id.Name
		}
		isTarget := isTargetCall(selCall{x, sel.Sel.Name}, name, tg, imported)
		if x != name && !isTarget {
			return true
		}
		ci := CallInfo{Func: exprString(fset, sel), Target: isTarget}
		for i, a := range call.Args {
			s := exprString(fset, a)
			if i == len(call.Args)-1 && call.Ellipsis.IsValid() {
				s += "..."
			}
			ci.Args = append(ci.Args, s)
		}
		out = append(out, ci)
		return true
	})
	return out
}

// parseSolver parses solver code as solverFile does, with positions in
// fset (for printing expressions back).
func parseSolver(fset *token.FileSet, code string) (*ast.File, error) {
	if f, err := parser.ParseFile(fset, "", code, 0); err == nil && f.Name.Name == "main" {
		return f, nil
	}
	return parser.ParseFile(fset, "", "package p\nfunc _() {\n"+code+"\n}\n", 0)
}

// exprString prints an expression as gofmt would, outer parentheses
// dropped: spacing and line breaks in the source do not matter.
func exprString(fset *token.FileSet, x ast.Expr) string {
	for {
		p, ok := x.(*ast.ParenExpr)
		if !ok {
			break
		}
		x = p.X
	}
	var b bytes.Buffer
	if err := printer.Fprint(&b, fset, x); err != nil {
		return ""
	}
	return b.String()
}

// ParamCorr is how well the solver's call of the target matches the
// reference's, argument by argument, in [0, 1].
//
// Go has no keyword arguments, so the match is positional: each position
// i < max(len(solver's args), len(reference's args)) counts 1 when both
// calls have an argument there and the two normalised expressions
// (gofmt-printed, outer parentheses dropped) are equal, and the score is
// the count over that maximum. A variadic tail is compared position by
// position like any other argument (a missing or extra element is a
// mismatch), and a spread argument (xs...) keeps its "..." so it matches
// only a spread of the same expression. Two calls without arguments match
// fully (1). The receiver of a method call and explicit type arguments
// are not arguments. When the solver calls the target more than once, the
// best-matching call counts. It is 0 when the solver's code never calls
// the target (or does not parse). It is undefined (ok false) when the
// reference has no call of the target to compare with: not a mismatch,
// nothing to measure.
//
// solution and program are the sample's answer and the program that ran;
// reference and refProgram the task's reference answer (Mask) and whole
// reference program.
func ParamCorr(solution, program, reference, refProgram string, tg Target, pkgName string) (corr float64, ok bool) {
	return MatchCalls(CallStructure(solution, program, tg, pkgName), TargetCall(reference, refProgram, tg, pkgName))
}

// MatchCalls is ParamCorr from the solver's calls (CallStructure) and the
// reference's call of the target (TargetCall, nil for none: ok false), for
// callers that have them already.
func MatchCalls(calls []CallInfo, ref *CallInfo) (corr float64, ok bool) {
	if ref == nil {
		return 0, false
	}
	best := 0.0
	for _, c := range calls {
		if c.Target {
			best = max(best, argMatch(c.Args, ref.Args))
		}
	}
	return best, true
}

// TargetCall is the first call of the target in code (an answer, with
// program the program it runs in), nil for none.
func TargetCall(code, program string, tg Target, pkgName string) *CallInfo {
	for _, c := range CallStructure(code, program, tg, pkgName) {
		if c.Target {
			return &c
		}
	}
	return nil
}

func argMatch(a, b []string) float64 {
	n := max(len(a), len(b))
	if n == 0 {
		return 1
	}
	same := 0
	for i := range min(len(a), len(b)) {
		if a[i] == b[i] {
			same++
		}
	}
	return float64(same) / float64(n)
}
