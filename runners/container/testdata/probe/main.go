// Command probe is the program inside the test images of runners/container:
// a static binary (CGO_ENABLED=0) that reports what the container sees.
//
//	probe check IN OUT   print the working directory and environment, copy
//	                     IN/data.txt to OUT/result.txt (prefixed with
//	                     $VARIANT), and report whether IN is writable
//	probe variant        print $VARIANT
//	probe exit N         write to stderr and exit with status N
//	probe sleep          print "ready" and block, ignoring SIGTERM and SIGINT
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe check|variant|exit|sleep")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "check":
		check(os.Args[2], os.Args[3])
	case "variant":
		fmt.Println("variant", os.Getenv("VARIANT"))
	case "exit":
		n, _ := strconv.Atoi(os.Args[2])
		fmt.Fprintln(os.Stderr, "probe: exiting with", n)
		os.Exit(n)
	case "sleep":
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
		fmt.Println("ready")
		for { // a sleep, not select{}: the runtime would call that a deadlock and exit
			time.Sleep(time.Hour)
		}
	default:
		fmt.Fprintln(os.Stderr, "probe: unknown mode", os.Args[1])
		os.Exit(2)
	}
}

func check(in, out string) {
	wd, _ := os.Getwd()
	fmt.Println("cwd", wd)
	env := os.Environ()
	sort.Strings(env)
	for _, kv := range env {
		fmt.Println("env", kv)
	}
	data, err := os.ReadFile(filepath.Join(in, "data.txt"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(filepath.Join(in, "new.txt"), []byte("x"), 0o644); err != nil {
		fmt.Println("input write:", err)
	} else {
		fmt.Println("input write: ok")
	}
	res := "variant " + os.Getenv("VARIANT") + ": " + string(data)
	if err := os.WriteFile(filepath.Join(out, "result.txt"), []byte(res), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "probe: wrote", filepath.Join(out, "result.txt"))
}
