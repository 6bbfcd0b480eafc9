"""lacuna's Python harness driver: runs one sample (a task's program with a
solution in place) and writes one signed record. Standard library only.

Descriptors: 7 carries a fresh key (read, then closed, before any task
code runs); 8 is where the record goes, one line: hex HMAC-SHA256 of the
JSON, a space, the JSON. stdin is the configuration (JSON). Whatever the
process prints decides nothing.

The solver's code runs in a thread of its own, so that its frames never
reach main's, which hold the key: the routes from one thread's frames
to another's, and to the key's memory (sys._current_frames, the garbage
collector's object lists, /proc, ctypes, trace and profile hooks), and
starting processes, are refused by an audit hook from the first pass on;
an audit hook cannot be removed. See the package documentation for what this does not stop.
"""

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


def install_guard():
    """Adds the audit hook; returns the switch that arms it."""
    armed = [False]

    def hook(event, args):
        if not armed[0]:
            return
        if event in DENIED:
            raise Refused("lacuna harness: " + event + " is not allowed in a solution")
        # Any path under /proc (open, os.listdir, os.scandir, ...): the
        # process's memory and descriptors.
        if args and isinstance(args[0], (str, bytes)) and event != "import":
            p = os.fsdecode(args[0])
            if p == "/proc" or p.startswith("/proc/") or p.startswith("/dev/mem"):
                raise Refused("lacuna harness: " + event + " of " + p + " is not allowed in a solution")

    sys.addaudithook(hook)
    return armed


class SpyState:
    __slots__ = ("direct", "indirect", "calls", "mock", "lines")

    def __init__(self, lines):
        self.direct = 0
        self.indirect = 0
        self.calls = []
        self.mock = False
        self.lines = lines


def make_spy(target, state, init=False):
    getframe = sys._getframe
    from unittest.mock import MagicMock

    def spy(*args, **kwargs):
        f = getframe(1)
        lo, hi = state.lines
        if f.f_code.co_filename == SOLUTION_FILE and lo <= f.f_lineno <= hi:
            state.direct += 1
            if len(state.calls) < 64:
                state.calls.append({"args": len(args), "kwargs": sorted(kwargs)[:32]})
            if state.mock:
                # A function's result is a mock; a class's instance is
                # left uninitialised (its __init__ not run).
                return None if init else MagicMock(name="lacuna-mock")
        else:
            state.indirect += 1
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
        return {"t": "dict", "type": tn, "len": len(v),
                "items": [[describe(k, depth + 1, budget), describe(x, depth + 1, budget)] for k, x in list(v.items())[:MAX_ITEMS]]}
    attrs = getattr(v, "__dict__", None)
    if isinstance(attrs, dict) and not isinstance(v, type):
        return {"t": "object", "type": tn,
                "items": [[str(k), describe(x, depth + 1, budget)] for k, x in sorted(attrs.items()) if not str(k).startswith("_")][:MAX_ITEMS]}
    return {"t": "opaque", "type": tn}


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
    if with_traceback:
        try:
            tb = traceback.format_exception(type(e), e, e.__traceback__)
            info["traceback"] = "".join(tb)[-4096:]
        except BaseException:
            pass
    return info


def run_pass(code, inputs, state, mock, out):
    """Runs in the solver's thread: the program in a fresh namespace, then
    the solver function on each input. out gets plain data only."""
    state.mock = mock
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


out_name = ["solve"]


def main():
    key = b""
    while True:
        chunk = os.read(7, 4096)
        if not chunk:
            break
        key += chunk
    os.close(7)
    mac = hmac.new(key, digestmod=hashlib.sha256)
    del key
    dumps, write, close, exit_ = json.dumps, os.write, os.close, os._exit
    record = {}

    def emit():
        data = dumps(record, sort_keys=True).encode()
        m = mac.copy()
        m.update(data)
        line = m.hexdigest().encode() + b" " + data + b"\n"
        while line:
            n = write(8, line)
            line = line[n:]
        close(8)
        exit_(0)

    def plain(x, depth=0):
        """Whether x holds only exact JSON types (no subclass whose methods a
        solution wrote). Nested here, out of the solution's reach through the
        driver's module."""
        if depth > 4 * MAX_DEPTH + 8:
            return False
        t = type(x)
        if t in (str, int, float, bool) or x is None:
            return True
        if t is list:
            return all(plain(i, depth + 1) for i in x)
        if t is dict:
            return all(type(k) is str and plain(v, depth + 1) for k, v in x.items())
        return False

    cfg = json.loads(sys.stdin.buffer.read())
    armed = install_guard()
    for p in reversed(cfg.get("paths") or []):
        sys.path.insert(0, p)
    out_name[0] = cfg["function"]
    state = SpyState((cfg["first"], cfg["last"]))
    try:
        code = compile(cfg["program"], SOLUTION_FILE, "exec")
    except SyntaxError as e:
        record["stage"] = "compile"
        record["error"] = error_info(e, with_traceback=False)
        emit()
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
        emit()
    passes = {}
    deadline = float(cfg.get("timeout", 20))
    # Armed for good: a thread the solution started may outlive its pass.
    armed[0] = True
    for name, mock in (("real", False), ("mock", True)):
        out = []
        th = threading.Thread(target=run_pass, args=(code, cfg["inputs"], state, mock, out), daemon=True)
        th.start()
        th.join(deadline)
        if th.is_alive():
            record["stage"] = "timeout"
            record["error"] = {"type": "Timeout", "message": "the %s pass ran past %gs" % (name, deadline)}
            emit()
        # What the solver's thread left behind is checked before use: only
        # plain data counts.
        if not plain(out) or type(state.direct) is not int or type(state.indirect) is not int:
            record["stage"] = "tampered"
            record["error"] = {"type": "Tampered", "message": "the harness's data was replaced"}
            emit()
        if name == "real":
            record["direct"], record["indirect"] = state.direct, state.indirect
            record["calls"] = list(state.calls) if plain(state.calls) else []
        else:
            record["mock_direct"] = state.direct - record["direct"]
        passes[name] = list(out)
        if out and "program_error" in out[0]:
            record["stage"] = "program"
            record["error"] = out[0]["program_error"]
            emit()
    record["stage"] = "ran"
    record["real"] = passes["real"]
    record["mock"] = passes["mock"]
    emit()


if __name__ == "__main__":
    main()
