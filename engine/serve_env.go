package engine

import "github.com/lacuna-dev/lacuna/nodes"

// ModelServers gives nodes the run's model servers (Executor.Servers).
func (r *runEnv) ModelServers() nodes.ModelServers { return r.w.x.Servers }
