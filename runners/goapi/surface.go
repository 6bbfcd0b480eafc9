package goapi

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
)

// API is one exported declaration of a module version.
type API struct {
	// ID is the identity compared across versions: import path, then
	// receiver type (without type parameters) and name, e.g.
	// "github.com/samber/lo.Map" or "example.com/lib/set.Set.Add".
	ID       string
	Package  string // import path
	Receiver string // receiver type name, "" for functions and types
	Name     string
	Kind     string // func, method, type
	// Signature is the declaration without its body or doc comment.
	Signature  string
	TypeParams string // "[T any, R comparable]" or ""
	Doc        string
	File       string // path relative to the module root
	Line       int
	// Filter facts (surface_diff turns them into columns and reasons).
	Internal   bool   // under internal/, testdata/, an example or cmd directory
	Deprecated bool   // the doc has a "Deprecated:" paragraph
	NoBody     bool   // declared without a Go body (assembly, linkname)
	Generated  bool   // in a file marked "Code generated ... DO NOT EDIT."
	Alias      string // for type aliases: what it aliases, as written
	// AliasOf is the identity an alias names (import path + "." + name),
	// when it names a declared type; "" otherwise.
	AliasOf string
}

// Surface lists the exported API of the module extracted at dir, for the
// default build context (the files `go build` would compile on this
// platform; _test.go files, testdata, vendor and nested modules excluded,
// as the go command excludes them). Parsing is syntactic: identity needs
// names, not types, so no dependency has to be downloaded.
func Surface(dir string) ([]API, error) {
	gm, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, fmt.Errorf("surface: %w", err)
	}
	modPath := modfile.ModulePath(gm)
	if modPath == "" {
		return nil, fmt.Errorf("surface: %s/go.mod has no module line", dir)
	}
	var apis []API
	err = walkPackages(dir, func(p, rel string) error {
		pkgPath := modPath
		if rel != "." {
			pkgPath = path.Join(modPath, rel)
		}
		found, err := packageAPIs(dir, p, pkgPath, rel)
		apis = append(apis, found...)
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(apis, func(i, j int) bool { return apis[i].ID < apis[j].ID })
	return apis, nil
}

func hiddenPath(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		switch part {
		case "internal", "testdata", "example", "examples", "_example", "cmd":
			return true
		}
	}
	return false
}

func packageAPIs(root, dir, pkgPath, rel string) ([]API, error) {
	bp, err := build.Default.ImportDir(dir, 0)
	if err != nil {
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			return nil, nil
		}
		if _, ok := err.(*build.MultiplePackageError); !ok {
			return nil, nil // unbuildable here: constraints exclude every file
		}
	}
	if bp == nil || bp.Name == "main" || strings.HasSuffix(bp.Name, "_test") {
		return nil, nil
	}
	fset := token.NewFileSet()
	var out []API
	for _, name := range bp.GoFiles {
		full := filepath.Join(dir, name)
		f, err := parser.ParseFile(fset, full, nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("surface: %w", err)
		}
		generated := ast.IsGenerated(f)
		imports := map[string]string{}
		for _, im := range f.Imports {
			imports[ImportName(im)] = strings.Trim(im.Path.Value, `"`)
		}
		relFile := filepath.ToSlash(filepath.Join(rel, name))
		add := func(a API, doc *ast.CommentGroup, pos token.Pos) {
			a.Package = pkgPath
			a.Doc = strings.TrimSpace(doc.Text())
			a.Deprecated = isDeprecated(a.Doc)
			a.Generated = generated
			a.Internal = hiddenPath(rel)
			a.File = relFile
			a.Line = fset.Position(pos).Line
			a.ID = pkgPath + "." + a.Name
			if a.Receiver != "" {
				a.ID = pkgPath + "." + a.Receiver + "." + a.Name
			}
			out = append(out, a)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				a := API{Name: d.Name.Name, Kind: "func", NoBody: d.Body == nil}
				if d.Recv != nil && len(d.Recv.List) == 1 {
					recv, ok := ReceiverName(d.Recv.List[0].Type)
					if !ok || !ast.IsExported(recv) {
						continue // methods of unexported types are not API
					}
					a.Kind, a.Receiver = "method", recv
				}
				if d.Type.TypeParams != nil {
					a.TypeParams = "[" + render(fset, d.Type.TypeParams) + "]"
				}
				body, doc := d.Body, d.Doc
				d.Body, d.Doc = nil, nil
				a.Signature = render(fset, d)
				d.Body, d.Doc = body, doc
				add(a, d.Doc, d.Pos())
			case *ast.GenDecl:
				if d.Tok != token.TYPE {
					continue
				}
				for _, spec := range d.Specs {
					ts := spec.(*ast.TypeSpec)
					if !ts.Name.IsExported() {
						continue
					}
					a := API{Name: ts.Name.Name, Kind: "type"}
					if ts.TypeParams != nil {
						a.TypeParams = "[" + render(fset, ts.TypeParams) + "]"
					}
					if ts.Assign.IsValid() {
						a.Alias = render(fset, ts.Type)
						a.AliasOf = aliasTarget(ts.Type, pkgPath, imports)
					}
					doc := ts.Doc
					if doc == nil && len(d.Specs) == 1 {
						doc = d.Doc
					}
					a.Signature = "type " + render(fset, &ast.TypeSpec{Name: ts.Name, TypeParams: ts.TypeParams, Assign: ts.Assign, Type: ts.Type})
					add(a, doc, ts.Pos())
				}
			}
		}
	}
	return out, nil
}

// aliasTarget resolves what an alias names: T, T[int], pkg.T, pkg.T[int].
func aliasTarget(e ast.Expr, pkgPath string, imports map[string]string) string {
	switch t := e.(type) {
	case *ast.IndexExpr:
		return aliasTarget(t.X, pkgPath, imports)
	case *ast.IndexListExpr:
		return aliasTarget(t.X, pkgPath, imports)
	case *ast.Ident:
		if token.IsExported(t.Name) || !isPredeclared(t.Name) {
			return pkgPath + "." + t.Name
		}
	case *ast.SelectorExpr:
		if x, ok := t.X.(*ast.Ident); ok && imports[x.Name] != "" {
			return imports[x.Name] + "." + t.Sel.Name
		}
	}
	return ""
}

func isPredeclared(name string) bool {
	switch name {
	case "any", "bool", "byte", "comparable", "complex64", "complex128", "error", "float32", "float64",
		"int", "int8", "int16", "int32", "int64", "rune", "string", "uint", "uint8", "uint16", "uint32", "uint64", "uintptr":
		return true
	}
	return false
}

// ReceiverName is the type name of a receiver: T, *T, T[K], *T[K, V].
func ReceiverName(e ast.Expr) (string, bool) {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.Ident:
			return t.Name, true
		default:
			return "", false
		}
	}
}

// isDeprecated follows the Go convention: a paragraph of the doc comment
// starting with "Deprecated: ".
func isDeprecated(doc string) bool {
	for _, para := range strings.Split(doc, "\n\n") {
		if strings.HasPrefix(strings.TrimSpace(para), "Deprecated: ") {
			return true
		}
	}
	return false
}

func render(fset *token.FileSet, node any) string {
	var b bytes.Buffer
	if fl, ok := node.(*ast.FieldList); ok {
		for i, f := range fl.List {
			if i > 0 {
				b.WriteString(", ")
			}
			for j, n := range f.Names {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString(n.Name)
			}
			if len(f.Names) > 0 {
				b.WriteByte(' ')
			}
			printer.Fprint(&b, fset, f.Type)
		}
		return b.String()
	}
	printer.Fprint(&b, fset, node)
	return b.String()
}
