package goharness

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/runners/goapi"
)

// The lines that mark a scenario's span (TaskFromScenario): each alone on
// its line, the opening one before the closing one.
const (
	MaskOpen  = "// <MASK>"
	MaskClose = "// </MASK>"
)

// TaskFromScenario builds a task from a scenario program a generator (a
// model) wrote: a whole assertion-free package main whose main marks the
// span the solver writes, whole statements of main between a line
// MaskOpen and a line MaskClose. The task is what TasksFromExample makes
// of an example, with the span the scenario marks instead of one cut by
// level: the program's imports and helper declarations, main's
// statements before and after the span, the probes (what the span sets
// and the rest of main reads), the variables declared before it and the
// package's other functions main calls (Aux). Output is left empty: what
// the scenario prints is observed, not taken on trust.
//
// It refuses, saying why, a scenario that does not parse, is not package
// main, marks no span or marks it across a block (the markers must sit
// between main's own statements), whose span does not call the target or
// is not a plain statement list (CheckSpan), whose other code names the
// target (the context would give the answer away) or would run before or
// around the harness (CheckDecls: init, names starting with lacuna).
func TaskFromScenario(program, difficulty string, tg Target) (Task, error) {
	var lines []string
	open, closing := -1, -1
	for i, l := range strings.Split(program, "\n") {
		switch strings.TrimSpace(l) {
		case MaskOpen:
			if open >= 0 {
				return Task{}, fmt.Errorf("marks two spans (%s twice)", MaskOpen)
			}
			open = i
		case MaskClose:
			if closing >= 0 {
				return Task{}, fmt.Errorf("marks two spans (%s twice)", MaskClose)
			}
			closing = i
		}
		lines = append(lines, l)
	}
	switch {
	case open < 0 || closing < 0:
		return Task{}, fmt.Errorf("marks no span: main needs a line %s and a later line %s around the code to write", MaskOpen, MaskClose)
	case closing < open:
		return Task{}, fmt.Errorf("closes its span (%s) before opening it (%s)", MaskClose, MaskOpen)
	}
	// The program without the marker lines: statement i of main is the
	// same statement in both, so the span is found in the marked one and
	// cut from this one.
	src := strings.Join(append(append(append([]string{}, lines[:open]...), lines[open+1:closing]...), lines[closing+1:]...), "\n")
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "scenario.go", program, parser.ParseComments)
	if err != nil {
		return Task{}, fmt.Errorf("does not parse: %s", firstLine(err.Error()))
	}
	if f.Name.Name != "main" {
		return Task{}, fmt.Errorf("is package %s, not package main", f.Name.Name)
	}
	if w := waitsOnClock(f); w != "" {
		return Task{}, fmt.Errorf("waits on the clock (%s): what it prints depends on how fast the machine runs it, so no harness could grade it the same way twice", w)
	}
	main := mainOf(f)
	if main == nil || len(main.Body.List) == 0 {
		return Task{}, fmt.Errorf("has no main with statements")
	}
	lineOf := func(p token.Pos) int { return fset.Position(p).Line - 1 }
	if lineOf(main.Body.Lbrace) >= open || lineOf(main.Body.Rbrace) <= closing {
		return Task{}, fmt.Errorf("marks its span outside main's body")
	}
	j, k := -1, -1
	for i, s := range main.Body.List {
		first, last := lineOf(s.Pos()), lineOf(s.End())
		switch {
		case first > open && last < closing:
			if j < 0 {
				j = i
			}
			k = i
		case first <= open && last >= open, first <= closing && last >= closing:
			return Task{}, fmt.Errorf("marks its span inside a statement (line %d): the markers must sit between main's own statements", first+1)
		}
	}
	if j < 0 {
		return Task{}, fmt.Errorf("marks an empty span")
	}
	fset = token.NewFileSet()
	if f, err = parser.ParseFile(fset, "scenario.go", src, parser.ParseComments); err != nil {
		return Task{}, fmt.Errorf("does not parse without its markers: %s", firstLine(err.Error()))
	}
	main = mainOf(f)
	stmts := main.Body.List
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	t := Task{Difficulty: difficulty}
	for _, im := range f.Imports {
		t.Imports = append(t.Imports, goapi.ImportName(im)+" "+im.Path.Value)
	}
	var decls []string
	for _, d := range f.Decls {
		if d == ast.Decl(main) {
			continue
		}
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
			continue
		}
		start := d.Pos()
		if doc := declDoc(d); doc != nil {
			start = doc.Pos()
		}
		decls = append(decls, src[off(start):off(d.End())])
	}
	t.Decls = strings.Join(decls, "\n\n")
	t.Before = strings.TrimRight(src[off(main.Body.Lbrace)+1:off(stmts[j].Pos())], " \t\n")
	t.Mask = src[off(stmts[j].Pos()):off(stmts[k].End())]
	t.After = strings.TrimRight(src[off(stmts[k].End()):off(main.Body.Rbrace)], " \t\n")
	t.Probes = probes(stmts[j:k+1], stmts[k+1:])
	for _, st := range stmts[:j] {
		t.Keep = append(t.Keep, defined(st)...)
	}
	pkgName, imported := importNames(t.Imports, tg.Package)
	calls := false
	aux := map[string]bool{}
	for i, s := range stmts {
		ast.Inspect(s, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if callsTargetExpr(call, tg, pkgName, imported) {
				calls = calls || i >= j && i <= k
				return true
			}
			if sel, ok := calledFunc(call).(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && pkgName != "" && id.Name == pkgName {
					aux[sel.Sel.Name] = true
				}
			}
			return true
		})
	}
	if !calls {
		return Task{}, fmt.Errorf("its marked span never calls %s", tg.ID)
	}
	for a := range aux {
		t.Aux = append(t.Aux, a)
	}
	sort.Strings(t.Aux)
	if err := CheckSpan(t.Mask); err != nil {
		return Task{}, fmt.Errorf("its marked span %w", err)
	}
	if err := CheckDecls(t.source("")); err != nil {
		return Task{}, fmt.Errorf("its code %w", err)
	}
	if NamesTarget(t.Context(), tg) {
		return Task{}, fmt.Errorf("names %s outside its span: the context would give the answer away", tg.Name)
	}
	return t, nil
}

func mainOf(f *ast.File) *ast.FuncDecl {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "main" && fd.Body != nil {
			return fd
		}
	}
	return nil
}
