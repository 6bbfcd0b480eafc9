package goharness

import (
	"strings"
	"testing"
)

// The fast path judges the solver's own code: calls the task's context
// makes do not count, a same-named function of another package is a
// sibling, not the target, and a whole program is judged as the program
// it is (its own imports, its helpers).
func TestJudgeLooksAtTheSolversCode(t *testing.T) {
	program := func(solution string) string {
		return "package main\n\nimport (\n\t\"fmt\"\n\t\"slices\"\n\n\t\"github.com/samber/lo\"\n)\n\nfunc main() {\n\t_ = lo.Chunk([]int{1}, 1) // the context's own call\n" + solution + "\n\tfmt.Println(x)\n}\n"
	}
	chunk := Target{ID: "lo.Chunk", Package: "github.com/samber/lo", Name: "Chunk"}
	push := Target{ID: "lo.Stack.Push", Package: "github.com/samber/lo", Receiver: "Stack", Name: "Push"}
	whole := func(imports, body string) string {
		return "package main\n\nimport (\n" + imports + "\n)\n\n" + body
	}
	for _, tc := range []struct {
		name     string
		tg       Target
		solution string
		passed   bool
		compile  string // the compile error
		direct   int64  // what the spy counted over the whole scenario
		class    string
		rule     string
	}{
		{name: "hard-coded values, the context calls the target", tg: chunk, solution: "x := [][]int{{1, 2}, {3}}", direct: 1,
			class: ClassWrongAPISelection, rule: "never calls Chunk"},
		{name: "hard-coded values and an early exit", tg: chunk, solution: "x := [][]int{{1, 2}, {3}}\n\tfmt.Print(\"[[1 2] [3]]\\n\")\n\tos.Exit(0)",
			class: ClassWrongAPISelection, rule: "never calls Chunk"},
		{name: "a standard-library sibling", tg: chunk, solution: "x := slices.Collect(slices.Chunk([]int{1, 2, 3}, 2))", direct: 1,
			class: ClassWrongAPISelection, rule: "never calls Chunk; calls slices.Chunk instead"},
		{name: "a standard-library sibling that does not compile", tg: chunk, solution: "x := slices.Chunk([]int{1, 2, 3}, 2)",
			compile: "./main.go:12:7: cannot use slices.Chunk([]int{1, 2, 3}, 2) (value of type iter.Seq[[]int]) as [][]int value in assignment",
			class:   ClassWrongAPISelection, rule: "calls slices.Chunk instead of Chunk"},
		{name: "the target, a wrong result", tg: chunk, solution: "x := lo.Chunk([]int{1, 2, 3}, 3)", direct: 2,
			class: ClassNeedsLLM, rule: "the result is wrong"},
		{name: "the target called, its result discarded", tg: chunk, solution: "_ = lo.Chunk([]int{1, 2, 3}, 2)\n\tx := [][]int{{1, 2}, {3}}", direct: 2,
			class: ClassNeedsLLM, rule: "the result is wrong"},
		{name: "a function of the package that does not exist", tg: chunk, solution: "x := lo.ChunkBy([]int{1, 2, 3}, 2)",
			compile: "./main.go:12:10: undefined: lo.ChunkBy", class: ClassWrongAPISelection, rule: "calls lo.ChunkBy, which does not exist"},
		{name: "a method on a value", tg: push, solution: "var s lo.Stack[int]\n\ts.Push(1)\n\tx := s", direct: 1,
			class: ClassNeedsLLM, rule: "the result is wrong"},
		{name: "a method on a value whose type has no such method", tg: push, solution: "var s []int\n\ts.Push(1)\n\tx := s",
			compile: "./main.go:13:4: s.Push undefined (type []int has no field or method Push)", class: ClassWrongAPISelection, rule: "calls method Push, which does not exist"},
		{name: "a same-named function of a package is not the method", tg: push, solution: "x := strings.NewReplacer(\"a\", \"b\")\n\t_ = fmt.Push",
			class: ClassWrongAPISelection, rule: "never calls Push"},
		{name: "a method target, another method called instead", tg: push, solution: "var s lo.Stack[int]\n\ts.PushAll(1)\n\tx := s",
			class: ClassWrongAPISelection, rule: "never calls Push; calls s.PushAll instead"},
		{name: "a whole program that passes", tg: chunk, passed: true,
			solution: whole("\t\"fmt\"\n\n\t\"github.com/samber/lo\"", "func main() {\n\tfmt.Println(lo.Chunk([]int{1, 2, 3}, 2))\n}\n"),
			class:    ClassOK, rule: "passed"},
		{name: "a whole program that does not import the target's package", tg: chunk,
			solution: whole("\t\"fmt\"", "func main() {\n\tfmt.Println(lo.Chunk([]int{1, 2, 3}, 2))\n}\n"),
			compile:  "./main.go:8:14: undefined: lo", class: ClassWrongImport, rule: "uses lo without importing it"},
		{name: "a whole program importing a wrong path", tg: chunk,
			solution: whole("\t\"fmt\"\n\n\t\"github.com/samber/lo/v2\"", "func main() {\n\tfmt.Println(lo.Chunk([]int{1, 2, 3}, 2))\n}\n"),
			compile:  "main.go:6:2: no required module provides package github.com/samber/lo/v2; to add it:\n\tgo get github.com/samber/lo/v2", class: ClassWrongImport, rule: "does not resolve"},
		{name: "a whole program importing a package no module provides, built offline", tg: chunk,
			solution: whole("\t\"fmt\"\n\n\t\"evil.example.com/lo\"", "func main() {\n\tfmt.Println(lo.Chunk([]int{1, 2, 3}, 2))\n}\n"),
			compile:  "main.go:6:2: cannot find module providing package evil.example.com/lo: module lookup disabled by GOPROXY=off", class: ClassWrongImport, rule: "does not resolve"},
		{name: "a whole program calling the target in its own helper", tg: chunk, direct: 1,
			solution: whole("\t\"fmt\"\n\n\t\"github.com/samber/lo\"", "func halves(xs []int) [][]int { return lo.Chunk(xs, 2) }\n\nfunc main() {\n\tfmt.Println(halves([]int{1, 2, 3}))\n}\n"),
			class:    ClassNeedsLLM, rule: "the result is wrong"},
		{name: "a whole program importing the target's package under another name", tg: chunk, direct: 1,
			solution: whole("\t\"fmt\"\n\n\tsamber \"github.com/samber/lo\"", "func main() {\n\tfmt.Println(samber.Chunk([]int{1, 2, 3}, 3))\n}\n"),
			class:    ClassNeedsLLM, rule: "the result is wrong"},
		{name: "a whole program with hard-coded output", tg: chunk,
			solution: whole("\t\"fmt\"", "func main() {\n\tfmt.Println(\"[[1 2] [3]]\")\n}\n"),
			class:    ClassWrongAPISelection, rule: "never calls Chunk"},
		{name: "a whole program that does not parse", tg: chunk,
			solution: whole("\t\"fmt\"", "func main() {\n\tfmt.Println(\"[[1 2] [3]]\"\n}\n"),
			class:    ClassWrongSyntax, rule: "does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog := program(tc.solution)
			if strings.HasPrefix(tc.solution, "package main") {
				prog = tc.solution // a whole program is the program that runs (AsProgram)
			}
			s := Sample{Program: prog, Solution: tc.solution, Passed: tc.passed, CompileError: tc.compile, Ran: tc.compile == "", Direct: tc.direct}
			class, rule := Judge(s, tc.tg, "lo")
			if class != tc.class || !strings.Contains(rule, tc.rule) {
				t.Errorf("judged %s (%q), want %s (%q)", class, rule, tc.class, tc.rule)
			}
		})
	}
}
