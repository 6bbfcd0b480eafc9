"""lacuna's task cutter: graded tasks from a validated doctest example.

Reads a JSON list of requests on stdin, writes a JSON list of answers on
stdout, one per request. Parsing only (ast, symtable): nothing of the
library is imported. See cut.go for the contract.
"""

import ast
import builtins
import copy
import importlib
import json
import keyword
import symtable
import sys

BUILTINS = set(dir(builtins))


class Skip(Exception):
    pass


def parse_steps(steps):
    """units: (statement, want) in order; want belongs to a step's last
    statement."""
    units = []
    for i, s in enumerate(steps):
        try:
            mod = ast.parse(s["source"])
        except (SyntaxError, ValueError) as e:  # ValueError: a null byte
            raise Skip("step %d does not parse: %s" % (i + 1, getattr(e, "msg", None) or e))
        for j, st in enumerate(mod.body):
            units.append((st, s.get("want", "") if j == len(mod.body) - 1 else ""))
    return units


def loads(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def stores(st):
    """Names a top-level statement binds."""
    out = []
    if isinstance(st, (ast.Import, ast.ImportFrom)):
        for a in st.names:
            out.append(a.asname or a.name.split(".")[0])
        return out
    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [st.name]
    for n in ast.walk(st):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.append(n.id)
    return out


def star_names(module, level):
    """The names "from module import *" binds, for a module of the standard
    library (imported here to list them: the library's own modules never
    are); none for another."""
    if level or not module or module.split(".")[0] not in getattr(sys, "stdlib_module_names", ()):
        return set()
    try:
        m = importlib.import_module(module)
    except Exception:
        return set()
    names = getattr(m, "__all__", None)
    if names is None:
        names = [n for n in dir(m) if not n.startswith("_")]
    return set(names)


def is_package_module(name, pkg):
    return name == pkg or name.startswith(pkg + ".")


class Example:
    def __init__(self, req):
        self.tg = req["target"]
        self.pkg = self.tg["package"]
        self.module = req.get("module", "")
        self.units = parse_steps(req["steps"])
        # Bindings of package objects: name -> (module, attribute or None
        # for a module), from the example's imports and, for a docstring
        # example, the module's globals it uses unbound.
        self.pkg_obj = {}
        self.pkg_mod = {}  # name -> the module it is bound to
        self.mod_lines = {}  # name -> the import statements binding it
        self.star = ""  # the package's module a star import takes names from
        self.paths = set(self.tg.get("paths") or [])
        self.globals_used = []
        self.kind = []  # per unit: "import" (of the package), "pkg", "plain"
        tainted = set()
        bound = set()
        for st, _ in self.units:
            if isinstance(st, ast.Import) and any(is_package_module(a.name, self.pkg) for a in st.names):
                for a in st.names:
                    n = a.asname or a.name.split(".")[0]
                    self.pkg_mod[n] = a.name if a.asname else n
                    line = "import " + a.name + (" as " + a.asname if a.asname else "")
                    self.mod_lines.setdefault(n, [])
                    if line not in self.mod_lines[n]:
                        self.mod_lines[n].append(line)
                    bound.add(n)
                self.kind.append("import")
                continue
            if isinstance(st, ast.ImportFrom) and st.level == 0 and st.module and is_package_module(st.module, self.pkg):
                for a in st.names:
                    if a.name == "*":
                        # Its names are known only by use: an unbound
                        # name is taken to come from it, as a docstring's
                        # from its module.
                        self.star = st.module
                        continue
                    n = a.asname or a.name
                    self.pkg_obj[n] = (st.module, a.name)
                    bound.add(n)
                self.kind.append("import")
                continue
            if isinstance(st, ast.ImportFrom) and any(a.name == "*" for a in st.names):
                bound |= star_names(st.module, st.level)
            used = loads(st)
            local = {n.id for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            local |= {a.arg for a in ast.walk(st) if isinstance(a, ast.arg)}
            if self.star or self.module:
                for n in sorted(used - bound - local - BUILTINS):
                    if n not in self.pkg_obj:
                        self.pkg_obj[n] = (self.star or self.module, n)
                        self.globals_used.append(n)
            pkgnames = set(self.pkg_obj) | set(self.pkg_mod) | tainted
            if used & pkgnames:
                self.kind.append("pkg")
                tainted.update(stores(st))
            else:
                self.kind.append("plain")
            bound.update(stores(st))

    def is_target_ref(self, f):
        """Whether the expression f names the target: for a function or a
        class, a Name or an Attribute resolving to it; for a method, its
        name as an attribute of any value but a module of the package."""
        tg = self.tg
        if tg["kind"] in ("function", "class"):
            # By the target's name, or by any path it is exported at (an
            # alias such as rescale = scale).
            if isinstance(f, ast.Name):
                b = self.pkg_obj.get(f.id)
                return b is not None and (b[1] == tg["name"] or b[0] + "." + b[1] in self.paths)
            if isinstance(f, ast.Attribute):
                parts = [f.attr]
                root = f.value
                while isinstance(root, ast.Attribute):
                    parts.append(root.attr)
                    root = root.value
                if not (isinstance(root, ast.Name) and root.id in self.pkg_mod):
                    return False
                dotted = ".".join([self.pkg_mod[root.id]] + parts[::-1])
                return f.attr == tg["name"] or dotted in self.paths
            return False
        return isinstance(f, ast.Attribute) and f.attr == tg["name"] and not (
            isinstance(f.value, ast.Name) and f.value.id in self.pkg_mod)

    def is_target_call(self, call):
        return self.is_target_ref(call.func)

    def aliases(self):
        """The names other than the target's own that the example binds
        the target to (from pkg import scale as T; a name it is exported
        at): none for a method."""
        tg = self.tg
        if tg["kind"] not in ("function", "class"):
            return []
        return sorted(n for n, b in self.pkg_obj.items()
                      if n != tg["name"] and (b[1] == tg["name"] or b[0] + "." + b[1] in self.paths))

    def target_call(self, st):
        for n in ast.walk(st):
            if isinstance(n, ast.Call) and self.is_target_call(n):
                return n
        return None

    def calls_package(self, call):
        """Whether call calls an object of the package by name (a function,
        a class) or through a module of it."""
        root = call.func
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and (root.id in self.pkg_obj or root.id in self.pkg_mod)

    def calls_class(self, call):
        """Whether call calls the class holding the target's call, or
        one of its attributes (Model(...), Model.validate(...))."""
        root = call.func
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and root.id in self.span_classes

    def aux_calls(self):
        """Whether a step calls something of the package besides the target."""
        for i, (st, _) in enumerate(self.units):
            if self.kind[i] != "pkg":
                continue
            for n in ast.walk(st):
                if isinstance(n, ast.Call) and not self.is_target_call(n):
                    f = n.func
                    root = f
                    while isinstance(root, ast.Attribute):
                        root = root.value
                    if isinstance(root, ast.Name) and (root.id in self.pkg_obj or root.id in self.pkg_mod):
                        return True
        return False


COMPOUND = (ast.For, ast.With, ast.If, ast.Try)

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
          ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def stmt_kind(st):
    """A compound statement's keyword: "for", "with", "if", "try"."""
    return type(st).__name__.lower()


def target_names(t):
    return [n.id for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


def scope_stores(node):
    """The names node binds in the scope it runs in (solve's): not those
    of the comprehensions, lambdas, functions and classes nested in it
    (a def or class binds its own name; a := in a comprehension binds in
    the enclosing scope)."""
    out = []

    def add(n):
        if n not in out:
            out.append(n)

    def walk(n):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(n.name)
            return
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            for n2 in stores(n):
                add(n2)
            return
        if isinstance(n, ast.Lambda):
            return
        if isinstance(n, SCOPES):
            for w in ast.walk(n):
                if isinstance(w, ast.NamedExpr):
                    add(w.target.id)
            return
        if isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name:
            add(n.name)
        if isinstance(n, ast.MatchMapping) and n.rest:
            add(n.rest)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            add(n.id)
        for c in ast.iter_child_nodes(n):
            walk(c)
    walk(node)
    return out


def path_bound(stmts):
    """The variables of solve's scope that statements assign whatever
    path they take: an if's on both branches, a try's finally block and
    what its body or else block assign that every handler assigns too (a
    handler ending in raise aside), a loop's or a with's blocks; never a loop's target,
    a with's "as" names or an except's name (deleted at the handler's
    end), nor names bound inside nested scopes."""
    out = []

    def add(ns):
        for n in ns:
            if n not in out:
                out.append(n)
    for s in stmts:
        if isinstance(s, ast.If):
            other = set(path_bound(s.orelse))
            add(scope_stores(s.test))  # a := in the test
            add(n for n in path_bound(s.body) if n in other)
        elif isinstance(s, ast.Try):
            # The body may raise before it assigns: a name of the body or
            # the else block is bound only when every handler that does
            # not re-raise binds it too (or solve would return it
            # unbound, the UnboundLocalError then the expected outcome).
            both = path_bound(s.body + s.orelse)
            for h in s.handlers:
                if not (h.body and isinstance(h.body[-1], ast.Raise)):
                    other = set(path_bound(h.body))
                    both = [n for n in both if n in other]
            add(both)
            add(path_bound(s.finalbody))
        elif isinstance(s, ast.While):
            add(scope_stores(s.test))
            add(path_bound(s.body + s.orelse))
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            add(path_bound(s.body + s.orelse))
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            add(path_bound(s.body))
        elif isinstance(s, ast.Match):
            continue
        else:
            add(scope_stores(s))
    return out


def blocks_stores(st):
    """The variables a compound statement's blocks assign whatever path
    it takes (path_bound)."""
    return path_bound([st])


def read_first(st):
    """The names st reads before it binds them, in the order it runs
    (a for's iterable before its target, an assignment's value before its
    targets, a with's expression before its "as" names), and every
    augmented assignment's target: the names solve would read unbound if
    st bound them in solve's scope and the statement binding them before
    stayed in the prelude."""
    bound, out = set(), set()

    def read(names):
        out.update(n for n in names if n not in bound)

    def expr(e):
        if e is None:
            return
        if isinstance(e, ast.Lambda):
            read(loads(e) - {a.arg for a in ast.walk(e.args) if isinstance(a, ast.arg)})
            return
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            own = set()
            for g in e.generators:
                own |= set(target_names(g.target))
            read(loads(e) - own)
            bound.update(w.target.id for w in ast.walk(e) if isinstance(w, ast.NamedExpr))
            return
        if isinstance(e, ast.NamedExpr):
            expr(e.value)
            bound.add(e.target.id)
            return
        if isinstance(e, (ast.MatchAs, ast.MatchStar, ast.MatchMapping)):
            for c in ast.iter_child_nodes(e):
                expr(c)
            name = e.rest if isinstance(e, ast.MatchMapping) else e.name
            if name:
                bound.add(name)
            return
        if isinstance(e, ast.Name):
            if isinstance(e.ctx, ast.Load):
                read([e.id])
            else:
                bound.add(e.id)
            return
        for c in ast.iter_child_nodes(e):
            expr(c)

    def stmt(s):
        if isinstance(s, ast.Assign):
            expr(s.value)
            for t in s.targets:
                expr(t)
        elif isinstance(s, ast.AugAssign):
            expr(s.value)
            if isinstance(s.target, ast.Name):
                out.add(s.target.id)
                bound.add(s.target.id)
            else:
                expr(s.target)
        elif isinstance(s, ast.AnnAssign):
            expr(s.value)
            expr(s.target)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            expr(s.iter)
            expr(s.target)
            body(s.body + s.orelse)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            for it in s.items:
                expr(it.context_expr)
                expr(it.optional_vars)
            body(s.body)
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            read(loads(s) - set(scope_stores(s)))
            bound.add(s.name)
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            bound.update(stores(s))
        elif isinstance(s, ast.Try):
            body(s.body)
            for h in s.handlers:
                expr(h.type)
                if h.name:
                    bound.add(h.name)
                body(h.body)
            body(s.orelse + s.finalbody)
        elif isinstance(s, (ast.If, ast.While)):
            expr(s.test)
            body(s.body + s.orelse)
        else:
            for c in ast.iter_child_nodes(s):
                if isinstance(c, ast.stmt):
                    stmt(c)
                else:
                    expr(c)

    def body(ss):
        for s in ss:
            stmt(s)
    stmt(st)
    return out


def is_print(v):
    """Whether v is a call of print by name."""
    return isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "print"


def plain_print(v):
    """Whether v is a print(...) whose output is its arguments' str: some
    arguments, none starred, no keyword (end=, sep=, file=)."""
    return is_print(v) and bool(v.args) and not v.keywords and not any(isinstance(a, ast.Starred) for a in v.args)


def printed_arg(v):
    """What a plain print(...) call shows: its argument, a tuple of several."""
    return v.args[0] if len(v.args) == 1 else ast.Tuple(elts=list(v.args), ctx=ast.Load())


def prints_in(st):
    """The print(...) calls in a compound statement, nested definitions
    included (they print when called)."""
    return [n for n in ast.walk(st) if is_print(n)]


SET_CALLS = ("set", "frozenset")


def iterates_set(st):
    """Whether a loop or comprehension in st iterates a set display, a
    set comprehension, or set(...)/frozenset(...): the order is the
    string hashes', which PYTHONHASHSEED changes from run to run."""
    for n in ast.walk(st):
        its = [n.iter] if isinstance(n, (ast.For, ast.AsyncFor)) else [g.iter for g in n.generators] if isinstance(
            n, (ast.ListComp, ast.DictComp, ast.GeneratorExp)) else []
        for it in its:
            if isinstance(it, (ast.Set, ast.SetComp)) or (
                    isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in SET_CALLS):
                return True
    return False


def shown_name(names, later):
    """The one of names that the first later step showing a variable
    alone (print(v) or v) shows, with nothing rebinding it between; None
    when there is none."""
    left = set(names)
    for st, _ in later:
        if isinstance(st, ast.Expr):
            v = st.value
            if plain_print(v) and len(v.args) == 1:
                v = v.args[0]
            if isinstance(v, ast.Name) and v.id in left:
                return v.id
        left -= set(stores(st))
        if not left:
            return None
    return None


def result_of(st, want, taken=frozenset(), later=()):
    """The expression a statement's result is, whether it prints, and the
    statements to run before it. A compound statement (the call in its
    header or its blocks) returns what it prints, its print(...) calls
    rewritten to collect their arguments in a list (st is changed in
    place then), or else the variable it assigns whatever path it takes
    (blocks_stores) that a later step (of later) shows alone."""
    if isinstance(st, COMPOUND):
        if iterates_set(st):
            raise Skip("the call's %s statement iterates a set: its order changes with PYTHONHASHSEED from run to run, and so would its result" % stmt_kind(st))
        shows = prints_in(st)
        if shows:
            if not all(plain_print(p) for p in shows):
                raise Skip("the call's %s statement prints with a keyword (end=, sep=, file=), a starred argument or no argument: collecting its prints' arguments would not be what it printed" % stmt_kind(st))
            name = "printed"
            while name in taken:
                name += "_"
            for p in shows:
                arg = printed_arg(p)
                p.func = ast.Attribute(value=ast.Name(id=name, ctx=ast.Load()), attr="append", ctx=ast.Load())
                p.args = [arg]
            return ast.Name(id=name, ctx=ast.Load()), False, [ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=ast.List(elts=[], ctx=ast.Load()), lineno=0)]
        names = blocks_stores(st)
        if not names:
            raise Skip("the call's %s statement prints nothing and assigns no variable%s" % (
                stmt_kind(st), " on both branches" if isinstance(st, ast.If) else " in its body and every handler" if isinstance(st, ast.Try) else ""))
        one = shown_name(names, later)
        if one is None:
            raise Skip("the call's %s statement prints nothing, and no later step shows alone a variable it assigns (%s)" % (
                stmt_kind(st), ", ".join(names)))
        return ast.Name(id=one, ctx=ast.Load()), False, []
    if isinstance(st, ast.Expr):
        v = st.value
        if is_print(v):
            if not plain_print(v):
                raise Skip("the call's step prints with a keyword (end=, sep=, file=), a starred argument or no argument")
            return printed_arg(v), True, []
        if not want.strip():
            raise Skip("the call's step shows no result, sets no variable, and no later step shows what it changed: a side effect only")
        return v, False, []
    if isinstance(st, (ast.Assign, ast.AnnAssign)):
        targets = st.targets if isinstance(st, ast.Assign) else [st.target]
        names = []
        for t in targets:
            elts = t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]
            for e in elts:
                if not isinstance(e, ast.Name):
                    raise Skip("the call's result is stored into an attribute or an item, not a variable")
                names.append(ast.Name(id=e.id, ctx=ast.Load()))
        if len(names) == 1:
            return names[0], False, []
        return ast.Tuple(elts=names, ctx=ast.Load()), False, []
    raise Skip("the call's statement is %s, not an expression, an assignment, a class, or a for, with, if or try statement" % type(st).__name__)


def is_literal(node):
    if isinstance(node, ast.Name):
        return False
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def perturb(v):
    """The documented change of an input value: an int or float grows by
    one, a str or bytes gets "x" appended, a container has each item
    (a dict each value) changed; bool, None and complex stay."""
    if isinstance(v, bool) or v is None or isinstance(v, complex):
        return v
    if isinstance(v, (int, float)):
        return v + 1
    if isinstance(v, str):
        return v + "x"
    if isinstance(v, bytes):
        return v + b"x"
    if isinstance(v, (list, tuple, set, frozenset)):
        return type(v)(perturb(x) for x in v)
    if isinstance(v, dict):
        return {k: perturb(x) for k, x in v.items()}
    return v


def free_globals(body_src):
    """Names the body reads as globals when it is a function's body."""
    src = "def solve():\n" + "\n".join("    " + l for l in body_src.split("\n")) + "\n"
    try:
        top = symtable.symtable(src, "<body>", "exec")
    except SyntaxError:
        return set()
    fn = top.get_children()[0]
    out = set()

    def walk(t):
        for s in t.get_symbols():
            if s.is_global() and s.is_referenced():
                out.add(s.get_name())
        for c in t.get_children():
            walk(c)
    walk(fn)
    return out


# The standard library's calls that wait for time to pass: an example
# calling one races the machine's speed (a throttle lets 3 or 4 calls
# through a window as the load decides), so a task cut from it would be
# kept or dropped, passed or failed, by chance.
CLOCK_WAITS = {"time.sleep", "asyncio.sleep", "threading.Timer", "signal.alarm", "signal.setitimer"}


def waits_on_clock(units):
    """The first call of CLOCK_WAITS the example's steps make ("" when
    none), through the names its imports bind (import time as t; from time
    import sleep) or the modules' own names (a docstring's example uses its
    module's globals unimported)."""
    mods = {w.split(".")[0]: w.split(".")[0] for w in CLOCK_WAITS}
    funcs = {}
    for st, _ in units:
        for n in ast.walk(st):
            if isinstance(n, ast.Import):
                for a in n.names:
                    if a.asname:
                        mods[a.asname] = a.name
            elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
                for a in n.names:
                    funcs[a.asname or a.name] = n.module + "." + a.name
        for n in ast.walk(st):
            if not isinstance(n, ast.Call):
                continue
            f = n.func
            name = ""
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in mods:
                name = mods[f.value.id] + "." + f.attr
            elif isinstance(f, ast.Name) and f.id in funcs:
                name = funcs[f.id]
            if name in CLOCK_WAITS:
                return name
    return ""


def cut(req):
    ex = Example(req)
    tg = ex.tg
    w = waits_on_clock(ex.units)
    if w:
        raise Skip("the example waits on the clock (%s): what it shows depends on how fast the machine runs it, so no harness could grade it the same way twice" % w)
    if tg["kind"] == "property":
        raise Skip("the target is a property: it is read, not called")
    k = next((i for i, (st, _) in enumerate(ex.units) if ex.kind[i] != "import" and ex.target_call(st) is not None), -1)
    if k < 0:
        if any(tg["name"] in w for _, w in ex.units):
            raise Skip("the target appears only in the expected output, no step calls it")
        raise Skip("no step calls the target")
    st_k, want_k = ex.units[k]
    ret = k  # the statement whose result solve returns
    after = []  # the statements between k and ret the body runs
    ex.span_classes = set()
    if isinstance(st_k, ast.ClassDef):
        ret, after = class_shown(ex, k)
        if ret < 0:
            raise Skip("the call is in the body of class %s and no later step shows anything computed from the class" % st_k.name)
        ex.span_classes = {st_k.name}
    elif isinstance(st_k, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise Skip("the call is in the body of function %s, which the example defines: it runs only when called" % st_k.name)
    else:
        try:
            result_of(copy.deepcopy(st_k), want_k, later=ex.units[k + 1:])
        except Skip:
            ret = effect_shown(ex, k)
            if ret < 0:
                raise
    tasks, skipped = [], {}

    def depends(i_set, through_plain):
        """Closes a set of statement indexes (the call's, the result's,
        and statements before the call) over the statements before the
        call that define names they use: package statements always, plain
        ones only when through_plain."""
        need = set()
        for i in i_set:
            need |= loads(ex.units[i][0])
        out = set(i_set)
        for i in range(k - 1, -1, -1):
            if i in out or ex.kind[i] == "import":
                continue
            st = ex.units[i][0]
            defines = set(stores(st)) & need
            mutates = ex.kind[i] == "pkg" and isinstance(st, ast.Expr) and bool(loads(st) & need) and any(
                isinstance(n, ast.Call) for n in ast.walk(st))
            if not (defines or mutates):
                continue
            if ex.kind[i] == "pkg" or through_plain:
                out.add(i)
                need |= loads(st)
        return out

    easy = depends({k, ret} | set(after), False)
    # A variable the body reads before it rebinds it (a loop's counter:
    # i += 1) is local to solve: the statements binding it before go into
    # the body with it, or solve would read it unbound. A loop's target or
    # a with's "as" name, bound before the body reads it, stays solve's
    # own and takes nothing out of the prelude.
    ex.rebound = set()
    while True:
        rebinds = set()
        for i in easy:
            st = ex.units[i][0]
            if isinstance(st, COMPOUND + (ast.AugAssign,)):
                rebinds |= read_first(st) & set(scope_stores(st))
            elif i > k and isinstance(st_k, ast.ClassDef):
                # The class reads it, a step after the class binds it:
                # solve's local, which the class would read unbound.
                rebinds |= class_free(st_k) & set(scope_stores(st))
        more = {i for i in range(k) if i not in easy and ex.kind[i] == "plain" and set(stores(ex.units[i][0])) & rebinds
                and not isinstance(ex.units[i][0], (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        if not more:
            break
        ex.rebound |= more
        easy = depends(easy | more, False)
    medium = depends(easy, True)
    ex.lift_idx = sorted(easy)
    tasks.append(build(ex, "easy", sorted(easy), k, ret))
    data = sorted(i for i in medium - easy if ex.kind[i] == "plain" and not isinstance(ex.units[i][0], (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)))
    if data:
        tasks.append(build(ex, "medium", sorted(easy | set(data)), k, ret, data=data))
    else:
        skipped["medium"] = "the call is given no data set up before it"
    if ex.aux_calls():
        last = ret
        for i in range(len(ex.units) - 1, k, -1):
            st, want = ex.units[i]
            if isinstance(st, ast.Expr) and (want.strip() or is_print(st.value)):
                last = max(i, ret)
                break
        try:
            tasks.append(build(ex, "hard", [i for i in range(last + 1) if ex.kind[i] != "import"], k, last))
        except Skip as e:
            # The last step shown (a print with end=) cannot be the result:
            # the easy and medium tasks stand without it.
            skipped["hard"] = str(e)
    else:
        skipped["hard"] = "the example calls nothing else of the package to compose with"
    return {"tasks": tasks, "skipped": skipped}


def effect_shown(ex, k):
    """For a call whose statement shows nothing (a side effect), the first
    later step that shows an expression reading a variable the call reads
    (its receiver, an argument), with nothing rebinding those between:
    the effect is what the task asserts. -1 when there is none."""
    st = ex.units[k][0]
    if not isinstance(st, ast.Expr):
        return -1
    reads = loads(st) - set(ex.pkg_obj) - set(ex.pkg_mod)
    for j in range(k + 1, len(ex.units)):
        sj, want = ex.units[j]
        shows = isinstance(sj, ast.Expr) and (want.strip() or (
            is_print(sj.value)))
        if shows and loads(sj) & reads and ex.target_call(sj) is None:
            if any(set(stores(ex.units[i][0])) & loads(sj) for i in range(k + 1, j)):
                return -1
            return j
        if set(stores(sj)) & reads:
            return -1
    return -1


def shows(st, want):
    """Whether a top-level statement shows a result: an expression with
    output or a print(...), or a compound statement that prints."""
    if isinstance(st, ast.Expr):
        return bool(want.strip()) or is_print(st.value)
    return isinstance(st, COMPOUND) and bool(prints_in(st))


def class_shown(ex, k):
    """For a call in the body of a class the example defines (statement
    k): the first later step that shows something computed from the class
    (reading its name, or a variable a step between computed from it),
    and the steps between that it needs: those computing such variables
    and those binding what they read, the class's own free names among
    them (a default factory or a method reads them when called, after the
    class: base = 10 below it). (-1, []) when no step shows one."""
    names = set(stores(ex.units[k][0]))
    free = class_free(ex.units[k][0])
    chain = []
    for j in range(k + 1, len(ex.units)):
        sj, want = ex.units[j]
        if ex.kind[j] == "import":
            continue
        if not loads(sj) & names:
            names -= set(stores(sj))
            continue
        if shows(sj, want):
            need = loads(sj) | free
            for i in chain:
                need |= loads(ex.units[i][0])
            out = set(chain)
            for i in range(j - 1, k, -1):
                if i not in out and ex.kind[i] != "import" and set(stores(ex.units[i][0])) & need:
                    out.add(i)
                    need |= loads(ex.units[i][0])
            return j, sorted(out)
        chain.append(j)
        names |= set(stores(sj))
    return -1, []


def class_free(st):
    """The names a class statement reads from the scope it is defined in
    (its bases, decorators, field values, and what its methods and
    lambdas read when called), not those it binds itself."""
    return free_globals(ast.unparse(st)) - {st.name}


def class_bound(st):
    """The names bound inside the bodies of the classes a statement
    defines: a class body that reads such a name looks it up in the
    module, never in solve, so no parameter may be named after one."""
    out = set()
    for c in ast.walk(st):
        if isinstance(c, ast.ClassDef):
            for b in c.body:
                out |= {n.id for n in ast.walk(b) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    out.add(b.name)
    return out


def build(ex, level, body_idx, k, last, data=()):
    """A task whose body runs the statements body_idx (k calls the
    target; last's result is returned); every other statement before k is
    the prelude, at hard only the example's imports of other modules."""
    tg = ex.tg
    units = [(copy.deepcopy(st), want) for st, want in ex.units]
    in_body = set(body_idx)
    if level == "hard":
        # The example's own imports of other modules stay: a star import
        # cannot be in a function, and the solver needs none of them.
        prelude_idx = [i for i in range(last + 1) if ex.kind[i] == "plain" and isinstance(ex.units[i][0], (ast.Import, ast.ImportFrom))]
        body_idx = [i for i in body_idx if i not in prelude_idx]
    else:
        # A statement left out of the body that reads a name only the
        # body now binds (the data a medium task moved into it), or one
        # such a statement bound, is left out too: the body does not need
        # it (depends would have taken it), and at module level it would
        # fail with a NameError.
        prelude_idx, moved = [], set()
        for i in range(k):
            if i in in_body:
                moved |= set(stores(ex.units[i][0]))
            elif ex.kind[i] == "plain":
                if loads(ex.units[i][0]) & moved:
                    moved |= set(stores(ex.units[i][0]))
                else:
                    prelude_idx.append(i)
                    moved -= set(stores(ex.units[i][0]))
    # Lift the literal arguments of the target's call into parameters.
    call = ex.target_call(units[k][0])
    taken = set(BUILTINS) | set(keyword.kwlist)
    for i in prelude_idx + body_idx:
        taken |= set(stores(units[i][0])) | loads(units[i][0])
    params = list(tg.get("params") or [])
    if tg["kind"] in ("method", "classmethod") and params and params[0] in ("self", "cls"):
        params = params[1:]
    lifted = []  # (name, literal source)

    in_class = set()  # ids of the calls inside a class body
    avoid = set()
    for i in ex.lift_idx:
        avoid |= class_bound(units[i][0])
        for c in ast.walk(units[i][0]):
            if isinstance(c, ast.ClassDef):
                in_class |= {id(n) for n in ast.walk(c) if isinstance(n, ast.Call)}

    def lift(node, want_name, c):
        name = want_name if want_name and want_name.isidentifier() else "arg%d" % (len(lifted) + 1)
        while name in taken or (id(c) in in_class and name in avoid):
            name += "_"
        taken.add(name)
        lifted.append((name, ast.unparse(node)))
        return ast.Name(id=name, ctx=ast.Load())

    def lift_call(c, names):
        for j, a in enumerate(c.args):
            if is_literal(a):
                c.args[j] = lift(a, names[j] if j < len(names) else "", c)
        for kw in c.keywords:
            if kw.arg and is_literal(kw.value):
                kw.value = lift(kw.value, kw.arg, c)

    # The target's call first, then the package's other calls that build
    # what it is given (a constructor of the receiver) and, for a call in
    # a class's body, the calls of that class.
    lift_call(call, params)
    for i in ex.lift_idx:
        for n in ast.walk(units[i][0]):
            if isinstance(n, ast.Call) and n is not call and (ex.calls_package(n) or ex.calls_class(n)):
                lift_call(n, [])
    # What the body runs after a class holding the call, as the example
    # writes it (its literals lifted): the description quotes it.
    after_src = [ast.unparse(units[i][0]) for i in body_idx if i > k] if level != "hard" and isinstance(units[k][0], ast.ClassDef) else []
    class_src = quote_class(ex, units[k][0], call) if level != "hard" and isinstance(units[k][0], ast.ClassDef) else ""
    res, prints, pre = result_of(*units[last], taken=taken, later=units[last + 1:])
    body = []
    for i in body_idx:
        if i == last:
            body.extend(pre)
        if i != last or not isinstance(units[i][0], ast.Expr):
            body.append(units[i][0])
    body_src = "\n".join(ast.unparse(s) for s in body)
    ret = "return " + ast.unparse(res)
    # The package names the body uses, imported as the example did.
    used = free_globals(body_src + "\n" + ret)
    imports = []
    for n in sorted(used & set(ex.pkg_mod)):
        imports.extend(ex.mod_lines[n])
    by_module = {}
    for n in sorted(used & set(ex.pkg_obj)):
        mod, attr = ex.pkg_obj[n]
        if n in ex.globals_used and attr == tg["name"] and tg["kind"] in ("function", "class") and tg.get("path"):
            mod, _, attr = tg["path"].rpartition(".")
        by_module.setdefault(mod, []).append(attr if attr == n else attr + " as " + n)
    for mod in sorted(by_module):
        imports.append("from %s import %s" % (mod, ", ".join(by_module[mod])))
    prelude = "\n".join(ast.unparse(units[i][0]) for i in prelude_idx)
    prelude_binds = {}
    for i in prelude_idx:
        st = units[i][0]
        if isinstance(st, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for n in stores(st):
                prelude_binds[n] = None
            continue
        for n in stores(st):
            prelude_binds[n] = st if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and is_literal(st.value) else "var"
    free = [n for n in sorted(used) if prelude_binds.get(n) is not None]
    names = free + [n for n, _ in lifted]
    # The example's own input, then one input per parameter whose value
    # is a literal, that value perturbed and the others kept: a change the
    # library refuses (a date string with "x" appended) spoils one input,
    # not all of them.
    first, changed = [], []
    for n in free:
        first.append(n)
        b = prelude_binds[n]
        changed.append(repr(perturb(ast.literal_eval(b.value))) if isinstance(b, ast.Assign) else n)
    for n, src in lifted:
        first.append(src)
        changed.append(repr(perturb(ast.literal_eval(src))))
    tup = lambda xs: "(" + ", ".join(xs) + ("," if len(xs) == 1 else "") + ")"
    inputs = [tup(first)]
    for j in range(len(first)):
        if changed[j] != first[j]:
            inputs.append(tup(first[:j] + [changed[j]] + first[j + 1:]))
    # A class defined with the call is defined again on every input, in
    # the real pass and then the mock pass of one process: the example's
    # own input again, last, tells whether a second definition changes
    # what the class does (a registry refusing it), which UsableInputs
    # reads (Site.Repeats).
    repeats = isinstance(units[k][0], ast.ClassDef)
    if repeats:
        inputs.append(inputs[0])
    reference = "\n".join(imports + ([body_src] if body_src else []) + [ret])
    want, shown_printed = shown(units, last, res)
    site = {
        "args": [ast.unparse(a) for a in call.args] + ["%s=%s" % (kw.arg, ast.unparse(kw.value)) if kw.arg else "**" + ast.unparse(kw.value) for kw in call.keywords],
        "recv": ast.unparse(call.func.value) if tg["kind"] not in ("function", "class") and isinstance(call.func, ast.Attribute) else "",
        "data": [ast.unparse(units[i][0]) for i in data],
        "setup": [ast.unparse(units[i][0]) for i in body_idx if i < k and (ex.kind[i] == "pkg" or i in ex.rebound)] if level != "hard" else [],
        "after": after_src,
        "class": class_src,
        "aliases": ex.aliases() or None,
        "repeats": repeats,
        "plain_data": [ast.unparse(units[i][0]) for i in body_idx if i < k and ex.kind[i] == "plain"] if level == "hard" else [],
        "returns": ast.unparse(res),
        "prints": prints or shown_printed,
        "collects": bool(pre),
        "around": "class" if isinstance(units[k][0], ast.ClassDef) else stmt_kind(units[k][0]) if isinstance(units[k][0], COMPOUND) else "",
        "shows": stmt_kind(units[last][0]) if last != k and pre else "",
        "want": want,
        "effect": last != k and level != "hard",
    }
    return {
        "difficulty": level, "prelude": prelude, "signature": "def solve(%s):" % ", ".join(names),
        "reference": reference, "inputs": inputs, "site": site,
    }


CALL_HOLE, IT_HOLE = "__lacuna_the_call__", "__lacuna_it__"


def quote_class(ex, cls, call):
    """The class statement's source with the target's call (in it) shown
    as "<the call>", and anything else in it that names the target (by
    is_target_ref: another call, or a reference such as
    default_factory=T, partial(T, ...) or a decorator @T) as "<it>" (a
    method's as "value.<it>"): its fields, types and bases are the
    task's, the call is the solver's to find. A string naming it (an
    annotation "T") is left: the description's leak check sees it."""
    memo = {}
    cls = copy.deepcopy(cls, memo)
    call = memo[id(call)]
    function = ex.tg["kind"] in ("function", "class")

    class Holes(ast.NodeTransformer):
        def visit_Call(self, n):
            if n is call:
                return ast.Name(id=CALL_HOLE, ctx=ast.Load())
            return self.generic_visit(n)

        def visit_Name(self, n):
            if isinstance(n.ctx, ast.Load) and ex.is_target_ref(n):
                return ast.Name(id=IT_HOLE, ctx=ast.Load())
            return n

        def visit_Attribute(self, n):
            if isinstance(n.ctx, ast.Load) and ex.is_target_ref(n):
                if function:
                    return ast.Name(id=IT_HOLE, ctx=ast.Load())
                n.attr = IT_HOLE
            return self.generic_visit(n)
    src = ast.unparse(Holes().visit(cls))
    return src.replace(CALL_HOLE, "<the call>").replace(IT_HOLE, "<it>")


def shown(units, i, res):
    """What the example shows of statement i's result, and whether it
    printed it: its own expected output, or, for a variable it assigns,
    that of a later step showing the variable alone (print(v) or v)."""
    if units[i][1] or not isinstance(res, ast.Name):
        return units[i][1], False
    for st, want in units[i + 1:]:
        if isinstance(st, ast.Expr):
            v = st.value
            if isinstance(v, ast.Name) and v.id == res.id:
                return want, False
            if plain_print(v) and len(v.args) == 1 and isinstance(v.args[0], ast.Name) and v.args[0].id == res.id:
                return want, True
        if res.id in stores(st):
            break
    return "", False


def main():
    reqs = json.load(sys.stdin)
    out = []
    for r in reqs:
        try:
            out.append(cut(r))
        except Skip as e:
            out.append({"skip": str(e)})
        except RecursionError:
            out.append({"skip": "the example nests too deeply to cut"})
        except Exception as e:
            # A shape of code the cutter does not handle: this example is
            # counted with the reason, the others are still cut.
            out.append({"skip": "the cutter failed on this example: %s: %s" % (type(e).__name__, e)})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
