package cells

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/cespare/xxhash/v2"
)

//go:embed templates/*.tmpl
var embedded embed.FS

// embeddedDir is where the embedded templates live in the repository, as
// errors name them.
const embeddedDir = "novelapibench/cells/templates"

// Task is what the task templates see of a task: what the solver is told,
// never the target's name (the description does not name it either).
type Task struct {
	Library     string
	Module      string // the target's module path
	Version     string
	Difficulty  string // easy, medium, hard
	Description string
	Context     string // the program with the span to write marked <MASK>
	// Language is the task's ecosystem: "go" (or "") or "python"; the
	// embedded system and task templates speak of that language.
	Language string
}

// Python reports whether the task is a Python library's.
func (t Task) Python() bool { return t.Language == "python" }

// Fence is the language of the task's program fence: "python" or "go".
func (t Task) Fence() string {
	if t.Python() {
		return "python"
	}
	return "go"
}

// Bundle is what the part templates see of the target's knowledge bundle.
// The embedded templates render a Python bundle (Language "python") as
// Python: code fenced as python, "module" for package, parameters as S.Text
// of runners/pyapi writes them (*args, **kwargs, "= default").
type Bundle struct {
	// Language is the bundle's ecosystem: "go" (or "") or "python".
	Language string
	// S_name
	Qualified  string // shapes.Clamp, shapes.Stack.Push; pyshapes.Point.dist
	Kind       string // func, method, type, ...
	ImportPath string
	Module     string
	Version    string
	// S
	Signature  string
	TypeParams string
	Params     []Param
	Results    []Param
	// E: the valid examples SelectExamples chooses, never the one the
	// task was cut from (that example is the task's answer).
	Examples []Example
	// M_prose
	Prose string
	// M_code: the source with its helpers.
	Code string
}

// Python reports whether the bundle is a Python library's.
func (b Bundle) Python() bool { return b.Language == "python" }

// Fence is the language of the bundle's code fences: "python" or "go".
func (b Bundle) Fence() string {
	if b.Python() {
		return "python"
	}
	return "go"
}

// Param is a parameter or result in S. Kind, Default and HasDefault are
// Python's (bundle.Param).
type Param struct {
	Name       string
	Type       string
	Variadic   bool
	Doc        string
	Kind       string // var_keyword for **kwargs, ...
	Default    string
	HasDefault bool
}

// Example is one E entry.
type Example struct {
	Name string
	// Kind is where it comes from (the bundle's kinds): example,
	// readme, other_example, test, benchmark; "" is example.
	Kind   string
	Code   string // the standalone program
	Output string // what it prints
}

// Prompt is what the system and task templates see.
type Prompt struct {
	Cell string
	Task Task
	// Knowledge is the cell's parts rendered in order and separated by
	// blank lines; "" for baseline.
	Knowledge string
}

// Messages are a rendered prompt.
type Messages struct {
	System string
	User   string
}

// files are the template file names, the embedded set.
func files() []string {
	out := []string{SystemFile, TaskFile}
	for _, p := range []Part{SName, S, E, MProse, MCode} {
		out = append(out, p.File())
	}
	return out
}

// ReadDir reads the templates in dir that override the embedded ones, by
// file name: every *.tmpl file there must be one of the embedded names
// (system.tmpl, task.tmpl, S_name.tmpl, S.tmpl, E.tmpl, M_prose.tmpl,
// M_code.tmpl); other files are ignored. The result maps each name to its
// path and content, for New.
func ReadDir(dir string) (map[string]Source, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	known := files()
	out := map[string]Source{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".tmpl") {
			continue
		}
		if !contains(known, name) {
			msg := fmt.Sprintf("template %s: no template is named %q; the templates are %s.", filepath.Join(dir, name), name, strings.Join(quote(known), ", "))
			if s := suggest(name, known); s != "" {
				msg += fmt.Sprintf(" Did you mean %q?", s)
			}
			return nil, fmt.Errorf("%s", msg)
		}
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("templates: %w", err)
		}
		out[name] = Source{Path: path, Data: b}
	}
	return out, nil
}

// Source is one template file's content and the path errors name it by.
type Source struct {
	Path string
	Data []byte
}

// Prompts renders one cell's prompts. It holds the bytes of every template
// it uses, read once (New): rendering never reads a file. Safe for
// concurrent use.
type Prompts struct {
	cell   Cell
	src    map[string]Source
	parsed map[string]*template.Template
}

// New parses the templates cell uses (from overrides by file name, else the
// embedded ones) and checks them by executing each against a zero and a
// filled value of what it receives: a template that names a field that
// does not exist fails here, with its file, line and column.
func New(cell Cell, overrides map[string]Source) (*Prompts, error) {
	p := &Prompts{cell: cell, src: map[string]Source{}, parsed: map[string]*template.Template{}}
	for _, name := range cell.Files() {
		s, ok := overrides[name]
		if !ok {
			b, err := embedded.ReadFile("templates/" + name)
			if err != nil {
				return nil, fmt.Errorf("template %s: %w", name, err)
			}
			s = Source{Path: embeddedDir + "/" + name, Data: b}
		}
		t, err := template.New(s.Path).Option("missingkey=error").Parse(string(s.Data))
		if err != nil {
			return nil, err
		}
		p.src[name], p.parsed[name] = s, t
	}
	for _, name := range cell.Files() {
		var probes []any
		switch name {
		case SystemFile, TaskFile:
			py := probePrompt
			py.Task.Language = "python"
			probes = []any{Prompt{}, probePrompt, py}
		default:
			probes = []any{Bundle{}, probeBundle}
		}
		if name != SystemFile && name != TaskFile {
			probes = append(probes, probePython)
		}
		for _, v := range probes {
			if err := p.parsed[name].Execute(&bytes.Buffer{}, v); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// The filled values templates are checked against: every field set, every
// list with an entry, so that the branches a zero value skips run too.
var (
	probePrompt = Prompt{Cell: "x", Knowledge: "x", Task: Task{Library: "x", Module: "x", Version: "x", Difficulty: "x", Description: "x", Context: "x"}}
	probeParam  = Param{Name: "x", Type: "x", Variadic: true, Doc: "x", Kind: "x", Default: "x", HasDefault: true}
	probeBundle = Bundle{Language: "x", Qualified: "x", Kind: "x", ImportPath: "x", Module: "x", Version: "x", Signature: "x", TypeParams: "x",
		Params: []Param{probeParam}, Results: []Param{probeParam}, Examples: []Example{{Name: "x", Kind: "x", Code: "x", Output: "x"}}, Prose: "x", Code: "x"}
	probePython = func() Bundle {
		b := probeBundle
		b.Language = "python"
		kw := probeParam
		kw.Variadic, kw.Kind = false, "var_keyword"
		b.Params = []Param{probeParam, kw}
		return b
	}()
)

// Cell is the cell the prompts render.
func (p *Prompts) Cell() Cell { return p.cell }

// Digest identifies the templates the cell uses: a hash of each file's name
// and content, so that it changes exactly when one of them does.
func (p *Prompts) Digest() string {
	names := make([]string, 0, len(p.src))
	for n := range p.src {
		names = append(names, n)
	}
	sort.Strings(names)
	h := xxhash.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(p.src[n].Data))
		h.Write(p.src[n].Data)
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// Render renders the messages of one task with its API's bundle (ignored by
// baseline): the oracle prepend.
func (p *Prompts) Render(t Task, b Bundle) (Messages, error) {
	k, err := p.Knowledge(b)
	if err != nil {
		return Messages{}, err
	}
	return p.RenderKnowledge(t, k)
}

// Knowledge renders the cell's parts of a bundle, in order, separated by
// blank lines: what Render prepends, and what a retriever's pool holds of
// each bundle. It is "" for baseline.
func (p *Prompts) Knowledge(b Bundle) (string, error) {
	var parts []string
	for _, part := range p.cell.Parts {
		s, err := p.exec(part.File(), b)
		if err != nil {
			return "", err
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "\n\n"), nil
}

// RenderKnowledge renders the messages of one task with the given
// knowledge in place of its bundle's (a retriever's chunks, in place of the
// oracle prepend).
func (p *Prompts) RenderKnowledge(t Task, knowledge string) (Messages, error) {
	data := Prompt{Cell: p.cell.Name, Task: t, Knowledge: knowledge}
	sys, err := p.exec(SystemFile, data)
	if err != nil {
		return Messages{}, err
	}
	user, err := p.exec(TaskFile, data)
	if err != nil {
		return Messages{}, err
	}
	return Messages{System: sys, User: user}, nil
}

func (p *Prompts) exec(name string, data any) (string, error) {
	var buf bytes.Buffer
	if err := p.parsed[name].Execute(&buf, data); err != nil {
		return "", err
	}
	return strings.TrimSpace(buf.String()), nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
