package tasks_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/filters"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// scenario is a hand-written answer's task: main's body (tab-indented)
// goes into a program importing fmt and the fixture's package, after
// decls.
func scenario(decls, body string) string {
	p := "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/shapes\"\n)\n\n"
	if decls != "" {
		p += decls + "\n\n"
	}
	return p + "func main() {\n" + body + "}\n"
}

type scripted struct{ Difficulty, Description, Program string }

func answerJSON(ts ...scripted) string {
	var out struct {
		Tasks []map[string]string `json:"tasks"`
	}
	for _, t := range ts {
		out.Tasks = append(out.Tasks, map[string]string{"difficulty": t.Difficulty, "description": t.Description, "program": t.Program})
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return string(b)
}

const tile = "type tile struct{ w, h float64 }\n\nfunc (t tile) Area() float64 { return t.w * t.h }"

// graded are the scripted model's graded answers, by the API the prompt
// is about. Among them: Clamp's hard task names the API in its
// description, Stack.Push's hard program does not parse, and Stack.Len's
// medium does not compile and its hard panics (the fallback).
var graded = map[string]string{
	"shapes.Apply": answerJSON(
		scripted{"easy", "Set withTax to the prices with addTax applied to each one, in order, using the library's mapping function.",
			scenario("", "\tprices := []int{3, 7, 12}\n\taddTax := func(p int) int { return p + p/10 + 1 }\n\tvar withTax []int\n\t// <MASK>\n\twithTax = shapes.Apply(prices, addTax)\n\t// </MASK>\n\tfmt.Println(withTax)\n")},
		scripted{"medium", "Compute the length of every word of words into a slice, then set squared to those lengths squared, mapping a function over them with the library.",
			scenario("", "\twords := []string{\"go\", \"spy\", \"harness\"}\n\t// <MASK>\n\tlengths := make([]int, 0, len(words))\n\tfor _, w := range words {\n\t\tlengths = append(lengths, len(w))\n\t}\n\tsquared := shapes.Apply(lengths, func(n int) int { return n * n })\n\t// </MASK>\n\tfmt.Println(squared)\n")},
		scripted{"hard", "Limit every reading to the range 0 to 10 by mapping a function over readings with the library (clamped), then set doubled to clamped multiplied by 2 with the library's scaling function.",
			scenario("", "\treadings := []int{-4, 5, 17, 9}\n\t// <MASK>\n\tclamped := shapes.Apply(readings, func(v int) int { return shapes.Clamp(v, 0, 10) })\n\tdoubled := shapes.Scale(clamped, 2)\n\t// </MASK>\n\tfmt.Println(clamped, doubled)\n")},
	),
	"shapes.Clamp": answerJSON(
		scripted{"easy", "Set level to volume limited to the closed range from 0 to 100.",
			scenario("", "\tvolume := 73\n\tvar level int\n\t// <MASK>\n\tlevel = shapes.Clamp(volume, 0, 100)\n\t// </MASK>\n\tfmt.Println(\"level\", level)\n")},
		scripted{"medium", "Build safe from raw: every value limited to the closed range from 0 to 10, in order.",
			scenario("", "\traw := []int{-5, 3, 42, 8}\n\t// <MASK>\n\tvar safe []int\n\tfor _, v := range raw {\n\t\tsafe = append(safe, shapes.Clamp(v, 0, 10))\n\t}\n\t// </MASK>\n\tfmt.Println(safe)\n")},
		scripted{"hard", "Use shapes.Clamp to bound every area before adding them up.",
			scenario("", "\tsides := []float64{1, 5}\n\t// <MASK>\n\ttotal := 0\n\tfor _, s := range sides {\n\t\ttotal += shapes.Clamp(int(shapes.Area(s, s)), 0, 10)\n\t}\n\t// </MASK>\n\tfmt.Println(total)\n")},
	),
	"shapes.Scale": answerJSON(
		// The example's own call: the task keeps its name (Example).
		scripted{"easy", "Print the numbers 1, 2 and 3, each multiplied by 2, as one slice.",
			scenario("", "\t// <MASK>\n\tfmt.Println(shapes.Scale([]int{1, 2, 3}, 2))\n\t// </MASK>\n")},
		scripted{"medium", "Collect the even numbers of nums into evens, then set tenfold to evens with every element multiplied by 10.",
			scenario("", "\tnums := []int{1, 2, 3, 4, 6}\n\t// <MASK>\n\tvar evens []int\n\tfor _, n := range nums {\n\t\tif n%2 == 0 {\n\t\t\tevens = append(evens, n)\n\t\t}\n\t}\n\ttenfold := shapes.Scale(evens, 10)\n\t// </MASK>\n\tfmt.Println(tenfold)\n")},
		scripted{"hard", "For every side s of sides, compute with the library the area of an s by s+1 rectangle into areas, then set bigger to areas with every element multiplied by 1.5.",
			scenario("", "\tsides := []float64{1, 2, 3}\n\t// <MASK>\n\tvar areas []float64\n\tfor _, s := range sides {\n\t\tareas = append(areas, shapes.Area(s, s+1))\n\t}\n\tbigger := shapes.Scale(areas, 1.5)\n\t// </MASK>\n\tfmt.Println(areas, bigger)\n")},
	),
	"shapes.Stack.Push": answerJSON(
		scripted{"easy", "Put the string \"typed hello\" on top of the stack undo.",
			scenario("", "\tvar undo shapes.Stack[string]\n\t// <MASK>\n\tundo.Push(\"typed hello\")\n\t// </MASK>\n\tv, ok := undo.Pop()\n\tfmt.Println(v, ok, undo.Len())\n")},
		scripted{"medium", "Put ten times every even reading of readings on the stack s, in order.",
			scenario("", "\tvar s shapes.Stack[int]\n\treadings := []int{4, 7, 8, 15}\n\t// <MASK>\n\tfor _, n := range readings {\n\t\tif n%2 == 0 {\n\t\t\ts.Push(n * 10)\n\t\t}\n\t}\n\t// </MASK>\n\ttop, _ := s.Pop()\n\tfmt.Println(top, s.Len())\n")},
		scripted{"hard", "Fill a stack with the words, then take them off again in reverse order.",
			strings.Replace(scenario("", "\twords := []string{\"a\", \"b\"}\n\tvar s shapes.Stack[string]\n\t// <MASK>\n\tfor _, w := range words {\n\t\ts.Push(w)\n\t}\n\t// </MASK>\n\tfmt.Println(s.Len())\n"), "func main() {", "func main() {{", 1)},
	),
	"shapes.Stack.Len": answerJSON(
		scripted{"easy", "Set n to how many values the stack s holds.",
			scenario("", "\tvar s shapes.Stack[int]\n\ts.Push(1)\n\ts.Push(2)\n\tvar n int\n\t// <MASK>\n\tn = s.Len()\n\t// </MASK>\n\tfmt.Println(n)\n")},
		scripted{"medium", "Make a stack of the numbers 1 to 3 and set n to how many values it holds.",
			scenario("", "\t// <MASK>\n\ts := shapes.NewStack(1, 2, 3)\n\tn := s.Len()\n\t// </MASK>\n\tfmt.Println(n)\n")},
		scripted{"hard", "Push two values on s and print the value at the index the stack's size gives in xs.",
			scenario("", "\tvar s shapes.Stack[int]\n\tvar xs []int\n\t// <MASK>\n\ts.Push(4)\n\ts.Push(5)\n\tfmt.Println(xs[s.Len()])\n\t// </MASK>\n")},
	),
	"shapes.TotalArea": answerJSON(
		scripted{"easy", "Set covered to the sum of the areas of all the shapes in floor.",
			scenario(tile, "\tfloor := []shapes.Shape{tile{2, 3}, tile{1.5, 4}}\n\tvar covered float64\n\t// <MASK>\n\tcovered = shapes.TotalArea(floor...)\n\t// </MASK>\n\tfmt.Println(covered)\n")},
		scripted{"medium", "Make a tile of width w and height 2 for every width of widths, then set total to the sum of their areas.",
			scenario(tile, "\twidths := []float64{1, 2.5, 4}\n\t// <MASK>\n\tvar rooms []shapes.Shape\n\tfor _, w := range widths {\n\t\trooms = append(rooms, tile{w, 2})\n\t}\n\ttotal := shapes.TotalArea(rooms...)\n\t// </MASK>\n\tfmt.Println(total)\n")},
		scripted{"hard", "Make a tile of width w and height 2 for every width of widths, set total to the sum of their areas, and set free to the area of a 10 by 5 rectangle (computed with the library) less total.",
			scenario(tile, "\twidths := []float64{1, 2, 3}\n\t// <MASK>\n\tvar rooms []shapes.Shape\n\tfor _, w := range widths {\n\t\trooms = append(rooms, tile{w, 2})\n\t}\n\ttotal := shapes.TotalArea(rooms...)\n\tfree := shapes.Area(10, 5) - total\n\t// </MASK>\n\tfmt.Println(total, free)\n")},
	),
}

// variants are the easy-variant answers: only Stack.Len's is asked.
var variants = map[string]string{
	"shapes.Stack.Len": answerJSON(
		scripted{"easy", "Set size to how many values the stack jobs holds right now.",
			scenario("", "\tvar jobs shapes.Stack[string]\n\tjobs.Push(\"build\")\n\tjobs.Push(\"test\")\n\tjobs.Push(\"ship\")\n\tvar size int\n\t// <MASK>\n\tsize = jobs.Len()\n\t// </MASK>\n\tfmt.Println(size)\n")},
		scripted{"easy", "Set left to the number of values still on the stack s after one was taken off.",
			scenario("", "\tvar s shapes.Stack[int]\n\tfor i := 0; i < 5; i++ {\n\t\ts.Push(i * i)\n\t}\n\ts.Pop()\n\tvar left int\n\t// <MASK>\n\tleft = s.Len()\n\t// </MASK>\n\tfmt.Println(\"left:\", left)\n")},
		scripted{"easy", "Set empty to whether the stack q holds no values, from its size.",
			scenario("", "\tvar q shapes.Stack[float64]\n\tq.Push(2.5)\n\tvar empty bool\n\t// <MASK>\n\tempty = q.Len() == 0\n\t// </MASK>\n\tfmt.Println(empty)\n")},
	),
}

// generatorServer answers the llm generator's prompts from graded and
// variants, by the API the prompt names.
func generatorServer(t *testing.T) *llmtest.Server {
	srv := llmtest.New(llmtest.Config{Models: []string{"test-model"}, Script: []llmtest.Rule{{Reply: func(q llmtest.Request) string {
		text := q.Text()
		for api := range graded {
			if !strings.Contains(text, "The API: "+api+" (") {
				continue
			}
			if strings.Contains(text, "Write three easy tasks about") {
				if a, ok := variants[api]; ok {
					return a
				}
				t.Errorf("%s: asked for easy variants", api)
				return `{"tasks": []}`
			}
			return graded[api]
		}
		t.Errorf("a prompt about no scripted API:\n%s", text)
		return "?"
	}}}})
	t.Cleanup(srv.Close)
	return srv
}

const bundlesPipeline = nodetest.ShapesHead + `node "surface_diff" "shapes" { versions = node.version_resolve.shapes }
node "bundle" "shapes" { apis = node.surface_diff.shapes }
`

func llmPipeline(url string) string {
	return bundlesPipeline + taskstest.ModelBlock(url) + `
node "tasks" "shapes" {
  bundles   = node.bundle.shapes
  generator = "llm"
  model     = model.coder
}
` + taskstest.C1Node
}

func TestLLMGeneratorMakesGradedTasksAndFallsBackToEasyVariants(t *testing.T) {
	nodetest.OfflineShapes(t)
	srv := generatorServer(t)
	dir := t.TempDir()
	nodetest.Run(t, dir, bundlesPipeline)

	// Before any call: one per bundle (six), none cached.
	if calls := planned(t, dir, llmPipeline(srv.URL())); calls != "6 calls, 0 cached" {
		t.Errorf("plan before the run: %s, want 6 calls, 0 cached", calls)
	}

	run := nodetest.Run(t, dir, llmPipeline(srv.URL()))
	rows := nodetest.Read[tasks.Row](t, run, "node.tasks.shapes")
	made := map[string][]string{}
	count := map[string]int{}
	missing := map[string]string{}
	for _, r := range rows {
		made[r.Qualified] = append(made[r.Qualified], r.Difficulty)
		count[r.Difficulty]++
		missing[r.Qualified] = r.Missing
		target := r.Qualified[strings.LastIndex(r.Qualified, ".")+1:]
		source := ""
		if taskstest.Name(r) == "shapes.Scale easy" {
			source = "ExampleScale"
		}
		switch {
		case r.Generator != "llm" || r.Example != source:
			t.Errorf("%s: generator %q example %q, want %q", taskstest.Name(r), r.Generator, r.Example, source)
		case strings.Contains(r.Description, target) || strings.Contains(r.Context, target):
			t.Errorf("%s: names the target:\n%s\n%s", taskstest.Name(r), r.Description, r.Context)
		case r.Expect == "" || r.Harness == "" || r.ObserveError != "":
			t.Errorf("%s: not observed: %s", taskstest.Name(r), r.ObserveError)
		case !strings.Contains(r.Context, "<MASK>") || strings.Contains(r.Reference, "MASK"):
			t.Errorf("%s: context %q reference %q", taskstest.Name(r), r.Context, r.Reference)
		case !strings.Contains(r.Description, "example.com/shapes") || !strings.Contains(r.Description, "the finished program prints:\n"):
			t.Errorf("%s: description %q", taskstest.Name(r), r.Description)
		}
	}
	want := map[string]string{
		"shapes.Apply":      "easy,hard,medium",
		"shapes.Clamp":      "easy,medium",
		"shapes.Scale":      "easy,hard,medium",
		"shapes.Stack.Len":  "easy,easy,easy",
		"shapes.Stack.Push": "easy,medium",
		"shapes.TotalArea":  "easy,hard,medium",
	}
	for api, w := range want {
		got := made[api]
		sort.Strings(got)
		if strings.Join(got, ",") != w {
			t.Errorf("%s: tasks %v, want %s", api, got, w)
		}
	}
	if len(made) != len(want) {
		t.Errorf("tasks for %d APIs, want %d: %v", len(made), len(want), made)
	}
	if got := fmt.Sprint(count); got != "map[easy:8 hard:3 medium:5]" {
		t.Errorf("tasks by difficulty %s, want easy 8, medium 5, hard 3", got)
	}
	t.Logf("llm generator on the fixture: %v (%d tasks)", count, len(rows))
	// Each dropped task is named, with its reason, on its API's rows.
	for api, wants := range map[string][]string{
		"shapes.Clamp":      {"hard: its description names Clamp"},
		"shapes.Stack.Push": {"hard: malformed program: the scenario does not parse"},
		"shapes.Stack.Len": {"medium: reference does not compile", "hard: reference failed", "panicked",
			"easy: replaced by the easy-variant fallback"},
	} {
		for _, w := range wants {
			if !strings.Contains(missing[api], w) {
				t.Errorf("%s: missing %q lacks %q", api, missing[api], w)
			}
		}
	}
	if missing["shapes.Apply"] != "" {
		t.Errorf("shapes.Apply: missing %q", missing["shapes.Apply"])
	}

	// Seven calls, each made once: six graded, Stack.Len's fallback.
	calls := srv.Calls()
	if len(calls) != 7 {
		t.Errorf("%d distinct calls, want 7", len(calls))
	}
	for _, c := range calls {
		if c.Requests != 1 || c.Request.Temperature == nil || *c.Request.Temperature != 0 || len(c.Request.Schema) == 0 {
			t.Errorf("call %s: %d requests, temperature %v, schema %s", c.ID, c.Requests, c.Request.Temperature, c.Request.Schema)
		}
	}

	// C1 ran on every one of them.
	c1 := nodetest.Read[filters.C1Row](t, run, "node.c1.shapes")
	kept := map[string]int{}
	for _, c := range c1 {
		if c.Keep {
			kept[c.Difficulty]++
		} else {
			t.Logf("c1 drops %s: %s", taskstest.Name(c.Row), c.Reason)
		}
	}
	if len(c1) != len(rows) {
		t.Errorf("c1 saw %d tasks of %d", len(c1), len(rows))
	}
	t.Logf("c1 keeps %v of the llm generator's tasks", kept)

	// A key that changes while the calls do not (ecosystem written out):
	// the plan counts the seven calls, all cached.
	again := strings.Replace(llmPipeline(srv.URL()), `generator = "llm"`, `generator = "llm"`+"\n  ecosystem = \"go\"", 1)
	if calls := planned(t, dir, again); calls != "7 calls, 7 cached" {
		t.Errorf("plan after the run: %s, want 7 calls, 7 cached", calls)
	}
}

// planned is the tasks node's planned calls, as "N calls, M cached".
func planned(t *testing.T, dir, src string) string {
	t.Helper()
	for _, e := range nodetest.Plan(t, dir, src) {
		if e.Node != "node.tasks.shapes" {
			continue
		}
		if e.Status != engine.PlanRun || len(e.Calls) != 1 {
			t.Fatalf("plan entry %+v", e)
		}
		return fmt.Sprintf("%d calls, %d cached", e.Calls[0].Calls, e.Calls[0].Cached)
	}
	t.Fatal("no plan entry for node.tasks.shapes")
	return ""
}

func TestLLMGeneratorConfigErrorsNameTheAttribute(t *testing.T) {
	for _, tc := range []struct{ body, summary string }{
		{`generator = "llm"`, "Generator without a model"},
		{`model = model.m`, "Model without the llm generator"},
		{"generator = \"llm\"\n  ecosystem = \"python\"", "Generator without a model"},
		{`generator = "gpt"`, "Unknown generator"},
	} {
		src := bundlesPipeline + "node \"tasks\" \"x\" {\n  bundles = node.bundle.shapes\n  " + tc.body + "\n}\n"
		_, diags := engine.ExpandSource(filepath.Join(t.TempDir(), "p.hcl"), []byte(src), t.TempDir(), engine.Options{})
		if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.summary) || !strings.Contains(diags.Error(), "p.hcl:") {
			t.Errorf("%s: %v, want %q at a position", tc.body, diags, tc.summary)
		}
	}
}
