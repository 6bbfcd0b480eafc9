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
	show := func(_ *token.FileSet, n ast.Node) string { return layoutFree(n) }
	for i, st := range before {
		if show(bset, st) != show(sset, stmts[i]) {
			return prog, body, false
		}
	}
	at := sset.Position(stmts[len(before)-1].End()).Offset - len(head)
	prog.Before, prog.Mask = body[:at], body[at:]
	return prog, body[at:], true
}

// AsSpan reads a whole program (prog and its main's body, as AsProgram
// made them) that is the task's own program with the span written in:
// the task's helper declarations, and a main that begins with the task's
// statements before the span and ends with those after it, statement for
// statement (as gofmt prints them, comments aside). It returns the
// statements in between as the span, the program's imports as the
// solver's, and the declarations the program adds to the task's as own
// (functions, types with their methods, constants, variables: OwnDecls),
// so that the program is run and checked exactly as that span answer
// would be: the task's context keeps its own calls and returns, and only
// the span and own are the solver's. ok is false for any other program
// (it then runs as a whole program: AsProgram, WithContext), and for one
// that changes or leaves out a task declaration, declares a variable
// whose initialiser calls a function (it would run before the harness)
// or a method on a task type (it would change the context's behaviour).
func (t Task) AsSpan(prog Task, body string) (span, own string, imports []string, ok bool) {
	const head = "package p\nfunc _() {"
	parse := func(src string) (*token.FileSet, []ast.Stmt, bool) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "", head+src+"\n}\n", parser.SkipObjectResolution)
		if err != nil || len(f.Decls) != 1 {
			return nil, nil, false
		}
		return fset, f.Decls[0].(*ast.FuncDecl).Body.List, true
	}
	show := func(_ *token.FileSet, n ast.Node) string { return layoutFree(n) }
	own, ok = OwnDecls(t.Decls, prog.Decls)
	if !ok {
		return "", "", nil, false
	}
	bset, before, ok1 := parse(t.Before)
	aset, after, ok2 := parse(t.After)
	sset, stmts, ok3 := parse(body)
	if !ok1 || !ok2 || !ok3 || len(stmts) <= len(before)+len(after) {
		return "", "", nil, false
	}
	for i, st := range before {
		if show(bset, st) != show(sset, stmts[i]) {
			return "", "", nil, false
		}
	}
	rest := stmts[len(stmts)-len(after):]
	for i, st := range after {
		if show(aset, st) != show(sset, rest[i]) {
			return "", "", nil, false
		}
	}
	from := len(head)
	if len(before) > 0 {
		from = sset.Position(stmts[len(before)-1].End()).Offset
	}
	to := sset.Position(stmts[len(stmts)-len(after)-1].End()).Offset
	return strings.TrimLeft(body[from-len(head):to-len(head)], "\r\n"), own, prog.OwnImports, true
}

// OwnDecls returns the declarations of a program's (progDecls) that are
// not the task's (taskDecls), as written, comments included: ok when
// every task declaration is among the program's unchanged and in order
// (as gofmt prints them without their comments), and what the program
// adds are functions, types, methods of those types, constants and
// variables whose initialisers call nothing. An initialiser that calls a
// function would run the solver's code before the harness, and a method
// on a task type would change how the task's own code behaves, so a
// program declaring one is not the task's program.
func OwnDecls(taskDecls, progDecls string) (own string, ok bool) {
	// Compared without their comments (the printer prints a declaration's
	// doc comment), written out with them.
	parse := func(src string, mode parser.Mode) (*token.FileSet, *ast.File, bool) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "", "package p\n"+src, mode|parser.SkipObjectResolution)
		return fset, f, err == nil
	}
	_, tf, ok1 := parse(taskDecls, 0)
	_, pf, ok2 := parse(progDecls, 0)
	pset, withDocs, ok3 := parse(progDecls, parser.ParseComments)
	if !ok1 || !ok2 || !ok3 || len(withDocs.Decls) != len(pf.Decls) {
		return "", false
	}
	want := make([]string, len(tf.Decls))
	for i, d := range tf.Decls {
		want[i] = layoutFree(d)
	}
	var extra []int
	types := map[string]bool{}
	for i, d := range pf.Decls {
		if len(want) > 0 && layoutFree(d) == want[0] {
			want = want[1:]
			continue
		}
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.Name == "init" {
				return "", false
			}
		case *ast.GenDecl:
			switch d.Tok {
			case token.TYPE:
				for _, s := range d.Specs {
					types[s.(*ast.TypeSpec).Name.Name] = true
				}
			case token.CONST:
			case token.VAR:
				// An initialiser runs before the harness: only one that
				// calls nothing (a literal, a composite of literals) runs
				// no code of the solver's there.
				calls := false
				ast.Inspect(d, func(n ast.Node) bool {
					switch n.(type) {
					case *ast.CallExpr, *ast.FuncLit:
						calls = true
					}
					return !calls
				})
				if calls {
					return "", false
				}
			default:
				return "", false
			}
		}
		extra = append(extra, i)
	}
	if len(want) > 0 {
		return "", false
	}
	var b strings.Builder
	src := "package p\n" + progDecls
	for _, i := range extra {
		d := withDocs.Decls[i]
		if fd, isFunc := d.(*ast.FuncDecl); isFunc && fd.Recv != nil {
			name := ""
			if len(fd.Recv.List) == 1 {
				name, _ = goapi.ReceiverName(fd.Recv.List[0].Type)
			}
			if !types[name] {
				return "", false
			}
		}
		start := d.Pos()
		if doc := declDoc(d); doc != nil {
			start = doc.Pos()
		}
		b.WriteString(src[pset.Position(start).Offset:pset.Position(d.End()).Offset] + "\n\n")
	}
	return b.String(), true
}

// layoutFree prints n as gofmt would print it written on one line: the
// printer without the file's positions lays it out itself, so that code
// that differs only in line breaks and spacing prints the same.
func layoutFree(n ast.Node) string {
	var b strings.Builder
	printer.Fprint(&b, token.NewFileSet(), n)
	return b.String()
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
