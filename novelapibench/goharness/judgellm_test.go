package goharness

import (
	"slices"
	"strings"
	"testing"
)

func TestFallbackRules(t *testing.T) {
	chunk := Target{ID: "lo.Chunk", Package: "github.com/samber/lo", Name: "Chunk"}
	prog := func(sol string) string {
		return "package main\n\nimport \"github.com/samber/lo\"\n\nfunc main() {\n" + sol + "\n}\n"
	}
	stack := "boom\n\ngoroutine 7 [running]:\nruntime/debug.Stack()\n\t/go/src/runtime/debug/stack.go:26 +0x5e\nmain.lacunaRun.func1.1()\n\t/w/main.go:90 +0x4a\npanic({0x4c, 0x5})\n\t/go/src/runtime/panic.go:783 +0x132\n"
	for _, tc := range []struct {
		name   string
		sol    string
		direct int64
		norun  bool // no record: the harness refused it or it crashed
		f      RunFailure
		corr   float64
		nocorr bool // the reference has no call of the target: corr undefined
		class  string
		rule   string
	}{
		{name: "too many arguments", sol: "x := lo.Chunk(xs, 2, 3)", corr: 0.5,
			f: RunFailure{CompileError: "./main.go:6:21: too many arguments in call to lo.Chunk\n\thave ([]int, number, number)\n\twant ([]T, int)"}, class: ClassWrongParam, rule: "rejects the arguments of Chunk"},
		{name: "an argument of the wrong type", sol: "x := lo.Chunk(xs, \"2\")", corr: 0.5,
			f: RunFailure{CompileError: "./main.go:6:20: cannot use \"2\" (untyped string constant) as int value in argument to lo.Chunk"}, class: ClassWrongParam, rule: "arguments of Chunk"},
		{name: "type arguments not inferred", sol: "x := lo.Chunk(nil, 2)",
			f: RunFailure{CompileError: "./main.go:6:15: in call to lo.Chunk, cannot infer T"}, class: ClassWrongParam, rule: "arguments of Chunk"},
		{name: "another compile error", sol: "x := lo.Chunk(xs, 2)\n\tvar y int = x", corr: 1,
			f: RunFailure{CompileError: "./main.go:7:14: cannot use x (variable of type [][]int) as int value in variable declaration"}, class: ClassWrongLogic, rule: "the code around it does not compile"},
		{name: "arguments of another call are not the target's", sol: "x := lo.Chunk(xs, 2)\n\t_ = lo.ChunkString(x, 2)", corr: 1,
			f: RunFailure{CompileError: "./main.go:7:20: cannot use x (variable of type [][]int) as string value in argument to lo.ChunkString"}, class: ClassWrongLogic, rule: "the code around it does not compile"},
		{name: "something else, not compiling", sol: "fmt.Println(\"unsure\")",
			f: RunFailure{CompileError: "./main.go:9:14: undefined: result"}, class: ClassWrongAPISelection, rule: "never calls Chunk (and does not compile"},
		{name: "the target named, never run", sol: "if false {\n\t\tx := lo.Chunk(xs, 2)\n\t}", direct: 0, corr: 1,
			class: ClassWrongAPISelection, rule: "never calls it"},
		{name: "refused before the build", sol: "x := lo.Chunk(xs, 2)\n\treturn", norun: true, corr: 1,
			f: RunFailure{FailedLayers: []string{"span"}, Failures: "returns from the scenario: the code after the span must run"}, class: ClassWrongLogic, rule: "did not run to its end: returns from the scenario"},
		{name: "a crash before the record", sol: "x := lo.Chunk(xs, 2)\n\tos.Exit(3)", norun: true, corr: 1,
			f: RunFailure{RuntimeError: "exit status 3\n", FailedLayers: []string{"runtime"}}, class: ClassWrongLogic, rule: "did not run to its end: exit status 3"},
		{name: "a panic inside the package", sol: "x := lo.Chunk(xs, 0)", direct: 1, corr: 0.5,
			f:     RunFailure{RuntimeError: "panic: " + stack + "github.com/samber/lo.Chunk[...]({0xc0, 0x3, 0x3}, 0x0)\n\t/m/slice.go:180 +0x2f5\nmain.main()\n"},
			class: ClassWrongShapeDtype, rule: "panics inside github.com/samber/lo: github.com/samber/lo.Chunk[...]"},
		{name: "an index panic inside the package (runtime frames skipped)", sol: "x := lo.Chunk(xs, 2)", direct: 1, corr: 1,
			f:     RunFailure{RuntimeError: "panic: " + stack + "runtime.goPanicIndex(0x3, 0x3)\n\t/go/src/runtime/panic.go:115 +0x74\ngithub.com/samber/lo.Nth[...](...)\n"},
			class: ClassWrongShapeDtype, rule: "panics inside"},
		{name: "a panic in the solver's own code", sol: "x := lo.Chunk(xs, 2)\n\t_ = x[5]", direct: 1, corr: 1,
			f:     RunFailure{RuntimeError: "panic: " + stack + "runtime.goPanicIndex(0x5, 0x2)\n\t/go/src/runtime/panic.go:115 +0x74\nmain.main.func1()\n"},
			class: ClassWrongLogic, rule: "fails outside it"},
		{name: "other arguments than the reference's", sol: "x := lo.Chunk(xs, 3)", direct: 1, corr: 0.5,
			f: RunFailure{FailedLayers: []string{"comparative"}}, class: ClassWrongParam, rule: "param_corr 0.50"},
		{name: "no reference call to compare the arguments with", sol: "x := lo.Chunk(xs, 3)", direct: 1, nocorr: true,
			f: RunFailure{FailedLayers: []string{"comparative"}}, class: ClassWrongLogic, rule: "the reference has no call of it: arguments not compared"},
		{name: "the reference's call, a wrong result", sol: "x := lo.Chunk(xs, 2)\n\tx = nil", direct: 1, corr: 1,
			f: RunFailure{FailedLayers: []string{"attribution"}}, class: ClassWrongLogic, rule: "the program around it is wrong"},
		{name: "a hang", sol: "x := lo.Chunk(xs, 2)\n\tselect {}", direct: 1, corr: 1,
			f: RunFailure{TimedOut: true}, class: ClassWrongLogic, rule: "time limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Sample{Program: prog(tc.sol), Solution: tc.sol, CompileError: tc.f.CompileError, Ran: tc.f.CompileError == "" && !tc.norun, Direct: tc.direct}
			corr := &tc.corr
			if tc.nocorr {
				corr = nil
			}
			class, rule := Fallback(s, tc.f, chunk, "lo", corr)
			if class != tc.class || !strings.Contains(rule, tc.rule) {
				t.Errorf("Fallback = %s (%q), want %s (%q)", class, rule, tc.class, tc.rule)
			}
		})
	}
}

func TestEveryMutantKindHasAnExpectedClass(t *testing.T) {
	for _, k := range []string{"reference", MutantNull, MutantSibling, MutantImport, MutantPerturb, MutantSyntax, MutantHardcoded, MutantThrowaway, MutantDiscarded, MutantExit, MutantGoexit} {
		c, ok := ExpectedClass(k)
		if !ok || (c != ClassOK && !slices.Contains(FailureClasses, c)) {
			t.Errorf("%s: expected class %q, %v", k, c, ok)
		}
	}
	if _, ok := ExpectedClass("model"); ok {
		t.Error("a model's sample has no expected class")
	}
}

func TestParseVerdictAcceptsOnlyTheSixClasses(t *testing.T) {
	for _, tc := range []struct {
		answer, class, err string
	}{
		{`{"class": "WrongParam", "rationale": "passes 3 for 2"}`, "WrongParam", ""},
		{` {"class":"WrongLogic","rationale":""} `, "WrongLogic", ""},
		{`{"class": "OK", "rationale": "fine"}`, "", `class "OK" is not one of the six`},
		{`{"rationale": "no class"}`, "", "class none"},
		{`WrongParam`, "", "not JSON"},
		{`{"class": "WrongParam"`, "", "not JSON"},
	} {
		class, _, err := ParseVerdict(tc.answer)
		if class != tc.class || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseVerdict(%q) = %q, %v; want %q, %q", tc.answer, class, err, tc.class, tc.err)
		}
	}
	if s, err := ParseSem(`{"equivalent": true, "score": 0.75}`); err != nil || s != 0.75 {
		t.Errorf("sem %v %v", s, err)
	}
	for _, bad := range []string{`{"equivalent": true, "score": 1.5}`, `{"score": 0.5}`, `yes`} {
		if _, err := ParseSem(bad); err == nil {
			t.Errorf("ParseSem(%q) accepted", bad)
		}
	}
}

// A reasoning model thinks before it answers and may fence its JSON: the
// verdict is the object all the same.
func TestParseVerdictReadsReasoningModelsAnswers(t *testing.T) {
	const obj = `{"class": "WrongParam", "rationale": "passes 3 for 2"}`
	for _, tc := range []struct {
		name, answer, class, err string
	}{
		{"a think block first", "<think>\nThe call is right, {\"class\": maybe} the argument is not.\n</think>\n\n" + obj, "WrongParam", ""},
		{"R1: the block opened in the prompt", "The second argument is 3.\n</think>\n" + obj, "WrongParam", ""},
		{"a json fence", "```json\n" + obj + "\n```", "WrongParam", ""},
		{"a bare fence with prose around it", "Here is my verdict:\n```\n" + obj + "\n```\nHope this helps.", "WrongParam", ""},
		{"a fence on one line", "```json " + obj + "```", "WrongParam", ""},
		{"think, then a fence", "<think>hmm</think>\n```json\n" + obj + "\n```", "WrongParam", ""},
		{"a fence of another language", "```go\n" + obj + "\n```", "", "not JSON"},
		{"two fences", "```json\n" + obj + "\n```\nor\n```json\n" + obj + "\n```", "", "not JSON"},
		{"only thinking (cut at max_tokens)", "<think>The call is", "", "not JSON"},
		{"a member the schema does not have", `{"class": "WrongParam", "rationale": "x", "confidence": 0.9}`, "", "not the schema's object"},
		{"no rationale", `{"class": "WrongParam"}`, "", "no rationale"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class, _, err := ParseVerdict(tc.answer)
			if class != tc.class || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("ParseVerdict(%q) = %q, %v; want %q, %q", tc.answer, class, err, tc.class, tc.err)
			}
		})
	}
	for _, answer := range []string{"<think>equal?</think>{\"equivalent\": true, \"score\": 0.75}", "```json\n{\"equivalent\": true, \"score\": 0.75}\n```"} {
		if s, err := ParseSem(answer); err != nil || s != 0.75 {
			t.Errorf("ParseSem(%q) = %v, %v", answer, s, err)
		}
	}
	if _, err := ParseSem(`{"equivalent": true, "score": 0.5, "why": "same"}`); err == nil {
		t.Error("ParseSem accepted a member the schema does not have")
	}
}

func TestJudgePromptIsBounded(t *testing.T) {
	chunk := Target{ID: "lo.Chunk", Package: "github.com/samber/lo", Name: "Chunk"}
	_, user := JudgePrompt(JudgeInput{Target: chunk, Description: "Split xs.", Context: "package main", Solution: "x := lo.Chunk(xs, 3)",
		Calls: []CallInfo{{Func: "lo.Chunk", Args: []string{"xs", "3"}, Target: true}}, Reference: "lo.Chunk(xs, 2)",
		Failure: RunFailure{RuntimeError: strings.Repeat("x", 10000), FailedLayers: []string{"runtime"}}})
	for _, want := range []string{"lo.Chunk(xs, 3)  [the target]", "reference solution calls: lo.Chunk(xs, 2)", "[... truncated]", "failed harness layers: runtime"} {
		if !strings.Contains(user, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	if len(user) > 4000 {
		t.Errorf("prompt of %d bytes for a 10000-byte failure", len(user))
	}
}
