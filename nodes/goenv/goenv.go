// Package goenv is what the Go node families (discovery, bundle, tasks)
// share: the environment the Go runners work in, the store's Go cache
// (verified module downloads and the toolchain) and the sandboxed
// workspace generated programs run in. Its functions are safe for
// concurrent use.
package goenv

import (
	"os"
	"path/filepath"
	"time"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/runners/gotool"
	"github.com/lacuna-dev/lacuna/runners/modfetch"
	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// fromProcess is the one place in the node packages that reads the
// process environment, for the Go runners, which take it as explicit
// options: GOPROXY, GOSUMDB, GONOSUMDB and GOPRIVATE for fetching; the
// whole environment as the go command's base, GOROOT, LACUNA_GOCACHE (a
// build cache shared between stores) and LACUNA_KEEP_WORK (keep work
// directories) for the toolchain. A later step replaces it with the
// environment the CLI hands to nodes.
func fromProcess() (modfetch.Env, gotool.Options) {
	return modfetch.Env{
			Proxy:   os.Getenv("GOPROXY"),
			SumDB:   os.Getenv("GOSUMDB"),
			NoSumDB: os.Getenv("GONOSUMDB"),
			Private: os.Getenv("GOPRIVATE"),
		}, gotool.Options{
			Environ:  os.Environ(),
			GOROOT:   os.Getenv("GOROOT"),
			GoCache:  os.Getenv("LACUNA_GOCACHE"),
			KeepWork: os.Getenv("LACUNA_KEEP_WORK") != "",
		}
}

// Proxy is the module proxy chain of the environment.
func Proxy() (*modfetch.Proxy, error) {
	env, _ := fromProcess()
	return modfetch.NewProxy(env)
}

// Cache opens the store's cache of Go downloads and builds (the run's
// CacheDir "go"): src/ holds verified module trees, the rest is the
// toolchain's.
func Cache(r nodes.Run) (*modfetch.Fetcher, *gotool.Toolchain, error) {
	dir, err := r.CacheDir("go")
	if err != nil {
		return nil, nil, err
	}
	env, opts := fromProcess()
	fetcher, err := modfetch.NewFetcher(filepath.Join(dir, "src"), env)
	if err != nil {
		return nil, nil, err
	}
	tc, err := gotool.NewToolchain(dir, opts)
	if err != nil {
		return nil, nil, err
	}
	return fetcher, tc, nil
}

// Workspace prepares a sandboxed workspace of tc whose test binaries may
// each run for wall: the one set-up of sandbox and work directory that
// bundle validation and harness runs share. Close it when done.
func Workspace(tc *gotool.Toolchain, prefix string, wall time.Duration) (*gotool.Workspace, error) {
	sb, err := sandbox.New(os.Stderr) // the missing-bubblewrap warning goes to the terminal
	if err != nil {
		return nil, err
	}
	return tc.NewWorkspace(sb, prefix, sandbox.Limits{Wall: wall})
}
