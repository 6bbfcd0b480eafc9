package goenv

import (
	"os"

	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// newSandbox finds the sandbox; the missing-bubblewrap warning goes to the terminal.
func newSandbox() (*sandbox.Sandbox, error) { return sandbox.New(os.Stderr) }
