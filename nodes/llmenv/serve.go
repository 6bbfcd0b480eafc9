package llmenv

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/jobenv"
	"github.com/lacuna-dev/lacuna/runners/container"
	"github.com/lacuna-dev/lacuna/runners/parametric"
	"github.com/lacuna-dev/lacuna/runners/serve"
)

// serveSpec is the server a model block's serve { } asks lacuna to start:
// its weights, adapters and binary pinned by the digests of their content
// (the model's identity in keys and in the call cache is the weights',
// never a path or a port), the kind's flags derived from what the block
// needs (runners/serve). concurrency is the model's, the server's slots
// when the block does not say.
//
// On a container runner the server runs in the runner's image
// (containerServer); the identity entries returned then name the image's
// digest, so that a plan says when its tag moved.
func serveSpec(ctx context.Context, r nodes.Resolve, attr string, m nodes.Model, s *nodes.Serve, concurrency int) (serve.Spec, map[string]string, error) {
	bad := func(format string, args ...any) error {
		return nodes.Errorf(attr, "Invalid serve block", "model %s: serve: %s", m.ID, fmt.Sprintf(format, args...))
	}
	spec := serve.Spec{Kind: serve.Kind(s.Kind), ServedName: m.Served(), Extra: s.Extra}
	rn, err := s.ServeRunner()
	if err != nil {
		return spec, nil, bad("%v", err)
	}
	switch rn.Kind {
	case "", "local", "container":
	default:
		return spec, nil, bad("runner %s is of kind %s: a model server lacuna starts runs on this machine (a local runner) or in a container runner's image", rn.Name, rn.Kind)
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(r.Dir(), p)
	}
	w := abs(s.Weights)
	d, err := nodes.ContentDigest(w)
	if err != nil {
		return spec, nil, bad("weights: %v", err)
	}
	spec.Weights = []serve.Weights{{Path: w, Digest: d}}
	for _, a := range s.Adapters {
		p := abs(a)
		d, err := nodes.ContentDigest(p)
		if err != nil {
			return spec, nil, bad("adapter: %v", err)
		}
		name := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
		spec.Adapters = append(spec.Adapters, serve.Adapter{Name: name, Path: p, Digest: d})
	}
	spec.Command = s.Command
	var ids map[string]string
	if rn.Kind == "container" {
		if ids, err = containerServer(ctx, rn, &spec); err != nil {
			return spec, nil, bad("%v", err)
		}
	} else if err := localServer(r, &spec); err != nil {
		return spec, nil, bad("%v", err)
	}
	if spec.Kind == serve.Transformers && s.Parallel == nil {
		concurrency = 1 // one request at a time
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
		return spec, nil, bad("%v", err)
	}
	if spec.Wrapper != nil {
		// What the container engine will be asked (mount paths, names)
		// is checked now, not when the first call starts the server.
		args, err := spec.Args()
		if err == nil {
			_, _, err = spec.Wrapper.Wrap("lacuna-serve-check", spec.Command, args)
		}
		if err != nil {
			return spec, nil, bad("%v", err)
		}
	}
	return spec, ids, nil
}

// localServer pins a server that runs on this machine: its command's
// binary, looked up on the run's PATH, by content (kind transformers: the
// interpreter, lacuna's server script and its packages).
func localServer(r nodes.Resolve, spec *serve.Spec) error {
	if len(spec.Command) == 0 {
		switch spec.Kind {
		case serve.LlamaCpp:
			spec.Command = []string{"llama-server"}
		case serve.VLLM:
			spec.Command = []string{"vllm", "serve"}
		case serve.Transformers:
			spec.Command = []string{"python3"}
		default:
			return fmt.Errorf("unknown kind %q", spec.Kind)
		}
	}
	bin, err := nodes.LookPath(spec.Command[0], r.Dir(), r.Getenv("PATH"))
	if err != nil {
		return fmt.Errorf("the server %q: %v (set command = [\"/path/to/%s\"] in the serve block)", spec.Command[0], err, spec.Command[0])
	}
	spec.Command = append([]string{bin}, spec.Command[1:]...)
	if spec.Server, err = nodes.ContentDigest(bin); err != nil {
		return fmt.Errorf("the server %s: %v", bin, err)
	}
	if spec.Kind == serve.Transformers {
		// command names the interpreter; the server is lacuna's script,
		// written out by digest, its packages' versions in the identity.
		if spec.Server, err = transformersServer(r, spec); err != nil {
			return err
		}
	}
	return nil
}

// Where a server in a container finds its weights and adapters: each is
// mounted read-only under these directories by its base name.
const (
	ContainerWeights  = "/lacuna/weights"
	ContainerAdapters = "/lacuna/adapters"
)

// containerServer makes spec a server run in container runner rn's image:
// the image pinned by digest now (its tag's, or for an image only the
// engine holds, its image ID), which is the server's identity instead of
// a binary's (with the runner's env, as a digest: it may change answers);
// the weights and adapters mounted read-only at fixed paths, the paths
// the server is given; the runner's env only, its cpus, memory and gpus;
// the host's network, the server listening on 127.0.0.1. The command, if
// any, is the server's argv prefix inside the image (none: its
// entrypoint). It returns the identity entries that name the image.
func containerServer(ctx context.Context, rn nodes.Runner, spec *serve.Spec) (map[string]string, error) {
	if spec.Kind == serve.Transformers {
		return nil, fmt.Errorf("kind transformers does not run in a container yet (its server script and packages are set up on this machine): use a local runner")
	}
	if rn.Image == "" {
		return nil, fmt.Errorf("runner %s: a container runner needs an image", rn.Name)
	}
	for k := range rn.Env {
		if !jobenv.ValidEnvName(k) {
			return nil, fmt.Errorf("runner %s: env: %q cannot be set", rn.Name, k)
		}
	}
	memory, err := rn.MemoryBytes()
	if err != nil {
		return nil, err
	}
	eng, err := container.NewEngine(rn.Engine, container.WithArgs(rn.Args...))
	if err != nil {
		return nil, fmt.Errorf("runner %s: %w", rn.Name, err)
	}
	pin, err := pinImage(ctx, eng, rn)
	if err != nil {
		return nil, fmt.Errorf("runner %s: %w", rn.Name, err)
	}
	cs := container.Spec{Image: pin, Env: rn.Env, CPUs: rn.CPUs, Memory: memory}
	for i := 0; i < rn.GPUs; i++ {
		cs.GPUs.Devices = append(cs.GPUs.Devices, strconv.Itoa(i))
	}
	w := &spec.Weights[0]
	target := path.Join(ContainerWeights, filepath.Base(w.Path))
	cs.Inputs = append(cs.Inputs, container.Mount{Source: w.Path, Target: target})
	w.Path = target
	for i := range spec.Adapters {
		a := &spec.Adapters[i]
		target := path.Join(ContainerAdapters, filepath.Base(a.Path))
		cs.Inputs = append(cs.Inputs, container.Mount{Source: a.Path, Target: target})
		a.Path = target
	}
	spec.Wrapper = container.Server{Engine: eng, Spec: cs}
	spec.Server = "image " + pin.Digest
	if len(rn.Env) > 0 {
		spec.Server += " env " + jobenv.EnvDigest(rn.Env)
	}
	return map[string]string{"image": pin.Digest}, nil
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

// pinned memoises each runner image's pin for the process, error
// included: every node of a sweep that calls the model resolves it, and
// one plan must see one digest (and ask the registry once).
var pinned sync.Map // pinKey → func() (container.Pinned, error)

type pinKey struct{ engine, args, image string }

func pinImage(ctx context.Context, eng *container.Engine, rn nodes.Runner) (container.Pinned, error) {
	k := pinKey{eng.Path(), strings.Join(rn.Args, "\x00"), rn.Image}
	f, _ := pinned.LoadOrStore(k, sync.OnceValues(func() (container.Pinned, error) {
		return container.Resolve(context.WithoutCancel(ctx), rn.Image, container.WithLocal(eng), container.InsecureLoopback())
	}))
	return f.(func() (container.Pinned, error))()
}
