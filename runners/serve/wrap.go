package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// A Wrapper runs a server elsewhere than as a child process of this one:
// runners/container's Server runs it in a container. Start gives each
// server it starts a name of its own (Server.Container) and runs what
// Wrap returns in place of the server's command line.
//
// Stop and Reap cannot rely on signals alone then: the process Start
// runs is the wrapper's client, and the server may outlive it (a
// container engine keeps a container whose client was killed, as the
// parent-death signal kills it after kill -9 of lacuna). So Wrap also
// returns the command that removes the named instance whatever its state;
// Stop runs it once the client has exited, and Reap runs it (from the
// lease, in a later process) for a server whose owner died.
type Wrapper interface {
	// Wrap returns the command line that runs the server as instance
	// name: command is Spec.Command (the server's argv prefix inside the
	// wrapper, possibly empty), args Spec.Args. remove is the command line
	// that ends and removes that instance, succeeding when it does not
	// exist. Wrap must be a pure function of its arguments: Pool compares
	// servers by what it returns.
	Wrap(name string, command, args []string) (run, remove []string, err error)
}

// RemoveTimeout bounds a Wrapper's remove command (Stop, Reap).
const RemoveTimeout = time.Minute

// namePrefix starts the name of every wrapped server instance.
const namePrefix = "lacuna-serve-"

// instanceName is a name no other server instance has: namePrefix and 48
// random bits.
func instanceName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return namePrefix + hex.EncodeToString(b[:])
}

// wrap is the command line Start runs for spec, the wrapped instance's
// name and its remove command (both empty without a Wrapper).
func (s Spec) wrap(name string) (run []string, remove []string, err error) {
	if s.Wrapper == nil {
		run, err = s.Argv()
		return run, nil, err
	}
	args, err := s.Args()
	if err != nil {
		return nil, nil, err
	}
	run, remove, err = s.Wrapper.Wrap(name, s.Command, args)
	if err != nil {
		return nil, nil, fmt.Errorf("serve spec %s: %w", s.ServedName, err)
	}
	if len(run) == 0 || len(remove) == 0 {
		return nil, nil, fmt.Errorf("serve spec %s: the wrapper gave no run or no remove command", s.ServedName)
	}
	return run, remove, nil
}

// runRemove runs a Wrapper's remove command; the error quotes its output.
func runRemove(ctx context.Context, argv []string) error {
	ctx, cancel := context.WithTimeout(ctx, RemoveTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
