package goapi

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/format"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
)

// Checker type-checks standalone programs against a module's source, to
// say which of the module's functions and methods a program calls. The
// module's packages and the standard library (from goroot's source) are
// checked from source, function bodies skipped; any other import is an
// empty package, so a program using a dependency of the module is still
// checked: what it does with the dependency is unknown, what it does with
// the module is not. Nothing is fetched, built or run. A Checker is for
// one goroutine.
type Checker struct {
	fset    *token.FileSet
	modPath string
	modDir  string
	goroot  string
	ctxt    build.Context
	pkgs    map[string]*types.Package
}

// NewChecker returns a checker of programs using the module extracted at
// dir, with the standard library of the toolchain installed at goroot
// ("go env GOROOT").
func NewChecker(dir, goroot string) (*Checker, error) {
	gm, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, fmt.Errorf("checker: %w", err)
	}
	ctxt := build.Default
	ctxt.GOROOT = goroot
	ctxt.CgoEnabled = false // the pure-Go files, as CGO_ENABLED=0 builds them
	ctxt.GOPATH = ""
	return &Checker{fset: token.NewFileSet(), modPath: modfile.ModulePath(gm), modDir: dir, goroot: goroot, ctxt: ctxt, pkgs: map[string]*types.Package{}}, nil
}

// Import implements types.Importer.
func (c *Checker) Import(p string) (*types.Package, error) { return c.ImportFrom(p, "", 0) }

// ImportFrom implements types.ImporterFrom.
func (c *Checker) ImportFrom(p, dir string, _ types.ImportMode) (*types.Package, error) {
	if p == "unsafe" {
		return types.Unsafe, nil
	}
	key := p
	var src string
	switch {
	case p == c.modPath || strings.HasPrefix(p, c.modPath+"/"):
		src = filepath.Join(c.modDir, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(p, c.modPath), "/")))
	case isStdPath(p):
		src = filepath.Join(c.goroot, "src", filepath.FromSlash(p))
		if _, err := os.Stat(src); err != nil {
			// golang.org/x/... as the standard library vendors it
			key = "vendor/" + p
			src = filepath.Join(c.goroot, "src", "vendor", filepath.FromSlash(p))
		}
	default:
		key = p
	}
	if pkg, ok := c.pkgs[key]; ok {
		if pkg == nil {
			return nil, fmt.Errorf("import cycle through %s", p)
		}
		return pkg, nil
	}
	if src == "" || c.goroot == "" && isStdPath(p) {
		pkg := types.NewPackage(p, guessName(p))
		pkg.MarkComplete()
		c.pkgs[key] = pkg
		return pkg, nil
	}
	c.pkgs[key] = nil
	pkg, err := c.checkDir(src, p)
	if err != nil {
		delete(c.pkgs, key)
		return nil, err
	}
	c.pkgs[key] = pkg
	return pkg, nil
}

// isStdPath reports whether an import path is the standard library's: its
// first element has no dot.
func isStdPath(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return !strings.Contains(first, ".")
}

// guessName is the package name an unknown import is most likely used by.
func guessName(p string) string {
	return ImportName(&ast.ImportSpec{Path: &ast.BasicLit{Value: fmt.Sprintf("%q", p)}})
}

// checkDir type-checks the package in dir, function bodies skipped.
func (c *Checker) checkDir(dir, importPath string) (*types.Package, error) {
	bp, err := c.ctxt.ImportDir(dir, 0)
	if err != nil {
		if _, ok := err.(*build.NoGoError); !ok && bp == nil {
			return nil, err
		}
	}
	var files []*ast.File
	for _, n := range bp.GoFiles {
		f, err := parser.ParseFile(c.fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: c, IgnoreFuncBodies: true, FakeImportC: true, Error: func(error) {}}
	pkg, _ := conf.Check(importPath, c.fset, files, nil)
	if pkg == nil {
		return nil, fmt.Errorf("check %s: nothing checked", importPath)
	}
	return pkg, nil
}

// check type-checks a standalone program: its syntax tree, what its
// identifiers use, and the errors found.
func (c *Checker) check(program string) (*ast.File, *types.Info, []types.Error, error) {
	f, err := parser.ParseFile(c.fset, "program.go", program, parser.ParseComments)
	if err != nil {
		return nil, nil, nil, err
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
	var errs []types.Error
	conf := types.Config{Importer: c, FakeImportC: true, Error: func(err error) {
		if te, ok := err.(types.Error); ok {
			errs = append(errs, te)
		}
	}}
	conf.Check("main", c.fset, []*ast.File{f}, info)
	return f, info, errs, nil
}

// Calls lists the module's functions and methods a standalone program
// refers to, as API identities (Surface's: import path, receiver type,
// name), sorted. Function values count as calls: passing lo.Map to
// another function uses it as surely as calling it.
func (c *Checker) Calls(program string) ([]string, error) {
	_, info, _, err := c.check(program)
	if err != nil {
		return nil, err
	}
	return c.calls(info), nil
}

func (c *Checker) calls(info *types.Info) []string {
	seen := map[string]bool{}
	for _, obj := range info.Uses {
		fn, ok := obj.(*types.Func)
		if !ok || fn.Pkg() == nil {
			continue
		}
		fn = fn.Origin()
		p := fn.Pkg().Path()
		if p != c.modPath && !strings.HasPrefix(p, c.modPath+"/") {
			continue
		}
		id := p + "." + fn.Name()
		if recv := fn.Signature().Recv(); recv != nil {
			t := recv.Type()
			if pt, ok := t.(*types.Pointer); ok {
				t = pt.Elem()
			}
			named, ok := t.(*types.Named)
			if !ok {
				continue
			}
			id = p + "." + named.Origin().Obj().Name() + "." + fn.Name()
		}
		seen[id] = true
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Prepare makes a standalone program ready to run where what stands in
// its way is how a snippet is written (a README block shows a call's
// result in a comment, or declares its variable twice): a variable
// declared and not used is used as `_ = name` right after the statement
// declaring it, a value computed and not used is assigned to _, a `:=`
// that declares nothing new becomes `=`, an import not used is dropped.
// Up to three rounds of type checking find them. why is not empty when
// the program cannot stand alone: it does not parse, names something
// declared nowhere (a snippet continuing another) or something
// unexported of the module (a test's view of its package). Other errors
// are left
// to the compiler: they may come from a dependency the checker does not
// read.
func (c *Checker) Prepare(program string) (string, string) {
	for round := 0; round < 8; round++ {
		f, info, errs, err := c.check(program)
		if err != nil {
			return "", "does not parse: " + err.Error()
		}
		fix := map[token.Pos]string{} // position → what to do there
		unused := map[token.Pos]string{}
		unusedImports := map[string]bool{}
		undefined := map[token.Pos]string{}
		for _, e := range errs {
			switch {
			case strings.HasPrefix(e.Msg, "undefined: ") && !strings.Contains(e.Msg, "."):
				undefined[e.Pos] = e.Msg
			case strings.Contains(e.Msg, "unexported"):
				return "", e.Msg // a test's use of its package's insides
			case strings.HasPrefix(e.Msg, "declared and not used: "):
				unused[e.Pos] = strings.TrimPrefix(e.Msg, "declared and not used: ")
			case strings.HasSuffix(e.Msg, " imported and not used"):
				unusedImports[c.fset.Position(e.Pos).String()] = true
			case strings.HasSuffix(e.Msg, " is not used"):
				fix[e.Pos] = "discard"
			case e.Msg == "no new variables on left side of :=":
				fix[e.Pos] = "redeclare"
			}
		}
		// A name only ever assigned with = (a block showing a function's
		// results as a sequence of assignments) is declared where it is
		// first assigned; any other undefined name is not the block's.
		if len(undefined) > 0 {
			first := firstAssignments(f, undefined)
			if first == nil {
				for _, msg := range undefined {
					return "", msg
				}
			}
			for s := range first {
				s.Tok = token.DEFINE
			}
		}
		if len(unused)+len(unusedImports)+len(fix)+len(undefined) == 0 {
			return tidyBlankLines(tidyImports(program)), ""
		}
		taken := map[string]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				taken[id.Name] = true
			}
			return true
		})
		rewriteLists(f, func(s ast.Stmt) []ast.Stmt {
			switch st := s.(type) {
			case *ast.ExprStmt:
				if fix[st.X.Pos()] == "discard" {
					s = &ast.AssignStmt{Lhs: []ast.Expr{&ast.Ident{NamePos: st.Pos(), Name: "_"}}, TokPos: st.Pos(), Tok: token.ASSIGN, Rhs: []ast.Expr{st.X}}
				}
			case *ast.AssignStmt:
				if st.Tok == token.DEFINE && (fix[st.TokPos] == "redeclare" || fix[st.Pos()] == "redeclare") {
					redeclare(st, info, taken)
				}
			}
			out := []ast.Stmt{s}
			var names []string
			for pos, name := range unused {
				if declares(s, pos) {
					names = append(names, name)
				}
			}
			sort.Strings(names)
			for _, name := range names {
				// At the statement's end: before the comment after it.
				at := s.End()
				out = append(out, &ast.AssignStmt{Lhs: []ast.Expr{&ast.Ident{NamePos: at, Name: "_"}}, TokPos: at, Tok: token.ASSIGN, Rhs: []ast.Expr{&ast.Ident{NamePos: at, Name: name}}})
			}
			return out
		})
		if len(unusedImports) > 0 {
			var decls []ast.Decl
			for _, d := range f.Decls {
				if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
					var keep []ast.Spec
					for _, s := range gd.Specs {
						if !unusedImports[c.fset.Position(s.Pos()).String()] {
							keep = append(keep, s)
						}
					}
					if len(keep) == 0 {
						continue
					}
					gd.Specs = keep
				}
				decls = append(decls, d)
			}
			f.Decls = decls
		}
		var b bytes.Buffer
		if err := format.Node(&b, c.fset, f); err != nil {
			return "", "cannot print: " + err.Error()
		}
		// Reformat from text: the inserted statements have no positions.
		out, err := format.Source(b.Bytes())
		if err != nil {
			return "", "cannot print: " + err.Error()
		}
		program = string(out)
	}
	return program, ""
}

// redeclare makes `x := ...` that declares nothing new (a block showing
// the same call twice) declare new variables: each name on its left
// becomes name2 (name3, ...), and so does every later use of the
// variable, which meant the new value. Types may differ between the two,
// which an assignment would not allow.
func redeclare(st *ast.AssignStmt, info *types.Info, taken map[string]bool) {
	for _, l := range st.Lhs {
		id, ok := l.(*ast.Ident)
		if !ok || id.Name == "_" {
			continue
		}
		obj := info.Uses[id]
		if obj == nil {
			continue
		}
		var name string
		for k := 2; ; k++ {
			if n := fmt.Sprintf("%s%d", id.Name, k); !taken[n] {
				name = n
				break
			}
		}
		taken[name] = true
		for u, o := range info.Uses {
			if o == obj && u.Pos() > st.End() {
				u.Name = name
			}
		}
		id.Name = name
	}
}

// firstAssignments finds, for undefined names (by the position of their
// error), the statement first assigning each with =, when that statement
// is a block's own statement, assigns only plain names, and comes before
// any other use; nil when a name has no such statement.
func firstAssignments(f *ast.File, undefined map[token.Pos]string) map[*ast.AssignStmt]bool {
	type cand struct {
		stmt *ast.AssignStmt
		pos  token.Pos
	}
	first := map[string]cand{}
	names := map[string]bool{}
	for _, msg := range undefined {
		names[strings.TrimPrefix(msg, "undefined: ")] = true
	}
	usedBefore := map[string]token.Pos{}
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && names[id.Name] {
			if p, ok := usedBefore[id.Name]; !ok || id.Pos() < p {
				usedBefore[id.Name] = id.Pos()
			}
		}
		return true
	})
	rewriteLists(f, func(s ast.Stmt) []ast.Stmt {
		if as, ok := s.(*ast.AssignStmt); ok && as.Tok == token.ASSIGN {
			plain := true
			for _, l := range as.Lhs {
				if _, ok := l.(*ast.Ident); !ok {
					plain = false
				}
			}
			for _, l := range as.Lhs {
				if id, ok := l.(*ast.Ident); ok && plain && names[id.Name] {
					if c, ok := first[id.Name]; !ok || as.Pos() < c.pos {
						first[id.Name] = cand{as, as.Pos()}
					}
				}
			}
		}
		return []ast.Stmt{s}
	})
	out := map[*ast.AssignStmt]bool{}
	for n := range names {
		c, ok := first[n]
		if !ok || usedBefore[n] < c.stmt.Pos() {
			return nil
		}
		out[c.stmt] = true
	}
	// Every name a chosen statement assigns must be new there.
	for s := range out {
		for _, l := range s.Lhs {
			if id := l.(*ast.Ident); id.Name != "_" && !names[id.Name] {
				return nil
			}
		}
	}
	return out
}

// tidyImports rewrites a program's imports as one block, the standard
// packages first, each named only where its name is not the one its path
// suggests. A program it cannot read is returned as it is.
func tidyImports(program string) string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "program.go", program, parser.ParseComments|parser.ImportsOnly)
	if err != nil || len(f.Imports) == 0 {
		return program
	}
	var std, other []string
	for _, im := range f.Imports {
		p := strings.Trim(im.Path.Value, `"`)
		line := im.Path.Value
		if im.Name != nil && im.Name.Name != guessName(p) {
			line = im.Name.Name + " " + line
		}
		if isStdPath(p) {
			std = append(std, line)
		} else {
			other = append(other, line)
		}
	}
	sort.Strings(std)
	sort.Strings(other)
	var b strings.Builder
	b.WriteString("import (\n")
	for _, l := range std {
		b.WriteString("\t" + l + "\n")
	}
	if len(std) > 0 && len(other) > 0 {
		b.WriteString("\n")
	}
	for _, l := range other {
		b.WriteString("\t" + l + "\n")
	}
	b.WriteString(")")
	// Cut the import declarations out of the text, then put the block
	// where the first was.
	var decls []ast.Decl
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
			decls = append(decls, gd)
		}
	}
	out := program
	for i := len(decls) - 1; i >= 0; i-- {
		start, end := fset.Position(decls[i].Pos()).Offset, fset.Position(decls[i].End()).Offset
		repl := ""
		if i == 0 {
			repl = b.String()
		}
		out = out[:start] + repl + out[end:]
	}
	res, err := format.Source([]byte(out))
	if err != nil {
		return program
	}
	return string(res)
}

var (
	blankAfterBrace  = regexp.MustCompile(`\{\n([ \t]*\n)+`)
	blankBeforeBrace = regexp.MustCompile(`\n([ \t]*\n)+([ \t]*\})`)
)

// tidyBlankLines drops the blank lines a rewrite leaves at the start and
// end of a block (where a dropped statement was). A program it would
// break is returned as it is.
func tidyBlankLines(program string) string {
	out := blankAfterBrace.ReplaceAllString(program, "{\n")
	out = blankBeforeBrace.ReplaceAllString(out, "\n$2")
	res, err := format.Source([]byte(out))
	if err != nil {
		return program
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "", res, 0); err != nil {
		return program
	}
	return string(res)
}

// rewriteLists replaces every statement of every statement list in f
// (blocks, case and select clauses) with what fn makes of it.
func rewriteLists(f *ast.File, fn func(ast.Stmt) []ast.Stmt) {
	ast.Inspect(f, func(n ast.Node) bool {
		var list *[]ast.Stmt
		switch n := n.(type) {
		case *ast.BlockStmt:
			list = &n.List
		case *ast.CaseClause:
			list = &n.Body
		case *ast.CommClause:
			list = &n.Body
		default:
			return true
		}
		var out []ast.Stmt
		for _, s := range *list {
			out = append(out, fn(s)...)
		}
		*list = out
		return true
	})
}

// declares reports whether statement s declares the variable at pos (an
// assignment's left side, a var declaration), not a nested statement's.
func declares(s ast.Stmt, pos token.Pos) bool {
	switch s := s.(type) {
	case *ast.AssignStmt:
		for _, l := range s.Lhs {
			if l.Pos() == pos {
				return true
			}
		}
	case *ast.DeclStmt:
		if gd, ok := s.Decl.(*ast.GenDecl); ok {
			for _, sp := range gd.Specs {
				if vs, ok := sp.(*ast.ValueSpec); ok {
					for _, n := range vs.Names {
						if n.Pos() == pos {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

// packageNames maps the name of every public package of the module at
// dir (as its files declare it) to its import path; of packages sharing a
// name, the one nearest the module's root.
func packageNames(dir string) (map[string]string, error) {
	gm, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, err
	}
	modPath := modfile.ModulePath(gm)
	out := map[string]string{}
	err = walkPackages(dir, func(pdir, rel string) error {
		if hiddenPath(rel) {
			return nil
		}
		bp, err := build.Default.ImportDir(pdir, 0)
		if err != nil || bp.Name == "main" || bp.Name == "" {
			return nil
		}
		p := modPath
		if rel != "." {
			p = path.Join(modPath, rel)
		}
		if q, ok := out[bp.Name]; !ok || len(p) < len(q) {
			out[bp.Name] = p
		}
		return nil
	})
	return out, err
}
