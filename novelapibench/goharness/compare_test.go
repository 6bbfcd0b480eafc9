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
// their shape; the substituted runs name what depends on the target.
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
	sub := obs("b\nc\n", 1, map[string]Probe{
		"xs":  ints("[]int{2, 3}", "2", "3"),
		"ks":  ints("[]int{1, 2}", "1", "2"),
		"now": {Type: "int64", Len: -1, Value: "19"},
		"p":   {Type: "*int", Len: -1, Value: "(*int)(0xc0000aaaaa)", Addr: true},
		"n":   {Type: "uint", Len: -1, Value: "0x10"},
	})
	e, err := Derive(&Record{Normal: []Observation{a, b, a}, Substituted: []Observation{sub}})
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
	if !reflect.DeepEqual(e.Dependent, []string{"xs", OutputKey}) || e.Substituted == nil {
		t.Errorf("dependent %v, want [xs output]", e.Dependent)
	}
	// Substituted runs that change nothing asserted leave no dependence.
	if e, _ := Derive(&Record{Normal: []Observation{a}, Substituted: []Observation{a}}); len(e.Dependent) != 0 || e.Substituted != nil {
		t.Errorf("dependent %v with nothing changed", e.Dependent)
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
// fails its own layer, and the substituted run decides attribution.
func TestCheckLayers(t *testing.T) {
	ref := obs("[2 4]\n", 1, map[string]Probe{"ys": ints("[]int{2, 4}", "2", "4")})
	ref.Args, ref.ArgsFree = []string{"[]int []int{1, 2}"}, []string{"[]int {1, 2}"}
	refSub := obs("[3 5]\n", 1, map[string]Probe{"ys": ints("[]int{3, 5}", "3", "5")})
	refSub.Args, refSub.ArgsFree = ref.Args, ref.ArgsFree
	e, err := Derive(&Record{Normal: []Observation{ref, ref}, Substituted: []Observation{refSub}})
	if err != nil {
		t.Fatal(err)
	}
	call := func(o Observation) Observation { o.Args, o.ArgsFree = ref.Args, ref.ArgsFree; return o }
	hardcoded := ref // the same values, whatever the target returned
	other := ref     // a call on data of its own
	other.Args = append([]string{"[]int []int{7}"}, ref.Args...)
	missing := ref // the target called, but never on the task's data
	missing.Args = []string{"[]int []int{7}"}
	for _, tc := range []struct {
		name   string
		rec    Record
		layers []string
	}{
		{"the reference", Record{Normal: []Observation{ref}, Substituted: []Observation{refSub}}, []string{}},
		{"never calls", Record{Normal: []Observation{obs("[2 4]\n", 0, map[string]Probe{"ys": ints("[]int{2, 4}", "2", "4")})}, Substituted: []Observation{refSub}}, []string{"spy"}},
		{"hard-coded after a call", Record{Normal: []Observation{ref}, Substituted: []Observation{hardcoded}}, []string{"attribution"}},
		{"not run substituted", Record{Normal: []Observation{ref}}, []string{"attribution"}},
		{"substituted process lost", Record{Normal: []Observation{ref}, Substituted: []Observation{{Lost: "exit 2"}}}, []string{"attribution"}},
		{"a guard call on other data", Record{Normal: []Observation{other}, Substituted: []Observation{refSub}}, []string{"input"}},
		{"made-up data", Record{Normal: []Observation{missing}, Substituted: []Observation{refSub}}, []string{"input"}},
		{"wrong value", Record{Normal: []Observation{call(obs("[2 5]\n", 1, map[string]Probe{"ys": ints("[]int{2, 5}", "2", "5")}))}, Substituted: []Observation{refSub}}, []string{"comparative"}},
		{"wrong type", Record{Normal: []Observation{call(obs("[2 4]\n", 1, map[string]Probe{"ys": {Type: "[]string", Len: 2}}))}}, []string{"structural"}},
		{"panics", Record{Normal: []Observation{call(Observation{Panic: "boom", Direct: 1, Output: "[2 4]\n", Probes: map[string]Probe{}})}}, []string{"runtime"}},
		{"exits early", Record{Normal: []Observation{call(Observation{Direct: 1, Output: "[2 4]\n", Probes: map[string]Probe{"ys": ints("[]int{2, 4}", "2", "4")}})}, Substituted: []Observation{refSub}}, []string{"runtime"}},
		{"leaves goroutines", Record{Normal: []Observation{func() Observation { o := ref; o.Leftover = 1; return o }()}, Substituted: []Observation{refSub}}, []string{"runtime"}},
		{"no run", Record{}, []string{"runtime"}},
	} {
		if got := Layers(Check(e, &tc.rec)); !reflect.DeepEqual(got, tc.layers) {
			t.Errorf("%s: layers %v, want %v (%v)", tc.name, got, tc.layers, Check(e, &tc.rec))
		}
	}
}

// TestCheckArgs: the solver's calls must receive the task's data,
// exactly, or in any order where the reference's varied in order only;
// nothing is asserted when they varied more or were too many.
func TestCheckArgs(t *testing.T) {
	call := func(exact, free string) Observation {
		o := obs("x\n", 1, nil)
		o.Args, o.ArgsFree = []string{exact}, []string{free}
		return o
	}
	a, b := call("[]int []int{1, 2}", "[]int {1, 2}"), call("[]int []int{2, 1}", "[]int {1, 2}")
	c := call("[]int []int{3}", "[]int {3}")
	cut := a
	cut.ArgsCut = true
	for _, tc := range []struct {
		name     string
		runs     []Observation
		mode     string
		accepted []Observation
		refused  []Observation
	}{
		{"stable", []Observation{a, a}, ModeExact, []Observation{a}, []Observation{b, c}},
		{"varies in order", []Observation{a, b}, ModeUnordered, []Observation{a, b}, []Observation{c}},
		{"varies", []Observation{a, c}, "", []Observation{a, b, c}, nil},
		{"too many calls", []Observation{cut}, "", []Observation{a, c}, nil},
	} {
		e, err := derive(tc.runs, false)
		if err != nil {
			t.Fatal(err)
		}
		if e.ArgsMode != tc.mode {
			t.Errorf("%s: mode %q, want %q", tc.name, e.ArgsMode, tc.mode)
		}
		for _, o := range tc.accepted {
			if msg := e.checkArgs(&o); msg != "" {
				t.Errorf("%s: refused %v: %s", tc.name, o.Args, msg)
			}
		}
		for _, o := range tc.refused {
			if msg := e.checkArgs(&o); msg == "" {
				t.Errorf("%s: accepted %v", tc.name, o.Args)
			}
		}
	}
}

// TestCheckSecondInput: a solution right on the first input but not on
// the second fails the perturbed layer.
func TestCheckSecondInput(t *testing.T) {
	ref := obs("3\n", 1, nil)
	sub := obs("4\n", 1, nil)
	p := obs("5\n", 1, nil)
	e, err := Derive(&Record{Normal: []Observation{ref}, Substituted: []Observation{sub}, Perturbed: []Observation{p}})
	if err != nil || e.Perturbed == nil {
		t.Fatalf("expectation %+v, %v", e, err)
	}
	if got := Layers(Check(e, &Record{Normal: []Observation{ref}, Substituted: []Observation{sub}, Perturbed: []Observation{ref}})); !reflect.DeepEqual(got, []string{"perturbed"}) {
		t.Errorf("layers %v, want [perturbed]", got)
	}
	if got := Check(e, &Record{Normal: []Observation{ref}, Substituted: []Observation{sub}, Perturbed: []Observation{p}}); len(got) != 0 {
		t.Errorf("the reference fails: %v", got)
	}
	// A second input on which the reference computes the same is dropped.
	if e, _ := Derive(&Record{Normal: []Observation{ref}, Substituted: []Observation{sub}, Perturbed: []Observation{ref}}); e.Perturbed != nil {
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
// reference holds a T is compared through the pointer, substituted too.
func TestAttributionLooksThroughPointers(t *testing.T) {
	stack := func(v string) Probe { return Probe{Type: "main.Stack", Len: -1, Value: v} }
	ptr := func(addr, v string) Probe {
		e := stack(v)
		return Probe{Type: "*main.Stack", Len: -1, Value: "(*main.Stack)(" + addr + ")", Addr: true, Elem: &e}
	}
	ref, sub := obs("", 1, map[string]Probe{"s": stack("main.Stack{n:1}")}), obs("", 1, map[string]Probe{"s": stack("main.Stack{n:2}")})
	e, err := Derive(&Record{Normal: []Observation{ref}, Substituted: []Observation{sub}})
	if err != nil {
		t.Fatal(err)
	}
	used := obs("", 1, map[string]Probe{"s": ptr("0xc000010000", "main.Stack{n:1}")})
	usedSub := obs("", 1, map[string]Probe{"s": ptr("0xc000020000", "main.Stack{n:2}")})
	hard := obs("", 1, map[string]Probe{"s": ptr("0xc000030000", "main.Stack{n:1}")})
	for _, tc := range []struct {
		name   string
		rec    Record
		layers []string
	}{
		{"computed through the target", Record{Normal: []Observation{used}, Substituted: []Observation{usedSub}}, []string{}},
		{"the same value at another address", Record{Normal: []Observation{used}, Substituted: []Observation{hard}}, []string{"attribution"}},
	} {
		if got := Layers(Check(e, &tc.rec)); !reflect.DeepEqual(got, tc.layers) {
			t.Errorf("%s: layers %v, want %v (%v)", tc.name, got, tc.layers, Check(e, &tc.rec))
		}
	}
}

// TestAttributionWhereTheReferenceStops: when the reference's
// substituted run stops early (a panic on a substituted value), what it
// recorded before is asserted: a solution that stops where it does
// passes, one that stops before recording it fails.
func TestAttributionWhereTheReferenceStops(t *testing.T) {
	ys := func(v string) map[string]Probe { return map[string]Probe{"ys": ints(v)} }
	ref := obs("[2 4]\n", 1, ys("[]int{2, 4}"))
	late := Observation{Direct: 1, Panic: "boom", Output: "", Probes: ys("[]int{3, 5}")}
	crash := Observation{Direct: 1, Panic: "index out of range", Probes: map[string]Probe{}}
	e, err := Derive(&Record{Normal: []Observation{ref}, Substituted: []Observation{late}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e.Dependent, []string{"ys"}) {
		t.Fatalf("dependent %v, want [ys]", e.Dependent)
	}
	if got := Check(e, &Record{Normal: []Observation{ref}, Substituted: []Observation{late}}); len(got) != 0 {
		t.Errorf("a solution that stops where the reference does fails: %v", got)
	}
	if got := Layers(Check(e, &Record{Normal: []Observation{ref}, Substituted: []Observation{crash}})); !reflect.DeepEqual(got, []string{"attribution"}) {
		t.Errorf("layers %v, want [attribution]", got)
	}
}
