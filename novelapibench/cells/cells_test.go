package cells_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/novelapibench/cells"
)

var task = cells.Task{Library: "shapes", Module: "example.com/shapes", Version: "v1.1.0", Difficulty: "easy",
	Description: "Complete the marked statement of main so that it clamps v.", Context: "package main\n\nfunc main() {\n\t<MASK>\n}\n"}

// bundle has a distinct marker in every part, so a prompt shows which
// parts it holds.
var bundle = cells.Bundle{
	Qualified: "shapes.Clamp", Kind: "func", ImportPath: "example.com/shapes", Module: "example.com/shapes", Version: "v1.1.0",
	Signature: "func Clamp(v, lo, hi int) int",
	Params:    []cells.Param{{Name: "v", Type: "int", Doc: "PARAMDOC"}, {Name: "lo", Type: "int"}, {Name: "hi", Type: "int"}},
	Results:   []cells.Param{{Type: "int"}},
	Examples:  []cells.Example{{Name: "ExampleClamp_other", Code: "EXAMPLECODE", Output: "EXAMPLEOUTPUT"}},
	Prose:     "PROSE: Clamp returns v limited to [lo, hi].",
	Code:      "SOURCECODE",
}

// markers: the text each part, and only it, puts in a prompt.
var markers = map[cells.Part][]string{
	cells.SName:  {"`shapes.Clamp`"},
	cells.S:      {"func Clamp(v, lo, hi int) int", "PARAMDOC"},
	cells.E:      {"EXAMPLECODE", "EXAMPLEOUTPUT"},
	cells.MProse: {"PROSE:"},
	cells.MCode:  {"SOURCECODE"},
}

func TestCellsRenderExactlyTheirParts(t *testing.T) {
	want := map[string][]cells.Part{
		"baseline":         nil,
		"S_name":           {cells.SName},
		"S":                {cells.S},
		"E":                {cells.E},
		"M_prose":          {cells.MProse},
		"M_code":           {cells.MCode},
		"S+M_prose":        {cells.S, cells.MProse},
		"S+E":              {cells.S, cells.E},
		"S+M_code":         {cells.S, cells.MCode},
		"S+M_prose+M_code": {cells.S, cells.MProse, cells.MCode},
		"S+E+M_code":       {cells.S, cells.E, cells.MCode},
		"Full":             {cells.S, cells.E, cells.MProse, cells.MCode},
	}
	if len(cells.Names()) != len(want) {
		t.Fatalf("cells %v, want the paper's %d", cells.Names(), len(want))
	}
	for _, name := range cells.Names() {
		t.Run(name, func(t *testing.T) {
			c, err := cells.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			p, err := cells.New(c, nil)
			if err != nil {
				t.Fatal(err)
			}
			m, err := p.Render(task, bundle)
			if err != nil {
				t.Fatal(err)
			}
			if m.System == "" || !strings.Contains(m.User, task.Description) || !strings.Contains(m.User, task.Context) || !strings.Contains(m.User, "```go") {
				t.Errorf("the task is not in the prompt:\nsystem: %s\nuser: %s", m.System, m.User)
			}
			included := map[cells.Part]bool{}
			for _, part := range want[name] {
				included[part] = true
			}
			last := -1
			for _, part := range []cells.Part{cells.SName, cells.S, cells.E, cells.MProse, cells.MCode} {
				for _, mark := range markers[part] {
					if got := strings.Contains(m.User, mark); got != included[part] {
						t.Errorf("part %s: prompt contains %q = %v, want %v", part, mark, got, included[part])
					}
				}
			}
			for _, part := range want[name] {
				at := strings.Index(m.User, markers[part][0])
				if at < last {
					t.Errorf("part %s is out of order in\n%s", part, m.User)
				}
				last = at
			}
			if last > strings.Index(m.User, task.Description) {
				t.Errorf("knowledge after the task in\n%s", m.User)
			}
			if (name == "baseline") != !strings.Contains(m.User, "Documentation") {
				t.Errorf("the knowledge header is there iff the cell has parts:\n%s", m.User)
			}
		})
	}
}

func TestLookupUnknownCellListsTheCellsAndSuggests(t *testing.T) {
	for _, c := range []struct{ name, suggestion string }{
		{"s+e", `Did you mean "S+E"?`},
		{"Fulll", `Did you mean "Full"?`},
		{"M_prse", `Did you mean "M_prose"?`},
		{"retrieval", ""},
	} {
		_, err := cells.Lookup(c.name)
		if err == nil {
			t.Fatalf("%s: no error", c.name)
		}
		msg := err.Error()
		if !strings.Contains(msg, fmt.Sprintf("unknown cell %q", c.name)) || !strings.Contains(msg, `"S+E+M_code", "Full"`) {
			t.Errorf("%s: %s", c.name, msg)
		}
		if got := strings.Contains(msg, "Did you mean"); got != (c.suggestion != "") || !strings.Contains(msg, c.suggestion) {
			t.Errorf("%s: %s, want suggestion %q", c.name, msg, c.suggestion)
		}
	}
}

func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A template that names a missing field fails when the prompts are made,
// with its file and line, even where a zero bundle would skip the field.
func TestTemplateNamingAMissingFieldFailsWithFileAndLine(t *testing.T) {
	cases := []struct {
		cell, file, text, want string
	}{
		{"S", "S.tmpl", "## Signature\n{{.Signatur}}\n", "S.tmpl:2:2: executing"},
		{"E", "E.tmpl", "## Examples\n\n{{range .Examples}}{{.Code}} {{.Outptu}}{{end}}\n", "E.tmpl:3:"},
		{"baseline", "task.tmpl", "{{.Task.Description}}\n{{if .Knowledge}}{{.Task.APIID}}{{end}}", "task.tmpl:2:"},
		{"Full", "M_code.tmpl", "{{.Code}\n", "M_code.tmpl:1: bad character"}, // a parse error
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			dir := writeDir(t, map[string]string{c.file: c.text})
			src, err := cells.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			cell, _ := cells.Lookup(c.cell)
			_, err = cells.New(cell, src)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, c.file)) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one naming %s and %q", err, filepath.Join(dir, c.file), c.want)
			}
		})
	}
	// The same templates are fine for a cell that does not use them.
	dir := writeDir(t, map[string]string{"S.tmpl": "{{.Nope}}"})
	src, err := cells.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := cells.Lookup("E")
	if _, err := cells.New(e, src); err != nil {
		t.Errorf("cell E fails on S.tmpl it does not use: %v", err)
	}
}

func TestReadDirRejectsUnknownTemplateNames(t *testing.T) {
	dir := writeDir(t, map[string]string{"S_nmae.tmpl": "x", "README.md": "ignored"})
	_, err := cells.ReadDir(dir)
	if err == nil || !strings.Contains(err.Error(), `no template is named "S_nmae.tmpl"`) || !strings.Contains(err.Error(), `Did you mean "S_name.tmpl"?`) {
		t.Errorf("error %v", err)
	}
}

// The digest covers exactly the templates a cell uses: overriding one
// changes the digest of the cells that use it and of no other.
func TestDigestChangesExactlyForTheCellsUsingATemplate(t *testing.T) {
	digests := func(src map[string]cells.Source) map[string]string {
		out := map[string]string{}
		for _, name := range cells.Names() {
			c, _ := cells.Lookup(name)
			p, err := cells.New(c, src)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = p.Digest()
		}
		return out
	}
	base := digests(nil)
	seen := map[string]bool{}
	for _, d := range base {
		if seen[d] {
			t.Errorf("two cells share a digest: %v", base)
		}
		seen[d] = true
	}
	dir := writeDir(t, map[string]string{"E.tmpl": "## Examples, edited\n{{range .Examples}}{{.Code}}{{end}}"})
	src, err := cells.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range digests(src) {
		c, _ := cells.Lookup(name)
		usesE := strings.Contains(strings.Join(c.Files(), " "), "E.tmpl")
		if (d != base[name]) != usesE {
			t.Errorf("cell %s: digest changed = %v, uses E.tmpl = %v", name, d != base[name], usesE)
		}
	}
	// Overriding with the embedded bytes themselves changes nothing.
	b, err := os.ReadFile("templates/S.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	same, err := cells.ReadDir(writeDir(t, map[string]string{"S.tmpl": string(b)}))
	if err != nil {
		t.Fatal(err)
	}
	if got := digests(same); fmt.Sprint(got) != fmt.Sprint(base) {
		t.Errorf("the same bytes from a directory changed digests:\n%v\n%v", got, base)
	}
}

func ExampleLookup() {
	c, _ := cells.Lookup("S+E")
	fmt.Println(c.Parts, c.Files())
	// Output: [S E] [system.tmpl task.tmpl S.tmpl E.tmpl]
}

// TestPartsRenderGoAndPythonBundlesInTheirLanguage: a Go bundle renders as
// before (go fences, "package", "...T" variadics); a Python bundle
// (Language "python") renders with python fences, "module", and its
// parameters as runners/pyapi's S.Text writes them.
func TestPartsRenderGoAndPythonBundlesInTheirLanguage(t *testing.T) {
	c, err := cells.Lookup("Full")
	if err != nil {
		t.Fatal(err)
	}
	p, err := cells.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	goBundle := cells.Bundle{Qualified: "shapes.Sum", ImportPath: "example.com/shapes", Signature: "func Sum(xs ...int) int",
		Params: []cells.Param{{Name: "xs", Type: "int", Variadic: true, Doc: "the numbers"}}, Results: []cells.Param{{Type: "int"}},
		Examples: []cells.Example{{Name: "ExampleSum", Code: "package main", Output: "6\n"}}, Prose: "Sum adds.", Code: "func Sum(xs ...int) int { return 0 }"}
	pyBundle := cells.Bundle{Language: "python", Qualified: "pycalc.scale", ImportPath: "pycalc",
		Signature: "def scale(xs, *args, k: int = 2, clip=False, **opts) -> list",
		Params: []cells.Param{
			{Name: "xs", Type: "list", Doc: "The numbers.", Kind: "positional_or_keyword"},
			{Name: "args", Variadic: true, Kind: "var_positional"},
			{Name: "k", Type: "int", Kind: "keyword_only", Default: "2", HasDefault: true},
			{Name: "clip", Kind: "keyword_only", Default: "False", HasDefault: true},
			{Name: "opts", Kind: "var_keyword"},
		},
		Results:  []cells.Param{{Type: "list", Doc: "The scaled numbers."}},
		Examples: []cells.Example{{Name: "pycalc._core:scale", Code: "scale([1, 2])", Output: "[2, 4]"}},
		Prose:    "Multiply.", Code: "def scale(xs):\n    return xs"}
	for _, c := range []struct {
		name string
		b    cells.Bundle
		want string
	}{
		{"go", goBundle, "## Signature (S)\nPackage \"example.com/shapes\":\n\n```go\nfunc Sum(xs ...int) int\n```\n\nParameters:\n- xs ...int: the numbers\n\nResults:\n- int\n\n" +
			"## Examples (E)\n\nExampleSum:\n```go\npackage main\n```\nOutput:\n```\n6\n\n```\n\n## Documentation (M_prose)\nSum adds.\n\n## Source (M_code)\n```go\nfunc Sum(xs ...int) int { return 0 }\n```"},
		{"python", pyBundle, "## Signature (S)\nModule \"pycalc\":\n\n```python\ndef scale(xs, *args, k: int = 2, clip=False, **opts) -> list\n```\n\n" +
			"Parameters:\n- xs list: The numbers.\n- *args\n- k int = 2\n- clip = False\n- **opts\n\nResults:\n- list: The scaled numbers.\n\n" +
			"## Examples (E)\n\npycalc._core:scale:\n```python\nscale([1, 2])\n```\nOutput:\n```\n[2, 4]\n```\n\n## Documentation (M_prose)\nMultiply.\n\n## Source (M_code)\n```python\ndef scale(xs):\n    return xs\n```"},
	} {
		got, err := p.Knowledge(c.b)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s bundle:\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
	sn, err := cells.Lookup("S_name")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := cells.New(sn, nil)
	if err != nil {
		t.Fatal(err)
	}
	for b, want := range map[*cells.Bundle]string{&goBundle: "`shapes.Sum` (package \"example.com/shapes\")", &pyBundle: "`pycalc.scale` (module \"pycalc\")"} {
		if got, err := ps.Knowledge(*b); err != nil || !strings.HasSuffix(got, want) {
			t.Errorf("S_name: %q (%v), want it to end with %q", got, err, want)
		}
	}
}

// TestTaskPromptsSpeakTheTasksLanguage: a Go task's system and task
// messages are the Go ones (byte for byte what they were before Python
// tasks, so Go calls stay cached), a Python task's speak of Python, fence
// its program as python and ask for the function's body.
func TestTaskPromptsSpeakTheTasksLanguage(t *testing.T) {
	c, err := cells.Lookup("baseline")
	if err != nil {
		t.Fatal(err)
	}
	p, err := cells.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	pyTask := cells.Task{Language: "python", Library: "stats", Module: "py-stats", Version: "2.0.0", Difficulty: "easy",
		Description: "Scale the list.", Context: "def solve(xs):\n    # <MASK>: your code here (import what you use)"}
	for _, c := range []struct {
		name         string
		task         cells.Task
		system, user string
	}{
		{"go", task, "You are an expert Go programmer. You complete Go programs that use third-party libraries, writing only the code you are asked for.",
			"Task (easy): Complete the marked statement of main so that it clamps v.\n\nThe program, with the part to write marked <MASK>:\n\n```go\npackage main\n\nfunc main() {\n\t<MASK>\n}\n\n```\n\n" +
				"Write the code that replaces <MASK>. Start with the import declarations it needs that the program does not already import (one per line, such as import \"strings\"), then the statements. Answer with only that code, in one ```go fenced block."},
		{"python", pyTask, "You are an expert Python programmer. You complete Python programs that use third-party libraries, writing only the code you are asked for.",
			"Task (easy): Scale the list.\n\nThe program, with the part to write marked <MASK>:\n\n```python\ndef solve(xs):\n    # <MASK>: your code here (import what you use)\n```\n\n" +
				"Write the code that replaces <MASK>: the body of the function. Start with the import statements it needs that the program does not already import (one per line, such as from collections import Counter), then the statements. Answer with only that code, in one ```python fenced block."},
	} {
		m, err := p.Render(c.task, cells.Bundle{})
		if err != nil {
			t.Fatal(err)
		}
		if m.System != c.system || m.User != c.user {
			t.Errorf("%s task: system %q\nuser %q\nwant system %q\nuser %q", c.name, m.System, m.User, c.system, c.user)
		}
	}
}
