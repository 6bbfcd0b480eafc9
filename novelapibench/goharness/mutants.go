package goharness

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Calibration solutions: a harness must fail every one of them. The last
// five are the cheap exploits of a solver that reads the expected result
// off the task (NovelAPIBench: a genuine call to the API is a hard
// precondition for passing, and the values checked must come from it).
const (
	MutantNull    = "null"    // the span left empty, or its variables at zero values
	MutantSibling = "sibling" // the target call replaced by a sibling API
	MutantImport  = "import"  // the target's import path made wrong
	MutantPerturb = "perturb" // a literal argument of the target call changed
	MutantSyntax  = "syntax"  // a closing parenthesis dropped
	// MutantHardcoded never calls the target: the probes are set to the
	// reference's values written as Go literals, and where the span prints,
	// the reference's output is printed as a string. Built when at least one
	// probe value can be written or the span prints (otherwise it is the
	// null mutant), and every probe the span declares can be declared.
	MutantHardcoded = "hardcoded"
	// MutantThrowaway runs the reference's statements up to the one calling
	// the target, then overwrites what that statement assigned with the
	// same values as literals, then runs the rest of the span: the call is
	// genuine, the values read after it do not come from it. Built when the
	// calling statement assigns variables read later and every one of them
	// is a probe whose value can be written.
	MutantThrowaway = "throwaway"
	// MutantDiscarded calls the target with its result discarded (_ = call)
	// and writes what the calling statement would have assigned as literals
	// (the reference's output printed instead where that statement prints).
	// Built when the reference uses the call's result, the calling statement
	// is a simple one (assignment, var declaration, expression) with the call
	// outside any function literal, and what it assigns and is read later
	// can be written.
	MutantDiscarded = "discarded"
	// MutantExit runs the reference's span, prints the reference's output
	// where the span does not print, and calls os.Exit(0): the call and the
	// values are genuine, but the scenario's code after the span (and any
	// check there) never runs, so only an exit check can reject it. Always
	// built.
	MutantExit = "exit"
	// MutantGoexit is MutantExit ending in runtime.Goexit() instead: the
	// goroutine ends running its deferred calls, the process goes on. Its
	// Imports add runtime, which is not among the standard packages a span
	// gets on use.
	MutantGoexit = "goexit"
)

// maxLiteral bounds a value written into a mutant (bytes of its %#v).
const maxLiteral = 1 << 16

// Mutant is one calibration solution.
type Mutant struct {
	Kind string
	Code string // the answer: import lines, then the span's replacement
	// Imports replaces the task's imports when the mutant is about them.
	Imports []string
}

// Mutants builds the calibration solutions of a task: what a harness must
// reject. sibling is an API of the same package (and receiver) to call
// instead of the target, "" when there is none. probes are the reference's
// probed values by variable name (Probe.Type is %T, Probe.Value %#v):
// their types give the null mutant's zero values, their values the
// literals of the exploit mutants; output is what the reference printed.
// A kind that cannot be built meaningfully for the task is left out (see
// each kind's doc). The result depends only on the arguments.
func Mutants(t Task, tg Target, sibling string, probes map[string]Probe, output string) []Mutant {
	var out []Mutant
	lits := newLiterals(t)
	sp, parsed := parseSpan(t.Mask)
	null := ""
	for _, p := range t.Probes {
		// Declared at its zero value where the span declares it; a
		// variable declared before the span keeps what it had.
		if z, ok := lits.zero(p, probes[p]); ok && (!parsed || sp.declares(t.Keep)[p]) {
			null += "\t" + z + "\n"
		}
	}
	out = append(out, Mutant{Kind: MutantNull, Code: null})
	call := regexp.MustCompile(`\b` + regexp.QuoteMeta(tg.Name) + `\b(\s*[\[(])`)
	if sibling != "" && call.MatchString(t.Mask) {
		out = append(out, Mutant{Kind: MutantSibling, Code: replaceFirst(call, t.Mask, sibling+"$1")})
	}
	var imports []string
	moved := false
	for _, im := range t.Imports {
		name, path, _ := strings.Cut(im, " ")
		if p, _ := strconv.Unquote(path); p == tg.Package && !moved {
			// Dots out of the first element: a path the go command reads as
			// a missing standard package, so it never asks the network.
			im = name + " " + strconv.Quote(strings.ReplaceAll(tg.Package, ".", "_"))
			moved = true
		}
		imports = append(imports, im)
	}
	if moved {
		out = append(out, Mutant{Kind: MutantImport, Code: t.Mask, Imports: imports})
	}
	if p, ok := perturb(t.Mask, tg.Name); ok {
		out = append(out, Mutant{Kind: MutantPerturb, Code: p})
	}
	if i := strings.LastIndex(t.Mask, ")"); i >= 0 {
		out = append(out, Mutant{Kind: MutantSyntax, Code: t.Mask[:i] + t.Mask[i+1:]})
	}
	if parsed {
		e := exploits{t: t, tg: tg, sp: sp, lits: lits, probes: probes, output: output}
		for _, m := range []Mutant{e.hardcoded(), e.throwaway(), e.discarded(), e.exit("os.Exit(0)", MutantExit), e.exit("runtime.Goexit()", MutantGoexit)} {
			if m.Code != "" {
				out = append(out, m)
			}
		}
	}
	// Answers as a solver writes them: the import lines the span needs
	// that the context does not give, then the span. A mutant's Imports
	// stay only where they change the context's own imports.
	for i, m := range out {
		mt := t
		if m.Imports != nil {
			mt.Imports = m.Imports
		}
		out[i].Code = mt.Answer(m.Code)
		if slices.Equal(mt.contextImports(), t.contextImports()) {
			out[i].Imports = nil
		}
	}
	return out
}

// exploits builds the exploit mutants of one task.
type exploits struct {
	t      Task
	tg     Target
	sp     *span
	lits   literals
	probes map[string]Probe
	output string
}

// hardcoded: the probes as literals, the output printed where the span
// prints.
func (e exploits) hardcoded() Mutant {
	code, written, ok := e.set(e.t.Probes, e.sp.declares(e.t.Keep), true)
	if !ok {
		return Mutant{}
	}
	printed := e.sp.prints(e.sp.stmts...) && e.output != ""
	if printed {
		code = append(code, e.print())
	}
	if written == 0 && !printed {
		return Mutant{} // nothing hard-coded: the null mutant
	}
	return Mutant{Kind: MutantHardcoded, Code: lines(code)}
}

// throwaway: the span up to the calling statement, the values that
// statement assigned overwritten, the rest of the span.
func (e exploits) throwaway() Mutant {
	k, _, _ := e.sp.targetCall(e.t, e.tg)
	if k < 0 {
		return Mutant{}
	}
	vars := e.readLater(k)
	if len(vars) == 0 {
		return Mutant{}
	}
	code, written, ok := e.set(vars, nil, false)
	if !ok || written != len(vars) {
		return Mutant{}
	}
	return Mutant{Kind: MutantThrowaway, Code: glue(e.sp.through(k), lines(code)) + e.sp.after(k)}
}

// discarded: the call's result thrown away, what its statement assigned
// written as literals.
func (e exploits) discarded() Mutant {
	k, call, parent := e.sp.targetCall(e.t, e.tg)
	if k < 0 || call == nil {
		return Mutant{}
	}
	var discard string
	many := func(n int) string { return strings.Repeat("_, ", n-1) + "_ = " + e.sp.text(call) }
	switch st := e.sp.stmts[k].(type) {
	case *ast.ExprStmt:
		if unparen(st.X) == call {
			return Mutant{} // returns nothing, or the reference ignores it too
		}
	case *ast.AssignStmt:
		if len(st.Rhs) == 1 && unparen(st.Rhs[0]) == call {
			discard = many(len(st.Lhs))
		}
	case *ast.DeclStmt:
		gd, ok := st.Decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR || len(gd.Specs) != 1 {
			return Mutant{}
		}
		if vs := gd.Specs[0].(*ast.ValueSpec); len(vs.Values) == 1 && unparen(vs.Values[0]) == call {
			discard = many(len(vs.Names))
		}
	default:
		return Mutant{}
	}
	if discard == "" {
		if p, ok := parent.(*ast.CallExpr); ok && len(p.Args) == 1 {
			discard = e.sp.text(call) // f(g()) may spread several results
		} else {
			discard = many(1)
		}
	}
	vars := e.readLater(k)
	outer := append(append([]string(nil), e.t.Keep...), e.sp.definedBefore(k)...)
	code, written, ok := e.set(vars, declaresAt(e.sp.stmts[k], outer), false)
	if !ok || written != len(vars) {
		return Mutant{}
	}
	code = append([]string{discard}, code...)
	if e.sp.prints(e.sp.stmts[k]) && e.output != "" {
		code = append(code, e.print())
	}
	// What only the dropped statement read is now unused.
	used := usedIdents(e.sp.stmts[k+1:])
	ast.Inspect(call, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			used[id.Name] = true
		}
		return true
	})
	for _, p := range e.t.Probes {
		used[p] = true
	}
	for _, v := range e.sp.definedBefore(k) {
		if !used[v] {
			code = append(code, "_ = "+v)
			used[v] = true
		}
	}
	return Mutant{Kind: MutantDiscarded, Code: glue(e.sp.before(k), lines(code)) + e.sp.after(k)}
}

// exit: the reference's span, the output printed where the span does not
// print it, then the scenario left through stop.
func (e exploits) exit(stop, kind string) Mutant {
	var code []string
	if e.output != "" && !e.sp.prints(e.sp.stmts...) {
		code = append(code, e.print())
	}
	m := Mutant{Kind: kind, Code: glue(e.t.Mask, lines(append(code, stop)))}
	if strings.HasPrefix(stop, "runtime.") {
		m.Imports = append([]string{`runtime "runtime"`}, e.t.Imports...)
		for _, im := range e.t.Imports {
			if strings.HasSuffix(im, ` "runtime"`) {
				m.Imports = nil // the task imports it already
			}
		}
	}
	return m
}

// readLater lists the variables statement k of the span assigns that are
// read after it (by the span's later statements or, as probes, by main).
func (e exploits) readLater(k int) []string {
	later := usedIdents(e.sp.stmts[k+1:])
	for _, p := range e.t.Probes {
		later[p] = true
	}
	var out []string
	for _, v := range defined(e.sp.stmts[k]) {
		if later[v] {
			out = append(out, v)
		}
	}
	return out
}

// set writes statements giving vars the reference's values: declared
// says which the code must declare (:= or var) rather than assign. Where a
// value cannot be written, zero allows a zero-value declaration instead
// (an assignment is then left out); ok is false when a variable that must
// be declared cannot be. written counts the values written.
func (e exploits) set(vars []string, declared map[string]bool, zero bool) (code []string, written int, ok bool) {
	for _, v := range vars {
		if s, ok := e.lits.set(v, e.probes[v], declared[v]); ok {
			code = append(code, s)
			written++
			continue
		}
		if !declared[v] {
			continue
		}
		z, ok := e.lits.zero(v, e.probes[v])
		if !zero || !ok {
			return nil, 0, false
		}
		code = append(code, z)
	}
	return code, written, true
}

func (e exploits) print() string { return "fmt.Print(" + strconv.Quote(e.output) + ")" }

func lines(stmts []string) string {
	var b strings.Builder
	for _, s := range stmts {
		b.WriteString("\t" + s + "\n")
	}
	return b.String()
}

// glue puts statements after span source, on a line of their own.
func glue(src, stmts string) string {
	src = strings.TrimRight(src, " \t\n")
	if src == "" {
		return stmts
	}
	return src + "\n" + strings.TrimRight(stmts, "\n")
}

func unparen(x ast.Expr) ast.Expr {
	for {
		p, ok := x.(*ast.ParenExpr)
		if !ok {
			return x
		}
		x = p.X
	}
}

// span is a parsed span: its top-level statements and their source.
type span struct {
	src   string // the span wrapped in a function
	fset  *token.FileSet
	stmts []ast.Stmt
}

const spanHead, spanTail = "package p\nfunc _() {\n", "\n}\n"

func parseSpan(code string) (*span, bool) {
	fset := token.NewFileSet()
	src := spanHead + code + spanTail
	f, err := parser.ParseFile(fset, "", src, 0)
	if err != nil || len(f.Decls) != 1 {
		return nil, false
	}
	return &span{src: src, fset: fset, stmts: f.Decls[0].(*ast.FuncDecl).Body.List}, true
}

func (s *span) off(p token.Pos) int { return s.fset.Position(p).Offset }

func (s *span) text(n ast.Node) string { return s.src[s.off(n.Pos()):s.off(n.End())] }

// before is the span's source up to statement k, through its source up to
// the end of statement k, after its source after statement k.
func (s *span) before(k int) string {
	return s.src[len(spanHead):s.off(s.stmts[k].Pos())]
}

func (s *span) through(k int) string {
	return s.src[len(spanHead):s.off(s.stmts[k].End())]
}

func (s *span) after(k int) string {
	return s.src[s.off(s.stmts[k].End()) : len(s.src)-len(spanTail)]
}

// declares reports, for each variable the span defines, whether its first
// definition declares it (:= or var) rather than assigning a variable
// declared before the span (those in outer).
func (s *span) declares(outer []string) map[string]bool {
	out := map[string]bool{}
	for _, st := range s.stmts {
		for v, decl := range declaresAt(st, outer) {
			if _, seen := out[v]; !seen {
				out[v] = decl
			}
		}
	}
	return out
}

// declaresAt reports, for each variable statement st defines, whether st
// declares it rather than assigning one of outer.
func declaresAt(st ast.Stmt, outer []string) map[string]bool {
	decl := false
	switch st := st.(type) {
	case *ast.AssignStmt:
		decl = st.Tok == token.DEFINE
	case *ast.DeclStmt:
		decl = true
	}
	out := map[string]bool{}
	for _, v := range defined(st) {
		out[v] = decl && !slices.Contains(outer, v)
	}
	return out
}

// definedBefore lists the variables statements before k define.
func (s *span) definedBefore(k int) []string {
	var out []string
	for _, st := range s.stmts[:k] {
		out = append(out, defined(st)...)
	}
	return out
}

// targetCall finds the span's first top-level statement calling the
// target (k = -1 when none) and, when that call is outside any function
// literal, the call and the node enclosing it.
func (s *span) targetCall(t Task, tg Target) (k int, call *ast.CallExpr, parent ast.Node) {
	pkgName := ""
	imported := map[string]bool{}
	for _, im := range t.Imports {
		name, path, _ := strings.Cut(im, " ")
		imported[name] = true
		if p, _ := strconv.Unquote(path); p == tg.Package {
			pkgName = name
		}
	}
	isTarget := func(c *ast.CallExpr) bool {
		sel, ok := calledFunc(c).(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != tg.Name {
			return false
		}
		id, isIdent := sel.X.(*ast.Ident)
		if tg.Receiver != "" {
			return !isIdent || !imported[id.Name]
		}
		return isIdent && (id.Name == pkgName || pkgName == "")
	}
	for i, st := range s.stmts {
		var stack []ast.Node
		found, inLit := false, false
		ast.Inspect(st, func(n ast.Node) bool {
			if found {
				return false
			}
			if n == nil {
				stack = stack[:len(stack)-1]
				return true
			}
			if c, ok := n.(*ast.CallExpr); ok && isTarget(c) {
				found, call, parent = true, c, stack[len(stack)-1]
				for _, a := range stack {
					if _, ok := a.(*ast.FuncLit); ok {
						inLit = true
					}
				}
				return false
			}
			stack = append(stack, n)
			return true
		})
		if found {
			if inLit {
				return i, nil, nil
			}
			return i, call, parent
		}
	}
	return -1, nil, nil
}

// prints reports whether the statements write to standard output: a
// fmt.Print…, print or println call, or a use of os.Stdout.
func (s *span) prints(stmts ...ast.Stmt) bool {
	found := false
	for _, st := range stmts {
		ast.Inspect(st, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				switch f := n.Fun.(type) {
				case *ast.Ident:
					found = found || f.Name == "print" || f.Name == "println"
				case *ast.SelectorExpr:
					if x, ok := f.X.(*ast.Ident); ok && x.Name == "fmt" && strings.HasPrefix(f.Sel.Name, "Print") {
						found = true
					}
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "os" && n.Sel.Name == "Stdout" {
					found = true
				}
			}
			return !found
		})
	}
	return found
}

// literals writes probed values (%T and %#v renderings) as Go source the
// task's scenario compiles: "main." qualifiers dropped (the scenario is in
// the package of the task's declarations), other qualifiers only of
// packages the scenario can name (its imports; standard packages added on
// use), only exported names of other packages, no address-bearing values.
type literals struct {
	pkgs  map[string]bool // package names the scenario can qualify with
	local map[string]bool // names the task declares: its declarations, types declared in main before the span
}

func newLiterals(t Task) literals {
	l := literals{pkgs: map[string]bool{}, local: map[string]bool{}}
	for name := range stdPackages {
		l.pkgs[name] = true
	}
	for _, im := range t.Imports {
		name, _, _ := strings.Cut(im, " ")
		l.pkgs[name] = true
	}
	if f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+t.Decls, 0); err == nil {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					l.local[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						l.local[sp.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							l.local[n.Name] = true
						}
					}
				}
			}
		}
	}
	if sp, ok := parseSpan(t.Before); ok {
		for _, st := range sp.stmts {
			if ds, ok := st.(*ast.DeclStmt); ok {
				if gd, ok := ds.Decl.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
					for _, s := range gd.Specs {
						l.local[s.(*ast.TypeSpec).Name.Name] = true
					}
				}
			}
		}
	}
	return l
}

// set writes name = the probe's value (var name T = value, or
// name := value, when declare). ok is false when the value cannot be
// written.
func (l literals) set(name string, pr Probe, declare bool) (string, bool) {
	if pr.Addr || pr.Value == "" {
		return "", false
	}
	if pr.Value == "<nil>" { // a nil interface: %T says <nil> too
		if !declare {
			return name + " = nil", true
		}
		return l.zero(name, pr)
	}
	val, ok := l.expr(pr.Value)
	if !ok {
		return "", false
	}
	if !declare {
		return name + " = " + val, true
	}
	if typ, ok := l.expr(pr.Type); ok {
		return "var " + name + " " + typ + " = " + val, true
	}
	e, err := parser.ParseExpr(val)
	if err != nil {
		return "", false
	}
	switch unparen(e).(type) {
	case *ast.CompositeLit, *ast.CallExpr: // a typed value
		return name + " := " + val, true
	}
	return "", false // an untyped constant would take its default type
}

// zero declares name at its probe's type's zero value, when the type can
// be written.
func (l literals) zero(name string, pr Probe) (string, bool) {
	if pr.Type == "<nil>" && (name == "err" || strings.HasSuffix(name, "Err")) {
		// A nil interface has no dynamic type to print; Go's naming
		// convention says which interface this one is.
		return "var " + name + " error", true
	}
	typ, ok := l.expr(pr.Type)
	if !ok {
		return "", false
	}
	return "var " + name + " " + typ, true
}

// expr rewrites a %T or %#v rendering as source the scenario compiles,
// ok false when it cannot.
func (l literals) expr(s string) (string, bool) {
	if s == "" || len(s) > maxLiteral || strings.Contains(s, "time.Location(") {
		return "", false
	}
	fset := token.NewFileSet()
	e, err := parser.ParseExprFrom(fset, "", s, 0)
	if err != nil {
		return "", false
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	var cuts [][2]int // the "main." of main.X
	ok := true
	var walk func(n ast.Node) bool
	walk = func(n ast.Node) bool {
		if !ok {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			ok = false
		case *ast.CallExpr:
			switch unparen(n.Fun).(type) {
			case *ast.StarExpr, *ast.FuncType, *ast.ChanType:
				// A pointer, func or channel converts only from nil (its
				// rendering otherwise holds an address).
				if len(n.Args) != 1 || !isNil(n.Args[0]) {
					ok = false
				}
			}
		case *ast.SelectorExpr:
			x, isIdent := n.X.(*ast.Ident)
			switch {
			case !isIdent:
				ok = false
			case x.Name == "main":
				ok = l.local[n.Sel.Name]
				cuts = append(cuts, [2]int{off(x.Pos()), off(n.Sel.Pos())})
			default:
				ok = l.pkgs[x.Name] && n.Sel.IsExported()
			}
			return false
		case *ast.Ident:
			ok = types.Universe.Lookup(n.Name) != nil || l.local[n.Name]
		case *ast.CompositeLit:
			foreign := false
			if sel, isSel := typeName(n.Type).(*ast.SelectorExpr); isSel {
				x, _ := sel.X.(*ast.Ident)
				foreign = x == nil || x.Name != "main"
			}
			if n.Type != nil {
				ast.Inspect(n.Type, walk)
			}
			for _, el := range n.Elts {
				kv, isKV := el.(*ast.KeyValueExpr)
				if !isKV {
					ast.Inspect(el, walk)
					continue
				}
				if key, isIdent := kv.Key.(*ast.Ident); isIdent {
					// A struct field: another package's must be exported.
					ok = ok && (!foreign || key.IsExported())
				} else {
					ast.Inspect(kv.Key, walk)
				}
				ast.Inspect(kv.Value, walk)
			}
			return false
		case *ast.StructType:
			// Field names are the type's own; check only field types.
			for _, f := range n.Fields.List {
				ast.Inspect(f.Type, walk)
			}
			return false
		}
		return ok
	}
	ast.Inspect(e, walk)
	if !ok {
		return "", false
	}
	for i := len(cuts) - 1; i >= 0; i-- {
		s = s[:cuts[i][0]] + s[cuts[i][1]:]
	}
	return s, true
}

func isNil(x ast.Expr) bool {
	id, ok := unparen(x).(*ast.Ident)
	return ok && id.Name == "nil"
}

// typeName is the root of a composite literal's type: T of T, *T, T[A]
// and T[A, B].
func typeName(x ast.Expr) ast.Expr {
	for {
		switch y := x.(type) {
		case *ast.StarExpr:
			x = y.X
		case *ast.ParenExpr:
			x = y.X
		case *ast.IndexExpr:
			x = y.X
		case *ast.IndexListExpr:
			x = y.X
		default:
			return x
		}
	}
}

func replaceFirst(re *regexp.Regexp, s, repl string) string {
	loc := re.FindStringSubmatchIndex(s)
	if loc == nil {
		return s
	}
	return s[:loc[0]] + string(re.ExpandString(nil, repl, s, loc)) + s[loc[1]:]
}

// perturb changes the first literal argument of the target call: a
// number grows by one, a string gets a suffix, a boolean flips.
func perturb(mask, name string) (string, bool) {
	fset := token.NewFileSet()
	src := "package p\nfunc _() {\n" + mask + "\n}\n"
	f, err := parser.ParseFile(fset, "", src, 0)
	if err != nil {
		return "", false
	}
	var lit ast.Expr
	ast.Inspect(f, func(n ast.Node) bool {
		if lit != nil {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok || !callsName(call, name) {
			return true
		}
		for _, a := range call.Args {
			ast.Inspect(a, func(m ast.Node) bool {
				if lit != nil {
					return false
				}
				switch x := m.(type) {
				case *ast.BasicLit:
					lit = x
				case *ast.Ident:
					if x.Name == "true" || x.Name == "false" {
						lit = x
					}
				}
				return true
			})
		}
		return true
	})
	if lit == nil {
		return "", false
	}
	start, end := fset.Position(lit.Pos()).Offset, fset.Position(lit.End()).Offset
	old := src[start:end]
	var repl string
	switch x := lit.(type) {
	case *ast.Ident:
		repl = map[string]string{"true": "false", "false": "true"}[x.Name]
	case *ast.BasicLit:
		switch x.Kind {
		case token.INT:
			n, err := strconv.ParseInt(old, 0, 64)
			if err != nil {
				return "", false
			}
			repl = strconv.FormatInt(n+1, 10)
		case token.FLOAT:
			repl = "(" + old + "+1)"
		case token.STRING:
			s, err := strconv.Unquote(old)
			if err != nil {
				return "", false
			}
			repl = strconv.Quote(s + "x")
		case token.CHAR:
			repl = "(" + old + "+1)"
		default:
			return "", false
		}
	}
	out := src[:start] + repl + src[end:]
	return out[len("package p\nfunc _() {\n") : len(out)-len("\n}\n")], true
}

// calledFunc is what a call calls, without explicit instantiation:
// lo.Map[int, string](...) → lo.Map.
func calledFunc(call *ast.CallExpr) ast.Expr {
	switch x := call.Fun.(type) {
	case *ast.IndexExpr:
		return x.X
	case *ast.IndexListExpr:
		return x.X
	}
	return call.Fun
}

func callsName(call *ast.CallExpr, name string) bool {
	switch x := calledFunc(call).(type) {
	case *ast.SelectorExpr:
		return x.Sel.Name == name
	case *ast.Ident:
		return x.Name == name
	}
	return false
}

type selCall struct{ pkg, name string }

// calledSelectors lists the X.Name(...) calls of a file; pkg is X when X
// is an identifier, "" otherwise.
func calledSelectors(f *ast.File) []selCall {
	var out []selCall
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := calledFunc(call).(*ast.SelectorExpr); ok {
			x := "" // a method call on an expression: x().M()
			if id, ok := sel.X.(*ast.Ident); ok {
				x = id.Name
			}
			out = append(out, selCall{x, sel.Sel.Name})
		}
		return true
	})
	return out
}
