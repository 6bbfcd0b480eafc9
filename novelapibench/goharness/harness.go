package goharness

import (
	_ "embed"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/runners/goapi"
	"github.com/lacuna-dev/lacuna/runners/gotool"
)

// Observation is what one run of a task's scenario produced: what main
// printed, the probed variables, the target's calls, a panic.
type Observation struct {
	Output string `json:"output"`
	// OutputCut says Output was cut at the harness's bound (64 KiB).
	OutputCut bool             `json:"output_cut,omitempty"`
	Probes    map[string]Probe `json:"probes"`
	// Direct counts the solver's calls of the target; Context the calls
	// from the task's own code (or any other code outside the solution
	// and the module); Indirect the calls from the module's own code.
	Direct   int64 `json:"direct"`
	Context  int64 `json:"context,omitempty"`
	Indirect int64 `json:"indirect"`
	// Callbacks counts calls the target made into the functions the
	// solver gave it (the behavioural layer).
	Callbacks int64  `json:"callbacks"`
	Panic     string `json:"panic,omitempty"`
	// Args are the solver's calls' arguments, one rendering per distinct
	// tuple (sorted; a function is "func", a value holding addresses its
	// type); ArgsFree the same with slices' elements sorted; ArgsCut says
	// there were more than 64 distinct tuples or 10,000 calls.
	Args     []string `json:"args,omitempty"`
	ArgsFree []string `json:"args_free,omitempty"`
	ArgsCut  bool     `json:"args_cut,omitempty"`
	TimedOut bool     `json:"timed_out,omitempty"`
	// Lost says the variant's process wrote no record (it crashed, exited
	// or hung), and what it printed; RunUnits sets it, never the process.
	Lost string `json:"lost,omitempty"`
	// Leftover counts the goroutines the scenario left running after it
	// ended (and a short grace period).
	Leftover int64 `json:"leftover,omitempty"`
}

// Probe describes a value: type, length (-1 when it has none), nil-ness
// and its %#v rendering (cut at 16 KiB).
type Probe struct {
	Type  string `json:"type"`
	Len   int    `json:"len"`
	Nil   bool   `json:"nil"`
	Value string `json:"value"`
	// Elems are the %#v renderings of a slice's or array's elements (when
	// it has at most 256): what an order-free comparison compares.
	Elems []string `json:"elems,omitempty"`
	// Addr says the value holds a non-nil pointer, func or channel, whose
	// printed form carries an address that differs from run to run: only
	// its structure is compared. Decided from the value's type and
	// contents, not from how it prints (unsigned integers print as 0x…).
	Addr bool `json:"addr,omitempty"`
	// Elem describes what a non-nil pointer points to: a solution that
	// holds a *T where the reference holds a T is compared through it.
	Elem *Probe `json:"elem,omitempty"`
}

// Variants of a harness run, each in a fresh process: the scenario on
// the task's data; the same with the solver's calls of the target
// substituted (their results replaced by other well-formed values of the
// same type and shape, derived from them); the scenario on the task's
// second input. The variant reaches the process with its key, on the
// descriptor it closes before any solution code runs: nothing the
// solution can read tells the variants apart.
const (
	VariantNormal      = 'n'
	VariantSubstituted = 's'
	VariantPerturbed   = 'p'
)

// Record is what a harness reports: the distinct observations (in the
// order first seen, 16 at most) of Runs runs of the scenario, of
// SubstitutedRuns runs with the solver's calls substituted and, when
// the task has a second input, of PerturbedRuns runs on it. Each variant
// runs in a process of its own, which reports its part (Variant says
// which); RunUnits joins them.
type Record struct {
	Unit            int           `json:"unit"`
	Variant         string        `json:"variant,omitempty"`
	Runs            int           `json:"runs,omitempty"`
	SubstitutedRuns int           `json:"substituted_runs,omitempty"`
	PerturbedRuns   int           `json:"perturbed_runs,omitempty"`
	Normal          []Observation `json:"normal"`
	Substituted     []Observation `json:"substituted,omitempty"`
	Perturbed       []Observation `json:"perturbed,omitempty"`
}

// EndProbe is the probe the scenario records as its last statement: a
// solution that leaves the scenario early (runtime.Goexit, a recovered
// panic that skips the rest) fails the runtime layer. CheckSpan keeps the
// solution from naming the probe function or returning.
const EndProbe = "lacuna:end"

// EndPrefix names a probe's value at the end of main, when code after
// the span runs: "end:x".
const EndPrefix = "end:"

// UnitSpec is one solution to run through a task's harness.
type UnitSpec struct {
	Task Task
	// Solution is the span: the statements that replace the task's mask.
	Solution string
	// SolverImports are the import lines the solver wrote.
	SolverImports []string
	// SolverDecls says Task.Decls are the solver's (a whole program): the
	// target's calls from them are the solver's too. Such a unit needs a
	// package of its own.
	SolverDecls bool
	// OwnDecls are declarations of the solver's beside the task's (a
	// program that is the task's own with helpers of its own: AsSpan).
	// Such a unit needs a package of its own too.
	OwnDecls  string
	Index     int    // the unit's index in its batch
	SpyAccess string // the target's counters: pkg.LacunaSpy[i] (Spy.Access)
	SpyImport string // the target's package
	Module    string // the target's module path
	// Runs is how many times the scenario (and the perturbed scenario)
	// runs: many to observe a reference (10 at least, more while within
	// 2 s), one to check a solution.
	Runs int
	// Perturbed is the context's code before the span on the task's
	// second input ("" for none; see PerturbBefore).
	Perturbed string
	// SubstituteOnly, when not nil, limits substitution to the solver's
	// calls with these argument tuples (Observation.Args, or ArgsFree
	// when SubstituteFree): for a whole program, the reference's span's
	// (SubstitutionFor), so that calls the task's context made stay as
	// the reference's run had them.
	SubstituteOnly []string
	SubstituteFree bool
}

// Harness renders a solution in a task's harness as test unit u.Index
// of a batch: the scenario (main with the solution in place of the span,
// probes after it), the same on the perturbed input when there is one,
// and a test that runs them under the target-API spy and writes a signed
// Record to descriptor ChannelFD (see channel.go). It asserts nothing:
// what the scenario computed is compared with the reference's outside
// the process that ran the solution (Check), so nothing a solution
// prints or does in its process can forge a verdict.
//
// Calls of the target are attributed by the caller's file and line: only
// the lines of the solution (and, for a whole program, of its
// declarations) are the solver's. Methods the scenario's helper
// declarations define are instrumented too: calls into them from the
// module's code (the target using a type the caller gave it through an
// interface) count with the callbacks.
func Harness(u UnitSpec) Unit {
	i, t := u.Index, u.Task
	variants := string([]byte{VariantNormal, VariantSubstituted})
	if u.Perturbed != "" {
		variants += string(VariantPerturbed)
	}
	return Unit{Variants: variants, Unit: gotool.Unit{
		Group: "tasks",
		Source: func(pkg string, declared map[string]string) string {
			var head, b strings.Builder
			line := func() int { return strings.Count(head.String(), "\n") + strings.Count(b.String(), "\n") + 1 }
			decls := ""
			if t.Decls != "" {
				if _, ok := declared["decls:"+t.Decls]; !ok || u.SolverDecls {
					declared["decls:"+t.Decls] = t.Decls
					decls = instrumentMethods(t.Decls)
				}
			}
			own := ""
			if u.OwnDecls != "" {
				own = instrumentMethods(u.OwnDecls)
			}
			// What the unit's code refers to decides its imports.
			code := decls + "\n" + own + "\nfunc _() {\n" + t.Before + "\n" + u.Solution + "\n" + t.After + "\n" + u.Perturbed + "\n"
			for _, p := range t.Probes {
				code += "_ = " + p + "\n"
			}
			code += "}\n"
			fmt.Fprintf(&head, "package %s\n\n", pkg)
			for _, im := range t.ImportsFor(u.SolverImports, code) {
				head.WriteString("import " + im + "\n")
			}
			head.WriteString("import lacunatesting \"testing\"\n")
			fmt.Fprintf(&head, "import lacunaspied %q\n", u.SpyImport)
			if _, ok := declared["lacunaRun"]; !ok {
				declared["lacunaRun"] = harnessRuntime
				head.WriteString(runtimeImports)
				// Types the scenario declares print as PKG.T: name them
				// main.T, as in the standalone program, whatever package
				// the batch put this harness in.
				fmt.Fprintf(&head, "\nconst lacunaSelf = %q\n", pkg+".")
				fmt.Fprintf(&head, "\nconst lacunaModule = %q\n", u.Module)
				head.WriteString(harnessRuntime)
				head.WriteString(supervisorDecls)
			}
			var lines []int // the solver's lines: start, end pairs
			if u.SolverDecls && decls != "" {
				lines = append(lines, line()+1, line()+1+strings.Count(decls, "\n"))
			}
			b.WriteString("\n" + decls + "\n")
			if own != "" {
				lines = append(lines, line()+1, line()+1+strings.Count(own, "\n"))
				b.WriteString("\n" + own + "\n")
			}
			scenario := func(name, before string) {
				fmt.Fprintf(&b, "\nfunc %s(lacunaProbe func(string, any)) {%s\n", name, before)
				lines = append(lines, line(), line()+strings.Count(u.Solution, "\n"))
				b.WriteString(u.Solution + "\n")
				for _, v := range t.Keep {
					fmt.Fprintf(&b, "\t_ = %s\n", v)
				}
				for _, p := range t.Probes {
					fmt.Fprintf(&b, "\tlacunaProbe(%q, %s)\n", p, p)
				}
				b.WriteString(t.After + "\n")
				if strings.TrimSpace(t.After) != "" {
					// Their values at the end of main too: what a whole
					// program, which has no code after its span, is
					// compared on (Expectation.WithProbes).
					for _, p := range t.Probes {
						fmt.Fprintf(&b, "\tlacunaProbe(%q, %s)\n", EndPrefix+p, p)
					}
				}
				b.WriteString("\tlacunaProbe(" + strconv.Quote(EndProbe) + ", true)\n}\n")
			}
			scenario(gotool.UnitName("lacunaScenario", i), t.Before)
			perturbed := "nil"
			if u.Perturbed != "" {
				perturbed = gotool.UnitName("lacunaPerturbed", i)
				scenario(perturbed, u.Perturbed)
			}
			nums := make([]string, len(lines))
			for k, n := range lines {
				nums[k] = strconv.Itoa(n)
			}
			counter := "lacunaspied." + strings.SplitN(u.SpyAccess, ".", 2)[1]
			slot := strings.TrimSuffix(counter[strings.LastIndex(counter, "[")+1:], "]")
			fmt.Fprintf(&b, "\nfunc %s(*lacunatesting.T) {\n\tlacunaspied.LacunaSpyHook = lacunaHook\n\tlacunaspied.LacunaSpyCall = func(slot int, args []any) bool {\n\t\treturn slot == %s && lacunaArgsHook(args)\n\t}\n%s\tc := &%s\n", gotool.UnitName("Test", i), slot, substituteOnly(u), counter)
			fmt.Fprintf(&b, "\tlacunaMain(%d, %q, []int{%s}, %d, %s, %s, func() [4]int64 {\n\t\treturn [4]int64{c.Direct.Load(), c.Context.Load(), c.Indirect.Load(), c.Callbacks.Load() + lacunaUserCallbacks.Load()}\n\t})\n}\n",
				i, "/"+gotool.UnitFile(i), strings.Join(nums, ", "), max(u.Runs, 1), gotool.UnitName("lacunaScenario", i), perturbed)
			return head.String() + b.String()
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
	}}
}

// Unit is a harness unit to build and the variants to run it in, each in
// a process of its own (VariantNormal, ...; "" is the normal one only).
type Unit struct {
	gotool.Unit
	Variants string
}

func (u Unit) variants() string {
	if u.Variants == "" {
		return string(VariantNormal)
	}
	return u.Variants
}

// substituteOnly is the statements that set, in a unit's test, which of
// the solver's calls are substituted ("" for all of them).
func substituteOnly(u UnitSpec) string {
	if u.SubstituteOnly == nil {
		return ""
	}
	keys := make([]string, len(u.SubstituteOnly))
	for k, a := range u.SubstituteOnly {
		keys[k] = strconv.Quote(a) + ": true"
	}
	return fmt.Sprintf("\tlacunaSubstituteOnly, lacunaSubstituteFree = map[string]bool{%s}, %v\n", strings.Join(keys, ", "), u.SubstituteFree)
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

// SuperviseArg, as the test binary's first argument, makes it the
// supervisor (internal/supervisor): `PROG lacuna-supervise WALL`.
const SuperviseArg = "lacuna-supervise"

//go:embed internal/supervisor/supervisor.go
var supervisorSource string

// supervisorDecls are the supervisor's declarations, without its package
// clause and imports (its imports are among runtimeImports, under the
// same names).
var supervisorDecls = func() string {
	f, err := parser.ParseFile(token.NewFileSet(), "supervisor.go", supervisorSource, parser.ImportsOnly)
	if err != nil || len(f.Decls) == 0 {
		panic("goharness: internal/supervisor/supervisor.go: " + fmt.Sprint(err))
	}
	return "\n" + supervisorSource[f.Decls[len(f.Decls)-1].End()-1:] + "\n"
}()

// runtimeImports are the harness runtime's imports, under names the
// solution cannot use (CheckSpan refuses identifiers starting lacuna).
const runtimeImports = `import lacunareflect "reflect"
import lacunajson "encoding/json"
import lacunafmt "fmt"
import lacunaio "io"
import lacunaos "os"
import lacunastrings "strings"
import lacunatime "time"
import lacunadebug "runtime/debug"
import lacunaruntime "runtime"
import lacunaatomic "sync/atomic"
import lacunahmac "crypto/hmac"
import lacunasha256 "crypto/sha256"
import lacunahex "encoding/hex"
import lacunabufio "bufio"
import lacunaexec "os/exec"
import lacunafilepath "path/filepath"
import lacunastrconv "strconv"
import lacunasyscall "syscall"
import lacunasync "sync"
import lacunasort "sort"
`

// harnessRuntime is declared once per harness package.
const harnessRuntime = `
type lacunaProbeValue struct {
	Type  string   ` + "`json:\"type\"`" + `
	Len   int      ` + "`json:\"len\"`" + `
	Nil   bool     ` + "`json:\"nil\"`" + `
	Value string   ` + "`json:\"value\"`" + `
	Elems []string ` + "`json:\"elems,omitempty\"`" + `
	Addr  bool     ` + "`json:\"addr,omitempty\"`" + `
	Elem  *lacunaProbeValue ` + "`json:\"elem,omitempty\"`" + `
}

type lacunaObservation struct {
	Output    string                      ` + "`json:\"output\"`" + `
	OutputCut bool                        ` + "`json:\"output_cut,omitempty\"`" + `
	Probes    map[string]lacunaProbeValue ` + "`json:\"probes\"`" + `
	Direct    int64                       ` + "`json:\"direct\"`" + `
	Context   int64                       ` + "`json:\"context,omitempty\"`" + `
	Indirect  int64                       ` + "`json:\"indirect\"`" + `
	Callbacks int64                       ` + "`json:\"callbacks\"`" + `
	Panic     string                      ` + "`json:\"panic,omitempty\"`" + `
	Args      []string                    ` + "`json:\"args,omitempty\"`" + `
	ArgsFree  []string                    ` + "`json:\"args_free,omitempty\"`" + `
	ArgsCut   bool                        ` + "`json:\"args_cut,omitempty\"`" + `
	TimedOut  bool                        ` + "`json:\"timed_out,omitempty\"`" + `
	Leftover  int64                       ` + "`json:\"leftover,omitempty\"`" + `
}

type lacunaRecord struct {
	Unit            int                 ` + "`json:\"unit\"`" + `
	Variant         string              ` + "`json:\"variant\"`" + `
	Runs            int                 ` + "`json:\"runs,omitempty\"`" + `
	SubstitutedRuns int                 ` + "`json:\"substituted_runs,omitempty\"`" + `
	PerturbedRuns   int                 ` + "`json:\"perturbed_runs,omitempty\"`" + `
	Normal          []lacunaObservation ` + "`json:\"normal,omitempty\"`" + `
	Substituted     []lacunaObservation ` + "`json:\"substituted,omitempty\"`" + `
	Perturbed       []lacunaObservation ` + "`json:\"perturbed,omitempty\"`" + `
}

// The key records are signed with and the variant this process runs
// (VariantNormal, VariantSubstituted, VariantPerturbed), read from its
// descriptor before any test runs (package variables initialise before
// tests, and a solution's code runs only inside its scenario), and the
// channel records are written to. Nothing else in the process tells
// the variants apart.
var lacunaKey, lacunaVariant, lacunaChannel = lacunaOpen()

// The rest of the package's initialisation (a whole program's variable
// initialisers among it: they run before its main, in the order declared,
// after the key above) runs under the scenario's clock, started here:
// past it the process ends with no record, as a scenario that hangs
// would. lacunaMain stops it.
var lacunaInitDone lacunaatomic.Bool
var _ = lacunaInitClock()

func lacunaInitClock() bool {
	lacunatime.AfterFunc(lacunaScenarioTimeout, func() {
		if !lacunaInitDone.Load() {
			lacunafmt.Fprintln(lacunaos.Stderr, "timed out: the package's initialisation ran past the scenario's limit")
			lacunaos.Exit(2)
		}
	})
	return true
}

func lacunaOpen() ([]byte, byte, *lacunaos.File) {
	if len(lacunaos.Args) > 1 && lacunaos.Args[1] == "` + SuperviseArg + `" {
		lacunaos.Exit(lacunaSupervise(lacunaos.Args[2:]))
	}
	kf := lacunaos.NewFile(7, "lacuna-key")
	key, variant := make([]byte, 33), byte('n')
	if kf != nil {
		n, _ := lacunaio.ReadFull(kf, key)
		switch {
		case n < 32:
			key = nil
		case n == 33:
			variant = key[32]
		}
		kf.Close()
	}
	if key != nil {
		key = key[:32]
	}
	return key, variant, lacunaos.NewFile(8, "lacuna-channel")
}

// lacunaEmit writes the record, signed, in one write.
func lacunaEmit(rec lacunaRecord) {
	b, err := lacunajson.Marshal(rec)
	if err != nil || lacunaChannel == nil {
		return
	}
	m := lacunahmac.New(lacunasha256.New, lacunaKey)
	m.Write(b)
	line := lacunahex.EncodeToString(m.Sum(nil)) + " " + string(b) + "\n"
	lacunaChannel.Write([]byte(line))
}

const (
	lacunaMaxValue  = 16 << 10
	lacunaMaxOutput = 64 << 10
	lacunaMaxElems  = 256
)

func lacunaCut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…[cut]"
	}
	return s
}

func lacunaDescribe(v any) lacunaProbeValue {
	p := lacunaDescribeValue(v)
	if rv := lacunareflect.ValueOf(v); rv.Kind() == lacunareflect.Pointer && !rv.IsNil() {
		e := lacunaDescribeValue(rv.Elem().Interface())
		p.Elem = &e
	}
	return p
}

// lacunaSelfPath is this package's import path: types the scenario
// declares print with it inside type arguments.
var lacunaSelfPath = lacunareflect.TypeOf(lacunaProbeValue{}).PkgPath() + "."

// lacunaNames writes the scenario's types as the standalone program
// would (main.T, whatever package and path the batch gave the harness),
// without the ·N that numbers a type declared inside a function, which
// differs from build to build.
func lacunaNames(s string) string {
	s = lacunastrings.ReplaceAll(lacunastrings.ReplaceAll(s, lacunaSelfPath, "main."), lacunaSelf, "main.")
	var b lacunastrings.Builder
	for {
		i := lacunastrings.Index(s, "·")
		if i < 0 {
			return b.String() + s
		}
		j := i + len("·")
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i+len("·") {
			j = i // not a number: keep it
			b.WriteString(s[:i+len("·")])
		} else {
			b.WriteString(s[:i])
		}
		s = s[max(j, i+len("·")):]
	}
}

func lacunaDescribeValue(v any) lacunaProbeValue {
	self := lacunaNames
	p := lacunaProbeValue{Type: self(lacunafmt.Sprintf("%T", v)), Len: -1, Value: lacunaCut(self(lacunafmt.Sprintf("%#v", v)), lacunaMaxValue)}
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
	if k := rv.Kind(); (k == lacunareflect.Slice || k == lacunareflect.Array) && rv.Len() <= lacunaMaxElems {
		p.Elems = make([]string, rv.Len())
		for j := range p.Elems {
			p.Elems[j] = lacunaCut(self(lacunafmt.Sprintf("%#v", rv.Index(j).Interface())), 1024)
		}
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

// lacunaAttr says which calls are the solver's: those from the lines
// (start, end pairs) of one file; substitute asks the spy to substitute
// their results.
type lacunaAttr struct {
	file       string
	lines      []int
	substitute bool
}

var lacunaAttribution lacunaatomic.Pointer[lacunaAttr]

// lacunaHook is the spy's LacunaSpyHook.
func lacunaHook(file string, line int) (solver, substitute bool) {
	a := lacunaAttribution.Load()
	if a == nil || !lacunastrings.HasSuffix(file, a.file) {
		return false, false
	}
	for k := 0; k+1 < len(a.lines); k += 2 {
		if line >= a.lines[k] && line <= a.lines[k+1] {
			return true, a.substitute
		}
	}
	return false, false
}

// lacunaMain observes this process's variant of the scenario up to runs
// times (the task's data, the solver's calls of the target substituted,
// or the second input), then writes the record.
func lacunaMain(unit int, file string, lines []int, runs int, scenario, perturbed func(func(string, any)), spy func() [4]int64) {
	lacunaInitDone.Store(true)
	rec := lacunaRecord{Unit: unit, Variant: string(lacunaVariant)}
	defer func() { lacunaEmit(rec) }()
	attr := &lacunaAttr{file: file, lines: lines}
	switch lacunaVariant {
	case 's':
		attr.substitute = true
		rec.Substituted, rec.SubstitutedRuns, _ = lacunaRepeat(scenario, runs, attr, spy)
	case 'p':
		if perturbed != nil {
			rec.Perturbed, rec.PerturbedRuns, _ = lacunaRepeat(perturbed, runs, attr, spy)
		}
	default:
		rec.Normal, rec.Runs, _ = lacunaRepeat(scenario, runs, attr, spy)
	}
}

// The arguments of the solver's calls of the target in the current run:
// their renderings as tuples, exactly and order-free (distinct, 64 at
// most), rendered for the first 10,000 calls.
var (
	lacunaArgsMu    lacunasync.Mutex
	lacunaArgsExact map[string]bool
	lacunaArgsFree  map[string]bool
	lacunaArgsCalls int
	lacunaArgsCut   bool
)

const lacunaMaxArgTuples, lacunaMaxArgCalls = 64, 10000

// lacunaSubstituteOnly, when set, names the argument tuples (exact, or
// order-free when lacunaSubstituteFree) whose calls are substituted: a
// whole program's, whose calls include those of the task's context,
// which the reference's substituted run did not substitute.
var (
	lacunaSubstituteOnly map[string]bool
	lacunaSubstituteFree bool
)

// lacunaArgsHook records a call of the target from the solver's code
// and says whether it may be substituted.
func lacunaArgsHook(args []any) bool {
	lacunaArgsMu.Lock()
	defer lacunaArgsMu.Unlock()
	if lacunaArgsExact == nil || len(args) == 0 {
		return true
	}
	lacunaArgsCalls++
	if lacunaArgsCalls > lacunaMaxArgCalls {
		lacunaArgsCut = true
		return lacunaSubstituteOnly == nil
	}
	exact, free := make([]string, len(args)), make([]string, len(args))
	for i, a := range args {
		exact[i], free[i] = lacunaArgKey(a)
	}
	e, f := lacunastrings.Join(exact, "\x1f"), lacunastrings.Join(free, "\x1f")
	substitute := lacunaSubstituteOnly == nil || lacunaSubstituteOnly[e] && !lacunaSubstituteFree || lacunaSubstituteOnly[f] && lacunaSubstituteFree
	if !lacunaArgsExact[e] && len(lacunaArgsExact) >= lacunaMaxArgTuples {
		lacunaArgsCut = true
		return substitute
	}
	lacunaArgsExact[e], lacunaArgsFree[f] = true, true
	return substitute
}

// lacunaArgKey renders an argument: a function as "func" (a solution
// may pass its own equivalent), a value holding addresses by its type
// (what a pointer points to when that is plain data), anything else by
// type and value; order-free, a slice's elements sorted.
func lacunaArgKey(a any) (exact, free string) {
	if a == nil {
		return "nil", "nil"
	}
	if lacunareflect.TypeOf(a).Kind() == lacunareflect.Func {
		return "func", "func"
	}
	p := lacunaDescribe(a)
	if p.Addr {
		if p.Elem != nil && !p.Elem.Addr {
			p = *p.Elem
			p.Type = "*" + p.Type
		} else {
			return p.Type, p.Type
		}
	}
	exact = p.Type + " " + p.Value
	if p.Elems == nil {
		return exact, exact
	}
	elems := append([]string(nil), p.Elems...)
	lacunasort.Strings(elems)
	return exact, p.Type + " {" + lacunastrings.Join(elems, ", ") + "}"
}

func lacunaSortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	lacunasort.Strings(out)
	return out
}

// lacunaRepeat runs a scenario up to runs times (10 at least, more only
// within 2 s), and keeps its distinct observations (16 at most) in the
// order first seen; ok is false when a run timed out, which ends it.
func lacunaRepeat(scenario func(func(string, any)), runs int, attr *lacunaAttr, spy func() [4]int64) (distinct []lacunaObservation, n int, ok bool) {
	seen := map[string]bool{}
	start := lacunatime.Now()
	for n = 0; n < runs && (n < 10 || lacunatime.Since(start) < 2*lacunatime.Second); n++ {
		lacunaAttribution.Store(attr)
		o := lacunaRun(scenario, spy)
		if o.TimedOut {
			return append(distinct, o), n + 1, false
		}
		b, _ := lacunajson.Marshal(o)
		if !seen[string(b)] && len(distinct) < 16 {
			seen[string(b)] = true
			distinct = append(distinct, o)
		}
	}
	return distinct, n, true
}

// lacunaRun runs a scenario with stdout captured and the spy read before
// and after.
func lacunaRun(scenario func(func(string, any)), spy func() [4]int64) (obs lacunaObservation) {
	obs.Probes = map[string]lacunaProbeValue{}
	r, w, err := lacunaos.Pipe()
	if err != nil {
		panic(err)
	}
	old := lacunaos.Stdout
	lacunaos.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := lacunaio.ReadAll(lacunaio.LimitReader(r, lacunaMaxOutput+1))
		lacunaio.Copy(lacunaio.Discard, r)
		done <- string(b)
	}()
	lacunaArgsMu.Lock()
	lacunaArgsExact, lacunaArgsFree, lacunaArgsCalls, lacunaArgsCut = map[string]bool{}, map[string]bool{}, 0, false
	lacunaArgsMu.Unlock()
	before := spy()
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
	// A scenario that never ends is reported, and the process ends.
	select {
	case obs.Panic = <-finished:
		obs.Probes = probes
	case <-lacunatime.After(lacunaScenarioTimeout):
		obs.TimedOut = true
	}
	if !obs.TimedOut {
		// Goroutines the scenario started must end with it.
		for wait := 0; wait < 40 && lacunaruntime.NumGoroutine() > g0; wait++ {
			lacunatime.Sleep(5 * lacunatime.Millisecond)
		}
		if n := lacunaruntime.NumGoroutine() - g0; n > 0 {
			obs.Leftover = int64(n)
		}
	}
	after := spy()
	lacunaArgsMu.Lock()
	obs.Args, obs.ArgsFree, obs.ArgsCut = lacunaSortedKeys(lacunaArgsExact), lacunaSortedKeys(lacunaArgsFree), lacunaArgsCut
	lacunaArgsExact, lacunaArgsFree = nil, nil
	lacunaArgsMu.Unlock()
	obs.Direct, obs.Context, obs.Indirect, obs.Callbacks = after[0]-before[0], after[1]-before[1], after[2]-before[2], after[3]-before[3]
	w.Close()
	lacunaos.Stdout = old
	obs.Output = <-done
	if len(obs.Output) > lacunaMaxOutput {
		obs.Output, obs.OutputCut = obs.Output[:lacunaMaxOutput], true
	}
	return obs
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

// codegen is the version of the code NewSpy and Harness generate beyond
// the templates Digest reads: bump it when that logic changes what a
// harness computes.
const codegen = "4"

// Digest identifies what a harness computes: the runtime, the supervisor
// and the spy's counters file as generated, and the version of the code
// that generates the rest. Nodes that run harnesses pin it, so a change of
// the harness's semantics moves their keys and nothing observed under the
// old one is reused.
func Digest() string {
	return fmt.Sprintf("%016x", xxhash.Sum64String(codegen+"\x00"+harnessRuntime+"\x00"+supervisorSource+"\x00"+spyCounters("p", "m", 1)))
}
