package pyharness

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestProgramPlacesTheSolutionAndNamesItsLines(t *testing.T) {
	task := fixtureTask()
	for _, tc := range []struct {
		name, solution, want string
		first, last          int
	}{
		{"body", "ys = f(xs)\nreturn ys", "DATA = [1, 2, 3]\n\ndef solve(xs, k):\n    ys = f(xs)\n    return ys\n", 3, 5},
		{"indented body", "    ys = f(xs)\n    return ys\n", "DATA = [1, 2, 3]\n\ndef solve(xs, k):\n    ys = f(xs)\n    return ys\n", 3, 5},
		{"tab-indented body", "\tif xs:\n\t\treturn 1", "DATA = [1, 2, 3]\n\ndef solve(xs, k):\n    if xs:\n        return 1\n", 3, 5},
		{"whole function", "import m\n\ndef solve(xs, k):\n    return m.f(xs)", "DATA = [1, 2, 3]\n\nimport m\n\ndef solve(xs, k):\n    return m.f(xs)\n", 3, 6},
		{"empty", "", "DATA = [1, 2, 3]\n\ndef solve(xs, k):\n    pass\n", 3, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, first, last := task.Program(tc.solution)
			if got != tc.want || first != tc.first || last != tc.last {
				t.Errorf("got %q lines %d-%d, want %q lines %d-%d", got, first, last, tc.want, tc.first, tc.last)
			}
		})
	}
	if ctx := task.Context(); !strings.Contains(ctx, MaskMarker) || strings.Contains(ctx, "scale") {
		t.Errorf("context %q: want the marker and no trace of the target", ctx)
	}
}

func TestValidateRefusesAPreludeThatImportsTheTarget(t *testing.T) {
	ok := fixtureTask()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*Task){
		"prelude imports the package":   func(t *Task) { t.Prelude = "import fixpkg\nDATA = 1" },
		"prelude imports a submodule":   func(t *Task) { t.Prelude = "from fixpkg._impl import scale" },
		"prelude imports it among more": func(t *Task) { t.Prelude = "import os, fixpkg" },
		"no def line":                   func(t *Task) { t.Signature = "solve(xs)" },
		"no inputs":                     func(t *Task) { t.Inputs = nil },
		"no qualified name":             func(t *Task) { t.Target.ID = "fixpkg" },
	} {
		t.Run(name, func(t *testing.T) {
			bad := fixtureTask()
			mutate(&bad)
			if bad.Validate() == nil {
				t.Error("accepted")
			}
		})
	}
	fine := fixtureTask()
	fine.Prelude = "import fixpkgother\nimport os"
	if err := fine.Validate(); err != nil {
		t.Errorf("a package whose name starts like the target's: %v", err)
	}
}

func TestCompareValuesWithinFloatTolerance(t *testing.T) {
	f := func(v string) json.RawMessage {
		return json.RawMessage(`{"t":"float","type":"builtins.float","v":` + v + `}`)
	}
	list := func(items ...json.RawMessage) json.RawMessage {
		var s []string
		for _, i := range items {
			s = append(s, string(i))
		}
		return json.RawMessage(`{"t":"list","type":"builtins.list","items":[` + strings.Join(s, ",") + `]}`)
	}
	np := json.RawMessage(`{"t":"float","type":"numpy.float64","v":0.30000000000000004}`)
	arr := func(dtype string, v string) json.RawMessage {
		return json.RawMessage(`{"t":"array","type":"numpy.ndarray","dtype":"` + dtype + `","shape":[1],"items":[` + string(f(v)) + `]}`)
	}
	for _, tc := range []struct {
		name      string
		want, got json.RawMessage
		equal     bool
	}{
		{"rounding", f("0.3"), f("0.30000000000000004"), true},
		{"different", f("0.3"), f("0.31"), false},
		{"nan", f(`"nan"`), f(`"nan"`), true},
		{"inf against a number", f(`"inf"`), f("1e308"), false},
		{"numpy scalar for a float", f("0.3"), np, true},
		{"list of floats", list(f("1"), f("2")), list(f("1.0000000001"), f("2")), true},
		{"shorter list", list(f("1"), f("2")), list(f("1")), false},
		{"longer beyond the items described", json.RawMessage(`{"t":"list","type":"builtins.list","len":20000,"items":[]}`), json.RawMessage(`{"t":"list","type":"builtins.list","len":20001,"items":[]}`), false},
		{"array dtype", arr("float64", "1"), arr("float32", "1"), false},
		{"varying list: kind and type only", json.RawMessage(`{"t":"list","type":"builtins.list","vary":true,"items":[]}`), list(f("5"), f("6")), true},
		{"varying list, other type", json.RawMessage(`{"t":"list","type":"builtins.list","vary":true}`), f("1"), false},
		{"varying leaf beside an exact one", list(f("1"), json.RawMessage(`{"t":"float","type":"builtins.float","v":7,"vary":true}`)), list(f("1"), f("9")), true},
		{"exact leaf beside a varying one", list(f("1"), json.RawMessage(`{"t":"float","type":"builtins.float","v":7,"vary":true}`)), list(f("2"), f("7")), false},
		{"repr compared", json.RawMessage(`{"t":"opaque","type":"fractions.Fraction","repr":"Fraction(1, 7)"}`), json.RawMessage(`{"t":"opaque","type":"fractions.Fraction","repr":"Fraction(2, 7)"}`), false},
		{"same repr", json.RawMessage(`{"t":"opaque","type":"fractions.Fraction","repr":"Fraction(1, 7)"}`), json.RawMessage(`{"t":"opaque","type":"fractions.Fraction","repr":"Fraction(1, 7)"}`), true},
		{"mock", f("1"), json.RawMessage(`{"t":"mock","type":"unittest.mock.MagicMock"}`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ok, why := compareValues(tc.want, tc.got); ok != tc.equal {
				t.Errorf("equal %v (%s), want %v", ok, why, tc.equal)
			}
		})
	}
}

func TestRecordsThatFailAuthenticationAreTampering(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	sign := func(body string) string {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(body))
		return hex.EncodeToString(h.Sum(nil)) + " " + body + "\n"
	}
	good := sign(`{"stage":"ran","direct":1}`)
	if rec, problem, tampered := parseRecord(key, []byte(good)); rec == nil || tampered || problem != "" || rec.Direct != 1 {
		t.Fatalf("a good record: %v %q %v", rec, problem, tampered)
	}
	for name, data := range map[string]string{
		"forged before the real one": `00 {"stage":"ran"}` + "\n" + good,
		"real then more":             good + "x",
		"wrong key":                  strings.Replace(good, good[:4], "0000", 1),
		"unsigned":                   `{"stage":"ran"}` + "\n",
		"no newline":                 strings.TrimSuffix(good, "\n"),
	} {
		t.Run(name, func(t *testing.T) {
			if rec, _, tampered := parseRecord(key, []byte(data)); rec != nil || !tampered {
				t.Errorf("accepted: %v", rec)
			}
		})
	}
	if rec, _, tampered := parseRecord(key, nil); rec != nil || tampered {
		t.Error("no record is a crash, not tampering")
	}
}

func TestPyLiteralWritesBuiltinValues(t *testing.T) {
	for _, tc := range []struct{ desc, want string }{
		{`{"t":"int","type":"builtins.int","v":"123456789012345678901234567890"}`, "123456789012345678901234567890"},
		{`{"t":"float","type":"builtins.float","v":0.1}`, `float("0.1")`},
		{`{"t":"str","type":"builtins.str","v":"a\"b\n"}`, `"a\"b\n"`},
		{`{"t":"tuple","type":"builtins.tuple","items":[{"t":"none","type":"builtins.NoneType"}]}`, "(None,)"},
		{`{"t":"dict","type":"builtins.dict","items":[[{"t":"str","type":"builtins.str","v":"k"},{"t":"bool","type":"builtins.bool","v":true}]]}`, `{"k": True}`},
		{`{"t":"set","type":"builtins.set","items":[]}`, "set()"},
		{`{"t":"object","type":"fixpkg.Grid","items":[]}`, ""},
	} {
		got, _ := pyLiteral(json.RawMessage(tc.desc))
		if got != tc.want {
			t.Errorf("pyLiteral(%s) = %q, want %q", tc.desc, got, tc.want)
		}
	}
}

// TestDeriveMarksOnlyThePartsWhereRunsDisagree: runs that agree on one
// item and not on another assert the first exactly, the second by kind
// and type.
func TestDeriveMarksOnlyThePartsWhereRunsDisagree(t *testing.T) {
	run := func(token string) Run {
		v := json.RawMessage(`{"t":"tuple","type":"builtins.tuple","len":2,"items":[{"t":"int","type":"builtins.int","v":"42"},{"t":"str","type":"builtins.str","v":"` + token + `","len":4}]}`)
		mock := json.RawMessage(`{"t":"tuple","type":"builtins.tuple","len":2,"items":[{"t":"int","type":"builtins.int","v":"0"},{"t":"str","type":"builtins.str","v":"zzzz","len":4}]}`)
		return Run{Record: &Record{Stage: "ran", Direct: 1, Real: []Outcome{{Value: v}}, Substituted: []Outcome{{Value: mock}}}}
	}
	exp, err := Derive([]Run{run("abcd"), run("efgh"), run("abcd")})
	if err != nil {
		t.Fatal(err)
	}
	if exp.Expected[0].Exact {
		t.Error("marked exact: the runs disagree")
	}
	for _, tc := range []struct {
		name string
		got  string
		ok   bool
	}{
		{"another token", `{"t":"tuple","type":"builtins.tuple","len":2,"items":[{"t":"int","type":"builtins.int","v":"42"},{"t":"str","type":"builtins.str","v":"wxyz","len":4}]}`, true},
		{"another number", `{"t":"tuple","type":"builtins.tuple","len":2,"items":[{"t":"int","type":"builtins.int","v":"41"},{"t":"str","type":"builtins.str","v":"abcd","len":4}]}`, false},
		{"a token of another type", `{"t":"tuple","type":"builtins.tuple","len":2,"items":[{"t":"int","type":"builtins.int","v":"42"},{"t":"int","type":"builtins.int","v":"1"}]}`, false},
	} {
		if ok, why := compareValues(exp.Expected[0].Value, json.RawMessage(tc.got)); ok != tc.ok {
			t.Errorf("%s: equal %v (%s), want %v", tc.name, ok, why, tc.ok)
		}
	}
}

// TestDeriveAssertsNothingOfAPartWhoseTypeVaries: a random pick among
// items of different types (more_itertools.interleave_randomly) gives
// each run items of other kinds in other places. An item of a list (a
// collection of like items) that varies makes every item vary, as its
// order does: none is asserted when their kinds or types differ, only the
// kind and type when they agree; the list's type and length still are.
// A tuple (a record) keeps its stable positions exact. Every run of the
// reference passes its own expectation.
func TestDeriveAssertsNothingOfAPartWhoseTypeVaries(t *testing.T) {
	item := map[rune]string{
		'i': `{"t":"int","type":"builtins.int","v":"1"}`,
		'j': `{"t":"int","type":"builtins.int","v":"2"}`,
		's': `{"t":"str","type":"builtins.str","v":"a","len":1}`,
		'l': `{"t":"list","type":"builtins.list","len":0,"items":[]}`,
	}
	value := func(kind, picks string) json.RawMessage {
		var items []string
		for _, p := range picks {
			items = append(items, item[p])
		}
		return json.RawMessage(fmt.Sprintf(`{"t":%q,"type":"builtins.%s","len":%d,"items":[%s]}`, kind, kind, len(items), strings.Join(items, ",")))
	}
	for _, tc := range []struct {
		name string
		kind string
		runs []string
		// got: values compared with the expectation, and whether they pass.
		got map[string]bool
	}{
		{"a list whose items' kinds differ between runs", "list", []string{"is", "si"}, map[string]bool{"ii": true, "ss": true, "il": true, "i": false}},
		{"a list whose kinds differ only in the third run", "list", []string{"is", "is", "ss"}, map[string]bool{"ls": true, "sl": true, "iss": false}},
		{"a list of ints in another order", "list", []string{"ij", "ji", "ij"}, map[string]bool{"jj": true, "is": false, "l": false}},
		{"a tuple keeps its stable item", "tuple", []string{"il", "ii"}, map[string]bool{"is": true, "ss": false, "jl": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs []Run
			for _, r := range tc.runs {
				runs = append(runs, Run{Record: &Record{Stage: "ran", Direct: 1, Real: []Outcome{{Value: value(tc.kind, r)}}, Substituted: []Outcome{{Value: value(tc.kind, "")}}}})
			}
			exp, err := Derive(runs)
			if err != nil {
				t.Fatal(err)
			}
			if exp.Expected[0].Exact {
				t.Error("marked exact: the runs disagree")
			}
			for i, r := range runs {
				if v := Check(exp, r); !v.Passed {
					t.Errorf("reference run %d fails its own expectation: %+v", i, v)
				}
			}
			for got, ok := range tc.got {
				if pass, why := compareValues(exp.Expected[0].Value, value(tc.kind, got)); pass != ok {
					t.Errorf("%q: equal %v (%s), want %v", got, pass, why, ok)
				}
			}
		})
	}
}

// TestDeriveDropsAReprThatVaries: an object whose repr differs between
// runs (an id, a time in it) is still compared by its attributes.
func TestDeriveDropsAReprThatVaries(t *testing.T) {
	obj := func(repr, v string) json.RawMessage {
		return json.RawMessage(`{"t":"object","type":"m.Job","repr":"` + repr + `","items":[["size",{"t":"int","type":"builtins.int","v":"` + v + `"}]]}`)
	}
	run := func(repr string) Run {
		return Run{Record: &Record{Stage: "ran", Direct: 1, Real: []Outcome{{Value: obj(repr, "3")}}, Substituted: []Outcome{{Value: obj("mock", "0")}}}}
	}
	exp, err := Derive([]Run{run("Job(1)"), run("Job(2)")})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := compareValues(exp.Expected[0].Value, obj("Job(7)", "3")); !ok {
		t.Errorf("another repr, the same attributes: %s", why)
	}
	if ok, _ := compareValues(exp.Expected[0].Value, obj("Job(1)", "4")); ok {
		t.Error("another attribute passes")
	}
}
