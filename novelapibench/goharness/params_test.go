package goharness

import (
	"strings"
	"testing"
)

func TestParamCorrMatchesArgumentsByPosition(t *testing.T) {
	chunk := Target{ID: "lo.Chunk", Package: "github.com/samber/lo", Name: "Chunk"}
	clamp := Target{ID: "lo.Clamp", Package: "github.com/samber/lo", Name: "Clamp"}
	push := Target{ID: "lo.Stack.Push", Package: "github.com/samber/lo", Receiver: "Stack", Name: "Push"}
	variadic := Target{ID: "lo.Union", Package: "github.com/samber/lo", Name: "Union"}
	prog := "package main\n\nimport \"github.com/samber/lo\"\n\nfunc main() {}\n"
	for _, tc := range []struct {
		name     string
		tg       Target
		ref, sol string
		want     float64
	}{
		{"the reference's call", chunk, "x := lo.Chunk(xs, 2)", "x := lo.Chunk(xs, 2)", 1},
		{"spacing and parentheses do not matter", chunk, "x := lo.Chunk(xs, 2)", "x := lo.Chunk( (xs),2 )", 1},
		{"one argument of two differs", chunk, "x := lo.Chunk(xs, 2)", "x := lo.Chunk(xs, 3)", 0.5},
		{"arguments swapped", clamp, "y := lo.Clamp(v, 0, 10)", "y := lo.Clamp(0, v, 10)", 1.0 / 3},
		{"a missing argument counts against", clamp, "y := lo.Clamp(v, 0, 10)", "y := lo.Clamp(v, 0)", 2.0 / 3},
		{"an extra variadic element counts against", variadic, "u := lo.Union(a, b)", "u := lo.Union(a, b, c)", 2.0 / 3},
		{"a spread matches only a spread", variadic, "u := lo.Union(xs...)", "u := lo.Union(xs)", 0},
		{"the same spread", variadic, "u := lo.Union(xs...)", "u := lo.Union(xs...)", 1},
		{"the best of several calls counts", chunk, "x := lo.Chunk(xs, 2)", "_ = lo.Chunk(ys, 3)\n\tx := lo.Chunk(xs, 2)", 1},
		{"explicit type arguments are not arguments", chunk, "x := lo.Chunk(xs, 2)", "x := lo.Chunk[int](xs, 2)", 1},
		{"no arguments on both sides", chunk, "x := lo.Chunk()", "x := lo.Chunk()", 1},
		{"the target never called", chunk, "x := lo.Chunk(xs, 2)", "x := lo.Flatten(xs)", 0},
		{"a sibling of another package is not the target", chunk, "x := lo.Chunk(xs, 2)", "x := slices.Chunk(xs, 2)", 0},
		{"code that does not parse", chunk, "x := lo.Chunk(xs, 2)", "x := lo.Chunk(xs, 2", 0},
		{"a method: the receiver is not an argument", push, "var s lo.Stack[int]\n\ts.Push(1)", "var t lo.Stack[int]\n\tt.Push(1)", 1},
		{"a method with another argument", push, "s.Push(1)", "s.Push(2)", 0},
		{"the solver's own import name", chunk, "x := lo.Chunk(xs, 2)", "import samber \"github.com/samber/lo\"\n\nx := samber.Chunk(xs, 2)", 1},
		{"a whole program", chunk, "x := lo.Chunk(xs, 2)", "package main\n\nimport \"github.com/samber/lo\"\n\nfunc main() {\n\tx := lo.Chunk(xs, 3)\n\t_ = x\n}\n", 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := ParamCorr(tc.sol, prog, tc.ref, prog, tc.tg, "lo"); got != tc.want || !ok {
				t.Errorf("ParamCorr = %v, %v, want %v (calls %v)", got, ok, tc.want, CallStructure(tc.sol, prog, tc.tg, "lo"))
			}
		})
	}
}

// A reference without a recognisable call of the target leaves nothing to
// compare with: the match is undefined, not 0, whatever the solver wrote.
func TestParamCorrIsUndefinedWithoutAReferenceCall(t *testing.T) {
	chunk := Target{ID: "lo.Chunk", Package: "github.com/samber/lo", Name: "Chunk"}
	prog := "package main\n\nimport \"github.com/samber/lo\"\n\nfunc main() {}\n"
	for _, sol := range []string{"x := lo.Chunk(xs, 2)", "x := lo.Flatten(xs)", "x := lo.Chunk(xs, 2"} {
		if got, ok := ParamCorr(sol, prog, "x := lo.Flatten(lo.Range(3))", prog, chunk, "lo"); ok {
			t.Errorf("ParamCorr(%q) against a reference that never calls Chunk = %v, defined", sol, got)
		}
	}
	if got, ok := MatchCalls([]CallInfo{{Func: "lo.Chunk", Args: []string{"xs", "2"}, Target: true}}, nil); ok {
		t.Errorf("MatchCalls without a reference call = %v, defined", got)
	}
}

func TestCallStructureListsThePackagesCalls(t *testing.T) {
	chunk := Target{ID: "lo.Chunk", Package: "github.com/samber/lo", Name: "Chunk"}
	got := CallStructure("x := lo.Chunk(lo.Range(4),\n\t2)\n\tfmt.Println(lo.Flatten(x))", "package main\n", chunk, "lo")
	var s []string
	for _, c := range got {
		s = append(s, c.String()+map[bool]string{true: " *"}[c.Target])
	}
	want := "lo.Chunk(lo.Range(4), 2) *|lo.Range(4)|lo.Flatten(x)"
	if strings.Join(s, "|") != want {
		t.Errorf("calls %q, want %q", strings.Join(s, "|"), want)
	}
	if r := TargetCall("x := lo.Chunk(xs, 2)", "", chunk, "lo"); r == nil || r.String() != "lo.Chunk(xs, 2)" {
		t.Errorf("reference call %v", r)
	}
	if r := TargetCall("x := lo.Flatten(xs)", "", chunk, "lo"); r != nil {
		t.Errorf("no call of the target: %v", r)
	}
}

// BenchmarkJudgeOneSample is the judge's deterministic work on one failed
// sample: the fast path, the call structure, the argument match and the
// fallback (what a sweep of 300k samples pays before any model call).
func BenchmarkJudgeOneSample(b *testing.B) {
	chunk := Target{ID: "lo.Chunk", Package: "github.com/samber/lo", Name: "Chunk"}
	sol := "import \"github.com/samber/lo\"\n\nx := lo.Chunk(lo.Range(10), 3)\n\tfor i := range x {\n\t\tx[i] = x[i][:1]\n\t}"
	prog := "package main\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/samber/lo\"\n)\n\nfunc main() {\n\tx := lo.Chunk(lo.Range(10), 3)\n\tfor i := range x {\n\t\tx[i] = x[i][:1]\n\t}\n\tfmt.Println(x)\n}\n"
	ref := TargetCall("x := lo.Chunk(lo.Range(10), 2)", prog, chunk, "lo")
	s := Sample{Program: prog, Solution: sol, Ran: true, Direct: 1}
	for b.Loop() {
		Judge(s, chunk, "lo")
		corr, _ := MatchCalls(CallStructure(sol, prog, chunk, "lo"), ref)
		Fallback(s, RunFailure{FailedLayers: []string{"comparative"}}, chunk, "lo", &corr)
	}
}
