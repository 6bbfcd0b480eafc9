package goharness

import (
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strconv"
)

// PerturbBefore derives the task's second input: the context's code
// before the span with every literal outside function literals changed (a number grows by one, a
// string gets a suffix, a character moves to the next). A solution that
// is right only by accident on the first input, or that prints the
// expected values without computing them, fails on the second. ok is
// false when the context sets up nothing to change. The reference
// decides whether the second input is usable: Derive drops it when the
// reference fails on it or computes the same there.
func PerturbBefore(t Task) (string, bool) {
	if t.Before == "" {
		return "", false
	}
	const head = "package p\nfunc _() {"
	src := head + t.Before + "\n}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if err != nil {
		return "", false
	}
	type edit struct {
		start, end int
		text       string
	}
	var edits []edit
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.ArrayType:
			// A length is part of the type: changing it would not compile.
			ast.Inspect(x.Elt, func(ast.Node) bool { return true })
			return false
		case *ast.GenDecl:
			// Constants may size arrays or index them at compile time.
			return x.Tok != token.CONST
		case *ast.FuncLit:
			// Code the context defines is behaviour, not input: a solution
			// may write its own equivalent.
			return false
		}
		lit, ok := n.(*ast.BasicLit)
		if !ok {
			return true
		}
		start, end := fset.Position(lit.Pos()).Offset, fset.Position(lit.End()).Offset
		var repl string
		switch lit.Kind {
		case token.INT:
			v, err := strconv.ParseInt(lit.Value, 0, 64)
			if err != nil {
				return true
			}
			repl = strconv.FormatInt(v+1, 10)
		case token.FLOAT:
			repl = "(" + lit.Value + " + 1)"
		case token.CHAR:
			repl = "(" + lit.Value + " + 1)"
		case token.STRING:
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			repl = strconv.Quote(s + "x")
		default:
			return true
		}
		edits = append(edits, edit{start, end, repl})
		return true
	})
	if len(edits) == 0 {
		return "", false
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	out := src
	for _, e := range edits {
		out = out[:e.start] + e.text + out[e.end:]
	}
	return out[len(head) : len(out)-len("\n}\n")], true
}
