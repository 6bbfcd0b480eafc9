package goapi

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/modfile"
)

// Example is one usage example of a module, made standalone: a `package
// main` program that imports the module like any user would. Kind says
// where it comes from: an Example function (Examples), a test or
// benchmark function (MineTests) or a fenced block of a documentation
// file (MineDocs).
type Example struct {
	Name    string // the function's name: ExampleMap, ExampleSet_Add_second; TestMap; README.md:42
	Kind    string // KindExample, KindTest, KindBenchmark, KindReadme
	Package string // import path of the package it documents (a test's package; the module's for a documentation file)
	// ID is the API it documents under godoc's naming rules (Example F,
	// Example T, Example T_M, each with an optional _suffix); "" for a
	// package example.
	ID   string
	File string // the test file, relative to the module root
	// Program is the standalone program (go/doc's playable form); ""
	// when the example cannot be made standalone, and Why says why.
	Program   string
	Why       string
	Output    string // the expected output
	HasOutput bool   // an "// Output:" comment is present
	Unordered bool   // "// Unordered output:"
	Imports   []string
	// Calls are the module's functions and methods the program uses, as
	// API identities (Checker.Calls); set for mined examples, and by
	// whoever checks the others.
	Calls []string
}

// Kinds of examples, by where they come from. An Example function is
// KindExample for the API it documents and KindOtherExample for every
// other API it calls (the bundle node decides which).
const (
	KindExample      = "example"
	KindOtherExample = "other_example"
	KindTest         = "test"
	KindBenchmark    = "benchmark"
	KindReadme       = "readme"
)

// Mined reports whether the example was mined from a test, a benchmark
// or a documentation block rather than written as an Example function.
// That decides how it is validated: an Example function is checked
// against its // Output: comment (one without it is compiled, never run);
// a mined one has no expected output and is valid when it compiles and
// runs to exit 0 without panicking.
func (e Example) Mined() bool {
	return e.Kind == KindTest || e.Kind == KindBenchmark || e.Kind == KindReadme
}

// Examples finds the Example functions of the module at dir (test files
// of the default build context) and makes each standalone. Examples in
// internal test files (package lo, not lo_test) are rewritten to use the
// package through its import path; one that needs an unexported
// identifier or a helper from another file stays non-standalone.
func Examples(dir string) ([]Example, error) {
	gm, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, fmt.Errorf("examples: %w", err)
	}
	modPath := modfile.ModulePath(gm)
	var out []Example
	err = walkPackages(dir, func(pdir, rel string) error {
		bp, err := build.Default.ImportDir(pdir, 0)
		if err != nil || bp.Name == "main" {
			return nil
		}
		if len(bp.TestGoFiles)+len(bp.XTestGoFiles) == 0 {
			return nil
		}
		pkgPath := modPath
		if rel != "." {
			pkgPath = path.Join(modPath, rel)
		}
		found, err := packageExamples(pdir, rel, pkgPath, bp)
		out = append(out, found...)
		return err
	})
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Package != out[j].Package {
			return out[i].Package < out[j].Package
		}
		return out[i].Name < out[j].Name
	})
	return out, err
}

// walkPackages calls fn for every directory of the module at root that may
// hold a package (not vendor, testdata, hidden or nested modules).
func walkPackages(root string, fn func(dir, rel string) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel != "." {
			base := d.Name()
			if strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || base == "vendor" || base == "testdata" {
				return fs.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return fs.SkipDir
			}
		}
		return fn(p, rel)
	})
}

// topLevelNames lists the names a set of files declares at package level.
func topLevelNames(files []*ast.File) map[string]bool {
	names := map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					names[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						names[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names[n.Name] = true
						}
					}
				}
			}
		}
	}
	return names
}

func packageExamples(pdir, rel, pkgPath string, bp *build.Package) ([]Example, error) {
	fset := token.NewFileSet()
	parse := func(names []string) ([]*ast.File, error) {
		var fs []*ast.File
		for _, n := range names {
			f, err := parser.ParseFile(fset, filepath.Join(pdir, n), nil, parser.ParseComments)
			if err != nil {
				return nil, fmt.Errorf("examples: %w", err)
			}
			fs = append(fs, f)
		}
		return fs, nil
	}
	pkgFiles, err := parse(bp.GoFiles)
	if err != nil {
		return nil, err
	}
	internal, err := parse(bp.TestGoFiles)
	if err != nil {
		return nil, err
	}
	external, err := parse(bp.XTestGoFiles)
	if err != nil {
		return nil, err
	}
	pkgNames := topLevelNames(pkgFiles)
	var out []Example
	for i, f := range append(internal, external...) {
		if !hasExamples(f) {
			continue
		}
		relFile := filepath.ToSlash(filepath.Join(rel, filepath.Base(fset.Position(f.Package).Filename)))
		var why map[string]string
		if i < len(internal) {
			var others []*ast.File
			for j, g := range internal {
				if j != i {
					others = append(others, g)
				}
			}
			f, why = externalize(fset, f, bp.Name, pkgPath, pkgNames, topLevelNames(others))
			if f == nil {
				continue
			}
		}
		for _, ex := range doc.Examples(f) {
			e := Example{
				Name: "Example" + ex.Name + prefixed(ex.Suffix, "_"), Kind: KindExample, Package: pkgPath, File: relFile,
				Output: ex.Output, HasOutput: ex.Output != "" || ex.EmptyOutput, Unordered: ex.Unordered,
			}
			e.ID = exampleTarget(pkgPath, ex.Name)
			switch {
			case ex.Play == nil && why[e.Name] != "":
				e.Why = why[e.Name]
			case ex.Play == nil && why[""] != "":
				e.Why = why[""]
			case ex.Play == nil:
				e.Why = "uses identifiers declared outside its file"
			default:
				var b bytes.Buffer
				if err := format.Node(&b, fset, ex.Play); err != nil {
					e.Why = "cannot print: " + err.Error()
					break
				}
				e.Program = b.String()
				for _, im := range ex.Play.Imports {
					e.Imports = append(e.Imports, strings.Trim(im.Path.Value, `"`))
				}
			}
			out = append(out, e)
		}
	}
	return out, nil
}

func prefixed(s, p string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func hasExamples(f *ast.File) bool {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Example") {
			return true
		}
	}
	return false
}

// exampleTarget maps go/doc's example name (Map, Set_Add, Find_notFound,
// Set_Add_second; "" or _suffix for the package) to an API identity. A
// last part that starts with a lower-case letter is a suffix, as godoc
// reads it (ExampleFind_notFound is another example of Find, not of a
// method notFound), and what is left is F or T, or T_M.
func exampleTarget(pkgPath, name string) string {
	parts := strings.Split(name, "_")
	if n := len(parts); n > 1 && isExampleSuffix(parts[n-1]) {
		parts = parts[:n-1]
	}
	if len(parts) > 2 || parts[0] == "" {
		return ""
	}
	return pkgPath + "." + strings.Join(parts, ".")
}

// isExampleSuffix is go/doc's rule: an example's suffix starts with a
// lower-case letter.
func isExampleSuffix(s string) bool {
	r, size := utf8.DecodeRuneInString(s)
	return size > 0 && unicode.IsLower(r)
}

// externalize rewrites an internal test file (package lo) as an external
// one (package lo_test): bare uses of the package's exported names become
// lo.Name. It returns the reparsed file, and by top-level function name
// ("" for the other declarations) why it will not stand alone: an
// unexported name, a helper in another file.
func externalize(fset *token.FileSet, f *ast.File, pkgName, pkgPath string, pkgNames, otherTest map[string]bool) (*ast.File, map[string]string) {
	own := topLevelNames([]*ast.File{f})
	imports := map[string]bool{}
	for _, im := range f.Imports {
		imports[ImportName(im)] = true
	}
	qual := pkgName
	if imports[qual] {
		qual = "lacuna_" + pkgName
	}
	why := map[string]string{}
	used := false
	skip := map[*ast.Ident]bool{}
	decl := "" // the enclosing top-level function
	note := func(format string, args ...any) {
		if why[decl] == "" {
			why[decl] = fmt.Sprintf(format, args...)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportSpec:
			return false
		case *ast.SelectorExpr:
			skip[n.Sel] = true
		case *ast.Field:
			for _, id := range n.Names {
				skip[id] = true
			}
		case *ast.FuncDecl:
			skip[n.Name] = true
			decl = ""
			if n.Recv == nil {
				decl = n.Name.Name
			}
		case *ast.GenDecl:
			decl = ""
		case *ast.CompositeLit:
			if _, isMap := n.Type.(*ast.MapType); !isMap {
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if id, ok := kv.Key.(*ast.Ident); ok {
							skip[id] = true // a struct field name
						}
					}
				}
			}
		case *ast.Ident:
			if skip[n] || n.Obj != nil || n == f.Name || own[n.Name] || imports[n.Name] || n.Name == "_" {
				return true
			}
			switch {
			case pkgNames[n.Name] && ast.IsExported(n.Name):
				n.Name = qual + "." + n.Name
				used = true
			case pkgNames[n.Name]:
				note("uses the unexported %s.%s", pkgName, n.Name)
			case otherTest[n.Name]:
				note("uses %s, declared in another test file", n.Name)
			}
		}
		return true
	})
	f.Name.Name = pkgName + "_test"
	var b bytes.Buffer
	if err := format.Node(&b, fset, f); err != nil {
		return nil, nil
	}
	src := b.String()
	if used {
		// The import goes right after the package clause.
		i := strings.Index(src, "\npackage ") + 1
		i += strings.Index(src[i:], "\n")
		src = src[:i+1] + fmt.Sprintf("\nimport %s %q\n", qual, pkgPath) + src[i+1:]
	}
	nf, err := parser.ParseFile(fset, fset.Position(f.Package).Filename+".external.go", src, parser.ParseComments)
	if err != nil {
		return nil, nil
	}
	return nf, why
}

// ImportName is the name an import is used by: its explicit name, or the
// last path element that is not a major version (the go/doc guess).
func ImportName(im *ast.ImportSpec) string {
	if im.Name != nil {
		return im.Name.Name
	}
	p := strings.Trim(im.Path.Value, `"`)
	parts := strings.Split(p, "/")
	name := parts[len(parts)-1]
	if len(parts) > 1 && len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
		name = parts[len(parts)-2]
	}
	name = strings.TrimPrefix(name, "go-")
	if i := strings.IndexAny(name, ".-"); i > 0 {
		name = name[:i]
	}
	return name
}
