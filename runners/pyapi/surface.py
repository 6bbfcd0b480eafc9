"""Lists the API surface of an installed Python package as JSON lines.

Usage: python3 -I -B surface.py [--path DIR]... [--sibling PACKAGE]... [--module-timeout S] PACKAGE

Stdlib only (ast, importlib, inspect). Every module of PACKAGE (test
modules and __main__ excepted) is imported, each under a timer; then the
names each module exports are listed. Introspection gives identity
(module:__qualname__ of the defining object), signatures, inherited docs;
the syntax tree gives the source text of defaults and annotations and the
deprecation markers of the body. Objects defined outside PACKAGE are left
out, unless in a --sibling package (another top-level package of the same
distribution: attrs exports attr's classes). A module that fails to import is read
from its syntax tree alone ("static"). Records go to the original stdout,
one JSON object a line; whatever the library writes to stdout goes to
stderr instead:

  {"type": "start", "stage": "importing"|"listing", "module": M}
  {"type": "module", "module": M, "error"?, "skipped"?, "static"?}
  {"type": "attribute_error", "module": M, "error": ...}
  {"type": "api", "id": ..., "paths": [...], "unlisted_paths": [...], ...}
  {"type": "error", "error": ...}            the package was not found
  {"type": "done", "python": ..., ...}       last line: the run finished
"""

import ast
import importlib
import importlib.machinery
import importlib.util
import inspect
import json
import os
import re
import signal
import sys
import traceback
import types

OUT = None
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
STDLIB = set(getattr(sys, "stdlib_module_names", ())) | {"builtins"}
DEPRECATED_DECORATORS = {"deprecated", "deprecate"}
WARNING_FILTERS = {"simplefilter", "filterwarnings", "catch_warnings", "resetwarnings"}


def emit(rec):
    OUT.write(json.dumps(rec, sort_keys=True) + "\n")
    OUT.flush()


class ImportTimeout(BaseException):
    """Raised by the timer; a BaseException so that a library's own
    "except Exception" does not swallow it."""


def on_alarm(signum, frame):
    raise ImportTimeout()


def is_test_module(name):
    parts = name.split(".")
    return any(p in ("tests", "test", "conftest") or p.startswith("test_") for p in parts[1:])


def private_path(path):
    return any(p.startswith("_") for p in path.split("."))


def module_files(pkg):
    """(module name, file) of every module of pkg, packages before their
    submodules; the package's own directories only (no namespace
    subpackages without __init__.py)."""
    spec = importlib.util.find_spec(pkg)
    if spec is None:
        raise ModuleNotFoundError("no module named %r on the given path" % pkg)
    out = [(pkg, spec.origin)]
    if spec.submodule_search_locations is None:
        return out
    suffixes = importlib.machinery.SOURCE_SUFFIXES + importlib.machinery.EXTENSION_SUFFIXES

    def walk(dirpath, prefix):
        try:
            entries = sorted(os.listdir(dirpath))
        except OSError:
            return
        for e in entries:
            full = os.path.join(dirpath, e)
            if os.path.isdir(full):
                if e.isidentifier() and os.path.exists(os.path.join(full, "__init__.py")):
                    out.append((prefix + "." + e, os.path.join(full, "__init__.py")))
                    walk(full, prefix + "." + e)
                continue
            for suf in suffixes:
                if e.endswith(suf):
                    stem = e[: -len(suf)]
                    if suf != ".py":
                        stem = stem.split(".")[0]
                    if stem.isidentifier() and stem != "__init__":
                        out.append((prefix + "." + stem, full))
                    break

    for loc in spec.submodule_search_locations:
        walk(loc, pkg)
    seen, uniq = set(), []
    for name, f in out:
        if name not in seen:
            seen.add(name)
            uniq.append((name, f))
    return uniq


# --- syntax trees ---------------------------------------------------------

TREES = {}


def tree_index(path):
    """qualname -> def/class node of the file at path (cached); None when
    the file cannot be read or parsed."""
    if path in TREES:
        return TREES[path]
    idx = None
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), filename=path)
        idx = {}

        def visit(body, prefix):
            for node in body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    q = prefix + node.name
                    idx[q] = node  # the last definition is the one bound at run time (after @overload stubs)
                    inner = q + "." if isinstance(node, ast.ClassDef) else q + ".<locals>."
                    visit(node.body, inner)
                elif isinstance(node, (ast.If, ast.Try)):
                    visit(node.body, prefix)
                    visit(getattr(node, "orelse", []), prefix)
                    for h in getattr(node, "handlers", []):
                        visit(h.body, prefix)
                    visit(getattr(node, "finalbody", []), prefix)

        visit(tree.body, "")
        idx[""] = tree
    except (OSError, SyntaxError, ValueError):
        idx = None
    TREES[path] = idx
    return idx


def unparse(node):
    try:
        return ast.unparse(node)
    except Exception:
        return ""


def decorator_deprecated(node):
    for d in getattr(node, "decorator_list", []):
        f = d.func if isinstance(d, ast.Call) else d
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if name in DEPRECATED_DECORATORS:
            return "@%s decorator" % unparse(f)
    return ""


def last_name(node):
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def body_warns(node):
    """Whether the body warns or raises a *DeprecationWarning
    unconditionally: in a statement of the body itself, not under an if,
    a loop, a try or a nested definition (a warning under a condition
    deprecates a parameter or a behaviour, not the function)."""
    for stmt in getattr(node, "body", []):
        if not isinstance(stmt, (ast.Expr, ast.Raise)):
            continue
        for n in ast.walk(stmt):
            if isinstance(n, ast.Call) and last_name(n.func) not in WARNING_FILTERS:
                args = [n.func] + list(n.args) + [k.value for k in n.keywords]
                if any(last_name(a).endswith("DeprecationWarning") for a in args):
                    return True
    return False


# At the docstring's own indentation: an indented directive sits in a
# parameter's description and deprecates the parameter.
DOC_DEPRECATED = re.compile(r"^(\.\. deprecated::|deprecated(:| since))", re.I | re.M)


def deprecation(obj, node, doc):
    """Why the object is deprecated, "" when it is not."""
    if isinstance(getattr(obj, "__deprecated__", None), str):
        return "__deprecated__ set (warnings.deprecated)"
    if node is not None:
        why = decorator_deprecated(node)
        if why:
            return why
        if isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef) and sub.name in ("__init__", "__new__") and body_warns(sub):
                    return "DeprecationWarning in %s" % sub.name
        elif body_warns(node):
            return "DeprecationWarning in the body"
    if doc and DOC_DEPRECATED.search(doc):
        return "deprecated in the docstring"
    return ""


# --- objects --------------------------------------------------------------

KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: "positional_only",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional_or_keyword",
    inspect.Parameter.VAR_POSITIONAL: "var_positional",
    inspect.Parameter.KEYWORD_ONLY: "keyword_only",
    inspect.Parameter.VAR_KEYWORD: "var_keyword",
}


def ast_params(fn):
    """name -> (default text or None, annotation text) from a def node."""
    out = {}
    if fn is None or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return out
    a = fn.args
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    for arg, d in zip(pos, defaults):
        out[arg.arg] = (unparse(d) if d is not None else None, unparse(arg.annotation) if arg.annotation else "")
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        out[arg.arg] = (unparse(d) if d is not None else None, unparse(arg.annotation) if arg.annotation else "")
    for arg in (a.vararg, a.kwarg):
        if arg is not None:
            out[arg.arg] = (None, unparse(arg.annotation) if arg.annotation else "")
    return out


def annotation_text(a):
    if a is inspect.Parameter.empty:
        return ""
    if isinstance(a, str):
        return a
    return ADDRESS.sub("", inspect.formatannotation(a))


def params_of(obj, fn):
    """Parameters and return annotation: introspected, with the source text
    of defaults and annotations where the def node has them."""
    sig = inspect.signature(obj)
    src = ast_params(fn)
    params = []
    for p in sig.parameters.values():
        d, ann = src.get(p.name, (None, ""))
        rec = {"name": p.name, "kind": KINDS[p.kind]}
        if p.default is not inspect.Parameter.empty:
            rec["default"] = d if d is not None else ADDRESS.sub("", repr(p.default))
            rec["has_default"] = True
        rec["annotation"] = ann or annotation_text(p.annotation)
        params.append(rec)
    ret = ""
    if fn is not None and getattr(fn, "returns", None) is not None:
        ret = unparse(fn.returns)
    if not ret:
        ret = annotation_text(sig.return_annotation)
    return params, ret


def static_params(fn):
    """Parameters from a def node alone (the module did not import)."""
    a = fn.args
    params = []
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    for i, (arg, d) in enumerate(zip(pos, defaults)):
        kind = "positional_only" if i < len(a.posonlyargs) else "positional_or_keyword"
        params.append((arg, kind, d))
    if a.vararg:
        params.append((a.vararg, "var_positional", None))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append((arg, "keyword_only", d))
    if a.kwarg:
        params.append((a.kwarg, "var_keyword", None))
    out = []
    for arg, kind, d in params:
        rec = {"name": arg.arg, "kind": kind, "annotation": unparse(arg.annotation) if arg.annotation else ""}
        if d is not None:
            rec["default"], rec["has_default"] = unparse(d), True
        out.append(rec)
    return out, (unparse(fn.returns) if fn.returns is not None else "")


def render(name, params, ret):
    parts, star, slash = [], False, False
    for p in params:
        k = p["kind"]
        if k != "positional_only" and not slash and any(q["kind"] == "positional_only" for q in params):
            parts.append("/")
            slash = True
        if k == "keyword_only" and not star:
            parts.append("*")
            star = True
        s = p["name"]
        if k == "var_positional":
            s, star = "*" + s, True
        elif k == "var_keyword":
            s = "**" + s
        if p.get("annotation"):
            s += ": " + p["annotation"]
        if p.get("has_default"):
            s += (" = " if p.get("annotation") else "=") + p["default"]
        parts.append(s)
    if params and not slash and all(q["kind"] == "positional_only" for q in params):
        parts.append("/")
    out = "%s(%s)" % (name, ", ".join(parts))
    if ret:
        out += " -> " + ret
    return out


def qualify(o):
    return "%s.%s" % (getattr(o, "__module__", "?"), getattr(o, "__qualname__", getattr(o, "__name__", "?")))


def is_stdlib(modname):
    return (modname or "").split(".")[0] in STDLIB


def inherited_doc(cls, name):
    """(doc, where from) for a class (name None) or a member without a
    docstring of its own, following what inspect.getdoc shows."""
    for base in cls.__mro__[1:]:
        if base is object:
            break
        if name is None:
            d = base.__dict__.get("__doc__")
        else:
            attr = base.__dict__.get(name)
            if attr is None:
                continue
            d = getattr(getattr(attr, "__func__", attr), "__doc__", None)
        if isinstance(d, str) and d.strip():
            where = qualify(base) + ("" if name is None else "." + name)
            return inspect.cleandoc(d), where, is_stdlib(base.__module__)
    return "", "", False


def source_of(obj):
    """(file, line) of a function's or class's definition, or ("", 0)."""
    try:
        target = inspect.unwrap(obj) if callable(obj) else obj
    except ValueError:
        target = obj
    code = getattr(target, "__code__", None)
    if code is not None:
        return code.co_filename, code.co_firstlineno
    if inspect.isclass(obj):
        for v in obj.__dict__.values():
            f = getattr(v, "__func__", getattr(v, "fget", v))
            try:
                f = inspect.unwrap(f) if callable(f) else f
            except ValueError:
                pass
            c = getattr(f, "__code__", None)
            # An Enum's dict holds enum.py's functions: only the class's own count.
            if c is not None and not c.co_filename.startswith("<") and getattr(f, "__module__", None) == obj.__module__:
                return c.co_filename, 0
        try:
            return inspect.getsourcefile(obj) or "", 0
        except (TypeError, OSError):
            return "", 0
    return "", 0


def find_node(path, qualname, line):
    idx = tree_index(path) if path else None
    if idx is None:
        return None
    node = idx.get(qualname)
    if node is not None:
        return node
    for q, n in idx.items():
        if q and line and (n.lineno == line or (getattr(n, "decorator_list", None) and n.decorator_list[0].lineno == line)):
            return n
    return None


class Collector:
    def __init__(self, pkg, roots, siblings=()):
        self.pkg = pkg
        self.own = (pkg,) + tuple(siblings)  # objects defined here are the distribution's
        self.roots = sorted((os.path.abspath(r) for r in roots), key=len, reverse=True)
        self.apis = {}  # identity -> record
        self.paths = {}  # identity -> set of paths
        self.unlisted = {}  # identity -> set of paths left out of their module's __all__

    def relpath(self, f):
        f = os.path.abspath(f)
        for r in self.roots:
            if f.startswith(r + os.sep):
                return os.path.relpath(f, r).replace(os.sep, "/")
        return f

    def ours(self, modname):
        return isinstance(modname, str) and any(modname == p or modname.startswith(p + ".") for p in self.own)

    def add(self, ident, path, make, listed=True):
        if ident not in self.apis:
            rec = {"id": ident}
            try:
                rec.update(make())
            except Exception as e:  # an object that resists introspection is a row, with why
                rec.setdefault("error", "%s: %s" % (type(e).__name__, e))
            self.apis[ident] = rec
            self.paths[ident] = set()
            self.unlisted[ident] = set()
        (self.paths if listed else self.unlisted)[ident].add(path)

    def describe(self, obj, kind, name, fn_obj, cls=None):
        rec = {"kind": kind, "name": name}
        f, line = source_of(fn_obj)
        qual = getattr(fn_obj, "__qualname__", name)
        node = None
        if f and os.path.exists(f):
            node = find_node(f, qual, line)
            rec["file"] = self.relpath(f)
            rec["line"] = node.lineno if node is not None else line
        else:
            rec["no_source"] = True
        own = fn_obj.__doc__ if kind != "class" else obj.__dict__.get("__doc__")
        if kind == "property":
            own = obj.__doc__
        doc = inspect.cleandoc(own) if isinstance(own, str) else ""
        rec["doc"] = doc
        if not doc.strip() and cls is not None:
            rec["inherited_doc"], rec["doc_from"], rec["stdlib_doc"] = inherited_doc(cls, None if kind == "class" else name)
        why = deprecation(fn_obj, node, doc)
        if why:
            rec["deprecated"] = why
        sig_node = node
        if kind == "class":
            sig_node = None
            if isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name == "__init__":
                        sig_node = sub
        try:
            params, ret = params_of(fn_obj if kind != "class" else obj, sig_node)
            if kind == "class":
                ret = ""  # __init__'s "-> None" is not what calling the class returns
            rec["params"], rec["returns"] = params, ret
            rec["signature"] = render(name, params, ret)
        except (TypeError, ValueError) as e:
            rec["signature"] = name
            rec["signature_error"] = "%s: %s" % (type(e).__name__, e)
        return rec

    def visit(self, modname, module, names, listed=True):
        for n in names:
            try:
                obj = getattr(module, n)
            except Exception as e:
                emit({"type": "attribute_error", "module": modname, "error": "%s: %s: %s" % (n, type(e).__name__, e)})
                continue
            path = modname + "." + n
            if inspect.isclass(obj):
                if self.ours(getattr(obj, "__module__", None)):
                    self.visit_class(obj, path, listed)
            elif is_function(obj):
                mod = getattr(obj, "__module__", None)
                if self.ours(mod) and getattr(obj, "__qualname__", None):
                    ident = "%s:%s" % (mod, obj.__qualname__)
                    self.add(ident, path, lambda: self.describe(obj, "function", getattr(obj, "__name__", n), obj), listed)

    def visit_class(self, cls, path, listed=True):
        ident = "%s:%s" % (cls.__module__, cls.__qualname__)
        self.add(ident, path, lambda: self.describe(cls, "class", cls.__name__, cls, cls), listed)
        for n, v in list(cls.__dict__.items()):
            if n.startswith("_"):
                continue
            if inspect.isclass(v):
                if v.__qualname__.startswith(cls.__qualname__ + ".") and self.ours(v.__module__):
                    self.visit_class(v, path + "." + n, listed)  # a nested class
                continue
            if isinstance(v, staticmethod):
                kind, fn = "staticmethod", v.__func__
            elif isinstance(v, classmethod):
                kind, fn = "classmethod", v.__func__
            elif isinstance(v, property):
                kind, fn = "property", v.fget
            elif type(v).__name__ == "cached_property" and hasattr(v, "func"):
                kind, fn = "property", v.func
            elif is_function(v):
                kind, fn = "method", v
            elif inspect.ismethoddescriptor(v) and callable(v):
                kind, fn = "method", v
            else:
                continue
            if fn is None:
                continue
            mod = getattr(fn, "__module__", None) or cls.__module__
            qual = getattr(fn, "__qualname__", None)
            if not self.ours(mod) or not qual:
                continue
            if ("." not in qual and not inspect.isfunction(fn)) or qual.endswith("<lambda>"):
                qual = cls.__qualname__ + "." + n  # lambdas share Cls.<lambda>
            member = v if kind == "property" else fn
            self.add("%s:%s" % (mod, qual), path + "." + n,
                     lambda fn=fn, kind=kind, n=n, member=member: self.describe(member, kind, n, fn, cls), listed)

    def static(self, modname, path):
        """APIs of a module that did not import, from its syntax tree."""
        idx = tree_index(path)
        if idx is None:
            return
        tree = idx[""]
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or node.name.startswith("_"):
                continue
            members = [(node, node.name, "class" if isinstance(node, ast.ClassDef) else "function")]
            if isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and not sub.name.startswith("_"):
                        members.append((sub, node.name + "." + sub.name, static_kind(sub)))
            for n, qual, kind in members:
                rec = {"kind": kind, "name": n.name, "file": self.relpath(path),
                       "line": n.lineno, "static": True, "doc": ast.get_docstring(n) or ""}
                sig = n
                if kind == "class":
                    sig = next((s for s in n.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
                params, ret = static_params(sig) if sig is not None else ([], "")
                if kind == "class" and params and params[0]["name"] == "self":
                    params = params[1:]
                rec["params"], rec["returns"], rec["signature"] = params, ret, render(n.name, params, ret)
                why = deprecation(None, n, rec["doc"])
                if why:
                    rec["deprecated"] = why
                ident = "%s:%s" % (modname, qual)
                self.add(ident, modname + "." + qual, lambda rec=rec: rec)


def static_kind(node):
    for d in node.decorator_list:
        n = last_name(d)
        if n in ("staticmethod", "classmethod", "property", "cached_property"):
            return "property" if n == "cached_property" else n
    return "method"


def is_function(obj):
    """A function, a builtin, a compiled function (Cython's
    cython_function_or_method: a callable with a code object or a text
    signature, neither a function nor a builtin to inspect), or a callable
    object wrapping a function (functools.wraps on an instance, like
    networkx's dispatchers)."""
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return True
    if inspect.isclass(obj) or inspect.ismodule(obj) or not callable(obj):
        return False
    try:
        if isinstance(getattr(obj, "__code__", None), types.CodeType) or isinstance(getattr(obj, "__text_signature__", None), str):
            return True
    except Exception:
        return False
    if not hasattr(obj, "__wrapped__"):
        return False
    try:
        return inspect.isfunction(inspect.unwrap(obj))
    except ValueError:
        return False


def public_names(module):
    """The names a module exports (its __all__, else every name without a
    leading underscore), and the names it defines but leaves out of its
    __all__ (still recorded, as unlisted paths, so that an object that
    becomes exported is not taken for a new one)."""
    names = getattr(module, "__all__", None)
    if isinstance(names, (list, tuple)) and all(isinstance(n, str) for n in names):
        listed = set(names)
        unlisted = [n for n, v in vars(module).items()
                    if not n.startswith("_") and n not in listed and getattr(v, "__module__", None) == module.__name__]
        return list(names), unlisted
    return [n for n in vars(module) if not n.startswith("_")], []


def main(argv):
    global OUT
    paths, timeout, pkg, siblings = [], 30.0, None, []
    i = 0
    while i < len(argv):
        if argv[i] == "--path":
            paths.append(argv[i + 1])
            i += 2
        elif argv[i] == "--sibling":
            siblings.append(argv[i + 1])
            i += 2
        elif argv[i] == "--module-timeout":
            timeout = float(argv[i + 1])
            i += 2
        else:
            pkg = argv[i]
            i += 1
    # Our records keep the real stdout; the library's prints go to stderr.
    OUT = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    sys.path[:0] = [os.path.abspath(p) for p in paths]
    if pkg is None:
        emit({"type": "error", "error": "no package named"})
        return 2
    try:
        files = module_files(pkg)
    except Exception as e:
        emit({"type": "error", "error": "%s: %s" % (type(e).__name__, e)})
        return 0
    col = Collector(pkg, paths or sys.path, siblings)
    signal.signal(signal.SIGALRM, on_alarm)
    loaded = []
    for name, path in files:
        rec = {"type": "module", "module": name, "file": col.relpath(path) if path else ""}
        if is_test_module(name):
            rec["skipped"] = "test module"
            emit(rec)
            continue
        if name.split(".")[-1] == "__main__":
            rec["skipped"] = "__main__ runs the command line"
            emit(rec)
            continue
        emit({"type": "start", "stage": "importing", "module": name})
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            mod = importlib.import_module(name)
            signal.setitimer(signal.ITIMER_REAL, 0)
            loaded.append((name, mod))
        except ImportTimeout:
            rec["error"] = "import timed out after %gs" % timeout
        except BaseException as e:  # SystemExit and KeyboardInterrupt from a library are its failure, not ours
            signal.setitimer(signal.ITIMER_REAL, 0)
            tb = traceback.extract_tb(e.__traceback__)
            where = ""
            if tb:
                where = " (%s:%d)" % (col.relpath(tb[-1].filename), tb[-1].lineno)
            rec["error"] = "%s: %s%s" % (type(e).__name__, e, where)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if "error" in rec and path and path.endswith(".py"):
            rec["static"] = True
            col.static(name, path)
        emit(rec)
    for name, mod in loaded:
        emit({"type": "start", "stage": "listing", "module": name})
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            listed, unlisted = public_names(mod)
            col.visit(name, mod, listed)
            col.visit(name, mod, unlisted, listed=False)
        except ImportTimeout:
            emit({"type": "attribute_error", "module": name, "error": "listing timed out after %gs" % timeout})
        except Exception as e:
            emit({"type": "attribute_error", "module": name, "error": "listing failed: %s: %s" % (type(e).__name__, e)})
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    for ident in sorted(col.apis):
        rec = dict(col.apis[ident])
        rec["type"] = "api"
        rec["paths"] = sorted(col.paths[ident])
        rec["unlisted_paths"] = sorted(col.unlisted[ident] - col.paths[ident])
        emit(rec)
    dist, version = "", ""
    try:
        import importlib.metadata as md
        dists = md.packages_distributions().get(pkg, [])
        if dists:
            dist, version = dists[0], md.version(dists[0])
    except Exception:
        pass
    emit({"type": "done", "python": sys.version.split()[0], "distribution": dist, "version": version})
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    if OUT is not None:
        OUT.flush()
    os._exit(code)  # skip the library's atexit hooks and non-daemon threads
