package gotool

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
)

// buildSettings are the go command's settings that can change what a build
// computes or how its programs behave: the version, the target, the
// architecture levels, experiments, flags, cgo and GODEBUG.
var buildSettings = []string{
	"GOVERSION", "GOOS", "GOARCH", "GOAMD64", "GOARM", "GOARM64", "GO386", "GOPPC64",
	"GORISCV64", "GOMIPS", "GOMIPS64", "GOWASM", "GOEXPERIMENT", "GOFLAGS", "CGO_ENABLED", "GODEBUG",
}

// identities memoises Identity per go binary and environment: `go env`
// costs a process, and every plan resolves every Go node.
var identities sync.Map // string → identityResult

type identityResult struct {
	id  map[string]string
	err error
}

// Identity is what the go command builds with, as action-key entries:
// "toolchain" is its version (go1.26.8) and "go.NAME" each non-empty build
// setting of `go env` under Env (GOFLAGS, GOEXPERIMENT, CGO_ENABLED,
// GOARCH, GOAMD64, ...). A node that builds or runs Go code puts it in its
// identity, so a toolchain upgrade or a changed GOFLAGS recomputes its
// verdicts. The result is computed once per go binary and environment and
// shared; callers must not modify it. Safe for concurrent use.
func (t *Toolchain) Identity(ctx context.Context) (map[string]string, error) {
	memo := t.Go + "\x00" + strings.Join(t.Env(), "\x00")
	if r, ok := identities.Load(memo); ok {
		return r.(identityResult).id, r.(identityResult).err
	}
	id, err := t.goEnv(ctx)
	if ctx.Err() == nil { // a cancelled call says nothing about the toolchain
		identities.Store(memo, identityResult{id, err})
	}
	return id, err
}

func (t *Toolchain) goEnv(ctx context.Context) (map[string]string, error) {
	cmd := exec.CommandContext(ctx, t.Go, append([]string{"env", "-json"}, buildSettings...)...)
	cmd.Env = t.Env()
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("go env: %w", err)
	}
	var env map[string]string
	if err := json.Unmarshal(out, &env); err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	if env["GOVERSION"] == "" {
		return nil, fmt.Errorf("go env: %s reports no GOVERSION", t.Go)
	}
	id := map[string]string{"toolchain": env["GOVERSION"]}
	for _, k := range buildSettings[1:] {
		if v := env[k]; v != "" {
			id["go."+k] = v
		}
	}
	return id, nil
}
