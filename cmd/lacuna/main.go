// Command lacuna runs declarative data pipelines whose nodes produce
// content-addressed Parquet artifacts. See README.md for a tour.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	_ "github.com/lacuna-dev/lacuna/nodes/bundle"
	_ "github.com/lacuna-dev/lacuna/nodes/discovery"
	_ "github.com/lacuna-dev/lacuna/nodes/experiments"
	_ "github.com/lacuna-dev/lacuna/nodes/filters"
	_ "github.com/lacuna-dev/lacuna/nodes/generic"
	_ "github.com/lacuna-dev/lacuna/nodes/judge"
	_ "github.com/lacuna-dev/lacuna/nodes/metrics"
	_ "github.com/lacuna-dev/lacuna/nodes/parametric"
	_ "github.com/lacuna-dev/lacuna/nodes/tasks"
	_ "github.com/lacuna-dev/lacuna/nodes/toolsense"
	_ "github.com/lacuna-dev/lacuna/nodes/trainingdata"
)

// exitError carries an exit status without a message of its own.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// usageError is a command used wrongly: its message is printed and lacuna
// exits with status 2.
type usageError string

func (e usageError) Error() string { return string(e) }

// signalGrace is how long a command has to return after the first SIGINT
// or SIGTERM cancelled its context, before lacuna exits anyway. A run
// stops dispatching at once and waits only for nodes already running;
// the store is safe to leave at any moment (a run resumes after kill -9).
const signalGrace = 3 * time.Second

func main() {
	env = readEnvironment(os.Getenv)
	nodeEnviron = os.Environ()
	os.Exit(mainStatus(os.Args[1:]))
}

// mainStatus runs the command named by args[0] and returns the exit status.
func mainStatus(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		mainUsage(os.Stdout)
		return 0
	}
	c := lookupCommand(args[0])
	if c == nil {
		if s := suggestCommand(args[0]); s != "" {
			fmt.Fprintf(os.Stderr, "lacuna: unknown command %q; did you mean %q?\nRun 'lacuna help' for the list of commands.\n", args[0], s)
			return 2
		}
		fmt.Fprintf(os.Stderr, "lacuna: unknown command %q\n\n", args[0])
		mainUsage(os.Stderr)
		return 2
	}
	ctx, signalled := handleSignals()
	if env.cpuProfile != "" {
		// For benchmarking lacuna itself: go tool pprof lacuna PATH.
		if f, err := os.Create(env.cpuProfile); err == nil {
			if err := pprof.StartCPUProfile(f); err != nil {
				fmt.Fprintln(os.Stderr, "lacuna: cpu profile:", err)
			}
		}
	}
	governMemory(ctx)
	err := run(ctx, c, args[1:])
	pprof.StopCPUProfile()
	if env.memProfile != "" {
		if f, ferr := os.Create(env.memProfile); ferr == nil {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	status := 0
	var ee exitError
	var ue usageError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		status = int(ee)
	case errors.Is(err, flag.ErrHelp):
	case errors.As(err, &ue):
		fmt.Fprintf(os.Stderr, "lacuna %s: %s\n", c.Name, ue)
		status = 2
	default:
		fmt.Fprintf(os.Stderr, "lacuna %s: %s\n", c.Name, err)
		status = 1
	}
	if s := signalled(); s != 0 {
		// Interrupted: the status says so, whatever the command returned.
		return s
	}
	return status
}

// run parses the command's flags and runs it.
func run(ctx context.Context, c *Command, args []string) error {
	pos, err := c.parseFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return exitError(2) // the flag package printed the error and usage
	}
	return c.Run(ctx, c, pos)
}

// signalStatus is the shell's exit status for a process ended by s.
func signalStatus(s os.Signal) int {
	if s == syscall.SIGTERM {
		return 128 + int(syscall.SIGTERM)
	}
	return 128 + int(syscall.SIGINT)
}

// handleSignals returns a context cancelled by the first SIGINT or
// SIGTERM, and a function giving the exit status that signal calls for
// (0 when none came). After the first signal the command has signalGrace
// to return; a second signal, or the end of the grace period, exits the
// process at once with that status.
func handleSignals() (context.Context, func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	status := make(chan int, 1)
	go func() {
		s := <-ch
		code := signalStatus(s)
		status <- code
		fmt.Fprintf(os.Stderr, "lacuna: %s: stopping (a second signal exits at once)\n", s)
		cancel()
		select {
		case <-ch:
		case <-time.After(signalGrace):
			fmt.Fprintf(os.Stderr, "lacuna: still running %s after %s, exiting\n", s, signalGrace)
		}
		os.Exit(code)
	}()
	return ctx, func() int {
		select {
		case code := <-status:
			return code
		default:
			return 0
		}
	}
}
