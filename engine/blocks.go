package engine

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// A blockSchema describes a configuration block kind (model, library,
// runner). Nodes receive the evaluated block as an object with every
// attribute present (null when not set), so node configs can declare them
// as typed structs or cty values.
type blockSchema struct {
	Doc   string
	Attrs []blockAttr
}

type blockAttr struct {
	Name     string
	Type     cty.Type
	Required bool
	OneOf    []string // allowed string values
	Doc      string
	// Nested, when set, allows the attribute to be written as a nested
	// block of its name (serve { kind = ... }) with these attributes; its
	// value is then an object of them (null where not set).
	Nested []blockAttr
	// Runner says that the attribute names a runner block (runner =
	// runner.NAME, as a node's runner): its value is that block's object
	// with the block's name added as "name" (checkServeRunner).
	Runner bool
	// Check, when set, examines a string value once it is known: it
	// returns what is wrong with it ("" when nothing is) and whether
	// that is only a warning (the value works for some, and is more
	// often a mistake).
	Check func(s string) (problem string, warn bool)
}

var blockSchemas = map[string]*blockSchema{
	"model": {
		Doc: "A language model: its identity (id, revision, the id its server reports) and sampling defaults are part of the key of every node that uses it; its endpoint is not.",
		Attrs: []blockAttr{
			{Name: "id", Type: cty.String, Required: true, Doc: "model id, e.g. Qwen/Qwen2.5-Coder-7B-Instruct"},
			{Name: "revision", Type: cty.String, Doc: "model revision (commit) pinned for reproducibility"},
			{Name: "cutoff", Type: cty.String, Doc: "training-data cutoff date, YYYY-MM-DD"},
			{Name: "endpoint", Type: cty.String, Doc: "OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1", Check: checkEndpoint},
			{Name: "api_key_env", Type: cty.String, Doc: "the environment variable holding the API key (never the key itself)"},
			{Name: "served_name", Type: cty.String, Doc: "the name the server knows the model by (default: id); checked against GET /v1/models at plan time"},
			{Name: "reported_name", Type: cty.String, Doc: "the id the server may name in its answers' model field besides served_name, e.g. the dated model behind an alias (\"*\": any, or none); an answer naming any other model fails its call and is never cached"},
			{Name: "api", Type: cty.String, OneOf: []string{"chat", "completions"}, Doc: "chat (default) or completions"},
			{Name: "serve", Type: cty.DynamicPseudoType, Doc: "a server lacuna starts for the model, instead of an endpoint: serve { kind = \"llamacpp\" | \"vllm\" | \"transformers\", weights = PATH, ... } (docs/runners.md, \"Model servers lacuna starts\")", Nested: serveAttrs},
			{Name: "concurrency", Type: cty.Number, Doc: "the most requests in flight (default 8); shared by every node calling the model, lowered on 429"},
			{Name: "timeout", Type: cty.String, Doc: "per-request timeout, e.g. \"120s\" (default 300s)"},
			{Name: "max_retries", Type: cty.Number, Doc: "retries per call on 429, 5xx, timeouts and dropped connections (default 8; 0: none)"},
			{Name: "temperature", Type: cty.Number, Doc: "default sampling temperature"},
			{Name: "top_p", Type: cty.Number, Doc: "default nucleus sampling"},
			{Name: "max_tokens", Type: cty.Number, Doc: "default completion length bound"},
			{Name: "stop", Type: cty.List(cty.String), Doc: "default stop sequences"},
			{Name: "seed", Type: cty.Number, Doc: "base sampling seed (sample i is sent seed + i)"},
			{Name: "system", Type: cty.String, Doc: "system prompt"},
			{Name: "think", Type: cty.String, OneOf: []string{"strip", "keep"}, Doc: "<think> blocks of reasoning models: strip (default) before code extraction, or keep; the raw answer is always kept"},
			{Name: "params", Type: cty.Map(cty.String), Doc: "extra top-level fields of every request, e.g. { top_k = 20, chat_template_kwargs = jsonencode({ enable_thinking = false }) }: a value that parses as JSON is sent as that JSON, any other as a string; part of the key; none may name a field the other attributes set (temperature, max_tokens, stop, seed, ...)"},
			{Name: "structured_output", Type: cty.String, OneOf: []string{"response_format", "json_schema", "structured_outputs", "json_object", "none"}, Doc: "how a JSON-schema or choice constraint is sent: response_format or json_schema (the default: OpenAI's json_schema, which vLLM, llama.cpp's server and hosted APIs accept; a server that refuses it, as llama-cpp-python's does, gets json_object once, with a warning), structured_outputs (vLLM's own field), json_object (the schema in the prompt, JSON mode on, the answer checked here) or none (the schema in the prompt, the answer checked here); part of the key when not the default, so switching it makes constrained calls again"},
		},
	},
	"library": {
		Doc: "A software library whose API surface is studied.",
		Attrs: []blockAttr{
			{Name: "ecosystem", Type: cty.String, Required: true, OneOf: []string{"go", "python", "npm"}},
			{Name: "name", Type: cty.String, Required: true, Doc: "module path or package name"},
			{Name: "domain", Type: cty.String, Doc: "a label for grouping results"},
			{Name: "version", Type: cty.String, Doc: "pin a version instead of resolving one"},
			{Name: "follow_major", Type: cty.Bool, Doc: "follow /vN major-version module paths"},
		},
	},
	"runner": {
		Doc: "Where and how much work runs: nodes with `runner = runner.X` share its concurrency limit.",
		Attrs: []blockAttr{
			{Name: "kind", Type: cty.String, OneOf: []string{"local", "container", "slurm"}, Doc: "local (default: this process and machine), container (a container engine on this machine) or slurm (each instance a job of a SLURM cluster sharing the store: a for_each sweep is one job array)"},
			{Name: "concurrency", Type: cty.Number, Doc: "how many nodes may run on it at once (slurm: the job array's throttle too)"},
			{Name: "image", Type: cty.String, Doc: "container: the image, by tag or digest; a tag is resolved to its digest at plan time and the digest enters the key"},
			{Name: "engine", Type: cty.String, Doc: "container: podman or docker, or a path to one (default: podman, else docker, on PATH)"},
			{Name: "cpus", Type: cty.Number, Doc: "CPUs each instance gets (slurm --cpus-per-task; container --cpus)"},
			{Name: "memory", Type: cty.String, Doc: "memory each instance gets, e.g. \"16G\" or \"512M\" (slurm --mem; container --memory)"},
			{Name: "gpus", Type: cty.Number, Doc: "GPUs each instance gets (slurm --gres=gpu:N; container CDI devices or --gpus)"},
			{Name: "gpu_type", Type: cty.String, Doc: "slurm: the GPU type of --gres=gpu:TYPE:N"},
			{Name: "partition", Type: cty.String, Doc: "slurm --partition"},
			{Name: "account", Type: cty.String, Doc: "slurm --account"},
			{Name: "time", Type: cty.String, Doc: "the wall time of each instance, e.g. \"2h\" (slurm --time)"},
			{Name: "env", Type: cty.Map(cty.String), Doc: "environment variables each instance gets (a container gets only these)"},
			{Name: "args", Type: cty.List(cty.String), Doc: "further options: slurm, #SBATCH lines (\"--qos=short\"); container, the engine's global options (\"--runtime=runc\")"},
		},
	},
}

// serveAttrs are a model's serve block's attributes.
var serveAttrs = []blockAttr{
	{Name: "kind", Type: cty.String, Required: true, OneOf: []string{"llamacpp", "vllm", "transformers"}, Doc: "llamacpp (llama.cpp's llama-server on a GGUF file: CPU or GPU), vllm (vllm serve) or transformers (lacuna's own server of a Hugging Face directory on transformers, runners/parametric: tiny models on CPU, GRACE codebooks; command = [PYTHON] names its interpreter)"},
	{Name: "weights", Type: cty.String, Required: true, Doc: "the model: a GGUF file (llamacpp) or a model directory (vllm), relative to the pipeline's directory; its content's digest is the model's identity in keys"},
	{Name: "adapters", Type: cty.List(cty.String), Doc: "LoRA adapters served beside the weights (a GGUF LoRA file for llamacpp, at most one; PEFT directories for vllm, each served as the model id of its directory's name); their digests enter the identity"},
	{Name: "command", Type: cty.List(cty.String), Doc: "the server's argv prefix (default: llama-server, or vllm serve, on PATH; on a container runner, the image's entrypoint); the binary's digest enters the identity (on a container runner, the image's)"},
	{Name: "runner", Type: cty.DynamicPseudoType, Runner: true, Doc: "where the server runs: runner.NAME; a container runner runs it in its image, pinned by digest (the digest enters the identity instead of the binary's), with the weights and adapters mounted read-only, the host's network (listening on 127.0.0.1), and the runner's env, cpus, memory and gpus; a local runner (or none) runs it on this machine; slurm is not supported (docs/runners.md, \"A model server in a container\")"},
	{Name: "context_size", Type: cty.Number, Doc: "context length in tokens (llama-server -c, vLLM --max-model-len); default: the model's"},
	{Name: "parallel", Type: cty.Number, Doc: "requests the server computes at once (llama-server -np, vLLM --max-num-seqs); default: the model's concurrency"},
	{Name: "max_logprobs", Type: cty.Number, Doc: "vLLM's --max-logprobs"},
	{Name: "logprobs_mode", Type: cty.String, Doc: "vLLM's --logprobs-mode"},
	{Name: "structured_backend", Type: cty.String, Doc: "vLLM's structured-output backend"},
	{Name: "extra", Type: cty.List(cty.String), Doc: "further flags, verbatim (they enter the identity)"},
}

func (s *blockSchema) bodySchema() *hcl.BodySchema {
	bs := &hcl.BodySchema{}
	for _, a := range s.Attrs {
		bs.Attributes = append(bs.Attributes, hcl.AttributeSchema{Name: a.Name, Required: a.Required})
		if a.Nested != nil {
			bs.Blocks = append(bs.Blocks, hcl.BlockHeaderSchema{Type: a.Name})
		}
	}
	return bs
}

// nestedSchema is the body schema of the nested block name.
func (s *blockSchema) nestedSchema(name string) *hcl.BodySchema {
	bs := &hcl.BodySchema{}
	for _, a := range s.Attrs {
		if a.Name == name {
			for _, n := range a.Nested {
				bs.Attributes = append(bs.Attributes, hcl.AttributeSchema{Name: n.Name, Required: n.Required})
			}
		}
	}
	return bs
}

// nestedObject is v, an object given for an attribute that may be a
// nested block, as the block would give it: every attribute of attrs
// present (null where v has none), each converted to its type and checked
// against its allowed values; an attribute attrs does not name, or a
// required one missing, is an error at attr. Null stays null.
func nestedObject(attr *hcl.Attribute, v cty.Value, attrs []blockAttr) (cty.Value, hcl.Diagnostics) {
	if v.IsNull() || !v.IsKnown() {
		return cty.NullVal(cty.DynamicPseudoType), nil
	}
	bad := func(format string, args ...any) (cty.Value, hcl.Diagnostics) {
		return cty.DynamicVal, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid " + attr.Name, Detail: fmt.Sprintf(format, args...), Subject: attr.Expr.Range().Ptr()}}
	}
	if !v.Type().IsObjectType() {
		return bad("%s is a block or an object of its attributes, not %s.", attr.Name, v.Type().FriendlyName())
	}
	known := map[string]bool{}
	vals := map[string]cty.Value{}
	for _, a := range attrs {
		known[a.Name] = true
		vals[a.Name] = cty.NullVal(a.Type)
		if !v.Type().HasAttribute(a.Name) {
			if a.Required {
				return bad("%s needs %s.", attr.Name, a.Name)
			}
			continue
		}
		cv, err := convertTo(v.GetAttr(a.Name), a.Type)
		if err != nil {
			return bad("%s.%s: %v.", attr.Name, a.Name, err)
		}
		if a.Runner {
			if problem := checkServeRunner(cv); problem != "" {
				return bad("%s.%s: the runner %s.", attr.Name, a.Name, problem)
			}
		}
		if len(a.OneOf) > 0 && !cv.IsNull() && cv.IsKnown() && !slices.Contains(a.OneOf, cv.AsString()) {
			return bad("%s.%s: %q is not one of %s.", attr.Name, a.Name, cv.AsString(), strings.Join(a.OneOf, ", "))
		}
		vals[a.Name] = cv
	}
	for n := range v.Type().AttributeTypes() {
		if !known[n] {
			return bad("%s has no attribute %q.", attr.Name, n)
		}
	}
	return cty.ObjectVal(vals), nil
}

// checkServeRunner says what is wrong with v, the value of a serve
// block's runner ("" when nothing is): a runner block's object of a kind
// a model server can run on (local or container; slurm: the server would
// have to run in a job, and lacuna on this machine reach it).
func checkServeRunner(v cty.Value) string {
	if v.IsNull() || !v.IsKnown() {
		return ""
	}
	if !v.Type().IsObjectType() || !v.Type().HasAttribute("kind") || !v.Type().HasAttribute("image") {
		return "is not a runner block"
	}
	k := v.GetAttr("kind")
	if !k.IsKnown() || k.IsNull() || k.Type() != cty.String {
		return ""
	}
	if k.AsString() == "slurm" {
		return "is of kind slurm: a model server lacuna starts runs on this machine, on a local runner or in a container runner's image (start the server in a job yourself and give the model its endpoint)"
	}
	return ""
}

// withName is the runner block object v with its name added (nodes read
// it as the runner's Name).
func withName(v cty.Value, name string) cty.Value {
	if v.IsNull() || !v.IsKnown() || !v.Type().IsObjectType() {
		return v
	}
	attrs := v.AsValueMap()
	attrs["name"] = cty.StringVal(name)
	return cty.ObjectVal(attrs)
}

// evalBlock evaluates a configuration block to its object value.
func (e *evaluator) evalBlock(b *Block) (cty.Value, hcl.Diagnostics) {
	return e.evalAttrs(b, "", blockSchemas[b.Kind].Attrs)
}

// evalAttrs evaluates the attributes attrs of b, whose names are kept
// under prefix (a nested block's "NAME."), to an object with every one
// present (null when not set).
func (e *evaluator) evalAttrs(b *Block, prefix string, attrs []blockAttr) (cty.Value, hcl.Diagnostics) {
	vals := map[string]cty.Value{}
	var diags hcl.Diagnostics
	for _, a := range attrs {
		if _, nested := b.Attrs[prefix+a.Name+"."]; nested && a.Nested != nil {
			v, d := e.evalAttrs(b, prefix+a.Name+".", a.Nested)
			diags = append(diags, d...)
			vals[a.Name] = v
			continue
		}
		attr, ok := b.Attrs[prefix+a.Name]
		if !ok {
			if a.Type == cty.DynamicPseudoType {
				vals[a.Name] = cty.NullVal(cty.DynamicPseudoType)
			} else {
				vals[a.Name] = cty.NullVal(a.Type)
			}
			continue
		}
		if a.Runner {
			if _, ok := runnerName(attr.Expr); !ok {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid runner", Detail: "runner must be a reference to a runner block: runner = runner.NAME.", Subject: attr.Expr.Range().Ptr()})
				continue
			}
		}
		v, d := e.evalExpr(attr.Expr, nil)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		if a.Runner {
			name, _ := runnerName(attr.Expr)
			if problem := checkServeRunner(v); problem != "" {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unsupported runner for a model server", Detail: fmt.Sprintf("runner.%s %s", name, problem), Subject: attr.Expr.Range().Ptr()})
				continue
			}
			vals[a.Name] = withName(v, name)
			continue
		}
		if a.Nested != nil {
			// Written as an object (serve = cond ? { ... } : null): the
			// same value as the nested block gives, checked the same way.
			nv, d := nestedObject(attr, v, a.Nested)
			diags = append(diags, d...)
			vals[a.Name] = nv
			continue
		}
		if a.Type != cty.DynamicPseudoType {
			cv, err := convertTo(v, a.Type)
			if err != nil {
				diags = append(diags, typeMismatch(attr, a.Type, v, err))
				continue
			}
			v = cv
		}
		if len(a.OneOf) > 0 && v.IsKnown() && !v.IsNull() {
			ok := false
			for _, o := range a.OneOf {
				ok = ok || v.AsString() == o
			}
			if !ok {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid value for " + a.Name,
					Detail:   fmt.Sprintf("%q is not one of %s.", v.AsString(), strings.Join(a.OneOf, ", ")),
					Subject:  attr.Expr.Range().Ptr(),
				})
				continue
			}
		}
		if a.Check != nil && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
			if problem, warn := a.Check(v.AsString()); problem != "" {
				d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid " + a.Name, Detail: problem, Subject: attr.Expr.Range().Ptr()}
				if warn {
					d.Severity, d.Summary = hcl.DiagWarning, "Unusual "+a.Name
				}
				diags = append(diags, d)
				if !warn {
					continue
				}
			}
		}
		vals[a.Name] = v
	}
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	return cty.ObjectVal(vals), diags
}

// endpointHint is what every endpoint problem ends with.
const endpointHint = "endpoint must be an absolute http(s) URL ending in /v1, e.g. http://127.0.0.1:8000/v1"

// checkEndpoint checks a model's endpoint before anything contacts it:
// the client appends /chat/completions, /completions and /models to it,
// so it must be an absolute http or https URL with a host and without a
// query or fragment, and not already an operation's URL. "" is no
// endpoint (a model served by lacuna, or none yet). A path other than
// /v1 is only a warning: vLLM, llama.cpp's server, OpenAI and most
// providers serve the API under /v1, and a missing /v1 is the usual
// mistake, but some serve it elsewhere (Gemini under /v1beta/openai,
// Perplexity and DeepSeek at the root), so refusing it would lock them
// out.
func checkEndpoint(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	bad := func(why string) (string, bool) {
		return fmt.Sprintf("%q %s: %s.", s, why, endpointHint), false
	}
	if strings.TrimSpace(s) != s {
		return bad("has spaces around it")
	}
	u, err := url.Parse(s)
	switch {
	case err != nil && !strings.Contains(s, "://"):
		return bad("has no scheme")
	case err != nil:
		return bad("is not a URL (" + strings.TrimPrefix(err.Error(), "parse "+strconv.Quote(s)+": ") + ")")
	case u.Scheme == "" || u.Opaque != "" && u.Host == "":
		return bad("has no scheme")
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("is not an http or https URL")
	case u.Host == "" || u.Hostname() == "":
		return bad("names no host")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return bad("has a query or fragment, which the paths of the API's operations would follow")
	}
	path := strings.TrimRight(u.Path, "/")
	for _, op := range []string{"/chat/completions", "/completions", "/models"} {
		if strings.HasSuffix(path, op) {
			return fmt.Sprintf("%q is the URL of an operation, not the API's base: drop %s (lacuna appends it); %s.", s, op, endpointHint), false
		}
	}
	if !strings.HasSuffix(path, "/v1") {
		return fmt.Sprintf("%q does not end in /v1, where vLLM, llama.cpp's server, OpenAI and most OpenAI-compatible servers serve the API (%s). A server with another base path (Gemini's .../v1beta/openai) works as written.", s, endpointHint), true
	}
	return "", false
}
