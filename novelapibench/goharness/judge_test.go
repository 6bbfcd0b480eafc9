package goharness

import (
	"strings"
	"testing"
)

// The fast path judges the solver's own code: calls the task's context
// makes do not count, and a same-named function of another package is a
// sibling, not the target.
func TestJudgeLooksAtTheSolversCode(t *testing.T) {
	program := func(solution string) string {
		return "package main\n\nimport (\n\t\"fmt\"\n\t\"slices\"\n\n\t\"github.com/samber/lo\"\n)\n\nfunc main() {\n\t_ = lo.Chunk([]int{1}, 1) // the context's own call\n" + solution + "\n\tfmt.Println(x)\n}\n"
	}
	chunk := Target{ID: "lo.Chunk", Package: "github.com/samber/lo", Name: "Chunk"}
	push := Target{ID: "lo.Stack.Push", Package: "github.com/samber/lo", Receiver: "Stack", Name: "Push"}
	for _, tc := range []struct {
		name     string
		tg       Target
		solution string
		direct   int64 // what the spy counted over the whole scenario
		class    string
		rule     string
	}{
		{"hard-coded values, the context calls the target", chunk, "x := [][]int{{1, 2}, {3}}", 1, ClassWrongAPISelection, "never calls Chunk"},
		{"a standard-library sibling", chunk, "x := slices.Collect(slices.Chunk([]int{1, 2, 3}, 2))", 1, ClassWrongAPISelection, "never calls Chunk; calls slices.Chunk instead"},
		{"the target, a wrong result", chunk, "x := lo.Chunk([]int{1, 2, 3}, 3)", 2, ClassNeedsLLM, "the result is wrong"},
		{"a method on a value", push, "var s lo.Stack[int]\n\ts.Push(1)\n\tx := s", 1, ClassNeedsLLM, "the result is wrong"},
		{"a same-named function of a package is not the method", push, "x := strings.NewReplacer(\"a\", \"b\")\n\t_ = fmt.Push", 0, ClassWrongAPISelection, "never calls Push"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Sample{Program: program(tc.solution), Solution: tc.solution, Ran: true, Direct: tc.direct}
			class, rule := Judge(s, tc.tg, "lo")
			if class != tc.class || !strings.Contains(rule, tc.rule) {
				t.Errorf("judged %s (%q), want %s (%q)", class, rule, tc.class, tc.rule)
			}
		})
	}
}
