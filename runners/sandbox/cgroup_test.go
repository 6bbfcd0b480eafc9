package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeTree writes files (path: content) under a new root.
func fakeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func mountLine(id int, root, point, fstype, super string) string {
	return fmt.Sprintf("%d 23 0:%d %s %s rw,nosuid,nodev,noexec,relatime shared:%d - %s %s %s\n", id, id, root, point, id, fstype, fstype, super)
}

func TestFindsWhereToMakeMemoryCgroups(t *testing.T) {
	v2 := mountLine(30, "/", "/sys/fs/cgroup", "cgroup2", "rw,nsdelegate")
	cases := []struct {
		name      string
		self      string
		mounts    string
		files     map[string]string
		version   int
		dir       string   // under the fake root
		whyHas    []string // the error's words when none
		whyHasNot []string
	}{{
		name: "v2, lacuna in the root group", self: "0::/\n", mounts: v2,
		files:   map[string]string{"sys/fs/cgroup/cgroup.controllers": "cpu memory pids\n", "sys/fs/cgroup/cgroup.subtree_control": "cpu memory\n"},
		version: 2, dir: "sys/fs/cgroup",
	}, {
		name: "v2, lacuna in a service: groups beside it", self: "0::/system.slice/lacuna.service\n", mounts: v2,
		files: map[string]string{
			"sys/fs/cgroup/system.slice/lacuna.service/cgroup.controllers":     "memory pids\n",
			"sys/fs/cgroup/system.slice/lacuna.service/cgroup.subtree_control": "\n",
			"sys/fs/cgroup/system.slice/cgroup.subtree_control":                "memory pids\n",
		},
		version: 2, dir: "sys/fs/cgroup/system.slice",
	}, {
		name: "v2, a container's namespace root holding processes", self: "0::/\n", mounts: v2,
		files:  map[string]string{"sys/fs/cgroup/cgroup.controllers": "cpu memory\n", "sys/fs/cgroup/cgroup.subtree_control": "\n"},
		whyHas: []string{"holds processes", "cgroup v1: lacuna is in no memory cgroup"},
	}, {
		name: "v2 without the memory controller", self: "0::/user.slice\n", mounts: v2,
		files:  map[string]string{"sys/fs/cgroup/user.slice/cgroup.controllers": "cpu pids\n", "sys/fs/cgroup/user.slice/cgroup.subtree_control": "\n"},
		whyHas: []string{"no memory controller"},
	}, {
		name: "hybrid, memory on v1 (this project's machines)",
		self: "9:name=systemd:/\n4:memory:/process_api/f7be\n0::/\n",
		mounts: mountLine(35, "/", "/sys/fs/cgroup/memory", "cgroup", "rw,memory") +
			mountLine(40, "/", "/sys/fs/cgroup/systemd", "cgroup", "rw,name=systemd") +
			mountLine(41, "/", "/sys/fs/cgroup/unified", "cgroup2", "rw"),
		files: map[string]string{
			"sys/fs/cgroup/unified/cgroup.controllers":                    "hugetlb\n",
			"sys/fs/cgroup/memory/process_api/f7be/memory.limit_in_bytes": "9223372036854771712\n",
		},
		version: 1, dir: "sys/fs/cgroup/memory/process_api/f7be",
	}, {
		name:    "v1, a mount of a subtree, controllers together, an escaped mount point",
		self:    "3:cpu,memory:/docker/abc/sub\n",
		mounts:  mountLine(32, "/docker/abc", `/sys/fs/cgroup/cpu\040memory`, "cgroup", "rw,cpu,memory"),
		files:   map[string]string{"sys/fs/cgroup/cpu memory/sub/memory.limit_in_bytes": "9223372036854771712\n"},
		version: 1, dir: "sys/fs/cgroup/cpu memory/sub",
	}, {
		name: "v1, the group outside what is mounted", self: "3:memory:/elsewhere\n",
		mounts: mountLine(32, "/docker/abc", "/sys/fs/cgroup/memory", "cgroup", "rw,memory"),
		whyHas: []string{"no memory cgroup mount shows lacuna's group /elsewhere", "lacuna is in no cgroup v2 group"},
	}, {
		name: "neither", self: "1:cpu:/\n", mounts: mountLine(32, "/", "/sys/fs/cgroup/cpu", "cgroup", "rw,cpu"),
		whyHas: []string{"cgroup v2: lacuna is in no cgroup v2 group", "cgroup v1: lacuna is in no memory cgroup"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := fakeTree(t, c.files)
			v, dir, err := findMemCgroup(root, []byte(c.self), []byte(c.mounts))
			if c.version == 0 {
				if err == nil {
					t.Fatalf("found v%d %s, want none", v, dir)
				}
				for _, w := range c.whyHas {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v != c.version || dir != filepath.Join(root, c.dir) {
				t.Errorf("found v%d %s, want v%d %s", v, dir, c.version, filepath.Join(root, c.dir))
			}
		})
	}
}

// fakeKernel stands in for the cgroup file system under a fake tree: a
// group's interface files appear with its directory (those in files,
// with their initial content), and a group goes only without processes,
// its files kept in removed for the test to read.
type fakeKernel struct {
	files   map[string]string
	removed map[string]map[string]string // by group name
}

func (k *fakeKernel) mkdir(p string) error {
	if err := os.Mkdir(p, 0o755); err != nil {
		return err
	}
	for name, content := range k.files {
		if err := os.WriteFile(filepath.Join(p, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (k *fakeKernel) rmdir(p string) error {
	procs, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(procs)) > 0 {
		return syscall.EBUSY
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return err
	}
	kept := map[string]string{}
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(p, e.Name()))
		kept[e.Name()] = string(b)
	}
	if k.removed == nil {
		k.removed = map[string]map[string]string{}
	}
	k.removed[filepath.Base(p)] = kept
	return os.RemoveAll(p)
}

var (
	fakeV1Files = map[string]string{"cgroup.procs": "", "memory.limit_in_bytes": "9223372036854771712\n", "memory.swappiness": "60\n",
		"memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", "memory.max_usage_in_bytes": "0\n"}
	fakeV2Files = map[string]string{"cgroup.procs": "", "cgroup.subtree_control": "", "memory.max": "max\n",
		"memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n"}
)

func with(m map[string]string, kv ...string) map[string]string {
	n := map[string]string{}
	for k, v := range m {
		n[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		n[kv[i]] = kv[i+1]
	}
	return n
}

// TestMemoryCgroupFilesOnAFakeKernel: what a run's group is given and
// what is read from it, for both versions, with and without the files a
// kernel may lack (swap accounting, memory.peak, cgroup.kill). Only v1
// runs for real on this project's machines; v2's file handling is tested
// here.
func TestMemoryCgroupFilesOnAFakeKernel(t *testing.T) {
	const limit = 256 << 20
	cases := []struct {
		name   string
		v      int
		files  map[string]string
		want   map[string]string // file: content after newGroup
		absent []string          // files newGroup must not make
		events string            // what the kernel counted meanwhile
		peak   string
		oom    bool
		peakN  int64
		kill   bool // cgroup.kill written
		err    string
	}{{
		name: "v1 with swap accounting", v: 1, files: with(fakeV1Files, "memory.memsw.limit_in_bytes", "9223372036854771712\n"),
		want:   map[string]string{"memory.limit_in_bytes": "268435456", "memory.memsw.limit_in_bytes": "268435456", "memory.swappiness": "60\n"},
		events: "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", peak: "268435456\n", oom: true, peakN: limit,
	}, {
		name: "v1 without swap accounting", v: 1, files: fakeV1Files,
		want:   map[string]string{"memory.limit_in_bytes": "268435456", "memory.swappiness": "0"},
		absent: []string{"memory.memsw.limit_in_bytes"},
		events: "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", peak: "1234\n", peakN: 1234,
	}, {
		name: "v1 run that never joined", v: 1, files: fakeV1Files,
		events: "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", peak: "0\n", err: "never joined",
	}, {
		name: "v2 with swap, peak and cgroup.kill", v: 2,
		files:  with(fakeV2Files, "memory.swap.max", "max\n", "memory.peak", "0\n", "cgroup.kill", ""),
		want:   map[string]string{"memory.max": "268435456", "memory.swap.max": "0"},
		events: "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n", peak: "268431360\n", oom: true, peakN: 268431360, kill: true,
	}, {
		name: "v2 on an older kernel: no swap accounting, peak or cgroup.kill", v: 2, files: fakeV2Files,
		want:   map[string]string{"memory.max": "268435456"},
		absent: []string{"memory.swap.max", "memory.peak", "cgroup.kill"},
		events: "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := &fakeKernel{files: c.files}
			var self, mounts string
			files := map[string]string{}
			if c.v == 1 {
				self, mounts = "4:memory:/lac\n", mountLine(35, "/", "/sys/fs/cgroup/memory", "cgroup", "rw,memory")
				files["sys/fs/cgroup/memory/lac/memory.limit_in_bytes"] = "9223372036854771712\n"
			} else {
				self, mounts = "0::/svc\n", mountLine(30, "/", "/sys/fs/cgroup", "cgroup2", "rw")
				files["sys/fs/cgroup/svc/cgroup.controllers"] = "memory\n"
				files["sys/fs/cgroup/svc/cgroup.subtree_control"] = ""
				files["sys/fs/cgroup/cgroup.subtree_control"] = "memory\n"
			}
			root := fakeTree(t, files)
			mc, err := setupMemCgroup(root, []byte(self), []byte(mounts), k.mkdir, k.rmdir)
			if err != nil {
				t.Fatal(err)
			}
			if c.v == 2 {
				if mc.dir != filepath.Join(root, "sys/fs/cgroup/lacuna") {
					t.Errorf("groups made in %s", mc.dir)
				}
				if b, _ := os.ReadFile(filepath.Join(mc.dir, "cgroup.subtree_control")); string(b) != "+memory" {
					t.Errorf("the lacuna directory's cgroup.subtree_control got %q, want +memory", b)
				}
			}
			g, err := mc.newGroup(limit)
			if err != nil {
				t.Fatal(err)
			}
			if _, pid, ok := parseGroupName(filepath.Base(g.dir)); !ok || pid != os.Getpid() || !strings.HasPrefix(filepath.Base(g.dir), "r-") {
				t.Errorf("group name %q", filepath.Base(g.dir))
			}
			for f, want := range c.want {
				if b, _ := os.ReadFile(filepath.Join(g.dir, f)); string(b) != want {
					t.Errorf("%s: %q, want %q", f, b, want)
				}
			}
			for _, f := range c.absent {
				if _, err := os.Stat(filepath.Join(g.dir, f)); err == nil {
					t.Errorf("%s was made", f)
				}
			}
			os.WriteFile(filepath.Join(g.dir, mc.files.events), []byte(c.events), 0o644)
			if c.peak != "" {
				os.WriteFile(filepath.Join(g.dir, mc.files.peak), []byte(c.peak), 0o644)
			}
			oom, peak, err := g.end()
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("end: %v, want an error with %q", err, c.err)
				}
			} else if err != nil || oom != c.oom || peak != c.peakN {
				t.Errorf("end: oom %v peak %d err %v, want oom %v peak %d", oom, peak, err, c.oom, c.peakN)
			}
			kept, ok := k.removed[filepath.Base(g.dir)]
			if !ok {
				t.Fatal("the group was not removed")
			}
			if _, wrote := kept["cgroup.kill"]; wrote && (kept["cgroup.kill"] == "1") != c.kill {
				t.Errorf("cgroup.kill %q", kept["cgroup.kill"])
			}
		})
	}
}

// deadPid is the pid of a process that has ended.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestStaleGroupsOfEndedRunsAreCollected(t *testing.T) {
	now := time.Now()
	old, recent := now.Add(-2*staleAfter).Unix(), now.Add(-staleAfter/2).Unix()
	dead, self, other := deadPid(t), os.Getpid(), os.Getppid()
	k := &fakeKernel{}
	dir := t.TempDir()
	c := &memCgroup{v: 1, dir: dir, files: v1Files, mkdir: k.mkdir, rmdir: k.rmdir}
	groups := []struct {
		name, procs string
		live        bool // a run of this process still going
		gone        bool
	}{
		{fmt.Sprintf("r-%d-%d-1", old, dead), "", false, true},
		{fmt.Sprintf("x-%d-%d-abc", old, dead), "", false, true},
		{fmt.Sprintf("x-%d-%d-busy", old, dead), "4242\n", false, false},
		{fmt.Sprintf("r-%d-%d-2", recent, dead), "", false, false},
		{fmt.Sprintf("r-%d-%d-3", old, other), "", false, false},
		{fmt.Sprintf("r-%d-%d-4", old, self), "", true, false},
		{fmt.Sprintf("r-%d-%d-5", old, self), "", false, true},
		{"someone-elses", "", false, false},
		{"r-notatime-1-1", "", false, false},
	}
	for _, g := range groups {
		os.Mkdir(filepath.Join(dir, g.name), 0o755)
		os.WriteFile(filepath.Join(dir, g.name, "cgroup.procs"), []byte(g.procs), 0o644)
		if g.live {
			liveGroups.Store(filepath.Join(dir, g.name), true)
			defer liveGroups.Delete(filepath.Join(dir, g.name))
		}
	}
	c.gc(now)
	for _, g := range groups {
		if _, err := os.Stat(filepath.Join(dir, g.name)); (err != nil) != g.gone {
			t.Errorf("%s: gone %v, want %v", g.name, err != nil, g.gone)
		}
	}
}

// TestWrapperScriptGroupOnAFakeKernel runs the wrapper script's group
// handling (collect stale groups, make, join, report, remove) against a
// fake cgroup directory,
// mktemp and rmdir standing in for the kernel's: the same shell runs for
// real under v1 in TestHostileProgramsAreKilledAtTheMemoryLimit, and this
// checks v2's file names and values too.
func TestWrapperScriptGroupOnAFakeKernel(t *testing.T) {
	cases := []struct {
		name   string
		v      int
		files  map[string]string
		want   map[string]string
		marker bool
	}{
		{"v1 with swap accounting, killed", 1, with(fakeV1Files, "memory.memsw.limit_in_bytes", "x", "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n"),
			map[string]string{"memory.limit_in_bytes": "1000\n", "memory.memsw.limit_in_bytes": "1000\n", "memory.swappiness": "60\n"}, true},
		{"v1 without swap accounting", 1, fakeV1Files,
			map[string]string{"memory.limit_in_bytes": "1000\n", "memory.swappiness": "0\n"}, false},
		{"v2, killed", 2, with(fakeV2Files, "memory.swap.max", "max\n", "cgroup.kill", "", "memory.events", "max 3\noom 1\noom_kill 1\n"),
			map[string]string{"memory.max": "1000\n", "memory.swap.max": "0\n", "cgroup.kill": "1\n"}, true},
		{"v2 without swap accounting or cgroup.kill", 2, fakeV2Files,
			map[string]string{"memory.max": "1000\n"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, seed, removed, bin := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "removed"), t.TempDir()
			for name, content := range c.files {
				os.WriteFile(filepath.Join(seed, name), []byte(content), 0o644)
			}
			mc := &memCgroup{v: c.v, dir: dir, files: v1Files}
			if c.v == 2 {
				mc.files = v2Files
			}
			// mktemp -d TEMPLATE makes the group with its files; rmdir
			// keeps them where the test reads them.
			os.WriteFile(filepath.Join(bin, "mktemp"), []byte("#!/bin/sh\nd=\"${2%XXXXXXXX}fake\"\nmkdir \"$d\" && cp \"$FAKE_SEED\"/* \"$d\"/ && echo \"$d\"\n"), 0o755)
			os.WriteFile(filepath.Join(bin, "rmdir"), []byte("#!/bin/sh\nmkdir -p \"$FAKE_REMOVED\" && cp -r \"$1\" \"$FAKE_REMOVED/${1##*/}\" && rm -rf \"$1\"\n"), 0o755)
			stale := fmt.Sprintf("x-%d-%d-stale", time.Now().Add(-2*staleAfter).Unix(), deadPid(t))
			fresh := fmt.Sprintf("r-%d-%d-1", time.Now().Unix(), deadPid(t))
			running := fmt.Sprintf("x-%d-%d-running", time.Now().Add(-2*staleAfter).Unix(), os.Getpid())
			for _, d := range []string{stale, fresh, running, "foreign"} {
				os.Mkdir(filepath.Join(dir, d), 0o755)
			}
			script := "#!/bin/sh\n" + mc.scriptMake("wrapper", 1000) + scriptJoin + "/bin/sh -c 'echo ran; exit 3'\nrc=$?\n" + mc.scriptEnd(1000)
			cmd := exec.Command("/bin/sh", "-c", script)
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "FAKE_SEED=" + seed, "FAKE_REMOVED=" + removed}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 3 {
				t.Fatalf("exit %v, want 3; stderr %s", err, stderr.String())
			}
			marker := fmt.Sprintf("\n%s1000 bytes]\n", MemoryMarker)
			if want := "ran\n"; c.marker {
				if string(out) != want+marker {
					t.Errorf("output %q, want %q", out, want+marker)
				}
			} else if string(out) != want {
				t.Errorf("output %q, want %q", out, want)
			}
			made, _ := filepath.Glob(filepath.Join(removed, "x-*-fake"))
			if len(made) != 1 {
				t.Fatalf("removed groups %v, want the run's", made)
			}
			for f, want := range c.want {
				if b, _ := os.ReadFile(filepath.Join(made[0], f)); string(b) != want {
					t.Errorf("%s: %q, want %q", f, b, want)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(made[0], "cgroup.procs")); len(bytes.TrimSpace(b)) == 0 {
				t.Error("the shim did not join the group")
			}
			for d, wantGone := range map[string]bool{stale: true, fresh: false, running: false, "foreign": false} {
				if _, err := os.Stat(filepath.Join(dir, d)); (err != nil) != wantGone {
					t.Errorf("%s: gone %v, want %v", d, err != nil, wantGone)
				}
			}
			if stderr.Len() != 0 {
				t.Errorf("stderr: %s", stderr.String())
			}
		})
	}
	t.Run("no group can be made", func(t *testing.T) {
		mc := &memCgroup{v: 1, dir: filepath.Join(t.TempDir(), "missing"), files: v1Files}
		script := "#!/bin/sh\n" + mc.scriptMake("wrapper", 1000) + "echo ran\n"
		out, err := exec.Command("/bin/sh", "-c", script).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 125 || !strings.Contains(string(out), "wrapper: cannot make a memory cgroup in") || strings.Contains(string(out), "ran") {
			t.Errorf("exit %v, output %q", err, out)
		}
	})
}

// needMemCgroup skips a test that needs a memory cgroup where there is
// none, except in CI as root, where there must be one.
func needMemCgroup(t *testing.T, s *Sandbox) {
	t.Helper()
	if s.mem != nil {
		return
	}
	if os.Getenv("CI") == "true" && os.Geteuid() == 0 {
		t.Fatalf("CI runs as root, yet no memory cgroup: %s", s.memWhy)
	}
	t.Skipf("SKIPPED LOUDLY: no memory cgroup can be made here (%s)", s.memWhy)
}

func python(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3" // the system's, which the sandbox mounts
	if _, err := os.Stat(py); err != nil {
		t.Skipf("SKIPPED LOUDLY: the hostile programs are Python: %v", err)
	}
	return py
}

// held is the most a hostile program said it held, and whether it said
// it held all it wanted.
func held(out string) (n int64, done bool) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && (f[0] == "held" || f[0] == "done") {
			if v, err := strconv.ParseInt(f[1], 10, 64); err == nil && v > n {
				n = v
			}
			done = done || f[0] == "done"
		}
	}
	return n, done
}

// TestHostileProgramsAreKilledAtTheMemoryLimit: programs that hold three
// times Limits.Memory where RLIMIT_AS does not see it (memfds, SysV shared
// memory, several processes each under the rlimit) are killed with the
// memory limit reported, through Run and through both wrappers; an
// honest program under the limit passes. Without the memory cgroup each
// of them held all 768 MiB and exited 0.
func TestHostileProgramsAreKilledAtTheMemoryLimit(t *testing.T) {
	s, _ := setup(t)
	needMemCgroup(t, s)
	py := python(t)
	src, err := os.ReadFile("testdata/hostile.py")
	if err != nil {
		t.Fatal(err)
	}
	lim := Limits{Wall: 60 * time.Second, Memory: 256 << 20, Disk: 32 << 20}
	bound := s.memLimit(lim.withDefaults())
	const target = 3 * (256 << 20)
	run := func(t *testing.T, args []string) (out string, exceeded bool, peak int64) {
		dir := workDir(t)
		os.WriteFile(filepath.Join(dir, "hostile.py"), src, 0o644)
		r, err := s.Run(context.Background(), Spec{Argv: append([]string{py, "hostile.py"}, args...), Dir: dir, Limits: lim})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("exit %d %s, memory peak %d MiB, stderr %.300q", r.ExitCode, r.Signal, r.MemoryPeak>>20, r.Stderr)
		return string(r.Stdout), r.MemoryExceeded, r.MemoryPeak
	}
	wrapper := func(wrap func(string, Limits, ...string) (string, error)) func(t *testing.T, args []string) (string, bool, int64) {
		return func(t *testing.T, args []string) (string, bool, int64) {
			dir := workDir(t)
			w, err := wrap(dir, lim)
			if err != nil {
				t.Fatal(err)
			}
			prog := filepath.Join(dir, "hostile")
			os.WriteFile(prog, append([]byte("#!"+py+"\n"), src...), 0o755)
			out, err := exec.Command(w, append([]string{prog}, args...)...).CombinedOutput()
			t.Logf("wrapper: %v", err)
			marker := fmt.Sprintf("\n%s%d bytes]\n", MemoryMarker, bound)
			return string(out), strings.HasSuffix(string(out), marker), 0
		}
	}
	paths := []struct {
		name string
		run  func(*testing.T, []string) (string, bool, int64)
	}{{"Run", run}, {"ExecWrapper", wrapper(s.ExecWrapper)}, {"ExecWrapperForDescriptors", wrapper(s.ExecWrapperForDescriptors)}}
	t0 := strconv.Itoa(target)
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			for _, args := range [][]string{{"memfd", t0}, {"sysv", t0}, {"children", t0, "4"}} {
				t.Run(args[0], func(t *testing.T) {
					out, exceeded, peak := path.run(t, args)
					n, done := held(out)
					t.Logf("held %d MiB before it was stopped (wanted %d MiB, bound %d MiB)", n>>20, target>>20, bound>>20)
					if done || !exceeded {
						t.Errorf("holding %d MiB under a limit of %d MiB: done %v, memory limit reported %v; output:\n%s", target>>20, bound>>20, done, exceeded, out)
					}
					if n > bound || peak > bound {
						t.Errorf("held %d bytes (peak %d) past a bound of %d", n, peak, bound)
					}
				})
			}
			t.Run("honest", func(t *testing.T) {
				out, exceeded, _ := path.run(t, []string{"plain", strconv.Itoa(64 << 20)})
				if _, done := held(out); !done || exceeded {
					t.Errorf("64 MiB under a limit of %d MiB: done %v, memory limit reported %v; output:\n%s", bound>>20, done, exceeded, out)
				}
			})
		})
	}
}

// TestMemoryCgroupWithoutBubblewrap: without bubblewrap the program runs
// in its group as uid 65534 (v1's shim drops root after joining), what
// it holds in POSIX shared memory is bounded too, and a process that
// left the process group (which the wall clock's kill misses) is killed
// with the group.
func TestMemoryCgroupWithoutBubblewrap(t *testing.T) {
	s, _ := setup(t)
	needMemCgroup(t, s)
	py := python(t)
	rl := *s
	rl.bwrap = ""
	src, err := os.ReadFile("testdata/hostile.py")
	if err != nil {
		t.Fatal(err)
	}
	dir := workDir(t)
	os.WriteFile(filepath.Join(dir, "hostile.py"), src, 0o644)
	lim := Limits{Wall: 60 * time.Second, Memory: 256 << 20}
	r, err := rl.Run(context.Background(), Spec{Argv: []string{py, "hostile.py", "posixshm", strconv.Itoa(3 * (256 << 20))}, Dir: dir, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	n, done := held(string(r.Stdout))
	t.Logf("POSIX shared memory: held %d MiB; exit %d, peak %d MiB", n>>20, r.ExitCode, r.MemoryPeak>>20)
	if done || !r.MemoryExceeded || n > 256<<20 {
		t.Errorf("POSIX shared memory: held %d MiB, done %v, memory limit reported %v:\n%s%s", n>>20, done, r.MemoryExceeded, r.Stdout, r.Stderr)
	}

	token := fmt.Sprintf("lacuna-escaped-%d-%d", os.Getpid(), time.Now().UnixNano())
	r, err = rl.Run(context.Background(), Spec{Argv: sh("id -u; setsid sh -c 'while :; do sleep 1; done; : " + token + "' </dev/null >/dev/null 2>&1 & sleep 0.2"), Dir: dir, Limits: Limits{Wall: 20 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 && string(r.Stdout) != strconv.Itoa(nobody)+"\n" {
		t.Errorf("ran as uid %q, want %d", r.Stdout, nobody)
	}
	time.Sleep(100 * time.Millisecond)
	if left := processesWith(token); len(left) > 0 {
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("a process that left the process group survived its memory cgroup: %v", left)
	}
}

// unifiedForTest is a cgroup v2 directory for lacuna's groups in the
// unified hierarchy of a machine whose memory controller is v1's: without
// the memory controller, but cloning into a group, cgroup.procs,
// cgroup.kill and removal are v2's own, so they are tested there for
// real. cgroup.max.descendants stands in for memory.max (an int: limits
// under 2 GiB). rel is the directory's cgroup path.
func unifiedForTest(t *testing.T) (c *memCgroup, rel string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED LOUDLY: needs root to make cgroups")
	}
	self, _ := os.ReadFile("/proc/self/cgroup")
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	unified, _ := parseSelfCgroup(self)
	dir, _, ok := resolveCgroup(parseMountinfo(mounts), func(m mountInfo) bool { return m.fstype == "cgroup2" }, unified)
	if unified == "" || !ok {
		t.Skip("SKIPPED LOUDLY: no cgroup v2 hierarchy here")
	}
	if ctl, _ := readWords(filepath.Join(dir, "cgroup.controllers")); slices.Contains(ctl, "memory") {
		t.Skip("the memory controller is v2's here: the other tests run v2 for real")
	}
	name := fmt.Sprintf("lacuna-test-%d", os.Getpid())
	c = &memCgroup{v: 2, dir: filepath.Join(dir, name), files: v2Files, mkdir: func(p string) error { return os.Mkdir(p, 0o755) }, rmdir: syscall.Rmdir}
	c.files.limit = "cgroup.max.descendants"
	if err := c.mkdir(c.dir); err != nil {
		t.Skipf("SKIPPED LOUDLY: cannot make a cgroup v2 group: %v", err)
	}
	t.Cleanup(func() {
		// What a failing test left: every group below, and its processes.
		groups, _ := filepath.Glob(filepath.Join(c.dir, "*", "cgroup.kill"))
		for _, k := range groups {
			writeCgroupFile(k, "1")
			time.Sleep(100 * time.Millisecond)
			c.rmdir(filepath.Dir(k))
		}
		c.rmdir(c.dir)
	})
	if _, err := os.Stat(filepath.Join(c.dir, "cgroup.kill")); err != nil {
		t.Skip("SKIPPED LOUDLY: cgroup.kill needs Linux 5.14")
	}
	return c, path.Join(unified, name)
}

// TestV2RunClonesIntoItsGroupAndKillsWhatIsLeft: Run's v2 path starts
// the program in its group (SysProcAttr.CgroupFD: no shim) and kills a
// process that left the process group, through cgroup.kill.
func TestV2RunClonesIntoItsGroupAndKillsWhatIsLeft(t *testing.T) {
	s, dir := setup(t)
	c, rel := unifiedForTest(t)
	v2 := *s
	v2.mem, v2.bwrap = c, "" // under bubblewrap the program sees its cgroup namespace's root only
	token := fmt.Sprintf("lacuna-escaped-v2-%d-%d", os.Getpid(), time.Now().UnixNano())
	r, err := v2.Run(context.Background(), Spec{Argv: sh("id -u; cat /proc/self/cgroup; setsid sh -c 'while :; do sleep 1; done; : " + token + "' </dev/null >/dev/null 2>&1 & sleep 0.2"), Dir: dir, Limits: Limits{Wall: 20 * time.Second, Memory: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.Stdout), "0::"+rel+"/r-") {
		t.Errorf("the program is not in a group below %s:\n%s", rel, r.Stdout)
	}
	if os.Geteuid() == 0 && !strings.HasPrefix(string(r.Stdout), strconv.Itoa(nobody)+"\n") {
		t.Errorf("not run as uid %d:\n%s", nobody, r.Stdout)
	}
	time.Sleep(100 * time.Millisecond)
	if left := processesWith(token); len(left) > 0 {
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("a process that left the process group survived its cgroup: %v", left)
	}
	if entries, _ := os.ReadDir(c.dir); len(entries) > 0 {
		for _, e := range entries {
			if e.IsDir() {
				t.Errorf("group %s left behind", e.Name())
			}
		}
	}
}

// TestV2WrapperJoinsItsGroup: the wrapper script's v2 path, for real:
// bubblewrap's first process joins the run's group (seen from the host
// while the program runs), and the group goes when it ends.
func TestV2WrapperJoinsItsGroup(t *testing.T) {
	s, dir := setup(t)
	needIsolation(t, s)
	c, rel := unifiedForTest(t)
	v2 := *s
	v2.mem = c
	w, err := v2.ExecWrapper(dir, Limits{Memory: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	token := fmt.Sprintf("lacuna-v2-wrapper-%d-%d", os.Getpid(), time.Now().UnixNano())
	prog := filepath.Join(dir, "prog.sh")
	os.WriteFile(prog, []byte("#!/bin/sh\necho ready\nread x\nexit 0\n"), 0o755)
	cmd := exec.Command(w, prog, token)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 6)
	io.ReadFull(stdout, line)
	var pids []int // the wrapper itself stays outside
	for _, pid := range processesWith(token) {
		if pid != cmd.Process.Pid {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		t.Error("cannot see the sandbox from the host")
	}
	for _, pid := range pids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if !strings.Contains(string(b), "0::"+rel+"/x-") {
			t.Errorf("process %d of the sandbox is not in a group below %s:\n%s", pid, rel, b)
		}
	}
	stdin.Close()
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Errorf("wrapper: %v", err)
	}
	if entries, _ := os.ReadDir(c.dir); len(entries) > 0 {
		for _, e := range entries {
			if e.IsDir() {
				t.Errorf("group %s left behind", e.Name())
			}
		}
	}
}
