package llmenv

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/runners/serve"
)

// serveSpec is the server a model block's serve { } asks lacuna to start:
// its weights, adapters and binary pinned by the digests of their content
// (the model's identity in keys and in the call cache is the weights',
// never a path or a port), the kind's flags derived from what the block
// needs (runners/serve). concurrency is the model's, the server's slots
// when the block does not say.
func serveSpec(r nodes.Resolve, attr string, m nodes.Model, s *nodes.Serve, concurrency int) (serve.Spec, error) {
	bad := func(format string, args ...any) error {
		return nodes.Errorf(attr, "Invalid serve block", "model %s: serve: %s", m.ID, fmt.Sprintf(format, args...))
	}
	spec := serve.Spec{Kind: serve.Kind(s.Kind), ServedName: m.Served(), Extra: s.Extra}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(r.Dir(), p)
	}
	w := abs(s.Weights)
	d, err := nodes.ContentDigest(w)
	if err != nil {
		return spec, bad("weights: %v", err)
	}
	spec.Weights = []serve.Weights{{Path: w, Digest: d}}
	for _, a := range s.Adapters {
		p := abs(a)
		d, err := nodes.ContentDigest(p)
		if err != nil {
			return spec, bad("adapter: %v", err)
		}
		name := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
		spec.Adapters = append(spec.Adapters, serve.Adapter{Name: name, Path: p, Digest: d})
	}
	spec.Command = s.Command
	if len(spec.Command) == 0 {
		switch spec.Kind {
		case serve.LlamaCpp:
			spec.Command = []string{"llama-server"}
		case serve.VLLM:
			spec.Command = []string{"vllm", "serve"}
		}
	}
	bin, err := nodes.LookPath(spec.Command[0], r.Dir(), r.Getenv("PATH"))
	if err != nil {
		return spec, bad("the server %q: %v (set command = [\"/path/to/%s\"] in the serve block)", spec.Command[0], err, spec.Command[0])
	}
	spec.Command = append([]string{bin}, spec.Command[1:]...)
	if spec.Server, err = nodes.ContentDigest(bin); err != nil {
		return spec, bad("the server %s: %v", bin, err)
	}
	spec.Needs.ParallelSlots = concurrency
	if s.Parallel != nil {
		spec.Needs.ParallelSlots = *s.Parallel
	}
	if s.ContextSize != nil {
		spec.Needs.ContextSize = *s.ContextSize
	}
	if s.MaxLogprobs != nil {
		spec.Needs.MaxLogprobs = *s.MaxLogprobs
	}
	if s.LogprobsMode != nil {
		spec.Needs.LogprobsMode = *s.LogprobsMode
	}
	if s.StructuredBackend != nil {
		spec.Needs.StructuredBackend = *s.StructuredBackend
	}
	if err := spec.Validate(); err != nil {
		return spec, bad("%v", err)
	}
	return spec, nil
}
