"""Finds and runs doctest examples, as JSON.

Usage:
  python3 -I -B examples.py parse            < [{"name": N, "text": T}, ...]
  python3 -I -B examples.py scan ROOT
  python3 -I -B examples.py run [--path DIR]... [--flag NAME]...  < {"name", "module", "text"}

Stdlib only (doctest). parse splits texts into examples with
doctest.DocTestParser: [{"name", "examples": [{"source", "want", "line",
"calls"}]}], calls being the names each step calls (f of f(), m of x.m()).
scan does the same for the documentation files under ROOT that hold
doctests (*.rst, *.md, *.txt; hidden and __pycache__ directories skipped;
Markdown code fences read as blank lines so that a fence does not end up
in the expected output): [{"name": relative path, "examples": [...]}].
Neither imports nor runs anything.

run runs one doctest as doctest.testmod would: in a copy of the globals of
"module" when given (imported first), else in fresh globals (a doc file's
examples import what they use), and prints one JSON object to the
original stdout (what the library prints goes to stderr):
  {"status": "passed"|"failed"|"runtime_error"|"compile_error",
   "got": output that differed, "error": the exception, "steps": [...]}
"""

import ast
import doctest
import json
import os
import re
import sys
import traceback

DOC_SUFFIXES = (".rst", ".md", ".txt")
FENCE = re.compile(r"^\s*(```|~~~)")


def calls(source):
    """The names a step calls: f for f(...), m for x.m(...)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name:
                out.append(name)
    return out


def examples_of(name, text):
    out = []
    for ex in doctest.DocTestParser().get_examples(text, name):
        out.append({"source": ex.source, "want": ex.want, "line": ex.lineno + 1, "calls": calls(ex.source)})
    return out


def parse():
    res = []
    for item in json.load(sys.stdin):
        try:
            exs = examples_of(item["name"], item["text"])
        except ValueError as e:  # inconsistent indentation and the like
            res.append({"name": item["name"], "error": str(e), "examples": []})
            continue
        res.append({"name": item["name"], "examples": exs})
    print(json.dumps(res))


def doc_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if path.endswith(".md"):
        text = "\n".join("" if FENCE.match(line) else line for line in text.split("\n"))
    return text


def scan(root):
    res = []
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for f in sorted(files):
            if not f.endswith(DOC_SUFFIXES):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            try:
                text = doc_text(path)
                if ">>>" not in text:
                    continue
                exs = examples_of(rel, text)
            except (OSError, ValueError) as e:
                res.append({"name": rel, "error": str(e), "examples": []})
                continue
            if exs:
                res.append({"name": rel, "text": text, "examples": exs})
    print(json.dumps(res))


class Runner(doctest.DocTestRunner):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.steps = []

    def report_start(self, out, test, example):
        pass

    def report_success(self, out, test, example, got):
        self.steps.append({"source": example.source, "want": example.want, "got": got, "status": "passed"})

    def report_failure(self, out, test, example, got):
        self.steps.append({"source": example.source, "want": example.want, "got": got, "status": "failed"})

    def report_unexpected_exception(self, out, test, example, exc_info):
        kind = "compile_error" if issubclass(exc_info[0], SyntaxError) else "runtime_error"
        err = "".join(traceback.format_exception_only(exc_info[0], exc_info[1])).strip()
        self.steps.append({"source": example.source, "want": example.want, "got": "", "status": kind, "error": err})


def run(argv, out):
    paths, flags = [], 0
    i = 0
    while i < len(argv):
        if argv[i] == "--path":
            paths.append(argv[i + 1])
        elif argv[i] == "--flag":
            flags |= doctest.OPTIONFLAGS_BY_NAME[argv[i + 1]]
        i += 2
    sys.path[:0] = [os.path.abspath(p) for p in paths]
    req = json.load(sys.stdin)
    globs = {"__name__": "__main__"}
    if req.get("module"):
        import importlib

        try:
            globs = dict(vars(importlib.import_module(req["module"])))
        except BaseException as e:  # the library's failure, not ours
            out.write(json.dumps({"status": "runtime_error", "error": "import %s: %s: %s" % (req["module"], type(e).__name__, e), "steps": []}))
            return
    try:
        test = doctest.DocTestParser().get_doctest(req["text"], globs, req["name"], req.get("file") or req["name"], 0)
    except ValueError as e:  # inconsistent indentation: not a doctest
        out.write(json.dumps({"status": "compile_error", "error": "doctest: %s" % e, "steps": []}))
        return
    runner = Runner(verbose=False, optionflags=flags)
    runner.run(test, clear_globs=False)
    status, got, error = "passed", "", ""
    for s in runner.steps:
        if s["status"] != "passed":
            status, error = s["status"], s.get("error", "")
            got = s["got"]
            break
    out.write(json.dumps({"status": status, "got": got, "error": error, "steps": runner.steps}))


def main(argv):
    if not argv:
        print(json.dumps({"error": "no command"}))
        return 2
    if argv[0] == "parse":
        parse()
    elif argv[0] == "scan":
        scan(argv[1])
    elif argv[0] == "run":
        out = os.fdopen(os.dup(1), "w", encoding="utf-8")
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        run(argv[1:], out)
        out.flush()
        os._exit(0)  # skip the library's atexit hooks and non-daemon threads
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
