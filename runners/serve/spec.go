package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Kind names a model server program. Its flags are derived from a Spec by
// Spec.Args; a kind's binary (or the container that holds it) comes from
// the caller as Spec.Command.
type Kind string

const (
	// LlamaCpp is llama.cpp's own OpenAI-compatible server, llama-server,
	// serving one GGUF file (CPU or GPU).
	LlamaCpp Kind = "llamacpp"
	// VLLM is vLLM's OpenAI-compatible server, `vllm serve MODEL`.
	VLLM Kind = "vllm"
	// Transformers is lacuna's own small server of a Hugging Face model
	// directory on transformers (runners/parametric's
	// lacuna_parametric.serve): CPU or one GPU, one request at a time,
	// vLLM's request extensions that lacuna uses (allowed_token_ids,
	// processed log-probabilities, continue_final_message), LoRA adapters
	// selected by name and GRACE codebooks. Command is
	// {"python3", "-m", "lacuna_parametric.serve"} with the package on
	// PYTHONPATH.
	Transformers Kind = "transformers"
)

var kinds = "llamacpp | vllm | transformers"

// Weights is a model file or directory the server loads, with the digest
// of its content. Only the digest enters Identity: the same weights at
// another path (another machine, a container mount) are the same model.
type Weights struct {
	// Path as the server process sees it: a host path, or a path inside the
	// container when Command wraps the server in one. For LlamaCpp, a GGUF
	// file (the first part of a split GGUF); for VLLM, a model directory
	// (or a hub id, when the server may fetch it).
	Path string
	// Digest of the content, e.g. "sha256:…"; required.
	Digest string
}

// Adapter is a LoRA adapter the server loads beside the base weights.
type Adapter struct {
	// Name is the model id a request names to use the adapter (vLLM's
	// --lora-modules name=path). llama-server has no such selection: it
	// applies its adapter to every request, whatever the model field says.
	Name string
	// Path as the server sees it: a GGUF LoRA file for LlamaCpp, a PEFT
	// adapter directory for VLLM.
	Path string
	// Digest of the adapter's content; required.
	Digest string
	// Rank is the adapter's LoRA rank r (0: unknown); VLLM's --max-lora-rank
	// is derived from the largest.
	Rank int
}

// Needs is what lacuna asks of a server. Spec.Args derives the kind's flags
// from it, so a pipeline states what it needs and never spells flags.
type Needs struct {
	// MaxLogprobs is the most top log-probabilities a request asks for per
	// token (vLLM's --max-logprobs; vLLM refuses requests above it).
	// llama-server has no cap to raise. 0: the server's default (vLLM: 20).
	MaxLogprobs int
	// LogprobsMode is what vLLM's log-probabilities are computed from:
	// "raw_logprobs" (its default), "processed_logprobs", "raw_logits" or
	// "processed_logits". It changes the numbers returned, so it enters
	// Identity. llama-server has no such mode: any value but "" is an error.
	LogprobsMode string
	// StructuredBackend picks vLLM's structured-output (guided decoding)
	// backend: "auto", "xgrammar", "guidance", "outlines" or
	// "lm-format-enforcer". Constrained answers depend on it, so it enters
	// Identity. "": the server's default (vLLM: auto). llama-server turns a
	// json_schema into its own GBNF grammar and has no backend to choose:
	// any value but "" is an error.
	StructuredBackend string
	// ContextSize is the context length in tokens (llama-server -c, vLLM
	// --max-model-len); it decides which prompts fit, so it enters Identity.
	// 0: the server's default (both: the model's trained length).
	ContextSize int
	// ParallelSlots is how many sequences the server decodes at once
	// (llama-server -np, vLLM --max-num-seqs); a client's concurrency should
	// follow it. llama-server is started with a unified KV cache
	// (--kv-unified), so every slot may use the whole context and the slot
	// count does not change answers: it is not part of Identity. 0: the
	// server's default.
	ParallelSlots int
}

// Spec describes one model server. The zero value is not startable: Kind,
// Command, one Weights with a digest and ServedName are required
// (Validate). A Spec is a value: Start, Args and Identity never modify it.
type Spec struct {
	Kind Kind
	// Env are "KEY=value" variables added to the server's environment
	// (PYTHONPATH for Transformers); like Command, never in Identity.
	Env []string
	// Command is the argv prefix that runs the server; Args are appended.
	// LlamaCpp: the llama-server binary, e.g. {"/opt/llama-server"}. VLLM:
	// {"vllm", "serve"} (the model is the first argument appended). With
	// a Wrapper it is the prefix inside the wrapper (a path in the
	// container's image), and may be empty: the image's entrypoint. The
	// command never enters Identity (paths differ between machines);
	// Server names what it runs.
	Command []string
	// Wrapper, when set, runs the server elsewhere than as this process's
	// child: in a container (runners/container's Server). Then paths in
	// Weights, Adapters and Codebook are paths inside the container, and
	// Server should name the image by digest. nil: Command runs here.
	Wrapper Wrapper
	// Server identifies the server software for Identity: a container image
	// digest, or a binary's version or digest. Answers change with the
	// server's version (sampling, chat templates), so pin it.
	Server string
	// Weights are the base model; exactly one.
	Weights []Weights
	// Adapters are LoRA adapters served beside the base model. LlamaCpp
	// takes at most one, applied to every request.
	Adapters []Adapter
	// Codebook is a GRACE codebook directory attached to the base model
	// (Transformers only); its digest enters Identity.
	Codebook *Weights
	// ServedName is the model id the server lists in /v1/models and that
	// requests name (llama-server --alias, vLLM --served-model-name).
	ServedName string
	// Host is the address the server listens on; "" means 127.0.0.1.
	Host string
	// Port the server listens on; 0: Start picks a free loopback port.
	Port  int
	Needs Needs
	// Extra flags are appended after the derived ones, verbatim. They enter
	// Identity, since lacuna cannot tell which of them change answers.
	Extra []string
	// LegacyVLLM selects vLLM's flags before 0.10.2, when the structured
	// output backend was --guided-decoding-backend (now
	// --structured-outputs-config.backend).
	LegacyVLLM bool
}

// Valid values of Needs.LogprobsMode (vLLM --logprobs-mode).
var logprobsModes = []string{"raw_logprobs", "processed_logprobs", "raw_logits", "processed_logits"}

// Valid values of Needs.StructuredBackend for vLLM.
var structuredBackends = []string{"auto", "xgrammar", "guidance", "outlines", "lm-format-enforcer"}

// vLLM accepts only these values of --max-lora-rank.
var vllmLoRARanks = []int{1, 8, 16, 32, 64, 128, 256, 320, 512}

// Validate reports the first reason the spec cannot be served as stated:
// a missing field, a need the kind cannot honour, an adapter without a
// digest. Start calls it.
func (s Spec) Validate() error {
	var errs []error
	switch s.Kind {
	case LlamaCpp, VLLM, Transformers:
	case "":
		errs = append(errs, fmt.Errorf("no kind (%s)", kinds))
	default:
		errs = append(errs, fmt.Errorf("unknown kind %q (%s)", s.Kind, kinds))
	}
	if s.Codebook != nil && s.Kind != Transformers {
		errs = append(errs, fmt.Errorf("a GRACE codebook is served by kind transformers only (asked %s)", s.Kind))
	}
	if s.Codebook != nil && (s.Codebook.Path == "" || s.Codebook.Digest == "") {
		errs = append(errs, errors.New("codebook: no path or no digest"))
	}
	switch {
	case len(s.Command) == 0 && s.Wrapper == nil:
		errs = append(errs, errors.New("no command to run the server"))
	case len(s.Command) > 0 && s.Command[0] == "":
		errs = append(errs, errors.New("the server's command has an empty executable"))
	}
	if len(s.Weights) != 1 {
		errs = append(errs, fmt.Errorf("%d weights; a server loads exactly one base model", len(s.Weights)))
	}
	for i, w := range s.Weights {
		if w.Path == "" {
			errs = append(errs, fmt.Errorf("weights %d: no path", i))
		}
		if w.Digest == "" {
			errs = append(errs, fmt.Errorf("weights %s: no digest", w.Path))
		}
	}
	if s.ServedName == "" {
		errs = append(errs, errors.New("no served name"))
	}
	if s.Port < 0 || s.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d out of range", s.Port))
	}
	names := map[string]bool{s.ServedName: true}
	for i, a := range s.Adapters {
		switch {
		case a.Name == "":
			errs = append(errs, fmt.Errorf("adapter %d: no name", i))
		case names[a.Name]:
			errs = append(errs, fmt.Errorf("adapter %q: name used twice (or the served name)", a.Name))
		}
		names[a.Name] = true
		if a.Path == "" {
			errs = append(errs, fmt.Errorf("adapter %q: no path", a.Name))
		}
		if a.Digest == "" {
			errs = append(errs, fmt.Errorf("adapter %q: no digest", a.Name))
		}
		if a.Rank < 0 {
			errs = append(errs, fmt.Errorf("adapter %q: rank %d", a.Name, a.Rank))
		}
	}
	n := s.Needs
	if n.MaxLogprobs < 0 || n.ContextSize < 0 || n.ParallelSlots < 0 {
		errs = append(errs, errors.New("negative max logprobs, context size or parallel slots"))
	}
	switch s.Kind {
	case LlamaCpp:
		if n.LogprobsMode != "" {
			errs = append(errs, fmt.Errorf("llamacpp has no logprobs mode (asked %q): it reports the model's probabilities before sampling", n.LogprobsMode))
		}
		if n.StructuredBackend != "" {
			errs = append(errs, fmt.Errorf("llamacpp has no structured-output backend to choose (asked %q): it compiles schemas to its own grammar", n.StructuredBackend))
		}
		if len(s.Adapters) > 1 {
			errs = append(errs, fmt.Errorf("llamacpp serves at most one adapter (asked %d): it applies every loaded adapter to every request", len(s.Adapters)))
		}
	case VLLM:
		if n.LogprobsMode != "" && !slices.Contains(logprobsModes, n.LogprobsMode) {
			errs = append(errs, fmt.Errorf("logprobs mode %q: want one of %s", n.LogprobsMode, strings.Join(logprobsModes, ", ")))
		}
		if n.StructuredBackend != "" && !slices.Contains(structuredBackends, n.StructuredBackend) {
			errs = append(errs, fmt.Errorf("structured backend %q: want one of %s", n.StructuredBackend, strings.Join(structuredBackends, ", ")))
		}
		if r := maxRank(s.Adapters); r > vllmLoRARanks[len(vllmLoRARanks)-1] {
			errs = append(errs, fmt.Errorf("LoRA rank %d above vLLM's largest, %d", r, vllmLoRARanks[len(vllmLoRARanks)-1]))
		}
	case Transformers:
		if n.LogprobsMode != "" && n.LogprobsMode != "processed_logprobs" {
			errs = append(errs, fmt.Errorf("transformers reports processed log-probabilities only (asked %q)", n.LogprobsMode))
		}
		if n.StructuredBackend != "" {
			errs = append(errs, fmt.Errorf("transformers has no structured-output backend (asked %q): use structured_output = \"none\"", n.StructuredBackend))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("serve spec %s: %w", s.ServedName, errors.Join(errs...))
	}
	return nil
}

func (s Spec) host() string {
	if s.Host == "" {
		return "127.0.0.1"
	}
	return s.Host
}

func maxRank(as []Adapter) int {
	r := 0
	for _, a := range as {
		r = max(r, a.Rank)
	}
	return r
}

// flag is one derived server argument: the flag and its values, and
// whether it can change what the server answers (then it enters Identity).
type flag struct {
	args    []string
	answers bool
}

// flags derives the kind's flags from the spec, in a fixed order. The
// model path (vLLM's positional argument, llama-server's -m) is not among
// them: it is a path, and the weights enter Identity by digest.
func (s Spec) flags() []flag {
	n := s.Needs
	itoa := strconv.Itoa
	var fs []flag
	add := func(answers bool, args ...string) { fs = append(fs, flag{args, answers}) }
	switch s.Kind {
	case LlamaCpp:
		add(false, "--host", s.host())
		add(false, "--port", itoa(s.Port))
		add(false, "--alias", s.ServedName)
		if n.ContextSize > 0 {
			add(true, "-c", itoa(n.ContextSize))
		}
		if n.ParallelSlots > 0 {
			add(false, "-np", itoa(n.ParallelSlots))
		}
		// Every slot may use the whole context: answers do not depend on how
		// many slots share it (without it each slot gets ContextSize/slots).
		add(true, "--kv-unified")
		for _, a := range s.Adapters {
			add(false, "--lora", a.Path)
		}
		// The server's web UI is not lacuna's business (and not built).
		add(false, "--no-ui")
	case VLLM:
		add(false, "--host", s.host())
		add(false, "--port", itoa(s.Port))
		add(false, "--served-model-name", s.ServedName)
		if n.ContextSize > 0 {
			add(true, "--max-model-len", itoa(n.ContextSize))
		}
		if n.ParallelSlots > 0 {
			add(false, "--max-num-seqs", itoa(n.ParallelSlots))
		}
		if n.MaxLogprobs > 0 {
			add(false, "--max-logprobs", itoa(n.MaxLogprobs))
		}
		if n.LogprobsMode != "" {
			add(true, "--logprobs-mode", n.LogprobsMode)
		}
		if n.StructuredBackend != "" {
			if s.LegacyVLLM {
				add(true, "--guided-decoding-backend", n.StructuredBackend)
			} else {
				add(true, "--structured-outputs-config.backend", n.StructuredBackend)
			}
		}
		if len(s.Adapters) > 0 {
			mods := []string{"--enable-lora", "--lora-modules"}
			for _, a := range s.Adapters {
				mods = append(mods, a.Name+"="+a.Path)
			}
			add(false, mods...)
			add(false, "--max-loras", itoa(len(s.Adapters)))
			if r := maxRank(s.Adapters); r > 0 {
				add(false, "--max-lora-rank", itoa(loraRank(r)))
			}
		}
	case Transformers:
		add(false, "--host", s.host())
		add(false, "--port", itoa(s.Port))
		add(false, "--served-name", s.ServedName)
		if n.ContextSize > 0 {
			add(true, "--context", itoa(n.ContextSize))
		}
		if n.MaxLogprobs > 0 {
			add(false, "--max-logprobs", itoa(n.MaxLogprobs))
		}
		for _, a := range s.Adapters {
			add(false, "--adapter", a.Name+"="+a.Path)
		}
		if s.Codebook != nil {
			add(false, "--grace", s.Codebook.Path)
		}
	}
	if len(s.Extra) > 0 {
		add(true, s.Extra...)
	}
	return fs
}

// loraRank rounds r up to a rank vLLM accepts.
func loraRank(r int) int {
	for _, v := range vllmLoRARanks {
		if v >= r {
			return v
		}
	}
	return r
}

// Args derives the arguments appended to Command: the model, the listen
// address, then the flags for what Needs asks, then Extra. It is a pure
// function of the spec; Port 0 is passed through as 0 (Start picks the
// port first). An invalid spec is an error (Validate).
func (s Spec) Args() ([]string, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var args []string
	switch s.Kind {
	case LlamaCpp:
		args = append(args, "-m", s.Weights[0].Path)
	case VLLM:
		args = append(args, s.Weights[0].Path)
	case Transformers:
		args = append(args, "--model", s.Weights[0].Path)
	}
	for _, f := range s.flags() {
		args = append(args, f.args...)
	}
	return args, nil
}

// Argv is Command followed by Args: the server's command line (which
// Start runs as it is, or through the Wrapper).
func (s Spec) Argv() ([]string, error) {
	args, err := s.Args()
	if err != nil {
		return nil, err
	}
	return append(slices.Clone(s.Command), args...), nil
}

// Identity is the digest ("sha256:…") of what decides the server's
// answers: the kind, the server software (Server), the weights' and
// adapters' digests (adapters with the names that select them) and the
// derived flags that change answers (context size, logprobs mode,
// structured backend, Extra). Never the port, host, paths, command,
// served name or slot count: the same model served elsewhere is the same
// model. It is computed for any spec, valid or not.
func (s Spec) Identity() string {
	var b strings.Builder
	line := func(parts ...string) {
		for i, p := range parts {
			if i > 0 {
				b.WriteByte(0)
			}
			b.WriteString(strconv.Quote(p))
		}
		b.WriteByte('\n')
	}
	line("lacuna.serve", "1")
	line("kind", string(s.Kind))
	line("server", s.Server)
	for _, w := range s.Weights {
		line("weights", w.Digest)
	}
	for _, a := range s.Adapters {
		line("adapter", a.Name, a.Digest)
	}
	if s.Codebook != nil {
		line("codebook", s.Codebook.Digest)
	}
	for _, f := range s.flags() {
		if f.answers {
			line(append([]string{"flag"}, f.args...)...)
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}
