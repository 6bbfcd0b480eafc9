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
// count as direct, only functions the solver passed are counted as
// callbacks, and only the solver's calls are answered counterfactually:
// when the hook asks for it, the target returns the zero values of its
// results without running its body (a function result being one that does
// nothing, a channel a closed one: see lacunaEmpty). A harness compares what the
// scenario computes with and without the target's work (see Check): a
// value that does not change was not computed through the target.
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
		// An edit replaces src[at:end] with text.
		type edit struct {
			at, end int
			text    string
		}
		var edits []edit
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
			cf := "return"
			if len(names) > 0 {
				cf = "lacunaEmpty(&" + strings.Join(names, ", &") + "); return"
			}
			text := fmt.Sprintf("if lacunaS, lacunaCF := lacunaSpyHit(%d); lacunaS { if lacunaCF { %s };%s };", slot, cf, callbackWrappers(src, fset, fd, slot))
			lbrace := fset.Position(fd.Body.Lbrace).Offset + 1
			edits = append(edits, edit{lbrace, lbrace, text})
			if results != "" {
				edits = append(edits, edit{fset.Position(fd.Type.Results.Pos()).Offset, fset.Position(fd.Type.Results.End()).Offset, results})
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

// namedResults gives every result of fd a name, so that a counterfactual
// call can return them with a bare return after lacunaEmpty has made them
// usable: the results list rewritten ("" when fd's results are all named
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

// callbackWrappers wraps every parameter of function type (written as a
// func literal type) so that calls into it are counted: the behavioural
// layer compares them with the reference's. All on the line of the body's
// brace, so positions do not move.
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
)

// LacunaSpyCounter counts calls into one spied API: the solver's
// (Direct), the task's context's (Context), the module's own (Indirect),
// and calls into functions the solver passed it (Callbacks).
type LacunaSpyCounter struct{ Direct, Context, Indirect, Callbacks atomic.Int64 }

// LacunaSpy holds this package's counters, one per spied API.
var LacunaSpy [%d]LacunaSpyCounter

// LacunaSpyHook attributes a call from outside the module by its
// caller's file and line: whether it is the solver's, and whether to
// answer it counterfactually. The harness sets it before any scenario
// runs; nil attributes every such call to the context.
var LacunaSpyHook func(file string, line int) (solver, counterfactual bool)

// lacunaSpyHit runs first in a spied API: the frame above the API is its
// caller, in this module (indirect) or not (the hook decides). A call
// made through reflect (Value.Call and the runtime's trampolines) is the
// call of the code that made it: those frames are passed over.
func lacunaSpyHit(slot int) (solver, counterfactual bool) {
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
		solver, counterfactual = h(frame.File, frame.Line)
	}
	if solver {
		LacunaSpy[slot].Direct.Add(1)
	} else {
		LacunaSpy[slot].Context.Add(1)
	}
	return solver, counterfactual
}

// lacunaEmpty makes the counterfactual results at ptrs usable where their
// zero values would stop the caller by themselves: a function becomes
// one that does nothing and returns zero values (an empty sequence), a
// channel one that is closed. What the caller computes from them then
// shows whether it used them. (interface{}: the module's go version may
// predate any.)
func lacunaEmpty(ptrs ...interface{}) {
	for _, p := range ptrs {
		v := reflect.ValueOf(p).Elem()
		t := v.Type()
		switch {
		case v.Kind() == reflect.Func:
			v.Set(reflect.MakeFunc(t, func([]reflect.Value) []reflect.Value {
				out := make([]reflect.Value, t.NumOut())
				for i := range out {
					out[i] = reflect.Zero(t.Out(i))
				}
				return out
			}))
		case v.Kind() == reflect.Chan && t.ChanDir()&reflect.RecvDir != 0:
			c := reflect.MakeChan(reflect.ChanOf(reflect.BothDir, t.Elem()), 0)
			c.Close()
			v.Set(c.Convert(t))
		}
	}
}
`, pkg, n, modPath+".", modPath+"/")
}
