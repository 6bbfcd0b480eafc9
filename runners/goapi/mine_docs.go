package goapi

import (
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
)

// MineDocs finds the fenced Go blocks (```go or ~~~go, also golang) of
// the module's Markdown files (README.md and any other *.md, outside
// testdata, vendor, hidden directories and nested modules) and makes each
// a standalone program: a block that is a whole main package stays one;
// declarations with a main function get the package clause; statements
// become main's body, after any declarations the block starts with (a
// type and its methods, an import). Imports the block leaves out are
// added for the module's packages (by package name, or by a name an
// import line of the same file gives them) and for the common standard
// packages; a block that names a package none of these provides, that
// only declares (a signature), or that does not parse is not an example.
// c then prepares each program (Checker.Prepare: variables shown in a
// comment instead of used, twice-declared names, undefined names drop the
// block) and sets its Calls. Name is the file and the line its fence
// opens on (README.md:42).
func MineDocs(dir string, c *Checker) ([]Example, error) {
	gm, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, fmt.Errorf("mine docs: %w", err)
	}
	modPath := modfile.ModulePath(gm)
	pkgs, err := packageNames(dir)
	if err != nil {
		return nil, fmt.Errorf("mine docs: %w", err)
	}
	var out []Example
	err = walkPackages(dir, func(pdir, rel string) error {
		entries, err := os.ReadDir(pdir)
		if err != nil {
			return nil
		}
		for _, e := range entries {
			ext := strings.ToLower(filepath.Ext(e.Name()))
			if e.IsDir() || (ext != ".md" && ext != ".markdown") {
				continue
			}
			text, err := os.ReadFile(filepath.Join(pdir, e.Name()))
			if err != nil {
				continue
			}
			file := filepath.ToSlash(filepath.Join(rel, e.Name()))
			blocks := FencedGo(string(text))
			aliases := importAliases(blocks)
			for _, b := range blocks {
				prog, why := snippetProgram(b.Source, pkgs, aliases)
				if why != "" {
					continue
				}
				if prog, why = c.Prepare(prog); why != "" {
					continue
				}
				calls, err := c.Calls(prog)
				if err != nil {
					continue
				}
				out = append(out, Example{Name: fmt.Sprintf("%s:%d", file, b.Line), Kind: KindReadme, Package: modPath, File: file, Program: prog, Calls: calls})
			}
		}
		return nil
	})
	return out, err
}

// Block is one fenced code block of a Markdown file.
type Block struct {
	Line   int // the line its opening fence is on, from 1
	Source string
}

// FencedGo returns the fenced code blocks of a Markdown text whose info
// string is go or golang, in order. Fences are ``` or ~~~ (three or
// more), indented by at most three spaces; the closing fence is the same
// character, at least as long.
func FencedGo(text string) []Block {
	var out []Block
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		fence, info, indent, ok := openFence(lines[i])
		if !ok {
			continue
		}
		var body []string
		j := i + 1
		for ; j < len(lines); j++ {
			if closesFence(lines[j], fence) {
				break
			}
			l := lines[j]
			for k := 0; k < indent && strings.HasPrefix(l, " "); k++ {
				l = l[1:]
			}
			body = append(body, l)
		}
		lang, _, _ := strings.Cut(info, " ")
		if lang = strings.ToLower(strings.Trim(lang, "{}.")); lang == "go" || lang == "golang" {
			out = append(out, Block{Line: i + 1, Source: strings.Join(body, "\n")})
		}
		i = j
	}
	return out
}

func openFence(line string) (fence, info string, indent int, ok bool) {
	trimmed := strings.TrimLeft(line, " ")
	indent = len(line) - len(trimmed)
	if indent > 3 {
		return "", "", 0, false
	}
	for _, ch := range []string{"`", "~"} {
		n := len(trimmed) - len(strings.TrimLeft(trimmed, ch))
		if n >= 3 {
			info = strings.TrimSpace(trimmed[n:])
			if ch == "`" && strings.Contains(info, "`") {
				return "", "", 0, false
			}
			return trimmed[:n], info, indent, true
		}
	}
	return "", "", 0, false
}

func closesFence(line, fence string) bool {
	t := strings.TrimSpace(line)
	return len(t) >= len(fence) && strings.Trim(t, fence[:1]) == "" && len(line)-len(strings.TrimLeft(line, " ")) <= 3
}

// importAliases collects the import lines of a file's blocks: name →
// path, for names that mean one path throughout.
func importAliases(blocks []Block) map[string]string {
	out := map[string]string{}
	bad := map[string]bool{}
	for _, b := range blocks {
		for _, line := range strings.Split(b.Source, "\n") {
			line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "import"))
			fields := strings.Fields(line)
			if len(fields) == 0 || len(fields) > 2 {
				continue
			}
			p, err := strconv.Unquote(fields[len(fields)-1])
			if err != nil || !strings.Contains(p, "/") && !isStdPath(p) {
				continue
			}
			name := guessName(p)
			if len(fields) == 2 {
				name = fields[0]
			}
			if name == "_" || name == "." || !token.IsIdentifier(name) {
				continue
			}
			if q, ok := out[name]; ok && q != p {
				bad[name] = true
			}
			out[name] = p
		}
	}
	for n := range bad {
		delete(out, n)
	}
	return out
}

// snippetProgram makes a block a main package (see MineDocs); why says
// why it cannot be one.
func snippetProgram(src string, pkgs, aliases map[string]string) (string, string) {
	src = strings.TrimSpace(src)
	if src == "" {
		return "", "empty"
	}
	fset := token.NewFileSet()
	var f *ast.File
	var text string
	try := func(t string) bool {
		g, err := parser.ParseFile(fset, "snippet.go", t, parser.ParseComments)
		if err != nil {
			return false
		}
		f, text = g, t
		return true
	}
	switch {
	case strings.HasPrefix(src, "package "):
		if !try(src) || f.Name.Name != "main" || !hasMain(f) {
			return "", "a package other than a main one"
		}
	case try("package main\n\n" + src):
		if !hasMain(f) {
			return "", "declarations only"
		}
	case try("package main\n\nfunc main() {\n" + src + "\n}\n"):
	default:
		lines := strings.Split(src, "\n")
		if len(lines) > 200 {
			return "", "does not parse"
		}
		ok := false
		for k := 1; k < len(lines) && !ok; k++ {
			ok = try("package main\n\n" + strings.Join(lines[:k], "\n") + "\n\nfunc main() {\n" + strings.Join(lines[k:], "\n") + "\n}\n")
		}
		if !ok || mainCount(f) != 1 {
			return "", "does not parse"
		}
	}
	// The imports it leaves out.
	have := map[string]bool{}
	for _, im := range f.Imports {
		have[ImportName(im)] = true
	}
	need := map[string]string{}
	var missing []string
	ast.Inspect(f, func(n ast.Node) bool {
		s, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := s.X.(*ast.Ident)
		if !ok || id.Obj != nil || have[id.Name] || need[id.Name] != "" {
			return true
		}
		switch {
		case aliases[id.Name] != "":
			need[id.Name] = aliases[id.Name]
		case pkgs[id.Name] != "":
			need[id.Name] = pkgs[id.Name]
		case stdPackages[id.Name] != "":
			need[id.Name] = stdPackages[id.Name]
		default:
			missing = append(missing, id.Name)
		}
		return true
	})
	if len(missing) > 0 {
		sort.Strings(missing)
		return "", "uses " + strings.Join(missing, ", ") + ", which no import provides"
	}
	if len(need) > 0 {
		var names []string
		for n := range need {
			names = append(names, n)
		}
		sort.Strings(names)
		var b strings.Builder
		b.WriteString("package main\n\nimport (\n")
		for _, n := range names {
			if n == guessName(need[n]) {
				fmt.Fprintf(&b, "\t%q\n", need[n])
			} else {
				fmt.Fprintf(&b, "\t%s %q\n", n, need[n])
			}
		}
		b.WriteString(")\n")
		text = b.String() + strings.TrimPrefix(text[strings.Index(text, "package main")+len("package main"):], "\n")
	}
	out, err := format.Source([]byte(text))
	if err != nil {
		return "", "does not print: " + err.Error()
	}
	return string(out), ""
}

func hasMain(f *ast.File) bool { return mainCount(f) > 0 }

func mainCount(f *ast.File) int {
	n := 0
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "main" {
			n++
		}
	}
	return n
}

// stdPackages are the standard packages a block may use without
// importing them, by the name code refers to them with (ambiguous names,
// rand or template, are left out).
var stdPackages = map[string]string{
	"atomic": "sync/atomic", "base64": "encoding/base64", "big": "math/big", "bits": "math/bits",
	"bufio": "bufio", "bytes": "bytes", "cmp": "cmp", "context": "context", "csv": "encoding/csv",
	"errors": "errors", "filepath": "path/filepath", "fmt": "fmt", "heap": "container/heap",
	"hex": "encoding/hex", "http": "net/http", "io": "io", "iter": "iter", "json": "encoding/json", "list": "container/list",
	"log": "log", "maps": "maps", "math": "math", "net": "net", "os": "os", "path": "path", "reflect": "reflect", "regexp": "regexp", "runtime": "runtime",
	"slices": "slices", "slog": "log/slog", "sort": "sort", "strconv": "strconv", "strings": "strings", "sync": "sync",
	"time": "time", "unicode": "unicode", "utf8": "unicode/utf8",
}
