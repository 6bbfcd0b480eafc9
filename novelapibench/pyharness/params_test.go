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
	} {
		t.Run(tc.name, func(t *testing.T) {
			corr, ok := ParamCorr(tc.solution, tc.reference, scale)
			if ok != tc.ok || corr != tc.corr {
				t.Errorf("ParamCorr = %v, %v; want %v, %v", corr, ok, tc.corr, tc.ok)
			}
		})
	}
}
