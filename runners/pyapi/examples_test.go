package pyapi

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// docsFiles is a package whose docstrings and shipped docs hold doctests
// that pass, fail, raise, do not compile, hang, or crash the interpreter.
var docsFiles = map[string]string{
	"calc/__init__.py": `
"""Calc."""
from calc.core import double, broken_doc, raises, bad_syntax, hangs, crashes, uses_helper, noisy
`,
	"calc/core.py": `
import os

_FACTOR = 2


def double(x):
    """Double x.

    >>> double(2)
    4
    >>> y = double(-1)
    >>> y
    -2
    """
    return x * _FACTOR


def broken_doc(x):
    """Claims the wrong result.

    >>> broken_doc(2)
    5
    """
    return x


def raises(x):
    """Raises where no exception is expected.

    >>> raises(0)
    0
    """
    return 1 / x


def bad_syntax():
    """Not Python.

    >>> def (:
    """


def hangs():
    """Never returns.

    >>> hangs()
    """
    while True:
        pass


def crashes():
    """Kills its interpreter.

    >>> crashes()
    """
    os._exit(3)


def uses_helper(x):
    """Uses a module global without importing it.

    >>> _FACTOR * uses_helper(1)
    2
    """
    return x


def noisy():
    """Prints to the real stdout descriptor as well.

    >>> noisy()
    ok
    """
    os.write(1, b"to fd 1\n")
    print("ok")


def plain():
    """No examples here."""
`,
	"calc/fenced.py":      fencedModule,
	"calc/docs/guide.md":  "# Guide\n\n```python\n>>> from calc import double\n>>> double(21)\n42\n```\n\nNo more.\n",
	"calc/docs/wrong.rst": "Wrong\n=====\n\n>>> from calc import double\n>>> double(1)\n3\n",
	"calc/docs/plain.txt": "no doctests here\n",
}

// fencedModule's docstring carries its examples as Markdown fences, the
// way pydantic's do: with "#> " output, without, another language, a
// block that does not parse, a wrong output, a loop and a with statement,
// and a doctest in a fence.
var fencedModule = strings.ReplaceAll(`"""Fenced examples."""


def scale(xs, k):
    """Scale each item.

    FENCEpython {lint="skip"}
    from calc.fenced import scale

    print(scale([1, 2], 3))
    #> [3, 6]
    FENCE

    No output stated, so none is compared:

    FENCEpy
    from calc.fenced import scale
    ys = scale([1], 2); print(ys)
    FENCE

    FENCEbash
    pip install calc
    FENCE

    FENCEpython
    def (:
    FENCE

    FENCEpython
    from calc.fenced import scale

    print(scale([1], 2))
    #> [3]
    FENCE

    FENCEpython
    import contextlib
    from calc.fenced import scale

    for k in (1, 2):
        print(scale([1], k))
        #> [1]
        #> [2]

    with contextlib.nullcontext([5]) as xs:
        ys = scale(xs, 2)
    print(ys)
    #> [10]
    FENCE

    A doctest in a fence stays a doctest, the fence not its output:

    FENCEpython
    >>> scale([2], 2)
    [4]
    FENCE
    """
    return [x * k for x in xs]
`, "FENCE", "```")

// sandboxFor makes an executor for the fixture tree at root, or skips (fails
// under CI=true) when bubblewrap is missing, as runners/sandbox's tests do.
func sandboxFor(t *testing.T, py, root string) *Executor {
	t.Helper()
	sb, err := sandbox.New()
	if err != nil {
		t.Fatal(err)
	}
	if sb.Isolation() != "bubblewrap" {
		if os.Getenv("CI") == "true" {
			t.Fatal("bubblewrap is not installed: no isolation to test the examples in")
		}
		t.Skip("SKIPPED LOUDLY: bubblewrap is not installed: no isolation to test the examples in")
	}
	py = reachablePython(t, py)
	x := &Executor{Sandbox: sb, Python: py, Paths: []string{root}, Limits: sandbox.Limits{Wall: 10 * time.Second}}
	// A venv's interpreter needs its venv; one outside the system
	// directories needs its installation.
	if !strings.HasPrefix(py, "/usr/") {
		x.ReadOnly = append(x.ReadOnly, filepath.Dir(filepath.Dir(py)))
	}
	if real, _ := filepath.EvalSymlinks(py); !strings.HasPrefix(real, "/usr/") {
		x.ReadOnly = append(x.ReadOnly, filepath.Dir(filepath.Dir(real)))
	}
	return x
}

// reachablePython returns py when uid 65534 (whom the sandbox runs
// programs as under root) can reach it and its installation, else the
// system's /usr/bin/python3 (a pyenv under /root is private).
func reachablePython(t *testing.T, py string) string {
	t.Helper()
	for _, p := range []string{py, "/usr/bin/python3"} {
		real, err := filepath.EvalSymlinks(p)
		if err == nil && worldTraversable(filepath.Dir(filepath.Dir(p))) && worldTraversable(filepath.Dir(filepath.Dir(real))) {
			return p
		}
	}
	msg := "no Python interpreter the sandbox's unprivileged user can reach"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func worldTraversable(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == "/" {
			return true
		}
	}
}

// outsideTmp is a world-readable directory outside /tmp, which is the
// sandbox's own.
func outsideTmp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "lacuna-pyapi-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func docsAPIs() []API {
	var out []API
	for _, name := range []string{"double", "broken_doc", "raises", "bad_syntax", "hangs", "crashes", "uses_helper", "noisy", "plain"} {
		out = append(out, API{ID: "calc.core:" + name, Kind: "function", Name: name})
	}
	return out
}

// withDocs fills the APIs' docstrings from the fixture, the way Surface
// would (inspect.cleandoc).
func withDocs(t *testing.T, py, root string, apis []API) []API {
	t.Helper()
	s, err := Surface(context.Background(), py, []string{root}, "calc")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, a := range s.APIs {
		docs[a.ID] = a.Doc
	}
	for i := range apis {
		apis[i].Doc = docs[apis[i].ID]
	}
	return apis
}

func TestDoctestsSplitDocstringsIntoStepsWithExpectedOutput(t *testing.T) {
	py := python(t)
	root := t.TempDir()
	writeTree(t, root, docsFiles)
	exs, skipped, err := Doctests(context.Background(), py, withDocs(t, py, root, docsAPIs()))
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	byName := map[string]Example{}
	for _, e := range exs {
		byName[e.Name] = e
	}
	if _, ok := byName["calc.core:plain"]; ok || len(exs) != 8 {
		t.Errorf("%d examples (plain included: %v), want 8 without plain", len(exs), ok)
	}
	d := byName["calc.core:double"]
	if d.APIID != "calc.core:double" || d.Module != "calc.core" || len(d.Steps) != 3 ||
		d.Code != "double(2)\ny = double(-1)\ny\n" || d.Output != "4\n-2\n" || d.Steps[1].Want != "" || !reflect.DeepEqual(d.Calls, []string{"double"}) {
		t.Errorf("double: %+v", d)
	}
}

func TestDocFileExamplesScanShippedDocsWithDoctests(t *testing.T) {
	py := python(t)
	root := t.TempDir()
	writeTree(t, root, docsFiles)
	exs, skipped, err := DocFileExamples(context.Background(), py, filepath.Join(root, "calc"))
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != 2 || len(skipped) != 0 {
		t.Fatalf("examples %+v skipped %v, want guide.md and wrong.rst", exs, skipped)
	}
	g := exs[0]
	if g.File != "docs/guide.md" || g.Module != "" || g.Output != "42\n" || strings.Contains(g.Text, "```") || !reflect.DeepEqual(g.Calls, []string{"double"}) {
		t.Errorf("guide.md: %+v (the fence must not be expected output)", g)
	}
}

func TestExecutorRunsEachExampleInTheSandboxWithAVerdict(t *testing.T) {
	py := python(t)
	root := outsideTmp(t)
	writeTree(t, root, docsFiles)
	x := sandboxFor(t, py, root)
	x.Limits.Wall = 30 * time.Second
	short := *x
	short.Limits.Wall = 2 * time.Second // for the example that hangs
	ctx := context.Background()
	exs, _, err := Doctests(ctx, py, withDocs(t, py, root, docsAPIs()))
	if err != nil {
		t.Fatal(err)
	}
	files, _, err := DocFileExamples(ctx, py, filepath.Join(root, "calc"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ status, got, errorHas string }{
		"calc.core:double":      {status: ExamplePassed},
		"calc.core:uses_helper": {status: ExamplePassed}, // runs in the module's globals
		"calc.core:noisy":       {status: ExamplePassed}, // a write to descriptor 1 does not spoil the verdict
		"calc.core:broken_doc":  {status: ExampleFailed, got: "2\n"},
		"calc.core:raises":      {status: ExampleRuntimeError, errorHas: "ZeroDivisionError"},
		"calc.core:bad_syntax":  {status: ExampleCompileError, errorHas: "SyntaxError"},
		"calc.core:hangs":       {status: ExampleTimeout},
		"calc.core:crashes":     {status: ExampleCrashed, errorHas: "exit status 3"},
		"docs/guide.md":         {status: ExamplePassed},
		"docs/wrong.rst":        {status: ExampleFailed, got: "2\n"},
	}
	seen := 0
	for _, e := range append(exs, files...) {
		w, ok := want[e.Name]
		if !ok {
			continue
		}
		seen++
		run := x.Run
		if w.status == ExampleTimeout {
			run = short.Run
		}
		v, err := run(ctx, e)
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		if v.Status != w.status || v.Got != w.got || !strings.Contains(v.Error, w.errorHas) || v.Valid() != (w.status == ExamplePassed) {
			t.Errorf("%s: %+v, want status %s got %q error containing %q", e.Name, v, w.status, w.got, w.errorHas)
		}
	}
	if seen != len(want) {
		t.Errorf("ran %d examples, want %d", seen, len(want))
	}
}

var apiFencedScale = API{ID: "calc.fenced:scale", Kind: "function", Name: "scale"}

// withFencedDoc is apiFencedScale with its docstring, as Surface reads it.
func withFencedDoc(t *testing.T, py, root string) API {
	t.Helper()
	s, err := Surface(context.Background(), py, []string{root}, "calc")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range s.APIs {
		if a.ID == apiFencedScale.ID {
			return a
		}
	}
	t.Fatalf("no %s in the surface", apiFencedScale.ID)
	return API{}
}

func TestDoctestsTakeFencedPythonBlocksAsExamples(t *testing.T) {
	py := python(t)
	root := t.TempDir()
	writeTree(t, root, docsFiles)
	exs, skipped, err := Doctests(context.Background(), py, []API{withFencedDoc(t, py, root)})
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		origin, module string
		steps          []Step // Source and Want
	}
	wants := map[string]want{
		"calc.fenced:scale": {OriginDoctest, "calc.fenced", []Step{{Source: "scale([2], 2)\n", Want: "[4]\n"}}},
		"calc.fenced:scale#fenced-1": {OriginFenced, "", []Step{
			{Source: "from calc.fenced import scale\n"}, {Source: "print(scale([1, 2], 3))\n", Want: "[3, 6]\n"}}},
		"calc.fenced:scale#fenced-2": {OriginFenced, "", []Step{
			{Source: "from calc.fenced import scale\n"}, {Source: "ys = scale([1], 2); print(ys)\n"}}},
		"calc.fenced:scale#fenced-4": {OriginFenced, "", []Step{
			{Source: "from calc.fenced import scale\n"}, {Source: "print(scale([1], 2))\n", Want: "[3]\n"}}},
		"calc.fenced:scale#fenced-5": {OriginFenced, "", []Step{
			{Source: "import contextlib\n"}, {Source: "from calc.fenced import scale\n"},
			{Source: "for k in (1, 2):\n    print(scale([1], k))\n", Want: "[1]\n[2]\n"},
			{Source: "with contextlib.nullcontext([5]) as xs:\n    ys = scale(xs, 2)\n"},
			{Source: "print(ys)\n", Want: "[10]\n"}}},
	}
	if len(exs) != len(wants) {
		t.Errorf("%d examples, want %d", len(exs), len(wants))
	}
	for _, e := range exs {
		w, ok := wants[e.Name]
		if !ok {
			t.Errorf("unexpected example %s: %+v", e.Name, e)
			continue
		}
		var steps []Step
		for _, s := range e.Steps {
			steps = append(steps, Step{Source: s.Source, Want: s.Want})
		}
		if e.Origin != w.origin || e.Module != w.module || e.APIID != apiFencedScale.ID || !reflect.DeepEqual(steps, w.steps) {
			t.Errorf("%s: origin %q module %q api %q steps %+v, want %q %q %+v", e.Name, e.Origin, e.Module, e.APIID, steps, w.origin, w.module, w.steps)
		}
		if e.Origin == OriginFenced && (!strings.Contains(e.Text, "from calc.fenced import scale") || strings.Contains(e.Text, "```")) {
			t.Errorf("%s: text %q, want the block's code", e.Name, e.Text)
		}
	}
	if why := skipped["calc.fenced:scale#fenced-3"]; len(skipped) != 1 || !strings.Contains(why, "does not parse") {
		t.Errorf("skipped %v, want only block 3, that does not parse", skipped)
	}
}

func TestDocFileExamplesTakeFencedBlocksOfMarkdown(t *testing.T) {
	py := python(t)
	root := t.TempDir()
	files := map[string]string{
		"pkg/__init__.py":  "",
		"pkg/docs/use.md":  "# Use\n\n```python\nimport json\nprint(json.dumps([1]))\n#> [1]\n```\n\n```json\n{\"a\": 1}\n```\n",
		"pkg/docs/use.rst": ".. code-block:: python\n\n    print(1)\n",
		// a fence-like line in a doctest's expected output is output
		"pkg/docs/out.md": "```pycon\n>>> print('~~~')\n~~~\n```\n",
	}
	writeTree(t, root, files)
	exs, skipped, err := DocFileExamples(context.Background(), py, filepath.Join(root, "pkg"))
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != 2 || len(skipped) != 0 {
		t.Fatalf("examples %+v skipped %v, want out.md's doctest and the python block of use.md", exs, skipped)
	}
	if o := exs[0]; o.Name != "docs/out.md" || o.Output != "~~~\n" || strings.Contains(o.Text, "```") {
		t.Errorf("out.md: %+v, want its output ~~~ and its fences blank", o)
	}
	e := exs[1]
	if e.Name != "docs/use.md#fenced-1" || e.File != "docs/use.md" || e.Origin != OriginFenced || e.Output != "[1]\n" || !reflect.DeepEqual(e.Calls, []string{"dumps", "print"}) {
		t.Errorf("use.md: %+v", e)
	}
}

func TestExecutorRunsFencedExamplesAsScripts(t *testing.T) {
	py := python(t)
	root := outsideTmp(t)
	writeTree(t, root, docsFiles)
	x := sandboxFor(t, py, root)
	x.Limits.Wall = 30 * time.Second
	ctx := context.Background()
	exs, _, err := Doctests(ctx, py, []API{withFencedDoc(t, py, root)})
	if err != nil {
		t.Fatal(err)
	}
	class := Example{Name: "class#fenced-1", Origin: OriginFenced, Steps: []Step{
		{Source: "import dataclasses\n"},
		{Source: "@dataclasses.dataclass\nclass P:\n    x: 'int'\n"},
		{Source: "print(P(1))\n", Want: "P(x=1)\n"},
	}}
	raises := Example{Name: "raises#fenced-1", Origin: OriginFenced, Steps: []Step{
		{Source: "print(1)\n", Want: "1\n"}, {Source: "1 / 0\n"}, {Source: "print(2)\n", Want: "3\n"}}}
	want := map[string]struct{ status, got, errorHas string }{
		"calc.fenced:scale":          {status: ExamplePassed}, // the fence is not the doctest's output
		"calc.fenced:scale#fenced-1": {status: ExamplePassed},
		"calc.fenced:scale#fenced-2": {status: ExamplePassed}, // prints, states no output
		"calc.fenced:scale#fenced-4": {status: ExampleFailed, got: "[2]\n"},
		"calc.fenced:scale#fenced-5": {status: ExamplePassed},
		"class#fenced-1":             {status: ExamplePassed}, // a class defined in the example's own __main__
		"raises#fenced-1":            {status: ExampleRuntimeError, errorHas: "ZeroDivisionError"},
	}
	for _, e := range append(exs, class, raises) {
		w := want[e.Name]
		v, err := x.Run(ctx, e)
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		if v.Status != w.status || v.Got != w.got || !strings.Contains(v.Error, w.errorHas) {
			t.Errorf("%s: %+v, want status %s got %q error containing %q", e.Name, v, w.status, w.got, w.errorHas)
		}
		if e.Name == "raises#fenced-1" && len(v.Steps) != 2 {
			t.Errorf("raises: steps %+v, want the run to stop at the step that raised", v.Steps)
		}
	}
}

func TestExecutorSeesTheEnvironmentReadOnlyAndNoHostFiles(t *testing.T) {
	py := python(t)
	root := outsideTmp(t)
	writeTree(t, root, map[string]string{"probe/__init__.py": ""})
	secret := outsideTmp(t)
	if err := os.WriteFile(filepath.Join(secret, "secret"), []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	x := sandboxFor(t, py, root)
	text := ">>> import probe, os\n" +
		">>> open(os.path.join(os.path.dirname(probe.__file__), 'w'), 'w')\nTraceback (most recent call last):\nOSError: [Errno 30] Read-only file system: '" + filepath.Join(root, "probe", "w") + "'\n" +
		">>> os.path.exists(" + `"` + filepath.Join(secret, "secret") + `"` + ")\nFalse\n"
	v, err := x.Run(context.Background(), Example{Name: "probe", Text: text})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != ExamplePassed {
		t.Errorf("%+v, want the package read-only and the host's files unseen", v)
	}
}

func TestExecutorRejectsUnknownFlags(t *testing.T) {
	x := &Executor{Flags: []string{"ELIPSIS"}}
	if _, err := x.Run(context.Background(), Example{Name: "x"}); err == nil || !strings.Contains(err.Error(), "ELIPSIS") {
		t.Errorf("err %v, want the unknown flag named", err)
	}
}

// TestExecutorRunsAnInterpreterUnderAPrivateDirectory: as root, the
// sandbox's uid 65534 cannot reach a venv under a private directory (a
// pyenv's under /root); the Executor has it mounted as root
// (sandbox.Spec.MountAsRoot) and the example runs.
func TestExecutorRunsAnInterpreterUnderAPrivateDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the sandbox changes uid only when lacuna runs as root")
	}
	py := python(t)
	root := outsideTmp(t)
	writeTree(t, root, docsFiles)
	x := sandboxFor(t, py, root)
	private := outsideTmp(t)
	venv := filepath.Join(private, "venv")
	if out, err := exec.Command(x.Python, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Fatalf("venv: %v\n%s", err, out)
	}
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	x.Python, x.ReadOnly = filepath.Join(venv, "bin", "python"), append(x.ReadOnly, venv)
	x.Limits.Wall = 30 * time.Second
	files, _, err := DocFileExamples(context.Background(), py, filepath.Join(root, "calc"))
	if err != nil || len(files) == 0 || files[0].File != "docs/guide.md" {
		t.Fatalf("examples %+v, %v: want docs/guide.md first", files, err)
	}
	v, err := x.Run(context.Background(), files[0])
	if err != nil || v.Status != ExamplePassed {
		t.Errorf("verdict %+v, %v: want passed", v, err)
	}
}

// fencedEdges are docstrings (as Surface reads them) on the edges of
// fenced blocks: a "#>" line inside a string, reStructuredText section
// underlines of tildes, a doctest whose expected output holds fence lines,
// pytest-examples' multi-line output form, and a block tagged to be
// skipped.
var fencedEdges = map[string]string{
	"hash_in_string": "Counts.\n\nFENCEpython\ns = '''\n#> not output\n'''\nprint(len(s))\n#> 15\nFENCE\n",
	"rst_underline":  "Scale\n~~~~~\n\nFENCEpython\nprint(1)\n#> 1\nFENCE\n\n~~~~~\nNotes\n~~~~~\n\nFENCEpython\nprint(2)\n#> 2\nFENCE\n\n~~~python\nprint(3)\n~~~\n",
	"fence_in_want":  ">>> print('FENCEpython')\nFENCEpython\n>>> print('x = 1\\nFENCE')\nx = 1\nFENCE\n",
	"multiline": "Dumps.\n\nFENCEpy\nd = {'alpha': [1, 2], 'beta': 'x'}\nprint(d)\n'''\n{\n    'alpha': [1, 2],\n    'beta': 'x',\n}\n'''\nfor k in d:\n    print(k)\n    '''\n    alpha\n    beta\n    '''\nFENCE\n" +
		"\nFENCEpy\nprint({'alpha': 2})\n'''\n{\n    'alpha': 1,\n}\n'''\nFENCE\n",
	"skip_tag": "Skipped.\n\nFENCEpy {test=\"skip\" lint=\"skip\"}\nraise SystemExit(1)\nFENCE\n\nFENCEpy {lint=\"skip\"}\nprint(3)\nFENCE\n",
}

func fencedEdgeAPIs() []API {
	var apis []API
	for name, doc := range fencedEdges {
		apis = append(apis, API{ID: "edge:" + name, Kind: "function", Name: name, Doc: strings.ReplaceAll(doc, "FENCE", "```")})
	}
	return apis
}

func TestDoctestsReadTheEdgesOfFencedBlocks(t *testing.T) {
	py := python(t)
	exs, skipped, err := Doctests(context.Background(), py, fencedEdgeAPIs())
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		Source, Want string
		Loose        bool
	}
	wants := map[string][]step{
		// tokenize's comments only: the string's "#>" line is not output
		"edge:hash_in_string#fenced-1": {{Source: "s = '''\n#> not output\n'''\n"}, {Source: "print(len(s))\n", Want: "15\n"}},
		// an underline (or overline) of tildes opens no fence that
		// swallows the rest
		"edge:rst_underline#fenced-1": {{Source: "print(1)\n", Want: "1\n"}},
		"edge:rst_underline#fenced-2": {{Source: "print(2)\n", Want: "2\n"}},
		"edge:rst_underline#fenced-3": {{Source: "print(3)\n"}}, // a tilde fence with an info string opens
		// fence lines in a doctest's expected output stay output, and are
		// no block of their own
		"edge:fence_in_want": {{Source: "print('```python')\n", Want: "```python\n"}, {Source: "print('x = 1\\n```')\n", Want: "x = 1\n```\n"}},
		// pytest-examples' multi-line output is its print's want, not a step
		"edge:multiline#fenced-1": {{Source: "d = {'alpha': [1, 2], 'beta': 'x'}\n"},
			{Source: "print(d)\n", Want: "{\n    'alpha': [1, 2],\n    'beta': 'x',\n}\n", Loose: true},
			{Source: "for k in d:\n    print(k)\n    '''\n    alpha\n    beta\n    '''\n", Want: "alpha\nbeta\n", Loose: true}},
		"edge:multiline#fenced-2": {{Source: "print({'alpha': 2})\n", Want: "{\n    'alpha': 1,\n}\n", Loose: true}},
		// only test="skip" skips; lint="skip" alone does not
		"edge:skip_tag#fenced-2": {{Source: "print(3)\n"}},
	}
	got := map[string][]step{}
	for _, e := range exs {
		for _, s := range e.Steps {
			got[e.Name] = append(got[e.Name], step{s.Source, s.Want, s.Loose})
		}
	}
	for name, w := range wants {
		if !reflect.DeepEqual(got[name], w) {
			t.Errorf("%s: steps %+v, want %+v", name, got[name], w)
		}
	}
	for name := range got {
		if _, ok := wants[name]; !ok {
			t.Errorf("unexpected example %s: %+v", name, got[name])
		}
	}
	if why := skipped["edge:skip_tag#fenced-1"]; len(skipped) != 1 || !strings.Contains(why, `tagged test="skip"`) {
		t.Errorf("skipped %v, want only skip_tag's first block, tagged", skipped)
	}
}

func TestExecutorComparesTheOutputFencedEdgesState(t *testing.T) {
	py := python(t)
	root := outsideTmp(t)
	writeTree(t, root, map[string]string{"edge.py": ""}) // the module a docstring's doctest runs in
	x := sandboxFor(t, py, root)
	x.Limits.Wall = 30 * time.Second
	ctx := context.Background()
	exs, _, err := Doctests(ctx, py, fencedEdgeAPIs())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		status, got string
		compared    int
	}{
		"edge:hash_in_string#fenced-1": {status: ExamplePassed, compared: 1},
		"edge:rst_underline#fenced-1":  {status: ExamplePassed, compared: 1},
		"edge:fence_in_want":           {status: ExamplePassed, compared: 2},
		"edge:multiline#fenced-1":      {status: ExamplePassed, compared: 2}, // black's layout is not a difference
		"edge:multiline#fenced-2":      {status: ExampleFailed, got: "{'alpha': 2}\n", compared: 1},
		"edge:skip_tag#fenced-2":       {status: ExamplePassed, compared: 0}, // valid, not output-checked
	}
	for _, e := range exs {
		w, ok := want[e.Name]
		if !ok {
			continue
		}
		delete(want, e.Name)
		v, err := x.Run(ctx, e)
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		if v.Status != w.status || v.Got != w.got || v.Compared != w.compared || v.OutputChecked() != (w.status == ExamplePassed && w.compared > 0) {
			t.Errorf("%s: %+v, want status %s got %q compared %d", e.Name, v, w.status, w.got, w.compared)
		}
	}
	if len(want) != 0 {
		t.Errorf("examples not found: %v", want)
	}
}
