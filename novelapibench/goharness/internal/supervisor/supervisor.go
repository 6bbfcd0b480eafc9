// Package supervisor is the harness supervisor's source. It is not used
// as a Go package: goharness embeds this file's declarations into every
// generated harness package (that is why every name starts with lacuna,
// which solutions may not use, and why its imports carry the harness
// runtime's names), and a test binary started as `PROG lacuna-supervise
// WALL` becomes the supervisor.
//
// The supervisor runs inside one sandbox and starts the harness processes
// listed on descriptor 7 ("UNIT VARIANT KEYHEX" lines: a unit's variant,
// the scenario on the task's data, substituted or on the second input),
// one at a time, each in a fresh process of the same binary
// (`PROG -test.run=^Test_uUNIT$`, whatever the variant) that gets its key
// and variant on a pipe at descriptor 7 and writes its record to a pipe
// at descriptor 8. For each process it writes one JSON line
// (lacunaResult) to its own descriptor 8, which no unit inherits. Between
// processes it resets the sandbox: every process a unit left behind is killed and
// /work is emptied (the program itself is a read-only mount), so no unit
// sees what another did. It makes itself undumpable, so a unit cannot
// read its memory (the keys) or its descriptors through /proc.
package supervisor

//lint:file-ignore U1000 compiled here only to be checked: goharness embeds the declarations in every harness package, where lacunaOpen calls lacunaSupervise

import (
	lacunabufio "bufio"
	lacunahex "encoding/hex"
	lacunajson "encoding/json"
	lacunaio "io"
	lacunaos "os"
	lacunaexec "os/exec"
	lacunafilepath "path/filepath"
	lacunastrconv "strconv"
	lacunastrings "strings"
	lacunasyscall "syscall"
	lacunatime "time"
)

// lacunaResult is what the supervisor reports for one unit.
type lacunaResult struct {
	Unit     int     `json:"unit"`
	Variant  string  `json:"variant"`
	Exit     int     `json:"exit"`
	TimedOut bool    `json:"timed_out,omitempty"`
	Seconds  float64 `json:"seconds"`
	Output   string  `json:"output"`
	Record   string  `json:"record"` // hex
}

// lacunaSupervise runs the supervisor; args are what follows
// "lacuna-supervise": the wall clock of one unit. It returns the exit
// status.
func lacunaSupervise(args []string) int {
	wall := 60 * lacunatime.Second
	if len(args) > 0 {
		if d, err := lacunatime.ParseDuration(args[0]); err == nil && d > 0 {
			wall = d
		}
	}
	// Only inside bubblewrap's own process namespace: resetting kills
	// every process the supervisor did not find at its start.
	if comm, err := lacunaos.ReadFile("/proc/1/comm"); err != nil || lacunastrings.TrimSpace(string(comm)) != "bwrap" {
		return 3
	}
	// PR_SET_DUMPABLE 0: other processes of the uid cannot read this
	// one's memory or open its descriptors through /proc.
	lacunasyscall.RawSyscall(lacunasyscall.SYS_PRCTL, 4, 0, 0)
	lacunasyscall.CloseOnExec(7)
	lacunasyscall.CloseOnExec(8)
	control := lacunaos.NewFile(7, "lacuna-control")
	results := lacunaos.NewFile(8, "lacuna-results")
	if control == nil || results == nil {
		return 2
	}
	data, err := lacunaio.ReadAll(control)
	control.Close()
	if err != nil {
		return 2
	}
	self := lacunaos.Getpid()
	initial := lacunaProcesses()
	sc := lacunabufio.NewScanner(lacunastrings.NewReader(string(data)))
	for sc.Scan() {
		f := lacunastrings.Fields(sc.Text())
		if len(f) != 3 || len(f[1]) != 1 {
			continue
		}
		unit, err1 := lacunastrconv.Atoi(f[0])
		key, err2 := lacunahex.DecodeString(f[2])
		if err1 != nil || err2 != nil {
			continue
		}
		res := lacunaRunUnit(unit, f[1][0], key, wall, func() { lacunaReset(initial, self) })
		b, _ := lacunajson.Marshal(res)
		if _, err := results.Write(append(b, '\n')); err != nil {
			return 2
		}
	}
	return 0
}

// lacunaRunUnit runs one unit's variant in a process of its own; reset
// runs once the process has ended (or was killed at wall), before its
// record is read: what it left running holds the record pipe open.
func lacunaRunUnit(unit int, variant byte, key []byte, wall lacunatime.Duration, reset func()) (res lacunaResult) {
	res.Unit, res.Variant = unit, string(variant)
	kr, kw, err := lacunaos.Pipe()
	if err != nil {
		res.Exit, res.Output = -1, err.Error()
		return res
	}
	kw.Write(append(key, variant))
	kw.Close()
	defer kr.Close()
	rr, rw, err := lacunaos.Pipe()
	if err != nil {
		res.Exit, res.Output = -1, err.Error()
		return res
	}
	defer rr.Close()
	out := &lacunaCapped{limit: 64 << 10}
	cmd := lacunaexec.Command(lacunaos.Args[0], "-test.run=^Test_u"+lacunastrconv.Itoa(unit)+"$", "-test.paniconexit0")
	cmd.ExtraFiles = []*lacunaos.File{nil, nil, nil, nil, kr, rw}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &lacunasyscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 500 * lacunatime.Millisecond
	start := lacunatime.Now()
	if err := cmd.Start(); err != nil {
		rw.Close()
		res.Exit, res.Output = -1, err.Error()
		return res
	}
	kr.Close()
	rw.Close()
	record := make(chan []byte, 1)
	go func() {
		b, _ := lacunaio.ReadAll(lacunaio.LimitReader(rr, 64<<20))
		lacunaio.Copy(lacunaio.Discard, rr)
		record <- b
	}()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-lacunatime.After(wall):
		res.TimedOut = true
		lacunasyscall.Kill(-cmd.Process.Pid, lacunasyscall.SIGKILL)
		<-done
	}
	res.Seconds = lacunatime.Since(start).Seconds()
	res.Exit = cmd.ProcessState.ExitCode()
	reset()
	res.Record = lacunahex.EncodeToString(<-record) // JSON would escape <, > and & six bytes each
	res.Output = out.String()
	return res
}

// lacunaCapped keeps the first limit bytes written to it.
type lacunaCapped struct {
	b     lacunastrings.Builder
	limit int
}

func (c *lacunaCapped) Write(p []byte) (int, error) {
	if room := c.limit - c.b.Len(); room > 0 {
		c.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (c *lacunaCapped) String() string { return c.b.String() }

// lacunaProcesses lists the sandbox's processes (its own /proc).
func lacunaProcesses() map[int]bool {
	ps := map[int]bool{}
	ents, _ := lacunaos.ReadDir("/proc")
	for _, e := range ents {
		if pid, err := lacunastrconv.Atoi(e.Name()); err == nil {
			ps[pid] = true
		}
	}
	return ps
}

// lacunaReset kills every process that was not there when the supervisor
// started (what a unit left behind, however it detached), until none is
// left, then empties /work but for the program and the temporary
// directory, which it empties too.
func lacunaReset(initial map[int]bool, self int) {
	for round := 0; round < 100; round++ {
		killed := 0
		for pid := range lacunaProcesses() {
			if !initial[pid] && pid != self {
				if lacunasyscall.Kill(pid, lacunasyscall.SIGKILL) == nil {
					killed++
				}
			}
		}
		if killed == 0 {
			break
		}
		lacunatime.Sleep(lacunatime.Millisecond)
	}
	lacunaRemoveIPC()
	// A unit may have taken write permission from /work or /work/.tmp, or
	// replaced the latter: both are the sandbox uid's.
	lacunaos.Chmod("/work", 0o755)
	if fi, err := lacunaos.Lstat("/work/.tmp"); err != nil || !fi.IsDir() {
		lacunaRemove("/work/.tmp")
		lacunaos.Mkdir("/work/.tmp", 0o755)
	}
	lacunaos.Chmod("/work/.tmp", 0o755)
	for _, dir := range []string{"/work", "/work/.tmp"} {
		ents, _ := lacunaos.ReadDir(dir)
		for _, e := range ents {
			if dir == "/work" && (e.Name() == "prog" || e.Name() == ".tmp") {
				continue
			}
			lacunaRemove(lacunafilepath.Join(dir, e.Name()))
		}
	}
}

// lacunaRemoveIPC removes every System V shared memory segment, message
// queue and semaphore set of the sandbox's IPC namespace (its own: one
// sandbox's), once the processes that used them are gone: such an object
// outlives its creator, and its memory counts against the sandbox's
// memory cgroup, which the next units share. Without this a unit could
// leave the next ones too little memory to pass.
func lacunaRemoveIPC() {
	for _, kind := range []struct {
		file string
		call uintptr
	}{{"/proc/sysvipc/shm", lacunasyscall.SYS_SHMCTL}, {"/proc/sysvipc/msg", lacunasyscall.SYS_MSGCTL}, {"/proc/sysvipc/sem", lacunasyscall.SYS_SEMCTL}} {
		data, err := lacunaos.ReadFile(kind.file)
		if err != nil {
			continue
		}
		for i, line := range lacunastrings.Split(string(data), "\n") {
			f := lacunastrings.Fields(line)
			if i == 0 || len(f) < 2 {
				continue // the header
			}
			if id, err := lacunastrconv.Atoi(f[1]); err == nil {
				// IPC_RMID is 0 for all three; semctl's semnum is ignored.
				lacunasyscall.Syscall(kind.call, uintptr(id), 0, 0)
			}
		}
	}
}

// lacunaRemove removes a tree, making its directories writable first.
func lacunaRemove(path string) {
	lacunafilepath.WalkDir(path, func(p string, d lacunaos.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			lacunaos.Chmod(p, 0o700)
		}
		return nil
	})
	lacunaos.RemoveAll(path)
}
