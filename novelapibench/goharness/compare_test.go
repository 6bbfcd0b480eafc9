package goharness

import (
	"reflect"
	"testing"
)

func obs(output string, direct int64, probes map[string]Probe) Observation {
	if probes == nil {
		probes = map[string]Probe{}
	}
	probes[EndProbe] = Probe{Type: "bool", Len: -1, Value: "true"}
	return Observation{Output: output, Direct: direct, Probes: probes}
}

func ints(v string, elems ...string) Probe {
	return Probe{Type: "[]int", Len: len(elems), Value: v, Elems: elems}
}

// TestDeriveAssertsOnlyWhatIsStable: values that agree in every run are
// exact; values whose runs differ only in order are compared as
// multisets; values that vary otherwise, or hold addresses, keep only
// their shape; the counterfactual run names what depends on the target.
func TestDeriveAssertsOnlyWhatIsStable(t *testing.T) {
	a := obs("a\nb\n", 1, map[string]Probe{
		"xs":  ints("[]int{1, 2}", "1", "2"),
		"ks":  ints("[]int{1, 2}", "1", "2"),
		"now": {Type: "int64", Len: -1, Value: "17"},
		"p":   {Type: "*int", Len: -1, Value: "(*int)(0xc000012345)", Addr: true},
		"n":   {Type: "uint", Len: -1, Value: "0x10"},
	})
	b := obs("b\na\n", 1, map[string]Probe{
		"xs":  ints("[]int{1, 2}", "1", "2"),
		"ks":  ints("[]int{2, 1}", "2", "1"),
		"now": {Type: "int64", Len: -1, Value: "18"},
		"p":   {Type: "*int", Len: -1, Value: "(*int)(0xc000099999)", Addr: true},
		"n":   {Type: "uint", Len: -1, Value: "0x10"},
	})
	cf := obs("", 1, map[string]Probe{
		"xs":  {Type: "[]int", Len: 0, Nil: true, Value: "[]int(nil)"},
		"ks":  ints("[]int{1, 2}", "1", "2"),
		"now": {Type: "int64", Len: -1, Value: "19"},
		"p":   {Type: "*int", Len: -1, Value: "(*int)(0xc0000aaaaa)", Addr: true},
		"n":   {Type: "uint", Len: -1, Value: "0x10"},
	})
	e, err := Derive(&Record{Normal: []Observation{a, b, a}, Counterfactual: &cf})
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]string{}
	for k, x := range e.Probes {
		modes[k] = x.Mode
	}
	want := map[string]string{"xs": ModeExact, "ks": ModeUnordered, "now": ModeShape, "p": ModeShape, "n": ModeExact, EndProbe: ModeExact}
	if !reflect.DeepEqual(modes, want) {
		t.Errorf("modes %v, want %v", modes, want)
	}
	if e.OutputMode != ModeUnordered || e.Runs != 3 {
		t.Errorf("output mode %q runs %d", e.OutputMode, e.Runs)
	}
	if !reflect.DeepEqual(e.Dependent, []string{"xs", OutputKey}) {
		t.Errorf("dependent %v, want [xs output]", e.Dependent)
	}
}

func TestDeriveRefusesAReferenceThatFails(t *testing.T) {
	for name, runs := range map[string][]Observation{
		"panic":   {obs("", 1, nil), {Panic: "boom", Direct: 1}},
		"timeout": {{TimedOut: true}},
		"no call": {obs("x", 0, nil)},
		"no runs": nil,
	} {
		if _, err := Derive(&Record{Normal: runs}); err == nil {
			t.Errorf("%s: derived an expectation", name)
		}
	}
}

// TestCheckLayers: each way a solution can differ from the reference
// fails its own layer, and the counterfactual decides attribution.
func TestCheckLayers(t *testing.T) {
	ref := obs("[2 4]\n", 1, map[string]Probe{"ys": ints("[]int{2, 4}", "2", "4")})
	refCF := obs("[]\n", 1, map[string]Probe{"ys": {Type: "[]int", Len: 0, Nil: true, Value: "[]int(nil)"}})
	e, err := Derive(&Record{Normal: []Observation{ref, ref}, Counterfactual: &refCF})
	if err != nil {
		t.Fatal(err)
	}
	hardcoded := ref // the same values, but they do not change without the target
	for _, tc := range []struct {
		name   string
		rec    Record
		layers []string
	}{
		{"the reference", Record{Normal: []Observation{ref}, Counterfactual: &refCF}, []string{}},
		{"never calls", Record{Normal: []Observation{obs("[2 4]\n", 0, map[string]Probe{"ys": ints("[]int{2, 4}", "2", "4")})}, Counterfactual: &refCF}, []string{"spy"}},
		{"throwaway call", Record{Normal: []Observation{ref}, Counterfactual: &hardcoded}, []string{"attribution"}},
		{"wrong value", Record{Normal: []Observation{obs("[2 5]\n", 1, map[string]Probe{"ys": ints("[]int{2, 5}", "2", "5")})}, Counterfactual: &refCF}, []string{"comparative"}},
		{"wrong type", Record{Normal: []Observation{obs("[2 4]\n", 1, map[string]Probe{"ys": {Type: "[]string", Len: 2}})}}, []string{"structural"}},
		{"panics", Record{Normal: []Observation{{Panic: "boom", Direct: 1, Output: "[2 4]\n", Probes: map[string]Probe{}}}}, []string{"runtime"}},
		{"exits early", Record{Normal: []Observation{{Direct: 1, Output: "[2 4]\n", Probes: map[string]Probe{"ys": ints("[]int{2, 4}", "2", "4")}}}, Counterfactual: &refCF}, []string{"runtime"}},
		{"leaves goroutines", Record{Normal: []Observation{func() Observation { o := ref; o.Leftover = 1; return o }()}, Counterfactual: &refCF}, []string{"runtime"}},
		{"no run", Record{}, []string{"runtime"}},
	} {
		if got := Layers(Check(e, &tc.rec)); !reflect.DeepEqual(got, tc.layers) {
			t.Errorf("%s: layers %v, want %v (%v)", tc.name, got, tc.layers, Check(e, &tc.rec))
		}
	}
}

// TestCheckSecondInput: a solution right on the first input but not on
// the second fails the perturbed layer.
func TestCheckSecondInput(t *testing.T) {
	ref := obs("3\n", 1, nil)
	cf := obs("0\n", 1, nil)
	p := obs("5\n", 1, nil)
	e, err := Derive(&Record{Normal: []Observation{ref}, Counterfactual: &cf, Perturbed: []Observation{p}})
	if err != nil || e.Perturbed == nil {
		t.Fatalf("expectation %+v, %v", e, err)
	}
	if got := Layers(Check(e, &Record{Normal: []Observation{ref}, Counterfactual: &cf, Perturbed: []Observation{ref}})); !reflect.DeepEqual(got, []string{"perturbed"}) {
		t.Errorf("layers %v, want [perturbed]", got)
	}
	if got := Check(e, &Record{Normal: []Observation{ref}, Counterfactual: &cf, Perturbed: []Observation{p}}); len(got) != 0 {
		t.Errorf("the reference fails: %v", got)
	}
	// A second input on which the reference computes the same is dropped.
	if e, _ := Derive(&Record{Normal: []Observation{ref}, Counterfactual: &cf, Perturbed: []Observation{ref}}); e.Perturbed != nil {
		t.Error("kept a second input that changes nothing")
	}
}

// TestCheckWithoutEndMarker: when the context's own code returns before
// the end marker (the reference's runs never reached it), a solution is
// not failed for not reaching it either.
func TestCheckWithoutEndMarker(t *testing.T) {
	ref := Observation{Output: "err\n", Direct: 1, Probes: map[string]Probe{"x": {Type: "int", Len: -1, Value: "1"}}}
	e, err := Derive(&Record{Normal: []Observation{ref}})
	if err != nil {
		t.Fatal(err)
	}
	if got := Check(e, &Record{Normal: []Observation{ref}}); len(got) != 0 {
		t.Errorf("the reference fails: %v", got)
	}
}

// TestAttributionLooksThroughPointers: a solution holding a *T where the
// reference holds a T is compared through the pointer, in the
// counterfactual too: a new address is not a changed value.
func TestAttributionLooksThroughPointers(t *testing.T) {
	stack := func(v string) Probe { return Probe{Type: "main.Stack", Len: -1, Value: v} }
	ptr := func(addr, v string) Probe {
		e := stack(v)
		return Probe{Type: "*main.Stack", Len: -1, Value: "(*main.Stack)(" + addr + ")", Addr: true, Elem: &e}
	}
	ref, cf := obs("", 1, map[string]Probe{"s": stack("main.Stack{n:1}")}), obs("", 1, map[string]Probe{"s": stack("main.Stack{n:0}")})
	e, err := Derive(&Record{Normal: []Observation{ref}, Counterfactual: &cf})
	if err != nil {
		t.Fatal(err)
	}
	used := obs("", 1, map[string]Probe{"s": ptr("0xc000010000", "main.Stack{n:1}")})
	usedCF := obs("", 1, map[string]Probe{"s": ptr("0xc000020000", "main.Stack{n:0}")})
	hard := obs("", 1, map[string]Probe{"s": ptr("0xc000030000", "main.Stack{n:1}")})
	for _, tc := range []struct {
		name   string
		rec    Record
		layers []string
	}{
		{"computed through the target", Record{Normal: []Observation{used}, Counterfactual: &usedCF}, []string{}},
		{"the same value at another address", Record{Normal: []Observation{used}, Counterfactual: &hard}, []string{"attribution"}},
	} {
		if got := Layers(Check(e, &tc.rec)); !reflect.DeepEqual(got, tc.layers) {
			t.Errorf("%s: layers %v, want %v (%v)", tc.name, got, tc.layers, Check(e, &tc.rec))
		}
	}
}

// TestAttributionNeedsEvidence: a counterfactual run that stops early is
// not evidence of change; when the reference's own stops early, only
// what it recorded before counts.
func TestAttributionNeedsEvidence(t *testing.T) {
	ys := func(v string) map[string]Probe { return map[string]Probe{"ys": ints(v)} }
	ref := obs("[2 4]\n", 1, ys("[]int{2, 4}"))
	refCF := obs("[]\n", 1, ys("[]int(nil)"))
	crash := Observation{Direct: 1, Panic: "index out of range", Probes: map[string]Probe{}}
	e, err := Derive(&Record{Normal: []Observation{ref}, Counterfactual: &refCF})
	if err != nil {
		t.Fatal(err)
	}
	// Hard-coded values after a call whose zero result the code then
	// indexes: its counterfactual run crashes.
	if got := Layers(Check(e, &Record{Normal: []Observation{ref}, Counterfactual: &crash})); !reflect.DeepEqual(got, []string{"attribution"}) {
		t.Errorf("a crashing counterfactual passed attribution: %v", got)
	}
	// The reference's counterfactual run crashes after recording ys (in the
	// code after the span): ys is evidence, the output and the end marker
	// are not.
	late := Observation{Direct: 1, Panic: "boom", Output: "", Probes: ys("[]int(nil)")}
	e, err = Derive(&Record{Normal: []Observation{ref}, Counterfactual: &late})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e.Dependent, []string{"ys"}) || e.CounterfactualEnded {
		t.Fatalf("dependent %v ended %v, want [ys] false", e.Dependent, e.CounterfactualEnded)
	}
	if got := Check(e, &Record{Normal: []Observation{ref}, Counterfactual: &late}); len(got) != 0 {
		t.Errorf("a solution that stops where the reference does fails: %v", got)
	}
	// Crashing before ys was recorded: nothing is evidence.
	if got := Layers(Check(e, &Record{Normal: []Observation{ref}, Counterfactual: &crash})); !reflect.DeepEqual(got, []string{"attribution"}) {
		t.Errorf("layers %v, want [attribution]", got)
	}
}
