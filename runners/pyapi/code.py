"""Reads the declarations of one Python source file for M_code, as JSON.

Usage: python3 -I -B code.py FILE QUALNAME...

Stdlib only (ast, tokenize); the file is parsed, never imported or run.
Prints one JSON object:

  {"roots": {QUALNAME: KEY or {"error": ...}},
   "decls": {KEY: {"line": N, "source": ..., "uses": [KEY...], "unparsed": bool}}}

A key is a module-level name ("_helper") or a class member ("Point._norm",
"Outer.Inner.m"). "decls" holds the roots and every helper reachable from
them. A helper is a module-level def, class or assignment of the file whose
name is not exported (it starts with "_", or the module's literal __all__
leaves it out), referred to by name where no local binds it; or a private
member ("_m", not a dunder) of the enclosing class, called as self._m or
cls._m from a method. Names bound by an import are never helpers, whatever
module they come from.

Sources are the file's own text (comments and formatting kept), every
docstring inside the declaration removed (a body left empty gets "pass"),
dedented to column 0. When a docstring shares a line with other code the
declaration is printed by ast.unparse instead, without comments
("unparsed": true).
"""

import ast
import json
import sys
import tokenize

DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def is_private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def literal_all(tree):
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                try:
                    return set(ast.literal_eval(node.value))
                except (ValueError, TypeError, SyntaxError):
                    return None
    return None


def top_level(tree):
    """name -> node bound at module level (the last binding wins; an import
    binds None), including bindings under if and try."""
    out = {}

    def visit(body):
        for node in body:
            if isinstance(node, DEFS):
                out[node.name] = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            out[n.id] = node
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    out[(a.asname or a.name).split(".")[0]] = None
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(node.orelse)
                for h in getattr(node, "handlers", []):
                    visit(h.body)
                visit(getattr(node, "finalbody", []))

    visit(tree.body)
    return out


def qual_index(tree):
    """qualname -> (def/class node, enclosing class key or "")."""
    idx = {}

    def visit(body, prefix, cls):
        for node in body:
            if isinstance(node, DEFS):
                q = prefix + node.name
                if q in idx and is_accessor(node):
                    continue  # a property's setter or deleter: the getter is the API
                idx[q] = (node, cls)  # else the last definition, the one bound (after @overload stubs)
                if isinstance(node, ast.ClassDef):
                    visit(node.body, q + ".", q)
            elif isinstance(node, (ast.If, ast.Try)):
                for b in (node.body, node.orelse, *[h.body for h in getattr(node, "handlers", [])], getattr(node, "finalbody", [])):
                    visit(b, prefix, cls)

    visit(tree.body, "", "")
    return idx


def is_accessor(node):
    return any(isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") for d in getattr(node, "decorator_list", []))


def local_names(node):
    """Names bound inside node (parameters, assignments, imports, nested
    definitions), less those declared global."""
    bound, glob = set(), set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            bound.add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                bound.add((a.asname or a.name).split(".")[0])
        elif isinstance(n, DEFS) and n is not node:
            bound.add(n.name)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            bound.add(n.name)
        elif isinstance(n, ast.Global):
            glob.update(n.names)
    return bound - glob


class File:
    def __init__(self, path):
        with tokenize.open(path) as f:
            text = f.read()
        self.tree = ast.parse(text, filename=path)
        self.lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self.top = top_level(self.tree)
        self.exported = literal_all(self.tree)
        self.quals = qual_index(self.tree)
        self.decls = {}

    def helper_name(self, name):
        node = self.top.get(name)
        if node is None:
            return False
        if self.exported is not None and name not in self.exported:
            return True
        return is_private(name)

    def member(self, cls, name):
        """The key of a private member name of class cls, or None."""
        if not cls or not is_private(name):
            return None
        key = cls + "." + name
        return key if key in self.quals else None

    def uses(self, node, cls):
        """Helper keys node refers to, in source order."""
        local = local_names(node) if not isinstance(node, (ast.Assign, ast.AnnAssign)) else set()
        if isinstance(node, DEFS):
            local.discard(node.name)
        hits = []
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                if n.id not in local and self.helper_name(n.id):
                    hits.append((n.lineno, n.col_offset, n.id))
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls") and not isinstance(node, ast.ClassDef):
                k = self.member(cls, n.attr)
                if k is not None:
                    hits.append((n.lineno, n.col_offset, k))
        out, seen = [], set()
        for _, _, k in sorted(hits):
            if k not in seen:
                seen.add(k)
                out.append(k)
        return out

    def source(self, node):
        """(text, unparsed) of node without its docstrings."""
        start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
        end = node.end_lineno
        drop, empty = set(), {}
        for n in ast.walk(node):
            if not isinstance(n, DEFS) or not n.body or not is_docstring(n.body[0]):
                continue
            d = n.body[0]
            if not self.alone(d) or d.lineno == n.lineno:
                return unparse_without_docs(node), True
            drop.update(range(d.lineno, d.end_lineno + 1))
            if len(n.body) == 1:
                empty[d.lineno] = d.col_offset
            elif d.end_lineno < len(self.lines) and not self.lines[d.end_lineno].strip():
                drop.add(d.end_lineno + 1)  # the blank line after it
        out = []
        for i in range(start, end + 1):
            if i in empty:
                out.append(self.lines[i - 1][: empty[i]] + "pass")
            elif i not in drop:
                out.append(self.lines[i - 1])
        return dedent(out, node.col_offset), False

    def alone(self, stmt):
        """Whether stmt has its lines to itself."""
        first = self.lines[stmt.lineno - 1].encode()
        last = self.lines[stmt.end_lineno - 1].encode()
        before = first[: stmt.col_offset].strip()
        after = last[stmt.end_col_offset:].strip()
        return before == b"" and (after == b"" or after.startswith(b"#"))

    def add(self, key, node, cls):
        if key in self.decls:
            return
        text, unparsed = self.source(node)
        rec = {"line": node.lineno, "source": text, "unparsed": unparsed, "uses": []}
        self.decls[key] = rec
        rec["uses"] = self.uses(node, cls)
        for k in rec["uses"]:
            if k in self.quals:
                n, c = self.quals[k]
                if "." in k:  # a class member: its enclosing class is c
                    self.add(k, n, c)
                    continue
            self.add(k, self.top[k], k if isinstance(self.top[k], ast.ClassDef) else "")


def is_docstring(stmt):
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def unparse_without_docs(node):
    import copy

    node = copy.deepcopy(node)
    for n in ast.walk(node):
        if isinstance(n, DEFS) and n.body and is_docstring(n.body[0]):
            n.body = n.body[1:] or [ast.Pass()]
    return ast.unparse(node)


def dedent(lines, col):
    out = []
    for line in lines:
        pre = line[:col]
        out.append(line[col:] if pre.strip() == "" else line)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out)


def main(argv):
    if not argv:
        print(json.dumps({"error": "no file named"}))
        return 2
    try:
        f = File(argv[0])
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError) as e:
        print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
        return 0
    roots = {}
    for q in argv[1:]:
        hit = f.quals.get(q)
        if hit is None:
            roots[q] = {"error": "no def or class %s in the file" % q}
            continue
        node, cls = hit
        if isinstance(node, ast.ClassDef):
            cls = q
        f.add(q, node, cls)
        roots[q] = q
    print(json.dumps({"roots": roots, "decls": f.decls}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
