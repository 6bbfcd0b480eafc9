"""Finds and runs doctest and fenced examples, as JSON.

Usage:
  python3 -I -B examples.py parse            < [{"name": N, "text": T}, ...]
  python3 -I -B examples.py scan ROOT
  python3 -I -B examples.py run [--path DIR]... [--flag NAME]...  < {"name", "module", "text"}

Stdlib only (doctest). parse splits texts into examples with
doctest.DocTestParser (Markdown fence lines read as blank lines, as scan
reads them): [{"name", "text": the text doctest runs, "examples":
[{"source", "want", "line", "calls"}]}], calls being the names each step calls (f of f(), m of x.m()).
scan does the same for the documentation files under ROOT that hold
doctests (*.rst, *.md, *.txt; hidden and __pycache__ directories skipped;
Markdown code fences read as blank lines so that a fence does not end up
in the expected output): [{"name": relative path, "examples": [...]}].
Both also take the Markdown fenced code blocks tagged Python (```python,
```py, ```python3, ```py3; an info string's attributes such as
{lint="skip"} ignored) as "fenced" examples, from every text parse is
given and from the *.md files scan finds: {"fenced": [{"index", "line",
"code", "steps"}], "skips": {index: why}}. A block holding ">>>" is a
doctest's, left to doctest; a block that does not parse is in skips; a
block of another language is not an example. A block's steps are its
top-level statements (statements sharing a line are one step; a
decorated definition starts at its first decorator), each step's want the
"#> " lines from its first line up to the next step's (the output
pydantic's documentation states after a print, prefix stripped).
Neither imports nor runs anything.

run runs one example. A fenced one ("origin": "fenced", its "steps"
given) runs as a script would: its steps in order in the globals of a
fresh module __main__, each step's standard output compared with its want
when it states one (lines' trailing whitespace and trailing blank lines
ignored) and not compared when it states none, stopping at the first step
that does not pass. A doctest runs as doctest.testmod would: in a copy of the globals of
"module" when given (imported first), else in fresh globals (a doc file's
examples import what they use), and prints one JSON object to the
original stdout (what the library prints goes to stderr):
  {"status": "passed"|"failed"|"runtime_error"|"compile_error",
   "got": output that differed, "error": the exception, "steps": [...]}
"""

import ast
import contextlib
import doctest
import io
import json
import os
import re
import sys
import traceback
import types

DOC_SUFFIXES = (".rst", ".md", ".txt")
FENCE = re.compile(r"^\s*(```|~~~)")
OPEN = re.compile(r"^([ \t]*)(`{3,}|~{3,})[ \t]*\{?\.?([A-Za-z0-9_+-]*)")
PYTHON = {"python", "py", "python3", "py3"}


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


def blocks(text):
    """(index, line of the block's first code line from 1, code) of the
    fenced blocks tagged Python, index counting them from 1; an unclosed
    fence runs to the end of the text."""
    lines = text.split("\n")
    out, i, n = [], 0, 0
    while i < len(lines):
        m = OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        j = i + 1
        while j < len(lines):
            st = lines[j].strip()
            if st.startswith(fence[0] * len(fence)) and not st.strip(fence[0]):
                break
            j += 1
        if lang in PYTHON:
            n += 1
            body = [l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[i + 1:j]]
            out.append((n, i + 2, "\n".join(body) + "\n"))
        i = j + 1
    return out


def fenced_steps(code, first_line):
    """The steps of one block: its top-level statements with the "#> "
    lines up to the next one as the want. SyntaxError when it does not
    parse."""
    tree = ast.parse(code)
    lines = code.split("\n")
    spans = []  # [start, end], 1-based, merged when statements share a line
    for st in tree.body:
        start = min([st.lineno] + [d.lineno for d in getattr(st, "decorator_list", [])])
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], st.end_lineno)
            continue
        spans.append([start, st.end_lineno])
    steps = []
    for k, (start, end) in enumerate(spans):
        nxt = spans[k + 1][0] if k + 1 < len(spans) else len(lines) + 1
        want = []
        for l in lines[start - 1:nxt - 1]:
            l = l.strip()
            if l.startswith("#>"):
                want.append(l[3:] if l.startswith("#> ") else l[2:])
        source = "\n".join(lines[start - 1:end]) + "\n"
        steps.append({"source": source, "want": "".join(w + "\n" for w in want), "line": first_line + start - 1, "calls": calls(source)})
    return steps


def fenced_of(text):
    """The fenced examples of a text and the blocks skipped with why."""
    out, skips = [], {}
    for index, line, code in blocks(text):
        if ">>>" in code:
            continue  # a doctest's block: doctest takes it
        try:
            steps = fenced_steps(code, line)
        except (SyntaxError, ValueError) as e:
            skips[str(index)] = "block at line %d does not parse: %s" % (line, getattr(e, "msg", None) or e)
            continue
        if steps:
            out.append({"index": index, "line": line, "code": code, "steps": steps})
    return out, skips


def parse():
    res = []
    for item in json.load(sys.stdin):
        fenced, skips = fenced_of(item["text"])
        text = blank_fences(item["text"])
        try:
            exs = examples_of(item["name"], text) if ">>>" in text else []
        except ValueError as e:  # inconsistent indentation and the like
            res.append({"name": item["name"], "error": str(e), "examples": [], "fenced": fenced, "skips": skips})
            continue
        res.append({"name": item["name"], "text": text, "examples": exs, "fenced": fenced, "skips": skips})
    print(json.dumps(res))


def blank_fences(text):
    """text with its Markdown fence lines blank, so that a fence does not
    end up in a doctest's expected output."""
    return "\n".join("" if FENCE.match(line) else line for line in text.split("\n"))


def doc_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if path.endswith(".md"):
        text = blank_fences(text)
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
                with open(path, encoding="utf-8", errors="replace") as fh:
                    raw = fh.read()
            except OSError as e:
                res.append({"name": rel, "error": str(e), "examples": []})
                continue
            fenced, skips = fenced_of(raw) if f.endswith(".md") else ([], {})
            try:
                text = doc_text(path)
                exs = examples_of(rel, text) if ">>>" in text else []
            except (OSError, ValueError) as e:
                res.append({"name": rel, "error": str(e), "examples": [], "fenced": fenced, "skips": skips})
                continue
            if exs or fenced or skips:
                res.append({"name": rel, "text": text, "examples": exs, "fenced": fenced, "skips": skips})
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


def same_output(got, want):
    norm = lambda t: "\n".join(l.rstrip() for l in t.split("\n")).rstrip("\n")
    return norm(got) == norm(want)


def run_fenced(req, out):
    """Runs a fenced example's steps as a script, in a fresh __main__."""
    mod = types.ModuleType("__main__")
    sys.modules["__main__"] = mod  # what a class defined here resolves its module by
    globs = mod.__dict__
    steps, status, got, error = [], "passed", "", ""
    for s in req.get("steps") or []:
        buf = io.StringIO()
        st = {"source": s["source"], "want": s["want"], "got": "", "status": "passed"}
        try:
            code = compile(s["source"], req.get("file") or req["name"], "exec")
            with contextlib.redirect_stdout(buf):
                exec(code, globs)
        except SyntaxError as e:
            st["status"], st["error"] = "compile_error", "".join(traceback.format_exception_only(type(e), e)).strip()
        except BaseException as e:  # the example's failure, SystemExit included
            st["status"], st["error"] = "runtime_error", "".join(traceback.format_exception_only(type(e), e)).strip()
        st["got"] = buf.getvalue()
        if st["status"] == "passed" and s["want"] and not same_output(st["got"], s["want"]):
            st["status"] = "failed"
        steps.append(st)
        if st["status"] != "passed":
            status, error = st["status"], st.get("error", "")
            got = st["got"] if st["status"] == "failed" else ""
            break
    out.write(json.dumps({"status": status, "got": got, "error": error, "steps": steps}))


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
    if req.get("origin") == "fenced":
        run_fenced(req, out)
        return
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
