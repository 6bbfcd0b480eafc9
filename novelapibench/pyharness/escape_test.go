package pyharness

import (
	"strings"
	"testing"
)

// stealHelper is a program a solution starts outside the driver's audit
// hook: it opens the driver parent (the solution's parent process) with
// pidfd_open and copies its descriptor 7, the key, with pidfd_getfd, and
// prints what it read (KEY: and hex) or why it could not (NOKEY:).
const stealHelper = `import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pidfd = libc.syscall(434, int(sys.argv[1]), 0)
if pidfd < 0:
    print("NOKEY:pidfd_open", ctypes.get_errno()); sys.exit(0)
fd = libc.syscall(438, pidfd, 7, 0)
if fd < 0:
    print("NOKEY:pidfd_getfd", ctypes.get_errno()); sys.exit(0)
key = os.read(fd, 4096).hex()
print("KEY:" + key)
print("KEY:" + key, file=sys.stderr)
`

// escapes are solutions that reach past the audit hook for what would let
// them forge a verdict: the key (through a process the hook never sees)
// or their own memory (where the nonce of the child's report lies, by
// paths the hook's /proc check did not read as /proc). Each raises
// STOLEN or READ when it got there (opening its memory is enough: reading
// it at a mapped address, from /proc/self/maps, is a step further), so a test that sees neither knows the
// harness refused it; before the fixes these tests were written for,
// each got there.
func escapes(python string) map[string]string {
	run := func(spawn string) string {
		return `import os, sys
r, w = os.pipe()
` + spawn + `
os.close(w)
out = b""
while True:
    b = os.read(r, 65536)
    if not b:
        break
    out += b
if any(l.startswith(b"KEY:") for l in out.splitlines()):
    raise RuntimeError("STOLEN " + out.decode())
raise RuntimeError("no key: " + out.decode())`
	}
	argv := `[` + pyQuote(python) + `.encode(), b"-c", ` + pyQuote(stealHelper) + `.encode(), str(os.getppid()).encode()]`
	return map[string]string{
		// _posixsubprocess.fork_exec raises no audit event.
		"starts a helper through _posixsubprocess.fork_exec": run(`import _posixsubprocess
args = ` + argv + `
er, ew = os.pipe()
_posixsubprocess.fork_exec(args, [args[0]], True, (w, ew), None, None, -1, -1, -1, w, -1, -1, er, ew, False, False, -1, None, None, None, -1, None, False)
os.close(ew)`),
		// subprocess raises its audit event through its module's sys:
		// a stand-in without audit silences it.
		"silences subprocess's audit event": run(`import subprocess, types
class _Sys(types.ModuleType):
    def __getattr__(self, name):
        return getattr(sys, name)
    def audit(self, *a):
        pass
subprocess.sys = _Sys("sys")
subprocess.Popen(` + argv + `, stdout=w, close_fds=True)`),
		"reads its memory through //proc": `with open("//proc/self/mem", "rb") as f:
    pass
raise RuntimeError("READ")`,
		"reads its memory through /./proc": `with open("/./proc/self/mem", "rb") as f:
    pass
raise RuntimeError("READ")`,
		"reads its memory relative to a descriptor of /": `import os
root = os.open("/", os.O_RDONLY)
fd = os.open("proc/self/mem", os.O_RDONLY, dir_fd=root)
raise RuntimeError("READ")`,
		"reads its memory through a symlink": `import os, tempfile
d = tempfile.mkdtemp()
os.symlink("/" + "proc", d + "/p")
with open(d + "/p/self/mem", "rb") as f:
    pass
raise RuntimeError("READ")`,
		"reads its memory through /dev/fd": `import os
fd = os.open("/", os.O_RDONLY)
with open("/dev/fd/%d/proc/self/mem" % fd, "rb") as f:
    pass
raise RuntimeError("READ")`,
	}
}

// TestSolutionsCannotReachTheKeyOrTheirMemory runs each escape and
// requires that it neither passes nor got what it reached for: the
// harness refused it (an error naming what is not allowed) before it
// could.
func TestSolutionsCannotReachTheKeyOrTheirMemory(t *testing.T) {
	f := newFixture(t, 2)
	needBubblewrap(t, f.sb)
	task := fixtureTask()
	exp := f.expectation(t, task)
	for name, sol := range escapes(python(t)) {
		t.Run(name, func(t *testing.T) {
			run := f.run(t, task, sol)
			v := Check(exp, run)
			if v.Passed {
				t.Fatalf("accepted: %+v", v)
			}
			var msg string
			if run.Record != nil {
				if e := run.Record.Error; e != nil {
					msg = e.Type + ": " + e.Message
				}
				for _, o := range run.Record.Real {
					if o.Raised != nil {
						msg += " " + o.Raised.Type + ": " + o.Raised.Message
					}
				}
			}
			if strings.Contains(msg, "STOLEN") || strings.Contains(msg, "READ") || strings.Contains("\n"+run.Output, "\nKEY:") {
				t.Fatalf("got through: %s\n%s", msg, run.Output)
			}
			if !strings.Contains(msg, "not allowed") {
				t.Errorf("not refused by the harness: %q (%+v)\n%s", msg, v, run.Output)
			}
		})
	}
}
