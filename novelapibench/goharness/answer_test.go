package goharness

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSplitAnswerReadsTheLeadingImports(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		imports      []string
		span         string
	}{
		{"statements alone", "ys := shapes.Scale(xs, 2)", nil, "ys := shapes.Scale(xs, 2)"},
		{"one import", "import \"example.com/shapes\"\n\nys := shapes.Scale(xs, 2)", []string{`shapes "example.com/shapes"`}, "ys := shapes.Scale(xs, 2)"},
		{"a named import", "import sh \"example.com/shapes\"\nys := sh.Scale(xs, 2)", []string{`sh "example.com/shapes"`}, "ys := sh.Scale(xs, 2)"},
		{"a group, a comment, a second declaration", "// what I need\nimport (\n\t\"strings\"\n\tlo \"github.com/samber/lo\" // the library\n)\nimport \"github.com/samber/lo/v2\"\n\tx := 1",
			[]string{`strings "strings"`, `lo "github.com/samber/lo"`, `lo "github.com/samber/lo/v2"`}, "\tx := 1"},
		{"dot and blank imports", "import . \"math\"\nimport _ \"embed\"\nx := Pi", []string{`. "math"`, `_ "embed"`}, "x := Pi"},
		{"an import then a statement on its line", `import "fmt"; fmt.Println(1)`, []string{`fmt "fmt"`}, " fmt.Println(1)"},
		{"imports only", `import "fmt"`, []string{`fmt "fmt"`}, ""},
		{"an import after a statement stays in the span", "x := 1\nimport \"fmt\"", nil, "x := 1\nimport \"fmt\""},
		{"an unclosed group is left to the compiler", "import (\n\t\"fmt\"\nfmt.Println(1)", nil, "import (\n\t\"fmt\"\nfmt.Println(1)"},
		{"a malformed import is left to the compiler", "import fmt\nfmt.Println(1)", nil, "import fmt\nfmt.Println(1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			imports, span := SplitAnswer(tc.answer)
			if !reflect.DeepEqual(imports, tc.imports) || span != tc.span {
				t.Errorf("got %q, %q; want %q, %q", imports, span, tc.imports, tc.span)
			}
		})
	}
}

func TestImportsForNeverAddsTheTargetsPackage(t *testing.T) {
	task := Task{
		Imports: []string{`fmt "fmt"`, `shapes "example.com/shapes"`, `maps "maps"`},
		Before:  "\n\txs := []int{1, 2, 3}", After: "\tfmt.Println(ys)",
	}
	for _, tc := range []struct {
		name   string
		answer string
		want   []string
	}{
		{"the target's import left out", "ys := shapes.Scale(xs, 2)", []string{`fmt "fmt"`}},
		{"the target's import written", "import \"example.com/shapes\"\nys := shapes.Scale(xs, 2)", []string{`fmt "fmt"`, `shapes "example.com/shapes"`}},
		{"another name for it", "import sh \"example.com/shapes\"\nys := sh.Scale(xs, 2)", []string{`fmt "fmt"`, `sh "example.com/shapes"`}},
		{"an import the context has, written again", "import \"fmt\"\nimport \"example.com/shapes\"\nys := shapes.Scale(xs, 2)", []string{`fmt "fmt"`, `shapes "example.com/shapes"`}},
		{"a standard package not imported", "import \"example.com/shapes\"\nys := shapes.Scale(xs, 2)\n_ = strings.TrimSpace(\"\")", []string{`fmt "fmt"`, `shapes "example.com/shapes"`, `strings "strings"`}},
		{"one name for two paths: both, for the compiler to refuse", "import fmt \"example.com/shapes\"\nys := fmt.Scale(xs, 2)", []string{`fmt "fmt"`, `fmt "example.com/shapes"`}},
		{"an import named like the harness's is dropped", "import lacunaspied \"example.com/shapes\"\nimport \"example.com/shapes\"\nys := shapes.Scale(xs, 2)", []string{`fmt "fmt"`, `shapes "example.com/shapes"`}},
		{"an unused import of the solver's is kept", "import \"os\"\nimport \"example.com/shapes\"\nys := shapes.Scale(xs, 2)", []string{`fmt "fmt"`, `os "os"`, `shapes "example.com/shapes"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			imports, span := SplitAnswer(tc.answer)
			if got := task.ImportsFor(imports, task.source(span)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	prog, span, ok := task.AsProgram("package main\n\nimport (\n\t\"fmt\"\n\tsh \"example.com/shapes\"\n)\n\nfunc main() {\n\tfmt.Println(sh.Scale([]int{1}, 2))\n}\n")
	if !ok {
		t.Fatal("not a program")
	}
	if got, want := prog.ImportsFor(nil, prog.source(span)), []string{`fmt "fmt"`, `sh "example.com/shapes"`}; !reflect.DeepEqual(got, want) {
		t.Errorf("a whole program's imports: got %q, want %q", got, want)
	}
}

func TestTheContextImportsOnlyWhatItsOwnCodeUses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		task      Task
		context   []string // import lines the context must show
		reference string   // ReferenceAnswer's import lines
	}{
		{"the target used only in the span",
			Task{Imports: []string{`lo "github.com/samber/lo"`, `fmt "fmt"`}, Before: "\n\tnums := []int{1, 2, 3}", Mask: "chunks := lo.Chunk(nums, 2)", After: "\tfmt.Println(chunks)"},
			[]string{`import fmt "fmt"`}, "import \"github.com/samber/lo\"\n\n"},
		{"a standard package used only in the span",
			Task{Imports: []string{`it "github.com/samber/lo/it"`, `fmt "fmt"`, `maps "maps"`}, Before: "\n\tkv := map[string]int{}", Mask: "result := maps.Collect(it.Entries(kv))", After: "\tfmt.Println(result)"},
			[]string{`import fmt "fmt"`}, "import \"github.com/samber/lo/it\"\nimport \"maps\"\n\n"},
		{"the target's package used by the context's helpers",
			Task{Imports: []string{`os "os"`, `zerolog "github.com/rs/zerolog"`}, Decls: "type U struct{}\n\nfunc (U) MarshalZerologObject(e *zerolog.Event) {}",
				Mask: "log := zerolog.New(os.Stdout)", After: "\tlog.Log().Msg(\"hi\")"},
			[]string{`import zerolog "github.com/rs/zerolog"`}, "import \"os\"\n\n"},
		{"a renamed import keeps its name",
			Task{Imports: []string{`sh "example.com/shapes"`, `fmt "fmt"`}, Mask: "fmt.Println(sh.Scale([]int{1}, 2))"},
			nil, "import sh \"example.com/shapes\"\nimport \"fmt\"\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.task.Context()
			var got []string
			for _, l := range strings.Split(ctx, "\n") {
				if strings.HasPrefix(l, "import ") {
					got = append(got, l)
				}
			}
			if !reflect.DeepEqual(got, tc.context) {
				t.Errorf("context imports %q, want %q\n%s", got, tc.context, ctx)
			}
			ref := tc.task.ReferenceAnswer()
			if ref != tc.reference+tc.task.Mask {
				t.Errorf("reference answer %q, want %q", ref, tc.reference+tc.task.Mask)
			}
			imports, span := SplitAnswer(ref)
			if span != tc.task.Mask {
				t.Errorf("the reference answer splits into %q, %q", imports, span)
			}
			p := tc.task.Program(ref)
			if _, body, _ := strings.Cut(p, "func main() {"); !strings.Contains(body, tc.task.Mask) || strings.Contains(body, "import") {
				t.Errorf("the imports are not hoisted out of main:\n%s", p)
			}
		})
	}
}

func TestAnswerAddsTheImportsASpanNeeds(t *testing.T) {
	task := Task{Imports: []string{`fmt "fmt"`, `shapes "example.com/shapes"`}, Before: "\n\txs := []int{1, 2, 3}", After: "\tfmt.Println(ys)"}
	for _, tc := range []struct{ span, want string }{
		{"ys := shapes.ScaleErr(xs, 2)", "import \"example.com/shapes\"\n\nys := shapes.ScaleErr(xs, 2)"}, // a sibling mutant
		{"var ys []int", "var ys []int"}, // a null mutant needs nothing
		{"ys := xs\n_ = strings.TrimSpace(\"\")\nfmt.Println(ys)", "import \"strings\"\n\nys := xs\n_ = strings.TrimSpace(\"\")\nfmt.Println(ys)"},
	} {
		if got := task.Answer(tc.span); got != tc.want {
			t.Errorf("Answer(%q) = %q, want %q", tc.span, got, tc.want)
		}
	}
}

// TestReferenceAnswersCompileInTheirContext compiles, against the offline
// fixture module, every task of its examples three ways: the reference
// answer in its context (compiles), the reference as a whole program
// (compiles), and the bare span with no imports (does not compile unless
// the context itself uses the target's package: the solver's import is
// what makes it compile).
func TestReferenceAnswersCompileInTheirContext(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	abs, _ := filepath.Abs(fixtureNew)
	dir := t.TempDir()
	gomod := "module m\n\ngo 1.22\n\nrequire example.com/shapes v1.1.0\n\nreplace example.com/shapes => " + abs + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	type prog struct {
		name    string
		src     string
		compile bool
	}
	var progs []prog
	for _, c := range []struct{ example, name, recv string }{
		{"ExampleScale", "Scale", ""}, {"ExampleApply", "Apply", ""}, {"ExampleTotalArea", "TotalArea", ""},
		{"ExampleStack_Push", "Push", "Stack"}, {"ExampleStack_Len", "Len", "Stack"},
	} {
		tg := Target{ID: "example.com/shapes." + c.name, Package: "example.com/shapes", Receiver: c.recv, Name: c.name}
		tasks, _, err := TasksFromExample(fixtureExample(t, c.example), tg)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			id := c.example + "_" + task.Difficulty
			usesPkg := strings.Contains(task.Context(), `"example.com/shapes"`)
			progs = append(progs,
				prog{id + "_reference", task.Program(task.ReferenceAnswer()), true},
				prog{id + "_whole", task.Program(task.Program(task.ReferenceAnswer())), true},
				prog{id + "_bare", task.Program(task.Mask), usesPkg})
		}
	}
	for _, p := range progs {
		sub := filepath.Join(dir, p.name)
		os.MkdirAll(sub, 0o755)
		if err := os.WriteFile(filepath.Join(sub, "main.go"), []byte(p.src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range progs {
		cmd := exec.Command("go", "build", "-o", os.DevNull, "./"+p.name)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if (err == nil) != p.compile {
			t.Errorf("%s: compiles=%v, want %v\n%s\n%s", p.name, err == nil, p.compile, out, p.src)
		}
	}
}

func TestKnownImports(t *testing.T) {
	task := Task{Imports: []string{`fmt "fmt"`, `lo "github.com/samber/lo"`}}
	for _, tc := range []struct {
		imports []string
		want    bool
	}{
		{nil, true},
		{[]string{`lo "github.com/samber/lo"`, `strings "strings"`}, true},
		{[]string{`it "github.com/samber/lo/it"`}, true},
		{[]string{`lo "github.com/samber/lo_x"`}, false},
		{[]string{`lo "github_com/samber/lo"`}, false},
		{[]string{`x "example.com/elsewhere"`}, false},
	} {
		if got := KnownImports(task, "github.com/samber/lo", tc.imports); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.imports, got, tc.want)
		}
	}
}
