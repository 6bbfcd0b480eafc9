package goapi

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
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
// block) and sets its Calls. A name the module's root package exports,
// written bare, is qualified with the package; a block naming something
// undefined is tried again as the block before it and itself together (a
// follow-up using the variables or the type the one before declares); a
// program is cut before the first statement of main that does not
// type-check when the ones before it do and call the module (see
// Checker.docProgram). Name is the file and the line its fence opens on
// (README.md:42).
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
			for i, b := range blocks {
				prog, why := c.docProgram(b.Source, pkgs, aliases)
				if i > 0 && namesUndefined(why) {
					// A block continuing the one before it (a
					// follow-up using its variables or its type) is
					// the two together.
					prog, why = c.docProgram(blocks[i-1].Source+"\n\n"+b.Source, pkgs, aliases)
				}
				if why != "" {
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

// docProgram makes a block's source a prepared program (snippetProgram,
// then Checker.Prepare); why says why it cannot be one. A name the
// module's root package exports, written bare (a README written for a
// dot import), is qualified; a program that type-checks up to a
// statement of main that does not (a README showing a call the API does
// not allow after one it does) is cut before it (cutAtError).
func (c *Checker) docProgram(src string, pkgs, aliases map[string]string) (string, string) {
	prog, why := snippetProgram(src, pkgs, aliases)
	if why != "" {
		return "", why
	}
	prog = c.qualifyBare(prog)
	if prog, why = c.Prepare(prog); why != "" {
		return "", why
	}
	return c.cutAtError(prog), ""
}

// namesUndefined reports whether why says a block names something it
// does not declare: a variable (the type checker's "undefined: x"), or x
// in x.Len() (snippetProgram takes it for a package no import provides).
func namesUndefined(why string) bool {
	return strings.HasPrefix(why, "undefined: ") || strings.HasSuffix(why, ", which no import provides")
}

// qualifyBare rewrites the names a program leaves undefined that the
// module's root package exports as that package's (Filter → lo.Filter),
// importing it. A program with no such name is returned as it is.
func (c *Checker) qualifyBare(program string) string {
	f, _, errs, err := c.check(program)
	if err != nil {
		return program
	}
	root, err := c.Import(c.modPath)
	if err != nil {
		return program
	}
	qual := root.Name()
	imported := false
	for _, im := range f.Imports {
		if strings.Trim(im.Path.Value, `"`) == c.modPath {
			if im.Name != nil && (im.Name.Name == "." || im.Name.Name == "_") {
				return program
			}
			qual, imported = ImportName(im), true
		}
	}
	at := map[token.Pos]bool{}
	for _, e := range errs {
		name, ok := strings.CutPrefix(e.Msg, "undefined: ")
		if !ok || strings.Contains(name, ".") || !ast.IsExported(name) || root.Scope().Lookup(name) == nil {
			continue
		}
		at[e.Pos] = true
	}
	if len(at) == 0 {
		return program
	}
	taken := false
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if at[id.Pos()] {
				id.Name = qual + "." + id.Name
			} else if id.Name == qual && !imported {
				taken = true // the package's name means something else here
			}
		}
		return true
	})
	if taken {
		return program
	}
	var b bytes.Buffer
	if err := format.Node(&b, c.fset, f); err != nil {
		return program
	}
	out := b.String()
	if !imported {
		i := strings.Index(out, "\n") + 1 // after the package clause
		out = out[:i] + fmt.Sprintf("\nimport %q\n", c.modPath) + out[i:]
	}
	res, err := format.Source([]byte(out))
	if err != nil {
		return program
	}
	return string(res)
}

// cutAtError cuts a prepared program before the first statement of main
// that does not type-check, when statements before it do and still call
// the module (a README block going on to show a call with the wrong
// number of results, or an argument the API does not take); the cut
// program is prepared again. A program whose errors are elsewhere, in
// its first statement, or that imports a package the checker does not
// read (its errors may be the checker's) is returned as it is: the
// compiler has the last word on it.
func (c *Checker) cutAtError(program string) string {
	for round := 0; round < 4; round++ {
		f, _, errs, err := c.check(program)
		if err != nil || len(errs) == 0 {
			return program
		}
		for _, im := range f.Imports {
			if p := strings.Trim(im.Path.Value, `"`); !isStdPath(p) && p != c.modPath && !strings.HasPrefix(p, c.modPath+"/") {
				return program
			}
		}
		var body *ast.BlockStmt
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "main" && fd.Body != nil {
				body = fd.Body
			}
		}
		if body == nil {
			return program
		}
		k := len(body.List)
		for _, e := range errs {
			i := slices.IndexFunc(body.List, func(s ast.Stmt) bool { return s.Pos() <= e.Pos && e.Pos < s.End() })
			if i < 0 {
				return program // an error outside main's statements
			}
			k = min(k, i)
		}
		if k == 0 {
			return program
		}
		pos := c.fset.Position(body.List[k].Pos())
		lineStart := pos.Offset - (pos.Column - 1)
		end := c.fset.Position(body.Rbrace).Offset
		cut, why := c.Prepare(program[:lineStart] + program[end:])
		if why != "" {
			return program
		}
		if calls, err := c.Calls(cut); err != nil || len(calls) == 0 {
			return program
		}
		program = cut
	}
	return program
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
