package goharness

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/goapi"
	"github.com/lacuna-dev/lacuna/runners/modfetch/proxytest"
)

func fixtureExample(t *testing.T, name string) goapi.Example {
	t.Helper()
	exs, err := goapi.Examples(fixtureNew)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range exs {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no %s", name)
	return goapi.Example{}
}

func TestTasksFromExampleGradeTheScaffolding(t *testing.T) {
	push := Target{ID: "example.com/shapes.Stack.Push", Package: "example.com/shapes", Receiver: "Stack", Name: "Push"}
	tasks, skipped, err := TasksFromExample(fixtureExample(t, "ExampleStack_Push"), push)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 2 || tasks[0].Difficulty != Easy || tasks[1].Difficulty != Medium || skipped[Hard] == "" {
		t.Fatalf("tasks %+v skipped %v", tasks, skipped)
	}
	if tasks[0].Mask != `s.Push("a")` || !strings.Contains(tasks[0].Before, "var s shapes.Stack[string]") {
		t.Errorf("easy: before %q mask %q", tasks[0].Before, tasks[0].Mask)
	}
	if !strings.HasPrefix(tasks[1].Mask, "var s shapes.Stack[string]") || !reflect.DeepEqual(tasks[1].Probes, []string{"s"}) {
		t.Errorf("medium: mask %q probes %v", tasks[1].Mask, tasks[1].Probes)
	}
	if !strings.Contains(tasks[0].Context(), "<MASK>") || strings.Contains(tasks[0].Context(), `s.Push("a")`) {
		t.Errorf("context:\n%s", tasks[0].Context())
	}
	d, ok := Describe(tasks[0], push, "Push puts the value v on top of the stack.")
	if !ok || strings.Contains(d, "Push") || !strings.Contains(d, "puts the value v on top of the stack") {
		t.Errorf("description %q ok=%v", d, ok)
	}
	if _, ok := Describe(Task{Difficulty: Easy, Output: "Push done\n"}, push, ""); ok {
		t.Error("a description whose expected output names the API must be refused")
	}
}

var fixtureNew = proxytest.Shapes("v1.1.0")

// sharedBuildCache is the user's own GOCACHE: tests then do not rebuild
// the standard library in a fresh cache.
func sharedBuildCache(t testing.TB) string {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return t.TempDir()
	}
	return strings.TrimSpace(string(out))
}

// TestDescriptionsStateTheInputsNotOnlyTheOutput cuts tasks from examples
// written like the quickstart's real ones (a lo function, a zerolog method
// in a call chain, a gonum method whose result a loop prints) and checks
// what each level's description tells the solver: the data it starts
// from, what the call is given, what the span must set, the answer's
// format, and the output only as a check after all that; never the
// target's name.
func TestDescriptionsStateTheInputsNotOnlyTheOutput(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tg      Target
		doc     string
		program string
		output  string
		want    map[string][]string // level → what its description says
		not     map[string][]string // level → what it must not say
	}{
		{
			name: "a function, its data in variables",
			tg:   Target{ID: "github.com/samber/lo.Chunk", Package: "github.com/samber/lo", Module: "github.com/samber/lo", Name: "Chunk"},
			doc:  "Chunk returns a slice of elements split into groups of length size.",
			program: `package main

import (
	"fmt"

	"github.com/samber/lo"
)

func main() {
	nums := []int{1, 2, 3, 4, 5}
	chunks := lo.Chunk(nums, 2)
	fmt.Println(chunks)
}
`,
			output: "[[1 2] [3 4] [5]]\n",
			want: map[string][]string{
				Easy:   {"with the library github.com/samber/lo so that it returns a slice of elements split into groups of length size.", "takes `nums` and `2`.", "must set `chunks`", "import declarations your code needs", "whole program (package main)"},
				Medium: {"The input data, as Go:\nnums := []int{1, 2, 3, 4, 5}\n", "takes `nums` and `2`.", "must set `chunks`"},
			},
			not: map[string][]string{Easy: {"nums := []int"}},
		},
		{
			name: "a method in a call chain",
			tg:   Target{ID: "github.com/rs/zerolog.Event.ObjectsV", Package: "github.com/rs/zerolog", Receiver: "Event", Name: "ObjectsV"},
			doc:  "ObjectsV adds the field key with objs as an array of objects that implement the LogObjectMarshaler interface to the event.",
			program: `package main

import (
	"os"

	"github.com/rs/zerolog"
)

type User struct{ Name string }

func (u User) MarshalZerologObject(e *zerolog.Event) { e.Str("name", u.Name) }

func main() {
	log := zerolog.New(os.Stdout)
	u := User{"John"}
	log.Log().
		ObjectsV("users", u).
		Msg("hello world")
}
`,
			output: `{"users":[{"name":"John"}],"message":"hello world"}` + "\n",
			want: map[string][]string{
				Easy:   {"with the library so that it adds the field key with objs", "takes `\"users\"` and `u`, called on `log.Log()`.", "The marked code writes all of the program's output"},
				Medium: {"log := zerolog.New(os.Stdout)\nu := User{\"John\"}\n"},
				Hard:   {"Start from this data:\nu := User{\"John\"}\nThe library", "takes `\"users\"` and `u`.", "the library's calls write the output", "the statements of main"},
			},
			not: map[string][]string{Hard: {"zerolog.New", "called on"}, Easy: {"must set"}},
		},
		{
			name: "a method whose result the code after it reads",
			tg:   Target{ID: "gonum.org/v1/gonum/dsp/transform.Hilbert.AnalyticSignal", Package: "gonum.org/v1/gonum/dsp/transform", Receiver: "Hilbert", Name: "AnalyticSignal"},
			doc:  "AnalyticSignal computes the analytical signal of a real signal.",
			program: `package main

import (
	"fmt"
	"math/cmplx"

	"gonum.org/v1/gonum/dsp/transform"
)

func main() {
	samples := []float64{1, 0, 2, 0}
	h := transform.NewHilbert(len(samples))
	iq := h.AnalyticSignal(nil, samples)
	for i, v := range iq {
		fmt.Printf("%d %.4f\n", i, cmplx.Abs(v))
	}
}
`,
			output: "0 1.0000\n1 0.0000\n2 2.0000\n3 0.0000\n",
			want: map[string][]string{
				Easy:   {"takes `nil` and `samples`, called on `h`.", "must set `iq`"},
				Medium: {"samples := []float64{1, 0, 2, 0}\nh := transform.NewHilbert(len(samples))\n", "must set `iq`"},
				Hard:   {"Start from this data:\nsamples := []float64{1, 0, 2, 0}\nThe library", "Then finish with this code, which reads what the library computes as `iq`:\nfor i, v := range iq {"},
			},
			not: map[string][]string{Hard: {"NewHilbert"}},
		},
		{
			name: "a function composed with others of its package",
			tg:   Target{ID: "github.com/samber/lo/it.Range", Package: "github.com/samber/lo/it", Module: "github.com/samber/lo", Name: "Range"},
			doc:  "Range creates a sequence of numbers (positive and/or negative) with given length.",
			program: `package main

import (
	"fmt"
	"slices"

	"github.com/samber/lo/it"
)

func main() {
	r1 := it.Range(4)
	r2 := it.RangeFrom(1, 3)
	fmt.Println(slices.Collect(r1))
	fmt.Println(slices.Collect(r2))
}
`,
			output: "[0 1 2 3]\n[1 2 3]\n",
			want: map[string][]string{
				Easy: {"takes `4`.", "must set `r1`"},
				Hard: {"Main must also run this code, after the library calls it needs (yours to write), which reads what the library computes as `r1` and `r2`:\nfmt.Println(slices.Collect(r1))\nfmt.Println(slices.Collect(r2))\n"},
			},
			not: map[string][]string{Hard: {"RangeFrom", "Start from"}},
		},
		{
			name: "a method called twice in one chain",
			tg:   Target{ID: "github.com/rs/zerolog.Event.Str", Package: "github.com/rs/zerolog", Receiver: "Event", Name: "Str"},
			doc:  "Str adds the field key with val as a string to the *Event context.",
			program: `package main

import (
	"os"

	"github.com/rs/zerolog"
)

func main() {
	log := zerolog.New(os.Stdout)
	log.Info().Str("a", "1").Str("b", "2").Msg("m")
}
`,
			output: `{"level":"info","a":"1","b":"2","message":"m"}` + "\n",
			want:   map[string][]string{Easy: {"takes `\"a\"` and `\"1\"`, called on `log.Info()`."}},
		},
		{
			name: "a function printed directly",
			tg:   Target{ID: "example.com/shapes.Scale", Package: "example.com/shapes", Name: "Scale"},
			doc:  "Scale multiplies every element of xs by the factor k and returns a new slice; xs is left as it was.",
			program: `package main

import (
	"fmt"

	"example.com/shapes"
)

func main() {
	fmt.Println(shapes.Scale([]int{1, 2, 3}, 2))
}
`,
			output: "[2 4 6]\n",
			want:   map[string][]string{Easy: {"takes `[]int{1, 2, 3}` and `2`.", "Print what the call returns."}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tasks, _, err := TasksFromExample(goapi.Example{Name: "Example", Program: tc.program, Output: tc.output}, tc.tg)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, task := range tasks {
				d, ok := Describe(task, tc.tg, tc.doc)
				got[task.Difficulty] = true
				if !ok || NamesTarget(d, tc.tg) {
					t.Errorf("%s: refused or names the target:\n%s", task.Difficulty, d)
				}
				spec, example, found := strings.Cut(d, "For these inputs the finished program prints:\n")
				if !found || example != strings.TrimRight(tc.output, "\n") || !strings.Contains(spec, "takes") {
					t.Errorf("%s: the output is not a check after the specification:\n%s", task.Difficulty, d)
				}
				for _, w := range tc.want[task.Difficulty] {
					if !strings.Contains(d, w) {
						t.Errorf("%s: description lacks %q:\n%s", task.Difficulty, w, d)
					}
				}
				for _, w := range tc.not[task.Difficulty] {
					if strings.Contains(d, w) {
						t.Errorf("%s: description says %q:\n%s", task.Difficulty, w, d)
					}
				}
			}
			for level := range tc.want {
				if !got[level] {
					t.Errorf("no %s task", level)
				}
			}
		})
	}
}

// TestMethodTargetsAreFoundOnValuesOnly: a method target is the call of
// that name on a value, in a chain or not; a same-named function of an
// imported package is not it.
func TestMethodTargetsAreFoundOnValuesOnly(t *testing.T) {
	for _, tc := range []struct {
		name, program, mask string
		tg                  Target
	}{
		{"a package function with the method's name comes first",
			"package main\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n\n\t\"example.com/shapes\"\n)\n\nfunc main() {\n\tvar s shapes.Stack[int]\n\tn := strings.Count(\"aa\", \"a\")\n\tm := shapes.Len(nil)\n\ts.Push(n + m)\n\tfmt.Println(s.Len())\n}\n",
			"fmt.Println(s.Len())", Target{Package: "example.com/shapes", Receiver: "Stack", Name: "Len"}},
		{"a method in the middle of a chain",
			"package main\n\nimport (\n\t\"os\"\n\n\t\"github.com/rs/zerolog\"\n)\n\nfunc main() {\n\tlogger := zerolog.New(os.Stdout).With().Str(\"k\", \"v\").Logger()\n\tlogger.Info().Strs(\"tags\", []string{\"a\"}).Msg(\"m\")\n}\n",
			"logger.Info().Strs(\"tags\", []string{\"a\"}).Msg(\"m\")", Target{Package: "github.com/rs/zerolog", Receiver: "Event", Name: "Strs"}},
		{"a function target is only its package's",
			"package main\n\nimport (\n\t\"fmt\"\n\t\"slices\"\n\n\t\"github.com/samber/lo\"\n)\n\nfunc main() {\n\txs := []int{1, 2, 3}\n\tfor range slices.Chunk(xs, 2) {\n\t}\n\tfmt.Println(lo.Chunk(xs, 2))\n}\n",
			"fmt.Println(lo.Chunk(xs, 2))", Target{Package: "github.com/samber/lo", Name: "Chunk"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tasks, _, err := TasksFromExample(goapi.Example{Name: "Example", Program: tc.program}, tc.tg)
			if err != nil {
				t.Fatal(err)
			}
			if tasks[0].Mask != tc.mask {
				t.Errorf("easy mask %q, want %q", tasks[0].Mask, tc.mask)
			}
		})
	}
}

// TestProgramsThatWaitOnTheClockMakeNoTask: an example or a scenario
// that sleeps or waits on a timer or ticker (under any import name of
// time) prints what the machine's speed decides, so it makes no task;
// reading the clock alone is fine.
func TestProgramsThatWaitOnTheClockMakeNoTask(t *testing.T) {
	tg := Target{ID: "example.com/shapes.NewThrottle", Package: "example.com/shapes", Name: "NewThrottle"}
	program := func(timeImport, body string) string {
		return "package main\n\nimport (\n\t\"fmt\"\n\t" + timeImport + "\n\n\t\"example.com/shapes\"\n)\n\nfunc main() {\n\tf := shapes.NewThrottle(3)\n\t// <MASK>\n\tn := f()\n\t// </MASK>\n" + body + "\tfmt.Println(n)\n}\n"
	}
	for _, tc := range []struct {
		name, timeImport, body, wait string
	}{
		{"sleep", `"time"`, "\ttime.Sleep(30 * time.Millisecond)\n", "time.Sleep"},
		{"timer channel", `"time"`, "\t<-time.After(time.Millisecond)\n", "time.After"},
		{"ticker under another name", `clock "time"`, "\ttk := clock.NewTicker(clock.Second)\n\ttk.Stop()\n", "clock.NewTicker"},
		{"AfterFunc", `"time"`, "\ttime.AfterFunc(time.Second, func() {})\n", "time.AfterFunc"},
		{"reads the clock only", `"time"`, "\t_ = time.Now().Add(time.Hour)\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := program(tc.timeImport, tc.body)
			_, _, err := TasksFromExample(goapi.Example{Name: "ExampleNewThrottle", Program: src, Output: "1\n", HasOutput: true}, tg)
			_, serr := TaskFromScenario(src, Easy, tg)
			for _, e := range []error{err, serr} {
				switch {
				case tc.wait == "" && e != nil && strings.Contains(e.Error(), "clock"):
					t.Errorf("a program that only reads the clock was refused: %v", e)
				case tc.wait != "" && (e == nil || !strings.Contains(e.Error(), "waits on the clock ("+tc.wait+")")):
					t.Errorf("want refused for waiting on the clock (%s), got %v", tc.wait, e)
				}
			}
		})
	}
}
