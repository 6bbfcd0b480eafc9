"""Makes a source distribution's test functions standalone programs, as JSON.

Usage:
  python3 -I -S -B tests.py < {"root": DIR, "names": [NAME, ...]}

Stdlib only (ast); nothing is imported or run. Walks the test files under
DIR (test_*.py, *_test.py; hidden, __pycache__ and build directories
skipped) and, for every test function that refers to one of names (a
name it calls or loads, or an attribute it reads: chunked of
mi.chunked), builds a standalone script:

  - a pytest function's body, a unittest.TestCase method's body with its
    self.assert* calls made plain asserts (assertEqual(a, b) becomes
    assert a == b, assertRaises(E, f, x) and the `with` form a try
    statement that raises AssertionError when E is not raised, and so
    on), setUp's `self.x = ...` assignments prepended and self.x read as
    x; pytest.raises(E, match=R) made a try statement the same way;
  - @pytest.mark.parametrize's first case (a pytest.param's values; an
    xfail-marked case passed over) assigned to its argument names;
  - a fixture of the test file or of a conftest.py beside it or above it
    (up to DIR) whose body ends in its only return, and has no yield,
    inlined as its statements and `name = value`;
  - preceded by what it uses of the module level of the files it came
    from (imports pruned to the names used, functions, classes and
    assignments, transitively), in the files' order.

A test it cannot make standalone is counted in "skipped" by reason: a
relative import or one of the test tree's own modules, a name it cannot
resolve (a fixture it cannot inline, pytest's own), self used otherwise
than setUp's attributes, pytest used otherwise than above, an xfail or
skip mark, a decorator other than pytest's marks, a return or yield in
its body, an async test. Output:

  {"examples": [{"name": "tests/test_x.py::Case::test_y", "file":
   "tests/test_x.py", "code": program, "steps": [{"source", "want": "",
   "line", "calls"}], "refs": [names]}], "skipped": {reason: count}}

where steps are the program's top-level statements and refs every name
the program loads or reads as an attribute, sorted (what ties it to the
APIs it exercises).
"""

import ast
import builtins
import copy
import json
import os
import re
import sys

TEST_FILE = re.compile(r"^(test_.*|.*_test)\.py$")
SKIP_DIRS = {"__pycache__", "build", "dist", "node_modules", "site-packages"}
BUILTINS = set(dir(builtins)) | {"__name__", "__doc__"}


class NotStandalone(Exception):
    pass


def is_name(node, *ids):
    return isinstance(node, ast.Name) and node.id in ids


def dotted(node):
    """a.b.c of an attribute chain, or ""."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def refs_of(node):
    """The names node loads and the attributes it reads."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
    return out


def bound_names(nodes):
    """Every name nodes bind anywhere (assignments, definitions, imports,
    parameters, loop and comprehension targets, except handlers): an
    over-approximation of their locals."""
    out = set()
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(n.name)
            elif isinstance(n, ast.arg):
                out.add(n.arg)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                for a in n.names:
                    out.add((a.asname or a.name).split(".")[0])
            elif isinstance(n, ast.ExceptHandler) and n.name:
                out.add(n.name)
            elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
                out.add(n.name)
    return out


def free_names(nodes, extra_bound=()):
    loads = set()
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                loads.add(n.id)
    return loads - bound_names(nodes) - set(extra_bound) - BUILTINS


def top_bound(st):
    """The module-level names statement st binds."""
    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {st.name}
    if isinstance(st, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in st.names if a.name != "*"}
    out = set()
    for n in ast.walk(st):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in n.names if a.name != "*"}
    if isinstance(st, (ast.If, ast.Try, ast.With)):
        for n in ast.walk(st):
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
                out.add(n.name)
    return out


def fixture_of(fn):
    """(name, decorator) when fn is a pytest fixture, else None."""
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if dotted(target) in ("pytest.fixture", "fixture"):
            name = fn.name
            if isinstance(d, ast.Call):
                for kw in d.keywords:
                    if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                        name = kw.value.value
            return name
    return None


class Module:
    """One source file's module level."""

    def __init__(self, rel, src, tree, order):
        self.rel, self.src, self.tree, self.order = rel, src, tree, order
        self.lines = src.split("\n")
        self.defs = {}  # name -> [statement index]
        self.fixtures = {}  # fixture name -> FunctionDef
        self.future = []
        for i, st in enumerate(tree.body):
            if isinstance(st, ast.ImportFrom) and st.module == "__future__":
                self.future.append(st)
                continue
            if isinstance(st, ast.FunctionDef):
                fx = fixture_of(st)
                if fx:
                    self.fixtures[fx] = st
                    continue
            for name in top_bound(st):
                self.defs.setdefault(name, []).append(i)

    def segment(self, st):
        start = min([st.lineno] + [d.lineno for d in getattr(st, "decorator_list", [])])
        return "\n".join(self.lines[start - 1:st.end_lineno]) + "\n"


def local_module(name, test_tops):
    top = name.split(".")[0]
    return top in test_tops or top == "conftest"


class Program:
    """What a test needs of its files' module levels, gathered by name."""

    def __init__(self, modules, test_tops):
        self.modules = modules  # nearest first: the test file, then conftests up
        self.test_tops = test_tops
        self.taken = {}  # (module order, index) -> statement text
        self.imports = {}  # (module order, index) -> set of names kept
        self.future = set()
        self.extra_imports = set()  # "import re", for rewritten asserts

    def need(self, names, start=0):
        """Gathers the definitions of names, searching the modules from
        start (a conftest's own names resolve in it and above)."""
        work = [(n, start) for n in sorted(names)]
        seen = set()
        while work:
            name, k = work.pop()
            if (name, k) in seen:
                continue
            seen.add((name, k))
            for j in range(k, len(self.modules)):
                m = self.modules[j]
                if name in m.defs:
                    for f in m.future:
                        self.future.add(ast.unparse(f))
                    for i in m.defs[name]:
                        st = m.tree.body[i]
                        key = (m.order, i)
                        if isinstance(st, (ast.Import, ast.ImportFrom)):
                            self.check_import(st)
                            self.imports.setdefault(key, set()).add(name)
                            continue
                        if key in self.taken:
                            continue
                        for n in ast.walk(st):
                            if isinstance(n, (ast.Import, ast.ImportFrom)):
                                self.check_import(n)
                        self.taken[key] = m.segment(st)
                        work.extend((n, j) for n in sorted(free_names([st])))
                    break
            else:
                raise NotStandalone("undefined name")

    def check_import(self, st):
        if isinstance(st, ast.ImportFrom):
            if st.level:
                raise NotStandalone("relative import")
            if st.module and local_module(st.module, self.test_tops):
                raise NotStandalone("imports the test tree")
        else:
            for a in st.names:
                if local_module(a.name, self.test_tops):
                    raise NotStandalone("imports the test tree")

    def preamble(self):
        """The program's head: its imports, a blank line, the definitions
        it uses, a blank line (nothing for a part it has none of)."""
        items = []
        for (order, i), names in self.imports.items():
            st = copy.deepcopy(self.module_by_order(order).tree.body[i])
            st.names = [a for a in st.names if (a.asname or a.name).split(".")[0] in names]
            items.append(((-order, i), ast.unparse(st) + "\n"))
        for (order, i), text in self.taken.items():
            items.append(((-order, i), text))
        items.sort()
        imports, defs, seen = [], [], set()
        for line in sorted(self.future) + sorted(self.extra_imports):
            imports.append(line + "\n")
            seen.add(line + "\n")
        for (order, i), text in items:
            if text in seen:  # the same import in a conftest and the test file
                continue
            seen.add(text)
            if (order, i) in self.imports:
                imports.append(text)
            else:
                defs.append(text)
        return [part + "\n" for part in ("".join(imports), "".join(defs)) if part]

    def module_by_order(self, order):
        for m in self.modules:
            if m.order == order:
                return m
        raise KeyError(order)


ASSERT_OPS = {
    "assertEqual": ast.Eq, "assertEquals": ast.Eq, "assertListEqual": ast.Eq, "assertTupleEqual": ast.Eq,
    "assertDictEqual": ast.Eq, "assertSetEqual": ast.Eq, "assertSequenceEqual": ast.Eq,
    "assertMultiLineEqual": ast.Eq, "assertNotEqual": ast.NotEq, "assertNotEquals": ast.NotEq,
    "assertIs": ast.Is, "assertIsNot": ast.IsNot, "assertIn": ast.In, "assertNotIn": ast.NotIn,
    "assertGreater": ast.Gt, "assertGreaterEqual": ast.GtE, "assertLess": ast.Lt, "assertLessEqual": ast.LtE,
}


def expected_raise(exc, body, regex, prog, bind=None):
    """try: body / except exc [as e]: [assert re.search(regex, str(e))]
    [bind = e] / else: raise AssertionError."""
    handler_body = []
    name = None
    if regex is not None or bind:
        name = "exc" if bind != "exc" else "error"
    if regex is not None:
        prog.extra_imports.add("import re")
        search = ast.Call(ast.Attribute(ast.Name("re", ast.Load()), "search", ast.Load()),
                          [regex, ast.Call(ast.Name("str", ast.Load()), [ast.Name(name, ast.Load())], [])], [])
        handler_body.append(ast.Assert(search, None))
    if bind:
        handler_body.append(ast.Assign([ast.Name(bind, ast.Store())], ast.Name(name, ast.Load()), lineno=0))
    handler_body = handler_body or [ast.Pass()]
    label = ast.unparse(exc)
    fail = ast.Raise(ast.Call(ast.Name("AssertionError", ast.Load()), [ast.Constant("%s not raised" % label)], []), None)
    return ast.Try(body=body, handlers=[ast.ExceptHandler(exc, name, handler_body)], orelse=[fail], finalbody=[])


class Rewriter(ast.NodeTransformer):
    """Makes unittest's assertions and pytest.raises plain Python, and
    reads setUp's self attributes as names."""

    def __init__(self, prog, self_name, attrs, raised):
        self.prog, self.self_name, self.attrs = prog, self_name, attrs
        self.raised = raised  # {name: its exception's attribute} of `with ... as name`

    def is_self_call(self, call, *methods):
        f = call.func
        return (self.self_name and isinstance(f, ast.Attribute) and is_name(f.value, self.self_name)
                and (not methods or f.attr in methods))

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and self.raised.get(node.value.id) == node.attr:
            return ast.copy_location(ast.Name(node.value.id, node.ctx), node)
        if self.self_name and is_name(node.value, self.self_name) and node.attr in self.attrs:
            return ast.copy_location(ast.Name(node.attr, node.ctx), node)
        return self.generic_visit(node)

    def visit_Expr(self, node):
        call = node.value
        if not isinstance(call, ast.Call):
            return self.generic_visit(node)
        if self.is_self_call(call):
            return self.unittest_call(node, call)
        if dotted(call.func) == "pytest.raises" and len(call.args) > 1:
            exc, f, args = call.args[0], call.args[1], call.args[2:]
            body = [ast.Expr(ast.Call(f, args, call.keywords))]
            return ast.copy_location(expected_raise(exc, body, None, self.prog), node)
        return self.generic_visit(node)

    def unittest_call(self, node, call):
        m = call.func.attr
        args = [self.visit(a) for a in call.args]
        kw = {k.arg: self.visit(k.value) for k in call.keywords}
        loc = lambda st: ast.copy_location(st, node)
        if m in ASSERT_OPS and len(args) >= 2:
            return loc(ast.Assert(ast.Compare(args[0], [ASSERT_OPS[m]()], [args[1]]), None))
        if m in ("assertTrue", "assert_") and args:
            return loc(ast.Assert(args[0], None))
        if m == "assertFalse" and args:
            return loc(ast.Assert(ast.UnaryOp(ast.Not(), args[0]), None))
        if m in ("assertIsNone", "assertIsNotNone") and args:
            op = ast.Is() if m == "assertIsNone" else ast.IsNot()
            return loc(ast.Assert(ast.Compare(args[0], [op], [ast.Constant(None)]), None))
        if m in ("assertIsInstance", "assertNotIsInstance") and len(args) >= 2:
            test = ast.Call(ast.Name("isinstance", ast.Load()), args[:2], [])
            return loc(ast.Assert(test if m == "assertIsInstance" else ast.UnaryOp(ast.Not(), test), None))
        if m in ("assertAlmostEqual", "assertNotAlmostEqual") and len(args) >= 2:
            diff = ast.Call(ast.Name("abs", ast.Load()), [ast.BinOp(args[0], ast.Sub(), args[1])], [])
            if "delta" in kw:
                test = ast.Compare(diff, [ast.LtE()], [kw["delta"]])
            else:
                places = args[2] if len(args) > 2 else kw.get("places", ast.Constant(7))
                test = ast.Compare(ast.Call(ast.Name("round", ast.Load()), [diff, places], []), [ast.Eq()], [ast.Constant(0)])
            return loc(ast.Assert(test if m == "assertAlmostEqual" else ast.UnaryOp(ast.Not(), test), None))
        if m in ("assertRaises", "assertRaisesRegex", "assertRaisesRegexp"):
            regex = None
            if m != "assertRaises":
                if len(args) < 2:
                    raise NotStandalone("self used otherwise")
                regex, args = args[1], [args[0]] + args[2:]
            if len(args) < 2:
                raise NotStandalone("self used otherwise")
            body = [ast.Expr(ast.Call(args[1], args[2:], [ast.keyword(k, v) for k, v in kw.items()]))]
            return loc(expected_raise(args[0], body, regex, self.prog))
        if m == "fail":
            return loc(ast.Raise(ast.Call(ast.Name("AssertionError", ast.Load()), args[:1], []), None))
        raise NotStandalone("self used otherwise")

    def visit_With(self, node):
        if len(node.items) != 1:
            return self.generic_visit(node)
        item = node.items[0]
        call = item.context_expr
        if not isinstance(call, ast.Call):
            return self.generic_visit(node)
        body = [self.visit(s) for s in node.body]
        body = [s for s in body if s is not None]
        if self.is_self_call(call, "subTest"):
            return body
        regex = None
        if self.is_self_call(call, "assertRaises", "assertRaisesRegex", "assertRaisesRegexp"):
            if call.func.attr != "assertRaises":
                if len(call.args) < 2:
                    raise NotStandalone("self used otherwise")
                regex = self.visit(call.args[1])
        elif dotted(call.func) == "pytest.raises":
            for k in call.keywords:
                if k.arg == "match":
                    regex = self.visit(k.value)
                elif k.arg != "expected_exception":
                    raise NotStandalone("pytest used otherwise")
        else:
            node.items = [self.visit(i) for i in node.items]
            node.body = body
            return node
        bind = None
        if item.optional_vars is not None:
            # exc_info.value (pytest), cm.exception (unittest) read as the
            # exception itself: build checked that the name has no other use.
            if not isinstance(item.optional_vars, ast.Name) or item.optional_vars.id not in self.raised:
                raise NotStandalone("uses the raised exception")
            bind = item.optional_vars.id
        if not call.args:
            raise NotStandalone("pytest used otherwise")
        return ast.copy_location(expected_raise(self.visit(call.args[0]), body, regex, self.prog, bind), node)


class Globals(ast.NodeTransformer):
    """Makes `nonlocal x` global where x was the test function's local,
    which the program's top level now binds."""

    def __init__(self):
        self.scopes = []  # the bound names of each enclosing function

    def visit_FunctionDef(self, node):
        self.scopes.append(bound_names(node.body) | {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)})
        self.generic_visit(node)
        self.scopes.pop()
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Nonlocal(self, node):
        outer = set().union(*self.scopes[:-1]) if len(self.scopes) > 1 else set()
        top = [n for n in node.names if n not in outer]
        if not top:
            return node
        rest = [n for n in node.names if n in outer]
        out = [ast.copy_location(ast.Global(top), node)]
        if rest:
            out.append(ast.copy_location(ast.Nonlocal(rest), node))
        return out


def raised_names(body, self_name):
    """{name: attribute} of body's `with pytest.raises(...) as name`
    (attribute value) and `with self.assertRaises...(...) as name`
    (exception) whose name is used only as name.attribute, besides the
    with statement itself."""
    cands = {}
    for n in ast.walk(ast.Module(body, [])):
        if isinstance(n, ast.With) and len(n.items) == 1 and isinstance(n.items[0].optional_vars, ast.Name):
            call = n.items[0].context_expr
            if not isinstance(call, ast.Call):
                continue
            f = call.func
            if dotted(f) == "pytest.raises":
                cands[n.items[0].optional_vars.id] = "value"
            elif self_name and isinstance(f, ast.Attribute) and is_name(f.value, self_name) and f.attr.startswith("assertRaises"):
                cands[n.items[0].optional_vars.id] = "exception"
    if not cands:
        return {}
    ok = dict(cands)
    bases = set()
    for n in ast.walk(ast.Module(body, [])):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and cands.get(n.value.id) == n.attr:
            bases.add(id(n.value))
    for n in ast.walk(ast.Module(body, [])):
        if isinstance(n, ast.Name) and n.id in ok and isinstance(n.ctx, ast.Load) and id(n) not in bases:
            del ok[n.id]  # exc_info.match(...), exc_info.type: not rewritten
    return ok


def has_return_or_yield(body):
    """Whether body returns or yields at its own level (not in a nested
    function or class)."""
    work = list(body)
    while work:
        n = work.pop()
        if isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await)):
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        work.extend(ast.iter_child_nodes(n))
    return False


def strip_docstring(body):
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def first_case(dec):
    """[(argname, value node)] of a parametrize decorator's first usable case."""
    if len(dec.args) < 2:
        raise NotStandalone("parametrize without cases")
    names, values = dec.args[0], dec.args[1]
    if isinstance(names, ast.Constant) and isinstance(names.value, str):
        argnames = [s.strip() for s in names.value.split(",") if s.strip()]
    elif isinstance(names, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) for e in names.elts):
        argnames = [e.value for e in names.elts]
    else:
        raise NotStandalone("parametrize not literal")
    if not isinstance(values, (ast.List, ast.Tuple)):
        raise NotStandalone("parametrize not literal")
    for case in values.elts:
        if isinstance(case, ast.Call) and dotted(case.func) == "pytest.param":
            marks = [k.value for k in case.keywords if k.arg == "marks"]
            if any("xfail" in ast.unparse(mk) or "skip" in ast.unparse(mk) for mk in marks):
                continue
            vals = case.args
        elif len(argnames) == 1:
            vals = [case]
        elif isinstance(case, (ast.Tuple, ast.List)):
            vals = case.elts
        else:
            raise NotStandalone("parametrize not literal")
        if len(vals) != len(argnames) or any(isinstance(v, ast.Starred) for v in vals):
            raise NotStandalone("parametrize not literal")
        return list(zip(argnames, vals))
    raise NotStandalone("parametrize without cases")


def marks(fn, params):
    """The parametrized arguments' first values; raises for a mark or
    decorator that stops the test being a plain program."""
    out = []
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = dotted(target)
        if name in ("pytest.mark.parametrize", "mark.parametrize"):
            out.extend(first_case(d))
        elif name in ("pytest.mark.xfail", "pytest.mark.skip", "unittest.skip", "skip", "unittest.expectedFailure", "expectedFailure"):
            raise NotStandalone("marked xfail or skip")
        elif name.startswith("pytest.mark.") or name in ("skipIf", "skipUnless", "unittest.skipIf", "unittest.skipUnless"):
            continue  # skipif, filterwarnings, ...: validation says whether it runs
        else:
            raise NotStandalone("decorated")
    return out


def class_setup(cls, self_name):
    """setUp's statements with self.x read as x, and the attribute names,
    when setUp only assigns attributes of self; raises otherwise."""
    for st in cls.body:
        if isinstance(st, ast.FunctionDef) and st.name in ("setUpClass", "setup_class", "setup_method", "tearDown", "teardown_method", "asyncSetUp"):
            raise NotStandalone("class set-up")
    setup = next((st for st in cls.body if isinstance(st, ast.FunctionDef) and st.name == "setUp"), None)
    if setup is None:
        return [], set()
    attrs = set()
    body = []
    for st in strip_docstring(setup.body):
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and ast.unparse(st.value.func).endswith("setUp"):
            continue  # super().setUp()
        for n in ast.walk(st):
            if isinstance(n, ast.Attribute) and is_name(n.value, self_name) and isinstance(n.ctx, ast.Store):
                attrs.add(n.attr)
        body.append(st)
    return body, attrs


def build(fn, cls, modules, prog, test_tops):
    """The standalone program of test fn (a method of cls, or None)."""
    if isinstance(fn, ast.AsyncFunctionDef):
        raise NotStandalone("async")
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    self_name = params.pop(0) if cls is not None and params else None
    cases = marks(fn, params)
    if cls is not None:
        for d in cls.decorator_list:
            name = dotted(d.func if isinstance(d, ast.Call) else d)
            if not name.startswith("pytest.mark.") or name in ("pytest.mark.xfail", "pytest.mark.skip"):
                raise NotStandalone("decorated")
    setup, attrs = class_setup(cls, self_name) if cls is not None else ([], set())
    body = strip_docstring(fn.body)
    used = {n.attr for n in ast.walk(ast.Module(body, [])) if isinstance(n, ast.Attribute) and is_name(n.value, self_name)}
    if not used & attrs:
        setup = []  # setUp sets nothing the test reads
    if has_return_or_yield(body):
        raise NotStandalone("returns or yields")
    rw = Rewriter(prog, self_name, attrs, raised_names(body, self_name))
    pre = []
    for name, value in cases:
        pre.append(ast.Assign([ast.Name(name, ast.Store())], value, lineno=0))
    given = {name for name, _ in cases}
    fixtures = []
    for p in params:
        if p not in given:
            fixtures.append(p)
    # Fixtures (and the fixtures they take), innermost first.
    fx_stmts, fx_done = [], set()

    def inline(name, depth=0):
        if name in fx_done:
            return
        if depth > 8:
            raise NotStandalone("fixture")
        for k, m in enumerate(modules):
            fn_ = m.fixtures.get(name)
            if fn_ is None:
                continue
            args = [a.arg for a in fn_.args.posonlyargs + fn_.args.args + fn_.args.kwonlyargs]
            if fn_.args.vararg or fn_.args.kwarg:
                raise NotStandalone("fixture")
            for a in args:
                inline(a, depth + 1)
            fbody = strip_docstring(fn_.body)
            if not fbody or not isinstance(fbody[-1], ast.Return) or fbody[-1].value is None or has_return_or_yield(fbody[:-1]):
                raise NotStandalone("fixture")
            prog.need(free_names(fbody, args), k)
            fx_stmts.extend(fbody[:-1])
            fx_stmts.append(ast.Assign([ast.Name(name, ast.Store())], fbody[-1].value, lineno=0))
            fx_done.add(name)
            return
        raise NotStandalone("fixture")

    for name in fixtures:
        inline(name)
    program = [(st, None) for st in fx_stmts + pre]
    for st in setup + body:
        new = rw.visit(copy.deepcopy(st))
        if new is None:
            continue
        for n in new if isinstance(new, list) else [new]:
            n = Globals().visit(n)
            program.append((n, st if ast.dump(n) == ast.dump(st) else None))
    nodes = [n for n, _ in program]
    for n in ast.walk(ast.Module(nodes, [])):
        if self_name and is_name(n, self_name):
            raise NotStandalone("self used otherwise")
    free = free_names(nodes)
    if "pytest" in free:
        raise NotStandalone("pytest used otherwise")
    prog.need(free - {line.split()[-1] for line in prog.extra_imports})
    return program


def render(program, m):
    """The statements' text: as test module m writes them when unchanged
    (their original is given), else unparsed."""
    out = []
    for st, orig in program:
        if orig is not None:
            start = min([orig.lineno] + [d.lineno for d in getattr(orig, "decorator_list", [])])
            lines = m.lines[start - 1:orig.end_lineno]
            indent = len(lines[0]) - len(lines[0].lstrip())
            # A line indented less (a multi-line string's) is kept as it is.
            out.append("\n".join(l[indent:] if not l[:indent].strip() else l for l in lines) + "\n")
        else:
            out.append(ast.unparse(ast.fix_missing_locations(st)) + "\n")
    return out


def steps_of(code):
    tree = ast.parse(code)
    lines = code.split("\n")
    steps = []
    for st in tree.body:
        start = min([st.lineno] + [d.lineno for d in getattr(st, "decorator_list", [])])
        src = "\n".join(lines[start - 1:st.end_lineno]) + "\n"
        calls = []
        for n in ast.walk(st):
            if isinstance(n, ast.Call):
                f = n.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                if name:
                    calls.append(name)
        steps.append({"source": src, "want": "", "line": start, "calls": calls})
    return steps


def parse_file(root, rel, order, cache):
    if rel in cache:
        return cache[rel]
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            src = f.read()
        tree = ast.parse(src)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        cache[rel] = None
        return None
    cache[rel] = Module(rel, src, tree, order)
    return cache[rel]


def conftests(root, rel, cache):
    """The conftest.py modules from rel's directory up to root, nearest first."""
    out = []
    d = os.path.dirname(rel)
    k = 1
    while True:
        c = os.path.join(d, "conftest.py") if d else "conftest.py"
        if os.path.isfile(os.path.join(root, c)):
            m = parse_file(root, c, k, cache)
            if m is not None:
                out.append(m)
                k += 1
        if not d:
            return out
        d = os.path.dirname(d)


def tests_of(tree):
    """(function, class or None) for each test of a module."""
    for st in tree.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and st.name.startswith("test"):
            yield st, None
        elif isinstance(st, ast.ClassDef) and (st.name.startswith("Test") or st.name.endswith(("Test", "Tests")) or
                                                any(dotted(b).endswith("TestCase") for b in st.bases)):
            for f in st.body:
                if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name.startswith("test"):
                    yield f, st


def mine(root, names):
    names = set(names)
    examples, skipped = [], {}
    files = []
    tops = set()
    for dirpath, dirs, fs in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        rel_dir = os.path.relpath(dirpath, root)
        for f in sorted(fs):
            if TEST_FILE.match(f):
                rel = os.path.normpath(os.path.join(rel_dir, f)).replace(os.sep, "/")
                files.append(rel)
                tops.add(rel.split("/")[0] if "/" in rel else f[:-3])
    for rel in sorted(files):
        cache = {}
        m = parse_file(root, rel, 0, cache)
        if m is None:
            skipped["does not parse"] = skipped.get("does not parse", 0) + 1
            continue
        modules = [m] + conftests(root, rel, cache)
        for fn, cls in tests_of(m.tree):
            if not (refs_of(fn) & names):
                continue
            prog = Program(modules, tops)
            try:
                program = build(fn, cls, modules, prog, tops)
                code = "".join(prog.preamble() + render(program, m))
                compile(code, rel, "exec")
            except NotStandalone as e:
                skipped[str(e)] = skipped.get(str(e), 0) + 1
                continue
            except (SyntaxError, ValueError, RecursionError):
                skipped["does not compile"] = skipped.get("does not compile", 0) + 1
                continue
            name = rel + "::" + (cls.name + "::" if cls is not None else "") + fn.name
            refs = sorted(refs_of(ast.parse(code)))
            examples.append({"name": name, "file": rel, "code": code, "steps": steps_of(code), "refs": refs})
    return {"examples": examples, "skipped": skipped}


def main():
    req = json.load(sys.stdin)
    sys.setrecursionlimit(10000)
    print(json.dumps(mine(req["root"], req["names"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
