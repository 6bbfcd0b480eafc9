package pyharness

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Task difficulties, as goharness's: how much of the surrounding code the
// solver writes.
const (
	Easy   = "easy"
	Medium = "medium"
	Hard   = "hard"
)

// Target names the API a task is about, as runners/pyapi names it.
type Target struct {
	// ID is the defining module and the object's qualified name,
	// "pkg._impl:Point.norm" (pyapi.API.ID).
	ID string
	// Paths are the public dotted paths the object is reachable at
	// ("pkg.norm", "pkg.sub.norm"): pyapi.API.Paths. Their modules are
	// imported before the spy is installed, so that every alias exists
	// when it is patched.
	Paths []string
}

// Module is the defining module.
func (t Target) Module() string { m, _, _ := strings.Cut(t.ID, ":"); return m }

// QualName is the object's qualified name in its module.
func (t Target) QualName() string { _, q, _ := strings.Cut(t.ID, ":"); return q }

// Name is the last component of the qualified name.
func (t Target) Name() string {
	q := t.QualName()
	return q[strings.LastIndex(q, ".")+1:]
}

// Package is the top-level package.
func (t Target) Package() string { p, _, _ := strings.Cut(t.Module(), "."); return p }

// modules are the modules to import before patching: the defining one and
// those of every path.
func (t Target) modules() []string {
	seen := map[string]bool{}
	var out []string
	add := func(m string) {
		if m != "" && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	add(t.Module())
	for _, p := range t.Paths {
		if i := strings.LastIndex(p, "."); i > 0 {
			add(p[:i])
		}
	}
	return out
}

// Task is a coding task cut from a validated example: a program whose
// solver function has its body masked. The harness runs the function on
// each of Inputs; the reference's results there are the expectation.
type Task struct {
	Target     Target
	Example    string // the example the task comes from
	Difficulty string
	// Prelude is the module-level code before the solver function: the
	// imports the context's own code uses, helpers and data. It does not
	// import the target's package: that import is the solver's to write
	// (a wrong one is a WrongImport).
	Prelude string
	// Signature is the solver function's def line, "def solve(xs, n):".
	Signature string
	// Reference is the example's code as the function's body (import
	// lines included), unindented.
	Reference string
	// Inputs are Python expressions, evaluated in the program's namespace
	// after it ran, each the argument tuple (or the single argument) of
	// one call of the solver function. The first is the example's own;
	// the others perturb it, so that a solution right on one input by
	// accident, or one that ignores its input, fails.
	Inputs []string
	// Site is what Describe reads of the reference (Cut sets it).
	Site Site
}

var defLine = regexp.MustCompile(`^def ([A-Za-z_][A-Za-z0-9_]*)\(.*\)\s*(->.*)?:\s*$`)

// Function is the name of the solver function.
func (t Task) Function() string {
	if m := defLine.FindStringSubmatch(strings.TrimSpace(t.Signature)); m != nil {
		return m[1]
	}
	return ""
}

// Validate checks the task's shape: a def line, a reference, inputs, a
// target, and a prelude that leaves the target's import to the solver.
func (t Task) Validate() error {
	var errs []error
	if t.Function() == "" {
		errs = append(errs, fmt.Errorf("signature %q is not a def line", t.Signature))
	}
	if !strings.Contains(t.Target.ID, ":") || t.Target.QualName() == "" {
		errs = append(errs, fmt.Errorf("target ID %q is not module:qualname", t.Target.ID))
	}
	if strings.TrimSpace(t.Reference) == "" {
		errs = append(errs, errors.New("no reference"))
	}
	if len(t.Inputs) == 0 {
		errs = append(errs, errors.New("no inputs"))
	}
	if importsPackage(t.Prelude, t.Target.Package()) {
		errs = append(errs, fmt.Errorf("the prelude imports %s: the solver must write that import", t.Target.Package()))
	}
	return errors.Join(errs...)
}

// importsPackage reports whether code has an import statement naming pkg
// or one of its submodules.
func importsPackage(code, pkg string) bool {
	re := regexp.MustCompile(`(?m)^\s*(import|from)\s+` + regexp.QuoteMeta(pkg) + `(\.|\s|,|$)|(?m)^\s*import\s+.*,\s*` + regexp.QuoteMeta(pkg) + `(\.|\s|,|$)`)
	return re.MatchString(code)
}

// MaskMarker replaces the body in Context.
const MaskMarker = "    # <MASK>: your code here (import what you use)"

// Context is what the solver sees: the prelude and the solver function
// with its body masked.
func (t Task) Context() string {
	return joinCode(t.Prelude, t.Signature+"\n"+MaskMarker)
}

// Program is the program with solution in place, and the lines (1-based,
// inclusive) the solution occupies: only calls made from those lines count
// as the solver's. A solution is the function's body (indented or not,
// import lines included), or a whole definition of the function, which
// may be preceded by import lines and helpers of its own.
func (t Task) Program(solution string) (src string, first, last int) {
	solution = strings.Trim(dedent(solution), "\n")
	var sol string
	if definesFunction(solution, t.Function()) {
		sol = solution
	} else {
		sol = t.Signature + "\n" + indent(solution, "    ")
		if strings.TrimSpace(solution) == "" {
			sol = t.Signature + "\n    pass"
		}
	}
	head := ""
	if strings.TrimSpace(t.Prelude) != "" {
		head = strings.TrimRight(t.Prelude, "\n") + "\n\n"
	}
	first = strings.Count(head, "\n") + 1
	last = first + strings.Count(sol, "\n")
	return head + sol + "\n", first, last
}

// ReferenceProgram is the program with the reference in place.
func (t Task) ReferenceProgram() (string, int, int) { return t.Program(t.Reference) }

func definesFunction(code, name string) bool {
	return name != "" && regexp.MustCompile(`(?m)^def `+regexp.QuoteMeta(name)+`\(`).MatchString(code)
}

func joinCode(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if s := strings.Trim(p, "\n"); s != "" {
			keep = append(keep, s)
		}
	}
	return strings.Join(keep, "\n\n") + "\n"
}

func indent(code, prefix string) string {
	lines := strings.Split(code, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

// dedent removes the indentation all non-blank lines share.
func dedent(code string) string {
	lines := strings.Split(code, "\n")
	for i, l := range lines {
		rest := strings.TrimLeft(l, " \t")
		lead := l[:len(l)-len(rest)]
		lines[i] = strings.ReplaceAll(lead, "\t", "    ") + rest
	}
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if common < 0 || n < common {
			common = n
		}
	}
	if common <= 0 {
		return code
	}
	for i, l := range lines {
		if len(l) >= common {
			lines[i] = l[common:]
		} else {
			lines[i] = strings.TrimLeft(l, " ")
		}
	}
	return strings.Join(lines, "\n")
}
