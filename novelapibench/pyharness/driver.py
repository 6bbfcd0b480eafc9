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
import copy
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
import types

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
# could replace with properties): [direct, indirect, calls, substitute,
# lines, args, args_free, argument calls seen, args cut].
DIRECT, INDIRECT, CALLS, SUBST, LINES, ARGS, ARGS_FREE, ARG_CALLS, ARGS_CUT = range(9)
MAX_ARG_TUPLES = 64
MAX_ARG_CALLS = 10000
ARG_BUDGET = 4000  # values described per call's arguments


def spy_state(lines, substitute):
    return [0, 0, [], bool(substitute), lines, [], [], 0, False]


def signature_of(target):
    try:
        import inspect

        return inspect.signature(target)
    except (TypeError, ValueError):
        return None


def bound_args(sig, args, kwargs, init):
    """The call's arguments by parameter name, defaults applied, so that
    scale(xs, 2), scale(xs, factor=2) and scale(xs) (factor's default 2)
    are one call on one set of data; positional then keywords by name
    when the signature does not bind. A constructor's self is left out."""
    if sig is not None:
        try:
            ba = sig.bind(*args, **kwargs)
            ba.apply_defaults()
            items = list(ba.arguments.items())
            return items[1:] if init else items
        except TypeError:
            pass
    if init:
        args = args[1:]
    return [(str(i), a) for i, a in enumerate(args)] + sorted(kwargs.items())


def arg_key(v, depth, budget):
    """A canonical text of an argument's value, and its order-free form
    (every sequence's items sorted): equal for equal data, whatever the
    container (a list or a tuple, a numpy array or the list it holds) or
    the number's type (2 and 2.0), with no address in it. A callable is
    "callable": function arguments are not compared."""
    budget[0] -= 1
    if depth > MAX_DEPTH or budget[0] < 0:
        return ("...", "...")
    if v is None:
        return ("None", "None")
    t = type(v)
    if isinstance(v, enum.Enum):
        k = t.__qualname__ + "." + str(v.name)
        return (k, k)
    if t.__module__ == "numpy" and hasattr(v, "item") and hasattr(v, "dtype") and t.__name__ != "ndarray":
        try:
            return arg_key(v.item(), depth + 1, budget)
        except Exception:
            pass
    if isinstance(v, bool):
        k = "True" if v else "False"
        return (k, k)
    if isinstance(v, int):
        k = str(int(v))
        return (k, k)
    if isinstance(v, float):
        f = float(v)
        k = str(int(f)) if f.is_integer() else repr(f)
        return (k, k)
    if isinstance(v, complex):
        k = repr(complex(v))
        return (k, k)
    if isinstance(v, str):
        k = json.dumps(str(v)[:MAX_TEXT])
        return (k, k)
    if isinstance(v, (bytes, bytearray)):
        k = "b" + bytes(v[:MAX_TEXT]).hex()
        return (k, k)
    if t.__module__ == "numpy" and t.__name__ == "ndarray":
        if v.size > MAX_ITEMS:
            k = "array(%s, %s)" % (v.dtype, list(v.shape))
            return (k, k)
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        ks = [arg_key(x, depth + 1, budget) for x in list(v)[:MAX_ITEMS]]
        return ("[" + ",".join(k[0] for k in ks) + "]", "[" + ",".join(sorted(k[1] for k in ks)) + "]")
    if isinstance(v, (set, frozenset)):
        ks = [arg_key(x, depth + 1, budget) for x in list(v)[:MAX_ITEMS]]
        return ("{" + ",".join(sorted(k[0] for k in ks)) + "}", "{" + ",".join(sorted(k[1] for k in ks)) + "}")
    if isinstance(v, dict):
        ks = [(arg_key(a, depth + 1, budget), arg_key(b, depth + 1, budget)) for a, b in list(v.items())[:MAX_ITEMS]]
        return ("{" + ",".join(sorted(a[0] + ":" + b[0] for a, b in ks)) + "}",
                "{" + ",".join(sorted(a[1] + ":" + b[1] for a, b in ks)) + "}")
    if callable(v):
        return ("callable", "callable")
    name = t.__module__ + "." + t.__qualname__
    if t.__repr__ is not object.__repr__:
        try:
            r = repr(v)
        except Exception:
            r = None
        if isinstance(r, str) and " at 0x" not in r:
            k = name + ":" + r[:MAX_TEXT]
            return (k, k)
    attrs = getattr(v, "__dict__", None)
    if isinstance(attrs, dict) and not isinstance(v, (type, types.ModuleType)):
        pairs = [(str(k), x) for k, x in list(attrs.items()) if not str(k).startswith("__")]
        public = [kx for kx in pairs if not kx[0].startswith("_")]
        ks = sorted((k, arg_key(x, depth + 1, budget)) for k, x in (public or pairs)[:MAX_ITEMS])
        return (name + "(" + ",".join(k + "=" + x[0] for k, x in ks) + ")", name + "(" + ",".join(k + "=" + x[1] for k, x in ks) + ")")
    return (name, name)


def record_args(state, sig, args, kwargs, init):
    """Adds the call's argument tuple to the state's set of distinct ones:
    past MAX_ARG_TUPLES distinct tuples or MAX_ARG_CALLS calls, the set is
    cut (nothing asserted of it)."""
    if state[ARGS_CUT]:
        return
    state[ARG_CALLS] += 1
    if state[ARG_CALLS] > MAX_ARG_CALLS:
        state[ARGS_CUT] = True
        return
    budget = [ARG_BUDGET]
    exact, free = [], []
    for name, a in bound_args(sig, args, kwargs, init):
        e, f = arg_key(a, 0, budget)
        exact.append(str(name) + "=" + e)
        free.append(str(name) + "=" + f)
    for lst, k in ((state[ARGS], "\x1f".join(exact)), (state[ARGS_FREE], "\x1f".join(free))):
        if k not in lst:
            lst.append(k)
    if len(state[ARGS]) > MAX_ARG_TUPLES or len(state[ARGS_FREE]) > MAX_ARG_TUPLES:
        state[ARGS_CUT] = True


# Substitution: a value of the same type and shape as the one given,
# derived from it, different wherever it can be. Letters and digits shift
# to the next (z to a, 9 to 0).
def _shift_table():
    t = {}
    for lo, n in ((48, 10), (65, 26), (97, 26)):
        for i in range(n):
            t[lo + i] = lo + (i + 1) % n
    return t


TEXT_SHIFT = _shift_table()
BYTES_SHIFT = bytes(TEXT_SHIFT.get(i, i) for i in range(256))


def _same_type(t, v, fallback):
    try:
        return t(v)
    except Exception:
        return fallback


def perturb(v, depth=0, budget=None):
    """The substitute of v: ints grow by one (a bool flips), floats and
    complex numbers by one (nan and inf kept), a string's or bytes'
    letters and digits shift, containers are perturbed item by item (the
    same length and container type; a dict's keys kept), a numeric numpy
    array grows by one (its dtype and shape kept), an iterator yields
    perturbed items, an enum member becomes the next of its enum, an
    object is a copy with its public attributes (else its private ones)
    perturbed; None, callables, and what cannot be copied stay. The same
    value gives the same substitute."""
    if budget is None:
        budget = [MAX_NODES]
    budget[0] -= 1
    if v is None or depth > MAX_DEPTH or budget[0] < 0:
        return v
    t = type(v)
    try:
        if isinstance(v, enum.Enum):
            members = list(t)
            return members[(members.index(v) + 1) % len(members)] if v in members else v
        if isinstance(v, bool):
            return not v
        if isinstance(v, int):
            return v + 1 if t is int else _same_type(t, v + 1, v)
        if isinstance(v, float):
            if math.isnan(v) or math.isinf(v):
                return v
            return v + 1.0 if t is float else _same_type(t, v + 1.0, v)
        if isinstance(v, complex):
            return v + 1 if t is complex else _same_type(t, v + 1, v)
        if isinstance(v, str):
            s = str.translate(v, TEXT_SHIFT)
            return s if t is str else _same_type(t, s, v)
        if isinstance(v, bytes):
            b = bytes.translate(v, BYTES_SHIFT)
            return b if t is bytes else _same_type(t, b, v)
        if isinstance(v, bytearray):
            return _same_type(t, bytes(v).translate(BYTES_SHIFT), v)
        if t.__module__.startswith("numpy") and hasattr(v, "dtype") and hasattr(v, "shape"):
            kind = v.dtype.kind
            if t.__name__ == "ndarray" or hasattr(v, "copy") and getattr(v, "ndim", 0) > 0:
                w = v.copy()
                if kind == "b":
                    w[...] = ~v
                elif kind in "iufc":
                    w += 1
                return w
            if kind == "b":
                return t(not v)
            if kind in "iufc":
                return t(v + 1)
            return v
        if isinstance(v, list):
            items = [perturb(x, depth + 1, budget) for x in v]
            if t is list:
                return items
            w = copy.copy(v)
            w[:] = items
            return w
        if isinstance(v, tuple):
            items = [perturb(x, depth + 1, budget) for x in v]
            if t is tuple:
                return tuple(items)
            if hasattr(t, "_fields"):
                return t(*items)
            return _same_type(t, items, v)
        if isinstance(v, (set, frozenset)):
            items = [perturb(x, depth + 1, budget) for x in v]
            return set(items) if t is set else frozenset(items) if t is frozenset else _same_type(t, items, v)
        if isinstance(v, dict):
            w = dict(v) if t is dict else copy.copy(v)
            for k in list(w):
                w[k] = perturb(w[k], depth + 1, budget)
            return w
        if isinstance(v, types.GeneratorType) or (hasattr(t, "__next__") and hasattr(t, "__iter__") and iter(v) is v):
            return (perturb(x) for x in v)
        if callable(v) or isinstance(v, types.ModuleType):
            return v
        attrs = getattr(v, "__dict__", None)
        if isinstance(attrs, dict):
            w = copy.copy(v)
            if w is v or not isinstance(getattr(w, "__dict__", None), dict):
                return v
            perturb_attrs(w, depth, budget)
            return w
    except Exception:
        pass
    return v


def perturb_attrs(obj, depth, budget):
    """Perturbs obj's public attributes (else its private ones, as
    describe compares it) in place, through its __dict__ (a frozen
    dataclass's or a validating model's too). Reports whether it had any."""
    d = obj.__dict__
    pairs = [k for k in list(d) if isinstance(k, str) and not k.startswith("__") and not callable(d[k])]
    public = [k for k in pairs if not k.startswith("_")]
    for k in public or pairs:
        d[k] = perturb(d[k], depth + 1, budget)
    return bool(public or pairs)


def perturb_in_place(v):
    """Perturbs a mutable value in place (a list's, dict's, set's or
    bytearray's items, a writable numeric numpy array, an object's
    attributes); reports whether it could."""
    try:
        t = type(v)
        if isinstance(v, list):
            v[:] = [perturb(x) for x in v]
            return True
        if isinstance(v, dict):
            for k in list(v):
                v[k] = perturb(v[k])
            return True
        if isinstance(v, set):
            items = [perturb(x) for x in v]
            v.clear()
            v.update(items)
            return True
        if isinstance(v, bytearray):
            v[:] = bytes(v).translate(BYTES_SHIFT)
            return True
        if t.__module__.startswith("numpy") and t.__name__ == "ndarray":
            if not v.flags.writeable or v.dtype.kind not in "biufc":
                return False
            if v.dtype.kind == "b":
                v[...] = ~v
            else:
                v += 1
            return True
        if isinstance(v, (type, types.ModuleType)) or callable(v):
            return False
        if isinstance(getattr(v, "__dict__", None), dict):
            return perturb_attrs(v, 0, [MAX_NODES])
    except Exception:
        pass
    return False


def substitute(target, args, kwargs, init, sig):
    """Calls the target for the solution under substitution. A
    constructor runs on perturbed copies of its arguments (callables
    kept). A function runs on the solution's arguments; its result is
    replaced by perturb's substitute, in place when it is one of the
    arguments (an in-place API returning its input) and can be changed
    there. A function that returns None works by side effect: the
    arguments it changed are perturbed in place (the effect replaced by
    another of the same shape); when it changed none, it runs again on
    perturbed copies of them (a setter of the library's state set to other
    data). An exception the target raises is raised unchanged."""
    if init:
        pa = [a if callable(a) else perturb(a) for a in args[1:]]
        pk = {k: (a if callable(a) else perturb(a)) for k, a in kwargs.items()}
        return target(args[0], *pa, **pk)
    values = [a for a in list(args) + list(kwargs.values()) if not callable(a)]
    before = None
    if values:
        before = [arg_key(a, 0, [ARG_BUDGET]) for a in values]
    result = target(*args, **kwargs)
    if result is None:
        if values:
            changed = [a for a, k in zip(values, before) if arg_key(a, 0, [ARG_BUDGET]) != k]
            done = [a for a in changed if perturb_in_place(a)]
            if not done:
                pa = [a if callable(a) else perturb(a) for a in args]
                pk = {k: (a if callable(a) else perturb(a)) for k, a in kwargs.items()}
                target(*pa, **pk)
        return None
    for a in values:
        if result is a:
            if perturb_in_place(result):
                return result
            break
    return perturb(result)


def make_spy(target, state, init=False):
    getframe = sys._getframe
    sig = signature_of(target)

    def spy(*args, **kwargs):
        f = getframe(1)
        lo, hi = state[LINES]
        if f.f_code.co_filename == SOLUTION_FILE and lo <= f.f_lineno <= hi:
            state[DIRECT] += 1
            if len(state[CALLS]) < 64:
                state[CALLS].append({"args": len(args), "kwargs": sorted(kwargs)[:32]})
            record_args(state, sig, args, kwargs, init)
            if state[SUBST]:
                return substitute(target, args, kwargs, init, sig)
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


def run_pass(code, inputs, out, done):
    """Runs in the solver's thread: the program in a fresh namespace, then
    the solver function on each input (a process is given one); releases
    done at the end. out gets plain data only."""
    try:
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
    # The variant: whether the solution's calls of the target are
    # substituted. It comes on stdin, read to its end before any of the
    # solution's code runs; argv, the environment and the files the
    # sandbox gives are the same in every variant.
    state = spy_state((cfg["first"], cfg["last"]), cfg.get("substitute") is True)
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
REPORTED = frozenset(["stage", "error", "direct", "indirect", "calls", "args", "args_free", "args_cut", "real"])


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
    """Runs the pass (the process's variant on its input) in a thread of
    its own, and reports to the parent over w. From the moment the solver's thread starts, this
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
    type_, str_, int_, float_, bool_, list_, dict_, items, sorted_ = type, str, int, float, bool, list, dict, dict.items, sorted
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
    run, i_direct, i_indirect, i_calls, i_args, i_free, i_cut = run_pass, DIRECT, INDIRECT, CALLS, ARGS, ARGS_FREE, ARGS_CUT
    # Armed for good: a thread the solution started may outlive its pass.
    arm(armed)
    out = []
    done = new_lock()
    done.acquire()
    keep.append(out)
    start(run, (code, inputs, out, done))
    if not done.acquire(True, deadline):
        record["stage"] = "timeout"
        record["error"] = {"type": "Timeout", "message": "the pass ran past its limit"}
        report()
    # What the solver's thread left behind is copied and checked: only
    # plain data counts.
    got = plain(out, 0)
    d, ind, cut_ = state[i_direct], state[i_indirect], state[i_cut]
    calls, args, free = plain(state[i_calls], 0), plain(state[i_args], 0), plain(state[i_free], 0)
    keep.append(d)
    keep.append(ind)
    if got is None or type_(d) is not int_ or type_(ind) is not int_ or type_(cut_) is not bool_ or args is None or free is None:
        record["stage"] = "tampered"
        record["error"] = {"type": "Tampered", "message": "the harness's data was replaced"}
        report()
    for a in args + free:
        if type_(a) is not str_:
            record["stage"] = "tampered"
            record["error"] = {"type": "Tampered", "message": "the harness's data was replaced"}
            report()
    record["direct"], record["indirect"] = d, ind
    record["calls"] = calls if calls is not None else []
    record["args"], record["args_free"], record["args_cut"] = [sorted_(args)], [sorted_(free)], cut_
    record["real"] = got
    if got and type_(got[0]) is dict_ and "program_error" in got[0]:
        record["stage"] = "program"
        record["error"] = got[0]["program_error"]
        report()
    record["stage"] = "ran"
    report()


if __name__ == "__main__":
    main()
