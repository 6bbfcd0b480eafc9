package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lacuna-dev/lacuna/engine"
)

// A Command is one lacuna subcommand, in the manner of the go command's
// base.Command: its usage, help and flags are data, so that `lacuna help
// CMD` and `lacuna CMD -h` print the same text. A new command is a file
// that declares one and lists it in commands.
type Command struct {
	// Name is the word after lacuna.
	Name string
	// UsageLine is the arguments after the name: "PIPELINE".
	UsageLine string
	// Short is the one-line description in `lacuna help`.
	Short string
	// Long is the full description in `lacuna help NAME`.
	Long string
	// Flag is the command's flags; flag groups shared between commands
	// (flags.go) add themselves to it in the command's init.
	Flag *flag.FlagSet
	// Run runs the command with its positional arguments (flags already
	// parsed into Flag). ctx is cancelled by the first SIGINT or SIGTERM.
	// An exitError sets the exit status without a message.
	Run func(ctx context.Context, cmd *Command, args []string) error
}

// newCommand makes a Command with its flag set ready for flags.
func newCommand(name, usageLine, short, long string) *Command {
	c := &Command{Name: name, UsageLine: usageLine, Short: short, Long: strings.TrimSpace(long)}
	c.Flag = flag.NewFlagSet(name, flag.ContinueOnError)
	c.Flag.Usage = func() { c.usage(c.Flag.Output()) }
	return c
}

// usage prints the command's usage line, description and flags.
func (c *Command) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: lacuna %s %s\n\n", c.Name, c.UsageLine)
	if c.Long != "" {
		fmt.Fprintf(w, "%s\n\n", c.Long)
	} else {
		fmt.Fprintf(w, "%s.\n\n", upperFirst(c.Short))
	}
	n := 0
	c.Flag.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(w, "Flags:")
		out := c.Flag.Output()
		c.Flag.SetOutput(w)
		c.Flag.PrintDefaults()
		c.Flag.SetOutput(out)
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// commands is every command, in the order `lacuna help` lists them.
var commands = []*Command{
	cmdValidate,
	cmdPlan,
	cmdRun,
	cmdLog,
	cmdShow,
	cmdCat,
	cmdDiff,
	cmdExport,
	cmdReport,
	cmdView,
	cmdVerify,
	cmdGraph,
	cmdFmt,
	cmdTypes,
	cmdGC,
	cmdFsck,
	cmdVersion,
	cmdHelp,
}

func lookupCommand(name string) *Command {
	for _, c := range commands {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// suggestCommand is the command a mistyped name most likely meant, or "".
func suggestCommand(name string) string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.Name
	}
	return engine.Suggest(name, names)
}

// mainUsage prints the list of commands.
func mainUsage(w io.Writer) {
	fmt.Fprintf(w, "lacuna %s: declarative pipelines of content-addressed Parquet artifacts\n\nUsage:\n", engine.Version)
	for _, c := range commands {
		fmt.Fprintf(w, "  lacuna %-8s %-26s %s\n", c.Name, c.UsageLine, c.Short)
	}
	fmt.Fprintln(w, "\nRun 'lacuna help COMMAND' or 'lacuna COMMAND -h' for a command's flags. The store is .lacuna/ beside the pipeline unless --store or LACUNA_STORE says otherwise.")
}

var cmdHelp = newCommand("help", "[COMMAND]", "print help for lacuna or one of its commands", "")

func init() {
	cmdHelp.Run = func(ctx context.Context, _ *Command, args []string) error {
		switch len(args) {
		case 0:
			mainUsage(os.Stdout)
			return nil
		case 1:
			if c := lookupCommand(args[0]); c != nil {
				c.usage(os.Stdout)
				return nil
			}
			if s := suggestCommand(args[0]); s != "" {
				return usageError(fmt.Sprintf("unknown command %q; did you mean %q?", args[0], s))
			}
			return usageError(fmt.Sprintf("unknown command %q: run 'lacuna help' for the list", args[0]))
		}
		return usageError("usage: lacuna help [COMMAND]")
	}
}

// parseFlags parses the command's flags given anywhere among the
// arguments, as users type them: `lacuna run p.hcl -j 4`. It returns the
// positional arguments.
func (c *Command) parseFlags(args []string) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if f := c.Flag.Lookup(name); f != nil {
				if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
					continue
				}
				if i+1 < len(args) {
					flags = append(flags, args[i+1])
					i++
				}
			}
			continue
		}
		pos = append(pos, a)
	}
	if err := c.Flag.Parse(flags); err != nil {
		return nil, err
	}
	return pos, nil
}
