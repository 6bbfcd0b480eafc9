"""lacuna's Python harness driver: runs one sample (a task's program with a
solution in place) and writes one signed record. Standard library only.

Descriptors: 7 carries a fresh key, 8 is where the record goes, one
line: hex HMAC-SHA256 of the JSON, a space, the JSON. stdin is the
configuration (JSON). Whatever the process prints decides nothing.

The process sets up (compiles the program, imports the target, installs
the spy), then forks. The parent never runs a line of the solution: it
reads the child's report from a pipe, and only then reads the key, and
signs and writes the record. The child runs the solver in a thread of its
own under an audit hook; its main thread, which reports, calls only what
it captured before the solver started. See the package documentation for
what this does not stop.
"""

import collections
import enum
import functools
import hashlib
import hmac
import json
import math
import os
import sys
import threading
import traceback

SOLUTION_FILE = "<lacuna-solution>"
INPUT_FILE = "<lacuna-input>"
MAX_ITEMS = 10000
MAX_NODES = 100000
MAX_DEPTH = 32
MAX_TEXT = 1 << 16

# Audit events refused while the solver's thread runs.
DENIED = frozenset(
    [
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "sys._current_frames",
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",  # refused silently: the new hook is not added
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.spawn",
        "os.exec",
        "os.system",
        "os.kill",
        "os.killpg",
        "signal.pthread_kill",
        "subprocess.Popen",
        "pty.spawn",
        "ctypes.dlopen",
        "ctypes.dlsym",
        "ctypes.addressof",
        "ctypes.cdata",
        "ctypes.cdata/buffer",
        "ctypes.string_at",
        "ctypes.wstring_at",
        "ctypes.call_function",
        "ctypes.get_errno",
        "ctypes.set_errno",
    ]
)


class Refused(RuntimeError):
    """Raised by the audit hook: the harness refuses this operation."""


# Prefixes of the audit events that take a path first ("open" too).
PATH_EVENT_PREFIXES = ("os.", "shutil.", "glob.", "pathlib.", "tempfile.", "io.", "fcntl.")

# Audit events whose first two arguments are both paths.
TWO_PATHS = frozenset(["os.symlink", "os.link", "os.rename", "shutil.copyfile", "shutil.move"])


def install_guard():
    """Adds the audit hook; returns the switch that arms it. The hook runs
    in every thread, the child's main one included: it holds what it uses
    in locals, so that a solution replacing the driver's globals or
    builtins changes nothing it runs.

    A path an event names is refused when it leads into /proc or to
    /dev/mem: the hook makes it absolute (against the working directory),
    drops "." and empty components, applies "..", and follows symbolic
    links itself with the C functions it captured (posix.lstat and
    posix.readlink, not os.path, which a solution could replace), so that
    //proc, /./proc, /tmp/x/../../proc, a link to /proc and /dev/fd/N
    (a link into /proc/self/fd) are all /proc. A relative path with a
    component named proc is refused whatever it is relative to: with
    dir_fd (which no audit event carries) it may be relative to a
    descriptor of /."""
    import posix
    import stat

    armed = [False]
    busy = [False]

    def resolve(p, getcwd=posix.getcwd, lstat=posix.lstat, readlink=posix.readlink, islnk=stat.S_ISLNK,
                oserror=OSError, startswith=str.startswith, split=str.split, join="/".join):
        if not startswith(p, "/"):
            p = getcwd() + "/" + p
        todo = [c for c in split(p, "/") if c and c != "."]
        todo.reverse()
        done = []
        hops = 0
        while todo:
            c = todo.pop()
            if c == "..":
                if done:
                    done.pop()
                continue
            here = "/" + join(done + [c])
            try:
                link = hops < 40 and islnk(lstat(here).st_mode)
            except oserror:
                link = False
            if not link:
                done.append(c)
                continue
            hops += 1
            target = readlink(here)
            if startswith(target, "/"):
                done = []
            more = [x for x in split(target, "/") if x and x != "."]
            more.reverse()
            todo += more
        return "/" + join(done)

    def denied_path(p, type_=type, str_=str, bytes_=bytes, decode=bytes.decode, startswith=str.startswith,
                    split=str.split, isinstance_=isinstance, as_str=str.__str__, resolve=resolve):
        if isinstance_(p, bytes_):
            p = decode(p, "utf-8", "surrogateescape")
        elif type_(p) is not str_:
            p = as_str(p) if isinstance_(p, str_) else None
        if p is None or p == "":
            return None
        if not startswith(p, "/") and "proc" in split(p, "/"):
            return p
        try:
            r = resolve(p)
        except (ValueError, TypeError):  # a NUL byte: no file has that name
            return None
        if r == "/proc" or startswith(r, "/proc/") or r == "/dev/mem" or startswith(r, "/dev/mem/"):
            return p
        return None

    def hook(event, args, armed=armed, busy=busy, denied=DENIED, two=TWO_PATHS, refused=Refused, denied_path=denied_path, len_=len,
             startswith=str.startswith, path_events=PATH_EVENT_PREFIXES):
        if not armed[0] or busy[0]:
            return
        if event in denied:
            raise refused("lacuna harness: " + event + " is not allowed in a solution")
        if event == "import":
            # A fresh copy of _posixsubprocess would bring back the
            # fork_exec that arm() replaced.
            if args and args[0] == "_posixsubprocess":
                raise refused("lacuna harness: importing _posixsubprocess is not allowed in a solution")
            return
        # Any path into /proc (open, os.listdir, os.scandir, os.chdir,
        # os.symlink's target, ...): the process's memory and descriptors.
        # Only events that take paths: others ("compile", "exec", ...)
        # carry source text.
        if not args or not (event == "open" or startswith(event, path_events)):
            return
        busy[0] = True
        try:
            for p in (args[0], args[1]) if event in two and len_(args) > 1 else (args[0],):
                bad = denied_path(p)
                if bad is not None:
                    raise refused("lacuna harness: " + event + " of " + bad + " is not allowed in a solution")
        finally:
            busy[0] = False

    sys.addaudithook(hook)
    return armed


def arm(armed):
    """Arms the audit hook for good, and takes away what starts a process
    without an audit event: _posixsubprocess.fork_exec, which subprocess
    calls after raising its event through its own module's sys (which a
    solution may replace) and which a solution may call itself. The
    process is not dumpable (main), so a process started anyway could not
    read the parent's descriptors or memory; this keeps it from starting."""

    def refuse(*args, **kwargs):
        raise Refused("lacuna harness: _posixsubprocess.fork_exec is not allowed in a solution")

    import _posixsubprocess

    _posixsubprocess.fork_exec = refuse
    sub = sys.modules.get("subprocess")
    if sub is not None:
        sub._fork_exec = refuse
    armed[0] = True


def undumpable():
    """Makes this process, and the child it forks, not dumpable
    (prctl(PR_SET_DUMPABLE, 0)): another process of the same user, such as
    one a solution started, can then neither open its /proc files nor copy
    its descriptors (pidfd_getfd) nor ptrace it; the key (descriptor 7)
    and the record's descriptor (8) stay the parent's. Returns why it
    could not, or None."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
            return "prctl(PR_SET_DUMPABLE, 0) failed: errno %d" % ctypes.get_errno()
        if libc.prctl(3, 0, 0, 0, 0) != 0:  # PR_GET_DUMPABLE
            return "the process is still dumpable"
    except (ImportError, OSError, AttributeError) as e:
        return "prctl(PR_SET_DUMPABLE, 0): %s" % e
    return None


# The spy's state is a plain list (no class whose attributes a solution
# could replace with properties): [direct, indirect, calls, mock, lines].
DIRECT, INDIRECT, CALLS, MOCK, LINES = range(5)


def spy_state(lines):
    return [0, 0, [], False, lines]


def make_spy(target, state, init=False):
    getframe = sys._getframe
    from unittest.mock import MagicMock

    def spy(*args, **kwargs):
        f = getframe(1)
        lo, hi = state[LINES]
        if f.f_code.co_filename == SOLUTION_FILE and lo <= f.f_lineno <= hi:
            state[DIRECT] += 1
            if len(state[CALLS]) < 64:
                state[CALLS].append({"args": len(args), "kwargs": sorted(kwargs)[:32]})
            if state[MOCK]:
                # A function's result is a mock; a class's instance is
                # left uninitialised (its __init__ not run).
                return None if init else MagicMock(name="lacuna-mock")
        else:
            state[INDIRECT] += 1
        return target(*args, **kwargs)

    try:
        functools.update_wrapper(spy, target)
    except (AttributeError, TypeError):
        pass
    return spy


def resolve(module, qualname):
    import importlib

    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = obj.__dict__[part] if isinstance(obj, type) and part in obj.__dict__ else getattr(obj, part)
    return obj


def install_spy(module, qualname, state):
    """Patches every alias of the target: each loaded module's attribute and
    each attribute of a class of a loaded module that is the target (or a
    staticmethod or classmethod of it). A class target is instrumented in
    place (its __init__), so isinstance and every alias keep working.
    Returns how many places were patched."""
    target = resolve(module, qualname)
    if isinstance(target, type):
        init = target.__dict__.get("__init__")
        base = init if init is not None else (lambda self, *a, **k: super(target, self).__init__(*a, **k))
        spy = make_spy(base, state, init=True)
        target.__init__ = spy
        return 1
    raw = target
    if isinstance(raw, (staticmethod, classmethod)):
        raw = raw.__func__
    if not callable(raw):
        raise TypeError("the target is not callable: " + type(raw).__name__)
    spy = make_spy(raw, state)
    patched = 0
    seen_classes = set()
    for mod in list(sys.modules.values()):
        d = getattr(mod, "__dict__", None)
        if not isinstance(d, dict):
            continue
        for name, value in list(d.items()):
            if value is raw:
                setattr(mod, name, spy)
                patched += 1
            elif isinstance(value, type) and id(value) not in seen_classes:
                seen_classes.add(id(value))
                for k, v in list(value.__dict__.items()):
                    if v is raw:
                        setattr(value, k, spy)
                        patched += 1
                    elif isinstance(v, (staticmethod, classmethod)) and v.__func__ is raw:
                        setattr(value, k, type(v)(spy))
                        patched += 1
    return patched


def describe(v, depth=0, budget=None):
    """A JSON description of a value: kind, type and content. At most
    MAX_NODES values are described in all; past that, and past MAX_DEPTH,
    only the type ("cut")."""
    if budget is None:
        budget = [MAX_NODES]
    budget[0] -= 1
    t = type(v)
    tn = t.__module__ + "." + t.__qualname__
    if depth > MAX_DEPTH or budget[0] < 0:
        return {"t": "cut", "type": tn}
    if v is None:
        return {"t": "none", "type": tn}
    if isinstance(v, bool):
        return {"t": "bool", "type": tn, "v": bool(v)}
    if isinstance(v, int):
        return {"t": "int", "type": tn, "v": str(int(v))}
    if isinstance(v, float):
        return {"t": "float", "type": tn, "v": num(float(v))}
    if isinstance(v, complex):
        return {"t": "complex", "type": tn, "v": [num(v.real), num(v.imag)]}
    if isinstance(v, str):
        return {"t": "str", "type": tn, "v": str(v)[:MAX_TEXT], "len": len(v)}
    if isinstance(v, (bytes, bytearray)):
        return {"t": "bytes", "type": tn, "v": bytes(v[:MAX_TEXT]).hex(), "len": len(v)}
    if tn.startswith("unittest.mock."):
        return {"t": "mock", "type": tn}
    if tn == "numpy.ndarray":
        return {"t": "array", "type": tn, "dtype": str(v.dtype), "shape": list(v.shape),
                "items": [describe(x, depth + 1, budget) for x in v.ravel().tolist()[:MAX_ITEMS]]}
    if t.__module__ == "numpy" and hasattr(v, "item") and hasattr(v, "dtype"):
        d = describe(v.item(), depth + 1, budget)
        d["type"] = tn
        return d
    if isinstance(v, (list, tuple)):
        return {"t": "list" if isinstance(v, list) else "tuple", "type": tn, "len": len(v),
                "items": [describe(x, depth + 1, budget) for x in list(v)[:MAX_ITEMS]]}
    if isinstance(v, (set, frozenset)):
        items = [describe(x, depth + 1, budget) for x in list(v)[:MAX_ITEMS]]
        items.sort(key=lambda d: json.dumps(d, sort_keys=True))
        return {"t": "set", "type": tn, "items": items, "len": len(v)}
    if isinstance(v, dict):
        items = [[describe(k, depth + 1, budget), describe(x, depth + 1, budget)] for k, x in list(v.items())[:MAX_ITEMS]]
        if not isinstance(v, collections.OrderedDict):
            # == on a dict ignores order: so does the comparison (the
            # order of a dict built from a set varies between runs).
            items.sort(key=lambda kv: json.dumps(kv[0], sort_keys=True))
        return {"t": "dict", "type": tn, "len": len(v), "items": items}
    if isinstance(v, enum.Enum):
        return {"t": "enum", "type": tn, "items": [["name", describe(v.name, depth + 1, budget)], ["value", describe(v.value, depth + 1, budget)]]}
    attrs = getattr(v, "__dict__", None)
    d = {"t": "opaque", "type": tn}
    if isinstance(attrs, dict) and not isinstance(v, type):
        pairs = [(str(k), x) for k, x in sorted(attrs.items(), key=lambda kv: str(kv[0])) if not str(k).startswith("__")]
        public = [kx for kx in pairs if not kx[0].startswith("_")]
        # Objects whose state is all private are compared by it.
        d = {"t": "object", "type": tn, "items": [[k, describe(x, depth + 1, budget)] for k, x in (public or pairs)[:MAX_ITEMS]]}
    if type(v).__repr__ is not object.__repr__:
        # A repr of the type's own carries what it shows of the value
        # (datetime, Decimal, Fraction, Path, a graph's size); one with an
        # address in it does not.
        try:
            r = repr(v)
        except Exception:
            r = None
        if isinstance(r, str) and " at 0x" not in r:
            d["repr"] = r[:MAX_TEXT]
    return d


def num(f):
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return f


def error_info(e, with_traceback=True):
    info = {"type": type(e).__qualname__, "type_module": type(e).__module__}
    try:
        info["message"] = str(e)[:4096]
    except BaseException:
        info["message"] = "<unprintable>"
    name = getattr(e, "name", None)
    if isinstance(name, str):
        info["name"] = name
    obj = getattr(e, "obj", None) if isinstance(e, AttributeError) else None
    if obj is not None and type(obj).__name__ == "module":
        info["obj_module"] = str(getattr(obj, "__name__", ""))
    if isinstance(e, SyntaxError):
        info["line"] = int(e.lineno or 0)
    # The file of the innermost frame that raised it, the import
    # machinery's left out: the solution's, or the library's.
    tb = e.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if isinstance(name, str) and not name.startswith("<frozen "):
            info["file"] = name
        tb = tb.tb_next
    if with_traceback:
        try:
            tb = traceback.format_exception(type(e), e, e.__traceback__)
            info["traceback"] = "".join(tb)[-4096:]
        except BaseException:
            pass
    return info


def run_pass(code, inputs, state, mock, out, done):
    """Runs in the solver's thread: the program in a fresh namespace, then
    the solver function on each input; releases done at the end. out gets
    plain data only."""
    try:
        state[MOCK] = mock
        ns = {"__name__": "__lacuna_task__", "__builtins__": __builtins__}
        try:
            exec(code, ns)
        except BaseException as e:
            out.append({"program_error": error_info(e)})
            return
        solve = ns.get(out_name[0])
        if not callable(solve):
            out.append({"program_error": {"type": "NameError", "type_module": "builtins", "message": "the program defines no " + out_name[0], "name": out_name[0]}})
            return
        for src in inputs:
            try:
                args = eval(compile(src, INPUT_FILE, "eval"), ns)
                if not isinstance(args, tuple):
                    args = (args,)
                out.append({"value": describe(solve(*args))})
            except BaseException as e:
                out.append({"raised": error_info(e)})
    finally:
        done.release()


out_name = ["solve"]


MAX_REPORT = 16 << 20  # the record's limit on lacuna's side


def read_all(fd, limit=MAX_REPORT):
    """What fd carries up to its end, or None past limit bytes."""
    chunks, n = [], 0
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        n += len(chunk)
        if n > limit:
            return None
        chunks.append(chunk)


def main():
    """Sets up (compiles the program, imports the target's modules, installs
    the spy), then forks. The child runs the solver and reports to the
    parent over a pipe; the parent, which never runs a line of the
    solution, reads the key from descriptor 7 only then, and signs and
    writes the record."""
    cfg = json.loads(sys.stdin.buffer.read())
    why = undumpable()
    if why is not None:
        # Fail closed: a dumpable parent lends its key to any process the
        # solution starts.
        sign_and_exit({"stage": "load", "error": {"type": "HarnessError", "message": "lacuna harness: " + why}}, 0)
    armed = install_guard()
    for p in reversed(cfg.get("paths") or []):
        sys.path.insert(0, p)
    out_name[0] = cfg["function"]
    state = spy_state((cfg["first"], cfg["last"]))
    record = {}
    try:
        code = compile(cfg["program"], SOLUTION_FILE, "exec")
    except SyntaxError as e:
        record["stage"] = "compile"
        record["error"] = error_info(e, with_traceback=False)
        sign_and_exit(record, 0)
    try:
        import importlib

        importlib.import_module(cfg["module"])
        for m in cfg.get("modules") or []:
            # A path's module: the longest prefix that imports
            # ("pkg.Grid" of the method path "pkg.Grid.cells" is a class).
            while m:
                try:
                    importlib.import_module(m)
                    break
                except ModuleNotFoundError as e:
                    if e.name != m:
                        raise
                    m = m.rpartition(".")[0]
        record["patched"] = install_spy(cfg["module"], cfg["qualname"], state)
    except BaseException as e:
        record["stage"] = "load"
        record["error"] = error_info(e)
        sign_and_exit(record, 0)
    nonce = os.urandom(16).hex().encode() + b" "
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.close(7)
        os.close(8)
        child(cfg, code, state, armed, nonce, w)
    os.close(w)
    data = read_all(r)
    if data is None:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    exit_code = os.waitstatus_to_exitcode(status)
    if data is None:
        record["stage"] = "tampered"
        record["error"] = {"type": "Tampered", "message": "the child's report is larger than %d bytes" % MAX_REPORT}
        sign_and_exit(record, 0)
    if not data:
        # The child ended without reporting: no record (a crash).
        os._exit(exit_code if exit_code > 0 else 1)
    report = None
    if data.startswith(nonce):
        try:
            report = json.loads(data[len(nonce):])
        except (ValueError, RecursionError):
            pass
    if type(report) is not dict or set(report) - REPORTED:
        record["stage"] = "tampered"
        record["error"] = {"type": "Tampered", "message": "the child's report is not the harness's"}
    else:
        record.update(report)
    sign_and_exit(record, 0)


# What the child may report.
REPORTED = frozenset(["stage", "error", "direct", "indirect", "mock_direct", "calls", "real", "mock"])


def sign_and_exit(record, code):
    """Reads the key (descriptor 7), writes the signed record (descriptor 8)
    and exits. Only the parent, which never runs the solution, calls it."""
    key = read_all(7)
    os.close(7)
    data = json.dumps(record, sort_keys=True).encode()
    mac = hmac.new(key, data, hashlib.sha256).hexdigest().encode()
    line = mac + b" " + data + b"\n"
    while line:
        n = os.write(8, line)
        line = line[n:]
    os.close(8)
    os._exit(code)


def child(cfg, code, state, armed, nonce, w):
    """Runs the two passes, each in a thread of its own, and reports to the
    parent over w. From the moment the solver's thread starts, this
    thread calls only what it captured before (C functions and builtins,
    held in locals): nothing a solution can replace by patching a module,
    a class or builtins runs here. It holds no key; the nonce only tells
    the parent that the report comes from here and not from a solution
    writing to w."""
    import _json
    import _thread

    exit_, write, join, copy_list = os._exit, os.write, "".join, list
    encode = _json.make_encoder(None, None, _json.encode_basestring_ascii, None, ":", ",", True, False, True)
    to_bytes = str.encode
    new_lock, start = _thread.allocate_lock, _thread.start_new_thread
    type_, str_, int_, float_, bool_, list_, dict_, items = type, str, int, float, bool, list, dict, dict.items
    depth_max = 4 * MAX_DEPTH + 8
    keep = []  # every object the solver's thread handed over stays alive here (no finaliser runs in this thread)
    record = {}

    def plain(x, depth):
        """A copy of x when it holds only exact JSON types (no subclass whose
        methods a solution wrote), else None."""
        if depth > depth_max:
            return None
        t = type_(x)
        if t is str_ or t is int_ or t is float_ or t is bool_ or x is None:
            return x
        if t is list_:
            c = []
            for i in copy_list(x):
                v = plain(i, depth + 1)
                if v is None and i is not None:
                    return None
                c.append(v)
            return c
        if t is dict_:
            c = {}
            for k, v in copy_list(items(x)):
                pv = plain(v, depth + 1)
                if type_(k) is not str_ or (pv is None and v is not None):
                    return None
                c[k] = pv
            return c
        return None

    def report():
        data = to_bytes(join(encode(record, 0)))
        line = nonce + data
        while line:
            n = write(w, line)
            line = line[n:]
        exit_(0)

    deadline = float(cfg.get("timeout", 20))
    inputs = cfg["inputs"]
    direct = 0
    run, i_direct, i_indirect, i_calls = run_pass, DIRECT, INDIRECT, CALLS
    # Armed for good: a thread the solution started may outlive its pass.
    arm(armed)
    for name, mock in (("real", False), ("mock", True)):
        out = []
        done = new_lock()
        done.acquire()
        keep.append(out)
        start(run, (code, inputs, state, mock, out, done))
        if not done.acquire(True, deadline):
            record["stage"] = "timeout"
            record["error"] = {"type": "Timeout", "message": "the " + name + " pass ran past its limit"}
            report()
        # What the solver's thread left behind is copied and checked: only
        # plain data counts.
        got = plain(out, 0)
        d, ind, calls = state[i_direct], state[i_indirect], plain(state[i_calls], 0)
        keep.append(d)
        keep.append(ind)
        if got is None or type_(d) is not int_ or type_(ind) is not int_:
            record["stage"] = "tampered"
            record["error"] = {"type": "Tampered", "message": "the harness's data was replaced"}
            report()
        if name == "real":
            direct = d
            record["direct"], record["indirect"] = d, ind
            record["calls"] = calls if calls is not None else []
        else:
            record["mock_direct"] = d - direct
        record[name] = got
        if got and type_(got[0]) is dict_ and "program_error" in got[0]:
            record["stage"] = "program"
            record["error"] = got[0]["program_error"]
            report()
    record["stage"] = "ran"
    report()


if __name__ == "__main__":
    main()
