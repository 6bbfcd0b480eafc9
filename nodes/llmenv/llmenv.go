// Package llmenv is what node types that call models share: checking a
// `model` block against its server at plan time and pinning what the
// server reported (nodes.Resolver), and the client a run uses (the store's
// call cache, the process-wide concurrency limit of the model). Its
// functions are safe for concurrent use.
package llmenv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/serve"
)

// Model is a model block resolved against its server.
type Model struct {
	Config   nodes.Model
	Endpoint llm.Endpoint
	// Identity is what keys and the call cache know the model by: id,
	// revision and the id the server reports. Never the endpoint.
	Identity string
	// Notes are what Resolve found that a run should say (a concurrency
	// capped to the server's slots, a busy server whose model list could
	// not be checked): Client logs them in the node's log.
	Notes []string
	// serve is the server lacuna starts for the model (serve { }), nil
	// for a model reached at its endpoint.
	serve *serve.Spec
}

// Resolve checks that m's server answers and serves the model (GET
// /models lists served_name, or id), and returns it with the identity
// entries a node adds to its Pinned.Identity, under prefix (e.g. "model",
// "judge"). attr names the node's attribute that holds the model, for
// errors. The API key is read from the environment variable api_key_env
// names (never stored: not in keys, not in provenance). A server's model
// list is asked for once per process (a plan resolves every node of a
// sweep), its answer or its error reused by every node after.
//
// A server that accepts the connection but does not answer GET /models
// within llm.ProbeTimeout is busy generating (llama.cpp's and
// llama-cpp-python's servers answer nothing else meanwhile, e.g. the
// calls of a run that was killed): Resolve does not fail on it, it takes
// served_name (or id) as what the server serves, the identity it would
// have pinned, and says so in Notes; every answer is still checked
// against it (llm.Endpoint), so a server serving another model fails the
// calls, never the cache. A server that says how many requests it
// computes at once (llama.cpp's GET /props total_slots) gets no more
// calls in flight than that: Endpoint.Slots is set, and Concurrency
// capped to it (calls beyond the slots would only queue there, and be
// timed by the queue), also noted.
func Resolve(ctx context.Context, r nodes.Resolve, attr, prefix string, m nodes.Model) (*Model, map[string]string, error) {
	// The block's defaults are the client's (the limiter shared below
	// needs the concurrency itself).
	ep := llm.Endpoint{ServedName: m.Served(), Concurrency: llm.DefaultConcurrency, Timeout: llm.DefaultTimeout}
	if m.ReportedName != nil {
		ep.Reported = *m.ReportedName
	}
	sv, err := m.ServeSpec()
	if err != nil {
		return nil, nil, nodes.Errorf(attr, "Invalid serve block", "%v", err)
	}
	hasEndpoint := m.Endpoint != nil && *m.Endpoint != ""
	switch {
	case sv != nil && hasEndpoint:
		return nil, nil, nodes.Errorf(attr, "Model has an endpoint and a serve block", "model %s: either lacuna starts its server (serve { }) or it is reached at endpoint, not both.", m.ID)
	case sv == nil && !hasEndpoint:
		return nil, nil, nodes.Errorf(attr, "Model has no endpoint", "model %s has no endpoint: set endpoint = \"http://HOST:PORT/v1\" in its block (a variable makes it a --var), or a serve { } block for a server lacuna starts.", m.ID)
	case hasEndpoint:
		ep.BaseURL = strings.TrimRight(*m.Endpoint, "/")
	}
	if m.APIKeyEnv != nil && *m.APIKeyEnv != "" {
		ep.APIKey = r.Getenv(*m.APIKeyEnv)
		if ep.APIKey == "" {
			return nil, nil, nodes.Errorf(attr, "API key not set", "model %s reads its API key from $%s, which is not set.", m.ID, *m.APIKeyEnv)
		}
	}
	if m.Concurrency != nil {
		if *m.Concurrency < 1 {
			return nil, nil, nodes.Errorf(attr, "Invalid concurrency", "model %s: concurrency must be at least 1.", m.ID)
		}
		ep.Concurrency = *m.Concurrency
	}
	if m.Timeout != nil && *m.Timeout != "" {
		d, err := time.ParseDuration(*m.Timeout)
		if err != nil || d <= 0 {
			return nil, nil, nodes.Errorf(attr, "Invalid timeout", "model %s: timeout %q is not a duration like \"120s\".", m.ID, *m.Timeout)
		}
		ep.Timeout = d
	}
	if m.MaxRetries != nil {
		switch n := *m.MaxRetries; {
		case n < 0:
			return nil, nil, nodes.Errorf(attr, "Invalid max_retries", "model %s: max_retries must be 0 (no retries) or more.", m.ID)
		case n == 0:
			ep.MaxRetries = llm.NoRetries
		default:
			ep.MaxRetries = n
		}
	}
	if err := llm.CheckParams(m.Params); err != nil {
		return nil, nil, nodes.Errorf(attr, "Invalid params", "model %s: %v.", m.ID, err)
	}
	if m.StructuredOutput != nil {
		ep.Structured = *m.StructuredOutput
		switch ep.Structured {
		case "", llm.ResponseFormat, llm.JSONSchema, llm.StructuredOutputs, llm.JSONObject, llm.NoConstraint:
		default:
			return nil, nil, nodes.Errorf(attr, "Invalid structured_output", "model %s: structured_output is %q (the default), %q, %q, %q or %q, not %q.",
				m.ID, llm.JSONSchema, llm.ResponseFormat, llm.StructuredOutputs, llm.JSONObject, llm.NoConstraint, ep.Structured)
		}
	}
	rev := ""
	if m.Revision != nil {
		rev = *m.Revision
	}
	if sv != nil {
		// Nothing to ask yet: the server starts with the first call that
		// needs it (Client). What it will serve is pinned by content.
		spec, extra, err := serveSpec(ctx, r, attr, m, sv, ep.Concurrency)
		if err != nil {
			return nil, nil, err
		}
		ep.Slots = spec.Needs.ParallelSlots
		ep.Concurrency = min(ep.Concurrency, max(ep.Slots, 1))
		id := spec.Identity()
		mm := &Model{Config: m, Endpoint: ep, Identity: m.ID + "@" + rev + "|" + ep.ServedName + "|" + id, serve: &spec}
		ids := map[string]string{prefix: m.ID + "@" + rev, prefix + ".served": ep.ServedName, prefix + ".serve": id}
		for k, v := range extra {
			ids[prefix+".serve."+k] = v
		}
		return mm, ids, nil
	}
	shown := llm.RedactURL(ep.BaseURL) // the endpoint may carry credentials
	var notes []string
	ids, err := models(ctx, ep)
	if errors.Is(err, llm.ErrBusy) {
		notes = append(notes, fmt.Sprintf("the server at %s did not list its models within %s (busy generating?): taken to serve %q as the block says; every answer is still checked against it", shown, llm.ProbeTimeout, ep.ServedName))
		ids, err = []string{ep.ServedName}, nil
	}
	var se *llm.StatusError
	switch {
	case errors.As(err, &se) && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden):
		how := "no API key was sent: set api_key_env in the model block"
		if ep.APIKey != "" {
			how = "check the key in $" + *m.APIKeyEnv
		}
		return nil, nil, nodes.Errorf(attr, "API key rejected", "model %s at %s: %v (%s).", m.ID, shown, err, how)
	case err != nil:
		return nil, nil, nodes.Errorf(attr, "Model server unreachable", "model %s at %s: %v", m.ID, shown, err)
	}
	served := ""
	for _, id := range ids {
		if id == ep.ServedName {
			served = id
		}
	}
	if served == "" {
		return nil, nil, nodes.Errorf(attr, "Model id mismatch", "model %s: the block expects the server at %s to serve %q, but it reports %s; set served_name to the id it reports, or point endpoint at the right server.", m.ID, shown, ep.ServedName, quoteList(ids))
	}
	if n := slotsOf(ctx, ep); n > 0 {
		ep.Slots = n
		if ep.Concurrency > n {
			notes = append(notes, fmt.Sprintf("the server at %s computes %d request(s) at once (GET /props total_slots): concurrency %d capped to %d", shown, n, ep.Concurrency, n))
			ep.Concurrency = n
		}
	}
	mm := &Model{Config: m, Endpoint: ep, Identity: m.ID + "@" + rev + "|" + served, Notes: notes}
	return mm, map[string]string{prefix: m.ID + "@" + rev, prefix + ".served": served}, nil
}

// Params are the model block's params (nil when it has none): extra
// fields of every request to the model, and key material (they are in
// the node's key through the model's KeyView, and in each call's key
// through llm.Request.Params). Nodes that build requests by hand put
// them in Request.Params; Request does it for them. The map is a copy.
func (m *Model) Params() map[string]string {
	return maps.Clone(m.Config.Params)
}

// Request is a request with the model block's defaults: its API,
// temperature, top_p, max_tokens, stop, seed and params. The caller adds
// the messages (with the block's system prompt, Config.System, where it
// has one) or the prompt, and overrides what its own config sets.
func (m *Model) Request() llm.Request {
	c := m.Config
	req := llm.Request{API: c.APIName(), Temperature: c.Temperature, TopP: c.TopP, Stop: c.Stop, Seed: c.Seed}
	if c.MaxTokens != nil {
		req.MaxTokens = *c.MaxTokens
	}
	if len(c.Params) > 0 {
		req.Params = m.Params()
	}
	return req
}

// Client returns the client a run calls the model with: the store's call
// cache, and the limiter every node calling this model in this process
// shares. It writes the model's Notes to the node's log. A model with a
// serve { } block is served by the run's model servers (nodes.ServersOf):
// its server starts with the first call the cache does not answer, and is
// shared by every node that uses the model.
func (m *Model) Client(r nodes.Run) *llm.Client {
	for _, n := range m.Notes {
		r.Logf("model %s: %s", m.Config.ID, n)
	}
	opts := []llm.Option{llm.WithCache(r.Calls(), m.Identity), llm.WithLimiter(llm.Shared(m.Identity, m.Endpoint.Concurrency))}
	if m.serve != nil {
		spec, servers := *m.serve, nodes.ServersOf(r)
		opts = append(opts, llm.WithStart(func(ctx context.Context) (string, error) {
			if servers == nil {
				return "", fmt.Errorf("this run cannot start model servers (lacuna run starts them; a library caller passes engine.Executor.Servers)")
			}
			srv, err := servers.Acquire(ctx, spec)
			if err != nil {
				return "", err
			}
			where := ""
			if c := srv.Container(); c != "" {
				where = " in container " + c
			}
			r.Logf("model %s: served by %s %s%s at %s (started in %s)", m.Config.ID, spec.Kind, spec.Weights[0].Path, where, srv.Endpoint(), srv.Startup().Round(time.Millisecond))
			return srv.Endpoint(), nil
		}))
	}
	return llm.New(m.Endpoint, opts...)
}

func quoteList(ids []string) string {
	if len(ids) == 0 {
		return "no models"
	}
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ", ")
}

// listed memoises each server's model list, error included, for the
// process: a plan resolves every node of a sweep, and a server that does
// not answer must cost one timeout, not one per node.
var listed sync.Map // endpointKey → func() ([]string, error)

type endpointKey struct{ url, key string }

func models(ctx context.Context, ep llm.Endpoint) ([]string, error) {
	f, _ := listed.LoadOrStore(endpointKey{ep.BaseURL, ep.APIKey}, sync.OnceValues(func() ([]string, error) {
		return llm.New(ep).Models(context.WithoutCancel(ctx))
	}))
	return f.(func() ([]string, error))()
}

// slotted memoises each server's slot count for the process (0: it does
// not say, or did not answer).
var slotted sync.Map // endpointKey → func() int

func slotsOf(ctx context.Context, ep llm.Endpoint) int {
	if _, err := models(ctx, ep); errors.Is(err, llm.ErrBusy) {
		return 0 // asking again would wait as long
	}
	f, _ := slotted.LoadOrStore(endpointKey{ep.BaseURL, ep.APIKey}, sync.OnceValue(func() int {
		n, err := llm.New(ep).Slots(context.WithoutCancel(ctx))
		if err != nil {
			return 0
		}
		return n
	}))
	return f.(func() int)()
}
