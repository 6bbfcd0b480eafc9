package llmenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/runners/serve"
)

// What a train or edit node wrote (Trained.Kind).
const (
	// TrainedAdapter is a PEFT LoRA adapter directory, served beside its
	// base weights.
	TrainedAdapter = "adapter"
	// TrainedModel is a full Hugging Face model directory (full
	// fine-tuning, a merged adapter, a MEMIT or AlphaEdit edit).
	TrainedModel = "model"
	// TrainedCodebook is a GRACE codebook directory, attached to its base
	// by the transformers server.
	TrainedCodebook = "codebook"
)

// TrainedColumns are the columns of a train or edit node's output that
// WithTrained reads: kind (TrainedAdapter, TrainedModel or
// TrainedCodebook), weights_blob (the directory, a blob), base_digest
// (the content digest of the model it was trained from, or that model's
// weights blob) and base_blob (that blob, "" when the base was a
// directory named in the pipeline).
var TrainedColumns = []string{"kind", "weights_blob", "base_digest", "base_blob"}

// Trained is one row of a train or edit node's output.
type Trained struct {
	Node       string
	Kind       string
	Blob       string
	BaseDigest string
	BaseBlob   string
}

// ReadTrained reads the one row of a train or edit node's output.
func ReadTrained(r nodes.Run, ref nodes.Ref) (Trained, error) {
	in, err := r.Input(ref)
	if err != nil {
		return Trained{}, err
	}
	rows, err := in.Columns(TrainedColumns...)
	if err != nil {
		return Trained{}, fmt.Errorf("%s is not a train or edit node's output: %w", ref.Node, err)
	}
	if len(rows) != 1 {
		return Trained{}, fmt.Errorf("%s has %d rows; a train or edit node writes one", ref.Node, len(rows))
	}
	v := rows[0]
	t := Trained{Node: ref.Node, Kind: artifacts.Text(v[0]), Blob: artifacts.Text(v[1]), BaseDigest: artifacts.Text(v[2]), BaseBlob: artifacts.Text(v[3])}
	switch t.Kind {
	case TrainedAdapter, TrainedModel, TrainedCodebook:
	default:
		return Trained{}, fmt.Errorf("%s: unknown kind %q of trained weights", ref.Node, t.Kind)
	}
	if t.Blob == "" {
		return Trained{}, fmt.Errorf("%s: no weights blob", ref.Node)
	}
	return t, nil
}

// Unpack unpacks directory blob d (verified, once) under the store's
// cache and returns the directory; concurrent callers share it.
func Unpack(r nodes.Run, d string) (string, error) {
	cache, err := r.CacheDir("weights")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, strings.TrimPrefix(d, "sha256:"))
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if err := nodes.ExtractBlob(r, artifacts.Digest(d), dir); err != nil {
		if _, serr := os.Stat(dir); serr == nil {
			return dir, nil // another node unpacked it first
		}
		return "", err
	}
	return dir, nil
}

// WithTrained returns m served with the trained weights that node ref
// wrote (nil ref: m itself): an adapter beside the base weights (requests
// name it), a full model instead of the base weights, or a GRACE codebook
// attached to them (the transformers server only). The model must have a
// serve { } block: lacuna starts the server that loads the weights. The
// weights blob enters the model's identity, so the call cache never
// mixes two trainings' answers. An adapter or codebook must have been
// trained from the weights the block serves (or from another node's
// model, which is then served as the base).
func (m *Model) WithTrained(r nodes.Run, attr string, ref *nodes.Ref) (*Model, error) {
	if ref == nil {
		return m, nil
	}
	if m.serve == nil {
		return nil, nodes.Errorf(attr, "Trained weights need a server lacuna starts", "model %s is reached at its endpoint; to serve %s's weights, give the model a serve { } block (kind = \"transformers\" or \"vllm\") with the base weights.", m.Config.ID, ref.Node)
	}
	t, err := ReadTrained(r, *ref)
	if err != nil {
		return nil, err
	}
	dir, err := Unpack(r, t.Blob)
	if err != nil {
		return nil, err
	}
	spec := *m.serve
	spec.Adapters = append([]serve.Adapter(nil), spec.Adapters...)
	spec.Weights = append([]serve.Weights(nil), spec.Weights...)
	out := *m
	out.Identity = m.Identity + "|trained:" + t.Blob
	out.Notes = append(append([]string(nil), m.Notes...), fmt.Sprintf("serving %s's %s (%s)", ref.Node, t.Kind, Short(t.Blob)))
	if t.Kind != TrainedModel {
		if t.BaseBlob != "" {
			base, err := Unpack(r, t.BaseBlob)
			if err != nil {
				return nil, err
			}
			spec.Weights = []serve.Weights{{Path: base, Digest: t.BaseBlob}}
		} else if len(spec.Weights) == 0 || spec.Weights[0].Digest != t.BaseDigest {
			have := "none"
			if len(spec.Weights) > 0 {
				have = Short(spec.Weights[0].Digest) + " (" + spec.Weights[0].Path + ")"
			}
			return nil, nodes.Errorf(attr, "Trained on other weights", "%s's %s was trained from weights %s, but model %s serves %s: serve the weights it was trained from.", ref.Node, t.Kind, Short(t.BaseDigest), m.Config.ID, have)
		}
	}
	switch t.Kind {
	case TrainedModel:
		spec.Weights = []serve.Weights{{Path: dir, Digest: t.Blob}}
	case TrainedAdapter:
		name := "trained-" + Short(t.Blob)[len("sha256:"):]
		spec.Adapters = append(spec.Adapters, serve.Adapter{Name: name, Path: dir, Digest: t.Blob})
		out.Endpoint.ServedName = name
	case TrainedCodebook:
		spec.Codebook = &serve.Weights{Path: dir, Digest: t.Blob}
	}
	if err := spec.Validate(); err != nil {
		return nil, nodes.Errorf(attr, "Cannot serve the trained weights", "model %s with %s's %s: %v", m.Config.ID, ref.Node, t.Kind, err)
	}
	out.serve = &spec
	return &out, nil
}

// Short is a digest cut to 12 hex digits, for messages.
func Short(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}
