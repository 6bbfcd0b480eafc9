package goharness

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
)

// Calibration solutions: a harness must fail every one of them.
const (
	MutantNull    = "null"    // the span left empty, or its variables at zero values
	MutantSibling = "sibling" // the target call replaced by a sibling API
	MutantImport  = "import"  // the target's import path made wrong
	MutantPerturb = "perturb" // a literal argument of the target call changed
	MutantSyntax  = "syntax"  // a closing parenthesis dropped
)

// Mutant is one calibration solution.
type Mutant struct {
	Kind string
	Code string // the span's replacement
	// Imports replaces the task's imports when the mutant is about them.
	Imports []string
}

// Mutants builds the calibration solutions of a task: what a harness must
// reject. sibling is an API of the same package (and receiver) to call
// instead of the target, "" when there is none; expect is the reference's
// observation, whose probe types give the zero values of the null mutant.
func Mutants(t Task, tg Target, sibling string, expect *Observation) []Mutant {
	var out []Mutant
	null := ""
	for _, p := range t.Probes {
		// A zero value where the type can be written (%T of an
		// instantiated generic names packages by path; nil has no type).
		if pr, ok := expect.Probes[p]; ok && writableType(pr.Type) {
			null += fmt.Sprintf("\tvar %s %s\n", p, pr.Type)
		}
	}
	out = append(out, Mutant{Kind: MutantNull, Code: null})
	call := regexp.MustCompile(`\b` + regexp.QuoteMeta(tg.Name) + `\b(\s*[\[(])`)
	if sibling != "" && call.MatchString(t.Mask) {
		out = append(out, Mutant{Kind: MutantSibling, Code: replaceFirst(call, t.Mask, sibling+"$1")})
	}
	var imports []string
	moved := false
	for _, im := range t.Imports {
		name, path, _ := strings.Cut(im, " ")
		if p, _ := strconv.Unquote(path); p == tg.Package && !moved {
			// Dots out of the first element: a path the go command reads as
			// a missing standard package, so it never asks the network.
			im = name + " " + strconv.Quote(strings.ReplaceAll(tg.Package, ".", "_"))
			moved = true
		}
		imports = append(imports, im)
	}
	if moved {
		out = append(out, Mutant{Kind: MutantImport, Code: t.Mask, Imports: imports})
	}
	if p, ok := perturb(t.Mask, tg.Name); ok {
		out = append(out, Mutant{Kind: MutantPerturb, Code: p})
	}
	if i := strings.LastIndex(t.Mask, ")"); i >= 0 {
		out = append(out, Mutant{Kind: MutantSyntax, Code: t.Mask[:i] + t.Mask[i+1:]})
	}
	return out
}

func writableType(t string) bool {
	if strings.ContainsAny(t, "<>/") {
		return false
	}
	_, err := parser.ParseExpr(t)
	return err == nil
}

func replaceFirst(re *regexp.Regexp, s, repl string) string {
	loc := re.FindStringSubmatchIndex(s)
	if loc == nil {
		return s
	}
	return s[:loc[0]] + string(re.ExpandString(nil, repl, s, loc)) + s[loc[1]:]
}

// perturb changes the first literal argument of the target call: a
// number grows by one, a string gets a suffix, a boolean flips.
func perturb(mask, name string) (string, bool) {
	fset := token.NewFileSet()
	src := "package p\nfunc _() {\n" + mask + "\n}\n"
	f, err := parser.ParseFile(fset, "", src, 0)
	if err != nil {
		return "", false
	}
	var lit ast.Expr
	ast.Inspect(f, func(n ast.Node) bool {
		if lit != nil {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok || !callsName(call, name) {
			return true
		}
		for _, a := range call.Args {
			ast.Inspect(a, func(m ast.Node) bool {
				if lit != nil {
					return false
				}
				switch x := m.(type) {
				case *ast.BasicLit:
					lit = x
				case *ast.Ident:
					if x.Name == "true" || x.Name == "false" {
						lit = x
					}
				}
				return true
			})
		}
		return true
	})
	if lit == nil {
		return "", false
	}
	start, end := fset.Position(lit.Pos()).Offset, fset.Position(lit.End()).Offset
	old := src[start:end]
	var repl string
	switch x := lit.(type) {
	case *ast.Ident:
		repl = map[string]string{"true": "false", "false": "true"}[x.Name]
	case *ast.BasicLit:
		switch x.Kind {
		case token.INT:
			n, err := strconv.ParseInt(old, 0, 64)
			if err != nil {
				return "", false
			}
			repl = strconv.FormatInt(n+1, 10)
		case token.FLOAT:
			repl = "(" + old + "+1)"
		case token.STRING:
			s, err := strconv.Unquote(old)
			if err != nil {
				return "", false
			}
			repl = strconv.Quote(s + "x")
		case token.CHAR:
			repl = "(" + old + "+1)"
		default:
			return "", false
		}
	}
	out := src[:start] + repl + src[end:]
	return out[len("package p\nfunc _() {\n") : len(out)-len("\n}\n")], true
}

// calledFunc is what a call calls, without explicit instantiation:
// lo.Map[int, string](...) → lo.Map.
func calledFunc(call *ast.CallExpr) ast.Expr {
	switch x := call.Fun.(type) {
	case *ast.IndexExpr:
		return x.X
	case *ast.IndexListExpr:
		return x.X
	}
	return call.Fun
}

func callsName(call *ast.CallExpr, name string) bool {
	switch x := calledFunc(call).(type) {
	case *ast.SelectorExpr:
		return x.Sel.Name == name
	case *ast.Ident:
		return x.Name == name
	}
	return false
}

type selCall struct{ pkg, name string }

// calledSelectors lists the X.Name(...) calls of a file; pkg is X when X
// is an identifier, "" otherwise.
func calledSelectors(f *ast.File) []selCall {
	var out []selCall
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := calledFunc(call).(*ast.SelectorExpr); ok {
			x := "" // a method call on an expression: x().M()
			if id, ok := sel.X.(*ast.Ident); ok {
				x = id.Name
			}
			out = append(out, selCall{x, sel.Sel.Name})
		}
		return true
	})
	return out
}
