package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/runners/serve"
)

// modelServers is the pool of model servers a run starts for models with
// a serve { } block (runners/serve): each is started by the first call
// that needs it, shared by every node, and stopped when the run ends, is
// interrupted or fails. Servers left by a lacuna that was killed (their
// leases under STORE/servers) are stopped first. Their output goes to
// STORE/servers/servers.log.
func modelServers(st *artifacts.Store, w io.Writer) (*serve.Pool, func(), error) {
	dir := filepath.Join(st.Root(), "servers")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	reaped, err := serve.Reap(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, l := range reaped {
		fmt.Fprintf(w, "stopped model server %d (%s) left by a lacuna that ended without stopping it\n", l.PID, l.Endpoint)
	}
	logf, err := os.OpenFile(filepath.Join(dir, "servers.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	pool := serve.NewPool(serve.WithStateDir(dir), serve.WithLog(logf), serve.WithStartTimeout(10*time.Minute))
	return pool, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := pool.Close(ctx); err != nil {
			fmt.Fprintf(w, "stopping model servers: %v\n", err)
		}
		logf.Close()
	}, nil
}
