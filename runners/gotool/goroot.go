package gotool

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
)

var goroots sync.Map // go binary → string

// GOROOT is where the toolchain's standard library is (`go env GOROOT`):
// the source goapi.Checker type-checks programs against. It is computed
// once per go binary. Safe for concurrent use.
func (t *Toolchain) GOROOT(ctx context.Context) (string, error) {
	if r, ok := goroots.Load(t.Go); ok {
		return r.(string), nil
	}
	cmd := exec.CommandContext(ctx, t.Go, "env", "GOROOT")
	cmd.Env = t.Env()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %w", err)
	}
	root := strings.TrimSpace(string(out))
	if root == "" {
		return "", fmt.Errorf("go env GOROOT: %s reports none", t.Go)
	}
	goroots.Store(t.Go, root)
	return root, nil
}
