package goharness

import (
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"strconv"
	"strings"

	"github.com/lacuna-dev/lacuna/runners/goapi"
)

// SplitAnswer reads a span answer: the import declarations the solver
// wrote first (import "x", import n "x", import ( ... ), comments
// between them), then the statements. imports are `name "path"` lines as
// Task.Imports holds them (name is goapi.ImportName: the explicit name,
// else the guess from the path); span is the rest, as written. An answer
// whose leading imports do not parse is returned whole as the span, for
// the compiler to report.
func SplitAnswer(solution string) (imports []string, span string) {
	fset := token.NewFileSet()
	src := []byte(solution)
	var s scanner.Scanner
	s.Init(fset.AddFile("", fset.Base(), len(src)), src, nil, 0)
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	end := 0
	for {
		_, tok, _ := s.Scan()
		if tok != token.IMPORT {
			break
		}
		depth := 0
		for done := false; !done; {
			p, tok, lit := s.Scan()
			switch {
			case tok == token.EOF:
				return nil, solution
			case tok == token.LPAREN:
				depth++
			case tok == token.RPAREN:
				depth--
			case tok == token.SEMICOLON && depth == 0:
				end = off(p)
				if lit == ";" {
					end++
				}
				done = true
			}
		}
	}
	if end == 0 {
		return nil, solution
	}
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+solution[:end], parser.ImportsOnly)
	if err != nil || len(f.Decls) == 0 {
		return nil, solution
	}
	for _, im := range f.Imports {
		imports = append(imports, goapi.ImportName(im)+" "+im.Path.Value)
	}
	return imports, strings.TrimLeft(solution[end:], "\r\n")
}

// ImportsFor is the import lines of the unit file that runs code (the
// scenario with the solution in place, helper declarations included):
// the context's imports code uses, the solver's own imports (all of them,
// and a whole program's: an unused one fails to compile, as in any Go
// file), and the standard packages code refers to without importing them
// (stdImports), each line once; a solver's import named lacuna… is
// dropped (the harness's names). Two lines giving one name to different
// paths are both kept: the compiler reports the clash, as it would in the
// solver's file. The target's package is never added on the solver's
// behalf: unless the context's own code uses it, an answer that does not
// import it fails to compile (a WrongImport).
func (t Task) ImportsFor(solverImports []string, code string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(ims []string) {
		for _, im := range ims {
			if !seen[im] {
				seen[im] = true
				out = append(out, im)
			}
		}
	}
	add(usedImports(t.contextImports(), code))
	for _, ims := range [][]string{t.OwnImports, solverImports} {
		for _, im := range ims {
			// Names starting with lacuna belong to the harness's own
			// imports: dropped, so that none can clash with them (code
			// that names one is refused by CheckSpan).
			if !strings.HasPrefix(strings.ToLower(im), "lacuna") {
				add([]string{im})
			}
		}
	}
	add(stdImports(out, code))
	return out
}

// contextImports are the example's imports the context's own code
// (helper declarations, main before and after the span) refers to: what
// Context shows and the harness provides without the solver asking.
func (t Task) contextImports() []string {
	return usedImports(t.Imports, t.source(""))
}

// ReferenceAnswer is the reference as the solver would write it: the
// import declarations the mask needs that the context does not provide
// (the target's package among them unless the context uses it), then the
// mask.
func (t Task) ReferenceAnswer() string { return t.Answer(t.Mask) }

// Answer is span as a span answer: preceded by the import declarations
// it needs (of the example's imports, and standard packages) that the
// context does not provide. A solution derived from the reference (a
// calibration mutant, a rewritten reference) becomes an answer the way
// the reference does.
func (t Task) Answer(span string) string {
	provided := t.contextImports()
	have := map[string]bool{}
	for _, im := range provided {
		have[im] = true
	}
	stmts := "func _() {\n" + span + "\n}"
	var need []string
	for _, im := range usedImports(t.Imports, stmts) {
		if !have[im] {
			need = append(need, im)
		}
	}
	need = append(need, stdImports(append(provided, need...), stmts)...)
	var b strings.Builder
	for _, im := range need {
		b.WriteString(importDecl(im) + "\n")
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	return b.String() + span
}

// importDecl writes an import line as Go: the name only where the path
// alone would not give it.
func importDecl(im string) string {
	name, path, _ := strings.Cut(im, " ")
	p, err := strconv.Unquote(path)
	if err == nil && goapi.ImportName(&ast.ImportSpec{Path: &ast.BasicLit{Kind: token.STRING, Value: path}}) == name && name != "" {
		return "import " + strconv.Quote(p)
	}
	return "import " + im
}

// KnownImports reports whether every import the solver wrote is one that
// builds for sure: the task's own, a package of the target's module
// (modPath) or a well-known standard package. A batch keeps a unit with
// any other import in a package of its own, since the go command reports
// an import that does not resolve one package at a time.
func KnownImports(t Task, modPath string, solverImports []string) bool {
	known := map[string]bool{}
	for _, im := range t.Imports {
		_, path, _ := strings.Cut(im, " ")
		known[path] = true
	}
	for _, path := range stdPackages {
		known[strconv.Quote(path)] = true
	}
	for _, im := range solverImports {
		_, path, _ := strings.Cut(im, " ")
		p, err := strconv.Unquote(path)
		if err != nil || !known[path] && p != modPath && !strings.HasPrefix(p, modPath+"/") {
			return false
		}
	}
	return true
}
