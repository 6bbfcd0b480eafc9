package goharness

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"strings"

	"github.com/lacuna-dev/lacuna/runners/goapi"
)

// AsProgram reads a solution written as a whole program — package main
// with its own imports, helpers and main, as models often answer — and
// returns the task to run it as: the program's imports (OwnImports) and declarations,
// main's body as the span (nothing before or after it, since the program
// rewrote the context too), and of the task's probes those main declares
// at its top level (the rest cannot be read; the printed output still
// is). The import of the target's package is the solver's own, so a wrong
// one is a WrongImport. ok is false when solution is not such a program.
func (t Task) AsProgram(solution string) (prog Task, span string, ok bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "solution.go", solution, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil || f.Name.Name != "main" {
		return Task{}, "", false
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	var main *ast.FuncDecl
	prog = Task{Difficulty: t.Difficulty, Output: t.Output, Aux: t.Aux}
	for _, im := range f.Imports {
		prog.OwnImports = append(prog.OwnImports, goapi.ImportName(im)+" "+im.Path.Value)
	}
	for _, d := range f.Decls {
		if fd, isFunc := d.(*ast.FuncDecl); isFunc && fd.Recv == nil && fd.Name.Name == "main" {
			main = fd
			continue
		}
		if gd, isGen := d.(*ast.GenDecl); isGen && gd.Tok == token.IMPORT {
			continue
		}
		start := d.Pos()
		if doc := declDoc(d); doc != nil {
			start = doc.Pos()
		}
		prog.Decls += solution[off(start):off(d.End())] + "\n\n"
	}
	if main == nil || main.Body == nil {
		return Task{}, "", false
	}
	span = solution[off(main.Body.Lbrace)+1 : off(main.Body.Rbrace)]
	declared := map[string]bool{}
	for _, st := range main.Body.List {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, l := range st.Lhs {
					if id, isIdent := l.(*ast.Ident); isIdent {
						declared[id.Name] = true
					}
				}
			}
		case *ast.DeclStmt:
			if gd, isGen := st.Decl.(*ast.GenDecl); isGen && gd.Tok == token.VAR {
				for _, s := range gd.Specs {
					for _, n := range s.(*ast.ValueSpec).Names {
						declared[n.Name] = true
					}
				}
			}
		}
	}
	for _, p := range t.Probes {
		if declared[p] {
			prog.Probes = append(prog.Probes, p)
		}
	}
	prog.Mask = span
	return prog, span, true
}

// WithContext splits a whole program (prog and its main's body, as
// AsProgram made them) where its main begins with the task's own context
// before the span, statement for statement (as gofmt prints them): prog
// then runs that code as its context, not the solver's, and the rest is
// its span, so the program gets the task's second input as a span does
// (PerturbBefore). ok is false when main does not begin so (the program
// built its data its own way: it has no second input, its calls' data is
// still checked).
func (t Task) WithContext(prog Task, body string) (Task, string, bool) {
	const head = "package p\nfunc _() {"
	parse := func(src string) (*token.FileSet, []ast.Stmt) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "", head+src+"\n}\n", parser.SkipObjectResolution)
		if err != nil || len(f.Decls) != 1 {
			return nil, nil
		}
		return fset, f.Decls[0].(*ast.FuncDecl).Body.List
	}
	bset, before := parse(t.Before)
	sset, stmts := parse(body)
	if len(before) == 0 || len(stmts) <= len(before) {
		return prog, body, false
	}
	show := func(fset *token.FileSet, n ast.Node) string {
		var b strings.Builder
		printer.Fprint(&b, fset, n)
		return b.String()
	}
	for i, st := range before {
		if show(bset, st) != show(sset, stmts[i]) {
			return prog, body, false
		}
	}
	at := sset.Position(stmts[len(before)-1].End()).Offset - len(head)
	prog.Before, prog.Mask = body[:at], body[at:]
	return prog, body[at:], true
}

// WithProbes is o with only the named probes: what a whole-program
// solution can be compared on.
func (o *Observation) WithProbes(names []string) *Observation {
	if o == nil {
		return nil
	}
	c := *o
	c.Probes = map[string]Probe{}
	for _, n := range append(names, EndProbe) {
		if p, ok := o.Probes[n]; ok {
			c.Probes[n] = p
		}
	}
	return &c
}
