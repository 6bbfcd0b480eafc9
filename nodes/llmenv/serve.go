package llmenv

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/runners/parametric"
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
		case serve.Transformers:
			spec.Command = []string{"python3"}
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
	if spec.Kind == serve.Transformers {
		// command names the interpreter; the server is lacuna's script,
		// written out by digest, its packages' versions in the identity.
		if spec.Server, err = transformersServer(r, &spec); err != nil {
			return spec, bad("%v", err)
		}
		if s.Parallel == nil {
			concurrency = 1 // one request at a time
		}
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

// transformersServer sets up kind transformers: the interpreter command
// names runs runners/parametric's server module, written under the
// store's cache and put on PYTHONPATH; the interpreter must have the
// scripts' pinned packages. It returns the server's identity: the
// interpreter's digest, the scripts' and the packages' versions.
func transformersServer(r nodes.Resolve, spec *serve.Spec) (string, error) {
	cache, err := r.CacheDir("parametric-scripts")
	if err != nil {
		return "", err
	}
	dir, err := parametric.Materialize(cache)
	if err != nil {
		return "", err
	}
	have, err := parametric.Check(context.Background(), spec.Command[0])
	if err != nil {
		return "", err
	}
	spec.Command = append(append([]string{}, spec.Command...), "-m", parametric.Package+".serve")
	spec.Env = []string{"PYTHONPATH=" + dir, "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "TOKENIZERS_PARALLELISM=false"}
	return spec.Server + "|" + parametric.Digest() + "|" + strings.Join(have, ","), nil
}
