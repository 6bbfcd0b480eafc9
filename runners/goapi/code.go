package goapi

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Package is one parsed package of a module, indexed by declaration, for
// extracting what a knowledge bundle quotes: signatures, parameters and
// implementation source.
type Package struct {
	Path  string
	Name  string // the package clause
	fset  *token.FileSet
	files map[*ast.File]bool
	// decls: "Name" for functions, types, vars and consts; "Recv.Name"
	// for methods.
	decls map[string]declAt
	// methods: method name → receiver type names declaring it.
	methods map[string][]string
}

type declAt struct {
	file *ast.File
	decl ast.Decl
	spec ast.Spec // for type, var and const declarations
}

// LoadPackage parses the package in dir (non-test files of the default
// build context) with comments.
func LoadPackage(dir, importPath string) (*Package, error) {
	bp, err := build.Default.ImportDir(dir, 0)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", importPath, err)
	}
	p := &Package{Path: importPath, Name: bp.Name, fset: token.NewFileSet(), files: map[*ast.File]bool{}, decls: map[string]declAt{}, methods: map[string][]string{}}
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(p.fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", importPath, err)
		}
		p.files[f] = true
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				key := d.Name.Name
				if d.Recv != nil && len(d.Recv.List) == 1 {
					recv, _ := ReceiverName(d.Recv.List[0].Type)
					key = recv + "." + key
					p.methods[d.Name.Name] = append(p.methods[d.Name.Name], recv)
				}
				p.decls[key] = declAt{file: f, decl: d}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						p.decls[s.Name.Name] = declAt{file: f, decl: d, spec: s}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							p.decls[n.Name] = declAt{file: f, decl: d, spec: s}
						}
					}
				}
			}
		}
	}
	return p, nil
}

// Param is one parameter or result of a function.
type Param struct {
	Name     string
	Type     string
	Variadic bool
	// Doc is what the function's doc comment says about this parameter:
	// the sentences that name it. Go docs often say nothing per
	// parameter; then it is empty.
	Doc string
}

// Signature returns the parameters and results of function or method
// name ("Map", "Set.Add"); ok is false for types and unknown names.
func (p *Package) Signature(name string) (params, results []Param, ok bool) {
	d, found := p.decls[name]
	if !found {
		return nil, nil, false
	}
	fd, isFunc := d.decl.(*ast.FuncDecl)
	if !isFunc {
		return nil, nil, false
	}
	doc := strings.TrimSpace(fd.Doc.Text())
	list := func(fl *ast.FieldList, withDoc bool) []Param {
		var out []Param
		if fl == nil {
			return out
		}
		for _, f := range fl.List {
			typ, variadic := f.Type, false
			if e, ok := typ.(*ast.Ellipsis); ok {
				typ, variadic = e.Elt, true
			}
			ts := render(p.fset, typ)
			if len(f.Names) == 0 {
				out = append(out, Param{Type: ts, Variadic: variadic})
			}
			for _, n := range f.Names {
				q := Param{Name: n.Name, Type: ts, Variadic: variadic}
				if withDoc {
					q.Doc = paramDoc(doc, n.Name, fd.Name.Name)
				}
				out = append(out, q)
			}
		}
		return out
	}
	return list(fd.Type.Params, true), list(fd.Type.Results, false), true
}

var sentenceEnd = regexp.MustCompile(`[.!?](\s+|$)`)

// paramDoc collects the doc's sentences that name the parameter as a word
// (or in backquotes). One-letter names only count when quoted: "f" is too
// often just a letter.
func paramDoc(doc, param, fn string) string {
	if doc == "" || param == "_" || param == fn {
		return ""
	}
	word := regexp.MustCompile(`(^|[^\w.])` + regexp.QuoteMeta(param) + `($|[^\w(])`)
	quoted := "`" + param + "`"
	var hits []string
	flat := strings.Join(strings.Fields(doc), " ")
	start := 0
	for _, m := range append(sentenceEnd.FindAllStringIndex(flat, -1), []int{len(flat), len(flat)}) {
		s := strings.TrimSpace(flat[start:m[1]])
		start = m[1]
		if s == "" {
			continue
		}
		if strings.Contains(s, quoted) || (len(param) > 1 && word.MatchString(s)) {
			hits = append(hits, s)
		}
	}
	return strings.Join(hits, " ")
}

// Code is an API's implementation as a bundle quotes it.
type Code struct {
	Source    string   // the declaration and its helpers, doc comments stripped
	Helpers   []string // the same-package unexported helpers inlined, in order
	Omitted   []string // helpers left out to stay within the bound
	Truncated bool
}

// Code returns the source of name ("Map", "Set.Add", "Set") without its
// doc comment (comments inside the body stay), followed by the
// same-package unexported functions, methods, types, variables and
// constants it uses, transitively, in the order first used, until the
// source reaches maxBytes. A helper that would cross the bound is named in
// Omitted instead.
func (p *Package) Code(name string, maxBytes int) (*Code, error) {
	root, ok := p.decls[name]
	if !ok {
		return nil, fmt.Errorf("%s.%s: no such declaration", p.Path, name)
	}
	recv, _, _ := strings.Cut(name, ".")
	if !strings.Contains(name, ".") {
		recv = ""
	}
	c := &Code{}
	var b strings.Builder
	b.WriteString(p.print(root))
	seen := map[string]bool{name: true}
	queue := p.uses(root, recv)
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if seen[h] {
			continue
		}
		seen[h] = true
		d := p.decls[h]
		src := p.print(d)
		if b.Len()+2+len(src) > maxBytes {
			c.Omitted = append(c.Omitted, h)
			c.Truncated = true
			continue
		}
		b.WriteString("\n\n")
		b.WriteString(src)
		c.Helpers = append(c.Helpers, h)
		hr, _, _ := strings.Cut(h, ".")
		if !strings.Contains(h, ".") {
			hr = ""
		}
		queue = append(queue, p.uses(d, hr)...)
	}
	if b.Len() > maxBytes { // the declaration alone is over the bound
		c.Truncated = true
		c.Source = b.String()[:maxBytes] + "\n// ... truncated"
	} else {
		c.Source = b.String()
	}
	return c, nil
}

// print renders a declaration without its doc comment but with the
// comments inside it. A spec of a grouped declaration is printed alone.
func (p *Package) print(d declAt) string {
	var node ast.Node = d.decl
	switch gd := d.decl.(type) {
	case *ast.FuncDecl:
		doc := gd.Doc
		gd.Doc = nil
		defer func() { gd.Doc = doc }()
	case *ast.GenDecl:
		specDoc := specDocOf(d.spec)
		g := &ast.GenDecl{Tok: gd.Tok, TokPos: d.spec.Pos(), Specs: []ast.Spec{d.spec}}
		if specDoc != nil {
			g.TokPos = specDoc.End()
		}
		node = g
	}
	var b bytes.Buffer
	cfg := printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}
	cfg.Fprint(&b, p.fset, &printer.CommentedNode{Node: node, Comments: CommentsWithin(d.file, node)})
	return strings.TrimSpace(b.String())
}

func specDocOf(s ast.Spec) *ast.CommentGroup {
	switch s := s.(type) {
	case *ast.TypeSpec:
		return s.Doc
	case *ast.ValueSpec:
		return s.Doc
	}
	return nil
}

// CommentsWithin keeps the comments inside node, dropping the doc comment
// and everything outside.
func CommentsWithin(f *ast.File, node ast.Node) []*ast.CommentGroup {
	var out []*ast.CommentGroup
	for _, cg := range f.Comments {
		if cg.Pos() > node.Pos() && cg.End() < node.End() {
			out = append(out, cg)
		}
	}
	return out
}

// uses lists the same-package unexported declarations d refers to:
// identifiers not declared locally, and method selectors x.m where the
// package declares an unexported method m on recv (the receiver of d) or
// on a type already used.
func (p *Package) uses(d declAt, recv string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	var node ast.Node = d.decl
	if d.spec != nil {
		node = d.spec
	}
	skip := map[*ast.Ident]bool{}
	types := map[string]bool{recv: recv != ""}
	var selectors []string
	ast.Inspect(node, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			skip[n.Name] = true
		case *ast.Field:
			for _, id := range n.Names {
				skip[id] = true
			}
		case *ast.SelectorExpr:
			skip[n.Sel] = true
			if !ast.IsExported(n.Sel.Name) {
				selectors = append(selectors, n.Sel.Name)
			}
		case *ast.KeyValueExpr:
			if id, ok := n.Key.(*ast.Ident); ok && id.Obj == nil {
				if _, known := p.decls[id.Name]; !known {
					skip[id] = true
				}
			}
		case *ast.Ident:
			if skip[n] || ast.IsExported(n.Name) {
				return true
			}
			if n.Obj != nil && !p.isTopLevel(n.Obj) {
				return true // a local, parameter or field
			}
			if td, ok := p.decls[n.Name]; ok {
				if _, isType := td.spec.(*ast.TypeSpec); isType {
					types[n.Name] = true
				}
				add(n.Name)
			}
		}
		return true
	})
	sort.Strings(selectors)
	for _, m := range selectors {
		for _, r := range p.methods[m] {
			if types[r] {
				add(r + "." + m)
			}
		}
	}
	return out
}

// isTopLevel reports whether a resolved object is a package-level
// declaration (the parser resolves those within one file). The parser's
// per-file resolution (ast.Object) is all this needs: go/types would have
// to load and type-check the module's dependencies first.
//
//lint:ignore SA1019 per-file resolution suffices here, see above
func (p *Package) isTopLevel(o *ast.Object) bool {
	switch d := o.Decl.(type) {
	case *ast.FuncDecl:
		return d.Recv == nil
	case *ast.TypeSpec, *ast.ValueSpec:
		k, ok := p.decls[o.Name]
		return ok && (k.spec == d)
	}
	return false
}

// Siblings lists the APIs of a package a solver could confuse with name
// ("Map", "Stack.Push"): the exported functions (or methods of the same
// receiver) with as many parameters, nearest in name first.
func (p *Package) Siblings(name string) []string {
	params, _, ok := p.Signature(name)
	if !ok {
		return nil
	}
	recv, base, isMethod := strings.Cut(name, ".")
	if !isMethod {
		base, recv = recv, ""
	}
	var out []string
	for key, d := range p.decls {
		fd, ok := d.decl.(*ast.FuncDecl)
		if !ok || key == name || !ast.IsExported(fd.Name.Name) || fd.Body == nil {
			continue
		}
		r, _, m := strings.Cut(key, ".")
		if m != isMethod || (isMethod && r != recv) {
			continue
		}
		if ps, _, _ := p.Signature(key); len(ps) == len(params) {
			out = append(out, fd.Name.Name)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		ci, cj := commonPrefix(out[i], base), commonPrefix(out[j], base)
		if ci != cj {
			return ci > cj
		}
		return out[i] < out[j]
	})
	return out
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// SelectorRoots are the identifiers used as X in X.Sel: the import names a
// declaration may need.
func SelectorRoots(n ast.Node) map[string]bool {
	out := map[string]bool{}
	ast.Inspect(n, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok {
				out[id.Name] = true
			}
		}
		return true
	})
	return out
}
