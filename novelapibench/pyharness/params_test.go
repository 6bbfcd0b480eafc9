package pyharness

import (
	"reflect"
	"testing"
)

func TestTargetCallsReadsArgumentsAsNormalisedSource(t *testing.T) {
	scale := Target{ID: "pystats._impl:scale", Paths: []string{"pystats.scale"}}
	norm := Target{ID: "geo._impl:Point.norm", Paths: []string{"geo.Point.norm"}}
	for _, tc := range []struct {
		name string
		tg   Target
		code string
		want []SourceCall
	}{
		{"positional and keyword", scale, "from pystats import scale\nreturn scale(xs,  2, factor = k)\n",
			[]SourceCall{{Func: "scale", Args: []string{"xs", "2"}, Kwargs: []Kwarg{{"factor", "k"}}}}},
		{"a dotted path, line breaks, a comment and a trailing comma", scale, "import pystats\nreturn pystats.scale(\n    xs,  # the data\n    [1, 2] ,\n)\n",
			[]SourceCall{{Func: "pystats.scale", Args: []string{"xs", "[1, 2]"}}}},
		{"outer parentheses dropped, a tuple's kept, quotes normalised", scale, `scale((xs), (a, b), "up", mode=("x"))`,
			[]SourceCall{{Func: "scale", Args: []string{"xs", "(a, b)", "'up'"}, Kwargs: []Kwarg{{"mode", "'x'"}}}}},
		{"spreads", scale, "scale(*xs, **opts)",
			[]SourceCall{{Func: "scale", Args: []string{"*xs"}, Kwargs: []Kwarg{{Name: "**opts"}}}}},
		{"an alias of the name", scale, "from pystats import scale as sc\nreturn sc(xs)\n",
			[]SourceCall{{Func: "sc", Args: []string{"xs"}}}},
		{"nested calls and comparisons inside an argument", scale, "scale(f(a, b=1), n == 2, key=lambda v: -v)",
			[]SourceCall{{Func: "scale", Args: []string{"f(a, b=1)", "n==2"}, Kwargs: []Kwarg{{"key", "lambda v:-v"}}}}},
		{"a method on an expression's value", norm, "return Point(1, 2).norm(ord=2)\n",
			[]SourceCall{{Func: "<expr>.norm", Kwargs: []Kwarg{{"ord", "2"}}}}},
		{"not in strings, comments or definitions", scale, "# scale(xs)\ns = 'scale(xs)'\ndef scale(v):\n    return v\n", nil},
		{"another name ending the same is not it", scale, "rescale(xs)\nscale_all(xs)\n", nil},
		{"an unbalanced call is cut short", scale, "return scale(xs\n", nil},
		{"a multi-parameter lambda is one argument", scale, "scale(xs, key=lambda a, b: a, cmp=lambda: 0)",
			[]SourceCall{{Func: "scale", Args: []string{"xs"}, Kwargs: []Kwarg{{"key", "lambda a, b:a"}, {"cmp", "lambda:0"}}}}},
		{"a lambda's commas inside brackets, then the next argument", scale, "scale(lambda a=(1, 2), *r: [a, r], 3)",
			[]SourceCall{{Func: "scale", Args: []string{"lambda a=(1, 2), *r:[a, r]", "3"}}}},
		{"a call inside an f-string's field is code", scale, "return f'{scale(xs, k=2)!r:>10} and {{scale(ys)}}'\n",
			[]SourceCall{{Func: "scale", Args: []string{"xs"}, Kwargs: []Kwarg{{"k", "2"}}}}},
		{"a field reusing the outer quote (3.12) does not end the f-string", scale, `s = f"{d["k"]}: scale(ys)"; q = f"{'"'}"; scale(zs)`,
			[]SourceCall{{Func: "scale", Args: []string{"zs"}}}},
		{"a call inside a field's nested quote", scale, `s = f"{scale(d["k"], m='a')}"`,
			[]SourceCall{{Func: "scale", Args: []string{`d['k']`}, Kwargs: []Kwarg{{"m", "'a'"}}}}},
		{"a template string (3.14) is a formatted string", scale, `s = t"{scale(xs)}"; rt'scale(ys)'`,
			[]SourceCall{{Func: "scale", Args: []string{"xs"}}}},
		{"a plain string's braces are text", scale, `s = "{scale(xs)}"; r"{scale(ys)}"`, nil},
		{"an except's as is not an alias", scale, "try:\n    pass\nexcept scale as e:\n    e(3)\nwith scale as w:\n    w(4)\n", nil},
		{"an alias in a parenthesised import list", scale, "from pystats import (\n    mean as m,\n    scale as sc,\n)\nsc(xs)\n",
			[]SourceCall{{Func: "sc", Args: []string{"xs"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TargetCalls(tc.code, tc.tg); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("TargetCalls = %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestParamCorrMatchesPositionalByPositionAndKeywordsByName(t *testing.T) {
	scale := Target{ID: "pystats._impl:scale", Paths: []string{"pystats.scale"}}
	const ref = "from pystats import scale\nreturn scale(xs, 2, mode='up')\n"
	for _, tc := range []struct {
		name, solution, reference string
		corr                      float64
		ok                        bool
	}{
		{"the reference's call", "import pystats\nreturn pystats.scale(xs, 2, mode=\"up\")", ref, 1, true},
		{"keywords in another order", "scale(a, b=2, c=3)", "scale(a, c=3, b=2)", 1, true},
		{"a wrong positional value", "scale(xs, 3, mode='up')", ref, 2.0 / 3, true},
		{"a wrong keyword value", "scale(xs, 2, mode='down')", ref, 2.0 / 3, true},
		{"a keyword passed positionally", "scale(xs, 2, 'up')", ref, 2.0 / 4, true},
		{"an extra argument", "scale(xs, 2, 5, mode='up')", ref, 3.0 / 4, true},
		{"an extra keyword", "scale(xs, 2, mode='up', clip=True)", ref, 3.0 / 4, true},
		{"a missing argument", "scale(xs, mode='up')", ref, 2.0 / 3, true},
		{"the best of several calls", "a = scale(ys)\nb = scale(xs, 2, mode='up')", ref, 1, true},
		{"two calls without arguments", "scale()", "scale()", 1, true},
		{"the target never called", "return sorted(xs)", ref, 0, true},
		{"the reference has no call of the target", "scale(xs)", "return xs", 0, false},
		{"a repeated keyword matches once", "scale(xs, k=1, k=1)", "scale(xs, k=1)", 2.0 / 3, true},
		{"a repeated keyword spread matches once", "scale(xs, **kw, **kw)", "scale(xs, **kw)", 2.0 / 3, true},
		{"a call inside an f-string", "return f'{scale(xs, 2, mode=\"up\")}'", ref, 1, true},
		{"a lambda with two parameters", "scale(xs, key=lambda a, b: a)", "scale(xs, key=lambda a, b: a)", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			corr, ok := ParamCorr(tc.solution, tc.reference, scale)
			if ok != tc.ok || corr != tc.corr {
				t.Errorf("ParamCorr = %v, %v; want %v, %v", corr, ok, tc.corr, tc.ok)
			}
		})
	}
}

// MatchCalls without a reference call is undefined, as Go's is.
func TestMatchCallsWithoutAReferenceIsUndefined(t *testing.T) {
	calls := []SourceCall{{Func: "scale", Args: []string{"xs"}}}
	if corr, ok := MatchCalls(calls, nil); ok || corr != 0 {
		t.Errorf("MatchCalls(calls, nil) = %v, %v; want 0, false", corr, ok)
	}
	if corr, ok := MatchCalls(nil, &calls[0]); !ok || corr != 0 {
		t.Errorf("MatchCalls(nil, ref) = %v, %v; want 0, true", corr, ok)
	}
}
