package gotool

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"strings"

	"github.com/lacuna-dev/lacuna/runners/goapi"
	"github.com/lacuna-dev/lacuna/runners/modfetch"
)

// Example statuses after validation.
const (
	ExamplePassed        = "passed"         // ran and printed its // Output:
	ExampleFailed        = "failed"         // ran and printed something else
	ExampleNoOutput      = "no_output"      // compiles; no // Output: to check it against
	ExampleCompileError  = "compile_error"  // the standalone program does not compile
	ExampleRuntimeError  = "runtime_error"  // panicked or crashed
	ExampleTimeout       = "timeout"        // ran out of time
	ExampleNotStandalone = "not_standalone" // could not be extracted from its package
)

// ExampleResult is what validating one example found.
type ExampleResult struct {
	Status  string
	Got     string // what it printed, when that is not the expected output
	Error   string // compiler or runtime message, bounded
	Seconds float64
	// Output is what a mined example (goapi.Example.Mined) printed on
	// standard output when it passed, "" when it printed more than
	// MaxMinedOutput bytes.
	Output string
}

// MaxMinedOutput bounds the output a mined example's result keeps.
const MaxMinedOutput = 2000

// RunExamples validates standalone examples of module mod (its verified
// tree): each becomes an Example test in a generated module that requires
// mod through a replace directive. One `go test -json` compiles them all
// outside the sandbox and runs the test binaries inside it (opts.Exec);
// the go command compares the output by its own rules (// Output:,
// // Unordered output:). A mined example (a test, a benchmark, a
// documentation block: goapi.Example.Mined) has no output to compare:
// it becomes a Test function instead, and passes when it runs to its end
// without panicking or exiting (its log.Fatal checks held). An example
// that does not compile is set aside and the rest of its package rebuilt,
// so one bad example costs only itself.
func (t *Toolchain) RunExamples(ctx context.Context, mod *modfetch.Module, exs []goapi.Example, opts BatchOptions) ([]ExampleResult, error) {
	res := make([]ExampleResult, len(exs))
	var units []Unit
	var which []int // unit → example
	for i, ex := range exs {
		if ex.Program == "" {
			res[i] = ExampleResult{Status: ExampleNotStandalone, Error: ex.Why}
			continue
		}
		prog, err := splitProgram(ex)
		if err != nil {
			res[i] = ExampleResult{Status: ExampleCompileError, Error: err.Error()}
			continue
		}
		u, ex := len(units), ex
		units = append(units, Unit{
			Group: ex.Package,
			Source: func(pkg string, declared map[string]string) string {
				return prog.file(pkg, UnitName(unitBase(ex), u), ex, declared)
			},
			Clashes: prog.clashes,
		})
		which = append(which, i)
	}
	if len(units) == 0 {
		return res, nil
	}
	got, err := t.RunBatch(ctx, mod, units, opts)
	if err != nil {
		return nil, err
	}
	for u, r := range got {
		i := which[u]
		name := UnitName(unitBase(exs[i]), u)
		tr, ran := r.Tests[name]
		switch {
		case r.CompileError != "":
			res[i] = ExampleResult{Status: ExampleCompileError, Error: r.CompileError}
		case r.TimedOut:
			res[i] = ExampleResult{Status: ExampleTimeout, Error: "the go test run ran out of time"}
		case ran && tr.Passed:
			res[i] = ExampleResult{Status: ExamplePassed, Seconds: tr.Seconds}
			if exs[i].Mined() {
				res[i].Output = testOutput(tr.Output, name)
			}
		case ran:
			res[i] = classifyFailure(tr.Output, tr.Seconds)
		case !exs[i].HasOutput && !exs[i].Mined():
			res[i] = ExampleResult{Status: ExampleNoOutput}
		case strings.Contains(r.PackageFailure, "test timed out"):
			res[i] = ExampleResult{Status: ExampleTimeout, Error: bound(r.PackageFailure, 4000)}
		default:
			res[i] = ExampleResult{Status: ExampleRuntimeError, Error: bound(r.PackageFailure, 4000)}
		}
	}
	return res, nil
}

// unitBase names an example's unit function: a mined example is a Test.
func unitBase(ex goapi.Example) string {
	if ex.Mined() {
		return "TestMined"
	}
	return ex.Name
}

// testOutput is what a passing test printed, without go test's lines
// about it; "" when that is more than MaxMinedOutput bytes.
func testOutput(out, name string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(out, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "=== ") && strings.HasSuffix(t, name) || strings.HasPrefix(t, "--- PASS: "+name+" ") {
			continue
		}
		b.WriteString(line)
	}
	if b.Len() > MaxMinedOutput {
		return ""
	}
	return b.String()
}

// clashes reports whether the program declares a helper under a name the
// package already has with other source.
func (prog *program) clashes(declared map[string]string) bool {
	for _, h := range prog.helpers {
		if src, ok := declared[h.name]; ok && src != h.src {
			return true
		}
	}
	return false
}

// classifyFailure reads a failed example's output: "got:/want:" is a
// wrong output; a panic or anything else is a runtime error.
func classifyFailure(out string, secs float64) ExampleResult {
	if i := strings.Index(out, "got:\n"); i >= 0 {
		got := out[i+len("got:\n"):]
		if j := strings.Index(got, "\nwant:\n"); j >= 0 {
			got = got[:j]
		}
		return ExampleResult{Status: ExampleFailed, Got: bound(got, 4000), Seconds: secs}
	}
	if strings.Contains(out, "test timed out") {
		return ExampleResult{Status: ExampleTimeout, Error: bound(out, 4000), Seconds: secs}
	}
	return ExampleResult{Status: ExampleRuntimeError, Error: bound(out, 4000), Seconds: secs}
}

func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "\n[truncated]"
}

// program is a standalone example split into what a test file needs.
type program struct {
	imports []*ast.ImportSpec
	helpers []named // top-level declarations other than main, in order
	body    string  // the statements of main
	fset    *token.FileSet
	ast     *ast.File
}

type named struct {
	name, src string
	uses      map[string]bool // import names it refers to
}

func splitProgram(ex goapi.Example) (*program, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example.go", ex.Program, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("standalone program does not parse: %w", err)
	}
	p := &program{imports: f.Imports, fset: fset, ast: f}
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
			continue
		}
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "main" {
			start, end := fset.Position(fd.Body.Lbrace).Offset+1, fset.Position(fd.Body.Rbrace).Offset
			p.body = strings.TrimRight(ex.Program[start:end], " \t\n")
			continue
		}
		var b bytes.Buffer
		(&printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}).Fprint(&b, fset, &printer.CommentedNode{Node: d, Comments: goapi.CommentsWithin(f, d)})
		p.helpers = append(p.helpers, named{name: declName(d), src: b.String(), uses: goapi.SelectorRoots(d)})
	}
	return p, nil
}

func declName(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv != nil && len(d.Recv.List) == 1 {
			r, _ := goapi.ReceiverName(d.Recv.List[0].Type)
			return r + "." + d.Name.Name
		}
		return d.Name.Name
	case *ast.GenDecl:
		var names []string
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				names = append(names, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					names = append(names, n.Name)
				}
			}
		}
		return strings.Join(names, ",")
	}
	return ""
}

// file renders the program as Example function fn of package pkgName,
// leaving out helpers already declared (helpers maps name → source).
func (prog *program) file(pkgName, fn string, ex goapi.Example, helpers map[string]string) string {
	var decls []named
	uses := map[string]bool{}
	for _, h := range prog.helpers {
		if _, done := helpers[h.name]; done {
			continue
		}
		helpers[h.name] = h.src
		decls = append(decls, h)
		for k := range h.uses {
			uses[k] = true
		}
	}
	// Imports the body uses: parse it as a function to find them.
	if bf, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc f() {\n"+prog.body+"\n}\n", 0); err == nil {
		for k := range goapi.SelectorRoots(bf) {
			uses[k] = true
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\n", pkgName)
	for _, im := range prog.imports {
		name := goapi.ImportName(im)
		if name == "_" || name == "." || uses[name] {
			fmt.Fprintf(&b, "import %s %s\n", name, im.Path.Value)
		}
	}
	if ex.Mined() {
		b.WriteString("import lacunatesting \"testing\"\n")
		for _, d := range decls {
			b.WriteString("\n")
			b.WriteString(d.src)
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "\nfunc %s(*lacunatesting.T) {%s\n}\n", fn, prog.body)
		return b.String()
	}
	for _, d := range decls {
		b.WriteString("\n")
		b.WriteString(d.src)
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nfunc %s() {%s\n", fn, prog.body)
	if ex.HasOutput {
		if ex.Unordered {
			b.WriteString("\n\t// Unordered output:\n")
		} else {
			b.WriteString("\n\t// Output:\n")
		}
		for _, line := range strings.Split(strings.TrimRight(ex.Output, "\n"), "\n") {
			if line == "" && ex.Output == "" {
				break
			}
			b.WriteString("\t// " + line + "\n")
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// goVersion is the go command's language version, "1.26".
func (t *Toolchain) goVersion(ctx context.Context) (string, error) {
	id, err := t.Identity(ctx)
	if err != nil {
		return "", err
	}
	v := strings.TrimPrefix(id["toolchain"], "go")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return "", fmt.Errorf("go env GOVERSION: unexpected %q", id["toolchain"])
	}
	return parts[0] + "." + strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }), nil
}
