package goharness

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/runners/goapi"
)

// Spy instruments target APIs of a module tree for harness builds, the
// NovelAPIBench target-API spy: a call at the top of each target's body
// that attributes and counts the call, and per instrumented package a
// file holding the counters and the attribution hook. Nothing in the tree
// changes: `go test -overlay` swaps the files in at build time. The tree
// must not be in the module cache (the go command refuses overlays
// there), which is why modules are used from the store's own verified
// copy through a replace directive.
//
// Every call is attributed by its caller's frame: indirect when the
// caller is the module's own code (a sibling API that uses the target);
// otherwise the harness's hook (LacunaSpyHook, set before the scenario
// runs) says from the caller's file and line whether the call is the
// solver's (direct) or the task's context's. Only the solver's calls
// count as direct, hand their arguments to the harness (LacunaSpyCall:
// the solver must pass the task's data), have the functions they pass
// counted as callbacks, and are substituted when the hook asks for it:
// the target runs, then its results are replaced by other well-formed
// values of the same type and shape derived from them (numbers one more,
// booleans flipped, strings shifted, element by element; see
// lacunaPerturb); a target whose results hold nothing that can change
// (none but errors, or objects kept as they are: a builder returning its
// receiver) runs on substituted copies of its arguments instead. The
// harness requires a solution to compute, from the
// substituted results, what the reference computes from them (see
// Check): a value computed another way, or hard-coded after a call made
// for show, does not follow.
type Spy struct {
	// Overlay is the go test -overlay file.
	Overlay string
	// Slots maps an API identity to its counter index.
	Slots map[string]int
	// Access maps an API identity to the Go expression, valid in a
	// package importing the target's package under its own name, that
	// reads its counters: pkgname.LacunaSpy[i].
	Access map[string]string
}

// NewSpy writes the overlay for targets (functions and methods with a Go
// body) of the module at modDir (module path modPath) into dir.
func NewSpy(modDir, modPath string, targets []goapi.API, dir string) (*Spy, error) {
	byFile := map[string][]goapi.API{}
	for _, a := range targets {
		if a.Kind != "func" && a.Kind != "method" {
			return nil, fmt.Errorf("spy: %s is a %s; only functions and methods can be spied on", a.ID, a.Kind)
		}
		byFile[a.File] = append(byFile[a.File], a)
	}
	s := &Spy{Slots: map[string]int{}, Access: map[string]string{}}
	replace := map[string]string{}
	pkgSlots := map[string]int{} // package dir → slots used
	pkgName := map[string]string{}
	files := make([]string, 0, len(byFile))
	for f := range byFile {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, rel := range files {
		full := filepath.Join(modDir, filepath.FromSlash(rel))
		src, err := os.ReadFile(full)
		if err != nil {
			return nil, fmt.Errorf("spy: %w", err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, full, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("spy: %w", err)
		}
		pdir := filepath.Dir(full)
		pkgName[pdir] = f.Name.Name
		var edits []textEdit
		for _, a := range byFile[rel] {
			fd := funcAt(fset, f, a)
			if fd == nil || fd.Body == nil {
				return nil, fmt.Errorf("spy: %s has no Go body at %s:%d", a.ID, rel, a.Line)
			}
			slot := pkgSlots[pdir]
			pkgSlots[pdir]++
			s.Slots[a.ID] = slot
			s.Access[a.ID] = fmt.Sprintf("%s.LacunaSpy[%d]", f.Name.Name, slot)
			// Same lines: positions in panics and compiler messages stay put.
			results, names := namedResults(src, fset, fd)
			params, renames := namedParams(fset, fd)
			edits = append(edits, renames...)
			args := "nil"
			if len(params) > 0 {
				args = "func() []interface{} { return []interface{}{" + strings.Join(params, ", ") + "} }"
			}
			// A call with results other than errors that hold data has them
			// substituted when it returns; one without (it works on its
			// arguments and receiver), or whose results are objects the
			// substitution keeps (a builder returning its receiver), runs on
			// substituted arguments instead.
			inputs := "lacunaPerturbParams()"
			if in := params[min(len(params), receivers(fd)):]; len(in) > 0 {
				inputs = "lacunaPerturbParams(&" + strings.Join(in, ", &") + ")"
			}
			sub := inputs
			if dataResults(src, fset, fd) {
				results := "&" + strings.Join(names, ", &")
				sub = fmt.Sprintf("if lacunaOpaque(%s) { %s } else { defer lacunaSubstitute([]interface{}{%s}, %s) }", results, inputs, strings.Join(params, ", "), results)
			}
			text := fmt.Sprintf("if lacunaS, lacunaCF := lacunaSpyHit(%d, %s); lacunaS { if lacunaCF { %s };%s };", slot, args, sub, callbackWrappers(src, fset, fd, slot))
			lbrace := fset.Position(fd.Body.Lbrace).Offset + 1
			edits = append(edits, textEdit{lbrace, lbrace, text})
			if results != "" {
				edits = append(edits, textEdit{fset.Position(fd.Type.Results.Pos()).Offset, fset.Position(fd.Type.Results.End()).Offset, results})
			}
		}
		sort.Slice(edits, func(i, j int) bool { return edits[i].at > edits[j].at })
		out := append([]byte(nil), src...)
		for _, e := range edits {
			out = append(out[:e.at], append([]byte(e.text), out[e.end:]...)...)
		}
		repl := filepath.Join(dir, fmt.Sprintf("spied%d_%s", len(replace), filepath.Base(full)))
		if err := os.WriteFile(repl, out, 0o644); err != nil {
			return nil, err
		}
		replace[full] = repl
	}
	for pdir, n := range pkgSlots {
		counters := filepath.Join(dir, fmt.Sprintf("counters%d.go", len(replace)))
		if err := os.WriteFile(counters, []byte(spyCounters(pkgName[pdir], modPath, n)), 0o644); err != nil {
			return nil, err
		}
		replace[filepath.Join(pdir, "zz_lacuna_spy.go")] = counters
	}
	b, _ := json.MarshalIndent(map[string]any{"Replace": replace}, "", "  ")
	s.Overlay = filepath.Join(dir, "overlay.json")
	return s, os.WriteFile(s.Overlay, b, 0o644)
}

// namedResults gives every result of fd a name, so that a substituted
// call's deferred lacunaSubstitute can replace them: the results list rewritten ("" when fd's results are all named
// already, or it has none) and the names in order. Unnamed and _ results
// become lacunaR0, lacunaR1, ... The types are not restated inside the
// body, where a parameter may shadow a type's name (url *url.URL).
func namedResults(src []byte, fset *token.FileSet, fd *ast.FuncDecl) (results string, names []string) {
	if fd.Type.Results == nil {
		return "", nil
	}
	var fields []string
	renamed := false
	for _, field := range fd.Type.Results.List {
		typ := string(src[fset.Position(field.Type.Pos()).Offset:fset.Position(field.Type.End()).Offset])
		if len(field.Names) == 0 {
			name := fmt.Sprintf("lacunaR%d", len(names))
			names = append(names, name)
			fields = append(fields, name+" "+typ)
			renamed = true
			continue
		}
		for _, n := range field.Names {
			name := n.Name
			if name == "_" {
				name = fmt.Sprintf("lacunaR%d", len(names))
				renamed = true
			}
			names = append(names, name)
			fields = append(fields, name+" "+typ)
		}
	}
	if !renamed {
		return "", names
	}
	return "(" + strings.Join(fields, ", ") + ")", names
}

// dataResults says fd returns something other than errors.
func dataResults(src []byte, fset *token.FileSet, fd *ast.FuncDecl) bool {
	if fd.Type.Results == nil {
		return false
	}
	for _, f := range fd.Type.Results.List {
		if string(src[fset.Position(f.Type.Pos()).Offset:fset.Position(f.Type.End()).Offset]) != "error" {
			return true
		}
	}
	return false
}

// receivers is how many of namedParams' names are fd's receiver.
func receivers(fd *ast.FuncDecl) int {
	if fd.Recv == nil {
		return 0
	}
	return 1
}

// textEdit replaces src[at:end] with text.
type textEdit struct {
	at, end int
	text    string
}

// namedParams gives the receiver and every parameter of fd a name, so
// that the spy can hand their values to the harness (the arguments a
// call received) and to the substitution: the names in order (receiver
// first) and the edits that name the unnamed and blank ones, in place,
// so no position moves. Unnamed and _ ones become lacunaP0, lacunaP1, ...
func namedParams(fset *token.FileSet, fd *ast.FuncDecl) (names []string, edits []textEdit) {
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	lists := []*ast.FieldList{fd.Recv, fd.Type.Params}
	for _, list := range lists {
		if list == nil {
			continue
		}
		for _, field := range list.List {
			if len(field.Names) == 0 {
				name := fmt.Sprintf("lacunaP%d", len(names))
				names = append(names, name)
				edits = append(edits, textEdit{off(field.Type.Pos()), off(field.Type.Pos()), name + " "})
				continue
			}
			for _, n := range field.Names {
				name := n.Name
				if name == "_" {
					name = fmt.Sprintf("lacunaP%d", len(names))
					edits = append(edits, textEdit{off(n.Pos()), off(n.End()), name})
				}
				names = append(names, name)
			}
		}
	}
	return names, edits
}

// callbackWrappers wraps every parameter of function type (written as a
// func literal type) so that calls into it are counted: the behavioural
// layer compares them with the reference's. (What the target hands them
// is not substituted: that would change what the target computes, its
// results' shape with it.) All on the line of the body's brace, so
// positions do not move.
func callbackWrappers(src []byte, fset *token.FileSet, fd *ast.FuncDecl, slot int) string {
	text := func(n ast.Node) string {
		return string(src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])
	}
	var b strings.Builder
	k := 0
	for _, field := range fd.Type.Params.List {
		ft, ok := field.Type.(*ast.FuncType)
		if !ok {
			continue
		}
		for _, name := range field.Names {
			if name.Name == "_" {
				continue
			}
			var params, args []string
			variadic := false
			for _, p := range ft.Params.List {
				n := max(1, len(p.Names))
				for j := 0; j < n; j++ {
					a := fmt.Sprintf("lacunaA%d", len(args))
					typ := text(p.Type)
					if e, ok := p.Type.(*ast.Ellipsis); ok {
						typ, variadic = "..."+text(e.Elt), true
					}
					params = append(params, a+" "+typ)
					args = append(args, a)
				}
			}
			call := "lacunaOrig" + fmt.Sprint(k) + "(" + strings.Join(args, ", ")
			if variadic {
				call += "..."
			}
			call += ")"
			results := ""
			if ft.Results != nil {
				results = " " + text(ft.Results)
				call = "return " + call
			}
			fmt.Fprintf(&b, " if %[1]s != nil { lacunaOrig%[2]d := %[1]s; %[1]s = func(%[3]s)%[4]s { LacunaSpy[%[5]d].Callbacks.Add(1); %[6]s } };",
				name.Name, k, strings.Join(params, ", "), results, slot, call)
			k++
		}
	}
	return b.String()
}

// funcAt finds the declaration of a function or method API.
func funcAt(fset *token.FileSet, f *ast.File, a goapi.API) *ast.FuncDecl {
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != a.Name {
			continue
		}
		recv := ""
		if fd.Recv != nil && len(fd.Recv.List) == 1 {
			recv, _ = goapi.ReceiverName(fd.Recv.List[0].Type)
		}
		if recv == a.Receiver {
			return fd
		}
	}
	return nil
}

// spyCounters is the file added to an instrumented package.
func spyCounters(pkg, modPath string, n int) string {
	return fmt.Sprintf(`// Code generated by lacuna (target-API spy); DO NOT EDIT.

package %s

import (
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	lacunatime "time"
)

// LacunaSpyCounter counts calls into one spied API: the solver's
// (Direct), the task's context's (Context), the module's own (Indirect),
// and calls into functions the solver passed it (Callbacks).
type LacunaSpyCounter struct{ Direct, Context, Indirect, Callbacks atomic.Int64 }

// LacunaSpy holds this package's counters, one per spied API.
var LacunaSpy [%d]LacunaSpyCounter

// LacunaSpyHook attributes a call from outside the module by its
// caller's file and line: whether it is the solver's, and whether to
// substitute its results. The harness sets it before any scenario
// runs; nil attributes every such call to the context.
var LacunaSpyHook func(file string, line int) (solver, substitute bool)

// LacunaSpyCall, when set, is told of every call the hook attributes to
// the solver: the API's slot and the arguments (the receiver first; nil
// when there are none) as the call received them, which the harness
// compares with the reference's. It says whether the call may be
// substituted when the hook asks for that: the harness substitutes only
// its target's calls (and, in a whole program, only those on the data
// the reference's span passed).
var LacunaSpyCall func(slot int, args []interface{}) (substitute bool)

// lacunaSpyHit runs first in a spied API: the frame above the API is its
// caller, in this module (indirect) or not (the hook decides). A call
// made through reflect (Value.Call and the runtime's trampolines) is the
// call of the code that made it: those frames are passed over. args
// gives the call's arguments (nil: it has none).
func lacunaSpyHit(slot int, args func() []interface{}) (solver, substitute bool) {
	pcs := make([]uintptr, 16)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	frame, more := frames.Next()
	for more && (strings.HasPrefix(frame.Function, "reflect.") || strings.HasPrefix(frame.Function, "runtime.")) {
		frame, more = frames.Next()
	}
	if fn := frame.Function; strings.HasPrefix(fn, %q) || strings.HasPrefix(fn, %q) {
		LacunaSpy[slot].Indirect.Add(1)
		return false, false
	}
	if h := LacunaSpyHook; h != nil {
		solver, substitute = h(frame.File, frame.Line)
	}
	if solver {
		LacunaSpy[slot].Direct.Add(1)
		if h := LacunaSpyCall; h != nil {
			var a []interface{}
			if args != nil {
				a = args()
			}
			substitute = h(slot, a) && substitute
		}
	} else {
		LacunaSpy[slot].Context.Add(1)
	}
	return solver, substitute
}

// lacunaSubstitute runs when a substituted call returns (deferred): it
// replaces the results at ptrs with other well-formed values of the same
// type and shape, derived from them (lacunaPerturb). A result that shares
// its memory with an argument (the target changed its input in place and
// returned it) is changed in place, so both views agree. An error that is
// not nil becomes one whose message is shifted and which unwraps to it
// (errors.Is and errors.As still find what they found); nil stays nil.
func lacunaSubstitute(args []interface{}, ptrs ...interface{}) {
	for _, p := range ptrs {
		v := reflect.ValueOf(p).Elem()
		if lacunaAliases(v, args) {
			lacunaPerturbInPlace(v, 0)
		} else {
			v.Set(lacunaPerturb(v, 0))
		}
	}
}

// lacunaPerturbParams substitutes the arguments of a call that returns
// nothing the substitution can change, before its body runs: the
// parameters at ptrs get perturbed copies (the caller's data is not
// touched), so what the call does to its receiver or leaves in its
// outputs is the target's work on other data. A sequence (a function
// whose one parameter is the function it yields to: iter.Seq) yields
// perturbed values; other functions (callbacks, whose results would
// change what the target computes) and channels are kept.
func lacunaPerturbParams(ptrs ...interface{}) {
	for _, p := range ptrs {
		v := reflect.ValueOf(p).Elem()
		switch t := v.Type(); {
		case t.Kind() == reflect.Func:
			if t.NumOut() == 0 && t.NumIn() == 1 && t.In(0).Kind() == reflect.Func {
				v.Set(lacunaPerturb(v, 0))
			}
		case t.Kind() != reflect.Chan:
			v.Set(lacunaPerturb(v, 0))
		}
	}
}

// lacunaOpaque says no result at ptrs holds data the substitution can
// change (an error alone does not count: a call that returns only one
// runs on substituted arguments, which tells more).
func lacunaOpaque(ptrs ...interface{}) bool {
	errType := reflect.TypeOf((*error)(nil)).Elem()
	for _, p := range ptrs {
		if t := reflect.TypeOf(p).Elem(); t != errType && lacunaChangeable(t, 0) {
			return false
		}
	}
	return true
}

// lacunaChangeable says lacunaPerturb changes some values of type t.
func lacunaChangeable(t reflect.Type, depth int) bool {
	if depth > 6 {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		return true
	case reflect.Slice, reflect.Array:
		return lacunaChangeable(t.Elem(), depth+1)
	case reflect.Map:
		if t.Elem().Size() == 0 {
			return lacunaChangeable(t.Key(), depth+1)
		}
		return lacunaChangeable(t.Elem(), depth+1)
	case reflect.Struct:
		if t == reflect.TypeOf(lacunatime.Time{}) {
			return true
		}
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).IsExported() && lacunaChangeable(t.Field(i).Type, depth+1) {
				return true
			}
		}
	case reflect.Pointer:
		return lacunaPlain(t.Elem()) && lacunaChangeable(t.Elem(), depth+1)
	case reflect.Interface:
		return true
	case reflect.Func:
		for i := 0; i < t.NumOut(); i++ {
			if lacunaChangeable(t.Out(i), depth+1) {
				return true
			}
		}
		for i := 0; i < t.NumIn(); i++ {
			if f := t.In(i); f.Kind() == reflect.Func {
				for j := 0; j < f.NumIn(); j++ {
					if lacunaChangeable(f.In(j), depth+1) {
						return true
					}
				}
			}
		}
	}
	return false
}

// lacunaAddr is where a value's memory is (0: it holds none).
func lacunaAddr(v reflect.Value) uintptr {
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.Pointer:
		if !v.IsNil() {
			return v.Pointer()
		}
	}
	return 0
}

func lacunaAliases(v reflect.Value, args []interface{}) bool {
	p := lacunaAddr(v)
	if p == 0 {
		return false
	}
	for _, a := range args {
		if a != nil && lacunaAddr(reflect.ValueOf(a)) == p {
			return true
		}
	}
	return false
}

// lacunaShift moves every ASCII letter and digit to the next (z to a, 9
// to 0): the same length, another value.
func lacunaShift(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c == 'z':
			b[i] = 'a'
		case c == 'Z':
			b[i] = 'A'
		case c == '9':
			b[i] = '0'
		case c >= 'a' && c < 'z', c >= 'A' && c < 'Z', c >= '0' && c < '9':
			b[i] = c + 1
		}
	}
	return string(b)
}

// lacunaPerturb is another value of v's type and shape: numbers grow by
// one, booleans flip, strings shift their letters and digits; slices,
// arrays, maps' values (keys of a set), exported struct fields and what
// pointers to plain data point to change element by element, in copies; a
// function's results (and the values it hands to the callbacks it is
// given, as an iterator yields them) change the same way. Errors,
// channels, structs with unexported fields behind pointers and values
// too deep are kept.
func lacunaPerturb(v reflect.Value, depth int) reflect.Value {
	if !v.IsValid() || depth > 6 {
		return v
	}
	t := v.Type()
	out := reflect.New(t).Elem()
	switch v.Kind() {
	case reflect.Bool:
		out.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		out.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		out.SetUint(v.Uint() + 1)
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if f-f != 0 { // NaN, ±Inf
			return v
		}
		out.SetFloat(f + 1)
	case reflect.Complex64, reflect.Complex128:
		out.SetComplex(v.Complex() + 1)
	case reflect.String:
		out.SetString(lacunaShift(v.String()))
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out = reflect.MakeSlice(t, v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			out.Index(i).Set(lacunaPerturb(v.Index(i), depth+1))
		}
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			out.Index(i).Set(lacunaPerturb(v.Index(i), depth+1))
		}
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out = reflect.MakeMapWithSize(t, v.Len())
		set := t.Elem().Size() == 0
		it := v.MapRange()
		for it.Next() {
			if set {
				out.SetMapIndex(lacunaPerturb(it.Key(), depth+1), it.Value())
			} else {
				out.SetMapIndex(it.Key(), lacunaPerturb(it.Value(), depth+1))
			}
		}
	case reflect.Struct:
		if t == reflect.TypeOf(lacunatime.Time{}) {
			out.Set(reflect.ValueOf(v.Interface().(lacunatime.Time).Add(lacunatime.Second)))
			return out
		}
		out.Set(v)
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).IsExported() && out.Field(i).CanSet() {
				out.Field(i).Set(lacunaPerturb(v.Field(i), depth+1))
			}
		}
	case reflect.Pointer:
		if v.IsNil() || !lacunaPlain(t.Elem()) {
			return v
		}
		out = reflect.New(t.Elem())
		out.Elem().Set(lacunaPerturb(v.Elem(), depth+1))
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		if err, ok := v.Interface().(error); ok && t.Implements(reflect.TypeOf((*error)(nil)).Elem()) {
			out.Set(reflect.ValueOf(lacunaSubstitutedError{lacunaShift(err.Error()), err}))
			return out
		}
		out.Set(lacunaPerturb(v.Elem(), depth+1))
	case reflect.Func:
		if v.IsNil() {
			return v
		}
		// A copy: v may be the very variable the wrapper replaces.
		orig := reflect.New(t).Elem()
		orig.Set(v)
		return reflect.MakeFunc(t, func(in []reflect.Value) []reflect.Value {
			args := make([]reflect.Value, len(in))
			for i, a := range in {
				args[i] = a
				if a.Kind() == reflect.Func && !a.IsNil() {
					args[i] = lacunaPerturbIn(a, depth+1)
				}
			}
			var res []reflect.Value
			if t.IsVariadic() {
				res = orig.CallSlice(args)
			} else {
				res = orig.Call(args)
			}
			for i := range res {
				res[i] = lacunaPerturb(res[i], depth+1)
			}
			return res
		})
	default:
		return v
	}
	return out
}

// lacunaSubstitutedError is a substituted error: its message shifted
// (lacunaShift), the original behind it.
type lacunaSubstitutedError struct {
	msg string
	err error
}

func (e lacunaSubstitutedError) Error() string { return e.msg }
func (e lacunaSubstitutedError) Unwrap() error { return e.err }

// lacunaPerturbIn wraps a callback so that what it is given is perturbed
// (an iterator's yield receives other values).
func lacunaPerturbIn(f reflect.Value, depth int) reflect.Value {
	t := f.Type()
	return reflect.MakeFunc(t, func(in []reflect.Value) []reflect.Value {
		args := make([]reflect.Value, len(in))
		for i, a := range in {
			args[i] = lacunaPerturb(a, depth+1)
		}
		if t.IsVariadic() {
			return f.CallSlice(args)
		}
		return f.Call(args)
	})
}

// lacunaPlain says a pointer to t may be replaced by a pointer to a
// perturbed copy: t is not a struct with unexported fields (an object
// whose identity and invariants the caller relies on).
func lacunaPlain(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return t.Kind() != reflect.Func && t.Kind() != reflect.Chan && t.Kind() != reflect.UnsafePointer
	}
	for i := 0; i < t.NumField(); i++ {
		if !t.Field(i).IsExported() {
			return false
		}
	}
	return true
}

// lacunaPerturbInPlace changes what v refers to in place: a slice's
// elements, a map's values, what a pointer to plain data points to.
func lacunaPerturbInPlace(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			v.Index(i).Set(lacunaPerturb(v.Index(i), depth+1))
		}
	case reflect.Map:
		if v.IsNil() || v.Type().Elem().Size() == 0 {
			return
		}
		it := v.MapRange()
		var keys, vals []reflect.Value
		for it.Next() {
			keys, vals = append(keys, it.Key()), append(vals, it.Value())
		}
		for i, k := range keys {
			v.SetMapIndex(k, lacunaPerturb(vals[i], depth+1))
		}
	case reflect.Pointer:
		if !v.IsNil() && lacunaPlain(v.Type().Elem()) && v.Elem().CanSet() {
			v.Elem().Set(lacunaPerturb(v.Elem(), depth+1))
		}
	}
}
`, pkg, n, modPath+".", modPath+"/")
}
