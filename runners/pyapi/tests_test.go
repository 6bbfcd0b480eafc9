package pyapi

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sdistFiles are a package (calc: double, Acc) and the test suite of its
// source distribution: unittest and pytest tests that can be made
// standalone, and some that cannot, each saying why.
var sdistFiles = map[string]string{
	"calc/__init__.py": `
def double(x):
    if x is None:
        raise TypeError("x must be a number")
    return 2 * x


class Acc:
    def __init__(self):
        self.total = 0

    def add(self, x):
        self.total += x
        return self
`,
	"tests/__init__.py": "",
	"tests/conftest.py": `
import pytest
import calc


@pytest.fixture
def acc():
    a = calc.Acc()
    return a.add(1)


@pytest.fixture
def opened():
    f = open("x")
    yield f
`,
	"tests/helpers.py": "TWO = 2\n",
	"tests/test_unit.py": `
from unittest import TestCase
import re
import calc
from calc import double, Acc

FOUR = 4


def twice(x):
    return double(x)


class DoubleTests(TestCase):
    """Tests for double."""

    def setUp(self):
        self.n = 2

    def test_small(self):
        """Doubles a small number."""
        self.assertEqual(double(self.n), FOUR)
        self.assertTrue(twice(1) == 2)

    def test_raises(self):
        self.assertRaises(TypeError, double, None)
        with self.assertRaisesRegex(TypeError, "must be"):
            double(None)

    def test_helper(self):
        self.check(double(1))

    def test_unrelated(self):
        self.assertEqual(1, 1)
`,
	"tests/test_py.py": `
import pytest
from calc import double, Acc
from .helpers import TWO


@pytest.mark.parametrize("x, want", [pytest.param(0, 1, marks=pytest.mark.xfail), (3, 6), (4, 8)])
def test_param(x, want):
    assert double(x) == want


def test_fixture(acc):
    assert acc.add(2).total == 3


def test_raises():
    with pytest.raises(TypeError, match="number"):
        double(None)


def test_raised():
    with pytest.raises(TypeError) as exc_info:
        double(None)
    assert "number" in str(exc_info.value)


def test_raised_matched():
    with pytest.raises(TypeError) as exc_info:
        double(None)
    exc_info.match("number")


def test_relative():
    assert double(1) == TWO


def test_yield_fixture(opened):
    assert double(1) == 2


@pytest.mark.xfail
def test_xfail():
    assert double(1) == 3


def test_fails():
    assert double(1) == 3


def test_returns():
    return double(1)
`,
}

// TestTestExamplesMakeTestsStandalonePrograms: unittest methods with
// their asserts made plain and setUp's attributes made names, pytest
// functions with parametrize's first passing case and an inlined
// conftest fixture, pytest.raises(...) as exc_info with exc_info.value
// read as the exception, each preceded by what it uses of its file
// (imports pruned); tests that cannot stand alone are counted by reason, and a
// test that names no wanted API is not looked at.
func TestTestExamplesMakeTestsStandalonePrograms(t *testing.T) {
	py := python(t)
	root := t.TempDir()
	writeTree(t, root, sdistFiles)
	exs, skipped, err := TestExamples(context.Background(), py, root, []string{"double", "add"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"tests/test_unit.py::DoubleTests::test_small": `from calc import double

FOUR = 4
def twice(x):
    return double(x)

n = 2
assert double(n) == FOUR
assert twice(1) == 2
`,
		"tests/test_unit.py::DoubleTests::test_raises": `import re
from calc import double

try:
    double(None)
except TypeError:
    pass
else:
    raise AssertionError('TypeError not raised')
try:
    double(None)
except TypeError as exc:
    assert re.search('must be', str(exc))
else:
    raise AssertionError('TypeError not raised')
`,
		"tests/test_py.py::test_param": `from calc import double

x = 3
want = 6
assert double(x) == want
`,
		"tests/test_py.py::test_fixture": `import calc

a = calc.Acc()
acc = a.add(1)
assert acc.add(2).total == 3
`,
		"tests/test_py.py::test_raises": `import re
from calc import double

try:
    double(None)
except TypeError as exc:
    assert re.search('number', str(exc))
else:
    raise AssertionError('TypeError not raised')
`,
		"tests/test_py.py::test_raised": `from calc import double

try:
    double(None)
except TypeError as exc:
    exc_info = exc
else:
    raise AssertionError('TypeError not raised')
assert 'number' in str(exc_info)
`,
		"tests/test_py.py::test_fails": `from calc import double

assert double(1) == 3
`,
	}
	got := map[string]string{}
	for _, e := range exs {
		got[e.Name] = e.Code
		if e.Origin != OriginTest || e.File != strings.SplitN(e.Name, "::", 2)[0] || e.Text != e.Code {
			t.Errorf("%s: origin %q file %q", e.Name, e.Origin, e.File)
		}
		var joined strings.Builder
		for _, s := range e.Steps {
			joined.WriteString(s.Source)
		}
		if strings.ReplaceAll(joined.String(), "\n", "") != strings.ReplaceAll(e.Code, "\n", "") {
			t.Errorf("%s: steps %+v do not make up the program", e.Name, e.Steps)
		}
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s:\n%s\nwant\n%s", name, got[name], w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected example %s:\n%s", name, got[name])
		}
	}
	wantSkipped := map[string]int{"uses the raised exception": 1, "self used otherwise": 1, "relative import": 1, "fixture": 1, "marked xfail or skip": 1, "returns or yields": 1}
	if !reflect.DeepEqual(skipped, wantSkipped) {
		t.Errorf("not standalone %v, want %v", skipped, wantSkipped)
	}
	for _, e := range exs {
		if e.Name == "tests/test_py.py::test_fixture" && !reflect.DeepEqual(e.Calls, []string{"Acc", "a", "acc", "add", "calc", "total"}) {
			t.Errorf("test_fixture's names %v", e.Calls)
		}
	}
}

// TestExecutorRunsTestProgramsAsScripts: a test made a program is valid
// when its asserts hold, and a runtime error (AssertionError) when one
// does not.
func TestExecutorRunsTestProgramsAsScripts(t *testing.T) {
	py := python(t)
	root := outsideTmp(t)
	writeTree(t, root, sdistFiles)
	x := sandboxFor(t, py, root)
	x.Limits.Wall = 30 * time.Second
	ctx := context.Background()
	exs, _, err := TestExamples(ctx, py, root, []string{"double", "add"})
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) == 0 {
		t.Fatal("no examples")
	}
	for _, e := range exs {
		v, err := x.Run(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		want := ExamplePassed
		if e.Name == "tests/test_py.py::test_fails" {
			want = ExampleRuntimeError
		}
		if v.Status != want || want == ExampleRuntimeError && !strings.Contains(v.Error, "AssertionError") {
			t.Errorf("%s: %s %s, want %s", e.Name, v.Status, v.Error, want)
		}
	}
}
