package goharness

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
)

// CheckSpan refuses a solution that is not a plain list of statements for
// the task's span: one that does not parse as the body of a function, that
// closes the function to declare code of its own (an init, another
// function), that returns or jumps out of the scenario, or that names the
// harness's internals (anything called lacuna…, such as the probe function
// or the spy's counters in the target's package). Such code would let a
// solution skip the assertions after the span or forge what they read.
// The error says which rule the solution broke.
func CheckSpan(solution string) error {
	src := "package p\nfunc _() {\n" + solution + "\n}\n"
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	if err != nil {
		return fmt.Errorf("does not parse as statements: %s", firstLine(err.Error()))
	}
	if len(f.Decls) != 1 {
		return fmt.Errorf("declares code outside the span (%d top-level declarations): the solution must be statements", len(f.Decls)-1)
	}
	body := f.Decls[0].(*ast.FuncDecl).Body
	var bad error
	var walk func(n ast.Node, inLit bool)
	walk = func(n ast.Node, inLit bool) {
		ast.Inspect(n, func(n ast.Node) bool {
			if bad != nil {
				return false
			}
			switch n := n.(type) {
			case *ast.FuncLit:
				walk(n.Body, true)
				return false
			case *ast.ReturnStmt:
				if !inLit {
					bad = fmt.Errorf("returns from the scenario: the code after the span must run")
				}
			case *ast.BranchStmt:
				if n.Tok == token.GOTO {
					bad = fmt.Errorf("uses goto")
				}
			case *ast.Ident:
				if strings.HasPrefix(strings.ToLower(n.Name), "lacuna") {
					bad = fmt.Errorf("names %s: identifiers starting with lacuna belong to the harness", n.Name)
				}
			}
			return true
		})
	}
	walk(body, false)
	return bad
}

// CheckDecls refuses a whole program's declarations that could run before
// or around the harness (an init function) or name its internals
// (anything called lacuna…). AsProgram's declarations go through it
// before the build, as its span goes through CheckSpan.
func CheckDecls(decls string) error {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+decls, parser.SkipObjectResolution)
	if err != nil {
		return fmt.Errorf("declarations do not parse: %s", firstLine(err.Error()))
	}
	var bad error
	ast.Inspect(f, func(n ast.Node) bool {
		if bad != nil {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Recv == nil && n.Name.Name == "init" {
				bad = fmt.Errorf("declares init: code outside main may not run before the harness")
			}
		case *ast.Ident:
			if strings.HasPrefix(strings.ToLower(n.Name), "lacuna") {
				bad = fmt.Errorf("names %s: identifiers starting with lacuna belong to the harness", n.Name)
			}
		}
		return true
	})
	return bad
}
