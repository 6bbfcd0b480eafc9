package pyharness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/pyapi"
)

// doctest builds an example from ">>> source" / want pairs: a docstring's
// of module when module is set, a documentation file's otherwise.
func doctest(name, module string, steps ...string) pyapi.Example {
	ex := pyapi.Example{Name: name, Module: module}
	for i := 0; i+1 < len(steps); i += 2 {
		ex.Steps = append(ex.Steps, pyapi.Step{Source: steps[i] + "\n", Want: steps[i+1]})
	}
	return ex
}

// fenced builds a fenced example (pyapi.OriginFenced) from statement /
// "#> " output pairs, as pyapi.Doctests splits a block.
func fenced(name string, steps ...string) pyapi.Example {
	ex := doctest(name, "", steps...)
	ex.Origin = pyapi.OriginFenced
	return ex
}

func api(id, kind string, paths []string, params ...string) pyapi.API {
	a := pyapi.API{ID: id, Kind: kind, Paths: paths}
	if len(paths) > 0 {
		a.Path = paths[0]
	}
	for _, p := range params {
		a.Params = append(a.Params, pyapi.Param{Name: p, Kind: "positional_or_keyword"})
	}
	return a
}

var (
	apiScale   = api("fixpkg._impl:scale", "function", []string{"fixpkg.scale", "fixpkg.rescale"}, "xs", "factor")
	apiGrid    = api("fixpkg._impl:Grid", "class", []string{"fixpkg.Grid"}, "n")
	apiCells   = api("fixpkg._impl:Grid.cells", "method", []string{"fixpkg.Grid.cells"}, "self")
	apiCounter = api("fixpkg._impl:Counter.add", "method", []string{"fixpkg.Counter.add"}, "self", "n")
	apiSize    = api("fixpkg._impl:Grid.size", "property", []string{"fixpkg.Grid.size"})
)

// cutCase is one example and the tasks (by level) it must give, or the
// reason it gives none.
type cutCase struct {
	name string
	api  pyapi.API
	ex   pyapi.Example
	want map[string]Task // Prelude, Signature, Reference, Inputs; Site.Args, Recv, Returns, Prints
	// skipped are the levels left out, with a word of the reason ("" key:
	// the whole example).
	skipped map[string]string
}

var cutCases = []cutCase{
	{
		name: "a function of a docstring, its globals unimported",
		api:  apiScale,
		ex:   doctest("fixpkg._impl:scale", "fixpkg._impl", "scale([1, 2], 3)", "[3, 6]\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve(xs, factor):",
			Reference: "from fixpkg import scale\nreturn scale(xs, factor)",
			Inputs:    []string{"([1, 2], 3)", "([2, 3], 3)", "([1, 2], 4)"},
			Site:      Site{Args: []string{"xs", "factor"}, Returns: "scale(xs, factor)", Want: "[3, 6]\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		name: "a method on an instance built from the prelude's data",
		api:  apiCells,
		ex: doctest("fixpkg._impl:Grid.cells", "fixpkg._impl",
			"rows = [4, 5, 6]", "",
			"g = Grid(len(rows))", "",
			"g.cells()", "9\n"),
		want: map[string]Task{
			Easy: {
				Prelude:   "rows = [4, 5, 6]",
				Signature: "def solve(rows):",
				Reference: "from fixpkg._impl import Grid\ng = Grid(len(rows))\nreturn g.cells()",
				Inputs:    []string{"(rows,)", "([5, 6, 7],)"},
				Site:      Site{Recv: "g", Setup: []string{"g = Grid(len(rows))"}, Returns: "g.cells()", Want: "9\n"},
			},
			Medium: {
				Signature: "def solve():",
				Reference: "from fixpkg._impl import Grid\nrows = [4, 5, 6]\ng = Grid(len(rows))\nreturn g.cells()",
				Inputs:    []string{"()"},
				Site:      Site{Recv: "g", Data: []string{"rows = [4, 5, 6]"}, Setup: []string{"g = Grid(len(rows))"}, Returns: "g.cells()", Want: "9\n"},
			},
			Hard: {
				Signature: "def solve():",
				Reference: "from fixpkg._impl import Grid\nrows = [4, 5, 6]\ng = Grid(len(rows))\nreturn g.cells()",
				Inputs:    []string{"()"},
				Site:      Site{Recv: "g", PlainData: []string{"rows = [4, 5, 6]"}, Returns: "g.cells()", Want: "9\n"},
			},
		},
	},
	{
		name: "a class constructor, its literal lifted under the parameter's name",
		api:  apiGrid,
		ex:   doctest("fixpkg._impl:Grid", "fixpkg._impl", "Grid(3).n * 2", "6\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve(n):",
			Reference: "from fixpkg import Grid\nreturn Grid(n).n * 2",
			Inputs:    []string{"(3,)", "(4,)"},
			Site:      Site{Args: []string{"n"}, Returns: "Grid(n).n * 2", Want: "6\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		name: "a call nested in print",
		api:  apiScale,
		ex:   doctest("docs/usage.md", "", "from fixpkg import rescale as rs", "", "print(rs(['a'], factor=2))", "['aa']\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve(xs, factor):",
			Reference: "from fixpkg import rescale as rs\nreturn rs(xs, factor=factor)",
			Inputs:    []string{"(['a'], 2)", "(['ax'], 2)", "(['a'], 3)"},
			Site:      Site{Args: []string{"xs", "factor=factor"}, Aliases: []string{"rs"}, Returns: "rs(xs, factor=factor)", Prints: true, Want: "['aa']\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		name: "several steps with intermediate variables and another call of the package",
		api:  apiScale,
		ex: doctest("docs/guide.md", "",
			"import fixpkg", "",
			"xs = [1, 2, 3]", "",
			"ys = fixpkg.scale(xs, factor=2)", "",
			"total = sum(fixpkg.shift(ys))", "",
			"total", "15\n"),
		want: map[string]Task{
			Easy: {
				Prelude:   "xs = [1, 2, 3]",
				Signature: "def solve(xs, factor):",
				Reference: "import fixpkg\nys = fixpkg.scale(xs, factor=factor)\nreturn ys",
				Inputs:    []string{"(xs, 2)", "([2, 3, 4], 2)", "(xs, 3)"},
				Site:      Site{Args: []string{"xs", "factor=factor"}, Returns: "ys"},
			},
			Medium: {
				Signature: "def solve(factor):",
				Reference: "import fixpkg\nxs = [1, 2, 3]\nys = fixpkg.scale(xs, factor=factor)\nreturn ys",
				Inputs:    []string{"(2,)", "(3,)"},
				Site:      Site{Args: []string{"xs", "factor=factor"}, Data: []string{"xs = [1, 2, 3]"}, Returns: "ys"},
			},
			Hard: {
				Signature: "def solve(factor):",
				Reference: "import fixpkg\nxs = [1, 2, 3]\nys = fixpkg.scale(xs, factor=factor)\ntotal = sum(fixpkg.shift(ys))\nreturn total",
				Inputs:    []string{"(2,)", "(3,)"},
				Site:      Site{Args: []string{"xs", "factor=factor"}, PlainData: []string{"xs = [1, 2, 3]"}, Returns: "total", Want: "15\n"},
			},
		},
	},
	{
		// more_itertools.dft's shape: a plain statement reading the data
		// the medium body takes (Xarr) stays out of that prelude, where it
		// would raise NameError.
		name: "a statement reading the medium task's data leaves its prelude",
		api:  apiScale,
		ex: doctest("fixpkg._impl:scale", "fixpkg._impl",
			"import math", "",
			"xs = [1, 2]  # input", "",
			"ws = [3, 6]  # expected", "",
			"mags, signs = zip(*map(math.frexp, ws))", "",
			"all(map(math.isclose, scale(xs, 3), ws))", "True\n"),
		want: map[string]Task{
			Easy: {
				Prelude:   "import math\nxs = [1, 2]\nws = [3, 6]\nmags, signs = zip(*map(math.frexp, ws))",
				Signature: "def solve(ws, xs, factor):",
				Reference: "from fixpkg import scale\nreturn all(map(math.isclose, scale(xs, factor), ws))",
				Inputs:    []string{"(ws, xs, 3)", "([4, 7], xs, 3)", "(ws, [2, 3], 3)", "(ws, xs, 4)"},
				Site:      Site{Args: []string{"xs", "factor"}, Returns: "all(map(math.isclose, scale(xs, factor), ws))", Want: "True\n"},
			},
			Medium: {
				Prelude:   "import math",
				Signature: "def solve(factor):",
				Reference: "from fixpkg import scale\nxs = [1, 2]\nws = [3, 6]\nreturn all(map(math.isclose, scale(xs, factor), ws))",
				Inputs:    []string{"(3,)", "(4,)"},
				Site:      Site{Args: []string{"xs", "factor"}, Data: []string{"xs = [1, 2]", "ws = [3, 6]"}, Returns: "all(map(math.isclose, scale(xs, factor), ws))", Want: "True\n"},
			},
		},
		skipped: map[string]string{Hard: "nothing else"},
	},
	{
		name: "an assignment a later step shows",
		api:  apiScale,
		ex:   doctest("docs/assign.md", "", "from fixpkg import scale", "", "ys = scale([1], 2)", "", "ys", "[2]\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve(xs, factor):",
			Reference: "from fixpkg import scale\nys = scale(xs, factor)\nreturn ys",
			Inputs:    []string{"([1], 2)", "([2], 2)", "([1], 3)"},
			Site:      Site{Args: []string{"xs", "factor"}, Returns: "ys", Want: "[2]\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		name: "a standard library star import binds its names, not the module's globals",
		api:  apiScale,
		ex:   doctest("fixpkg._impl:scale", "fixpkg._impl", "from math import *", "", "scale([floor(2.5)], 2)", "[4]\n"),
		want: map[string]Task{Easy: {
			Prelude:   "from math import *",
			Signature: "def solve(factor):",
			Reference: "from fixpkg import scale\nreturn scale([floor(2.5)], factor)",
			Inputs:    []string{"(2,)", "(3,)"},
			Site:      Site{Args: []string{"[floor(2.5)]", "factor"}, Returns: "scale([floor(2.5)], factor)", Want: "[4]\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		name: "a call inside a loop: the loop is the span, what it prints the result",
		api:  apiScale,
		ex:   doctest("docs/loop.md", "", "from fixpkg import scale", "", "for k in (1, 2):\n    print(scale([1], k))", "[1]\n[2]\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve(xs):",
			Reference: "from fixpkg import scale\nprinted = []\nfor k in (1, 2):\n    printed.append(scale(xs, k))\nreturn printed",
			Inputs:    []string{"([1],)", "([2],)"},
			Site:      Site{Args: []string{"xs", "k"}, Returns: "printed", Collects: true, Around: "for", Want: "[1]\n[2]\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		name: "a fenced call inside a with statement: the with is the span, the variable it assigns the result",
		api:  apiScale,
		ex: fenced("docs/with.md#fenced-1",
			"import contextlib", "",
			"from fixpkg import scale", "",
			"with contextlib.nullcontext([5]) as xs:\n    ys = scale(xs, 2)", "",
			"print(ys)", "[10]\n"),
		want: map[string]Task{Easy: {
			Prelude:   "import contextlib",
			Signature: "def solve(factor):",
			Reference: "from fixpkg import scale\nwith contextlib.nullcontext([5]) as xs:\n    ys = scale(xs, factor)\nreturn ys",
			Inputs:    []string{"(2,)", "(3,)"},
			Site:      Site{Args: []string{"xs", "factor"}, Returns: "ys", Prints: true, Around: "with", Want: "[10]\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		name: "a loop's counter bound before it moves into the body with it",
		api:  apiScale,
		ex: doctest("docs/count.md", "",
			"from fixpkg import scale", "",
			"n = 0", "",
			"label = 'items'", "",
			"for x in scale([1, 2], 3):\n    n += x", "",
			"n", "9\n"),
		want: map[string]Task{Easy: {
			Prelude:   "label = 'items'",
			Signature: "def solve(xs, factor):",
			Reference: "from fixpkg import scale\nn = 0\nfor x in scale(xs, factor):\n    n += x\nreturn n",
			Inputs:    []string{"([1, 2], 3)", "([2, 3], 3)", "([1, 2], 4)"},
			Site:      Site{Args: []string{"xs", "factor"}, Setup: []string{"n = 0"}, Returns: "n", Around: "for", Want: "9\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		// What it shows depends on the machine's speed: no task.
		name: "an example that sleeps",
		api:  apiScale,
		ex: doctest("docs/throttle.md", "", "import time", "", "from fixpkg import scale", "",
			"time.sleep(0.01)", "", "scale([1, 2], 3)", "[3, 6]\n"),
		skipped: map[string]string{"": "waits on the clock (time.sleep)"},
	},
	{
		name: "an example that sleeps through a name it imports",
		api:  apiScale,
		ex: fenced("docs/throttle.md#fenced-1", "from asyncio import sleep as nap\nfrom fixpkg import scale", "",
			"scale([1], 2)", "[2]", "nap(0)", ""),
		skipped: map[string]string{"": "waits on the clock (asyncio.sleep)"},
	},
	{
		name:    "a docstring's example that sleeps on its module's time, unimported",
		api:     apiScale,
		ex:      doctest("fixpkg._impl:scale", "fixpkg._impl", "t = threading.Timer(1, print)", "", "scale([1, 2], 3)", "[3, 6]\n"),
		skipped: map[string]string{"": "waits on the clock (threading.Timer)"},
	},
	{
		name:    "a loop that neither prints nor assigns",
		api:     apiScale,
		ex:      fenced("docs/loop.md#fenced-2", "from fixpkg import scale", "", "for k in (1, 2):\n    scale([1], k)", ""),
		skipped: map[string]string{"": "prints nothing and assigns no variable"},
	},
	{
		// A name a comprehension binds is not solve's: the result is the
		// variable a later step shows.
		name: "a loop that prints nothing: the variable a later step shows, never a comprehension's",
		api:  apiScale,
		ex: doctest("docs/loop.md", "",
			"from fixpkg import scale", "",
			"for k in (1, 2):\n    ys = [scale([v], k) for v in (1, 2)]", "",
			"ys", "[[2], [4]]\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve():",
			Reference: "from fixpkg import scale\nfor k in (1, 2):\n    ys = [scale([v], k) for v in (1, 2)]\nreturn ys",
			Inputs:    []string{"()"},
			Site:      Site{Args: []string{"[v]", "k"}, Returns: "ys", Around: "for", Want: "[[2], [4]]\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		// msg is bound only when the handler runs, err is deleted at its
		// end: neither is on the path the example shows; ys is on every
		// path, the handler's too.
		name: "a loop that prints nothing: the variable its try's body and handler assign, not the handler's own",
		api:  apiScale,
		ex: doctest("docs/loop.md", "",
			"from fixpkg import scale", "",
			"for k in (1, 2):\n    try:\n        ys = scale([1], k)\n    except ValueError as err:\n        ys = []\n        msg = str(err)", "",
			"ys", "[2]\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve(xs):",
			Reference: "from fixpkg import scale\nfor k in (1, 2):\n    try:\n        ys = scale(xs, k)\n    except ValueError as err:\n        ys = []\n        msg = str(err)\nreturn ys",
			Inputs:    []string{"([1],)", "([2],)"},
			Site:      Site{Args: []string{"xs", "k"}, Returns: "ys", Around: "for", Want: "[2]\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		name: "a loop that prints nothing, a later step showing only what its handler assigns",
		api:  apiScale,
		ex: doctest("docs/loop.md", "",
			"from fixpkg import scale", "",
			"for k in (1, 2):\n    try:\n        ys = scale([1], k)\n    except ValueError as err:\n        ys = []\n        msg = str(err)", "",
			"msg", "'refused'\n"),
		skipped: map[string]string{"": "no later step shows alone a variable it assigns (ys)"},
	},
	{
		name: "a loop that prints nothing: a variable its else block assigns, shown later",
		api:  apiScale,
		ex: doctest("docs/loop.md", "",
			"from fixpkg import scale", "",
			"for k in (1, 2):\n    ys = scale([1], k)\nelse:\n    total = sum(ys)", "",
			"total", "2\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve(xs):",
			Reference: "from fixpkg import scale\nfor k in (1, 2):\n    ys = scale(xs, k)\nelse:\n    total = sum(ys)\nreturn total",
			Inputs:    []string{"([1],)", "([2],)"},
			Site:      Site{Args: []string{"xs", "k"}, Returns: "total", Around: "for", Want: "2\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		// The loop binds k before it reads it: k = 10 stays in the prelude,
		// and so does xs = [k], which the body reads as a parameter.
		name: "a loop's target bound before it is read moves nothing into the body",
		api:  apiScale,
		ex: doctest("docs/loop.md", "",
			"from fixpkg import scale", "",
			"k = 10", "",
			"xs = [k]", "",
			"for k in (1, 2):\n    print(scale(xs, k))", "[10]\n[20]\n"),
		want: map[string]Task{Easy: {
			Prelude:   "k = 10\nxs = [k]",
			Signature: "def solve(xs):",
			Reference: "from fixpkg import scale\nprinted = []\nfor k in (1, 2):\n    printed.append(scale(xs, k))\nreturn printed",
			Inputs:    []string{"(xs,)"},
			Site:      Site{Args: []string{"xs", "k"}, Returns: "printed", Collects: true, Around: "for", Want: "[10]\n[20]\n"},
		}, Medium: {
			Signature: "def solve():",
			Reference: "from fixpkg import scale\nk = 10\nxs = [k]\nprinted = []\nfor k in (1, 2):\n    printed.append(scale(xs, k))\nreturn printed",
			Inputs:    []string{"()"},
			Site:      Site{Args: []string{"xs", "k"}, Data: []string{"k = 10", "xs = [k]"}, Returns: "printed", Collects: true, Around: "for", Want: "[10]\n[20]\n"},
		}},
		skipped: map[string]string{Hard: "nothing else"},
	},
	{
		// The header reads k before the loop rebinds it: k = 3 is solve's.
		name: "a loop whose header reads the name its target rebinds takes the binding into the body",
		api:  apiScale,
		ex: doctest("docs/loop.md", "",
			"from fixpkg import scale", "",
			"k = 3", "",
			"for k in range(k):\n    print(scale([1], k))", "[0]\n[1]\n[2]\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve(xs):",
			Reference: "from fixpkg import scale\nk = 3\nprinted = []\nfor k in range(k):\n    printed.append(scale(xs, k))\nreturn printed",
			Inputs:    []string{"([1],)", "([2],)"},
			Site:      Site{Args: []string{"xs", "k"}, Setup: []string{"k = 3"}, Returns: "printed", Collects: true, Around: "for", Want: "[0]\n[1]\n[2]\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		name:    "a loop printing a starred argument",
		api:     apiScale,
		ex:      doctest("docs/loop.md", "", "from fixpkg import scale", "", "for k in (1, 2):\n    print(*scale([1], k))", "1\n2\n"),
		skipped: map[string]string{"": "a starred argument"},
	},
	{
		name:    "a loop printing with end=",
		api:     apiScale,
		ex:      doctest("docs/loop.md", "", "from fixpkg import scale", "", "for k in (1, 2):\n    print(scale([1], k), end='')\n    print(k)", "[1]1\n[2]2\n"),
		skipped: map[string]string{"": "prints with a keyword"},
	},
	{
		name:    "a loop whose else block prints an empty line",
		api:     apiScale,
		ex:      doctest("docs/loop.md", "", "from fixpkg import scale", "", "for k in (1, 2):\n    print(scale([1], k))\nelse:\n    print()", "[1]\n[2]\n\n"),
		skipped: map[string]string{"": "no argument"},
	},
	{
		name:    "a call printed with a keyword",
		api:     apiScale,
		ex:      doctest("docs/print.md", "", "from fixpkg import scale", "", "print(scale([1], 2), end='')", "[2]"),
		skipped: map[string]string{"": "prints with a keyword"},
	},
	{
		name: "a last step printed with a keyword leaves the hard level out, not the example",
		api:  apiScale,
		ex: doctest("docs/guide.md", "",
			"import fixpkg", "",
			"ys = fixpkg.scale([1], 2)", "",
			"print(fixpkg.shift(ys), end='')", "[3]"),
		want: map[string]Task{Easy: {
			Signature: "def solve(xs, factor):",
			Reference: "import fixpkg\nys = fixpkg.scale(xs, factor)\nreturn ys",
			Inputs:    []string{"([1], 2)", "([2], 2)", "([1], 3)"},
			Site:      Site{Args: []string{"xs", "factor"}, Returns: "ys"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "prints with a keyword"},
	},
	{
		name:    "a loop over a set: its order is the hash seed's",
		api:     apiScale,
		ex:      doctest("docs/loop.md", "", "from fixpkg import scale", "", "for s in {'a', 'b'}:\n    print(scale([s], 2))", "['aa']\n['bb']\n"),
		skipped: map[string]string{"": "PYTHONHASHSEED"},
	},
	{
		name:    "an async for: solve is a plain function",
		api:     apiScale,
		ex:      fenced("docs/async.md#fenced-1", "from fixpkg import scale", "", "async for k in agen():\n    print(scale([1], k))", ""),
		skipped: map[string]string{"": "AsyncFor"},
	},
	{
		name: "a fenced example: a decorated function in the prelude, a class of the package's in the body, #> output",
		api:  apiScale,
		ex: fenced("fixpkg._impl:scale#fenced-1",
			"import functools", "",
			"from fixpkg import Grid, scale", "",
			"@functools.lru_cache\ndef half(v):\n    return v // 2", "",
			"class Twice(Grid):\n    def double(self):\n        return self.n * 2", "",
			"t = Twice(half(6))", "",
			"print(scale([t.double()], 2))", "[12]\n"),
		want: map[string]Task{Easy: {
			Prelude:   "import functools\n@functools.lru_cache\ndef half(v):\n    return v // 2",
			Signature: "def solve(factor):",
			Reference: "from fixpkg import Grid, scale\nclass Twice(Grid):\n\n    def double(self):\n        return self.n * 2\nt = Twice(half(6))\nreturn scale([t.double()], factor)",
			Inputs:    []string{"(2,)", "(3,)"},
			Site: Site{Args: []string{"[t.double()]", "factor"}, Setup: []string{"class Twice(Grid):\n\n    def double(self):\n        return self.n * 2", "t = Twice(half(6))"},
				Returns: "scale([t.double()], factor)", Prints: true, Want: "[12]\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		name:    "a call in a class body no later step shows",
		api:     apiScale,
		ex:      fenced("docs/class.md#fenced-1", "from fixpkg import scale", "", "class C:\n    xs = scale([1], 2)", ""),
		skipped: map[string]string{"": "no later step shows anything computed from the class"},
	},
	{
		// pydantic's shape: a field's default (or an Annotated metadata)
		// in a model, then the model built and shown. The class is the
		// span, what the example computes from it the result; the class's
		// own literals and those of its calls are parameters, none named
		// after a name the class reads or binds (xs_, by_); a plain step
		// after the class that nothing shown needs is left out.
		name: "a call in a class body: the class is the span, what a later step shows of it the result",
		api:  apiScale,
		ex: fenced("docs/model.md#fenced-1",
			"from fixpkg import scale", "",
			"class Model:\n    xs = scale([1, 2], 3)\n\n    def __init__(self, by):\n        self.total = sum(self.xs) + by", "",
			"unrelated = 7", "",
			"m = Model(by=1)", "",
			"print(m.total)", "10\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve(xs_, factor, by_):",
			Reference: "from fixpkg import scale\nclass Model:\n    xs = scale(xs_, factor)\n\n    def __init__(self, by):\n        self.total = sum(self.xs) + by\nm = Model(by=by_)\nreturn m.total",
			Inputs:    []string{"([1, 2], 3, 1)", "([2, 3], 3, 1)", "([1, 2], 4, 1)", "([1, 2], 3, 2)", "([1, 2], 3, 1)"},
			Site: Site{Args: []string{"xs_", "factor"}, After: []string{"m = Model(by=by_)", "print(m.total)"}, Returns: "m.total",
				Class:   "class Model:\n    xs = <the call>\n\n    def __init__(self, by):\n        self.total = sum(self.xs) + by",
				Repeats: true,
				Prints:  true, Around: "class", Effect: true, Want: "10\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		name: "a call in a class's Annotated metadata, its behaviour shown by a try that prints the error",
		api:  apiScale,
		ex: fenced("docs/model.md#fenced-2",
			"from typing import Annotated", "",
			"from fixpkg import scale", "",
			"class Model:\n    x: Annotated[list, scale([1], 2)]", "",
			"try:\n    Model.check([1, 'a'])\nexcept ValueError as e:\n    print(e)", ""),
		want: map[string]Task{Easy: {
			Prelude:   "from typing import Annotated",
			Signature: "def solve(xs, factor, arg3):",
			Reference: "from fixpkg import scale\nclass Model:\n    x: Annotated[list, scale(xs, factor)]\nprinted = []\ntry:\n    Model.check(arg3)\nexcept ValueError as e:\n    printed.append(e)\nreturn printed",
			Inputs:    []string{"([1], 2, [1, 'a'])", "([2], 2, [1, 'a'])", "([1], 3, [1, 'a'])", "([1], 2, [2, 'ax'])", "([1], 2, [1, 'a'])"},
			Site: Site{Args: []string{"xs", "factor"}, After: []string{"try:\n    Model.check(arg3)\nexcept ValueError as e:\n    print(e)"}, Returns: "printed",
				Class:    "class Model:\n    x: Annotated[list, <the call>]",
				Repeats:  true,
				Collects: true, Around: "class", Shows: "try", Effect: true},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		name: "a class span: data set up after the class that a step computing from it reads goes into the body",
		api:  apiScale,
		ex: fenced("docs/model.md#fenced-3",
			"from fixpkg import scale", "",
			"class Model:\n    xs = scale([1], 2)", "",
			"extra = [3]", "",
			"ys = Model.xs + extra", "",
			"print(ys)", "[2, 3]\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve(xs_, factor):",
			Reference: "from fixpkg import scale\nclass Model:\n    xs = scale(xs_, factor)\nextra = [3]\nys = Model.xs + extra\nreturn ys",
			Inputs:    []string{"([1], 2)", "([2], 2)", "([1], 3)", "([1], 2)"},
			Site: Site{Args: []string{"xs_", "factor"}, After: []string{"extra = [3]", "ys = Model.xs + extra", "print(ys)"}, Returns: "ys",
				Class:   "class Model:\n    xs = <the call>",
				Repeats: true,
				Prints:  true, Around: "class", Effect: true, Want: "[2, 3]\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		name:    "a call in a function the example defines",
		api:     apiScale,
		ex:      fenced("docs/def.md#fenced-1", "from fixpkg import scale", "", "def f():\n    return scale([1], 2)", "", "print(f())", "[2]\n"),
		skipped: map[string]string{"": "runs only when called"},
	},
	{
		// A perturbed input the call refuses would leave ys unbound:
		// the reference's UnboundLocalError would be the expectation.
		name: "a try that prints nothing, its result assigned in the body but not in a handler",
		api:  apiScale,
		ex: doctest("docs/try.md", "",
			"from fixpkg import scale", "",
			"try:\n    ys = scale([1], 2)\nexcept ValueError as err:\n    msg = str(err)", "",
			"ys", "[2]\n"),
		skipped: map[string]string{"": "assigns no variable in its body and every handler"},
	},
	{
		// A handler that re-raises leaves no path on which ys is unbound.
		name: "a try that prints nothing, its result assigned in the body, its handler re-raising",
		api:  apiScale,
		ex: doctest("docs/try.md", "",
			"from fixpkg import scale", "",
			"try:\n    ys = scale([1], 2)\nexcept ValueError as err:\n    msg = str(err)\n    raise", "",
			"ys", "[2]\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve(xs, factor):",
			Reference: "from fixpkg import scale\ntry:\n    ys = scale(xs, factor)\nexcept ValueError as err:\n    msg = str(err)\n    raise\nreturn ys",
			Inputs:    []string{"([1], 2)", "([2], 2)", "([1], 3)"},
			Site:      Site{Args: []string{"xs", "factor"}, Returns: "ys", Around: "try", Want: "[2]\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		// The class calls the target again: that call is quoted with the
		// target's name hidden, its arguments shown.
		name: "a class span calling the target twice: the other call is quoted as <it>(...)",
		api:  apiScale,
		ex: fenced("docs/model.md#fenced-6",
			"from fixpkg import scale", "",
			"class Model:\n    xs = scale([1], 2)\n    ys: list = scale([3], 4)", "",
			"print(Model.xs + Model.ys)", "[2, 12]\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve(xs_, factor, arg3, arg4):",
			Reference: "from fixpkg import scale\nclass Model:\n    xs = scale(xs_, factor)\n    ys: list = scale(arg3, arg4)\nreturn Model.xs + Model.ys",
			Inputs:    []string{"([1], 2, [3], 4)", "([2], 2, [3], 4)", "([1], 3, [3], 4)", "([1], 2, [4], 4)", "([1], 2, [3], 5)", "([1], 2, [3], 4)"},
			Site: Site{Args: []string{"xs_", "factor"}, After: []string{"print(Model.xs + Model.ys)"}, Returns: "Model.xs + Model.ys",
				Class:   "class Model:\n    xs = <the call>\n    ys: list = <it>(arg3, arg4)",
				Repeats: true,
				Prints:  true, Around: "class", Effect: true, Want: "[2, 12]\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		// The class names the target under an alias without calling it
		// (partial(T, ...), a decorator-style wrap): each such reference
		// is quoted as <it>, the alias kept for the leak check.
		name: "a class span naming the target's alias uncalled: each reference is quoted as <it>",
		api:  apiScale,
		ex: fenced("docs/model.md#fenced-7",
			"from fixpkg import scale as T\nimport functools", "",
			"class Model:\n    xs = T([1], 2)\n    f = functools.partial(T, factor=3)\n    g = staticmethod(T)", "",
			"print(Model.xs + Model.f([1]))", "[2, 3]\n"),
		want: map[string]Task{Easy: {
			Prelude:   "import functools",
			Signature: "def solve(xs_, factor, arg3):",
			Reference: "from fixpkg import scale as T\nclass Model:\n    xs = T(xs_, factor)\n    f = functools.partial(T, factor=3)\n    g = staticmethod(T)\nreturn Model.xs + Model.f(arg3)",
			Inputs:    []string{"([1], 2, [1])", "([2], 2, [1])", "([1], 3, [1])", "([1], 2, [2])", "([1], 2, [1])"},
			Site: Site{Args: []string{"xs_", "factor"}, After: []string{"print(Model.xs + Model.f(arg3))"}, Returns: "Model.xs + Model.f(arg3)",
				Class:   "class Model:\n    xs = <the call>\n    f = functools.partial(<it>, factor=3)\n    g = staticmethod(<it>)",
				Aliases: []string{"T"}, Repeats: true,
				Prints: true, Around: "class", Effect: true, Want: "[2, 3]\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		// A method reads base when called, after the class: the step
		// binding it is needed though it does not read the class.
		name: "a class span: a name its method reads, bound after the class, goes into the body",
		api:  apiScale,
		ex: fenced("docs/model.md#fenced-4",
			"from fixpkg import scale", "",
			"class Model:\n    xs = scale([1], 2)\n\n    def total(self):\n        return sum(self.xs) + base", "",
			"base = 10", "",
			"print(Model().total())", "12\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve(xs_, factor):",
			Reference: "from fixpkg import scale\nclass Model:\n    xs = scale(xs_, factor)\n\n    def total(self):\n        return sum(self.xs) + base\nbase = 10\nreturn Model().total()",
			Inputs:    []string{"([1], 2)", "([2], 2)", "([1], 3)", "([1], 2)"},
			Site: Site{Args: []string{"xs_", "factor"}, After: []string{"base = 10", "print(Model().total())"}, Returns: "Model().total()",
				Class:   "class Model:\n    xs = <the call>\n\n    def total(self):\n        return sum(self.xs) + base",
				Repeats: true,
				Prints:  true, Around: "class", Effect: true, Want: "12\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		// The class reads base when defined (5) and its method when
		// called (10): both bindings are solve's, in the example's order.
		name: "a class span: a name the class reads, bound before and rebound after it, moves into the body",
		api:  apiScale,
		ex: fenced("docs/model.md#fenced-5",
			"from fixpkg import scale", "",
			"base = 5", "",
			"class Model:\n    xs = scale([1], base)\n\n    def total(self):\n        return sum(self.xs) + base", "",
			"base = 10", "",
			"print(Model().total())", "15\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve(xs_):",
			Reference: "from fixpkg import scale\nbase = 5\nclass Model:\n    xs = scale(xs_, base)\n\n    def total(self):\n        return sum(self.xs) + base\nbase = 10\nreturn Model().total()",
			Inputs:    []string{"([1],)", "([2],)", "([1],)"},
			Site: Site{Args: []string{"xs_", "base"}, Setup: []string{"base = 5"}, After: []string{"base = 10", "print(Model().total())"}, Returns: "Model().total()",
				Class:   "class Model:\n    xs = <the call>\n\n    def total(self):\n        return sum(self.xs) + base",
				Repeats: true,
				Prints:  true, Around: "class", Effect: true, Want: "15\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		name: "a call in a try statement: the try is the span, what it prints the result",
		api:  apiScale,
		ex: fenced("docs/try.md#fenced-1",
			"from fixpkg import scale", "",
			"try:\n    print(scale([1], 2))\nexcept TypeError as e:\n    print('refused', e)", "[2]\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve(xs, factor):",
			Reference: "from fixpkg import scale\nprinted = []\ntry:\n    printed.append(scale(xs, factor))\nexcept TypeError as e:\n    printed.append(('refused', e))\nreturn printed",
			Inputs:    []string{"([1], 2)", "([2], 2)", "([1], 3)"},
			Site:      Site{Args: []string{"xs", "factor"}, Returns: "printed", Collects: true, Around: "try", Want: "[2]\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		name: "a call in an if statement that prints nothing: the variables both branches assign",
		api:  apiScale,
		ex: doctest("docs/if.md", "",
			"from fixpkg import scale", "",
			"if len('ab') > 1:\n    ys = scale([1], 2)\nelse:\n    ys = []", "",
			"ys", "[2]\n"),
		want: map[string]Task{Easy: {
			Signature: "def solve(xs, factor):",
			Reference: "from fixpkg import scale\nif len('ab') > 1:\n    ys = scale(xs, factor)\nelse:\n    ys = []\nreturn ys",
			Inputs:    []string{"([1], 2)", "([2], 2)", "([1], 3)"},
			Site:      Site{Args: []string{"xs", "factor"}, Returns: "ys", Around: "if", Want: "[2]\n"},
		}},
		skipped: map[string]string{Medium: "no data", Hard: "nothing else"},
	},
	{
		name:    "an if statement only one branch of which assigns",
		api:     apiScale,
		ex:      doctest("docs/if.md", "", "from fixpkg import scale", "", "if True:\n    ys = scale([1], 2)", "", "ys", "[2]\n"),
		skipped: map[string]string{"": "on both branches"},
	},
	{
		name:    "a step that does not parse",
		api:     apiScale,
		ex:      doctest("docs/null.md", "", "scale([1],\x00 2)", "[2]\n"),
		skipped: map[string]string{"": "step 1 does not parse"},
	},
	{
		name:    "the target only in the expected output",
		api:     apiScale,
		ex:      doctest("docs/faq.md", "", "import fixpkg", "", "fixpkg.shift.__doc__", "'see scale'\n"),
		skipped: map[string]string{"": "only in the expected output"},
	},
	{
		name:    "no step calls the target",
		api:     apiScale,
		ex:      doctest("docs/other.md", "", "import fixpkg", "", "fixpkg.shift([1])", "[2]\n"),
		skipped: map[string]string{"": "no step calls"},
	},
	{
		name: "a side effect a later step shows",
		api:  apiCounter,
		ex:   doctest("fixpkg._impl:Counter.add", "fixpkg._impl", "c = Counter()", "", "c.add(2)", "", "c.total", "2\n"),
		want: map[string]Task{
			Easy: {
				Signature: "def solve(n):",
				Reference: "from fixpkg._impl import Counter\nc = Counter()\nc.add(n)\nreturn c.total",
				Inputs:    []string{"(2,)", "(3,)"},
				Site:      Site{Args: []string{"n"}, Recv: "c", Setup: []string{"c = Counter()"}, Returns: "c.total", Effect: true, Want: "2\n"},
			},
			Hard: {
				Signature: "def solve(n):",
				Reference: "from fixpkg._impl import Counter\nc = Counter()\nc.add(n)\nreturn c.total",
				Inputs:    []string{"(2,)", "(3,)"},
				Site:      Site{Args: []string{"n"}, Recv: "c", Returns: "c.total", Want: "2\n"},
			},
		},
		skipped: map[string]string{Medium: "no data"},
	},
	{
		name:    "a call with a side effect only",
		api:     apiCounter,
		ex:      doctest("fixpkg._impl:Counter.add", "fixpkg._impl", "c = Counter()", "", "c.add(2)", ""),
		skipped: map[string]string{"": "side effect only"},
	},
	{
		name:    "a property",
		api:     apiSize,
		ex:      doctest("fixpkg._impl:Grid.size", "fixpkg._impl", "Grid(2).size", "4\n"),
		skipped: map[string]string{"": "property"},
	},
	{
		name:    "a result stored into an item",
		api:     apiScale,
		ex:      doctest("docs/item.md", "", "from fixpkg import scale", "", "d = {}", "", "d['k'] = scale([1], 2)", ""),
		skipped: map[string]string{"": "attribute or an item"},
	},
}

func TestCutBuildsGradedTasksFromDoctests(t *testing.T) {
	py := python(t)
	for _, c := range cutCases {
		t.Run(c.name, func(t *testing.T) {
			tasks, skipped, err := Cut(context.Background(), py, c.api, c.ex)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Task{}
			for _, task := range tasks {
				got[task.Difficulty] = task
				if task.Example != c.ex.Name || task.Target.ID != c.api.ID || !reflect.DeepEqual(task.Target.Paths, c.api.Paths) {
					t.Errorf("%s: example %q, target %+v", task.Difficulty, task.Example, task.Target)
				}
				if err := task.Validate(); err != nil {
					t.Errorf("%s: %v", task.Difficulty, err)
				}
			}
			for lvl, w := range c.want {
				g, ok := got[lvl]
				if !ok {
					t.Errorf("no %s task; skipped %+v", lvl, skipped)
					continue
				}
				if g.Prelude != w.Prelude || g.Signature != w.Signature || g.Reference != w.Reference || !reflect.DeepEqual(g.Inputs, w.Inputs) {
					t.Errorf("%s task:\nprelude %q\nsignature %q\nreference %q\ninputs %q\nwant\nprelude %q\nsignature %q\nreference %q\ninputs %q",
						lvl, g.Prelude, g.Signature, g.Reference, g.Inputs, w.Prelude, w.Signature, w.Reference, w.Inputs)
				}
				if !reflect.DeepEqual(nilEmpty(g.Site), nilEmpty(w.Site)) {
					t.Errorf("%s site %+v, want %+v", lvl, g.Site, w.Site)
				}
			}
			for lvl := range got {
				if _, ok := c.want[lvl]; !ok {
					t.Errorf("unexpected %s task %+v", lvl, got[lvl])
				}
			}
			if len(skipped) != len(c.skipped) {
				t.Errorf("skipped %+v, want %v", skipped, c.skipped)
			}
			for _, s := range skipped {
				word, ok := c.skipped[s.Level]
				if !ok || !strings.Contains(s.Reason, word) || s.Example != c.ex.Name {
					t.Errorf("skipped %+v, want levels %v", s, c.skipped)
				}
			}
		})
	}
}

func nilEmpty(s Site) Site {
	for _, p := range []*[]string{&s.Args, &s.Data, &s.PlainData, &s.Setup, &s.After} {
		if len(*p) == 0 {
			*p = nil
		}
	}
	return s
}

func TestCutAllCountsEveryExampleOnce(t *testing.T) {
	py := python(t)
	var items []Cuttable
	tasks, noTask := 0, 0
	for _, c := range cutCases {
		items = append(items, Cuttable{API: c.api, Example: c.ex})
		tasks += len(c.want)
		if len(c.want) == 0 {
			noTask++
		}
	}
	res, err := CutAll(context.Background(), py, items)
	if err != nil {
		t.Fatal(err)
	}
	whole := 0
	for _, s := range res.Skipped {
		if s.Level == "" {
			whole++
		}
	}
	if len(res.Tasks) != tasks || whole != noTask {
		t.Errorf("%d tasks, %d examples without one; want %d and %d", len(res.Tasks), whole, tasks, noTask)
	}
}

func TestUsableInputsKeepsThoseThatTellSolutionsApart(t *testing.T) {
	val := func(v string) Expected { return Expected{Value: []byte(v), Exact: true} }
	task := Task{Inputs: []string{"(1,)", "(2,)", "(3,)", "(4,)", "(5,)"}}
	exp := Expectation{
		Expected:  []Expected{val(`{"t":"int","v":1}`), val(`{"t":"int","v":2}`), {Raises: "ValueError", Exact: true}, val(`{"t":"int","v":1}`), {Value: []byte(`{"t":"int","v":9}`)}},
		Dependent: []bool{true, false, true, true, true},
	}
	got, gexp, dropped := UsableInputs(task, exp)
	if !reflect.DeepEqual(got.Inputs, []string{"(1,)", "(2,)", "(5,)"}) || !reflect.DeepEqual(gexp.Dependent, []bool{true, false, true}) || len(gexp.Expected) != 3 {
		t.Errorf("inputs %q, dependent %v", got.Inputs, gexp.Dependent)
	}
	if len(dropped) != 2 || !strings.Contains(dropped[0], "raises ValueError") || !strings.Contains(dropped[1], "what it computes on input 0") {
		t.Errorf("dropped %q", dropped)
	}
	// Where the example's own input raises, a perturbed input that raises
	// the same is the same outcome; one that returns is kept.
	exp.Expected[0] = Expected{Raises: "ValueError", Exact: true}
	got, _, _ = UsableInputs(task, exp)
	if !reflect.DeepEqual(got.Inputs, []string{"(1,)", "(2,)", "(4,)", "(5,)"}) {
		t.Errorf("inputs %q", got.Inputs)
	}
}

func TestUsableInputsReadsTheRepeatOfAClassSpan(t *testing.T) {
	val := func(v string) Expected { return Expected{Value: []byte(v), Exact: true} }
	task := Task{Inputs: []string{"(1,)", "(2,)", "(1,)"}, Site: Site{Around: "class", Repeats: true}}
	// A second definition computes the same: the repeat goes, the rest is
	// kept as for any task.
	exp := Expectation{Expected: []Expected{val(`{"t":"int","v":1}`), val(`{"t":"int","v":2}`), val(`{"t":"int","v":1}`)}, Dependent: []bool{true, true, true}}
	got, gexp, dropped := UsableInputs(task, exp)
	if !reflect.DeepEqual(got.Inputs, []string{"(1,)", "(2,)"}) || !reflect.DeepEqual(gexp.Dependent, []bool{true, true}) || len(dropped) != 1 || !strings.Contains(dropped[0], "repeats the example's own input") || got.Site.Repeats {
		t.Errorf("same: inputs %q, dependent %v, dropped %q", got.Inputs, gexp.Dependent, dropped)
	}
	// A registry refuses the second definition: the repeat raises, the
	// other inputs and the mock pass ran on later definitions.
	exp.Expected[2] = Expected{Raises: "ValueError", Exact: true}
	got, gexp, dropped = UsableInputs(task, exp)
	if !reflect.DeepEqual(got.Inputs, []string{"(1,)"}) || !reflect.DeepEqual(gexp.Dependent, []bool{false}) || len(gexp.Expected) != 1 || len(dropped) != 2 || !strings.Contains(dropped[0], "defined again") || got.Site.Repeats {
		t.Errorf("refused: inputs %q, dependent %v, dropped %q", got.Inputs, gexp.Dependent, dropped)
	}
	// The kept input and outcome are copies: appending to them leaves the
	// caller's task and expectation as they were.
	_ = append(got.Inputs, "(9,)")
	_ = append(gexp.Expected, val(`{"t":"int","v":9}`))
	if task.Inputs[1] != "(2,)" || string(exp.Expected[1].Value) != `{"t":"int","v":2}` {
		t.Errorf("refused: appending to the result changed the caller's input %q, outcome %s", task.Inputs[1], exp.Expected[1].Value)
	}
	// Without Repeats the last input is an input like the others.
	task.Site.Repeats = false
	got, _, _ = UsableInputs(task, exp)
	if !reflect.DeepEqual(got.Inputs, []string{"(1,)", "(2,)"}) {
		t.Errorf("no repeat: inputs %q", got.Inputs)
	}
}

// TestCutRunsNoCodeOfTheEnvironment: the cut helper runs outside the
// sandbox with the environment's interpreter, so it must not start site:
// a .pth file in the environment's site-packages would run on the host.
func TestCutRunsNoCodeOfTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	venv := filepath.Join(dir, "venv")
	if out, err := exec.Command(python(t), "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		need(t, fmt.Sprintf("python -m venv: %v: %s", err, out))
	}
	site, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	if len(site) != 1 {
		t.Fatalf("site-packages of %s: %v", venv, site)
	}
	marker := filepath.Join(dir, "pth-ran")
	if err := os.WriteFile(filepath.Join(site[0], "evil.pth"), []byte("import os; open('"+marker+"', 'w').close()\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	py := filepath.Join(venv, "bin", "python")
	if err := exec.Command(py, "-I", "-c", "pass").Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the .pth file did not run with site on (%v): the test proves nothing", err)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	c := cutCases[0]
	if _, _, err := Cut(context.Background(), py, c.api, c.ex); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the cut helper started site: the environment's .pth file ran on the host")
	}
}
