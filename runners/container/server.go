package container

import (
	"errors"
	"slices"
)

// Server runs a long-lived server program (a model server) in a container
// of its engine, for a caller that starts, supervises and stops the
// process itself: runners/serve, whose Wrapper it is. Where Run runs a
// job to completion with one writable output directory, a server's
// container has none: it reads its Inputs (read-only) and answers on the
// network.
//
// Spec says how the container runs: its image (pinned), read-only
// inputs, environment, limits, GPUs and network ("" is "host": the
// server shares this machine's network and binds the address it is told,
// e.g. 127.0.0.1 only, with no port to publish). Its Name, Entrypoint and
// Args are set by Wrap, and Output, Work and Log must be left empty. A
// Server is a value, safe for concurrent use.
type Server struct {
	Engine *Engine
	Spec   Spec
}

// Network is the network mode a server's container gets when its Spec
// names none: the host's, so that a server told to listen on 127.0.0.1
// is reachable from this machine only, as it would be outside a
// container.
const Network = "host"

// Wrap returns the command line that runs a server in a container named
// name (the engine's client, its global arguments, `run --rm --name NAME
// …`, the image by digest, then command and args), and the one that kills
// and removes that container whatever its state, succeeding when it is
// already gone. command is the server's argv prefix inside the image:
// its first element replaces the image's entrypoint, the rest precede
// args; an empty command runs the image's own entrypoint with args. Wrap
// is a pure function of the server, name, command and args.
//
// The run command is the container's client in the foreground: it
// forwards the signals it gets to the container (podman's and docker's
// --sig-proxy, on by default) and exits with the server's status. Killed
// itself, it leaves the container running under the engine (podman's
// conmon, docker's daemon): the remove command is what ends it then.
func (s Server) Wrap(name string, command, args []string) (run, remove []string, err error) {
	if s.Engine == nil {
		return nil, nil, errors.New("container: server has no engine")
	}
	spec := s.Spec
	if spec.Log != nil {
		return nil, nil, errors.New("container: a server's log is its client's output, not Spec.Log")
	}
	spec.Name = name
	if spec.Network == "" {
		spec.Network = Network
	}
	spec.Entrypoint, spec.Args = "", slices.Clone(args)
	if len(command) > 0 {
		if command[0] == "" {
			return nil, nil, errors.New("container: server command with an empty executable")
		}
		spec.Entrypoint = command[0]
		spec.Args = append(slices.Clone(command[1:]), args...)
	}
	a, err := s.Engine.runArgs(spec, false)
	if err != nil {
		return nil, nil, err
	}
	run = append([]string{s.Engine.path}, a...)
	remove = append(append([]string{s.Engine.path}, s.Engine.args...), removeArgs(s.Engine.kind, name)...)
	return run, remove, nil
}
