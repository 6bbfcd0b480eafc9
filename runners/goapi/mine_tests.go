package goapi

//lint:file-ignore SA1019 a test file's identifiers are resolved per file (ast.Object), as code.go does: go/types would have to load and type-check the module's dependencies first

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
)

// MineTests finds the test and benchmark functions of the module at dir
// whose body names one of names (the APIs wanted: which of them a program
// really calls is Checker.Calls' to say) and makes each a standalone
// `package main` program, as go/doc makes an Example function playable:
// the body becomes main, with the declarations of the package's test
// files it uses (all of them, not only its own file's) and the imports
// those need; a test of the package itself (package lo, not lo_test) is
// rewritten to use the package through its import path.
//
// The testing.T or testing.B it is handed becomes plain Go:
// t.Error, t.Errorf, t.Fatal, t.Fatalf and t.FailNow become log.Fatal
// and log.Fatalf (a check that fails ends the program with a non-zero
// status, so a check that held is what a valid run shows), t.Log and
// t.Logf print, t.Run(name, func(t *testing.T) {...}) runs its function
// in place, t.Cleanup(f) defers f, t.Setenv sets the variable, t.Context()
// is context.Background(), t.Name() the test's name; t.Helper,
// t.Parallel and a benchmark's timer and reporting calls are dropped; a
// benchmark's loop (for b.Loop(), for i := 0; i < b.N; i++, for range
// b.N, b.RunParallel's for pb.Next()) runs once. A function that does anything else with its T or B
// (hands it to a helper, skips, asks for a temporary directory) or uses
// package testing otherwise cannot be made standalone and is not an
// example. Each program is then prepared by c (Checker.Prepare): one
// whose names are undefined is dropped, and the result's Calls are set.
// A table-driven one also gives a program per name its tables name, with
// only the cases naming it (tableVariants).
func MineTests(dir string, names map[string]bool, c *Checker) ([]Example, error) {
	gm, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, fmt.Errorf("mine tests: %w", err)
	}
	modPath := modfile.ModulePath(gm)
	var out []Example
	err = walkPackages(dir, func(pdir, rel string) error {
		bp, err := build.Default.ImportDir(pdir, 0)
		if err != nil || bp.Name == "main" || len(bp.TestGoFiles)+len(bp.XTestGoFiles) == 0 {
			return nil
		}
		pkgPath := modPath
		if rel != "." {
			pkgPath = path.Join(modPath, rel)
		}
		var pkg *pkgSource
		for i, set := range [][]string{bp.TestGoFiles, bp.XTestGoFiles} {
			internal := i == 0
			if internal && len(set) > 0 {
				pkg = &pkgSource{fset: token.NewFileSet()}
				for _, n := range bp.GoFiles {
					if f, err := parser.ParseFile(pkg.fset, filepath.Join(pdir, n), nil, parser.ParseComments); err == nil {
						pkg.files = append(pkg.files, f)
					}
				}
				pkg.names = topLevelNames(pkg.files)
			}
			out = append(out, mineSet(pdir, rel, pkgPath, bp.Name, pkg, set, internal, names)...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var kept []Example
	for _, e := range out {
		prog, why := c.Prepare(e.Program)
		if why != "" {
			continue
		}
		e.Program = prog
		calls, err := c.Calls(prog)
		if err != nil {
			continue
		}
		e.Calls = calls
		kept = append(kept, e)
		kept = append(kept, tableVariants(c, e, names)...)
	}
	sort.SliceStable(kept, func(i, j int) bool {
		if kept[i].Package != kept[j].Package {
			return kept[i].Package < kept[j].Package
		}
		return kept[i].Name < kept[j].Name
	})
	return kept, nil
}

// tableVariants are the programs a table-driven test or benchmark makes
// for each of names it names: every slice, array or map literal some of
// whose elements name it and others not keeps only those that do (the
// cases of a test of forty field types that are about this one), and the
// program is prepared again. A variant is named after the program and
// the name: "TestFields (IPAddrs cases)".
func tableVariants(c *Checker, e Example, names map[string]bool) []Example {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "program.go", e.Program, parser.ParseComments)
	if err != nil {
		return nil
	}
	var tables []*ast.CompositeLit
	ast.Inspect(f, func(n ast.Node) bool {
		if cl, ok := n.(*ast.CompositeLit); ok && len(cl.Elts) > 1 {
			switch cl.Type.(type) {
			case *ast.ArrayType, *ast.MapType:
				tables = append(tables, cl)
			}
		}
		return true
	})
	var found []string
	for n := range names {
		if mentions(f, map[string]bool{n: true}) {
			found = append(found, n)
		}
	}
	sort.Strings(found)
	var out []Example
	for _, name := range found {
		want := map[string]bool{name: true}
		saved := make([][]ast.Expr, len(tables))
		cut := false
		for i, t := range tables {
			saved[i] = t.Elts
			var keep []ast.Expr
			for _, el := range t.Elts {
				if mentions(el, want) {
					keep = append(keep, el)
				}
			}
			if len(keep) > 0 && len(keep) < len(t.Elts) {
				t.Elts, cut = keep, true
			}
		}
		if cut {
			var b bytes.Buffer
			if format.Node(&b, fset, f) == nil {
				if prog, why := c.Prepare(b.String()); why == "" {
					if calls, err := c.Calls(prog); err == nil {
						v := e
						v.Name, v.Program, v.Calls = fmt.Sprintf("%s (%s cases)", e.Name, name), prog, calls
						out = append(out, v)
					}
				}
			}
		}
		for i, t := range tables {
			t.Elts = saved[i]
		}
	}
	return out
}

// testKind says whether fd is a test (KindTest) or benchmark
// (KindBenchmark) function, by the go command's rules; "" otherwise.
func testKind(fd *ast.FuncDecl, testing string) string {
	if fd.Recv != nil || fd.Body == nil || fd.Type.TypeParams != nil || fd.Type.Results != nil || len(fd.Type.Params.List) != 1 || len(fd.Type.Params.List[0].Names) > 1 {
		return ""
	}
	star, ok := fd.Type.Params.List[0].Type.(*ast.StarExpr)
	if !ok {
		return ""
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != testing {
		return ""
	}
	name := fd.Name.Name
	switch {
	case sel.Sel.Name == "T" && isTestName(name, "Test") && name != "TestMain":
		return KindTest
	case sel.Sel.Name == "B" && isTestName(name, "Benchmark"):
		return KindBenchmark
	}
	return ""
}

// isTestName is the go command's rule: prefix, then nothing or a
// character that is not a lower-case letter.
func isTestName(name, prefix string) bool {
	if !strings.HasPrefix(name, prefix) {
		return false
	}
	rest := name[len(prefix):]
	return rest == "" || !(rest[0] >= 'a' && rest[0] <= 'z')
}

// mentions reports whether n holds an identifier named in names.
func mentions(n ast.Node, names map[string]bool) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && names[id.Name] {
			found = true
		}
		return !found
	})
	return found
}

// minedPrefix names the Example functions the rewritten tests become in
// the synthetic file go/doc reads (a package example with a suffix).
const minedPrefix = "Example_lacuna"

// mineSet mines one test package (the internal or the external test files
// of a directory).
func mineSet(pdir, rel, pkgPath, pkgName string, pkg *pkgSource, set []string, internal bool, names map[string]bool) []Example {
	fset := token.NewFileSet()
	type cand struct {
		file *ast.File
		fn   *ast.FuncDecl
		kind string
		rel  string
	}
	var files []*ast.File
	var cands []cand
	hasCand := map[*ast.File]bool{}
	for _, n := range set {
		f, err := parser.ParseFile(fset, filepath.Join(pdir, n), nil, parser.ParseComments)
		if err != nil {
			continue
		}
		files = append(files, f)
		testing := ""
		for _, im := range f.Imports {
			if strings.Trim(im.Path.Value, `"`) == "testing" {
				testing = ImportName(im)
			}
		}
		if testing == "" {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if k := testKind(fd, testing); k != "" && mentions(fd.Body, names) {
				cands = append(cands, cand{f, fd, k, filepath.ToSlash(filepath.Join(rel, n))})
				hasCand[f] = true
			}
		}
	}
	if len(cands) == 0 {
		return nil
	}
	// One synthetic file holds every file of the set whose imports agree
	// with those before it, the files with candidates first.
	sort.SliceStable(files, func(i, j int) bool { return hasCand[files[i]] && !hasCand[files[j]] })
	imports := map[string]string{} // name → path
	var merged []*ast.File
	for _, f := range files {
		ok := true
		for _, im := range f.Imports {
			name, p := ImportName(im), strings.Trim(im.Path.Value, `"`)
			if name == "." || imports[name] != "" && imports[name] != p {
				ok = false
			}
		}
		if !ok {
			continue
		}
		for _, im := range f.Imports {
			if name := ImportName(im); name != "_" {
				imports[name] = strings.Trim(im.Path.Value, `"`)
			}
		}
		merged = append(merged, f)
	}
	inMerged := map[*ast.File]bool{}
	for _, f := range merged {
		inMerged[f] = true
	}
	// The standard packages the rewrite uses, by a name free in the file
	// and in the function.
	stdNames := func(fd *ast.FuncDecl) map[string]string {
		std := map[string]string{}
		for _, p := range []string{"context", "fmt", "log", "os"} {
			name := p
			if q, ok := imports[name]; ok && q != p || !ok && mentions(fd.Body, map[string]bool{p: true}) {
				name = "std" + p
			}
			std[p] = name
		}
		return std
	}
	used := map[string]string{}             // the names of the standard packages the rewrites use → path
	rewritten := map[*ast.FuncDecl]string{} // the candidate → its Example function's source
	byName := map[string]cand{}
	isCand := map[*ast.FuncDecl]bool{}
	for i, c := range cands {
		isCand[c.fn] = true
		if !inMerged[c.file] {
			continue
		}
		fn := fmt.Sprintf("%s%d", minedPrefix, i)
		std := stdNames(c.fn)
		src, ok := rewriteTest(fset, c.file, c.fn, c.kind, fn, std)
		if !ok {
			continue
		}
		for p, n := range std {
			if imports[n] == "" {
				used[n] = p
			}
		}
		rewritten[c.fn] = src
		byName[fn] = c
	}
	if len(byName) == 0 {
		return nil
	}
	// A test of the package itself may call the package's unexported
	// functions: those that stand alone come along as the program's own.
	var helpers []string
	if internal {
		var hs map[string]string
		helpers, hs = pkg.helpers(merged, imports)
		for n, p := range hs {
			imports[n] = p
		}
	}
	// go/doc makes only an external test package's examples playable;
	// externalize makes an internal one external.
	clause := pkgName
	if !internal {
		clause = merged[0].Name.Name
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "package %s\n\nimport (\n", clause)
	for n, p := range used {
		imports[n] = p
	}
	var inames []string
	for n := range imports {
		inames = append(inames, n)
	}
	sort.Strings(inames)
	for _, n := range inames {
		if n == path.Base(imports[n]) {
			fmt.Fprintf(&b, "\t%q\n", imports[n])
		} else {
			fmt.Fprintf(&b, "\t%s %q\n", n, imports[n])
		}
	}
	b.WriteString(")\n")
	for _, f := range merged {
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
				continue
			}
			if fd, ok := d.(*ast.FuncDecl); ok {
				if src, ok := rewritten[fd]; ok {
					b.WriteString("\n" + src + "\n")
					continue
				}
				if isCand[fd] {
					continue // half rewritten: of no use to the others
				}
			}
			b.WriteString("\n")
			(&printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}).Fprint(&b, fset, &printer.CommentedNode{Node: d, Comments: CommentsWithin(f, d)})
			b.WriteString("\n")
		}
	}
	for _, h := range helpers {
		b.WriteString("\n" + h + "\n")
	}
	sfset := token.NewFileSet()
	sf, err := parser.ParseFile(sfset, filepath.Join(pdir, "lacuna_mined_test.go"), b.String(), parser.ParseComments)
	if err != nil {
		return nil
	}
	var why map[string]string
	if internal {
		if sf, why = externalize(sfset, sf, pkgName, pkgPath, pkg.names, nil); sf == nil {
			return nil
		}
	}
	var out []Example
	for _, ex := range doc.Examples(sf) {
		fn := "Example" + ex.Name + prefixed(ex.Suffix, "_")
		c, ok := byName[fn]
		if !ok || ex.Play == nil || why[fn] != "" {
			continue
		}
		e := Example{Name: c.fn.Name.Name, Kind: c.kind, Package: pkgPath, File: c.rel}
		for _, im := range ex.Play.Imports {
			p := strings.Trim(im.Path.Value, `"`)
			if p == "testing" {
				e.Imports = nil
				break
			}
			e.Imports = append(e.Imports, p)
		}
		if e.Imports == nil && len(ex.Play.Imports) > 0 {
			continue // uses package testing beyond its T or B
		}
		var pb bytes.Buffer
		if err := format.Node(&pb, sfset, ex.Play); err != nil {
			continue
		}
		e.Program = pb.String()
		out = append(out, e)
	}
	return out
}

// pkgSource is a package's own (not test) files, parsed.
type pkgSource struct {
	fset  *token.FileSet
	files []*ast.File
	names map[string]bool // its top-level names
}

// helpers are the package's unexported functions (no receiver) that the
// files use, directly or through one another, as source, with the imports
// they need (name → path). A function whose imports clash with imports
// (the test files') is left out: a program using it is then not
// standalone. One that uses the package's unexported variables, types or
// methods comes along too; the program using it does not compile and is
// dropped (Checker.Prepare).
func (p *pkgSource) helpers(files []*ast.File, imports map[string]string) ([]string, map[string]string) {
	type fn struct {
		decl *ast.FuncDecl
		file *ast.File
	}
	funcs := map[string]fn{}
	for _, f := range p.files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Body != nil && !ast.IsExported(fd.Name.Name) && fd.Name.Name != "init" {
				funcs[fd.Name.Name] = fn{fd, f}
			}
		}
	}
	var queue []string
	seen := map[string]bool{}
	visit := func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				if _, ok := funcs[id.Name]; ok && !seen[id.Name] {
					seen[id.Name] = true
					queue = append(queue, id.Name)
				}
			}
			return true
		})
	}
	for _, f := range files {
		visit(f)
	}
	var out []string
	need := map[string]string{}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		h := funcs[name]
		uses := map[string]string{}
		ok := true
		for _, im := range h.file.Imports {
			n, path := ImportName(im), strings.Trim(im.Path.Value, `"`)
			if !SelectorRoots(h.decl)[n] {
				continue
			}
			if q := imports[n]; q != "" && q != path || need[n] != "" && need[n] != path {
				ok = false
			}
			uses[n] = path
		}
		if !ok {
			continue
		}
		var b bytes.Buffer
		if err := (&printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}).Fprint(&b, p.fset, &printer.CommentedNode{Node: h.decl, Comments: CommentsWithin(h.file, h.decl)}); err != nil {
			continue
		}
		for n, path := range uses {
			need[n] = path
		}
		out = append(out, b.String())
		visit(h.decl.Body)
	}
	return out, need
}

// rewriteTest renders test (or benchmark) function fd as a function
// named fn without parameters, its T or B turned into plain Go (see
// MineTests); ok is false when that cannot be done.
func rewriteTest(fset *token.FileSet, file *ast.File, fd *ast.FuncDecl, kind, fn string, std map[string]string) (string, bool) {
	var param *ast.Object
	pname := ""
	if names := fd.Type.Params.List[0].Names; len(names) == 1 && names[0].Name != "_" {
		param, pname = names[0].Obj, names[0].Name
	}
	rw := &testRewriter{kind: kind, std: std}
	fd.Body.List = rw.list(fd.Body.List, param)
	rw.leftover(fd.Body, param)
	if rw.why != "" {
		return "", false
	}
	nd := &ast.FuncDecl{Name: ast.NewIdent(fn), Type: &ast.FuncType{Func: fd.Type.Func, Params: &ast.FieldList{}}, Body: fd.Body}
	var b bytes.Buffer
	cfg := printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}
	if err := cfg.Fprint(&b, fset, &printer.CommentedNode{Node: nd, Comments: CommentsWithin(file, fd)}); err != nil {
		return "", false
	}
	src := b.String()
	if pname != "" {
		q := regexp.QuoteMeta(pname)
		src = regexp.MustCompile(`\b`+q+`\.Name\(\)`).ReplaceAllLiteralString(src, strconv.Quote(fd.Name.Name))
		src = regexp.MustCompile(`\b`+q+`\.Context\(\)`).ReplaceAllLiteralString(src, std["context"]+".Background()")
		if kind == KindBenchmark {
			src = regexp.MustCompile(`\b`+q+`\.N\b`).ReplaceAllLiteralString(src, "1")
		}
	}
	return src, true
}

// testRewriter turns the statements using a test's T (or a benchmark's
// B) into plain Go; why says why it could not.
type testRewriter struct {
	kind string
	std  map[string]string // standard package → the name the file uses for it
	why  string
}

func (rw *testRewriter) fail(format string, args ...any) {
	if rw.why == "" {
		rw.why = fmt.Sprintf(format, args...)
	}
}

// list rewrites a statement list where p is the T or B in scope. The
// statements of a benchmark loop run once in its place, as a block of
// their own where their names would clash with the list's.
func (rw *testRewriter) list(list []ast.Stmt, p *ast.Object) []ast.Stmt {
	type group struct {
		stmts    []ast.Stmt
		spliced  bool
		pos, end token.Pos
	}
	var groups []group
	for _, s := range list {
		stmts, spliced := rw.stmt(s, p)
		groups = append(groups, group{stmts, spliced, s.Pos(), s.End() - 1})
	}
	declared := map[string]int{}
	for _, g := range groups {
		for _, s := range g.stmts {
			for _, n := range declaredNames(s) {
				declared[n]++
			}
		}
	}
	var out []ast.Stmt
	for _, g := range groups {
		if g.spliced {
			clash := false
			for _, s := range g.stmts {
				for _, n := range declaredNames(s) {
					if declared[n] > 1 {
						clash = true
					}
				}
			}
			if clash {
				out = append(out, &ast.BlockStmt{Lbrace: g.pos, List: g.stmts, Rbrace: g.end})
				continue
			}
		}
		out = append(out, g.stmts...)
	}
	return out
}

// declaredNames are the names statement s declares in its own block.
func declaredNames(s ast.Stmt) []string {
	var out []string
	switch s := s.(type) {
	case *ast.AssignStmt:
		if s.Tok == token.DEFINE {
			for _, l := range s.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
					out = append(out, id.Name)
				}
			}
		}
	case *ast.DeclStmt:
		if gd, ok := s.Decl.(*ast.GenDecl); ok {
			for _, sp := range gd.Specs {
				switch sp := sp.(type) {
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						out = append(out, n.Name)
					}
				case *ast.TypeSpec:
					out = append(out, sp.Name.Name)
				}
			}
		}
	}
	return out
}

// paramCall matches x as a call of a method of p: p.M(...).
func paramCall(x ast.Expr, p *ast.Object) (*ast.CallExpr, string, bool) {
	call, ok := x.(*ast.CallExpr)
	if !ok || p == nil {
		return nil, "", false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return nil, "", false
	}
	if id, ok := sel.X.(*ast.Ident); ok && id.Obj == p {
		return call, sel.Sel.Name, true
	}
	return nil, "", false
}

// isParamSel matches x as p.name.
func isParamSel(x ast.Expr, p *ast.Object, name string) bool {
	sel, ok := x.(*ast.SelectorExpr)
	if !ok || p == nil || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Obj == p
}

// stmt rewrites one statement; spliced says that the result is a
// benchmark loop's body, to run once in the loop's place.
func (rw *testRewriter) stmt(s ast.Stmt, p *ast.Object) ([]ast.Stmt, bool) {
	switch s := s.(type) {
	case *ast.ExprStmt:
		if call, m, ok := paramCall(s.X, p); ok {
			return rw.call(s, call, m, p), false
		}
	case *ast.ForStmt:
		if rw.kind == KindBenchmark && rw.onceLoop(s, p) {
			s.Body.List = rw.list(s.Body.List, p)
			return s.Body.List, true
		}
	case *ast.RangeStmt:
		if rw.kind == KindBenchmark && isParamSel(s.X, p, "N") && s.Value == nil && (s.Key == nil || unusedIn(s.Key, s.Body)) {
			s.Body.List = rw.list(s.Body.List, p)
			return s.Body.List, true
		}
	}
	rw.nested(s, p)
	return []ast.Stmt{s}, false
}

// onceLoop matches a benchmark's loop whose counter the body does not
// use: for b.Loop() {...}, for i := 0; i < b.N; i++ {...}.
func (rw *testRewriter) onceLoop(s *ast.ForStmt, p *ast.Object) bool {
	if call, m, ok := paramCall(s.Cond, p); ok && m == "Loop" && len(call.Args) == 0 && s.Init == nil && s.Post == nil {
		return true
	}
	cond, ok := s.Cond.(*ast.BinaryExpr)
	if !ok || cond.Op != token.LSS || !isParamSel(cond.Y, p, "N") {
		return false
	}
	i, ok := cond.X.(*ast.Ident)
	if !ok {
		return false
	}
	init, ok := s.Init.(*ast.AssignStmt)
	if !ok || len(init.Lhs) != 1 || init.Tok != token.DEFINE {
		return false
	}
	if id, ok := init.Lhs[0].(*ast.Ident); !ok || id.Name != i.Name {
		return false
	}
	return unusedIn(i, s.Body)
}

// unusedIn reports whether the variable x declares is not used in body.
func unusedIn(x ast.Expr, body *ast.BlockStmt) bool {
	id, ok := x.(*ast.Ident)
	if !ok {
		return false
	}
	if id.Name == "_" {
		return true
	}
	used := false
	ast.Inspect(body, func(n ast.Node) bool {
		if u, ok := n.(*ast.Ident); ok && u.Obj != nil && u.Obj == id.Obj {
			used = true
		}
		return !used
	})
	return !used && id.Obj != nil
}

// nested rewrites the statement lists inside s (blocks, cases, function
// literals) with p in scope.
func (rw *testRewriter) nested(s ast.Node, p *ast.Object) {
	ast.Inspect(s, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BlockStmt:
			n.List = rw.list(n.List, p)
			return false
		case *ast.CaseClause:
			for _, e := range n.List {
				rw.nested(e, p)
			}
			n.Body = rw.list(n.Body, p)
			return false
		case *ast.CommClause:
			if n.Comm != nil {
				rw.nested(n.Comm, p)
			}
			n.Body = rw.list(n.Body, p)
			return false
		}
		return true
	})
}

func (rw *testRewriter) sel(pkg, name string, at ast.Expr) *ast.SelectorExpr {
	return &ast.SelectorExpr{X: &ast.Ident{NamePos: at.Pos(), Name: rw.std[pkg]}, Sel: &ast.Ident{NamePos: at.Pos(), Name: name}}
}

// call rewrites the statement p.M(args).
func (rw *testRewriter) call(s *ast.ExprStmt, call *ast.CallExpr, m string, p *ast.Object) []ast.Stmt {
	for _, a := range call.Args {
		rw.nested(a, p)
	}
	switch m {
	case "Helper", "Parallel", "ResetTimer", "StopTimer", "StartTimer", "ReportAllocs", "SetBytes", "ReportMetric", "SetParallelism":
		return nil
	case "Log":
		call.Fun = rw.sel("fmt", "Println", call.Fun)
	case "Logf":
		call.Fun = rw.sel("fmt", "Printf", call.Fun)
		if len(call.Args) == 0 {
			return nil
		}
		if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if v, err := strconv.Unquote(lit.Value); err == nil {
				lit.Value = strconv.Quote(v + "\n")
				break
			}
		}
		call.Fun = rw.sel("fmt", "Println", call.Fun)
		call.Args = []ast.Expr{&ast.CallExpr{Fun: rw.sel("fmt", "Sprintf", call.Fun), Args: call.Args, Lparen: call.Lparen, Rparen: call.Rparen}}
	case "Error", "Fatal":
		call.Fun = rw.sel("log", "Fatal", call.Fun)
	case "Errorf", "Fatalf":
		call.Fun = rw.sel("log", "Fatalf", call.Fun)
	case "Fail", "FailNow":
		call.Fun = rw.sel("log", "Fatal", call.Fun)
		call.Args = []ast.Expr{&ast.BasicLit{ValuePos: call.Lparen, Kind: token.STRING, Value: `"failed"`}}
	case "Setenv":
		call.Fun = rw.sel("os", "Setenv", call.Fun)
	case "Cleanup":
		if len(call.Args) != 1 {
			rw.fail("cleanup")
			return nil
		}
		return []ast.Stmt{&ast.DeferStmt{Defer: s.Pos(), Call: &ast.CallExpr{Fun: call.Args[0], Lparen: call.Rparen, Rparen: call.Rparen}}}
	case "RunParallel":
		// for pb.Next() {...} runs once, in place.
		if rw.kind != KindBenchmark || len(call.Args) != 1 {
			rw.fail("runs in parallel")
			return nil
		}
		lit, ok := call.Args[0].(*ast.FuncLit)
		if !ok || len(lit.Type.Params.List) != 1 || len(lit.Type.Params.List[0].Names) != 1 {
			rw.fail("runs in parallel")
			return nil
		}
		pb := lit.Type.Params.List[0].Names[0].Obj
		var body []ast.Stmt
		for _, st := range lit.Body.List {
			if f, ok := st.(*ast.ForStmt); ok && f.Init == nil && f.Post == nil {
				if _, m, ok := paramCall(f.Cond, pb); ok && m == "Next" {
					body = append(body, f.Body.List...)
					continue
				}
			}
			body = append(body, st)
		}
		lit.Body.List = rw.list(body, p)
		rw.leftover(lit.Body, pb)
		lit.Type.Params = &ast.FieldList{Opening: lit.Type.Params.Opening, Closing: lit.Type.Params.Opening + 1}
		s.X = &ast.CallExpr{Fun: lit, Lparen: lit.End(), Rparen: lit.End()}
	case "Run":
		if len(call.Args) != 2 {
			rw.fail("run")
			return nil
		}
		lit, ok := call.Args[1].(*ast.FuncLit)
		if !ok || len(lit.Type.Params.List) != 1 || len(lit.Type.Params.List[0].Names) > 1 {
			rw.fail("a subtest that is not a function literal")
			return nil
		}
		var inner *ast.Object
		if names := lit.Type.Params.List[0].Names; len(names) == 1 && names[0].Name != "_" {
			inner = names[0].Obj
		}
		lit.Body.List = rw.list(lit.Body.List, inner)
		rw.leftover(lit.Body, inner)
		lit.Type.Params = &ast.FieldList{Opening: lit.Type.Params.Opening, Closing: lit.Type.Params.Opening + 1}
		s.X = &ast.CallExpr{Fun: lit, Lparen: lit.End(), Rparen: lit.End()}
	default:
		rw.fail("calls %s", m)
		return nil
	}
	return []ast.Stmt{s}
}

// leftover fails the rewrite when body still uses p other than as what
// is replaced in the text (Name(), Context(), a benchmark's N).
func (rw *testRewriter) leftover(body ast.Node, p *ast.Object) {
	if p == nil {
		return
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if _, m, ok := paramCall(n, p); ok && len(n.Args) == 0 && (m == "Name" || m == "Context") {
				return false
			}
		case *ast.SelectorExpr:
			if rw.kind == KindBenchmark && isParamSel(n, p, "N") {
				return false
			}
		case *ast.Ident:
			if n.Obj == p {
				rw.fail("uses its %s beyond what a program can stand in for", n.Name)
			}
		}
		return true
	})
}
