package goharness

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"

	"github.com/lacuna-dev/lacuna/runners/goapi"
	"github.com/lacuna-dev/lacuna/runners/gotool"
)

// Observation is what one run of a task's scenario produced: what main
// printed, the probed variables, the target's calls, a panic.
type Observation struct {
	Output   string           `json:"output"`
	Probes   map[string]Probe `json:"probes"`
	Direct   int64            `json:"direct"`
	Indirect int64            `json:"indirect"`
	// Callbacks counts calls the target made into the functions it was
	// given (the behavioural layer).
	Callbacks int64  `json:"callbacks"`
	Panic     string `json:"panic,omitempty"`
	TimedOut  bool   `json:"timed_out,omitempty"`
	// Leftover counts the goroutines the scenario left running after it
	// ended (and a short grace period).
	Leftover int64 `json:"leftover,omitempty"`
}

// Probe describes a value: type, length (-1 when it has none), nil-ness
// and its %#v rendering.
type Probe struct {
	Type  string `json:"type"`
	Len   int    `json:"len"`
	Nil   bool   `json:"nil"`
	Value string `json:"value"`
	// Addr says the value holds a non-nil pointer, func or channel, whose
	// printed form carries an address that differs from run to run: only
	// its structure is compared. Decided from the value's type and
	// contents, not from how it prints (unsigned integers print as 0x…).
	Addr bool `json:"addr,omitempty"`
}

// EndProbe is the probe the scenario records as its last statement: a
// solution that leaves the scenario early (runtime.Goexit, a recovered
// panic that skips the rest) fails the runtime layer. CheckSpan keeps the
// solution from naming the probe function or returning.
const EndProbe = "lacuna:end"

// Harness renders a task with a solution as test unit i of a batch: the
// scenario (main with the solution in place of the span, probes after
// it) run under the target-API spy. With expect nil it only observes (the
// execute step, run on the reference); with expect set it asserts in three
// layers against it (structural: types, lengths, nil-ness; comparative:
// values and output; behavioural: how often the target calls back into the
// functions it is given; all under the spy: the target must be called
// directly) and prints which layers failed.
//
// Methods the scenario's helper declarations define are instrumented too:
// calls into them from modPath's code (the target using a type the caller
// gave it through an interface) count with the callbacks.
func Harness(t Task, solution string, i int, spyAccess, spyImport, modPath string, expect *Observation) gotool.Unit {
	name := gotool.UnitName("Test", i)
	scenario := gotool.UnitName("lacunaScenario", i)
	want := ""
	if expect != nil {
		b, _ := json.Marshal(expect)
		want = string(b)
	}
	return gotool.Unit{
		Group: "tasks",
		Source: func(pkg string, declared map[string]string) string {
			var b strings.Builder
			fmt.Fprintf(&b, "package %s\n\n", pkg)
			decls := ""
			if t.Decls != "" {
				if _, ok := declared["decls:"+t.Decls]; !ok {
					declared["decls:"+t.Decls] = t.Decls
					decls = instrumentMethods(t.Decls)
				}
			}
			body := fmt.Sprintf("%s\n\nfunc %s(lacunaProbe func(string, any)) {%s\n%s\n", decls, scenario, t.Before, solution)
			for _, v := range t.Keep {
				body += fmt.Sprintf("\t_ = %s\n", v)
			}
			for _, p := range t.Probes {
				body += fmt.Sprintf("\tlacunaProbe(%q, %s)\n", p, p)
			}
			body += t.After + "\n\tlacunaProbe(" + strconv.Quote(EndProbe) + ", true)\n}\n"
			for _, im := range usedImports(t.Imports, body) {
				b.WriteString("import " + im + "\n")
			}
			for _, im := range stdImports(t.Imports, body) {
				b.WriteString("import " + im + "\n")
			}
			b.WriteString("import lacunatesting \"testing\"\n")
			fmt.Fprintf(&b, "import lacunaspied %q\n", spyImport)
			if _, ok := declared["lacunaRun"]; !ok {
				declared["lacunaRun"] = harnessRuntime
				b.WriteString("import lacunareflect \"reflect\"\nimport lacunajson \"encoding/json\"\nimport lacunafmt \"fmt\"\nimport lacunaio \"io\"\nimport lacunaos \"os\"\nimport lacunastrings \"strings\"\nimport lacunatime \"time\"\nimport lacunadebug \"runtime/debug\"\nimport lacunaruntime \"runtime\"\nimport lacunaatomic \"sync/atomic\"\n")
				// Types the scenario declares print as PKG.T: name them
				// main.T, as in the standalone program, whatever package
				// the batch put this harness in.
				fmt.Fprintf(&b, "\nconst lacunaSelf = %q\n", pkg+".")
				fmt.Fprintf(&b, "\nconst lacunaModule = %q\n", modPath)
				b.WriteString(harnessRuntime)
			}
			b.WriteString(body)
			counter := "lacunaspied." + strings.SplitN(spyAccess, ".", 2)[1]
			fmt.Fprintf(&b, "\nfunc %s(t *lacunatesting.T) {\n\tlacunaCheck(t, lacunaRun(%s, func() (int64, int64, int64) { return %s.Direct.Load(), %s.Indirect.Load(), %s.Callbacks.Load() + lacunaUserCallbacks.Load() }), %q)\n}\n",
				name, scenario, counter, counter, counter, want)
			return b.String()
		},
		Clashes: func(declared map[string]string) bool {
			if t.Decls == "" {
				return false
			}
			for _, name := range topNames(t.Decls) {
				for k := range declared {
					if strings.HasPrefix(k, "decls:") && k != "decls:"+t.Decls && containsDecl(k, name) {
						return true
					}
				}
			}
			return false
		},
	}
}

// instrumentMethods adds a lacunaUserCallback() call at the top of every
// method the declarations define, on the line of the brace.
func instrumentMethods(decls string) string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", "package p\n"+decls, parser.SkipObjectResolution)
	if err != nil {
		return decls
	}
	src := "package p\n" + decls
	var at []int
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && fd.Body != nil {
			at = append(at, fset.Position(fd.Body.Lbrace).Offset+1)
		}
	}
	for k := len(at) - 1; k >= 0; k-- {
		src = src[:at[k]] + "lacunaUserCallback();" + src[at[k]:]
	}
	return strings.TrimPrefix(src, "package p\n")
}

// usedImports keeps the imports code refers to (all of them when it does
// not parse: the compiler then reports the real problem).
func usedImports(imports []string, code string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+code, 0)
	if err != nil {
		return imports
	}
	roots := goapi.SelectorRoots(f)
	var out []string
	for _, im := range imports {
		name, _, _ := strings.Cut(im, " ")
		if name == "_" || name == "." || roots[name] {
			out = append(out, im)
		}
	}
	return out
}

var topDecl = regexp.MustCompile(`(?m)^(?:func|type|var|const) (?:\([^)]*\) )?([A-Za-z_][A-Za-z0-9_]*)`)

func topNames(src string) []string {
	var out []string
	for _, m := range topDecl.FindAllStringSubmatch(src, -1) {
		out = append(out, m[1])
	}
	return out
}

func containsDecl(src, name string) bool {
	for _, n := range topNames(src) {
		if n == name {
			return true
		}
	}
	return false
}

// harnessRuntime is declared once per harness package.
const harnessRuntime = `
type lacunaProbeValue struct {
	Type  string ` + "`json:\"type\"`" + `
	Len   int    ` + "`json:\"len\"`" + `
	Nil   bool   ` + "`json:\"nil\"`" + `
	Value string ` + "`json:\"value\"`" + `
	Addr  bool   ` + "`json:\"addr,omitempty\"`" + `
}

type lacunaObservation struct {
	Output   string                      ` + "`json:\"output\"`" + `
	Probes   map[string]lacunaProbeValue ` + "`json:\"probes\"`" + `
	Direct   int64                       ` + "`json:\"direct\"`" + `
	Indirect int64                       ` + "`json:\"indirect\"`" + `
	Callbacks int64                      ` + "`json:\"callbacks\"`" + `
	Panic    string                      ` + "`json:\"panic,omitempty\"`" + `
	TimedOut bool                        ` + "`json:\"timed_out,omitempty\"`" + `
	Leftover int64                       ` + "`json:\"leftover,omitempty\"`" + `
}

func lacunaDescribe(v any) lacunaProbeValue {
	self := func(s string) string { return lacunastrings.ReplaceAll(s, lacunaSelf, "main.") }
	p := lacunaProbeValue{Type: self(lacunafmt.Sprintf("%T", v)), Len: -1, Value: self(lacunafmt.Sprintf("%#v", v))}
	if v == nil {
		p.Nil = true
		return p
	}
	rv := lacunareflect.ValueOf(v)
	p.Addr = lacunaHoldsAddress(rv, 0)
	switch rv.Kind() {
	case lacunareflect.Slice, lacunareflect.Map, lacunareflect.Chan:
		p.Len, p.Nil = rv.Len(), rv.IsNil()
	case lacunareflect.String, lacunareflect.Array:
		p.Len = rv.Len()
	case lacunareflect.Pointer, lacunareflect.Func, lacunareflect.Interface:
		p.Nil = rv.IsNil()
	}
	return p
}

const lacunaScenarioTimeout = 10 * lacunatime.Second

// lacunaUserCallbacks counts calls from the library into methods the
// scenario's own types define (an interface argument's implementation).
var lacunaUserCallbacks lacunaatomic.Int64

func lacunaUserCallback() {
	pcs := make([]uintptr, 1)
	lacunaruntime.Callers(3, pcs)
	frame, _ := lacunaruntime.CallersFrames(pcs).Next()
	if fn := frame.Function; lacunastrings.HasPrefix(fn, lacunaModule+".") || lacunastrings.HasPrefix(fn, lacunaModule+"/") {
		lacunaUserCallbacks.Add(1)
	}
}

// lacunaRun runs a scenario with stdout captured and the spy read before
// and after.
func lacunaRun(scenario func(func(string, any)), spy func() (int64, int64, int64)) (obs lacunaObservation) {
	obs.Probes = map[string]lacunaProbeValue{}
	r, w, err := lacunaos.Pipe()
	if err != nil {
		panic(err)
	}
	old := lacunaos.Stdout
	lacunaos.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := lacunaio.ReadAll(lacunaio.LimitReader(r, 1<<20))
		lacunaio.Copy(lacunaio.Discard, r)
		done <- string(b)
	}()
	d0, i0, c0 := spy()
	probes := map[string]lacunaProbeValue{}
	finished := make(chan string, 1)
	g0 := lacunaruntime.NumGoroutine()
	go func() {
		panicked := ""
		defer func() {
			if p := recover(); p != nil {
				stack := string(lacunadebug.Stack())
				if len(stack) > 4000 {
					stack = stack[:4000] + "\n[stack truncated]"
				}
				panicked = lacunafmt.Sprint(p) + "\n\n" + stack
			}
			finished <- panicked
		}()
		scenario(func(name string, v any) { probes[name] = lacunaDescribe(v) })
	}()
	// A scenario that never ends loses its own test, not the batch's.
	select {
	case obs.Panic = <-finished:
		obs.Probes = probes
	case <-lacunatime.After(lacunaScenarioTimeout):
		obs.TimedOut = true
	}
	if !obs.TimedOut {
		// Goroutines the scenario started must end with it: one left
		// running could change a later sample's verdict.
		for wait := 0; wait < 40 && lacunaruntime.NumGoroutine() > g0; wait++ {
			lacunatime.Sleep(5 * lacunatime.Millisecond)
		}
		if n := lacunaruntime.NumGoroutine() - g0; n > 0 {
			obs.Leftover = int64(n)
		}
	}
	d1, i1, c1 := spy()
	obs.Direct, obs.Indirect, obs.Callbacks = d1-d0, i1-i0, c1-c0
	w.Close()
	lacunaos.Stdout = old
	obs.Output = <-done
	return obs
}

// lacunaCheck prints the observation and, given what the reference did,
// fails the layers that differ.
func lacunaCheck(t interface {
	Errorf(string, ...any)
}, obs lacunaObservation, expect string) {
	b, _ := lacunajson.Marshal(obs)
	lacunafmt.Printf("LACUNA_RESULT %s\n", b)
	if expect == "" {
		return
	}
	var want lacunaObservation
	if err := lacunajson.Unmarshal([]byte(expect), &want); err != nil {
		t.Errorf("LACUNA_FAIL harness: %v", err)
		return
	}
	if obs.TimedOut {
		t.Errorf("LACUNA_FAIL runtime: timed out after %s", lacunaScenarioTimeout)
	}
	if obs.Panic != "" {
		t.Errorf("LACUNA_FAIL runtime: panic: %s", obs.Panic)
	}
	if obs.Leftover > want.Leftover {
		t.Errorf("LACUNA_FAIL runtime: the solution left %d goroutines running after the scenario (the reference left %d)", obs.Leftover, want.Leftover)
	}
	if obs.Direct == 0 {
		t.Errorf("LACUNA_FAIL spy: the target API was never called directly (%d indirect calls)", obs.Indirect)
	}
	for name, w := range want.Probes {
		g, ok := obs.Probes[name]
		switch {
		case !ok && name == ` + "`" + `lacuna:end` + "`" + `:
			t.Errorf("LACUNA_FAIL runtime: the code after the solution did not run to its end")
		case !ok:
			t.Errorf("LACUNA_FAIL structural: %s was not set", name)
		case g.Type != w.Type || g.Len != w.Len || g.Nil != w.Nil:
			t.Errorf("LACUNA_FAIL structural: %s is %s (len %d, nil %v), want %s (len %d, nil %v)", name, g.Type, g.Len, g.Nil, w.Type, w.Len, w.Nil)
		case g.Value != w.Value && !w.Addr:
			t.Errorf("LACUNA_FAIL comparative: %s = %s, want %s", name, g.Value, w.Value)
		}
	}
	// At least one callback when the reference had some: how many is the
	// implementation's business unless a contract fixes it, and a correct
	// solution may legitimately pass the target less to call back into.
	if want.Callbacks > 0 && obs.Callbacks == 0 {
		t.Errorf("LACUNA_FAIL behavioural: the target never called the functions it was given (the reference's did %d times)", want.Callbacks)
	}
	if obs.Output != want.Output {
		t.Errorf("LACUNA_FAIL comparative: printed %q, want %q", obs.Output, want.Output)
	}
}

// lacunaHoldsAddress reports whether v holds a non-nil pointer, func,
// channel or unsafe pointer (looking into interfaces, structs, arrays,
// slices and maps, a bounded way down): %#v prints such values with an
// address that differs from run to run.
func lacunaHoldsAddress(v lacunareflect.Value, depth int) bool {
	if !v.IsValid() || depth > 8 {
		return false
	}
	switch v.Kind() {
	case lacunareflect.Pointer, lacunareflect.UnsafePointer, lacunareflect.Func, lacunareflect.Chan:
		return !v.IsNil()
	case lacunareflect.Interface:
		return !v.IsNil() && lacunaHoldsAddress(v.Elem(), depth+1)
	case lacunareflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if lacunaHoldsAddress(v.Field(i), depth+1) {
				return true
			}
		}
	case lacunareflect.Array, lacunareflect.Slice:
		for i := 0; i < v.Len() && i < 64; i++ {
			if lacunaHoldsAddress(v.Index(i), depth+1) {
				return true
			}
		}
	case lacunareflect.Map:
		it := v.MapRange()
		for n := 0; n < 64 && it.Next(); n++ {
			if lacunaHoldsAddress(it.Key(), depth+1) || lacunaHoldsAddress(it.Value(), depth+1) {
				return true
			}
		}
	}
	return false
}
`

// ReadObservation finds the harness's observation in a test's output.
func ReadObservation(out string) (*Observation, bool) {
	for _, line := range strings.Split(out, "\n") {
		if i := strings.Index(line, "LACUNA_RESULT "); i >= 0 {
			var o Observation
			if json.Unmarshal([]byte(line[i+len("LACUNA_RESULT "):]), &o) == nil {
				return &o, true
			}
		}
	}
	return nil, false
}

// FailedLayers lists the layers a harness reported failing, in order:
// runtime, spy, structural, behavioural, comparative, harness.
func FailedLayers(out string) []string {
	seen := map[string]bool{}
	var layers []string
	for _, line := range strings.Split(out, "\n") {
		if i := strings.Index(line, "LACUNA_FAIL "); i >= 0 {
			layer, _, _ := strings.Cut(line[i+len("LACUNA_FAIL "):], ":")
			if !seen[layer] {
				seen[layer] = true
				layers = append(layers, layer)
			}
		}
	}
	return layers
}
