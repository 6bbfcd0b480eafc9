package llmenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/lacuna-dev/lacuna/artifacts"
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
	d, err := contentDigest(w)
	if err != nil {
		return spec, bad("weights: %v", err)
	}
	spec.Weights = []serve.Weights{{Path: w, Digest: d}}
	for _, a := range s.Adapters {
		p := abs(a)
		d, err := contentDigest(p)
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
	bin, err := lookPath(spec.Command[0], r.Getenv("PATH"), r.Dir())
	if err != nil {
		return spec, bad("the server %q: %v (set command = [\"/path/to/%s\"] in the serve block)", spec.Command[0], err, spec.Command[0])
	}
	spec.Command = append([]string{bin}, spec.Command[1:]...)
	if spec.Server, err = contentDigest(bin); err != nil {
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

// lookPath finds name as the go command's exec.LookPath does, on the PATH
// the run was started with (nodes read the environment only through
// Resolve); a name with a slash is taken relative to dir.
func lookPath(name, path, dir string) (string, error) {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		if st, err := os.Stat(name); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s is not an executable file", name)
		}
		return name, nil
	}
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found on PATH")
}

// digests caches contentDigest by path, size and modification time: a
// plan resolves every node that uses a model, and weights are large.
var digests sync.Map // digestKey → string

type digestKey struct {
	path  string
	size  int64
	mtime int64
}

// contentDigest is "sha256:HEX" of a file's bytes, or of a directory's
// canonical tar (artifacts.PackDir: the same files give the same digest
// wherever they are).
func contentDigest(p string) (string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	k := digestKey{p, st.Size(), st.ModTime().UnixNano()}
	if d, ok := digests.Load(k); ok {
		return d.(string), nil
	}
	h := sha256.New()
	if st.IsDir() {
		err = artifacts.PackDir(h, p)
	} else {
		var f *os.File
		if f, err = os.Open(p); err == nil {
			_, err = io.Copy(h, f)
			f.Close()
		}
	}
	if err != nil {
		return "", err
	}
	d := "sha256:" + hex.EncodeToString(h.Sum(nil))
	digests.Store(k, d)
	return d, nil
}
