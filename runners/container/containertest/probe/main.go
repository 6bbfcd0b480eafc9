// Command probe is the program in containertest's images: a static binary
// (CGO_ENABLED=0, no libc needed) that runs a list of steps separated by
// ";" arguments and reports on stdout what it saw:
//
//	env                 print "env K=V" for each variable, sorted
//	cat FILE            print "cat FILE: CONTENT"
//	write FILE TEXT     write TEXT to FILE (exit 1 when that fails)
//	mkdir DIR           create DIR and its parents (exit 1 on failure)
//	copy SRC DST        copy file SRC to DST (exit 1 on failure)
//	try-write FILE      print "try-write FILE: ok" or "…: ERROR"
//	exit N              print "probe: exiting with N" on stderr, exit N
//	sleep               print "ready" and block, ignoring SIGTERM, SIGINT
//
// For example: probe env ";" write /out/a.txt hello ";" exit 3.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"syscall"
	"time"
)

func main() {
	var step []string
	for _, a := range append(os.Args[1:], ";") {
		if a != ";" {
			step = append(step, a)
			continue
		}
		if len(step) > 0 {
			run(step)
		}
		step = nil
	}
}

func run(step []string) {
	arg := func(i int) string {
		if i >= len(step) {
			fail("%s: missing argument %d", step[0], i)
		}
		return step[i]
	}
	switch step[0] {
	case "env":
		env := os.Environ()
		sort.Strings(env)
		for _, kv := range env {
			fmt.Println("env", kv)
		}
	case "cat":
		b, err := os.ReadFile(arg(1))
		if err != nil {
			fail("cat: %v", err)
		}
		fmt.Printf("cat %s: %s\n", arg(1), b)
	case "write":
		if err := os.WriteFile(arg(1), []byte(arg(2)), 0o644); err != nil {
			fail("write: %v", err)
		}
	case "mkdir":
		if err := os.MkdirAll(arg(1), 0o755); err != nil {
			fail("mkdir: %v", err)
		}
	case "copy":
		if err := copyFile(arg(1), arg(2)); err != nil {
			fail("copy: %v", err)
		}
	case "try-write":
		if err := os.WriteFile(arg(1), []byte("x"), 0o644); err != nil {
			fmt.Printf("try-write %s: %v\n", arg(1), err)
		} else {
			fmt.Printf("try-write %s: ok\n", arg(1))
		}
	case "exit":
		n, _ := strconv.Atoi(arg(1))
		fmt.Fprintln(os.Stderr, "probe: exiting with", n)
		os.Exit(n)
	case "sleep":
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
		fmt.Println("ready")
		for { // a sleep, not select{}: the runtime would call that a deadlock
			time.Sleep(time.Hour)
		}
	default:
		fail("unknown step %q", step[0])
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "probe: "+format+"\n", args...)
	os.Exit(1)
}
