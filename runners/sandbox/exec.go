package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// TruncatedMarker starts the line ExecWrapper prints after a program's
// output when it cut it at Limits.Output bytes.
const TruncatedMarker = "[lacuna: output truncated at "

// MemoryMarker starts the line an ExecWrapper script prints last, on
// stdout, when the kernel killed a process of its sandbox because the
// sandbox reached its memory cgroup's limit (see Limits.Memory): "killed:
// memory limit". The script's exit status stays the program's. A caller
// that keeps only the first bytes of a long output
// (ExecWrapperForDescriptors does not cut it) must keep the last line too
// to see it.
const MemoryMarker = "[lacuna: killed: memory limit of "

// limiter runs "$@" with its stdout and stderr merged, lets the first $n
// bytes through, then says it cut the output and closes the pipe (so a
// program printing on is stopped by SIGPIPE), and exits with the
// program's status. It needs only sh, stdbuf, head and wc (coreutils);
// stdbuf keeps head from holding back what a program printed before it
// hung and was killed.
const limiter = `n=$1; shift
exec 4>&1
rc=$( { { "$@" 2>&1 3>&- 4>&-; echo $? >&3; } | { stdbuf -o0 head -c "$n"; if [ "$(head -c 1 | wc -c)" -ne 0 ]; then printf '\n` + TruncatedMarker + `%s bytes]\n' "$n"; fi; } >&4 3>&-; } 3>&1 )
exit "$rc"`

// ExecWrapper writes an executable script into dir that runs its
// arguments ("PROGRAM ARGS...") as an untrusted program with lim and the
// read-only host paths readOnly (see Spec.ReadOnly): what `go test -exec`
// takes, so that the go command compiles outside and the test binaries run
// inside. The program's environment is PATH, HOME=/work, TMPDIR=/tmp and
// LANG=C.UTF-8 whatever the go command's is. Its stdout and stderr are
// merged and cut at lim.Output bytes, followed by a line starting with
// TruncatedMarker, before they reach the go command.
//
// Under bubblewrap PROGRAM is copied into the sandbox as /work/prog, a
// read-only mount in the sandbox's own /work (a tmpfs of lim.Disk bytes):
// nothing the program runs can change it. The wrapper becomes bubblewrap
// (exec), or with a memory cgroup is its parent, so that when the go
// command kills it (a test timeout) the whole sandbox and its files go
// with it (bubblewrap's --die-with-parent): nothing is left on the host. Without
// bubblewrap the copy lives in a directory of os.TempDir that the wrapper
// removes when it exits; when the wrapper is killed, that directory stays
// and the program runs on until its CPU limit or until the caller kills
// the go command's process group.
//
// The wall clock is the caller's (go test -timeout, and killing the go
// command's process group, which takes the sandbox with it through
// bubblewrap's --die-with-parent): lim.Wall only sets the default of
// lim.CPU. The script stays valid as long as dir does; remove dir when
// done.
//
// With a memory cgroup (Identity's memory_cgroup) each run of the script
// makes a group of its own (exit status 125 and a line on stderr when it
// cannot), bubblewrap's first process joins it through a shim on the host
// side, and the script, which then waits for bubblewrap instead of
// becoming it, prints a line starting with MemoryMarker when the kernel
// killed a process for the limit, kills what is left and removes the
// group. Killed itself, the script takes the sandbox with it as before
// (bubblewrap dies with its parent), and a later New, Run or ExecWrapper
// removes the group.
func (s *Sandbox) ExecWrapper(dir string, lim Limits, readOnly ...string) (string, error) {
	return s.execWrapper("lacuna-sandbox-exec", true, dir, lim, readOnly)
}

// ExecWrapperForDescriptors is ExecWrapper for a program its caller hands
// descriptors (7 and up) that nothing else in the sandbox may hold: under
// bubblewrap no shell stands between bubblewrap and the program, since
// the output limiter's shells would keep the descriptors open where the
// program could reopen them through /proc (with a memory cgroup, the
// wrapper's shell that waits for bubblewrap holds them on the host,
// outside the sandbox's pid namespace). Its output is not cut: the
// caller bounds what it keeps (and the wall clock what it costs).
// Without bubblewrap the wrapper is ExecWrapper's: that mode isolates
// less anyway.
func (s *Sandbox) ExecWrapperForDescriptors(dir string, lim Limits, readOnly ...string) (string, error) {
	return s.execWrapper("lacuna-sandbox-exec-fd", s.bwrap == "", dir, lim, readOnly)
}

func (s *Sandbox) execWrapper(name string, limited bool, dir string, lim Limits, readOnly []string) (string, error) {
	lim = lim.withDefaults()
	if s.mem != nil {
		s.mem.gc(time.Now())
	}
	var b bytes.Buffer
	b.WriteString("#!/bin/sh\n# Written by lacuna: runs PROGRAM ARGS... in the sandbox (" + s.Isolation() + " " + s.version + ").\n")
	var cmd []string
	if s.setpriv != "" {
		cmd = []string{s.setpriv, "--reuid=" + strconv.Itoa(nobody), "--regid=" + strconv.Itoa(nobody), "--clear-groups"}
	}
	if s.bwrap != "" {
		// Descriptor 3 is PROGRAM, opened before dropping root (the go
		// command's directories are private): bubblewrap copies it into
		// /work and the limiter closes it.
		b.WriteString("exec 3<\"$1\" || exit 125\nshift\n")
		cmd = append(cmd, s.env, "-i")
		cmd = append(cmd, defaultEnv("/work", "/tmp")...)
		args, err := s.bwrapArgs(lim, readOnly, []string{"--perms", "0755", "--ro-bind-data", "3", "/work/prog"}, false)
		if err != nil {
			return "", err
		}
		cmd = append(cmd, args...)
		cmd = append(cmd, s.limitArgs(lim)...)
		if limited {
			cmd = append(cmd, "/bin/sh", "-c", "exec 3<&-\n"+limiter, "sh", strconv.Itoa(lim.Output), "/work/prog")
		} else {
			cmd = append(cmd, "/work/prog")
		}
		if s.mem == nil {
			b.WriteString("exec ")
			writeQuoted(&b, cmd)
			b.WriteString(" \"$@\"\n")
		} else {
			b.WriteString(s.mem.scriptMake(name, s.memLimit(lim)))
			b.WriteString(scriptJoin)
			writeQuoted(&b, cmd)
			b.WriteString(" \"$@\"\nrc=$?\n")
			b.WriteString(s.mem.scriptEnd(s.memLimit(lim)))
		}
	} else {
		fmt.Fprintf(&b, "w=$(mktemp -d %s/lacuna-exec-XXXXXXXX) || exit 125\n", shellQuote(os.TempDir()))
		b.WriteString("trap 'rm -rf \"$w\"' EXIT\n")
		b.WriteString("cp \"$1\" \"$w/prog\" || exit 125\nshift\nchmod 0755 \"$w/prog\"\n")
		if s.setpriv != "" {
			// Only the uid the program runs as may enter: a world-writable
			// directory would let another local user swap the program.
			fmt.Fprintf(&b, "chown %d:%d \"$w\" \"$w/prog\" || exit 125\n", nobody, nobody)
		}
		b.WriteString("chmod 0700 \"$w\"\ncd \"$w\" || exit 125\n")
		if s.mem != nil {
			b.WriteString(s.mem.scriptMake(name, s.memLimit(lim)))
			b.WriteString(scriptJoin)
		}
		cmd = append(cmd, s.env, "-i")
		writeQuoted(&b, cmd)
		b.WriteString(` PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin HOME="$w" TMPDIR="$w" LANG=C.UTF-8 `)
		writeQuoted(&b, s.limitArgs(lim))
		b.WriteString(" /bin/sh -c " + shellQuote(limiter) + " sh " + strconv.Itoa(lim.Output) + ` "$w/prog" "$@"` + "\n")
		if s.mem != nil {
			b.WriteString("rc=$?\n")
			b.WriteString(s.mem.scriptEnd(s.memLimit(lim)))
		}
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b.Bytes(), 0o755); err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	return p, nil
}

func writeQuoted(b *bytes.Buffer, args []string) {
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(shellQuote(a))
	}
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=/.:,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
