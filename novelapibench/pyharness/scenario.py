"""lacuna's scenario reader: a task from a generated scenario script.

Reads {"cut": <cut.py's source>, "requests": [...]} on stdin, writes a JSON
list of answers on stdout, one per request: {"task": {...}} or
{"refused": reason}. Parsing only (ast, symtable): nothing of the library
is imported. The cutter's helpers (its Example: which statements import or
use the package, which call names the target) are cut.py's, loaded from
the source given. See scenario.go for the contract.
"""

import ast
import json
import keyword
import sys
import types

MASK_OPEN, MASK_CLOSE = "# <MASK>", "# </MASK>"

# Statements that leave or suspend a function: a span holding one at its
# own level would change what solve does (return early, become a
# generator) or where its names live (global, nonlocal).
LEAVES = (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal)


class Refused(Exception):
    pass


def load_cut(src):
    m = types.ModuleType("lacuna_cut")
    exec(compile(src, "cut.py", "exec"), m.__dict__)
    return m


def first_line(st):
    """A statement's first line, its decorators included (1-based)."""
    return min([st.lineno] + [d.lineno for d in getattr(st, "decorator_list", [])])


def own_level(nodes):
    """The nodes of statements in their own scope: not those of the
    functions, lambdas and classes nested in them."""
    todo = list(nodes)
    while todo:
        n = todo.pop()
        yield n
        for c in ast.iter_child_nodes(n):
            if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                todo.append(c)


def locate(script):
    """The module, and the indexes of its top-level statements before,
    inside and after the marked span."""
    opening = closing = -1
    for i, line in enumerate(script.split("\n")):
        s = line.strip()
        if s == MASK_OPEN:
            if opening >= 0:
                raise Refused("marks two spans (%s twice)" % MASK_OPEN)
            opening = i + 1
        elif s == MASK_CLOSE:
            if closing >= 0:
                raise Refused("marks two spans (%s twice)" % MASK_CLOSE)
            closing = i + 1
    if opening < 0 or closing < 0:
        raise Refused("marks no span: the script needs a line %s and a later line %s around the code to write" % (MASK_OPEN, MASK_CLOSE))
    if closing < opening:
        raise Refused("closes its span (%s) before opening it (%s)" % (MASK_CLOSE, MASK_OPEN))
    try:
        mod = ast.parse(script)
    except (SyntaxError, ValueError) as e:
        raise Refused("does not parse: %s (line %s)" % (getattr(e, "msg", None) or e, getattr(e, "lineno", "?")))
    before, span, after = [], [], []
    for i, st in enumerate(mod.body):
        first, last = first_line(st), st.end_lineno
        if first <= opening <= last or first <= closing <= last:
            raise Refused("marks its span inside a statement (line %d): the markers must sit between the script's top-level statements" % first)
        (before if last < opening else span if first < closing else after).append(i)
    if not span:
        raise Refused("marks an empty span")
    return mod, before, span, after


def scenario(cut, req):
    tg = req["target"]
    mod, before, span, after = locate(req["script"])
    steps = [{"source": ast.unparse(st), "want": ""} for st in mod.body]
    try:
        ex = cut.Example({"target": tg, "module": "", "steps": steps})
    except cut.Skip as e:
        raise Refused(str(e))
    units = [st for st, _ in ex.units]
    if len(units) != len(mod.body):
        raise Refused("a statement does not read back as one statement")
    call = next((c for i in span for c in ast.walk(units[i]) if isinstance(c, ast.Call) and ex.is_target_call(c)), None)
    if call is None:
        raise Refused("its marked span never calls %s" % tg["path"])
    for i in span:
        for n in own_level([units[i]]):
            if isinstance(n, LEAVES):
                raise Refused("its marked span has a %s statement at its own level: solve's body would %s" % (
                    type(n).__name__.lower(), "leave early" if isinstance(n, ast.Return) else "not be a plain function's"))
    # The context (the prelude) and the code the body runs before the span
    # must not name the target: they are shown.
    for i in before:
        if ex.kind[i] == "import":
            continue
        for n in ast.walk(units[i]):
            named = isinstance(n, (ast.Name, ast.Attribute)) and ex.is_target_ref(n)
            named = named or isinstance(n, ast.Name) and n.id == tg["name"] or isinstance(n, ast.Attribute) and n.attr == tg["name"]
            if named:
                raise Refused("names %s outside its span (line %d): the context would give the answer away" % (tg["name"], first_line(mod.body[i])))
    # The package's statements before the span that it needs (building
    # what it is called on) run in the body before it: the prelude cannot
    # import the package. The others are left out; the plain ones are the
    # prelude.
    need = set()
    for i in span:
        need |= cut.loads(units[i])
    setup = set()
    for i in reversed(before):
        st = units[i]
        if ex.kind[i] != "pkg":
            continue
        mutates = isinstance(st, ast.Expr) and bool(cut.loads(st) & need) and any(isinstance(n, ast.Call) for n in ast.walk(st))
        if set(cut.stores(st)) & need or mutates:
            setup.add(i)
            need |= cut.loads(st)
    setup = sorted(setup)
    prelude_idx = [i for i in before if ex.kind[i] == "plain"]
    body_idx = setup + span
    body_src = "\n".join(ast.unparse(units[i]) for i in body_idx)

    # solve's parameters: the prelude's variables the body reads (those it
    # rebinds too: solve would read them unbound otherwise).
    prelude_binds = {}
    for i in prelude_idx:
        st = units[i]
        for n in cut.stores(st):
            if isinstance(st, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                prelude_binds[n] = None
            else:
                literal = isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and cut.is_literal(st.value)
                prelude_binds[n] = st if literal else "var"
    body_loads = set()
    for i in body_idx:
        body_loads |= cut.loads(units[i])
    params = sorted(n for n in body_loads if prelude_binds.get(n) is not None)

    # What solve returns: the variables the span binds, or those bound
    # before it that it reads (a receiver, a list it fills), which the
    # rest of the script reads, in the order it first reads them.
    binds = set()
    for i in span:
        binds |= set(cut.scope_stores(units[i]))
    before_vars = set(params)
    for i in setup:
        before_vars |= set(cut.scope_stores(units[i]))
    span_loads = set()
    for i in span:
        span_loads |= cut.loads(units[i])
    later = []
    for i in after:
        for n in sorted((n for n in ast.walk(units[i]) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)),
                        key=lambda n: (n.lineno, n.col_offset)):
            if n.id not in later and (n.id in binds or n.id in span_loads and n.id in before_vars):
                later.append(n.id)
    if not later:
        raise Refused("its marked span sets nothing the rest of the script reads: solve would return nothing to check")
    returns = later[0] if len(later) == 1 else "(" + ", ".join(later) + ")"
    ret = "return " + returns

    # The package names the body uses, imported as the script does.
    used = cut.free_globals(body_src + "\n" + ret)
    imports = []
    for n in sorted(used & set(ex.pkg_mod)):
        imports.extend(ex.mod_lines[n])
    by_module = {}
    for n in sorted(used & set(ex.pkg_obj)):
        m, attr = ex.pkg_obj[n]
        by_module.setdefault(m, []).append(attr if attr == n else attr + " as " + n)
    for m in sorted(by_module):
        imports.append("from %s import %s" % (m, ", ".join(by_module[m])))

    taken = set()
    for st in units:
        taken |= set(cut.stores(st)) | cut.loads(st)
        taken |= {n.name for n in ast.walk(st) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    fn = "solve"
    while fn in taken or keyword.iskeyword(fn):
        fn += "_"
    signature = "def %s(%s):" % (fn, ", ".join(params))
    prelude = "\n".join(ast.unparse(units[i]) for i in prelude_idx)
    reference = "\n".join(imports + [body_src, ret])
    program = (prelude + "\n\n" if prelude else "") + signature + "\n" + "\n".join("    " + l for l in reference.split("\n"))
    try:
        compile(program, "<scenario>", "exec")
    except SyntaxError as e:
        raise Refused("its task does not compile: %s (line %s)" % (e.msg, e.lineno))

    # The script's own input, then one per parameter whose value is a
    # literal, that value perturbed (cut.py's perturb) and the others kept.
    first, changed = [], []
    for n in params:
        first.append(n)
        b = prelude_binds[n]
        changed.append(repr(cut.perturb(ast.literal_eval(b.value))) if isinstance(b, ast.Assign) else n)
    tup = lambda xs: "(" + ", ".join(xs) + ("," if len(xs) == 1 else "") + ")"
    inputs = [tup(first)]
    for j in range(len(first)):
        if changed[j] != first[j]:
            inputs.append(tup(first[:j] + [changed[j]] + first[j + 1:]))
    method = tg["kind"] not in ("function", "class") and isinstance(call.func, ast.Attribute)
    site = {
        "args": [ast.unparse(a) for a in call.args] + ["%s=%s" % (kw.arg, ast.unparse(kw.value)) if kw.arg else "**" + ast.unparse(kw.value) for kw in call.keywords],
        "recv": ast.unparse(call.func.value) if method else "",
        "data": [], "setup": [ast.unparse(units[i]) for i in setup], "after": [], "class": "",
        "aliases": ex.aliases() or None, "repeats": False, "plain_data": [],
        "returns": returns, "prints": False, "collects": False, "around": "", "shows": "",
        "want": "", "effect": False,
    }
    return {"prelude": prelude, "signature": signature, "reference": reference, "inputs": inputs, "site": site}


def main():
    req = json.load(sys.stdin)
    cut = load_cut(req["cut"])
    out = []
    for r in req["requests"]:
        try:
            out.append({"task": scenario(cut, r)})
        except Refused as e:
            out.append({"refused": str(e)})
        except RecursionError:
            out.append({"refused": "the script nests too deeply to read"})
        except Exception as e:
            # A shape of code the reader does not handle: this script is
            # refused with the reason, the others are still read.
            out.append({"refused": "the scenario reader failed on it: %s: %s" % (type(e).__name__, e)})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
