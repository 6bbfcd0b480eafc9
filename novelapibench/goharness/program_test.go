package goharness

import (
	"reflect"
	"strings"
	"testing"
)

func TestAsProgramReadsAWholeProgram(t *testing.T) {
	task := Task{Difficulty: "easy", Probes: []string{"out", "n"}, Output: "[2 4 6]\n"}
	prog, span, ok := task.AsProgram(`package main

import (
	"fmt"

	sh "example.com/shapes"
)

// double is the solver's helper.
func double(x int) int { return x * 2 }

func main() {
	out := sh.Scale([]int{1, 2, 3}, 2)
	fmt.Println(out)
}
`)
	if !ok {
		t.Fatal("a whole program was not recognised")
	}
	if want := []string{`fmt "fmt"`, `sh "example.com/shapes"`}; !reflect.DeepEqual(prog.OwnImports, want) || prog.Imports != nil {
		t.Errorf("imports %q (example imports %q), want %q", prog.OwnImports, prog.Imports, want)
	}
	if !strings.Contains(prog.Decls, "func double(x int) int") || !strings.Contains(prog.Decls, "// double is") {
		t.Errorf("decls %q", prog.Decls)
	}
	if !strings.Contains(span, "sh.Scale([]int{1, 2, 3}, 2)") || strings.Contains(span, "func main") {
		t.Errorf("span %q", span)
	}
	if !reflect.DeepEqual(prog.Probes, []string{"out"}) {
		t.Errorf("probes %v, want only the one main declares", prog.Probes)
	}
	if prog.Before != "" || prog.After != "" || prog.Output != task.Output {
		t.Errorf("task %+v", prog)
	}
	for _, notProgram := range []string{"out := sh.Scale(xs, 2)", "package shapes\n\nfunc main() {}\n", "package main\n\nfunc helper() {}\n"} {
		if _, _, ok := task.AsProgram(notProgram); ok {
			t.Errorf("%q read as a whole program", notProgram)
		}
	}
	o := (&Observation{Output: "x", Probes: map[string]Probe{"out": {Type: "[]int"}, "n": {Type: "int"}, EndProbe: {Type: "bool"}}}).WithProbes(prog.Probes)
	if len(o.Probes) != 2 || o.Output != "x" {
		t.Errorf("WithProbes kept %v", o.Probes)
	}
}

// TestProgramRendersEitherAnswerForm: a span with its imports and a whole
// program both render as one compilable file, the imports at the top
// (ImportsFor's), none inside main.
func TestProgramRendersEitherAnswerForm(t *testing.T) {
	task := Task{Difficulty: Easy, Imports: []string{`fmt "fmt"`, `shapes "example.com/shapes"`},
		Before: "\n\txs := []int{1, 2, 3}", Mask: "ys := shapes.Scale(xs, 2)", After: "\tfmt.Println(ys)", Probes: []string{"ys"}}
	for _, tc := range []struct {
		name, answer string
		imports      []string
		body         string // main's body must contain it
	}{
		{"the reference answer", task.ReferenceAnswer(), []string{`fmt "fmt"`, `shapes "example.com/shapes"`}, "ys := shapes.Scale(xs, 2)\n\tfmt.Println(ys)"},
		{"a span without the target's import", "ys := shapes.Scale(xs, 2)", []string{`fmt "fmt"`}, "ys := shapes.Scale(xs, 2)"},
		{"a span with a renamed import and a standard package", "import sh \"example.com/shapes\"\nys := sh.Scale(xs, 2)\n_ = strings.TrimSpace(\"\")",
			[]string{`fmt "fmt"`, `sh "example.com/shapes"`, `strings "strings"`}, "ys := sh.Scale(xs, 2)"},
		{"a whole program", "package main\n\nimport (\n\t\"fmt\"\n\tsh \"example.com/shapes\"\n)\n\nfunc double(x int) int { return 2 * x }\n\nfunc main() {\n\tys := sh.Scale([]int{1, 2, 3}, double(1))\n\tfmt.Println(ys)\n}\n",
			[]string{`fmt "fmt"`, `sh "example.com/shapes"`}, "ys := sh.Scale([]int{1, 2, 3}, double(1))"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := task.Program(tc.answer)
			head, body, ok := strings.Cut(p, "func main() {")
			var imports []string
			for _, l := range strings.Split(head, "\n") {
				if im, ok := strings.CutPrefix(l, "import "); ok {
					imports = append(imports, im)
				}
			}
			if !ok || !reflect.DeepEqual(imports, tc.imports) || !strings.Contains(body, tc.body) || strings.Contains(body, "import") {
				t.Errorf("imports %q, want %q; program:\n%s", imports, tc.imports, p)
			}
		})
	}
}

// TestWithContext: a whole program whose main begins with the task's
// context, statement for statement as gofmt prints them, runs that code
// as its context and the rest as its span; one that built its data
// another way is left whole.
func TestWithContext(t *testing.T) {
	task := Task{Before: "\n\txs := []int{1, 2, 3}\n\tk := 2", Mask: "\tys := shapes.Scale(xs, k)"}
	for _, tc := range []struct {
		name, body, span string
		ok               bool
	}{
		{"the context as written", "\n\txs := []int{1, 2, 3}\n\tk := 2\n\tys := shapes.Scale(xs, k)\n\tfmt.Println(ys)\n", "\n\tys := shapes.Scale(xs, k)\n\tfmt.Println(ys)\n", true},
		{"reformatted", "\nxs := []int{1,2,3}\n\n\n  k := 2\nys := shapes.Scale(xs, k)\n", "\nys := shapes.Scale(xs, k)\n", true},
		{"other data", "\n\txs := []int{1, 2, 4}\n\tk := 2\n\tys := shapes.Scale(xs, k)\n", "", false},
		{"the context only", "\n\txs := []int{1, 2, 3}\n\tk := 2\n", "", false},
		{"fewer statements", "\n\tys := shapes.Scale([]int{1, 2, 3}, 2)\n", "", false},
	} {
		prog, span, ok := task.WithContext(Task{Mask: tc.body}, tc.body)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if !ok {
			if span != tc.body || prog.Before != "" {
				t.Errorf("%s: changed %q %q", tc.name, prog.Before, span)
			}
			continue
		}
		if span != tc.span || prog.Before+span != tc.body || prog.Mask != span {
			t.Errorf("%s: before %q span %q, want span %q", tc.name, prog.Before, span, tc.span)
		}
	}
}

func TestAsSpan(t *testing.T) {
	task := Task{
		Decls:  "// double is a helper.\nfunc double(n int) int { return 2 * n }",
		Before: "\n\txs := []int{1, 2, 3}",
		Mask:   "\tys := shapes.Scale(xs, double(1))",
		After:  "\n\tif len(ys) == 0 {\n\t\treturn\n\t}\n\tfmt.Println(ys)",
	}
	const decls = "func double(n int) int {\n\treturn 2 * n\n}"
	const program = "\n\txs := []int{1, 2, 3}\n\tys := shapes.Scale(xs, double(1))\n\tif len(ys) == 0 {\n\t\treturn\n\t}\n\tfmt.Println(ys)\n"
	for _, tc := range []struct {
		name, decls, body, span, own string
		ok                           bool
	}{
		{"the task's program", decls, "\n\txs := []int{1, 2, 3}\n\tys := shapes.Scale(xs, double(1))\n\tif len(ys) == 0 {\n\t\treturn\n\t}\n\tfmt.Println(ys)\n", "ys := shapes.Scale(xs, double(1))", "", true},
		{"reformatted, two statements", "func double(n int) int { return 2*n }", "\nxs := []int{1,2,3}\nk := double(1)\nys := shapes.Scale(xs, k)\nif len(ys) == 0 { return }\nfmt.Println(ys)\n", "k := double(1)\nys := shapes.Scale(xs, k)", "", true},
		{"other helper", "func double(n int) int { return n + n }", "\n\txs := []int{1, 2, 3}\n\tys := shapes.Scale(xs, double(1))\n\tif len(ys) == 0 {\n\t\treturn\n\t}\n\tfmt.Println(ys)\n", "", "", false},
		{"a helper of its own", decls + "\nfunc other() {}", program, "ys := shapes.Scale(xs, double(1))", "func other() {}", true},
		{"helpers of its own before and after, with comments", "// half halves.\nfunc half(n int) int { return n / 2 }\n" + decls + "\ntype pair struct{ a, b int }\n\nfunc (p pair) sum() int { return p.a + p.b }\n\nconst k = 3", program, "ys := shapes.Scale(xs, double(1))",
			"// half halves.\nfunc half(n int) int { return n / 2 }\n\ntype pair struct{ a, b int }\n\nfunc (p pair) sum() int { return p.a + p.b }\n\nconst k = 3", true},
		{"a variable of its own initialised by a call (before the harness)", decls + "\nvar seen = double(4)", program, "", "", false},
		{"a variable of its own initialised by a function literal", decls + "\nvar f = func() int { return 1 }", program, "", "", false},
		{"variables of its own that call nothing", decls + "\nvar data = []int{1, 2}\n\nvar n int", program, "ys := shapes.Scale(xs, double(1))", "var data = []int{1, 2}\n\nvar n int", true},
		{"an init of its own", decls + "\nfunc init() {}", program, "", "", false},
		{"a method on a type it does not declare", decls + "\nfunc (s shape) String() string { return \"\" }", program, "", "", false},
		{"the task's helper left out", "func other() {}", program, "", "", false},
		{"other data", decls, "\n\txs := []int{1, 2, 4}\n\tys := shapes.Scale(xs, double(1))\n\tif len(ys) == 0 {\n\t\treturn\n\t}\n\tfmt.Println(ys)\n", "", "", false},
		{"other ending", decls, "\n\txs := []int{1, 2, 3}\n\tys := shapes.Scale(xs, double(1))\n\tfmt.Println(ys)\n", "", "", false},
		{"no span", decls, "\n\txs := []int{1, 2, 3}\n\tif len(ys) == 0 {\n\t\treturn\n\t}\n\tfmt.Println(ys)\n", "", "", false},
	} {
		span, own, ims, ok := task.AsSpan(Task{Decls: tc.decls, OwnImports: []string{`fmt "fmt"`}}, tc.body)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if ok && (strings.TrimSpace(span) != tc.span || strings.TrimSpace(own) != tc.own || len(ims) != 1) {
			t.Errorf("%s: span %q own %q imports %q, want span %q own %q", tc.name, span, own, ims, tc.span, tc.own)
		}
	}
}
