package pyharness

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/lacuna-dev/lacuna/runners/pyapi"
)

//go:embed cut.py
var cutHelper string

// CutHelperSource is the embedded helper Cut runs; callers that cache
// tasks put its digest in their key.
func CutHelperSource() string { return cutHelper }

// Site is what Describe reads of a task's reference around the target's
// call, as Cut wrote it.
type Site struct {
	// Args are the call's arguments as the reference writes them (a
	// literal lifted into a parameter is the parameter's name).
	Args []string `json:"args"`
	// Recv is the value a method is called on ("" for a function or a
	// class).
	Recv string `json:"recv"`
	// Data are the statements a medium task's body runs before the call
	// (the data the call is given, set up by the example).
	Data []string `json:"data"`
	// Setup are the statements of an easy or medium task's body before
	// the call that use the package (building a method's receiver): the
	// context would show them, but the prelude cannot import the package;
	// and those binding a variable the call's statement reads and rebinds
	// (a loop's counter), which must be solve's own.
	Setup []string `json:"setup"`
	// After are the statements an easy or medium task's body runs after a
	// class whose body holds the call (Around "class"), as the example
	// writes them (literals lifted): what it computes from the class.
	After []string `json:"after"`
	// Class is the class statement holding the call (Around "class") of
	// an easy or medium task, as the example writes it (literals lifted)
	// with the target's call shown as "<the call>" and whatever else in
	// it names the target (another call, an uncalled reference such as
	// default_factory=T) as "<it>": its fields, types and bases are the
	// task's, not the solver's to guess.
	Class string `json:"class"`
	// Aliases are the names other than its own that the example binds the
	// target to (from pkg import scale as T; a name the package exports
	// it at): code that Describe quotes must not name them either.
	Aliases []string `json:"aliases,omitempty"`
	// Repeats: the last input repeats the first (a class span, defined
	// again on each input and pass in one process): UsableInputs compares
	// their outcomes to tell whether a second definition of the class
	// changes what it does.
	Repeats bool `json:"repeats"`
	// PlainData are the statements of a hard task's body before the call
	// that use nothing of the package.
	PlainData []string `json:"plain_data"`
	// Returns is the expression the reference returns.
	Returns string `json:"returns"`
	// Prints: the example printed that expression (print(...)) rather than
	// displaying its value.
	Prints bool `json:"prints"`
	// Collects: the call sits in a for, with, if or try statement (or,
	// with Shows, a later one shows the class holding it) whose prints
	// Returns collects (a list of each print's argument, a tuple of
	// several, in order); every print in it is a plain print(...) (some
	// arguments, none starred, no keyword), so the list is what it
	// printed. Want is what those prints printed.
	Collects bool `json:"collects"`
	// Around is the statement around the call, "for", "with", "if", "try"
	// or "class" (a class the example defines), when the call sits in one;
	// "" otherwise. (An async for or with is not one: solve is a plain
	// function, where either is a SyntaxError.)
	Around string `json:"around"`
	// Shows is the compound statement after the call ("try", "for", ...)
	// whose prints Returns collects, when a later step's prints are the
	// result (a class's, shown by a try that prints); "" otherwise.
	Shows string `json:"shows"`
	// Effect: the call shows nothing (a side effect); Returns is what a
	// later step of the example shows of what it changed.
	Effect bool `json:"effect"`
	// Want is the example's expected output of the step whose result is
	// returned: the displayed (repr) or printed value on the example's own
	// input.
	Want string `json:"want"`
}

// Skip is an example, or one level of it, that Cut could not make a task
// of, and why.
type Skip struct {
	Example string
	Level   string // "" when no level could be cut
	Reason  string
}

// Cut builds the graded tasks of a validated example of api (an example
// that passed in the sandbox: Cut does not run it). It parses the
// example's steps with the embedded helper (CutHelperSource) run by
// python as a subprocess; nothing of the library is imported. The steps
// are read as doctest runs them: a docstring's example (Example.Module
// set) uses its module's globals unimported, and those become imports of
// that module in the reference, as do the names an example's star import
// of a package module supplies; a star import of a standard library
// module binds the names that module lists (the helper imports it to
// list them; a star import of another library binds none it can know).
//
// The first statement that calls the target (a function or class by a
// name imported from the package or a module global, or through a module
// of the package; a method by its name on any value but a module) is the
// call. Its result is what solve returns: the displayed expression (the
// argument of print(...)), or the variables it assigns; for a call that
// shows nothing (a side effect), what the first later step shows of a
// variable the call reads (its receiver, an argument), with nothing
// rebinding it between. A call in a top-level for, with, if or try
// statement (in its header or anywhere in its blocks) makes the whole
// statement the call's step, the span every level keeps at the top of
// solve's body: a loop's single iteration, a with's body or a try's
// alone, is not what the example shows, and the statement's own
// variables (the loop's target, the with's "as" names, the exception's
// name) stay bound as the example binds them. Its result is the list of
// what the statement prints, each print(...) in it rewritten to append
// its argument (a tuple of several) to that list (Site.Collects); a
// statement with a print that this list would not match (a keyword such
// as end=, sep= or file=, a starred argument, no argument) is skipped, as
// is a top-level print(...) of the call with one. When it prints nothing,
// the result is the variable of solve's own scope that its blocks assign
// whatever path it takes and that a later step shows alone (Site.Want):
// one a loop's or a with's blocks assign (a loop's else too), a try's
// finally, or its body or else when every handler that does not end in
// raise assigns it too (the body may raise before it assigns: solve would
// return it unbound), an if's on both branches;
// never a loop's target, a with's "as" name, an except's name, nor a name
// a comprehension, lambda, function or class inside binds (the example's
// run leaves those unbound, or they are not solve's). One that assigns
// none, or none that a later step shows, is skipped, and so is one that
// loops over a set (a set
// display or comprehension, set(...), frozenset(...)): its order follows
// the strings' hashes, which PYTHONHASHSEED changes between the reference
// runs Derive compares, and with few items those runs often agree by
// chance, fixing one order as the expectation.
//
// A call in the body of a class the example defines (a field's default,
// an Annotated metadata, a decorator of a method, an argument of the
// class statement) makes the class statement the call's step (Site.Around
// "class"): solve defines the class with the call, then runs what the
// example computes from it up to the first step that shows something of
// it (an expression with output, a print, or a compound statement that
// prints, collected as above with Site.Shows its keyword), with the steps
// between that it needs, and those binding a name the class reads (a
// method or a default factory reads it when called: base = 10 after the
// class); a name the class reads that one of those rebinds, bound before
// the class too, moves its binding into the body (Site.Setup). Site.After
// quotes them, and Site.Class the class with the target's call written
// "<the call>" (another call of the target in it "<it>(...)"). That step's result is
// what solve returns: the class's behaviour (a validation's result, the
// error it raises and the example prints) is what is compared, never the
// class object itself, which the driver describes by its name alone. The
// literal arguments of the example's calls of the class are lifted into
// parameters too, so a perturbed input exercises the class again; none is
// named after a name the class body binds (a class body reads such a name
// from the module, never from solve). A call in a function the example
// defines runs only when called: it is skipped, as is a class whose
// behaviour no later step shows. A target used only as an annotation or a
// base class is not called: no task (the spy sees calls, and the mock
// layer replaces a call's result, so neither would see the dependence).
//
// A variable's result is shown
// by a later step that displays or prints it alone (Site.Want, with
// Site.Prints for print). A variable the call's statement reads before
// it binds it, in the order the statement runs (i += 1 in the loop, or
// for k in range(k)), is solve's local read unbound: the statements
// binding it before the call move from the prelude into every level's
// body. A loop's target or a with's "as" name bound before anything
// reads it moves nothing.
// Fenced examples (pyapi.OriginFenced) cut as
// doctests do: their steps are their top-level statements, so a class or
// a decorated function they define is one statement (the prelude's when
// it uses nothing of the package, the body's when it does), and a step
// without "#> " output shows nothing (Want is "") unless it prints.
// The levels are
// goharness's, in solve's terms:
//
//   - easy: the body is the call's statement and the package's statements
//     it needs (building its receiver); everything else before it that
//     does not use the package is the prelude.
//   - medium: also the statements that set up the data the call is given
//     (those it depends on, transitively); skipped when there are none.
//     A statement the prelude would keep that reads a name only the body
//     now binds (or one such a statement binds) is left out: the body
//     does not need it, and the prelude would raise NameError.
//   - hard: every statement of the example up to the last one that shows
//     a result, which is returned; the prelude keeps only the example's
//     imports of other modules; skipped when the example calls nothing
//     else of the package to compose with.
//
// solve's parameters are the prelude's variables the body reads, then the
// literal arguments of the target's call and of the package's calls the
// easy body makes, lifted (named after the API's parameters where the
// position or keyword says which). Inputs are the example's own values,
// then one perturbed input per parameter whose value is a literal (lifted,
// or a prelude variable assigned a literal), that value changed as
// goharness.PerturbBefore changes literals and the others kept: an int or
// a float grows by one, a str or bytes gets "x" appended, a list, tuple,
// set or dict has each item (each value) changed; booleans, None and
// complex numbers stay. One parameter at a time, so that a change the
// library refuses (a date string with "x") spoils one input, not all;
// UsableInputs then keeps those the reference can use. A class span's
// inputs end with the example's own again (Site.Repeats; UsableInputs).
// The prelude never imports the package (Task.Validate).
//
// An example with no task, and each level it cannot support, is in
// skipped with the reason: a property (read, not called), no step calling
// the target, the target only in the expected output, a call whose step
// shows no result, sets no variable and changes nothing a later step
// shows, a result stored into an attribute or item, a call in a compound
// statement other than for, with, if and try (while, match, async for,
// async with), in a function's body, or in a class's body that no later
// step shows, a compound statement with a print the collected list would
// not match, one looping over a set, one that prints nothing and assigns
// no variable a later step shows, a step that does not parse, a shape of
// code the helper fails on (with its exception). err is for a helper that
// could not run. Safe for concurrent use.
func Cut(ctx context.Context, python string, api pyapi.API, ex pyapi.Example) (tasks []Task, skipped []Skip, err error) {
	res, err := CutAll(ctx, python, []Cuttable{{API: api, Example: ex}})
	if err != nil {
		return nil, nil, err
	}
	return res.Tasks, res.Skipped, nil
}

// Cuttable is an example with the API it exercises.
type Cuttable struct {
	API     pyapi.API
	Example pyapi.Example
}

// CutResult is what CutAll made: every task, and every example or level
// skipped. An example with no task is counted in Skipped with Level "".
type CutResult struct {
	Tasks   []Task
	Skipped []Skip
}

// CutAll is Cut over many examples in one helper process.
func CutAll(ctx context.Context, python string, items []Cuttable) (CutResult, error) {
	type target struct {
		Name     string   `json:"name"`
		QualName string   `json:"qualname"`
		Kind     string   `json:"kind"`
		Module   string   `json:"module"`
		Package  string   `json:"package"`
		Path     string   `json:"path"`
		Paths    []string `json:"paths"`
		Params   []string `json:"params"`
	}
	type step struct {
		Source string `json:"source"`
		Want   string `json:"want"`
	}
	type request struct {
		Target target `json:"target"`
		Module string `json:"module"`
		Steps  []step `json:"steps"`
	}
	reqs := make([]request, len(items))
	for i, it := range items {
		tg := Target{ID: it.API.ID}
		r := request{Module: it.Example.Module, Target: target{
			Name: tg.Name(), QualName: tg.QualName(), Kind: it.API.Kind, Module: tg.Module(),
			Package: tg.Package(), Path: it.API.Path, Paths: it.API.Paths,
		}}
		if r.Target.Path == "" && len(it.API.Paths) > 0 {
			r.Target.Path = it.API.Paths[0]
		}
		for _, p := range it.API.Params {
			if p.Kind == "var_positional" || p.Kind == "var_keyword" || p.Kind == "keyword_only" {
				break
			}
			r.Target.Params = append(r.Target.Params, p.Name)
		}
		for _, s := range it.Example.Steps {
			r.Steps = append(r.Steps, step{Source: s.Source, Want: s.Want})
		}
		reqs[i] = r
	}
	in, err := json.Marshal(reqs)
	if err != nil {
		return CutResult{}, err
	}
	out, err := runCutHelper(ctx, python, in)
	if err != nil {
		return CutResult{}, fmt.Errorf("pyharness: cut: %w", err)
	}
	type answer struct {
		Skip  string `json:"skip"`
		Tasks []struct {
			Difficulty string   `json:"difficulty"`
			Prelude    string   `json:"prelude"`
			Signature  string   `json:"signature"`
			Reference  string   `json:"reference"`
			Inputs     []string `json:"inputs"`
			Site       Site     `json:"site"`
		} `json:"tasks"`
		Skipped map[string]string `json:"skipped"`
	}
	var answers []answer
	if err := json.Unmarshal(out, &answers); err != nil {
		return CutResult{}, fmt.Errorf("pyharness: cut: helper output: %w", err)
	}
	if len(answers) != len(items) {
		return CutResult{}, fmt.Errorf("pyharness: cut: %d answers for %d examples", len(answers), len(items))
	}
	var res CutResult
	for i, a := range answers {
		name := items[i].Example.Name
		if a.Skip != "" {
			res.Skipped = append(res.Skipped, Skip{Example: name, Reason: a.Skip})
			continue
		}
		for _, lvl := range []string{Easy, Medium, Hard} {
			if why, ok := a.Skipped[lvl]; ok {
				res.Skipped = append(res.Skipped, Skip{Example: name, Level: lvl, Reason: why})
			}
		}
		for _, t := range a.Tasks {
			task := Task{
				Target:     Target{ID: items[i].API.ID, Paths: items[i].API.Paths},
				Example:    name,
				Difficulty: t.Difficulty,
				Prelude:    t.Prelude,
				Signature:  t.Signature,
				Reference:  t.Reference,
				Inputs:     t.Inputs,
				Site:       t.Site,
			}
			if err := task.Validate(); err != nil {
				res.Skipped = append(res.Skipped, Skip{Example: name, Level: t.Difficulty, Reason: "the cut task is invalid: " + err.Error()})
				continue
			}
			res.Tasks = append(res.Tasks, task)
		}
	}
	return res, nil
}

// UsableInputs keeps the inputs of t that its expectation can use, as
// goharness's Derive keeps its second input: the example's own (the
// first) always; a perturbed one only when the reference returns there
// where it returns on the first, and computes an outcome no input kept
// before it has (otherwise the input tells no solution apart that the
// others do not). dropped says why each other input went. The task and
// the expectation come back with the same inputs, in order.
//
// With Site.Repeats the last input repeats the first and always goes. It
// was run because a class span is defined again on every input, and a
// second definition may change what the class does (a registry:
// SQLAlchemy's declarative base, an __init_subclass__ that refuses a name
// twice). Every input now runs in a process of its own, so the repeat
// computes what the first did; should its outcome differ anyway, only the
// first input is kept, and it is not Dependent: the change may be the
// class's, not the substitution's. Such a task has no Dependent outcome,
// so C1 always drops it ("no outcome depends on the target"): it is kept
// here, not dropped, so that the drop is counted with C1's reason and
// dropped says why. The task comes back without Repeats: its inputs no
// longer end with one.
//
// The result shares no slice with t or exp: appending to it changes
// neither.
func UsableInputs(t Task, exp Expectation) (Task, Expectation, []string) {
	n := len(t.Inputs)
	if len(exp.Expected) != n || len(exp.Dependent) != n || n == 0 {
		return t, exp, nil
	}
	var dropped []string
	if t.Site.Repeats && n > 1 {
		n--
		first, again := exp.Expected[0], exp.Expected[n]
		// Values that vary from run to run are not compared: the runs
		// tell nothing of a second definition there.
		if first.Raises != again.Raises || (first.Exact && again.Exact && !bytes.Equal(first.Value, again.Value)) {
			out, oexp := t, Expectation{Calls: exp.Calls, ArgsMode: exp.ArgsMode, Expected: []Expected{exp.Expected[0]}, Dependent: []bool{false}, Substituted: []Expected{{}}}
			if len(exp.Args) > 0 {
				oexp.Args = [][]string{exp.Args[0]}
			}
			out.Inputs, out.Site.Repeats = []string{t.Inputs[0]}, false
			for i := 1; i < len(t.Inputs); i++ {
				dropped = append(dropped, fmt.Sprintf("input %d %s: the class defined again in the same process computes something else on the example's own input (a registry of classes?), so only the first definition's outcome is kept, and the substituted variant asserts nothing", i, t.Inputs[i]))
			}
			return out, oexp, dropped
		}
		dropped = append(dropped, fmt.Sprintf("input %d %s: it repeats the example's own input, and the class defined again computes the same there", n, t.Inputs[n]))
	}
	keep := []int{0}
	for i := 1; i < n; i++ {
		e := exp.Expected[i]
		if e.Raises != "" && exp.Expected[0].Raises == "" {
			dropped = append(dropped, fmt.Sprintf("input %d %s: the reference raises %s there", i, t.Inputs[i], e.Raises))
			continue
		}
		same := -1
		for _, j := range keep {
			k := exp.Expected[j]
			if e.Raises == k.Raises && (e.Raises != "" || (e.Exact && k.Exact && bytes.Equal(e.Value, k.Value))) {
				same = j
				break
			}
		}
		if same >= 0 {
			dropped = append(dropped, fmt.Sprintf("input %d %s: the reference computes there what it computes on input %d", i, t.Inputs[i], same))
			continue
		}
		keep = append(keep, i)
	}
	out, oexp := t, Expectation{Calls: exp.Calls, ArgsMode: exp.ArgsMode}
	out.Inputs, out.Site.Repeats = nil, false
	for _, i := range keep {
		out.Inputs = append(out.Inputs, t.Inputs[i])
		oexp.Expected = append(oexp.Expected, exp.Expected[i])
		oexp.Dependent = append(oexp.Dependent, exp.Dependent[i])
		if i < len(exp.Args) {
			oexp.Args = append(oexp.Args, exp.Args[i])
		}
		if i < len(exp.Substituted) {
			oexp.Substituted = append(oexp.Substituted, exp.Substituted[i])
		} else {
			oexp.Substituted = append(oexp.Substituted, Expected{})
		}
	}
	return out, oexp, dropped
}

func runCutHelper(ctx context.Context, python string, stdin []byte) ([]byte, error) {
	return runHelper(ctx, python, cutHelper, stdin)
}

// runHelper runs a helper's source with python, isolated (-I -S -B, a
// fixed environment), stdin as its input, and returns what it printed;
// its stderr is the error's.
func runHelper(ctx context.Context, python, helper string, stdin []byte) ([]byte, error) {
	if python == "" {
		return nil, errors.New("no interpreter")
	}
	cmd := exec.CommandContext(ctx, python, "-I", "-S", "-B", "-X", "utf8", "-c", helper)
	cmd.Dir = os.TempDir()
	cmd.Env = []string{"LC_ALL=C.UTF-8", "HOME=" + os.TempDir(), "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("%w: %s", err, cut(strings.TrimSpace(stderr.String()), 4000))
	}
	return stdout.Bytes(), nil
}
