package pyharness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Expectation is what the reference did, on every input, in every one of
// the runs it was derived from. It is compared in lacuna's process: the
// expected values never enter the process a solution runs in.
type Expectation struct {
	Expected []Expected `json:"expected"`
	// Dependent says, per input, whether the reference's outcome changes
	// when its own calls of the target are answered by a mock: only those
	// outcomes are computed through the target, and a solution must
	// change each of them too.
	Dependent []bool `json:"dependent"`
	// Calls are the reference's direct calls (their shapes).
	Calls []Call `json:"calls"`
}

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
		case len(r.Record.Real) != len(runs[0].Record.Real) || len(r.Record.Mock) != len(r.Record.Real):
			return Expectation{}, fmt.Errorf("pyharness: reference run %d: outcomes missing", i)
		}
	}
	first := runs[0].Record
	exp := Expectation{Calls: first.Calls}
	for i, o := range first.Real {
		e := Expected{Value: o.Value, Exact: true}
		if o.Raised != nil {
			e = Expected{Raises: o.Raised.Type, Exact: true}
		}
		var merged map[string]any
		if o.Raised == nil {
			if err := decode(o.Value, &merged); err != nil {
				return Expectation{}, fmt.Errorf("pyharness: reference run 0, input %d: %w", i, err)
			}
		}
		dep := true
		for j, r := range runs {
			ro := r.Record.Real[i]
			if (ro.Raised == nil) != (o.Raised == nil) || (o.Raised != nil && ro.Raised.Type != o.Raised.Type) {
				return Expectation{}, fmt.Errorf("pyharness: the reference raises on input %d in some runs only", i)
			}
			if o.Raised == nil && !bytes.Equal(ro.Value, o.Value) {
				e.Exact = false
				var other map[string]any
				if err := decode(ro.Value, &other); err != nil {
					return Expectation{}, fmt.Errorf("pyharness: reference run %d, input %d: %w", j, i, err)
				}
				markVary(merged, other)
			}
			if sameOutcome(r.Record.Mock[i], ro) {
				dep = false
			}
		}
		if !e.Exact {
			b, err := json.Marshal(merged)
			if err != nil {
				return Expectation{}, fmt.Errorf("pyharness: input %d: %w", i, err)
			}
			e.Value = b
		}
		exp.Expected = append(exp.Expected, e)
		exp.Dependent = append(exp.Dependent, dep)
	}
	return exp, nil
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
	LayerMock        = "mock"        // an outcome computed through the target in the reference is not in the solution
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
// float tolerance, the same exception type where the reference raised)
// and mock-based (every outcome that depends on the target in the
// reference changes when the solution's calls of the target are answered
// by a mock).
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
	if len(rec.Real) != len(exp.Expected) || len(rec.Mock) != len(exp.Expected) {
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
	for i, dep := range exp.Dependent {
		if dep && sameOutcome(rec.Mock[i], rec.Real[i]) {
			return fail(LayerMock, "input %d: the outcome does not change when the target's calls are mocked: it is not computed through them", i)
		}
	}
	return Verdict{Passed: true}
}

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

// sameOutcome: both raised the same type, or both returned equal values.
func sameOutcome(a, b Outcome) bool {
	if a.Raised != nil || b.Raised != nil {
		return a.Raised != nil && b.Raised != nil && a.Raised.Type == b.Raised.Type
	}
	ok, _ := compareValues(a.Value, b.Value)
	return ok
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
