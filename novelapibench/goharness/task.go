package goharness

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/runners/goapi"
)

// Task difficulties: how much of the surrounding code the solver writes.
const (
	Easy   = "easy"   // the statement calling the target
	Medium = "medium" // that statement and the data it is given
	Hard   = "hard"   // all of main: the call composed with the package's other calls
)

// Target names the API a task is about.
type Target struct {
	ID       string
	Package  string // import path
	Receiver string // for methods
	Name     string
}

// Task is a coding task cut from a standalone example: main's statements
// with a span masked. The solver writes the span.
type Task struct {
	Difficulty string
	Imports    []string // import lines of the program: name "path"
	Decls      string   // the example's same-file helper declarations
	Before     string   // main's statements before the span
	Mask       string   // the span, as the example wrote it: the reference
	After      string   // main's statements after the span
	// Probes are the variables the span assigns and the rest of main
	// reads: the harness records their type, length, nil-ness and value.
	Probes []string
	// Keep are the variables main declares before the span: the harness
	// marks them used, so a solution that ignores one fails on what it
	// computes rather than on "declared and not used".
	Keep []string
	// Aux are the other functions of the target's package main calls.
	Aux    []string
	Output string // what the example prints
}

// Context is what the solver sees: the program with the span replaced by
// a marker.
func (t Task) Context() string {
	return t.Program("\t// <MASK>: your code here")
}

// Program is the program with solution in place of the span.
func (t Task) Program(solution string) string {
	var b strings.Builder
	b.WriteString("package main\n\n")
	for _, im := range t.Imports {
		b.WriteString("import " + im + "\n")
	}
	if t.Decls != "" {
		b.WriteString("\n" + t.Decls + "\n")
	}
	b.WriteString("\nfunc main() {" + t.Before + "\n" + solution + "\n" + t.After + "\n}\n")
	return b.String()
}

// TasksFromExample builds the graded tasks an example supports. A level
// it cannot support honestly is left out, with the reason in skipped.
func TasksFromExample(ex goapi.Example, tg Target) ([]Task, map[string]string, error) {
	skipped := map[string]string{}
	if ex.Program == "" {
		return nil, nil, fmt.Errorf("%s is not standalone: %s", ex.Name, ex.Why)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example.go", ex.Program, parser.ParseComments)
	if err != nil {
		return nil, nil, err
	}
	src := ex.Program
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	var main *ast.FuncDecl
	var decls []string
	var imports []string
	pkgName := ""
	for _, im := range f.Imports {
		imports = append(imports, goapi.ImportName(im)+" "+im.Path.Value)
		if strings.Trim(im.Path.Value, `"`) == tg.Package {
			pkgName = goapi.ImportName(im)
		}
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "main" {
			main = fd
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
	if main == nil || len(main.Body.List) == 0 {
		return nil, nil, fmt.Errorf("%s: no main body", ex.Name)
	}
	stmts := main.Body.List
	k := -1
	aux := map[string]bool{}
	for i, s := range stmts {
		ast.Inspect(s, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := calledFunc(call).(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, isIdent := sel.X.(*ast.Ident)
			onPkg := isIdent && pkgName != "" && id.Name == pkgName
			switch {
			case sel.Sel.Name == tg.Name && (tg.Receiver != "" || onPkg):
				if k < 0 {
					k = i
				}
			case onPkg:
				aux[sel.Sel.Name] = true
			}
			return true
		})
	}
	if k < 0 {
		return nil, nil, fmt.Errorf("%s never calls %s", ex.Name, tg.ID)
	}
	base := Task{Imports: imports, Decls: strings.Join(decls, "\n\n"), Output: ex.Output}
	for a := range aux {
		base.Aux = append(base.Aux, a)
	}
	sort.Strings(base.Aux)
	cut := func(level string, j, k int) Task {
		t := base
		t.Difficulty = level
		t.Before = src[off(main.Body.Lbrace)+1 : off(stmts[j].Pos())]
		t.Mask = src[off(stmts[j].Pos()):off(stmts[k].End())]
		t.After = strings.TrimRight(src[off(stmts[k].End()):off(main.Body.Rbrace)], " \t\n")
		t.Before = strings.TrimRight(t.Before, " \t\n")
		t.Probes = probes(stmts[j:k+1], stmts[k+1:])
		for _, st := range stmts[:j] {
			t.Keep = append(t.Keep, defined(st)...)
		}
		return t
	}
	tasks := []Task{cut(Easy, k, k)}
	if j := dataStart(stmts, k); j < k {
		tasks = append(tasks, cut(Medium, j, k))
	} else {
		skipped[Medium] = "the call is given no data set up before it"
	}
	if len(base.Aux) > 0 {
		tasks = append(tasks, cut(Hard, 0, len(stmts)-1))
	} else {
		skipped[Hard] = "the example calls nothing else of the package to compose with"
	}
	return tasks, skipped, nil
}

func declDoc(d ast.Decl) *ast.CommentGroup {
	switch d := d.(type) {
	case *ast.FuncDecl:
		return d.Doc
	case *ast.GenDecl:
		return d.Doc
	}
	return nil
}

// defined lists the variables a statement declares or assigns.
func defined(s ast.Stmt) []string {
	var out []string
	switch s := s.(type) {
	case *ast.AssignStmt:
		for _, e := range s.Lhs {
			if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
				out = append(out, id.Name)
			}
		}
	case *ast.DeclStmt:
		if gd, ok := s.Decl.(*ast.GenDecl); ok {
			for _, sp := range gd.Specs {
				if vs, ok := sp.(*ast.ValueSpec); ok {
					for _, n := range vs.Names {
						if n.Name != "_" {
							out = append(out, n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

func usedIdents(stmts []ast.Stmt) map[string]bool {
	used := map[string]bool{}
	for _, s := range stmts {
		ast.Inspect(s, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				ast.Inspect(sel.X, func(m ast.Node) bool {
					if id, ok := m.(*ast.Ident); ok {
						used[id.Name] = true
					}
					return true
				})
				return false
			}
			if id, ok := n.(*ast.Ident); ok {
				used[id.Name] = true
			}
			return true
		})
	}
	return used
}

// probes: what the span defines and the rest reads.
func probes(span, rest []ast.Stmt) []string {
	later := usedIdents(rest)
	var out []string
	seen := map[string]bool{}
	for _, s := range span {
		for _, v := range defined(s) {
			if later[v] && !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out
}

// dataStart is the first statement, walking back from k, that defines
// data statement k uses (transitively through the statements between).
func dataStart(stmts []ast.Stmt, k int) int {
	need := usedIdents(stmts[k : k+1])
	j := k
	for i := k - 1; i >= 0; i-- {
		hit := false
		for _, v := range defined(stmts[i]) {
			if need[v] {
				hit = true
			}
		}
		if hit {
			j = i
			for v := range usedIdents(stmts[i : i+1]) {
				need[v] = true
			}
		}
	}
	return j
}

// Describe writes a task's description from the API's doc without naming
// the API. ok is false when it would name it anyway (the level is then
// dropped: a description that names the target gives the answer away).
func Describe(t Task, tg Target, doc string) (string, bool) {
	gloss := glossOf(doc, tg.Name)
	out := strings.TrimRight(t.Output, "\n")
	var b strings.Builder
	switch t.Difficulty {
	case Easy:
		b.WriteString("Complete the marked statement of main. It should call the library so that it " + gloss)
	case Medium:
		b.WriteString("Complete the marked part of main: set up the input data, then use the library so that it " + gloss)
	case Hard:
		b.WriteString("Write the body of main using the library: it " + gloss)
	}
	if out != "" {
		b.WriteString("\nThe program must print exactly:\n" + out)
	}
	d := b.String()
	return d, !NamesTarget(d, tg)
}

var firstSentence = regexp.MustCompile(`^(.+?[.!?])(\s|$)`)

// glossOf is the doc's first sentence without the API's name as subject:
// "Map manipulates a slice." → "manipulates a slice."
func glossOf(doc, name string) string {
	flat := strings.Join(strings.Fields(doc), " ")
	if m := firstSentence.FindStringSubmatch(flat); m != nil {
		flat = m[1]
	}
	flat = strings.TrimPrefix(flat, name+" ")
	flat = regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\b`).ReplaceAllString(flat, "it")
	if flat == "" {
		return "does what the library function is documented to do."
	}
	return flat
}

// NamesTarget reports whether text names the target API: its name as a
// whole identifier (case-sensitive), with or without receiver.
func NamesTarget(text string, tg Target) bool {
	return regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(tg.Name) + `($|[^A-Za-z0-9_])`).MatchString(text)
}
