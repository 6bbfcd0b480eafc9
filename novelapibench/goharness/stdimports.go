package goharness

import (
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strings"
)

// stdPackages are the standard packages a solution may use without the
// task's context importing them, by the name code refers to them with.
// Ambiguous names (rand: math/rand or crypto/rand; template) are left
// out: the compiler then says what is undefined.
var stdPackages = map[string]string{
	"atomic": "sync/atomic", "base64": "encoding/base64", "big": "math/big", "bits": "math/bits",
	"bufio": "bufio", "bytes": "bytes", "cmp": "cmp", "context": "context", "csv": "encoding/csv",
	"errors": "errors", "filepath": "path/filepath", "fmt": "fmt", "heap": "container/heap",
	"hex": "encoding/hex", "io": "io", "iter": "iter", "json": "encoding/json", "list": "container/list",
	"maps": "maps", "math": "math", "os": "os", "path": "path", "reflect": "reflect", "regexp": "regexp", "runtime": "runtime",
	"slices": "slices", "sort": "sort", "strconv": "strconv", "strings": "strings", "sync": "sync",
	"time": "time", "unicode": "unicode", "utf8": "unicode/utf8",
}

// stdImports are the import lines code needs for standard packages it
// refers to (pkg.Name with pkg declared nowhere in code) that imports does
// not provide: a span that uses strings.Join compiles although the task's
// program never imported strings, as if the solver had written the import.
func stdImports(imports []string, code string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+code, 0)
	if err != nil {
		return nil
	}
	have := map[string]bool{}
	for _, im := range imports {
		name, path, _ := strings.Cut(im, " ")
		have[name] = true
		have[strings.Trim(path, `"`)] = true
	}
	need := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok && id.Obj == nil && !have[id.Name] {
				if p, ok := stdPackages[id.Name]; ok && !have[p] {
					need[id.Name] = true
				}
			}
		}
		return true
	})
	var out []string
	for name := range need {
		out = append(out, name+" \""+stdPackages[name]+"\"")
	}
	sort.Strings(out)
	return out
}
