package nodes

import (
	"context"

	"github.com/lacuna-dev/lacuna/runners/serve"
)

// ModelServers starts the model servers a run's nodes need (a model
// block's serve { }): one per distinct server, shared by every node of
// the run that asks for it, stopped when the run ends (the CLI's
// serve.Pool). Safe for concurrent use.
type ModelServers interface {
	Acquire(ctx context.Context, spec serve.Spec) (*serve.Server, error)
}

// ServersRun is implemented by a Run that can start model servers (the
// engine's, when the CLI gave it a pool).
type ServersRun interface {
	ModelServers() ModelServers
}

// ServersOf returns the run's model servers, nil when it has none.
func ServersOf(r any) ModelServers {
	if sr, ok := r.(ServersRun); ok {
		return sr.ModelServers()
	}
	return nil
}
