"""Finds and runs doctest and fenced examples, as JSON.

Usage:
  python3 -I -B examples.py parse            < [{"name": N, "text": T}, ...]
  python3 -I -B examples.py scan ROOT
  python3 -I -B examples.py run [--path DIR]... [--flag NAME]...  < {"name", "module", "text"}

Stdlib only (doctest, ast, tokenize). parse splits texts (docstrings)
into examples with doctest.DocTestParser, the fence lines of their
fenced blocks read as blank lines (as scan reads them): [{"name", "text":
the text doctest runs, "examples": [{"source", "want", "line",
"calls"}]}], calls being the names each step calls (f of f(), m of
x.m()). scan does the same for the documentation files under ROOT that
hold doctests (*.rst, *.md, *.txt; hidden and __pycache__ directories
skipped; a *.md file's fence lines read as blank lines so that a fence
does not end up in the expected output): [{"name": relative path,
"examples": [...]}]. Only the lines that open and close a block are
blanked (blocks says which), never a fence-like line in a ">>>"
example's expected output; in a docstring a bare line of tildes is
reStructuredText's adornment (a title's underline), no fence.
Both also take the Markdown fenced code blocks tagged Python (```python,
```py, ```python3, ```py3; an info string's attributes such as
{lint="skip"} ignored) as "fenced" examples, from every text parse is
given and from the *.md files scan finds: {"fenced": [{"index", "line",
"code", "steps"}], "skips": {index: why}}. A block holding ">>>" is a
doctest's, left to doctest; a block that does not parse, or is tagged
{test="skip..."} (pydantic's pytest-examples settings), is in skips; a
block of another language is not an example. A block's steps are its
top-level statements (statements sharing a line are one step; a
decorated definition starts at its first decorator), each step's want the
output stated from its first line up to the next step's: "#>" comment
lines (tokenize's comments alone on their line, "#> " stripped: the
output pydantic's documentation states after a print) and
pytest-examples' multi-line form, a triple-quoted string statement right
after a print, dedented ("loose": true on the step; a top-level one is
not a step of its own). Neither imports nor runs anything.

run runs one example. A fenced one ("origin": "fenced", its "steps"
given), and a test made a program ("origin": "test", tests.py), runs as a script would: its steps in order in the globals of a
fresh module __main__, each step's standard output compared with its want
when it states one (lines' trailing whitespace and trailing blank lines
ignored; a loose want's whitespace and commas before a closing bracket,
black's layout, ignored) and not compared when it states none, stopping at the first step
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
import textwrap
import tokenize
import traceback
import types

DOC_SUFFIXES = (".rst", ".md", ".txt")
FENCE_LINE = re.compile(r"^([ \t]*)(`{3,}|~{3,})(.*)$")
PS1 = re.compile(r"^[ ]*>>>")  # doctest's source and continuation lines
PS2 = re.compile(r"^[ ]*\.\.\.")
PYTHON = {"python", "py", "python3", "py3"}
SETTING = re.compile(r"""(\S+?)=(['"])(.+?)\2""")  # pytest-examples' prefix_settings


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


def blocks(text, rst=False):
    """The fenced code blocks of text and the lines of their fences:
    ([(index, line of the block's first code line from 1, code, info)],
    {line index from 0 of each opening and closing fence}), index counting
    the blocks tagged Python from 1 (only those are returned); an unclosed
    fence runs to the end of the text.

    A fence opens as CommonMark has it (three or more backticks or tildes,
    an info string after them, none holding a backtick after backticks)
    and closes on a line of at least as many of its character, with two
    exceptions. A fence-like line inside a ">>>" example's expected output
    (after its source lines, up to a blank line or the next ">>>") is
    output, not a fence, unless it closes the block the example is in.
    With rst (a docstring, which is mostly reStructuredText), a line of
    tildes alone opens no fence: in reStructuredText it is a section
    title's underline or overline, or a transition, and a bare tilde fence
    would swallow the rest of the docstring up to the next such line
    (CommonMark has a fence interrupt a paragraph, and no setext heading
    of tildes). A tilde fence with an info string (~~~python), and a bare
    backtick fence, still open."""
    lines = text.split("\n")
    spans = []  # (opening line, closing line or len(lines), indent, info)
    opened = None  # (line index, indent, fence, info) of the open fence
    source = want = False  # in a ">>>" example's source, in its expected output
    for i, line in enumerate(lines):
        if PS1.match(line):
            source, want = True, False
            continue
        if source and PS2.match(line):
            continue
        if source:
            source, want = False, bool(line.strip())
        elif want and not line.strip():
            want = False
        if opened is not None:
            k, indent, fence, info = opened
            st = line.strip()
            if st.startswith(fence) and not st.strip(fence[0]):
                spans.append((k, i, indent, info))
                opened, want = None, False
            continue
        m = FENCE_LINE.match(line)
        if not m or want:
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3)
        if fence[0] == "`" and "`" in info:
            continue  # inline code, not a fence
        if rst and fence[0] == "~" and not info.strip():
            continue  # reStructuredText's adornment, not a fence
        opened = (i, indent, fence, info)
    if opened is not None:
        spans.append((opened[0], len(lines), opened[1], opened[3]))
    out, fences = [], set()
    for k, end, indent, info in spans:
        fences.update(j for j in (k, end) if j < len(lines))
        lang = re.match(r"[ \t]*\{?\.?([A-Za-z0-9_+-]*)", info).group(1).lower()
        if lang in PYTHON:
            body = [l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[k + 1:end]]
            out.append((len(out) + 1, k + 2, "\n".join(body) + "\n", info))
    return out, fences


def printed_string(st, lines, prev):
    """Whether top-level statement st is pytest-examples' multi-line output:
    a triple-quoted string statement right after a statement that prints."""
    if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str)):
        return False
    if not lines[st.lineno - 1][st.col_offset:].startswith(('"""', "'''")):
        return False
    return prev is not None and any(
        isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "print" for c in ast.walk(prev))


def stated_outputs(code, tree):
    """{line from 1: (text, loose)} of the output code states: the "#>"
    comments alone on their line (tokenize's comments, so a string's
    "#>" line is not one; "#> " stripped), and pytest-examples' multi-line
    form, a triple-quoted string right after a print (at any depth),
    dedented as pytest-examples writes it; loose marks the latter, laid out
    by black."""
    lines = code.split("\n")
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type != tokenize.COMMENT or lines[tok.start[0] - 1][:tok.start[1]].strip():
            continue
        t = tok.string.rstrip()
        if t.startswith("#>"):
            out[tok.start[0]] = (t[3:] if t.startswith("#> ") else t[2:]) + "\n", False
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            for prev, st in zip([None] + body, body):
                if isinstance(st, ast.stmt) and printed_string(st, lines, prev):
                    out[st.lineno] = textwrap.dedent(st.value.value).strip("\n") + "\n", True
    return out


def fenced_steps(code, first_line):
    """The steps of one block: its top-level statements with the output
    they state (stated_outputs) up to the next one as the want; a
    top-level output string is its print's step's want, not a step.
    SyntaxError (or tokenize.TokenError) when it does not parse."""
    tree = ast.parse(code)
    lines = code.split("\n")
    stated = stated_outputs(code, tree)
    spans = []  # [start, end], 1-based, merged when statements share a line
    prev = None
    for st in tree.body:
        if printed_string(st, lines, prev):
            prev = None
            continue
        prev = st
        start = min([st.lineno] + [d.lineno for d in getattr(st, "decorator_list", [])])
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], st.end_lineno)
            continue
        spans.append([start, st.end_lineno])
    steps = []
    for k, (start, end) in enumerate(spans):
        nxt = spans[k + 1][0] if k + 1 < len(spans) else len(lines) + 1
        want = [stated[l] for l in sorted(stated) if start <= l < nxt]
        source = "\n".join(lines[start - 1:end]) + "\n"
        step = {"source": source, "want": "".join(w for w, _ in want), "line": first_line + start - 1, "calls": calls(source)}
        if any(loose for _, loose in want):
            step["loose"] = True
        steps.append(step)
    return steps


def skip_reason(info):
    """Why a block's info string says not to run it: pydantic's
    {test="skip"} (pytest-examples' prefix settings; "skip..." values
    too), or ""."""
    test = dict((m.group(1).lstrip("{"), m.group(3)) for m in SETTING.finditer(info)).get("test", "")
    return 'tagged test="%s"' % test if test.startswith("skip") else ""


def fenced_of(text, rst=False):
    """The fenced examples of a text and the blocks skipped with why."""
    out, skips = [], {}
    for index, line, code, info in blocks(text, rst)[0]:
        if ">>>" in code:
            continue  # a doctest's block: doctest takes it
        why = skip_reason(info)
        if why:
            skips[str(index)] = "block at line %d is %s" % (line, why)
            continue
        try:
            steps = fenced_steps(code, line)
        except (SyntaxError, ValueError, tokenize.TokenError) as e:
            skips[str(index)] = "block at line %d does not parse: %s" % (line, getattr(e, "msg", None) or e)
            continue
        if steps:
            out.append({"index": index, "line": line, "code": code, "steps": steps})
    return out, skips


def parse():
    res = []
    for item in json.load(sys.stdin):
        fenced, skips = fenced_of(item["text"], rst=True)
        text = blank_fences(item["text"], rst=True)
        try:
            exs = examples_of(item["name"], text) if ">>>" in text else []
        except ValueError as e:  # inconsistent indentation and the like
            res.append({"name": item["name"], "error": str(e), "examples": [], "fenced": fenced, "skips": skips})
            continue
        res.append({"name": item["name"], "text": text, "examples": exs, "fenced": fenced, "skips": skips})
    print(json.dumps(res))


def blank_fences(text, rst=False):
    """text with the opening and closing lines of its fenced blocks (as
    blocks finds them) blank, so that a fence does not end up in a
    doctest's expected output; a fence-like line blocks does not take for
    a fence (one in a ">>>" example's expected output) stays."""
    fences = blocks(text, rst)[1]
    return "\n".join("" if i in fences else line for i, line in enumerate(text.split("\n")))


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


def same_output(got, want, loose=False):
    """Whether got is want, lines' trailing whitespace and trailing blank
    lines ignored; loose (pytest-examples' multi-line output, which black
    lays out) ignores all whitespace and a comma before a closing
    bracket."""
    if loose:
        norm = lambda t: re.sub(r",(?=[)\]}])", "", re.sub(r"\s+", "", t))
    else:
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
        if st["status"] == "passed" and s["want"] and not same_output(st["got"], s["want"], s.get("loose", False)):
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
    if req.get("origin") in ("fenced", "test"):  # a test's program runs as a fenced block
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
