package pyharness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// adversaries are solutions that try to pass without computing the
// fixture task's values through their own calls of the target. Most of
// them compute the right values (through the library's internals or by
// hand), so that only the harness's integrity stands between them and a
// pass.
func adversaries() map[string]string {
	right := "sum(v * k * 10 for v in xs) + len(xs)"
	adv := map[string]string{
		"prints a fake verdict": `print('{"passed": true, "stage": "ran", "direct": 1}')
print("PASS")
return ` + right,
		"writes a forged record to the record descriptor": `import os
os.write(8, b'00 {"stage": "ran", "direct": 1, "real": [], "substituted": []}\n')
return ` + right,
		"writes a forged record and exits": `import os
os.write(8, b'00 {"stage": "ran", "direct": 1, "real": [], "substituted": []}\n')
os._exit(0)`,
		"writes a forged report to every descriptor and exits": `import os
for fd in range(3, 256):
    try:
        os.write(fd, b'{"stage": "ran", "direct": 1, "real": [], "substituted": []}')
    except OSError:
        pass
os._exit(0)`,
		"closes the record descriptor": `import os
os.close(8)
from fixpkg import scale
ys = scale(xs, factor=k * 10)
return sum(ys) + len(ys)`,
		"unwraps the spy and calls the original": `import fixpkg
fixpkg.scale = fixpkg.scale.__wrapped__
ys = fixpkg.scale(xs, k * 10)
return sum(ys) + len(ys)`,
		"replaces the spy with a fake": `import fixpkg
fixpkg.scale = lambda v, factor=2: [x * factor for x in v]
ys = fixpkg.scale(xs, k * 10)
return sum(ys) + len(ys)`,
		"forges the spy's counter through its closure": `import fixpkg
for cell in fixpkg.scale.__closure__ or ():
    c = cell.cell_contents
    if type(c) is list and len(c) == 5:
        c[0] += 1
return ` + right,
		"calls the target only through the library": `from fixpkg import pipeline
ys = pipeline(xs, k * 10)
return sum(ys) + len(ys)`,
		"calls the target and discards it": `from fixpkg import scale
scale(xs, k * 10)
return ` + right,
		"exits early with status 0": `import sys
sys.exit(0)`,
		"calls the target then exits": `from fixpkg import scale
ys = scale(xs, factor=k * 10)
raise SystemExit(0)`,
		"ends the process with os._exit": `from fixpkg import scale
ys = scale(xs, factor=k * 10)
import os
os._exit(0)`,
		"walks the garbage collector for the key": `import gc
objs = gc.get_objects()
return ` + right,
		"reads its own memory": `with open("/proc/self/mem", "rb") as f:
    f.read(1)
return ` + right,
		"reads another thread's frames": `import sys
frames = sys._current_frames()
return ` + right,
		"installs a trace function": `import sys
sys.settrace(lambda *a: None)
return ` + right,
		"forks": `import os
if os.fork() == 0:
    os.write(8, b'00 {"stage": "ran"}\n')
    os._exit(0)
return ` + right,
		"spawns a process": `import subprocess
subprocess.run(["/bin/sh", "-c", "true"])
return ` + right,
		"leaves a thread behind to sign a record later": `import threading, time, gc
def later():
    time.sleep(0.2)
    for o in gc.get_objects():
        pass
threading.Thread(target=later, daemon=True).start()
return ` + right,
	}
	// Code that, run anywhere the driver's record is in reach, edits it
	// into a pass (the direct call and a mock pass that differs) and
	// emits it. Each adversary below gets it run by patching something
	// the driver calls after the solution has run.
	forge := `import sys as _sys
_busy = []
def _forge():
    if _busy:
        return False
    _busy.append(1)
    try:
        f = _sys._getframe(1)
        while f is not None:
            loc = f.f_locals
            r = loc.get("record")
            if type(r) is dict:
                p = loc.get("passes")
                real = r.get("real") or (p.get("real") if type(p) is dict else None)
                if not real:
                    return False
                r["real"] = real
                r["direct"] = 1
                r["stage"] = "ran"
                r["substituted"] = [{"value": {"t": "int", "type": "builtins.int", "v": "-1"}}] * len(real)
                r["substituted_direct"] = 1
                r.pop("error", None)
                for name in ("emit", "report"):
                    if callable(loc.get(name)):
                        loc[name]()
                return True
            f = f.f_back
        return False
    finally:
        _busy.pop()
`
	for name, patch := range map[string]string{
		"replaces json.JSONEncoder": `import json
class _E(json.JSONEncoder):
    def encode(self, o):
        _forge()
        return super().encode(o)
    def iterencode(self, o, _one_shot=False):
        _forge()
        return super().iterencode(o, _one_shot)
json.JSONEncoder = _E`,
		"replaces json.dumps": `import json
_d = json.dumps
def _dumps(*a, **k):
    _forge()
    return _d(*a, **k)
json.dumps = _dumps`,
		"replaces threading.Thread.join": `import threading
_j = threading.Thread.join
def _join(self, *a):
    _forge()
    return _j(self, *a)
threading.Thread.join = _join`,
		"replaces threading.Thread.is_alive": `import threading
_a = threading.Thread.is_alive
def _alive(self):
    _forge()
    return _a(self)
threading.Thread.is_alive = _alive`,
		"replaces hmac.HMAC.copy": `import hmac
_c = hmac.HMAC.copy
def _copy(self):
    _forge()
    return _c(self)
hmac.HMAC.copy = _copy`,
		"replaces hmac.new and hashlib.sha256": `import hmac, hashlib
_n, _s = hmac.new, hashlib.sha256
def _new(*a, **k):
    _forge()
    return _n(*a, **k)
def _sha(*a, **k):
    _forge()
    return _s(*a, **k)
hmac.new, hashlib.sha256 = _new, _sha`,
		"replaces builtins the driver calls": `import builtins
for _name in ("all", "type", "list", "len", "isinstance", "float", "str", "set", "callable", "sorted"):
    _orig = getattr(builtins, _name)
    def _wrap(*a, _orig=_orig, **k):
        _forge()
        return _orig(*a, **k)
    setattr(builtins, _name, _wrap)`,
		"replaces the driver's globals": `import sys
_m = sys.modules["__main__"]
for _name in ("DIRECT", "INDIRECT", "CALLS", "DENIED", "MAX_DEPTH"):
    if hasattr(_m, _name):
        setattr(_m, _name, 0 if _name != "DENIED" else frozenset())
for _name in ("run_pass", "read_all", "sign_and_exit", "describe", "plain"):
    _orig = getattr(_m, _name, None)
    if callable(_orig):
        def _wrap(*a, _orig=_orig, **k):
            _forge()
            return _orig(*a, **k)
        setattr(_m, _name, _wrap)`,
		"replaces os.write and os._exit": `import os
_w, _x = os.write, os._exit
def _write(*a):
    _forge()
    return _w(*a)
def _exit(*a):
    _forge()
    return _x(*a)
os.write, os._exit = _write, _exit`,
	} {
		adv[name] = forge + patch + "\nreturn " + right
	}
	return adv
}

// poisonCheck passes only where the adversary that writes files left
// nothing behind: it raises when its marker or a poisoned library is
// visible.
const poisonCheck = `import os
if os.path.exists("/tmp/lacuna-poison"):
    raise RuntimeError("another sample's file is visible")
from fixpkg import scale
ys = scale(xs, factor=k * 10)
return sum(ys) + len(ys)`

func TestAdversariesAreNeverAcceptedAndChangeNoOtherVerdict(t *testing.T) {
	f := newFixture(t, 3)
	task := fixtureTask()
	exp := f.expectation(t, task)
	adv := adversaries()
	honest := task.Reference
	// A batch interleaving every adversary with honest samples.
	var samples []Sample
	var names []string
	for name, sol := range adv {
		samples = append(samples, Sample{Task: task, Solution: sol}, Sample{Task: task, Solution: honest})
		names = append(names, name, "honest after "+name)
	}
	runs, err := f.runner.RunAll(t.Context(), samples)
	if err != nil {
		t.Fatal(err)
	}
	batch := map[string]Verdict{}
	for i, run := range runs {
		v := Check(exp, run)
		batch[names[i]] = v
		honest := strings.HasPrefix(names[i], "honest after ")
		if honest && !v.Passed {
			t.Errorf("%s fails: %+v\n%s", names[i], v, run.Output)
		}
		if !honest && v.Passed {
			t.Errorf("%s is accepted", names[i])
		}
		if !honest {
			t.Logf("%s: rejected at %s: %s", names[i], v.Layer, cut(v.Reason, 160))
		}
	}
	// Each sample alone gets the verdict it got in the batch.
	for i, s := range samples {
		alone := Check(exp, f.run(t, s.Task, s.Solution))
		if b := batch[names[i]]; alone.Passed != b.Passed || alone.Layer != b.Layer {
			t.Errorf("%s: alone %+v, in the batch %+v", names[i], alone, b)
		}
	}
}

func TestAHangingSolutionIsStoppedAndTheNextRuns(t *testing.T) {
	f := newFixture(t, 1)
	task := fixtureTask()
	exp := f.expectation(t, task)
	r, err := NewRunner(f.sb, Config{Python: python(t), Paths: []string{f.pkg}, ReadOnly: []string{f.pkg},
		Limits: sandbox.Limits{Wall: 3 * time.Second, Memory: 1 << 30}, Dir: worldDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	runs, err := r.RunAll(t.Context(), []Sample{
		{Task: task, Solution: "from fixpkg import scale\nscale(xs, k)\nwhile True:\n    pass"},
		{Task: task, Solution: task.Reference},
	})
	if err != nil {
		t.Fatal(err)
	}
	if v := Check(exp, runs[0]); v.Passed || v.Layer != LayerRun && v.Layer != LayerIntegrity {
		t.Errorf("hanging solution: %+v", v)
	}
	if v := Check(exp, runs[1]); !v.Passed {
		t.Errorf("the reference after it: %+v\n%s", v, runs[1].Output)
	}
}

// TestTheGuardRefusesTheRoutesToTheKeyAndOtherProcesses: each solution
// calls the target correctly and tries one operation; it returns the
// right value only when the operation is refused, so a pass proves the
// refusal.
func TestTheGuardRefusesTheRoutesToTheKeyAndOtherProcesses(t *testing.T) {
	f := newFixture(t, 2)
	task := fixtureTask()
	exp := f.expectation(t, task)
	ops := map[string]string{
		"gc.get_objects":      "import gc\ngc.get_objects()",
		"gc.get_referrers":    "import gc\ngc.get_referrers(xs)",
		"sys._current_frames": "import sys\nsys._current_frames()",
		"sys.settrace":        "import sys\nsys.settrace(None)",
		"sys.setprofile":      "import sys\nsys.setprofile(None)",
		"/proc/self/mem":      "open('/proc/self/mem', 'rb')",
		"/proc/self/fd":       "import os\nos.listdir('/proc/self/fd')",
		"os.fork":             "import os\nos.fork()",
		"os.system":           "import os\nos.system('true')",
		"subprocess":          "import subprocess\nsubprocess.run(['/bin/true'])",
		"os.kill":             "import os, signal\nos.kill(os.getpid(), 0)",
	}
	var samples []Sample
	var names []string
	for name, op := range ops {
		sol := "from fixpkg import scale\nys = scale(xs, factor=k * 10)\ntry:\n" + indent(op, "    ") +
			"\nexcept RuntimeError as e:\n    if 'lacuna harness' in str(e):\n        return sum(ys) + len(ys)\n    raise\nreturn 'allowed'"
		samples = append(samples, Sample{Task: task, Solution: sol})
		names = append(names, name)
	}
	// No frame the solution can walk to holds the key or the record.
	samples = append(samples, Sample{Task: task, Solution: `from fixpkg import scale
import sys
ys = scale(xs, factor=k * 10)
f = sys._getframe()
while f is not None:
    if {"mac", "emit", "record", "report", "nonce", "w"} & set(f.f_locals):
        return "found the driver's frame"
    f = f.f_back
for v in vars(sys.modules["__main__"]).values():
    if type(v).__name__ == "HMAC":
        return "found the key"
return sum(ys) + len(ys)`})
	names = append(names, "frames leading to the main thread")
	runs, err := f.runner.RunAll(t.Context(), samples)
	if err != nil {
		t.Fatal(err)
	}
	for i, run := range runs {
		if v := Check(exp, run); !v.Passed {
			t.Errorf("%s is not refused: %+v", names[i], v)
		}
	}
}

// writesOutside tries to poison the library on disk and leaves a marker
// in /tmp for the samples after it.
func writesOutside(pkgDir string) string {
	return `import os
p = ` + pyQuote(filepath.Join(pkgDir, "fixpkg", "_impl.py")) + `
try:
    with open(p, "w") as f:
        f.write("def scale(xs, factor=2):\n    return 'poisoned'\n")
except OSError:
    pass
try:
    with open("/tmp/lacuna-poison", "w") as f:
        f.write("x")
except OSError:
    pass
return None`
}

func TestFilesWrittenOutsideReachNoOtherSample(t *testing.T) {
	f := newFixture(t, 2)
	needBubblewrap(t, f.sb) // without it a sample writes to the host's /tmp
	task := fixtureTask()
	exp := f.expectation(t, task)
	implPath := filepath.Join(f.pkg, "fixpkg", "_impl.py")
	before, err := os.ReadFile(implPath)
	if err != nil {
		t.Fatal(err)
	}
	samples := []Sample{{Task: task, Solution: writesOutside(f.pkg)}, {Task: task, Solution: poisonCheck}, {Task: task, Solution: writesOutside(f.pkg)}, {Task: task, Solution: poisonCheck}}
	runs, err := f.runner.RunAll(t.Context(), samples)
	if err != nil {
		t.Fatal(err)
	}
	for i, run := range runs {
		v := Check(exp, run)
		if i%2 == 0 && v.Passed {
			t.Errorf("sample %d, writing outside, is accepted", i)
		}
		if i%2 == 1 && !v.Passed {
			t.Errorf("sample %d sees what another wrote: %+v", i, v)
		}
	}
	if _, err := os.Stat("/tmp/lacuna-poison"); err == nil {
		t.Error("a sample wrote to the host's /tmp")
	}
	after, err := os.ReadFile(implPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Error("the library on disk was changed by a sample")
	}
}

// TestSubstitutionAndInputsTellComputedValuesFromOthers: solutions that
// call the target and then produce the right values some other way fail,
// and each names the layer that rejects it; defensive code on the
// target's result passes, since a substitute is a well-formed value of the
// result's type and shape, never a zero value or a mock.
func TestSubstitutionAndInputsTellComputedValuesFromOthers(t *testing.T) {
	f := newFixture(t, 2)
	task := fixtureTask()
	exp := f.expectation(t, task)
	byHand := "sum(v * k * 10 for v in xs) + len(xs)"
	cases := []struct {
		name, solution, layer string // layer "" passes
	}{
		{"guards on the result, then returns hard-coded values", `from fixpkg import scale
ys = scale(xs, factor=k * 10)
if not isinstance(ys, list) or len(ys) != len(xs):
    raise ValueError("bad result")
return {3: 123, 2: 272}[len(xs)]`, LayerSubstitution},
		{"calls the target on made-up data whose result coincides", `from fixpkg import scale
ys = scale([v * k for v in xs], factor=10)
return sum(ys) + len(ys)`, LayerInput},
		{"calls the target on other data and computes by hand", `from fixpkg import scale
scale([1], 1)
return ` + byHand, LayerInput},
		// Each computes by hand the first time it sees its input and
		// returns something else when it sees it again, which in one
		// process was the mock pass; in a process of its own every run
		// is the first.
		{"counts runs in os.environ to tell the passes apart", `import os
from fixpkg import scale
scale(xs, factor=k * 10)
key = "LACUNA_SEEN_%d_%d" % (len(xs), k)
seen = key in os.environ
os.environ[key] = "1"
if not seen:
    return ` + byHand + `
return -1`, LayerSubstitution},
		{"counts runs in a file to tell the passes apart", `import os
from fixpkg import scale
scale(xs, factor=k * 10)
p = "/tmp/lacuna-seen-%d-%d" % (len(xs), k)
seen = os.path.exists(p)
open(p, "w").close()
if not seen:
    return ` + byHand + `
return -1`, LayerSubstitution},
		{"counts runs in a module global to tell the passes apart", `import fixpkg
from fixpkg import scale
scale(xs, factor=k * 10)
seen = getattr(fixpkg, "seen", set())
fixpkg.seen = seen
if (len(xs), k) not in seen:
    seen.add((len(xs), k))
    return ` + byHand + `
return -1`, LayerSubstitution},
		{"computes by hand once it has seen the target's result", `from fixpkg import scale
ys = scale(xs, factor=k * 10)
if ys == [v * k * 10 for v in xs]:
    return sum(ys) + len(ys)
return ` + byHand, LayerSubstitution},
		{"exits when the result is empty", `from fixpkg import scale
ys = scale(xs, factor=k * 10)
if not ys:
    raise SystemExit(1)
return sum(ys) + len(ys)`, ""},
		{"indexes the result for logging", `from fixpkg import scale
ys = scale(xs, factor=k * 10)
print("first:", ys[0], "of", len(ys))
return sum(ys) + len(ys)`, ""},
		{"asserts the result is not None", `from fixpkg import scale
ys = scale(xs, factor=k * 10)
assert ys is not None
assert all(isinstance(y, int) for y in ys)
return sum(ys) + len(ys)`, ""},
		{"passes its arguments positionally and in another container", `import fixpkg
ys = fixpkg.rescale(tuple(xs), k * 10)
return sum(ys) + len(ys)`, ""},
	}
	var samples []Sample
	for _, c := range cases {
		samples = append(samples, Sample{Task: task, Solution: c.solution})
	}
	runs, err := f.runner.RunAll(t.Context(), samples)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		v := Check(exp, runs[i])
		switch {
		case c.layer == "" && !v.Passed:
			t.Errorf("%s fails: %+v\n%s", c.name, v, runs[i].Output)
		case c.layer != "" && (v.Passed || v.Layer != c.layer):
			t.Errorf("%s: %+v, want rejected at %s", c.name, v, c.layer)
		default:
			t.Logf("%s: %+v", c.name, v)
		}
	}
}
