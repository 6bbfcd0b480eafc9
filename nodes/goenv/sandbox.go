package goenv

import (
	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// newSandbox finds the sandbox and its identity: the isolation, the
// bubblewrap version and the default limits (a node's own wall clock is in
// its config or its logic version).
func newSandbox() (*sandbox.Sandbox, map[string]string, error) {
	sb, err := sandbox.New()
	if err != nil {
		return nil, nil, err
	}
	return sb, sb.Identity(sandbox.Limits{}), nil
}
