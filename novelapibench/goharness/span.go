package goharness

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
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
func CheckSpan(solution string) error { return checkSpan(solution, false) }

// CheckSpanFor is CheckSpan for a solution checked against e: a return
// from the scenario is allowed where e holds the end marker (the
// reference's runs reached the code after the span), since a run that
// returns before it then fails as not having run to its end, under
// substitution too. A return in a branch the run never takes (defensive code)
// then costs nothing. Without an expectation (observing the reference),
// or one without the end marker, it is CheckSpan.
func CheckSpanFor(solution string, e *Expectation) error {
	return checkSpan(solution, e != nil && e.hasEnd())
}

func checkSpan(solution string, mayReturn bool) error {
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
				if !inLit && !mayReturn {
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

// refusedImports are the packages a solution may not import: each reads
// or writes memory the type system does not let it reach (unsafe, the
// raw system calls of syscall and golang.org/x/sys, cgo), loads or
// inspects code (plugin; debug/* reads the test binary's own symbols and
// DWARF, where the harness's key lives) or reaches into the runtime's
// internals (runtime/debug, runtime/pprof, runtime/trace). No task's
// answer needs them, and each is a route to forging the harness's record.
var refusedImports = []string{"unsafe", "syscall", "C", "plugin", "runtime/debug", "runtime/pprof", "runtime/trace", "runtime/cgo"}

// refusedPrefixes are refused with everything under them.
var refusedPrefixes = []string{"debug/", "golang.org/x/sys/", "runtime/internal/", "internal/"}

// CheckImports refuses a solution that imports a package of
// refusedImports or under refusedPrefixes (imports as Task.Imports holds
// them: `name "path"`), before the build: a clear verdict, where the
// package would otherwise let the solution read the harness's key.
func CheckImports(imports []string) error {
	for _, im := range imports {
		_, quoted, _ := strings.Cut(im, " ")
		p, err := strconv.Unquote(quoted)
		if err != nil {
			p = strings.Trim(quoted, "\"`")
		}
		refused := slices.Contains(refusedImports, p) || p == "golang.org/x/sys"
		for _, pre := range refusedPrefixes {
			refused = refused || strings.HasPrefix(p, pre)
		}
		if refused {
			return fmt.Errorf("imports %q, which a solution may not: it reaches memory, code or runtime internals the harness's integrity rests on", p)
		}
	}
	return nil
}

// CheckSolverImports is CheckImports over the imports the unit file gets
// for the solver's code (ImportsFor) less those the task's context itself
// uses: a package the example imports for its own lines is the task's,
// not the solver's choice.
func (t Task) CheckSolverImports(solverImports []string, code string) error {
	ctx := map[string]bool{}
	for _, im := range t.contextImports() {
		ctx[im] = true
	}
	var mine []string
	for _, im := range t.ImportsFor(solverImports, code) {
		if !ctx[im] {
			mine = append(mine, im)
		}
	}
	return CheckImports(mine)
}
