package goharness

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"regexp"
	"sort"
	"strconv"
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
	// Module is the module path descriptions name the library by ("the
	// library" when empty): the package to import is the solver's to find.
	Module string
}

// Task is a coding task cut from a standalone example: main's statements
// with a span masked. The solver writes the span, with the import lines
// it needs first (SplitAnswer), or a whole program (AsProgram).
type Task struct {
	Difficulty string
	// Imports are the example's import lines: name "path". The context
	// shows only those its own code uses; the rest, the target's package
	// among them, are the solver's to write (ReferenceAnswer).
	Imports []string
	// OwnImports are a whole program's imports (AsProgram): the solver's,
	// all provided to the code that runs.
	OwnImports []string `json:",omitempty"`
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
// a marker, importing only what the context's own code uses.
func (t Task) Context() string {
	return render(t.contextImports(), t.source("\t// <MASK>: your code here"))
}

// Program is the program with solution in place of the span: a span
// answer (with leading import lines or none), or a whole program, which
// is returned as its own task renders it. Its imports are ImportsFor's.
func (t Task) Program(solution string) string {
	if prog, span, ok := t.AsProgram(solution); ok {
		t, solution = prog, span
	}
	imports, span := SplitAnswer(solution)
	code := t.source(span)
	return render(t.ImportsFor(imports, code), code)
}

// source is the program after its imports: the helper declarations and
// main with span in place.
func (t Task) source(span string) string {
	var b strings.Builder
	if t.Decls != "" {
		b.WriteString(t.Decls + "\n\n")
	}
	b.WriteString("func main() {" + t.Before + "\n" + span + "\n" + t.After + "\n}\n")
	return b.String()
}

func render(imports []string, source string) string {
	var b strings.Builder
	b.WriteString("package main\n\n")
	for _, im := range imports {
		b.WriteString("import " + im + "\n")
	}
	b.WriteString("\n" + source)
	return b.String()
}

// clockWaits are the time package's functions that wait for time to
// pass: a program calling one races the machine's speed.
var clockWaits = map[string]bool{"Sleep": true, "After": true, "Tick": true, "NewTimer": true, "NewTicker": true, "AfterFunc": true}

// waitsOnClock names the first call in f that waits for time to pass
// (time.Sleep, a timer, a ticker), "" when there is none. Such a program's
// output depends on timing (a throttle that lets 3 or 4 calls through in
// a window, as the machine's load decides), so a task made of it would be
// kept or dropped, passed or failed, by chance.
func waitsOnClock(f *ast.File) string {
	name := ""
	for _, im := range f.Imports {
		if im.Path.Value == `"time"` {
			name = goapi.ImportName(im)
		}
	}
	if name == "" || name == "_" {
		return ""
	}
	found := ""
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || found != "" {
			return found == ""
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == name && clockWaits[sel.Sel.Name] {
			found = name + "." + sel.Sel.Name
		}
		return true
	})
	return found
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
	for _, im := range f.Imports {
		imports = append(imports, goapi.ImportName(im)+" "+im.Path.Value)
	}
	pkgName, imported := importNames(imports, tg.Package)
	if w := waitsOnClock(f); w != "" {
		return nil, nil, fmt.Errorf("%s waits on the clock (%s): what it prints depends on how fast the machine runs it, so no harness could grade it the same way twice", ex.Name, w)
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
			switch {
			case callsTargetExpr(call, tg, pkgName, imported):
				if k < 0 {
					k = i
				}
			case isIdent && pkgName != "" && id.Name == pkgName:
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

// callsTargetExpr reports whether call calls the target: a function called
// through the name its package is imported by (pkgName), or a method of
// that name called on any value but a package (a same-named function of
// an imported package is not the method). imported are the file's import
// names.
func callsTargetExpr(call *ast.CallExpr, tg Target, pkgName string, imported map[string]bool) bool {
	sel, ok := calledFunc(call).(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != tg.Name {
		return false
	}
	id, isIdent := sel.X.(*ast.Ident)
	if tg.Receiver == "" {
		return isIdent && pkgName != "" && id.Name == pkgName
	}
	return !isIdent || !imported[id.Name]
}

// importNames is the name imports give path ("" when none imports it),
// and all the names they import by.
func importNames(imports []string, path string) (string, map[string]bool) {
	name := ""
	all := map[string]bool{}
	for _, im := range imports {
		n, p, _ := strings.Cut(im, " ")
		all[n] = true
		if q, err := strconv.Unquote(p); err == nil && q == path && name == "" {
			name = n
		}
	}
	return name, all
}

var chainBreak = regexp.MustCompile(`\.[ \t]*\n\s*`)

// joinChain writes a call chain broken over lines (x.A().\n\tB()) on one.
func joinChain(src string) string { return chainBreak.ReplaceAllString(src, ".") }

// isPrint reports whether call prints: fmt's Print, Printf, Println (or
// the Fprint family), or the print builtins.
func isPrint(call *ast.CallExpr, fmtName string) bool {
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return f.Name == "print" || f.Name == "println"
	case *ast.SelectorExpr:
		id, ok := f.X.(*ast.Ident)
		return ok && fmtName != "" && id.Name == fmtName && strings.Contains(f.Sel.Name, "Print")
	}
	return false
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

// Describe writes a task's description from the example and the API's
// doc, without naming the API: what the solver starts from (easy: the
// context shows it; medium and hard: the data statements the reference
// runs before the call, quoted, those that call the library left out at
// hard), what the call is given (its arguments and, for a method, the
// value it is called on), which variables the span must set, what the
// library should do (the doc's first sentence), the answer's format, and
// what the finished program prints for these inputs, as a check after the
// specification rather than as the specification. ok is false when the
// text would name the target anyway (the level is then dropped: a
// description that names the target gives the answer away).
func Describe(t Task, tg Target, doc string) (string, bool) {
	gloss := glossOf(doc, tg.Name)
	site, found := t.callSite(tg)
	lib := "the library"
	if tg.Module != "" {
		lib = "the library " + tg.Module
	}
	var b strings.Builder
	switch t.Difficulty {
	case Easy:
		b.WriteString("Complete the marked statement of main with " + lib + " so that it " + gloss)
	case Medium:
		b.WriteString("Complete the marked part of main: build the input data, then use " + lib + " so that it " + gloss)
		if found && len(site.data) > 0 {
			b.WriteString("\nThe input data, as Go:\n" + strings.Join(site.data, "\n"))
		}
	case Hard:
		b.WriteString("Write the body of main with " + lib + " so that it " + gloss)
		if found && len(site.plainData) > 0 {
			b.WriteString("\nStart from this data:\n" + strings.Join(site.plainData, "\n"))
		}
	}
	if found {
		if len(site.args) > 0 {
			b.WriteString("\nThe library call that does it takes " + enumerate(site.args))
		} else {
			b.WriteString("\nThe library call that does it takes no arguments")
		}
		if site.recv != "" && t.Difficulty != Hard {
			b.WriteString(", called on `" + site.recv + "`")
		}
		b.WriteString(".")
		if t.Difficulty != Hard && len(t.Probes) > 0 {
			var ps []string
			for _, p := range t.Probes {
				ps = append(ps, "`"+p+"`")
			}
			b.WriteString("\nThe marked code must set " + enumerate(ps) + ", which the code after it reads.")
		}
		switch {
		case site.printsResult:
			b.WriteString("\nPrint what the call returns.")
		case t.Output == "":
		case t.Difficulty == Hard && !site.prints:
			b.WriteString("\nMain prints nothing itself: the library's calls write the output (below).")
		case t.Difficulty == Hard:
		case !site.printsOutside:
			b.WriteString("\nThe marked code writes all of the program's output (below).")
		case site.prints:
			b.WriteString("\nThe marked code prints too (the output is below).")
		}
		if t.Difficulty == Hard && len(site.plainAfter) > 0 {
			if site.partial {
				b.WriteString("\nMain must also run this code, after the library calls it needs (yours to write)")
			} else {
				b.WriteString("\nThen finish with this code")
			}
			if len(site.results) > 0 {
				var rs []string
				for _, r := range site.results {
					rs = append(rs, "`"+r+"`")
				}
				b.WriteString(", which reads what the library computes as " + enumerate(rs))
			}
			b.WriteString(":\n" + strings.Join(site.plainAfter, "\n"))
		}
	}
	if t.Difficulty == Hard {
		b.WriteString("\nAnswer with the import declarations your code needs, then the statements of main; a whole program (package main) is accepted too.")
	} else {
		b.WriteString("\nAnswer with the import declarations your code needs (the program imports only what its own code uses), then the statements that replace the marker; a whole program (package main) is accepted too.")
	}
	if out := strings.TrimRight(t.Output, "\n"); out != "" {
		b.WriteString("\nFor these inputs the finished program prints:\n" + out)
	}
	d := b.String()
	return d, !NamesTarget(d, tg)
}

// enumerate joins items as prose: "a", "a and b", "a, b and c".
func enumerate(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// site is what Describe reads from the reference around the target's
// first call, as Go source.
type site struct {
	args []string // the call's arguments, each quoted
	recv string   // for a method: the value it is called on
	// data are the span's statements before the call's statement;
	// plainData those of them that do not use the target's package.
	data, plainData []string
	// plainAfter are main's statements after the call's, when none of
	// them uses the target's package; results the variables the call's
	// statement sets that they read.
	plainAfter, results []string
	partial             bool // statements using the package were left out of plainAfter
	// printsResult: the call is inside a print call; prints: the span
	// prints; printsOutside: main prints outside the span.
	printsResult, prints, printsOutside bool
}

// callSite finds the target's first call in the task's span. found is
// false when the span does not parse or never calls it.
func (t Task) callSite(tg Target) (st site, found bool) {
	fset := token.NewFileSet()
	head := "package main\n"
	src := head + t.source(t.Mask)
	f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if err != nil {
		return site{}, false
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	start := len(head) + strings.Index(t.source(t.Mask), "func main() {"+t.Before+"\n") + len("func main() {"+t.Before+"\n")
	end := start + len(t.Mask)
	var main *ast.FuncDecl
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "main" {
			main = fd
		}
	}
	if main == nil {
		return site{}, false
	}
	pkgName, imported := importNames(t.Imports, tg.Package)
	fmtName, _ := importNames(t.Imports, "fmt")
	show := func(n ast.Node) string {
		var buf bytes.Buffer
		if format.Node(&buf, fset, n) != nil {
			return src[off(n.Pos()):off(n.End())]
		}
		return buf.String()
	}
	usesPkg := func(n ast.Node) bool { return pkgName != "" && goapi.SelectorRoots(n)[pkgName] }
	var call *ast.CallExpr
	var callStmt int
	var span []ast.Stmt
	for _, s := range main.Body.List {
		if p := off(s.Pos()); p < start || p >= end {
			ast.Inspect(s, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok && isPrint(c, fmtName) {
					st.printsOutside = true
				}
				return true
			})
			continue
		}
		span = append(span, s)
		ast.Inspect(s, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			// The first call, or one inside it (a.X(1).X(2): the inner
			// X(1) runs first, and its receiver does not name the target).
			if ok && callsTargetExpr(c, tg, pkgName, imported) &&
				(call == nil || callStmt == len(span)-1 && call.Pos() <= c.Pos() && c.End() <= call.End()) {
				call, callStmt = c, len(span)-1
			}
			if ok && isPrint(c, fmtName) {
				st.prints = true
			}
			return true
		})
	}
	if call == nil {
		return site{}, false
	}
	for _, a := range call.Args {
		st.args = append(st.args, "`"+joinChain(show(a))+"`")
	}
	if call.Ellipsis.IsValid() && len(st.args) > 0 {
		st.args[len(st.args)-1] = strings.TrimSuffix(st.args[len(st.args)-1], "`") + "...`"
	}
	if sel, ok := calledFunc(call).(*ast.SelectorExpr); ok && tg.Receiver != "" {
		st.recv = joinChain(show(sel.X))
	}
	for _, s := range span[:callStmt] {
		st.data = append(st.data, show(s))
		if !usesPkg(s) {
			st.plainData = append(st.plainData, show(s))
		}
	}
	if t.Difficulty == Hard {
		// The code after the call, less the statements that use the
		// package (the solver's to write), and what it reads of theirs.
		var plain, lib []ast.Stmt
		lib = append(lib, span[callStmt])
		for _, s := range span[callStmt+1:] {
			if usesPkg(s) {
				lib = append(lib, s)
				continue
			}
			plain = append(plain, s)
			st.plainAfter = append(st.plainAfter, show(s))
		}
		read := usedIdents(plain)
		seen := map[string]bool{}
		for _, s := range lib {
			for _, v := range defined(s) {
				if read[v] && !seen[v] {
					seen[v] = true
					st.results = append(st.results, v)
				}
			}
		}
		st.partial = len(lib) > 1
	}
	ast.Inspect(span[callStmt], func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok && isPrint(c, fmtName) && c.Pos() <= call.Pos() && call.End() <= c.End() {
			st.printsResult = true
		}
		return true
	})
	return st, true
}

var firstSentence = regexp.MustCompile(`^(.+?[.!?])(\s|$)`)

// glossOf is the doc's first sentence without the API's name as subject:
// "Map manipulates a slice." → "manipulates a slice."
func glossOf(doc, name string) string {
	if g := Gloss(doc, name); g != "" {
		return g
	}
	return "does what the library function is documented to do."
}

// Gloss is the first sentence of doc (whitespace folded) with a leading
// "name " dropped and every other whole-word name replaced by "it"; ""
// when doc has none. pyharness's task descriptions use it too.
func Gloss(doc, name string) string {
	flat := strings.Join(strings.Fields(doc), " ")
	if m := firstSentence.FindStringSubmatch(flat); m != nil {
		flat = m[1]
	}
	flat = strings.TrimPrefix(flat, name+" ")
	return regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\b`).ReplaceAllString(flat, "it")
}

// NamesTarget reports whether text names the target API: its name as a
// whole identifier (case-sensitive), with or without receiver.
func NamesTarget(text string, tg Target) bool {
	return regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(tg.Name) + `($|[^A-Za-z0-9_])`).MatchString(text)
}
