package trainingdata_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/bundle"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/nodes/trainingdata"
	"github.com/parquet-go/parquet-go"

	_ "github.com/lacuna-dev/lacuna/nodes/generic"
)

// keptRow is a c1 row as far as the split reads it: a task with a
// verdict.
type keptRow struct {
	tasks.Row
	Keep   bool   `parquet:"keep"`
	Reason string `parquet:"reason"`
}

// api is one API of the fixture libraries.
type api struct {
	lib, name, prose string
	python           bool
}

// libraries are the fixture's: alpha (6 APIs) and beta (4) in Go, gamma
// (2) in Python. Each API has an easy, a medium and a hard task.
var libraries = []api{
	{"alpha", "Chunk", "Chunk returns an array of elements split into groups the length of size. If the slice cannot be split evenly, the final chunk holds the rest.", false},
	{"alpha", "Flatten", "Flatten returns an array a single level deep.", false},
	{"alpha", "Uniq", "Uniq returns a duplicate-free version of an array, in which only the first occurrence of each element is kept.", false},
	{"alpha", "Reduce", "Reduce reduces a collection to a value which is the accumulated result of running each element through an accumulator.", false},
	{"alpha", "Push", "Push pushes v onto the stack.", false},
	{"alpha", "Apply", "Apply applies f to every element.", false},
	{"beta", "Clamp", "Clamp clamps a number within the inclusive lower and upper bounds.", false},
	{"beta", "Sum", "Sum sums the values in a collection.", false},
	{"beta", "Mean", "", false}, // no documentation: the subject comes from a task
	{"beta", "Max", "Max searches the maximum value of a collection.", false},
	{"gamma", "dist", "Return the distance between two points.\n\nBoth points are (x, y) tuples.", true},
	{"gamma", "area", "Compute the area of a polygon.", true},
}

func (a api) module() string {
	if a.python {
		return a.lib
	}
	return "example.com/" + a.lib
}

// importPath is the package or module the API is imported from.
func (a api) importPath() string {
	if a.python {
		return a.lib + ".geometry"
	}
	return a.module()
}
func (a api) id() string {
	if a.python {
		return a.lib + ".geometry." + a.name
	}
	return a.module() + "." + a.name
}
func (a api) qualified() string {
	if a.python {
		return a.lib + ".geometry." + a.name
	}
	return a.lib + "." + a.name
}
func (a api) ecosystem() string {
	if a.python {
		return "python"
	}
	return "go"
}

var levels = []string{"easy", "medium", "hard"}

// task is the fixture task of API a at level d.
func (a api) task(d string) tasks.Row {
	ctx := "package main\n\nimport \"fmt\"\n\nfunc main() {\n\txs := []int{1, 2, 3}\n\t<MASK>\n\tfmt.Println(out)\n}\n"
	mask := fmt.Sprintf("import %q\n\nout := %s(xs, %d)", a.module(), a.qualified(), len(d))
	if a.python {
		ctx = "def solve(xs):\n    # <MASK>: your code here (import what you use)\n"
		mask = fmt.Sprintf("from %s.geometry import %s\nreturn %s(xs, %d)", a.lib, a.name, a.name, len(d))
	}
	return tasks.Row{
		TaskID: fmt.Sprintf("%s-%s-%s", a.lib, strings.ToLower(a.name), d), Library: a.lib, Module: a.module(), Version: "v1.1.0",
		APIID: a.id(), ImportPath: a.importPath(), Qualified: a.qualified(), PkgName: a.lib, Difficulty: d,
		Description: fmt.Sprintf("Transform the numbers of the list as library %s allows (%s level) and print the result.", a.lib, d),
		Context:     ctx, Mask: mask, Reference: "package main // reference", Harness: "// harness", Generator: "examples",
		Example: "Example" + a.name, Ecosystem: a.ecosystem(),
	}
}

// bundle is the fixture bundle of API a: two valid examples (one the
// tasks were cut from) and an invalid one; alpha.Flatten's also holds
// ExampleChunk, the example alpha.Chunk's tasks were cut from, as an
// Example of another API that calls it.
func (a api) bundle() bundle.Row {
	ex := func(name, code string, valid bool) bundle.Example {
		return bundle.Example{Name: name, Kind: "example", Code: code, Output: "[1 2]\n", Valid: valid, Status: "passed"}
	}
	sig := fmt.Sprintf("func %s(xs []int, n int) []int", a.name)
	if a.python {
		sig = fmt.Sprintf("def %s(xs: list, n: int) -> float", a.name)
	}
	b := bundle.Row{
		Library: a.lib, Ecosystem: a.ecosystem(), Module: a.module(), Version: "v1.1.0", APIID: a.id(), ImportPath: a.importPath(),
		Qualified: a.qualified(), Kind: "func", Signature: sig,
		Params:  []bundle.Param{{Name: "xs", Type: "[]int", Doc: "the input"}, {Name: "n", Type: "int"}},
		Results: []bundle.Param{{Type: "[]int"}},
		Examples: []bundle.Example{
			ex("Example"+a.name, "// the task's source: "+a.name+"\nfmt.Println("+a.qualified()+"(xs, 2))", true),
			ex("Example"+a.name+"_other", "// another use of "+a.name, true),
			ex("Example"+a.name+"_broken", "// does not compile", false),
		},
		ValidExamples: 2, MProse: a.prose, MProseTier: "doc", MCode: sig + " { /* source of " + a.name + " */ }",
		MCodeHelpers: []string{}, MCodeOmitted: []string{},
	}
	if a.qualified() == "alpha.Flatten" {
		chunk := libraries[0].bundle().Examples[0]
		chunk.Kind = "other_example"
		b.Examples = append(b.Examples, chunk)
	}
	return b
}

// fixture writes the tasks of apis (tasks.parquet, every third task of
// alpha dropped by "C1") and their bundles (bundles_LIB.parquet, one file
// per library) into dir, and returns the pipeline head that imports them:
// node.import.tasks and node.import.bundles_LIB.
func fixture(t *testing.T, dir string, apis []api) (head string, kept []tasks.Row) {
	t.Helper()
	var rows []keptRow
	byLib := map[string][]bundle.Row{}
	var libs []string
	for _, a := range apis {
		for i, d := range levels {
			row := keptRow{Row: a.task(d), Keep: true}
			if a.lib == "alpha" && i == 2 && a.name == "Apply" {
				row.Keep, row.Reason = false, "C1: the reference fails its harness"
			} else {
				kept = append(kept, row.Row)
			}
			rows = append(rows, row)
		}
		if _, ok := byLib[a.lib]; !ok {
			libs = append(libs, a.lib)
		}
		byLib[a.lib] = append(byLib[a.lib], a.bundle())
	}
	if err := parquet.WriteFile(filepath.Join(dir, "tasks.parquet"), rows); err != nil {
		t.Fatal(err)
	}
	head = "node \"import\" \"tasks\" { path = \"tasks.parquet\" }\n"
	for _, lib := range libs {
		if err := parquet.WriteFile(filepath.Join(dir, "bundles_"+lib+".parquet"), byLib[lib]); err != nil {
			t.Fatal(err)
		}
		head += fmt.Sprintf("node \"import\" \"bundles_%s\" { path = \"bundles_%s.parquet\" }\n", lib, lib)
	}
	return head, kept
}

// allBundles is the bundles attribute listing every fixture library.
const allBundles = "[node.import.bundles_alpha, node.import.bundles_beta, node.import.bundles_gamma]"

// bySet groups a split's rows by set: task ids in row order.
func bySet(rows []trainingdata.SplitRow) map[string][]string {
	out := map[string][]string{}
	for _, r := range rows {
		out[r.Split] = append(out[r.Split], r.TaskID)
	}
	return out
}

// configError expands src (after the fixture's import nodes) and returns
// its diagnostics' text.
func configError(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	head := "node \"import\" \"tasks\" { path = \"tasks.parquet\" }\nnode \"import\" \"bundles\" { path = \"bundles.parquet\" }\nnode \"import\" \"answers\" { path = \"answers.parquet\" }\n"
	_, diags := engine.ExpandSource(filepath.Join(dir, "p.hcl"), []byte(src+"\n"+head), dir, engine.Options{})
	return diags.Error()
}

// runErr runs src in dir and returns the error of node addr ("" when it
// succeeded).
func runErr(t *testing.T, dir, src, addr string) string {
	t.Helper()
	res := nodetest.RunErr(t, dir, src)
	n, ok := res.Nodes[addr]
	if !ok {
		t.Fatalf("no node %s in the run", addr)
	}
	if n.Err == nil {
		return ""
	}
	return n.Err.Error()
}
