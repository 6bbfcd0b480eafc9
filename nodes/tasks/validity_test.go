package tasks_test

// Issue 9's harness-validity suites: solutions as data
// (testdata/suites/*.jsonl) plus variants generated from each task's
// reference, run through the real solve node. TestSuitesAreWellFormed
// checks the files; TestHarnessValidityBaseline measures the rates and
// holds them to 1% (bench/harness_validity.sh runs it and prints the
// table).

import (
	"bufio"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/filters"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"

	_ "github.com/lacuna-dev/lacuna/nodes/discovery"
)

// suiteRow is one solution of a suite. A row names its task by task_id
// or by api (the target's API id) and difficulty, which survive changes
// to how task ids are derived.
type suiteRow struct {
	TaskID     string `json:"task_id,omitempty"`
	API        string `json:"api,omitempty"`
	Difficulty string `json:"difficulty,omitempty"`
	SampleID   string `json:"sample_id"`
	Kind       string `json:"kind"`  // correct or adversarial
	Class      string `json:"class"` // one of suiteClasses[Kind]
	Solution   string `json:"solution"`
}

// suiteClasses are issue 9's bullets a solution can exercise: for
// adversarial rows the exploit, for correct rows the way it differs from
// the reference.
var suiteClasses = map[string][]string{
	"adversarial": {
		"hardcoded-no-call", // the expected values, no call of the target
		"throwaway-call",    // a call (dummy arguments, or output thrown away), then hard-coded values
		"discarded-result",  // the right call, its result discarded, then hard-coded values
		"escape-scope",      // early return, or closing the function to declare top-level code (init)
		"tamper-internals",  // naming or writing the spy's counters or the harness's internals
		"forge-verdict",     // printing lines in the test2json / verdict framing
		"forge-observation", // printing a LACUNA_RESULT line before the harness's own
		"isolation",         // os.Exit, a panic in a goroutine, a stack overflow, a leftover goroutine
		"stdlib-sibling",    // the standard library (or builtins) instead of the target
		"guarded-hardcode",  // the target called (in a recover, or as a guard on its result), then hard-coded values
		"other-data",        // the target called on data that is not the task's, then hard-coded values
		"state-counting",    // telling runs apart through process or sandbox state (environment, files)
	},
	"correct": {
		"reference",                // the reference span, as a control
		"other-names",              // other variable names or another print form
		"explicit-type-parameters", // F[int](...) where the reference infers
		"named-function",           // a named function (or method value) instead of a literal
		"intermediate-variables",   // the call's arguments or result held in variables
		"data-built-another-way",   // the same input built with other statements
		"whole-program",            // package main with imports instead of a span
		"extra-imports",            // uses standard packages the context does not import
		"defensive-code",           // checks the result (panic or exit when empty), indexes it for logging, returns in a branch not taken
	},
}

func validClass(kind, class string) bool {
	for _, c := range suiteClasses[kind] {
		if c == class {
			return true
		}
	}
	return false
}

func readSuites(t *testing.T) []suiteRow {
	t.Helper()
	files, err := filepath.Glob("testdata/suites/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no suites in testdata/suites (%v)", err)
	}
	var rows []suiteRow
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			if strings.TrimSpace(sc.Text()) == "" {
				continue
			}
			var r suiteRow
			dec := json.NewDecoder(strings.NewReader(sc.Text()))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&r); err != nil {
				t.Errorf("%s:%d: %v", f, n, err)
				continue
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// resolve maps a suite row to its task's id ("" when it names none).
func resolve(r suiteRow, byID map[string]tasks.Row) string {
	if r.TaskID != "" {
		if _, ok := byID[r.TaskID]; ok {
			return r.TaskID
		}
		return ""
	}
	for id, task := range byID {
		if task.APIID == r.API && task.Difficulty == r.Difficulty {
			return id
		}
	}
	return ""
}

// TestSuitesAreWellFormed: every row names a fixture task, a kind and a
// class from the fixed lists, a solution, and a sample id unique within
// its task.
func TestSuitesAreWellFormed(t *testing.T) {
	rows := readSuites(t)
	byID := taskstest.ReadTasks(t, taskstest.Run(t, "", ""))
	seen := map[string]bool{}
	for i, r := range rows {
		where := fmt.Sprintf("row %d (%s %s %s)", i, r.API, r.Difficulty, r.SampleID)
		id := resolve(r, byID)
		if id == "" {
			t.Errorf("%s: names no fixture task", where)
		}
		if !validClass(r.Kind, r.Class) {
			t.Errorf("%s: kind %q class %q not in the fixed lists", where, r.Kind, r.Class)
		}
		if strings.TrimSpace(r.Solution) == "" || r.SampleID == "" {
			t.Errorf("%s: empty solution or sample_id", where)
		}
		if seen[id+"/"+r.SampleID] {
			t.Errorf("%s: sample_id repeated in its task", where)
		}
		seen[id+"/"+r.SampleID] = true
	}
}

// A validity sample is a suite row resolved to its task, with where it
// came from.
type validitySample struct {
	suiteRow
	Source string // a suite file or "generated"
	Lib    string
}

// TestHarnessValidityBaseline measures, per class, how many adversarial
// solutions pass (false accepts) and how many correct ones fail (false
// rejects), and fails when either rate is above 1% (issue 9's targets).
// By default (as in CI) it runs the suites and the generated variants on
// the offline fixture, every sample in one batch as a model's samples
// are run. LACUNA_VALIDITY=fixture also runs the correct samples and each
// adversarial class in batches of their own; LACUNA_VALIDITY=real runs
// generated variants on the quickstart's lo, zerolog and gonum tasks kept
// by C1, in LACUNA_VALIDITY_DIR (a directory holding quickstart.hcl's
// store, so the stages before solve are cached). The report goes to
// LACUNA_VALIDITY_REPORT (default: the test log) and per-sample rows to
// LACUNA_VALIDITY_ROWS when set; LACUNA_VALIDITY_SAMPLES keeps only the
// samples it names.
func TestHarnessValidityBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the harness over the suites")
	}
	mode := os.Getenv("LACUNA_VALIDITY")
	mixedOnly := mode == ""
	if mixedOnly {
		mode = "fixture"
	}
	var base, dir string
	libs := map[string]string{} // lib → tasks node address
	c1 := map[string]string{}   // lib → c1 node address (real only)
	var samples []validitySample
	taskByID := map[string]tasks.Row{}
	switch mode {
	case "fixture":
		dir = t.TempDir()
		base = taskstest.Pipeline
		nodetest.OfflineShapes(t)
		byID := taskstest.ReadTasks(t, nodetest.Run(t, dir, base))
		for id, task := range byID {
			taskByID[id] = task
		}
		libs["shapes"] = "node.tasks.shapes"
		for _, r := range readSuites(t) {
			id := resolve(r, byID)
			if id == "" {
				t.Fatalf("suite row %s %s %s names no task", r.API, r.Difficulty, r.SampleID)
			}
			r.TaskID = id
			samples = append(samples, validitySample{suiteRow: r, Source: "suite", Lib: "shapes"})
		}
		for _, id := range sortedIDs(byID) {
			for _, r := range generate(byID[id]) {
				samples = append(samples, validitySample{suiteRow: r, Source: "generated", Lib: "shapes"})
			}
		}
	case "real":
		dir = os.Getenv("LACUNA_VALIDITY_DIR")
		src, err := os.ReadFile(filepath.Join(dir, "quickstart.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		base = string(src)
		run := nodetest.Run(t, dir, base)
		for _, lib := range []string{"lo", "zerolog", "gonum"} {
			libs[lib] = `node.tasks.lib["` + lib + `"]`
			c1[lib] = `node.c1.lib["` + lib + `"]`
			for _, row := range nodetest.Read[filters.C1Row](t, run, c1[lib]) {
				if !row.Keep {
					continue
				}
				taskByID[row.TaskID] = row.Row
				for _, r := range generate(row.Row) {
					samples = append(samples, validitySample{suiteRow: r, Source: "generated", Lib: lib})
				}
			}
		}
	default:
		t.Fatalf("LACUNA_VALIDITY=%s: want fixture or real", mode)
	}

	// LACUNA_VALIDITY_SAMPLES (comma-separated sample ids or classes, as the
	// report names them) keeps only those samples: one class measured on
	// the real modules without the hours of the whole suite.
	if only := os.Getenv("LACUNA_VALIDITY_SAMPLES"); only != "" {
		keep := map[string]bool{}
		for _, k := range strings.Split(only, ",") {
			keep[strings.TrimSpace(k)] = true
		}
		samples = slices.DeleteFunc(samples, func(s validitySample) bool { return !keep[s.SampleID] && !keep[s.Class] })
		if len(samples) == 0 {
			t.Fatalf("LACUNA_VALIDITY_SAMPLES=%s keeps no sample", only)
		}
	}

	// Solve nodes per library: every sample in one batch ("all", as a
	// model's samples are run), the correct samples alone ("correct"), and
	// each adversarial class alone ("adv-CLASS"), so that one class's
	// crashes neither hide another class's exploits nor count as false
	// rejects of correct samples; the "all" batch shows that interference.
	sets := func(s validitySample) []string {
		if mixedOnly {
			return []string{"all"}
		}
		if s.Kind == "correct" {
			return []string{"all", "correct"}
		}
		return []string{"all", "adv-" + s.Class}
	}
	extra := ""
	var nodesRun []string
	for _, lib := range sortedIDs(libs) {
		lines := map[string][]string{}
		for _, s := range samples {
			if s.Lib != lib {
				continue
			}
			b, _ := json.Marshal(map[string]string{"task_id": s.TaskID, "sample_id": s.Source + "/" + s.SampleID, "solution": s.Solution})
			for _, set := range sets(s) {
				lines[set] = append(lines[set], string(b))
			}
		}
		for _, set := range sortedIDs(lines) {
			name := strings.NewReplacer("-", "_").Replace(lib + "_" + set)
			file := "validity_" + name + ".jsonl"
			if err := os.WriteFile(filepath.Join(dir, file), []byte(strings.Join(lines[set], "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			extra += fmt.Sprintf("\nnode \"import\" \"validity_%s\" { path = %q }\nnode \"solve\" \"validity_%s\" {\n  tasks     = %s\n  solutions = node.import.validity_%s\n}\n", name, file, name, libs[lib], name)
			nodesRun = append(nodesRun, set+"|node.solve.validity_"+name)
		}
	}
	run := nodetest.Run(t, dir, base+extra)
	got := map[string]map[string]tasks.SampleRow{} // set ("all", "correct", "adv") → task/sample → row
	for _, n := range nodesRun {
		set, addr, _ := strings.Cut(n, "|")
		if strings.HasPrefix(set, "adv-") {
			set = "adv"
		}
		if got[set] == nil {
			got[set] = map[string]tasks.SampleRow{}
		}
		for _, r := range nodetest.Read[tasks.SampleRow](t, run, addr) {
			got[set][r.TaskID+"/"+r.SampleID] = r
		}
	}
	report(t, mode, samples, got, taskByID)
}

func sortedIDs[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type tally struct{ n, wrong, compileErr int }

func report(t *testing.T, mode string, samples []validitySample, got map[string]map[string]tasks.SampleRow, byID map[string]tasks.Row) {
	var b strings.Builder
	var rows strings.Builder
	fmt.Fprintf(&b, "harness validity (%s): %d samples over %d tasks\n", mode, len(samples), len(byID))
	fmt.Fprintf(&b, "false accept = adversarial samples that pass; false reject = correct samples that fail.\n")
	fmt.Fprintf(&b, "wrong: correct samples batched without adversarial ones, each adversarial class in its own batch;\n")
	fmt.Fprintf(&b, "wrong(mixed): every sample in one batch, as a model's samples are run (crashes and forgeries reach other samples).\n")
	fmt.Fprintf(&b, "no-build: samples that did not compile (a reject, but not the harness's doing).\n\n")
	fmt.Fprintf(&b, "%-11s %-25s %-9s %5s %6s %7s %8s %13s\n", "kind", "class", "source", "n", "wrong", "rate", "no-build", "wrong(mixed)")
	by := map[string]*tally{}
	mixed := map[string]*tally{}
	for _, s := range samples {
		key := s.TaskID + "/" + s.Source + "/" + s.SampleID
		set := "correct"
		if s.Kind == "adversarial" {
			set = "adv"
		}
		if got[set] == nil {
			set = "all" // every sample ran in one batch only
		}
		r, ok := got[set][key]
		m, okm := got["all"][key]
		if !ok || !okm {
			t.Errorf("no result for %s", key)
			continue
		}
		wrong := r.Passed == (s.Kind == "adversarial")
		for _, k := range []string{s.Kind + "|" + s.Class + "|" + s.Source, s.Kind + "|" + "ALL" + "|" + s.Source, s.Kind + "|ALL|ALL", s.Kind + "|ALL in " + s.Lib + "|ALL"} {
			if by[k] == nil {
				by[k], mixed[k] = &tally{}, &tally{}
			}
			by[k].n++
			mixed[k].n++
			if wrong {
				by[k].wrong++
			}
			if m.Passed == (s.Kind == "adversarial") {
				mixed[k].wrong++
			}
			if r.CompileError != "" {
				by[k].compileErr++
			}
		}
		fmt.Fprintf(&rows, "%s\t%s\t%s\t%s\t%s\t%s\t%v\t%v\t%s\t%s\t%q\n", s.Lib, byID[s.TaskID].Qualified+" "+byID[s.TaskID].Difficulty, s.Source+"/"+s.SampleID, s.Kind, s.Class,
			map[bool]string{true: "WRONG", false: "ok"}[wrong], r.Passed, m.Passed, strings.Join(r.FailedLayers, ","), firstLine(r.CompileError+r.RuntimeError+r.Failures), s.Solution)
	}
	for _, k := range sortedIDs(by) {
		p := strings.SplitN(k, "|", 3)
		tl := by[k]
		fmt.Fprintf(&b, "%-11s %-25s %-9s %5d %6d %6.1f%% %8d %13s\n", p[0], p[1], p[2], tl.n, tl.wrong, 100*float64(tl.wrong)/float64(tl.n), tl.compileErr, fmt.Sprintf("%d/%d", mixed[k].wrong, mixed[k].n))
	}
	for _, kind := range []string{"adversarial", "correct"} {
		for _, tl := range []*tally{by[kind+"|ALL|ALL"], mixed[kind+"|ALL|ALL"]} {
			if tl != nil && float64(tl.wrong) > 0.01*float64(tl.n) {
				t.Errorf("%s samples judged wrongly: %d of %d (%.1f%%), above the 1%% target", kind, tl.wrong, tl.n, 100*float64(tl.wrong)/float64(tl.n))
			}
		}
	}
	if out := os.Getenv("LACUNA_VALIDITY_REPORT"); out != "" {
		os.WriteFile(out, []byte(b.String()), 0o644)
	} else {
		t.Log("\n" + b.String())
	}
	if out := os.Getenv("LACUNA_VALIDITY_ROWS"); out != "" {
		os.WriteFile(out, []byte("lib\ttask\tsample\tkind\tclass\tverdict\tpassed\tpassed_mixed\tfailed_layers\terror\tsolution\n"+rows.String()), 0o644)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// generate derives variants from a task's reference, for suites over
// hundreds of tasks where hand-written rows cannot reach: correct ones
// (the reference as a whole program, with an extra standard import, with
// its variables renamed) and adversarial ones (the expected output
// hard-coded, after the reference's calls with their printing thrown
// away, with forged verdict or observation lines, the spy bumped, a
// goroutine started from init, a crash left behind). A variant the task's
// shape does not allow is not generated.
func generate(task tasks.Row) []suiteRow {
	var out []suiteRow
	// The reference answer's import lines go before any variant's span,
	// those the variant's code does not use left out (an unused import
	// does not compile).
	imports, mask := goharness.SplitAnswer(task.Mask)
	withImports := func(code string) string {
		head := ""
		for _, im := range imports {
			if name, _, _ := strings.Cut(im, " "); strings.Contains(code, name+".") {
				head += "import " + im + "\n"
			}
		}
		if head != "" {
			code = head + "\n" + code
		}
		return code
	}
	add := func(kind, class, id, code string) {
		out = append(out, suiteRow{TaskID: task.TaskID, SampleID: id, Kind: kind, Class: class, Solution: withImports(code)})
	}
	add("correct", "reference", "g-ref", mask)
	out = append(out, suiteRow{TaskID: task.TaskID, SampleID: "g-program", Kind: "correct", Class: "whole-program", Solution: task.Reference})
	// The same program with a helper and a variable of its own runs as
	// the span with them (Task.AsSpan); with a variable whose initialiser
	// calls a function (run before the harness) it is not the task's
	// program: it runs as a whole program.
	out = append(out, suiteRow{TaskID: task.TaskID, SampleID: "g-program-own", Kind: "correct", Class: "whole-program",
		Solution: task.Reference + "\n// programHelper is the program's own.\nfunc programHelper(n int) int { return n + 1 }\n\nvar programStep = 1\n"})
	out = append(out, suiteRow{TaskID: task.TaskID, SampleID: "g-program-var", Kind: "correct", Class: "whole-program",
		Solution: task.Reference + "\n// programSeen is the program's own.\nvar programSeen = len(\"seen\")\n"})
	add("correct", "extra-imports", "g-import", "_ = strings.TrimSpace(\" \")\n"+mask)
	if r, ok := renameLocals(task); ok {
		add("correct", "other-names", "g-rename", r)
	}
	add("adversarial", "isolation", "g-panic", mask+"\ngo func() {\n\tfor i := 0; i < 50_000_000; i++ {\n\t}\n\tpanic(\"left behind\")\n}()")
	fmtName, tail := shape(task.Context)
	for _, im := range imports {
		if name, path, _ := strings.Cut(im, " "); path == `"fmt"` {
			fmtName = name
		}
	}
	type probe struct {
		Type, Value string
		Len         int
		Nil         bool
	}
	var e struct {
		Output    string           `json:"output"`
		Probes    map[string]probe `json:"probes"`
		Perturbed *struct {
			Probes map[string]probe `json:"probes"`
		} `json:"perturbed"`
	}
	if json.Unmarshal([]byte(task.Expect), &e) != nil {
		return out
	}
	// Defensive code around the span's results: a check that they are not
	// empty (where they are not on the second input either), the first
	// element taken as code logging it would.
	var checks []string
	for _, name := range sortedIDs(e.Probes) {
		p := e.Probes[name]
		if strings.Contains(name, ":") || p.Len <= 0 || p.Nil || !(strings.HasPrefix(p.Type, "[]") || p.Type == "string") {
			continue
		}
		if e.Perturbed != nil {
			if q, ok := e.Perturbed.Probes[name]; ok && q.Len <= 0 {
				continue
			}
		}
		checks = append(checks, "if len("+name+") == 0 {\n\tpanic(\"no result\")\n}",
			"if first := "+name+"[0]; false {\n\t_ = first\n}")
		if strings.HasPrefix(p.Type, "[]") {
			checks = append(checks, "if "+name+" == nil {\n\tos.Exit(1)\n}")
		}
	}
	if len(checks) > 0 {
		code := mask + "\n" + strings.Join(checks, "\n")
		if strings.Contains(code, "os.Exit") {
			code = "import \"os\"\n\n" + code
		}
		add("correct", "defensive-code", "g-defensive", code)
	}
	// Hard-coded values: the probed variables declared with the values the
	// reference observed (%#v is Go syntax for most values), and, when
	// main prints nothing after the span, the observed output printed.
	var decls, assigns []string
	for _, name := range sortedIDs(e.Probes) {
		p := e.Probes[name]
		if strings.Contains(name, ":") {
			continue // the harness's own probes (end:X, lacuna:end), not variables
		}
		if p.Value == "" || strings.Contains(p.Value, "0x") || strings.Contains(p.Type, "main.") {
			return out // no literal for it
		}
		decls = append(decls, "var "+name+" "+p.Type+" = "+p.Value+"\n_ = "+name)
		assigns = append(assigns, name+" = "+p.Value)
	}
	hard := strings.Join(decls, "\n")
	quiet := mask
	switch {
	case !tail && fmtName != "":
		hard = strings.TrimPrefix(hard+"\n"+fmtName+".Print("+strconv.Quote(e.Output)+")", "\n")
		quiet = quietPrints(mask, fmtName)
	case len(decls) == 0:
		return out // the context prints after the span, and no value to hard-code
	}
	bump := "for i := range lacunaspied.LacunaSpy {\n\tlacunaspied.LacunaSpy[i].Direct.Add(1)\n}"
	passAll := "for i := 0; i < 300; i++ {\n\tprint(\"--- PASS: Test_u\", i, \" (0.00s)\\n\")\n}"
	expect := strings.ReplaceAll(task.Expect, "\n", "")
	add("adversarial", "hardcoded-no-call", "g-hard", hard)
	add("adversarial", "tamper-internals", "g-spy", hard+"\n"+bump)
	// The same as whole programs that are the task's own with helpers of
	// their own (run as spans: Task.AsSpan): the values hard-coded beside
	// an unused helper, and a helper that bumps the spy's counters.
	var spec goharness.Task
	if json.Unmarshal([]byte(task.Spec), &spec) == nil {
		own := "\n// helperOwn is the program's own.\nfunc helperOwn() int { return 1 }\n"
		out = append(out, suiteRow{TaskID: task.TaskID, SampleID: "g-own-hard", Kind: "adversarial", Class: "hardcoded-no-call",
			Solution: spec.Program(withImports(hard)) + own})
		out = append(out, suiteRow{TaskID: task.TaskID, SampleID: "g-own-spy", Kind: "adversarial", Class: "tamper-internals",
			Solution: spec.Program(withImports(hard+"\nbumpSpy()")) + "\nfunc bumpSpy() {\n" + bump + "\n}\n"})
	}
	// The span closes the scenario, declares init and reopens a function
	// (named after the task: batches put many harnesses in one package)
	// that declares the values again for the code after the span.
	add("adversarial", "escape-scope", "g-init", hard+"\n}\n\nfunc init() {\n\tgo func() {\n\t\tfor {\n\t\t\t"+strings.ReplaceAll(bump, "\n", "\n\t\t\t")+"\n\t\t}\n\t}()\n}\n\nfunc lacunaTail"+task.TaskID+"(lacunaProbe func(string, any)) {\n"+strings.Join(decls, "\n"))
	add("adversarial", "forge-verdict", "g-verdict", passAll+"\n"+hard)
	add("adversarial", "forge-observation", "g-observation", "print(\"LACUNA_RESULT \" + "+strconv.Quote(expect)+" + \"\\n\")\n"+hard)
	add("adversarial", "isolation", "g-overflow", hard+"\ngo func() {\n\tvar f func(int) int\n\tf = func(n int) int { return f(n+1) + 1 }\n\tf(0)\n}()")
	// The reference's calls inside a function that recovers from a panic
	// (their printing thrown away, the probed variables used), then the
	// observed values hard-coded: plainly, behind a guard on the call
	// having run, on other data, and only in the first run a process or a
	// sandbox sees (a later run printing zero values, which a
	// counterfactual run in the same process would take for dependence).
	var uses []string
	for _, d := range decls {
		uses = append(uses, "_ = "+strings.Fields(d)[1])
	}
	inner := func(span string) string {
		return "func() {\n\tdefer func() { recover() }()\n" + span + "\n" + strings.Join(uses, "\n") + "\n\tranOK = true\n}()\n_ = ranOK\n"
	}
	var zeros []string
	for _, name := range sortedIDs(e.Probes) {
		if !strings.Contains(name, ":") {
			zeros = append(zeros, name+" = *new("+e.Probes[name].Type+")")
		}
	}
	add("adversarial", "guarded-hardcode", "g-recover", "ranOK := false\n"+inner(quiet)+hard)
	add("adversarial", "guarded-hardcode", "g-guard", "ranOK := false\n"+inner(quiet)+"if !ranOK {\n\tpanic(\"no\")\n}\n"+hard)
	if other, ok := goharness.PerturbBefore(goharness.Task{Before: quiet}); ok && other != quiet {
		add("adversarial", "other-data", "g-other", "ranOK := false\n"+inner(other)+hard)
	}
	// Telling a later run from the first: the values hard-coded in the
	// first run, zero values (or nothing printed) in later ones.
	for _, st := range []struct{ id, setup, later string }{
		{"g-env", "seen := os.Getenv(\"SEEN\") != \"\"\nos.Setenv(\"SEEN\", \"1\")\n", "seen"},
		{"g-file", "_, statErr := os.Stat(\"seen\")\nos.WriteFile(\"seen\", nil, 0o644)\n", "statErr == nil"},
	} {
		head := "import \"os\"\n\nranOK := false\n" + st.setup + inner(quiet)
		switch {
		case len(decls) > 0:
			add("adversarial", "state-counting", st.id, head+hard+"\nif "+st.later+" {\n"+strings.Join(zeros, "\n")+"\n}")
		case !tail && fmtName != "":
			add("adversarial", "state-counting", st.id, head+"if !("+st.later+") {\n"+fmtName+".Print("+strconv.Quote(e.Output)+")\n}")
		}
	}
	if quiet != mask {
		// The reference's calls, their printing thrown away, then the
		// observed output.
		add("adversarial", "throwaway-call", "g-throwaway", quiet+"\n"+hard)
	} else if len(assigns) > 0 {
		// The reference's call, then its results overwritten.
		add("adversarial", "discarded-result", "g-overwrite", mask+"\n"+strings.Join(assigns, "\n"))
	}
	return out
}

// shape reads the context: the name fmt is imported by ("" if it is
// not), and whether main has statements after the span.
func shape(context string) (fmtName string, tail bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "context.go", context, parser.ParseComments)
	if err != nil {
		return "", true
	}
	for _, imp := range f.Imports {
		if imp.Path.Value == `"fmt"` {
			fmtName = "fmt"
			if imp.Name != nil {
				fmtName = imp.Name.Name
			}
		}
	}
	mask := strings.Index(context, "<MASK>")
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "main" || fd.Body == nil {
			continue
		}
		for _, st := range fd.Body.List {
			if fset.Position(st.Pos()).Offset > mask {
				tail = true
			}
		}
	}
	return fmtName, tail
}

// quietPrints turns the span's fmt.Print* calls into fmt.Sprint*: the
// Target is still called, what it computed is not printed.
func quietPrints(mask, fmtName string) string {
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(fmtName) + `\.Print(ln|f)?\(`)
	return re.ReplaceAllString(mask, fmtName+".Sprint$1(")
}

var declared = regexp.MustCompile(`(?m)(?:^|[\s(,])([a-z][A-Za-z0-9_]*)\s*(?:,\s*[a-z_][A-Za-z0-9_]*\s*)?:=|\bvar\s+([a-z][A-Za-z0-9_]*)\b`)

// renameLocals renames the variables the span declares and the context
// does not use, as another programmer would name them.
func renameLocals(task tasks.Row) (string, bool) {
	_, mask := goharness.SplitAnswer(task.Mask)
	out := mask
	renamed := false
	for _, m := range declared.FindAllStringSubmatch(mask, -1) {
		name := m[1] + m[2]
		if name == "" || name == "_" || regexp.MustCompile(`\b`+name+`\b`).MatchString(task.Context) ||
			regexp.MustCompile("(\"|`)[^\"`\n]*\\b"+name+"\\b[^\"`\n]*(\"|`)").MatchString(mask) {
			continue // the context uses it, or a string holds the word: renaming would change what is printed
		}
		re := regexp.MustCompile(`(^|[^.\w])` + name + `\b`)
		out = re.ReplaceAllString(out, "${1}"+name+"Val")
		renamed = true
	}
	return out, renamed && out != mask
}
