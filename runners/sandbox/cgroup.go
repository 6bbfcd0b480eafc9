package sandbox

// Memory bounded per run by a cgroup.
//
// RLIMIT_AS bounds each process's address space, which counts neither
// shared memory (SysV segments, memfds, tmpfs files) once unmapped nor
// the sum over a program's processes. A memory cgroup counts all of it,
// so each run (Run, and each run of an ExecWrapper script) gets a group
// of its own, "lacuna/r-*" or "lacuna/x-*", with its limit, entered by
// its first process before that process can allocate:
//
//   - cgroup v2: Run clones the process straight into the group
//     (SysProcAttr.CgroupFD); a wrapper script's shim joins it.
//   - cgroup v1: a shim, `sh -c 'echo $$ >GROUP/cgroup.procs && exec
//     "$@"'`, joins it and becomes the sandbox (v1 cannot clone into a
//     group).
//
// When the run ends, whatever is left in the group is killed, the
// kernel's count of processes it killed for the limit (oom_kill) is read
// and the group removed. A group that cannot go then (a wrapper killed
// before it cleaned up) is removed later by gc, once empty, a minute old
// and its run over, so that a group a concurrent run just made, or still
// reads, is never taken.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// memCgroup is the directory lacuna makes a memory cgroup in for each
// run: "lacuna" in lacuna's own memory cgroup (v1), or beside it where
// cgroup v2 forbids groups with processes to give memory to groups below
// them (see findMemCgroup). Immutable; safe for concurrent use: each run
// makes a group of its own, named for the second it was made and the
// process that made it.
type memCgroup struct {
	v     int    // 1 or 2
	dir   string // where the run groups are made
	files cgroupFiles
	// mkdir and rmdir are the file system's (syscall.Rmdir: a cgroup's
	// directory holds its interface files, which go with it); tests fake
	// the kernel with them.
	mkdir, rmdir func(string) error
}

// cgroupFiles names a version's interface files.
type cgroupFiles struct {
	limit  string // the group's memory limit
	swap   string // the swap limit, when the kernel accounts swap
	events string // holds the line "oom_kill N"
	peak   string // the most the group held at once
	kill   string // kills every process of the group; "" in v1
	noSwap string // v1 without swap accounting: memory.swappiness, 0 keeps anonymous memory out of swap
}

var (
	v1Files = cgroupFiles{limit: "memory.limit_in_bytes", swap: "memory.memsw.limit_in_bytes", events: "memory.oom_control",
		peak: "memory.max_usage_in_bytes", noSwap: "memory.swappiness"}
	v2Files = cgroupFiles{limit: "memory.max", swap: "memory.swap.max", events: "memory.events",
		peak: "memory.peak", kill: "cgroup.kill"}
)

// swapLimit is what the swap file gets for a memory limit of n: v1's is
// memory and swap together, v2's swap alone.
func (c *memCgroup) swapLimit(n int64) int64 {
	if c.v == 1 {
		return n
	}
	return 0
}

// version names the mechanism for Identity: "cgroup-v1" or "cgroup-v2".
func (c *memCgroup) version() string { return "cgroup-v" + strconv.Itoa(c.v) }

// openMemCgroup finds where this process may make memory cgroups and
// prepares the directory it makes them in.
func openMemCgroup() (*memCgroup, error) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return setupMemCgroup("", self, mounts, func(p string) error { return os.Mkdir(p, 0o755) }, syscall.Rmdir)
}

// setupMemCgroup is openMemCgroup with /proc/self/cgroup and
// /proc/self/mountinfo given, and every path under root (tests: a fake
// tree).
func setupMemCgroup(root string, self, mountinfo []byte, mkdir, rmdir func(string) error) (*memCgroup, error) {
	v, base, err := findMemCgroup(root, self, mountinfo)
	if err != nil {
		return nil, err
	}
	c := &memCgroup{v: v, dir: filepath.Join(base, "lacuna"), files: v1Files, mkdir: mkdir, rmdir: rmdir}
	if v == 2 {
		c.files = v2Files
	}
	if err := mkdir(c.dir); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("make %s: %w", c.dir, err)
	}
	if v == 2 {
		// The lacuna directory holds no process, so it may give memory
		// to the groups below it.
		sub, err := readWords(filepath.Join(c.dir, "cgroup.subtree_control"))
		if err != nil {
			return nil, err
		}
		if !slices.Contains(sub, "memory") {
			if err := writeCgroupFile(filepath.Join(c.dir, "cgroup.subtree_control"), "+memory"); err != nil {
				return nil, fmt.Errorf("enable the memory controller below %s: %w", c.dir, err)
			}
		}
	}
	return c, nil
}

// findMemCgroup finds the directory to make lacuna's groups in: cgroup v2
// first, then v1's memory hierarchy, each found from this process's own
// group (/proc/self/cgroup) and where its hierarchy is mounted
// (/proc/self/mountinfo). The error says why neither can be had.
func findMemCgroup(root string, self, mountinfo []byte) (version int, dir string, err error) {
	unified, v1 := parseSelfCgroup(self)
	mounts := parseMountinfo(mountinfo)
	var why []string
	if unified != "" {
		dir, err := findV2(root, mounts, unified)
		if err == nil {
			return 2, dir, nil
		}
		why = append(why, "cgroup v2: "+err.Error())
	} else {
		why = append(why, "cgroup v2: lacuna is in no cgroup v2 group")
	}
	if p, ok := v1["memory"]; ok {
		dir, err := findV1(root, mounts, p)
		if err == nil {
			return 1, dir, nil
		}
		why = append(why, "cgroup v1: "+err.Error())
	} else {
		why = append(why, "cgroup v1: lacuna is in no memory cgroup")
	}
	return 0, "", errors.New(strings.Join(why, "; "))
}

// findV2 is the cgroup v2 directory to make lacuna's groups in, for a
// process in group p. A group with processes cannot give the memory
// controller to groups below it (only the root can), so that is p itself
// only when it already does (the root); otherwise p's parent, which gives
// it to p and so to every group beside p.
func findV2(root string, mounts []mountInfo, p string) (string, error) {
	dir, top, ok := resolveCgroup(mounts, func(m mountInfo) bool { return m.fstype == "cgroup2" }, p)
	if !ok {
		return "", fmt.Errorf("no cgroup2 mount shows lacuna's group %s", p)
	}
	dir = root + dir
	ctl, err := readWords(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return "", err
	}
	if !slices.Contains(ctl, "memory") {
		return "", fmt.Errorf("no memory controller for %s (cgroup.controllers: %q)", dir, strings.Join(ctl, " "))
	}
	sub, err := readWords(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return "", err
	}
	if slices.Contains(sub, "memory") {
		return dir, nil
	}
	if top {
		return "", fmt.Errorf("lacuna's group %s holds processes, so it cannot give memory to groups below it, and its parent is not visible (a cgroup namespace): run lacuna in a group of its own whose parent delegates the memory controller", dir)
	}
	parent := filepath.Dir(dir)
	psub, err := readWords(filepath.Join(parent, "cgroup.subtree_control"))
	if err != nil {
		return "", err
	}
	if !slices.Contains(psub, "memory") {
		return "", fmt.Errorf("%s does not give the memory controller to the groups below it", parent)
	}
	return parent, nil
}

// findV1 is the cgroup v1 memory directory of a process in group p: v1
// lets a group with processes have groups below it.
func findV1(root string, mounts []mountInfo, p string) (string, error) {
	dir, _, ok := resolveCgroup(mounts, func(m mountInfo) bool { return m.fstype == "cgroup" && slices.Contains(m.super, "memory") }, p)
	if !ok {
		return "", fmt.Errorf("no memory cgroup mount shows lacuna's group %s", p)
	}
	dir = root + dir
	if _, err := os.Stat(filepath.Join(dir, v1Files.limit)); err != nil {
		return "", err
	}
	return dir, nil
}

// parseSelfCgroup reads /proc/self/cgroup ("ID:CONTROLLERS:PATH" lines):
// the group in the unified (v2) hierarchy, "" when none, and in each v1
// hierarchy by controller.
func parseSelfCgroup(b []byte) (unified string, v1 map[string]string) {
	v1 = map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			unified = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			v1[c] = f[2]
		}
	}
	return unified, v1
}

// mountInfo is one line of /proc/self/mountinfo.
type mountInfo struct {
	root   string   // the mounted directory within its file system: a cgroup mount's top group
	point  string   // where it is mounted
	fstype string   // "cgroup" (v1) or "cgroup2"
	super  []string // super options: a v1 hierarchy's controllers
}

// parseMountinfo reads /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT
// POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER", paths octal-escaped.
func parseMountinfo(b []byte) []mountInfo {
	var ms []mountInfo
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || len(f) < sep+4 {
			continue
		}
		ms = append(ms, mountInfo{root: unescapeMount(f[3]), point: unescapeMount(f[4]), fstype: f[sep+1], super: strings.Split(f[sep+3], ",")})
	}
	return ms
}

// unescapeMount undoes mountinfo's \NNN (octal) escapes of space, tab,
// newline and backslash.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// resolveCgroup is where group p is in the file system, through the first
// mount that matches and shows it, and whether p is that mount's top
// (its parent then not visible).
func resolveCgroup(mounts []mountInfo, match func(mountInfo) bool, p string) (dir string, top, ok bool) {
	for _, m := range mounts {
		if !match(m) {
			continue
		}
		var rel string
		switch {
		case m.root == "/":
			rel = p
		case p == m.root:
			rel = "/"
		case strings.HasPrefix(p, m.root+"/"):
			rel = strings.TrimPrefix(p, m.root)
		default:
			continue
		}
		return filepath.Join(m.point, rel), rel == "/", true
	}
	return "", false, false
}

// groupSeq tells apart the groups one process makes in one second.
var groupSeq atomic.Uint64

// memGroup is one run's memory cgroup.
type memGroup struct {
	c   *memCgroup
	dir string
}

// newGroup makes a group for one Run bounded to limit bytes, and swap
// bounded where the kernel accounts it.
func (c *memCgroup) newGroup(limit int64) (*memGroup, error) {
	dir := filepath.Join(c.dir, fmt.Sprintf("r-%d-%d-%d", time.Now().Unix(), os.Getpid(), groupSeq.Add(1)))
	if err := c.mkdir(dir); err != nil {
		return nil, fmt.Errorf("sandbox: memory cgroup: %w", err)
	}
	g := &memGroup{c: c, dir: dir}
	liveGroups.Store(dir, true)
	if err := g.setLimit(limit); err != nil {
		c.rmdir(dir)
		liveGroups.Delete(dir)
		return nil, fmt.Errorf("sandbox: memory cgroup %s: %w", dir, err)
	}
	return g, nil
}

// setLimit bounds g to n bytes: memory first (v1 refuses a swap limit
// below the memory limit), then swap where its file exists.
func (g *memGroup) setLimit(n int64) error {
	f := g.c.files
	if err := writeCgroupFile(filepath.Join(g.dir, f.limit), strconv.FormatInt(n, 10)); err != nil {
		return err
	}
	if p := filepath.Join(g.dir, f.swap); exists(p) {
		return writeCgroupFile(p, strconv.FormatInt(g.c.swapLimit(n), 10))
	}
	if f.noSwap != "" {
		if p := filepath.Join(g.dir, f.noSwap); exists(p) {
			return writeCgroupFile(p, "0")
		}
	}
	return nil
}

// procs is the file a process writes its pid to to join g.
func (g *memGroup) procs() string { return filepath.Join(g.dir, "cgroup.procs") }

// joinArgv is argv behind v1's shim, which joins g and becomes argv. A
// process must be root to join (the group's files are root's): the shim
// runs as root, and drop (setpriv's command line), if any, drops root
// after it.
func (g *memGroup) joinArgv(argv, drop []string) []string {
	shim := []string{"/bin/sh", "-c", `echo $$ >"$0" && exec "$@"`, g.procs()}
	return append(append(shim, drop...), argv...)
}

// end kills whatever is left in g, reads whether the kernel killed a
// process of it for its limit and the most it held (0 when the kernel
// does not say), and removes it; a group that cannot go yet (a process
// that does not die at once) is left to gc. An error says the run was not
// in g at all (v1's shim failed), or that its counters cannot be read.
func (g *memGroup) end() (oomKilled bool, peak int64, err error) {
	g.killAll()
	oomKilled, err = g.oomKilled()
	if err == nil {
		peak, err = g.peak()
	}
	if err == nil && peak == 0 && g.c.v == 1 {
		// Every process that joins charges its group (a stack, page
		// tables): none did.
		err = errors.New("the program never joined it")
	}
	for i := 0; i < 200; i++ {
		if err := g.c.rmdir(g.dir); err == nil || errors.Is(err, fs.ErrNotExist) {
			break
		}
		time.Sleep(10 * time.Millisecond)
		g.killAll()
	}
	liveGroups.Delete(g.dir)
	if err != nil {
		return false, 0, fmt.Errorf("sandbox: memory cgroup %s: %w", g.dir, err)
	}
	return oomKilled, peak, nil
}

// killAll kills every process in g: at once through cgroup.kill (v2,
// Linux 5.14), otherwise one by one, each through a pidfd (os.FindProcess)
// taken before checking that it is still in g, so that a pid reused
// meanwhile is never signalled.
func (g *memGroup) killAll() {
	if g.c.files.kill != "" && writeCgroupFile(filepath.Join(g.dir, g.c.files.kill), "1") == nil {
		return
	}
	listed, _ := readWords(g.procs())
	found := map[string]*os.Process{}
	for _, s := range listed {
		if pid, err := strconv.Atoi(s); err == nil {
			if p, err := os.FindProcess(pid); err == nil {
				found[s] = p
			}
		}
	}
	still, _ := readWords(g.procs())
	for s, p := range found {
		if slices.Contains(still, s) {
			p.Signal(syscall.SIGKILL)
		}
		p.Release()
	}
}

// oomKilled says whether the kernel killed a process of g because g
// reached its limit. A missing file (a group without the memory
// controller, in tests) or a kernel without the count (before 4.13) says
// no.
func (g *memGroup) oomKilled() (bool, error) {
	b, err := os.ReadFile(filepath.Join(g.dir, g.c.files.events))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == "oom_kill" {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n > 0, err
		}
	}
	return false, nil
}

// peak is the most g held at once; 0 when the kernel does not say (v2
// before Linux 5.19).
func (g *memGroup) peak() (int64, error) {
	b, err := os.ReadFile(filepath.Join(g.dir, g.c.files.peak))
	if errors.Is(err, fs.ErrNotExist) && g.c.v == 2 {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// staleAfter is how old a group must be before gc may remove it: no run
// takes that long between making its group and joining it.
const staleAfter = time.Minute

// liveGroups holds the groups of this process's runs still going.
var liveGroups sync.Map

// gc removes the empty groups in c.dir of runs that are over: the
// wrapper scripts' when a wrapper was killed, any run's whose removal
// failed. A group goes only when it is more than staleAfter old and the
// process that made it (named in it) is gone, or is this one and its run
// over: the kernel refuses to remove a group with processes, but one just
// made, or whose processes just ended, is empty too, and its run still
// reads it.
func (c *memCgroup) gc(now time.Time) {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		made, pid, ok := parseGroupName(e.Name())
		if !e.IsDir() || !ok || now.Sub(made) <= staleAfter {
			continue
		}
		dir := filepath.Join(c.dir, e.Name())
		if pid == os.Getpid() {
			if _, live := liveGroups.Load(dir); live {
				continue
			}
		} else if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
			continue
		}
		c.rmdir(dir)
	}
}

// parseGroupName reads a group name of lacuna's, "KIND-UNIXSECONDS-PID-..."
// with KIND r (Run) or x (a wrapper script, PID its shell's).
func parseGroupName(name string) (made time.Time, pid int, ok bool) {
	f := strings.SplitN(name, "-", 4)
	if len(f) != 4 || (f[0] != "r" && f[0] != "x") {
		return time.Time{}, 0, false
	}
	sec, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return time.Time{}, 0, false
	}
	if pid, err = strconv.Atoi(f[2]); err != nil || pid <= 0 {
		return time.Time{}, 0, false
	}
	return time.Unix(sec, 0), pid, true
}

// scriptMake is sh that removes stale groups as gc does (a wrapper
// killed before it removed its group leaves one, and a wrapper may run
// many times without a Run between), then makes a wrapper run's group,
// bounded as setLimit bounds one, in $g, or exits 125 saying why.
func (c *memCgroup) scriptMake(name string, limit int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "now=$(date +%%s)\nfor d in %s/[rx]-*; do t=${d##*/?-}; p=${t#*-}; p=${p%%%%-*}; t=${t%%%%-*}\n", shellQuote(c.dir))
	fmt.Fprintf(&b, "\tcase $t$p in ''|*[!0-9]*) continue;; esac\n\t[ $((now - t)) -le %d ] || kill -0 \"$p\" 2>/dev/null || rmdir \"$d\" 2>/dev/null\ndone\n", int(staleAfter/time.Second))
	fmt.Fprintf(&b, "g=$(mktemp -d %s/x-\"$now-$$\"-XXXXXXXX 2>/dev/null) && echo %d >\"$g/%s\"", shellQuote(c.dir), limit, c.files.limit)
	swap := fmt.Sprintf("{ [ ! -e \"$g/%s\" ] || echo %d >\"$g/%s\"; }", c.files.swap, c.swapLimit(limit), c.files.swap)
	if c.files.noSwap != "" {
		swap = fmt.Sprintf("if [ -e \"$g/%s\" ]; then echo %d >\"$g/%s\"; elif [ -e \"$g/%s\" ]; then echo 0 >\"$g/%s\"; fi",
			c.files.swap, c.swapLimit(limit), c.files.swap, c.files.noSwap, c.files.noSwap)
		swap = "{ " + swap + "; }"
	}
	b.WriteString(" && " + swap + " || {\n")
	fmt.Fprintf(&b, "\techo %s >&2\n", shellQuote(name+": cannot make a memory cgroup in "+c.dir))
	b.WriteString("\t[ -z \"$g\" ] || rmdir \"$g\"\n\texit 125\n}\n")
	return b.String()
}

// scriptJoin is the shim, for a script, that joins $g and becomes the
// rest of its command line.
const scriptJoin = `/bin/sh -c 'echo $$ >"$0" && exec "$@"' "$g/cgroup.procs" `

// scriptEnd is sh that, with the run's status in $rc, prints a line
// starting with MemoryMarker when the kernel killed a process of $g for
// its limit, kills what is left in $g, removes it and exits with $rc.
func (c *memCgroup) scriptEnd(limit int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{ while read -r k v; do if [ \"$k\" = oom_kill ] && [ \"$v\" -gt 0 ]; then printf '\\n%s%d bytes]\\n'; fi; done <\"$g/%s\"; } 2>/dev/null\n",
		MemoryMarker, limit, c.files.events)
	if c.files.kill != "" {
		fmt.Fprintf(&b, "[ ! -e \"$g/%s\" ] || echo 1 >\"$g/%s\" 2>/dev/null\n", c.files.kill, c.files.kill)
	}
	b.WriteString("n=0\nuntil rmdir \"$g\" 2>/dev/null || [ ! -d \"$g\" ] || [ $n -ge 100 ]; do\n")
	b.WriteString("\tfor p in $(cat \"$g/cgroup.procs\" 2>/dev/null); do kill -9 \"$p\" 2>/dev/null; done\n")
	b.WriteString("\tn=$((n+1)); sleep 0.02\ndone\nexit \"$rc\"\n")
	return b.String()
}

// writeCgroupFile writes s to an interface file, which must exist: a
// cgroup's files come with it.
func writeCgroupFile(p, s string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(s))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", s, p, err)
	}
	return nil
}

func readWords(p string) ([]string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(bytes.TrimSpace(b))), nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
