package pyharness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lacuna-dev/lacuna/novelapibench/calls"
)

// Expectation is what the reference did, on every input, in every one of
// the runs it was derived from. It is compared in lacuna's process: the
// expected values never enter the process a solution runs in.
type Expectation struct {
	Expected []Expected `json:"expected"`
	// Dependent says, per input, whether the reference's outcome changes
	// when its own calls of the target are substituted (their results
	// replaced by other values of the same type and shape): only those
	// outcomes are computed through the target. C1 drops a task with
	// none.
	Dependent []bool `json:"dependent"`
	// Substituted is, per input, the reference's outcome under the
	// substitution, as Expected is under none; asserted where Dependent:
	// a solution under the same substitution must compute the same.
	Substituted []Expected `json:"substituted,omitempty"`
	// Calls are the reference's direct calls (their shapes).
	Calls []Call `json:"calls"`
	// Args are, per input, the argument tuples the reference's calls of
	// the target received (Record.Args), compared as a set: under ArgsMode
	// ModeExact as recorded, ModeUnordered in their order-free form (the
	// reference's runs varied only in order); "" asserts nothing (they
	// varied more, or were cut). A solution's calls must receive the
	// task's data: no call on other data, none missing.
	Args     [][]string `json:"args,omitempty"`
	ArgsMode string     `json:"args_mode,omitempty"`
}

// Argument modes of Expectation.ArgsMode.
const (
	ModeExact     = "exact"
	ModeUnordered = "unordered"
)

// Expected is the reference's outcome on one input.
type Expected struct {
	// Value is the reference's value description, with "vary": true on
	// each part where the runs disagreed (hash order, addresses, time):
	// of those only the kind and type are asserted, the rest exactly; and
	// "anytype": true as well where even the kind or type disagreed (a
	// random pick among items of different types): of those nothing.
	Value json.RawMessage `json:"value,omitempty"`
	// Exact: every run gave the same value (nothing is marked vary).
	Exact bool `json:"exact"`
	// Raises is the exception type the reference raised ("" when it
	// returned).
	Raises string `json:"raises,omitempty"`
}

// Derive builds the expectation from runs of the reference (separate
// processes, so hash randomisation differs between them). Every run must
// have run, called the target directly, and raised on the same inputs.
// An input's outcome is Dependent when, in every run, the substituted
// variant's outcome fails the expectation on it; its substituted
// expectation is derived as the normal one is (an input whose substituted
// runs were lost or raised in some runs only is not Dependent).
func Derive(runs []Run) (Expectation, error) {
	if len(runs) == 0 {
		return Expectation{}, errors.New("pyharness: no runs of the reference")
	}
	for i, r := range runs {
		switch {
		case r.Record == nil:
			return Expectation{}, fmt.Errorf("pyharness: reference run %d: %s\n%s", i, r.Problem, r.Output)
		case r.Record.Stage != "ran":
			return Expectation{}, fmt.Errorf("pyharness: reference run %d: %s: %s", i, r.Record.Stage, r.Record.Error)
		case r.Record.Direct == 0:
			return Expectation{}, fmt.Errorf("pyharness: reference run %d never calls the target directly", i)
		case len(r.Record.Real) != len(runs[0].Record.Real) || len(r.Record.Substituted) != len(r.Record.Real):
			return Expectation{}, fmt.Errorf("pyharness: reference run %d: outcomes missing", i)
		}
	}
	first := runs[0].Record
	exp := Expectation{Calls: first.Calls}
	for i := range first.Real {
		real := make([]Outcome, len(runs))
		sub := make([]Outcome, len(runs))
		for j, r := range runs {
			real[j], sub[j] = r.Record.Real[i], r.Record.Substituted[i]
		}
		e, err := expectOutcomes(real)
		if err != nil {
			return Expectation{}, fmt.Errorf("pyharness: input %d: %w", i, err)
		}
		dep := true
		for _, o := range sub {
			if o.Lost != "" || meets(e, o) {
				dep = false
			}
		}
		var s Expected
		if dep {
			if s, err = expectOutcomes(sub); err != nil {
				dep, s = false, Expected{}
			}
		}
		exp.Expected = append(exp.Expected, e)
		exp.Dependent = append(exp.Dependent, dep)
		exp.Substituted = append(exp.Substituted, s)
	}
	exp.Args, exp.ArgsMode = first.Args, ModeExact
	for _, r := range runs {
		switch {
		case r.Record.ArgsCut || len(r.Record.Args) != len(first.Real) || len(r.Record.ArgsFree) != len(first.Real) || slices.ContainsFunc(r.Record.Args, func(a []string) bool { return len(a) == 0 }):
			exp.ArgsMode = ""
		case exp.ArgsMode == ModeExact && slices.EqualFunc(r.Record.Args, first.Args, slices.Equal):
		case slices.EqualFunc(r.Record.ArgsFree, first.ArgsFree, slices.Equal):
			exp.ArgsMode = ModeUnordered
		default:
			exp.ArgsMode = ""
		}
		if exp.ArgsMode == "" {
			exp.Args = nil
			break
		}
	}
	if exp.ArgsMode == ModeUnordered {
		exp.Args = first.ArgsFree
	}
	return exp, nil
}

// expectOutcomes is what outcomes of one input in several runs assert: the
// exception type they all raised, or the first's value with the parts
// where the others disagree marked (markVary).
func expectOutcomes(outs []Outcome) (Expected, error) {
	o := outs[0]
	if o.Lost != "" {
		return Expected{}, errors.New("lost: " + o.Lost)
	}
	e := Expected{Value: o.Value, Exact: true}
	if o.Raised != nil {
		e = Expected{Raises: o.Raised.Type, Exact: true}
	}
	var merged map[string]any
	if o.Raised == nil {
		if err := decode(o.Value, &merged); err != nil {
			return Expected{}, fmt.Errorf("run 0: %w", err)
		}
	}
	for j, ro := range outs {
		if ro.Lost != "" {
			return Expected{}, errors.New("lost: " + ro.Lost)
		}
		if (ro.Raised == nil) != (o.Raised == nil) || (o.Raised != nil && ro.Raised.Type != o.Raised.Type) {
			return Expected{}, errors.New("the reference raises in some runs only")
		}
		if o.Raised == nil && !bytes.Equal(ro.Value, o.Value) {
			e.Exact = false
			var other map[string]any
			if err := decode(ro.Value, &other); err != nil {
				return Expected{}, fmt.Errorf("run %d: %w", j, err)
			}
			markVary(merged, other)
		}
	}
	if !e.Exact {
		b, err := json.Marshal(merged)
		if err != nil {
			return Expected{}, err
		}
		e.Value = b
	}
	return e, nil
}

// meets reports whether outcome o is what e asserts: the exception type
// e raises, or a value equal to e's on its asserted parts.
func meets(e Expected, o Outcome) bool {
	if o.Lost != "" {
		return false
	}
	if e.Raises != "" || o.Raised != nil {
		return e.Raises != "" && o.Raised != nil && o.Raised.Type == e.Raises
	}
	ok, _ := compareValues(e.Value, o.Value)
	return ok
}

// markVary marks vary each part of w (a description) where g, another
// run's description of the same value, disagrees: a scalar's value, a
// container's length; a repr that differs is dropped. A part whose kind or
// type differs is marked anytype as well (nothing of it is asserted); in
// a list or a set, one varying item makes all vary (spreadVary).
func markVary(w, g map[string]any) {
	if w == nil || w["anytype"] == true {
		return
	}
	if g == nil || w["t"] != g["t"] || w["type"] != g["type"] {
		// Not even its kind and type are stable (an item a random choice
		// takes from one of several sequences): nothing of it is asserted.
		w["vary"], w["anytype"] = true, true
		return
	}
	if w["vary"] == true {
		return
	}
	if fmt.Sprint(w["len"]) != fmt.Sprint(g["len"]) ||
		fmt.Sprint(w["dtype"]) != fmt.Sprint(g["dtype"]) || fmt.Sprint(w["shape"]) != fmt.Sprint(g["shape"]) {
		w["vary"] = true
		return
	}
	if _, ok := w["repr"]; ok && fmt.Sprint(w["repr"]) != fmt.Sprint(g["repr"]) {
		delete(w, "repr")
	}
	if _, ok := w["items"]; !ok {
		if diff(w, g, "") != "" {
			w["vary"] = true
		}
		return
	}
	wi, _ := w["items"].([]any)
	gi, _ := g["items"].([]any)
	if len(wi) != len(gi) {
		w["vary"] = true
		return
	}
	types := map[string]bool{}
	defer spreadVary(w, types)
	for i := range wi {
		switch wx := wi[i].(type) {
		case map[string]any:
			gx, _ := gi[i].(map[string]any)
			markVary(wx, gx)
			if w["t"] == "list" || w["t"] == "set" {
				types[fmt.Sprint(gx["t"], gx["type"])] = true
			}
		case []any: // a dict entry or an attribute: [key, value]
			gx, _ := gi[i].([]any)
			if len(gx) != len(wx) {
				w["vary"] = true
				return
			}
			for j := range wx {
				wm, wok := wx[j].(map[string]any)
				gm, _ := gx[j].(map[string]any)
				if !wok {
					if fmt.Sprint(wx[j]) != fmt.Sprint(gx[j]) {
						w["vary"] = true
						return
					}
					continue
				}
				markVary(wm, gm)
			}
		}
	}
}

// spreadVary: a list or a set is a collection of like items, so an item
// whose value varies between runs means its order does (a random pick, a
// shuffle), and an item that agreed in the runs seen may differ in the
// next: when one item of w varies, every item is marked as it is, and
// anytype when the items of the runs (types, seen in g, the other run)
// are of more than one kind or type or one is anytype already.
func spreadVary(w map[string]any, types map[string]bool) {
	if w["t"] != "list" && w["t"] != "set" {
		return
	}
	items, _ := w["items"].([]any)
	varies, anyType := false, false
	for _, x := range items {
		m, ok := x.(map[string]any)
		if !ok {
			continue
		}
		types[fmt.Sprint(m["t"], m["type"])] = true
		varies = varies || m["vary"] == true
		anyType = anyType || m["anytype"] == true
	}
	if !varies {
		return
	}
	anyType = anyType || len(types) > 1
	for _, x := range items {
		if m, ok := x.(map[string]any); ok {
			m["vary"] = true
			if anyType {
				m["anytype"] = true
			}
		}
	}
}

// Harness layers, in the order Check applies them.
const (
	LayerIntegrity   = "integrity"   // no record, or one that failed authentication
	LayerRun         = "run"         // the program did not compile, load or finish
	LayerStructural  = "structural"  // the target was not called from the solution
	LayerComparative = "comparative" // an outcome differs from the reference's
	LayerInput       = "input"       // the solution's calls of the target received other data than the reference's
	// LayerSubstitution: with the target's results substituted, an
	// outcome the reference computes through them differs from the
	// reference's.
	LayerSubstitution = "substitution"
)

// Verdict is a sample's result against an expectation.
type Verdict struct {
	Passed bool
	Layer  string // the layer that failed ("" when passed)
	Reason string
}

// Check applies the harness's layers to a sample's run: integrity, the
// run itself, structural (the solution's own lines called the target),
// comparative (each input's outcome equals the reference's: values within
// float tolerance, the same exception type where the reference raised),
// input (the solution's calls of the target received the task's data:
// the reference's argument tuples, no other and none missing) and
// substitution (with the target's results substituted, every outcome the
// reference computes through them is what the reference computes then).
func Check(exp Expectation, run Run) Verdict {
	fail := func(layer, format string, args ...any) Verdict {
		return Verdict{Layer: layer, Reason: fmt.Sprintf(format, args...)}
	}
	rec := run.Record
	if rec == nil {
		return fail(LayerIntegrity, "%s", run.Problem)
	}
	if rec.Stage != "ran" {
		return fail(LayerRun, "%s: %s", rec.Stage, rec.Error)
	}
	if rec.Direct == 0 {
		return fail(LayerStructural, "the solution never calls the target (%d calls from elsewhere)", rec.Indirect)
	}
	if len(rec.Real) != len(exp.Expected) {
		return fail(LayerRun, "%d outcomes, want %d", len(rec.Real), len(exp.Expected))
	}
	for i, e := range exp.Expected {
		o := rec.Real[i]
		switch {
		case e.Raises != "" && (o.Raised == nil || o.Raised.Type != e.Raises):
			return fail(LayerComparative, "input %d: the reference raises %s; the solution gives %s", i, e.Raises, outcomeString(o))
		case e.Raises != "":
		case o.Raised != nil:
			return fail(LayerComparative, "input %d: raises %s", i, o.Raised)
		default:
			ok, why := compareValues(e.Value, o.Value)
			if !ok {
				return fail(LayerComparative, "input %d: %s", i, why)
			}
		}
	}
	if msg := exp.checkArgs(rec); msg != "" {
		return fail(LayerInput, "%s", msg)
	}
	for i, dep := range exp.Dependent {
		if !dep || i >= len(exp.Substituted) {
			continue
		}
		if i >= len(rec.Substituted) {
			return fail(LayerSubstitution, "input %d: the solution did not run with the target's results substituted", i)
		}
		e, o := exp.Substituted[i], rec.Substituted[i]
		const with = "with the target's results replaced by other values of the same type and shape"
		switch {
		case o.Lost != "":
			return fail(LayerSubstitution, "input %d, %s: %s", i, with, o.Lost)
		case e.Raises != "" && (o.Raised == nil || o.Raised.Type != e.Raises):
			return fail(LayerSubstitution, "input %d, %s: the reference raises %s; the solution gives %s: not computed through the target's results", i, with, e.Raises, outcomeString(o))
		case e.Raises != "":
		case o.Raised != nil:
			return fail(LayerSubstitution, "input %d, %s: raises %s where the reference returns: not computed through the target's results", i, with, o.Raised)
		default:
			if ok, why := compareValues(e.Value, o.Value); !ok {
				return fail(LayerSubstitution, "input %d, %s: %s: not computed through the target's results", i, with, why)
			}
		}
	}
	return Verdict{Passed: true}
}

// checkArgs compares the argument tuples of a solution's calls of the
// target with the reference's ("" when they agree or nothing is
// asserted).
func (exp Expectation) checkArgs(rec *Record) string {
	if exp.ArgsMode == "" || rec.Direct == 0 {
		return ""
	}
	if rec.ArgsCut {
		return fmt.Sprintf("the target was called with more than %d different arguments or 10,000 times on an input", maxArgTuples)
	}
	all := rec.Args
	if exp.ArgsMode == ModeUnordered {
		all = rec.ArgsFree
	}
	for i, want := range exp.Args {
		var got []string
		if i < len(all) {
			got = all[i]
		}
		if msg := argsDiffer(want, got); msg != "" {
			return fmt.Sprintf("input %d: %s", i, msg)
		}
	}
	return ""
}

// argsDiffer compares one input's argument tuples ("" when they agree).
func argsDiffer(want, got []string) string { return calls.Diff(want, got, false) }

func outcomeString(o Outcome) string {
	if o.Raised != nil {
		return "raises " + o.Raised.String()
	}
	return "returns " + cut(string(o.Value), 200)
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Float tolerance of the comparative layer (numpy.isclose's defaults).
const (
	RelTol = 1e-5
	AbsTol = 1e-8
)

// compareValues compares two value descriptions: each part of want marked
// vary by its kind and type, the rest exactly.
func compareValues(want, got json.RawMessage) (bool, string) {
	var w, g map[string]any
	if err := decode(want, &w); err != nil {
		return false, "the expected value does not parse: " + err.Error()
	}
	if err := decode(got, &g); err != nil {
		return false, "the value does not parse: " + err.Error()
	}
	if why := diff(w, g, "value"); why != "" {
		return false, why
	}
	return true, ""
}

func decode(raw json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return d.Decode(v)
}

// diff describes the first difference of two descriptions ("" when they
// agree). Numbers of kind float (and complex parts) agree within the
// tolerance; scalars of the same kind compare across types (a float and
// numpy.float64), containers must have the same type; a part of w marked
// vary agrees with any of the same kind and type; w's repr, when it has
// one, must be g's; a part of w marked anytype agrees with any part.
func diff(w, g map[string]any, at string) string {
	if w["anytype"] == true {
		return ""
	}
	wt, gt := w["t"], g["t"]
	if wt != gt {
		return fmt.Sprintf("%s: a %v, want a %v", at, g["type"], w["type"])
	}
	if w["vary"] == true {
		if w["type"] != g["type"] {
			return fmt.Sprintf("%s: a %v, want a %v", at, g["type"], w["type"])
		}
		return ""
	}
	if fmt.Sprint(w["len"]) != fmt.Sprint(g["len"]) {
		return fmt.Sprintf("%s: length %v, want %v", at, g["len"], w["len"])
	}
	switch wt {
	case "float":
		if !closeNum(w["v"], g["v"]) {
			return fmt.Sprintf("%s: %v, want %v", at, g["v"], w["v"])
		}
		return ""
	case "complex":
		wv, _ := w["v"].([]any)
		gv, _ := g["v"].([]any)
		if len(wv) != 2 || len(gv) != 2 || !closeNum(wv[0], gv[0]) || !closeNum(wv[1], gv[1]) {
			return fmt.Sprintf("%s: %v, want %v", at, g["v"], w["v"])
		}
		return ""
	case "none", "bool", "int", "str", "bytes":
		if fmt.Sprint(w["v"]) != fmt.Sprint(g["v"]) {
			return fmt.Sprintf("%s: %s, want %s", at, cut(fmt.Sprint(g["v"]), 200), cut(fmt.Sprint(w["v"]), 200))
		}
		return ""
	}
	if w["type"] != g["type"] {
		return fmt.Sprintf("%s: a %v, want a %v", at, g["type"], w["type"])
	}
	if wt == "array" && (fmt.Sprint(w["dtype"]) != fmt.Sprint(g["dtype"]) || fmt.Sprint(w["shape"]) != fmt.Sprint(g["shape"])) {
		return fmt.Sprintf("%s: an array of %v %v, want %v %v", at, g["dtype"], g["shape"], w["dtype"], w["shape"])
	}
	if r, ok := w["repr"]; ok && fmt.Sprint(r) != fmt.Sprint(g["repr"]) {
		return fmt.Sprintf("%s: %s, want %s", at, cut(fmt.Sprint(g["repr"]), 200), cut(fmt.Sprint(r), 200))
	}
	if wt == "opaque" || wt == "cut" || wt == "mock" {
		if wt == "mock" {
			return at + ": a mock"
		}
		return ""
	}
	wi, _ := w["items"].([]any)
	gi, _ := g["items"].([]any)
	if len(wi) != len(gi) {
		return fmt.Sprintf("%s: %d items, want %d", at, len(gi), len(wi))
	}
	for i := range wi {
		sub := at + "[" + strconv.Itoa(i) + "]"
		switch wx := wi[i].(type) {
		case map[string]any:
			gx, ok := gi[i].(map[string]any)
			if !ok {
				return sub + ": malformed"
			}
			if why := diff(wx, gx, sub); why != "" {
				return why
			}
		case []any: // a dict entry or an attribute: [key, value]
			gx, ok := gi[i].([]any)
			if !ok || len(gx) != 2 || len(wx) != 2 {
				return sub + ": malformed"
			}
			for j := range wx {
				wm, wok := wx[j].(map[string]any)
				gm, gok := gx[j].(map[string]any)
				if !wok || !gok {
					if fmt.Sprint(wx[j]) != fmt.Sprint(gx[j]) {
						return fmt.Sprintf("%s: attribute %v, want %v", sub, gx[j], wx[j])
					}
					continue
				}
				if why := diff(wm, gm, sub); why != "" {
					return why
				}
			}
		}
	}
	return ""
}

// closeNum compares two floats of a description (numbers, or "nan",
// "inf", "-inf").
func closeNum(a, b any) bool {
	fa, okA := toFloat(a)
	fb, okB := toFloat(b)
	if !okA || !okB {
		return false
	}
	if math.IsNaN(fa) || math.IsNaN(fb) {
		return math.IsNaN(fa) && math.IsNaN(fb)
	}
	if math.IsInf(fa, 0) || math.IsInf(fb, 0) {
		return fa == fb
	}
	return math.Abs(fa-fb) <= AbsTol+RelTol*math.Abs(fa)
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		switch strings.ToLower(x) {
		case "nan":
			return math.NaN(), true
		case "inf":
			return math.Inf(1), true
		case "-inf":
			return math.Inf(-1), true
		}
	}
	return 0, false
}
