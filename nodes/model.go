package nodes

import (
	"context"
	"fmt"

	"github.com/zclconf/go-cty/cty/gocty"

	"github.com/zclconf/go-cty/cty"
)

// Model is a `model` block as a node config field receives it
// (`model = model.qwen`). Only its identity and its sampling defaults are
// key material (KeyView): the endpoint, the key's variable, the served
// and reported names, the concurrency and the timeout say how to reach the model, not
// what it is, so moving the server keeps every key and the call cache.
// The structured-output mechanism is key material when it is not the
// default (KeyView): vLLM answers the two through different code paths,
// and switching it is what a user does when answers break the schema.
// What the server reports itself to be is checked and pinned by the node's
// Resolve.
type Model struct {
	ID          string            `cty:"id"`
	Revision    *string           `cty:"revision"`
	Cutoff      *string           `cty:"cutoff"`
	Endpoint    *string           `cty:"endpoint"`
	APIKeyEnv   *string           `cty:"api_key_env"`
	ServedName  *string           `cty:"served_name"`
	API         *string           `cty:"api"` // chat (default) | completions
	Concurrency *int              `cty:"concurrency"`
	Timeout     *string           `cty:"timeout"`
	MaxRetries  *int              `cty:"max_retries"`
	Temperature *float64          `cty:"temperature"`
	TopP        *float64          `cty:"top_p"`
	MaxTokens   *int              `cty:"max_tokens"`
	Stop        []string          `cty:"stop"`
	Seed        *int64            `cty:"seed"`
	System      *string           `cty:"system"`
	Think       *string           `cty:"think"` // strip (default) | keep
	Params      map[string]string `cty:"params"`
	Serve       cty.Value         `cty:"serve"`
	// StructuredOutput is how constraints go on the wire (response_format,
	// the default, or structured_outputs); see KeyView.
	StructuredOutput *string `cty:"structured_output"`
	// ReportedName is the id the server may name in its answers besides
	// the served name ("*": any); see runners/llm.Endpoint.Reported.
	ReportedName *string `cty:"reported_name"`
}

// Serve is a model block's serve { } block: a server lacuna starts for
// the model (runners/serve), instead of an endpoint.
type Serve struct {
	Kind              string   `cty:"kind"`
	Weights           string   `cty:"weights"`
	Adapters          []string `cty:"adapters"`
	Command           []string `cty:"command"`
	ContextSize       *int     `cty:"context_size"`
	Parallel          *int     `cty:"parallel"`
	MaxLogprobs       *int     `cty:"max_logprobs"`
	LogprobsMode      *string  `cty:"logprobs_mode"`
	StructuredBackend *string  `cty:"structured_backend"`
	Extra             []string `cty:"extra"`
	// Runner is the runner block the server runs on (runner = runner.X):
	// its object as the engine gives it, with the block's name as "name"
	// (null: none). ServeRunner reads it.
	Runner cty.Value `cty:"runner"`
}

// ServeRunner is the runner the server runs on: the zero Runner (this
// machine) when the block names none.
func (s Serve) ServeRunner() (Runner, error) {
	v := s.Runner
	if v.IsNull() || !v.IsKnown() {
		return Runner{}, nil
	}
	if !v.Type().IsObjectType() {
		return Runner{}, fmt.Errorf("serve: runner is %s, not a runner block", v.Type().FriendlyName())
	}
	name, attrs := "", v.AsValueMap()
	if n, ok := attrs["name"]; ok {
		if n.Type() == cty.String && n.IsKnown() && !n.IsNull() {
			name = n.AsString()
		}
		delete(attrs, "name")
	}
	return DecodeRunner(name, cty.ObjectVal(attrs))
}

// ServeSpec is the model's serve block, nil when it has none.
func (m Model) ServeSpec() (*Serve, error) {
	if m.Serve.IsNull() || !m.Serve.IsKnown() {
		return nil, nil
	}
	// The engine gives the block's object whether it was written as a
	// block or as an object (every attribute present, checked).
	var s Serve
	if err := gocty.FromCtyValue(m.Serve, &s); err != nil {
		return nil, fmt.Errorf("model %s: serve: %w", m.ID, err)
	}
	return &s, nil
}

// ModelKey is the part of a Model that enters action keys.
type ModelKey struct {
	ID          string            `json:"id"`
	Revision    string            `json:"revision"`
	API         string            `json:"api"`
	Temperature *float64          `json:"temperature"`
	TopP        *float64          `json:"top_p"`
	MaxTokens   int               `json:"max_tokens"`
	Stop        []string          `json:"stop"`
	Seed        *int64            `json:"seed"`
	System      string            `json:"system"`
	Think       string            `json:"think"`
	Params      map[string]string `json:"params"`
}

// KeyView returns the model's key material, defaults applied. A
// structured_output other than the default (response_format, also spelled
// json_schema) enters as the entry "structured_outputs" of Params ("true"
// for vLLM's structured_outputs, else the mode's name): a name no param may take
// (runners/llm.CheckParams refuses it; Resolve checks), so it cannot
// collide with one, and every key of a model under the default stays what
// it was before the mechanism was key material.
func (m Model) KeyView() ModelKey {
	k := ModelKey{ID: m.ID, Revision: str(m.Revision), API: m.APIName(), Temperature: m.Temperature, TopP: m.TopP,
		Stop: m.Stop, Seed: m.Seed, System: str(m.System), Think: m.ThinkMode(), Params: m.Params}
	if m.MaxTokens != nil {
		k.MaxTokens = *m.MaxTokens
	}
	if so := str(m.StructuredOutput); so != "" && so != "response_format" && so != "json_schema" {
		k.Params = make(map[string]string, len(m.Params)+1)
		for n, v := range m.Params {
			k.Params[n] = v
		}
		k.Params["structured_outputs"] = "true"
		if so != "structured_outputs" {
			k.Params["structured_outputs"] = so // json_object, none
		}
	}
	return k
}

// APIName is the API the model is called through: chat or completions.
func (m Model) APIName() string {
	if m.API == nil || *m.API == "" {
		return "chat"
	}
	return *m.API
}

// ThinkMode says what happens to <think> blocks before code extraction:
// strip (the default) or keep. The raw answer is always kept.
func (m Model) ThinkMode() string {
	if m.Think == nil || *m.Think == "" {
		return "strip"
	}
	return *m.Think
}

// Served is the name the server knows the model by (served_name, else id).
func (m Model) Served() string {
	if s := str(m.ServedName); s != "" {
		return s
	}
	return m.ID
}

// Str returns *p, or "" for nil.
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// CallCache is the store's cache of completed model calls (STORE.md
// `calls/`): a value is written atomically as each call completes and read
// back verified. Safe for concurrent use; runners/llm.Cache has the same
// methods.
type CallCache interface {
	Get(key string) ([]byte, bool, error)
	Put(key string, value []byte) error
}

// CallPlan is what a run of an instance would ask of a model.
type CallPlan struct {
	Model  string `json:"model"`
	Calls  int64  `json:"calls"`  // calls a run makes, cached or not
	Cached int64  `json:"cached"` // ... that the call cache already holds
	// Estimated tokens of the calls still to make.
	PromptTokens int64 `json:"prompt_tokens_est"`
	OutputTokens int64 `json:"completion_tokens_est"`
}

// CallPlanner is implemented by node types that call models. At plan
// time, once the instance's inputs are in the store and its key is known,
// PlanCalls counts the calls a run would make and how many are cached.
// r is a Run whose Output fails; everything else works as in Run.
// CallsModels says whether an instance with this config calls a model at
// all (a judge without a judge model does not): plans say so before its
// inputs exist.
type CallPlanner interface {
	PlanCalls(ctx context.Context, r Run) ([]CallPlan, error)
	CallsModels(cfg any) bool
}
