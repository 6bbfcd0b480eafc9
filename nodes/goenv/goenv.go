// Package goenv is what the Go node families (discovery, bundle, tasks)
// share: the environment the Go runners work in, the store's Go cache
// (verified module downloads and the toolchain) and the sandboxed
// workspace generated programs run in, resolved once per execution and
// pinned (nodes.Resolver): the action key carries the toolchain and the
// sandbox, and Run uses exactly those. Its functions are safe for
// concurrent use.
package goenv

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/runners/gotool"
	"github.com/lacuna-dev/lacuna/runners/modfetch"
	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// Env is the module-fetching environment of a run: GOPROXY, GOSUMDB,
// GONOSUMDB and GOPRIVATE, read from what the CLI handed the run.
func Env(r nodes.Resolve) modfetch.Env {
	return modfetch.Env{
		Proxy:   r.Getenv("GOPROXY"),
		SumDB:   r.Getenv("GOSUMDB"),
		NoSumDB: r.Getenv("GONOSUMDB"),
		Private: r.Getenv("GOPRIVATE"),
	}
}

// Needs says what of the Go environment a node type uses.
type Needs int

const (
	// Fetch: verified module downloads only (their content is fixed by
	// the checksum database, so it adds nothing to the identity).
	Fetch Needs = 0
	// Build: the go command; the toolchain's version and build settings
	// enter the identity.
	Build Needs = 1 << iota
	// Sandbox: generated programs run; the sandbox's isolation enters
	// the identity.
	Sandbox
)

// Go is what a Go node runs on, fixed by Resolve and handed to Run.
type Go struct {
	Fetcher   *modfetch.Fetcher
	Toolchain *gotool.Toolchain // nil unless the type needs Build
	Sandbox   *sandbox.Sandbox  // nil unless the type needs Sandbox
}

// Resolve prepares the store's Go cache for r's node (the run's CacheDir
// "go": src/ holds verified module trees, the rest is the toolchain's) and
// pins what the node needs: its identity holds the toolchain ("toolchain":
// go1.26.8, "go.GOFLAGS", ...) and the sandbox ("sandbox": bubblewrap or
// rlimits, "sandbox.bubblewrap": its version, "sandbox.uid" and the
// default limits) as needs says. Call it from a type's Resolve; Run gets the
// result back with From.
func Resolve(ctx context.Context, r nodes.Resolve, needs Needs) (*nodes.Pinned, error) {
	dir, err := r.CacheDir("go")
	if err != nil {
		return nil, err
	}
	g := &Go{}
	if g.Fetcher, err = modfetch.NewFetcher(filepath.Join(dir, "src"), Env(r)); err != nil {
		return nil, err
	}
	id := map[string]string{}
	if needs&(Build|Sandbox) != 0 {
		g.Toolchain, err = gotool.NewToolchain(dir, gotool.Options{
			Environ:  r.Environ(),
			GOROOT:   r.Getenv("GOROOT"),
			GoCache:  r.Getenv("LACUNA_GOCACHE"),
			KeepWork: r.Getenv("LACUNA_KEEP_WORK") != "",
		})
		if err != nil {
			return nil, err
		}
		tid, err := g.Toolchain.Identity(ctx)
		if err != nil {
			return nil, err
		}
		for k, v := range tid {
			id[k] = v
		}
	}
	if needs&Sandbox != 0 {
		var sid map[string]string
		if g.Sandbox, sid, err = newSandbox(); err != nil {
			return nil, err
		}
		for k, v := range sid {
			if k != "sandbox" {
				k = "sandbox." + k
			}
			id[k] = v
		}
	}
	return &nodes.Pinned{Identity: id, Value: g}, nil
}

// From is the Go environment Resolve pinned for r's execution.
func From(r nodes.Run) (*Go, error) {
	g, ok := r.Pinned().(*Go)
	if !ok || g == nil {
		return nil, fmt.Errorf("%s: no Go environment was resolved for this node (its type must call goenv.Resolve)", r.Node())
	}
	if g.Sandbox != nil {
		if w := g.Sandbox.Warning(); w != "" {
			r.Logf("%s", w)
		}
	}
	return g, nil
}

// Workspace prepares a sandboxed workspace of g's toolchain whose test
// binaries may each run for wall: the one set-up of sandbox and work
// directory that bundle validation and harness runs share. Close it when
// done.
func (g *Go) Workspace(prefix string, wall time.Duration) (*gotool.Workspace, error) {
	if g.Toolchain == nil || g.Sandbox == nil {
		return nil, fmt.Errorf("goenv: a workspace needs Build and Sandbox resolved")
	}
	return g.Toolchain.NewWorkspace(g.Sandbox, prefix, sandbox.Limits{Wall: wall})
}
