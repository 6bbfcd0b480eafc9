package goharness

import (
	"go/ast"
	"go/parser"
	"go/token"

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
