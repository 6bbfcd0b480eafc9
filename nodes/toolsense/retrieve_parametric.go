package toolsense

import (
	"cmp"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/llmenv"
	"github.com/lacuna-dev/lacuna/runners/llm"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

func init() { nodes.Register(parametricType{}) }

// parametricConfig:
//
//	node "retrieve_parametric" "constrained" {
//	  catalog      = node.catalog.rrb
//	  queries      = node.import.rrb
//	  model        = model.toolgen
//	  decoding     = "constrained"       # or "free"
//	  token_format = "flat"              # <<API&&ENDPOINT>>; "hierarchical": <<API>><<ENDPOINT>>
//	  tokens       = "added_tokens.json" # token → id (constrained decoding)
//	  beam         = 50
//	  k            = 50
//	}
type parametricConfig struct {
	Catalog nodes.Ref   `hcl:"catalog"`
	Queries nodes.Ref   `hcl:"queries"`
	Model   nodes.Model `hcl:"model"`
	// Trained serves the weights a train or edit node wrote (an adapter
	// beside the model's base weights, a full model, a GRACE codebook)
	// instead of the model's own: the model needs a serve { } block
	// (llmenv.WithTrained).
	Trained *nodes.Ref `hcl:"trained,optional" key:"omitnull"`
	// Decoding is "constrained" (only catalog tool tokens, top beam by
	// log-probability) or "free" (one greedy generation, parsed).
	Decoding    string `hcl:"decoding"`
	TokenFormat string `hcl:"token_format,optional"`
	// TokenOpen and TokenClose spell a virtual token around its name
	// (default "<<" and ">>").
	TokenOpen  *string `hcl:"token_open,optional"`
	TokenClose *string `hcl:"token_close,optional"`
	// Tokens is the model's map from token text to id: a JSON object
	// {"<<A&&E>>": 128256, ...} (Hugging Face's added_tokens.json) or a
	// tokenizer.json (its added_tokens list); relative to the pipeline's
	// directory, read at plan time, its digest in the key.
	Tokens    string `hcl:"tokens,optional"`
	Beam      *int   `hcl:"beam,optional"`
	K         *int   `hcl:"k,optional"`
	Prompt    string `hcl:"prompt,optional"`     // "k2" (default) or "none" (the bare query)
	MaxTokens *int   `hcl:"max_tokens,optional"` // free decoding's answer length
	// Limit takes the first N queries (a small slice).
	Limit *int `hcl:"limit,optional"`
}

const (
	defaultBeam           = 50
	defaultFreeMaxTokens  = 64
	constrainedDecoding   = "constrained"
	freeDecoding          = "free"
	retrieverConstrained  = "parametric-constrained"
	retrieverFreeDecoding = "parametric-free"
	// tokenIDsParam is vLLM's request field that names the top
	// log-probabilities' tokens "token_id:N".
	tokenIDsParam = "return_tokens_as_token_ids"
)

func (c *parametricConfig) format() string {
	if c.TokenFormat == "" {
		return ts.FlatTokens
	}
	return c.TokenFormat
}

func (c *parametricConfig) beam() int {
	if c.Beam == nil {
		return defaultBeam
	}
	return *c.Beam
}

// freeBeam says whether free decoding searches with a beam (beam set)
// rather than generating greedily.
func (c *parametricConfig) freeBeam() bool { return c.Decoding == freeDecoding && c.Beam != nil }

func (c *parametricConfig) k() int {
	if c.K == nil {
		return defaultK
	}
	return *c.K
}

func (c *parametricConfig) prompt() string {
	if c.Prompt == "" {
		return "k2"
	}
	return c.Prompt
}

func (c *parametricConfig) spelling() (open, close string) {
	open, close = ts.DefaultTokenOpen, ts.DefaultTokenClose
	if c.TokenOpen != nil {
		open = *c.TokenOpen
	}
	if c.TokenClose != nil {
		close = *c.TokenClose
	}
	return open, close
}

// parametricType is retrieve_parametric (Doc says what it does).
//
// Scores. A step's log-probabilities are what the server returns, and a
// hierarchical path's score is the sum of its two steps'. With vLLM's
// --logprobs-mode processed_logprobs they are log-softmax over the allowed
// tokens (the mask applied first): a beam search over the model
// renormalised on the trie. Hugging Face's constrained beam search (the
// DisjunctiveTrie search of ToolGen and the paper) adds raw log-softmax
// values, the mask applied after; the two differ by the log of each
// step's allowed mass: the same order for flat tokens and for the API
// step, possibly not over whole hierarchical paths; Hugging Face's search
// also scores the end token after the last tool token, which lacuna does
// not ask for. The node's note says so. With vLLM's default raw_logprobs
// top_logprobs ranks the whole vocabulary before the mask, so allowed
// tokens below other ones go unlisted: an entry outside the allowed set
// fails the node (before its output is written), naming the fix.
//
// Free decoding with a beam searches one token per step and stops there
// (flat: one step, hierarchical: two), where Hugging Face's beam search
// runs each beam to its end token and scores whole sequences: the
// probability of ending after a tool token is left out, and there is no
// length normalisation. The note says so too.
//
// Step 2 (hierarchical, and free with a beam) continues step 1's token.
// Through the completions API the token is appended to the prompt text:
// the server tokenises it back to the same token (it is an added token),
// but the prompt is sent without the model's chat template. Through the
// chat API the token is a final assistant message with
// continue_final_message: a chat template that rewrites assistant turns
// (Llama-3's trims their whitespace, Qwen3's adds an empty think block)
// may make the prefix differ from what step 1 generated.
type parametricType struct {
	nodes.Static[parametricConfig, RetrieveRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed       = parametricType{}
	_ nodes.Documented  = parametricType{}
	_ nodes.Validator   = parametricType{}
	_ nodes.Resolver    = parametricType{}
	_ nodes.CallPlanner = parametricType{}
)

func (parametricType) Name() string { return "retrieve_parametric" }

// Version 2: rankings matched by token id, raw_logprobs answers refused,
// free beam outputs read with return_tokens_as_token_ids dropped, free
// answers parsed from the last open before a close, hierarchical tokens
// from the titles.
func (parametricType) Version() string { return "2" }
func (parametricType) Doc() string {
	return "Retrieves tools with a ToolGen-style model (one virtual token per tool, seed 002 §3.3) served by an " +
		"OpenAI-compatible server (vLLM), as retrieve's rows (retriever parametric-constrained or parametric-free) for " +
		"retrieval_eval's constrained/free pairs. Each query is asked with the K.2 retrieval prompt " +
		"(toolsense/prompts/retrieval.txt; prompt = \"none\" sends the bare query) at temperature 0. " +
		"decoding = \"constrained\": lacuna searches, the server scores. token_format = \"flat\" (<<tool_title&&api_title>>): " +
		"one request per query, max_tokens 1, top_logprobs = min(beam, tools), allowed_token_ids = the catalog's tool tokens; " +
		"the tools ranked by log-probability (ties by catalog order), the top k kept. \"hierarchical\" (<<tool_title>><<api_title>>): beam search of width `beam` over the two steps, each a logprobs request " +
		"restricted to the prefix-valid tokens (step 2 continues the API token: completions append it to the prompt, chat " +
		"sends it as a final assistant message with continue_final_message; a chat template that rewrites assistant turns, as " +
		"Llama-3's trim and Qwen3's think block do, may make that prefix differ from step 1's tokens: check the template, or " +
		"use api = \"completions\", which appends the token to the prompt exactly but sends no chat template), scores summed, " +
		"the best `beam` kept. The tools are split into API and endpoint tokens by tool_title and api_title, or, when either " +
		"is missing, by tool_name at its first \"&&\". Scores: each step's log-probabilities as the server gives them after " +
		"the mask (vLLM --logprobs-mode processed_logprobs: renormalised over the step's allowed tokens), summed over the " +
		"steps; Hugging Face's trie-constrained beam search (ToolGen's) sums raw log-softmax values and scores the end token, " +
		"so hierarchical paths may rank differently (flat rankings are the same). A tool " +
		"token the server leaves out of top_logprobs is ranked after every listed one: it is not listed, so a query's list " +
		"may be shorter than k, and counts as not retrieved. The token ids come from `tokens` (a token → id JSON object or " +
		"tokenizer.json); constrained requests set return_tokens_as_token_ids and top_logprobs entries are matched by id " +
		"(by text only when the server ignores it and sends token texts). vLLM needs --max-logprobs ≥ beam, and " +
		"--logprobs-mode processed_logprobs for the top log-probabilities to be taken after the allowed_token_ids mask: an " +
		"entry outside the allowed tokens (raw_logprobs) fails the node, no ranking is written. The first call of each step " +
		"is made alone, so a server that cannot serve the search fails the node after one call. decoding = \"free\": one greedy generation (max_tokens, " +
		"default 64), its virtual tokens read back in order of appearance (hierarchical: an API token followed by one of its " +
		"endpoint tokens), duplicates dropped; tokens that name no catalog tool are counted in the note and the report, " +
		"never listed; scores are empty. decoding = \"free\" with `beam` set: the paper's free-form beam search (§3.3), done " +
		"as the constrained one but unmasked: top_logprobs = beam over the whole vocabulary at each step (flat: one step), " +
		"the best `beam` outputs kept in order; an output that names a catalog tool is listed as its tool_name, any other " +
		"as its raw token text (it holds its rank and never matches an answer); one token per step, no end token, no length " +
		"normalisation. Free decoding reads tokens by text: return_tokens_as_token_ids in the model's params is dropped " +
		"from its requests. Calls go through the store's call cache."
}

func (parametricType) Validate(cfg any) error {
	c := cfg.(*parametricConfig)
	switch c.Decoding {
	case constrainedDecoding:
		if c.Tokens == "" && c.Trained == nil {
			return nodes.Errorf("tokens", "Token ids needed", "constrained decoding restricts the server to the catalog's tool tokens by id: set tokens = \"PATH\" to the model's added_tokens.json or tokenizer.json.")
		}
		if c.MaxTokens != nil {
			return nodes.Errorf("max_tokens", "max_tokens is for free decoding", "constrained decoding asks one token per step.")
		}
	case freeDecoding:
		if c.Tokens != "" {
			return nodes.Errorf("tokens", "tokens is for constrained decoding", "free decoding does not restrict the server; remove tokens.")
		}
		if c.Beam != nil && c.MaxTokens != nil {
			return nodes.Errorf("max_tokens", "max_tokens is for greedy free decoding", "with beam set, free decoding searches one token per step.")
		}
	default:
		return nodes.Errorf("decoding", "Unknown decoding", "%q: use \"constrained\" or \"free\".", c.Decoding)
	}
	switch {
	case c.format() != ts.FlatTokens && c.format() != ts.HierarchicalTokens:
		return nodes.Errorf("token_format", "Unknown token format", "%q: use \"flat\" (<<API&&ENDPOINT>>) or \"hierarchical\" (<<API>><<ENDPOINT>>).", c.TokenFormat)
	case c.beam() < 1:
		return nodes.Errorf("beam", "Invalid beam", "beam is the search's width, at least 1; got %d.", c.beam())
	case c.k() < 1:
		return nodes.Errorf("k", "Invalid k", "k is the number of tools kept per query, at least 1; got %d.", c.k())
	case (c.Decoding == constrainedDecoding || c.freeBeam()) && c.k() > c.beam():
		return nodes.Errorf("k", "k above beam", "a beam search keeps at most beam = %d outputs; got k = %d.", c.beam(), c.k())
	case c.prompt() != "k2" && c.prompt() != "none":
		return nodes.Errorf("prompt", "Unknown prompt", "%q: use \"k2\" (seed 002 Appendix K.2) or \"none\" (the bare query, the TG configuration).", c.Prompt)
	case c.MaxTokens != nil && *c.MaxTokens < 1:
		return nodes.Errorf("max_tokens", "Invalid max_tokens", "max_tokens must be at least 1.")
	case c.Limit != nil && *c.Limit < 1:
		return nodes.Errorf("limit", "Invalid limit", "limit must be at least 1.")
	}
	open, close := c.spelling()
	if open == "" || close == "" {
		return nodes.Errorf("token_open", "Empty token spelling", "token_open and token_close must not be empty: free decoding finds tokens by them.")
	}
	return nil
}

// parametricPinned is what Resolve fixed: the model as its server
// reported it and the token ids (constrained decoding).
type parametricPinned struct {
	model *llmenv.Model
	ids   map[string]int // token text → id
}

// Resolve reads the token ids (constrained decoding) and checks the model
// against its server. The identity is the model's, the digest of the
// tokens file and that of the retrieval prompt.
func (parametricType) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	c := r.Config().(*parametricConfig)
	p := &parametricPinned{}
	id := map[string]string{}
	if c.Tokens != "" {
		path := c.Tokens
		if !filepath.IsAbs(path) {
			path = filepath.Join(r.Dir(), path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, nodes.Errorf("tokens", "Cannot read the token ids", "%v", err)
		}
		if p.ids, err = ts.ReadTokenIDs(b); err != nil {
			return nil, nodes.Errorf("tokens", "Invalid token ids", "%s: %v", c.Tokens, err)
		}
		id["tokens"] = digest(b)
	}
	m, mid, err := llmenv.Resolve(ctx, r, "model", "model", c.Model)
	if err != nil {
		return nil, err
	}
	p.model = m
	for k, v := range mid {
		id[k] = v
	}
	if c.prompt() == "k2" {
		id["prompt"] = ts.RetrievalPromptDigest()
	}
	return &nodes.Pinned{Identity: id, Value: p}, nil
}

// digest is the tokens file's identity: "sha256:" and the first 8 bytes
// of its SHA-256 in hex (ts.RetrievalPromptDigest's encoding).
func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:8])
}

// searcher builds the requests of one node's search; search (the
// catalog's trie, the beam, the token ids) reads their answers. It is
// not mutated after newSearcher.
type searcher struct {
	c      *parametricConfig
	p      *parametricPinned
	trie   *ts.Trie
	search *ts.Search
	base   llm.Request
	// flatIDs / apiIDs / endpointIDs are the allowed ids of each step.
	flatIDs     string
	apiIDs      string
	endpointIDs []string
}

func newSearcher(c *parametricConfig, p *parametricPinned, tools []CatalogRow) (*searcher, error) {
	open, close := c.spelling()
	tr, err := ts.NewTrie(tools, c.format(), open, close)
	if err != nil {
		return nil, nodes.Errorf("token_format", "Tool without API and endpoint", "%v", err)
	}
	s := &searcher{c: c, p: p, trie: tr, search: &ts.Search{Trie: tr, Beam: c.beam()}, base: p.model.Request()}
	zero := 0.0
	s.base.Temperature = &zero
	s.base.Params = maps.Clone(s.base.Params)
	if s.base.Params == nil {
		s.base.Params = map[string]string{}
	}
	for _, f := range []string{"allowed_token_ids", "continue_final_message", "add_generation_prompt"} {
		if _, ok := s.base.Params[f]; ok {
			return nil, fmt.Errorf("model %s: params sets %s, which retrieve_parametric sets itself", p.model.Config.ID, f)
		}
	}
	// Constrained decoding matches the top log-probabilities by id; free
	// decoding reads tokens by their text (a free beam continues a first
	// token as text), so a model block shared by both may set it: it is
	// dropped for free decoding, set for constrained.
	delete(s.base.Params, tokenIDsParam)
	if c.freeBeam() {
		s.base.MaxTokens = 1
		return s, nil
	}
	if c.Decoding == freeDecoding {
		switch {
		case c.MaxTokens != nil:
			s.base.MaxTokens = *c.MaxTokens
		case s.base.MaxTokens == 0:
			s.base.MaxTokens = defaultFreeMaxTokens
		}
		return s, nil
	}
	s.base.MaxTokens = 1
	s.base.Params[tokenIDsParam] = "true"
	s.search.ByID = make(map[int]string, len(p.ids))
	for text, id := range p.ids {
		s.search.ByID[id] = text
	}
	list := func(tokens []string) (string, error) {
		ids, err := ts.TokenIDs(tokens, p.ids)
		if err != nil {
			return "", nodes.Errorf("tokens", "Catalog tokens without an id", "%v: the model does not know these tools, or token_format / token_open / token_close spell them differently", err)
		}
		b, _ := json.Marshal(ids) // ints always encode
		return string(b), nil
	}
	if tr.Flat {
		toks := make([]string, 0, len(tr.Tool))
		for tok := range tr.Tool {
			toks = append(toks, tok)
		}
		s.flatIDs, err = list(toks)
		return s, err
	}
	toks := make([]string, len(tr.APIs))
	for i, a := range tr.APIs {
		toks[i] = a.Token
	}
	if s.apiIDs, err = list(toks); err != nil {
		return nil, err
	}
	s.endpointIDs = make([]string, len(tr.APIs))
	for i, a := range tr.APIs {
		if s.endpointIDs[i], err = list(a.Order); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// text is the user turn of a query.
func (s *searcher) text(query string) string {
	if s.c.prompt() == "none" {
		return query
	}
	return ts.RetrievalPrompt(query)
}

// call is the request for a query: the first step (apiToken ""), or the
// endpoint step after apiToken (hierarchical), restricted to allowedIDs
// with n top log-probabilities (constrained decoding; n = 0 for free).
func (s *searcher) call(query, apiToken, allowedIDs string, n int) llm.Call {
	rq := s.base
	rq.Params = make(map[string]string, len(s.base.Params)+3)
	for k, v := range s.base.Params {
		rq.Params[k] = v
	}
	text := s.text(query)
	if rq.API == "completions" {
		sys := s.p.model.Config.System
		if sys != nil && *sys != "" {
			text = *sys + "\n\n" + text
		}
		rq.Prompt = text + apiToken
	} else {
		rq.Messages = []llm.Message{{Role: "user", Content: text}}
		if sys := s.p.model.Config.System; sys != nil && *sys != "" {
			rq.Messages = append([]llm.Message{{Role: "system", Content: *sys}}, rq.Messages...)
		}
		if apiToken != "" {
			rq.Messages = append(rq.Messages, llm.Message{Role: "assistant", Content: apiToken})
			rq.Params["continue_final_message"] = "true"
			rq.Params["add_generation_prompt"] = "false"
		}
	}
	if allowedIDs != "" {
		rq.Params["allowed_token_ids"] = allowedIDs
	}
	rq.Logprobs = n
	if len(rq.Params) == 0 {
		rq.Params = nil
	}
	return llm.Call{Request: rq}
}

// first is a query's first call.
func (s *searcher) first(query string) llm.Call {
	switch {
	case s.c.Decoding == freeDecoding && !s.c.freeBeam():
		return s.call(query, "", "", 0)
	case s.c.Decoding == freeDecoding:
		return s.call(query, "", "", s.c.beam())
	case s.trie.Flat:
		return s.call(query, "", s.flatIDs, min(s.c.beam(), len(s.trie.Tool)))
	}
	return s.call(query, "", s.apiIDs, min(s.c.beam(), len(s.trie.APIs)))
}

// second is the endpoint step of a hierarchical search after API a.
func (s *searcher) second(query string, a int) llm.Call {
	return s.call(query, s.trie.APIs[a].Token, s.endpointIDs[a], min(s.c.beam(), len(s.trie.APIs[a].Order)))
}

// freeSecond is the second step of a free beam search after a first
// token of any text.
func (s *searcher) freeSecond(query, prefix string) llm.Call {
	return s.call(query, prefix, "", s.c.beam())
}

// maskHeld checks that a constrained step's answer is one of the tokens
// its allowed_token_ids allowed (allowed maps their texts): a server that
// ignores the field (every server but vLLM: llama.cpp's and
// llama-cpp-python's, silently) answers from the whole vocabulary, and
// its top log-probabilities rank tokens the search never asked about.
// The error names the server as it names itself, not vLLM's logprobs
// mode (ts.TopOf's diagnosis, for a server that did apply the mask).
func (s *searcher) maskHeld(resp *llm.Response, allowed map[string]int) error {
	tok := resp.Text
	if len(resp.Logprobs) > 0 {
		tok = resp.Logprobs[0].Token
	}
	text := tok
	if id, ok := strings.CutPrefix(tok, "token_id:"); ok {
		n, err := strconv.Atoi(id)
		if err != nil {
			return nil // not an id: ts.TopOf reports what it cannot read
		}
		text = s.search.ByID[n]
	}
	if _, ok := allowed[text]; ok {
		return nil
	}
	who := "the server at " + llm.RedactURL(s.p.model.Endpoint.BaseURL)
	if resp.Model != "" {
		who += fmt.Sprintf(" (it calls itself %q", resp.Model)
		if resp.Server != "" {
			who += ", Server: " + resp.Server
		}
		who += ")"
	}
	return fmt.Errorf("the answer %q is none of the %d tokens the request's allowed_token_ids allowed: %s ignored allowed_token_ids "+
		"and answered from the whole vocabulary (only vLLM applies the field; llama.cpp's and llama-cpp-python's servers ignore it silently), "+
		"so its top log-probabilities do not rank the tools: constrained decoding needs a server that applies allowed_token_ids. "+
		"The answer stays in the call cache under this model's identity: once served by such a server, set or change the model block's seed, or run lacuna gc --calls",
		tok, len(allowed), who)
}

// readQueries reads the catalog and the RRB queries (the first Limit) as
// rows without rankings.
func (t parametricType) readQueries(r nodes.Run) ([]CatalogRow, []RetrieveRow, error) {
	c := t.Config(r)
	cin, err := r.Input(c.Catalog)
	if err != nil {
		return nil, nil, err
	}
	tools, err := artifacts.ReadAll[CatalogRow](cin)
	if err != nil {
		return nil, nil, fmt.Errorf("catalog %s: %w", c.Catalog, err)
	}
	if len(tools) == 0 {
		return nil, nil, fmt.Errorf("catalog %s has no tools", c.Catalog)
	}
	inCatalog := make(map[string]bool, len(tools))
	for _, tool := range tools {
		inCatalog[tool.ToolName] = true
	}
	qin, err := r.Input(c.Queries)
	if err != nil {
		return nil, nil, err
	}
	cols, err := columns(qin, "sample_id", "query", "tool", "complexity")
	if err != nil {
		return nil, nil, fmt.Errorf("queries %s: %w", c.Queries, err)
	}
	if c.Limit != nil && *c.Limit < len(cols) {
		cols = cols[:*c.Limit]
	}
	retriever := retrieverConstrained
	if c.Decoding == freeDecoding {
		retriever = retrieverFreeDecoding
	}
	rows := make([]RetrieveRow, len(cols))
	for i, v := range cols {
		row := RetrieveRow{SampleID: text(v[0]), Query: text(v[1]), Tier: text(v[3]), Retriever: retriever, Answers: []string{}, Ranked: []string{}, Scores: []float64{}}
		answers, err := ts.DecodeTools([]byte(text(v[2])))
		if err != nil {
			return nil, nil, fmt.Errorf("queries %s row %d (sample_id %s) tool: %w", c.Queries, i+1, row.SampleID, err)
		}
		for _, tool := range answers {
			if tool.ToolName == nil || *tool.ToolName == "" || *tool.ToolName == "None" {
				return nil, nil, fmt.Errorf("queries %s row %d (sample_id %s): an answer tool has no tool_name", c.Queries, i+1, row.SampleID)
			}
			row.Answers = append(row.Answers, *tool.ToolName)
			if !inCatalog[*tool.ToolName] {
				row.AnswersNotInCatalog++
			}
		}
		rows[i] = row
	}
	return tools, rows, nil
}

// callError adds what a real server needs to an error of a logprobs call
// (constrained, or free with a beam) the server refused.
func callError(c *parametricConfig, err error) error {
	var se *llm.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusBadRequest {
		return err
	}
	switch {
	case c.Decoding == constrainedDecoding:
		return fmt.Errorf("%w (constrained decoding asks for top_logprobs = beam (%d) and sends allowed_token_ids: vLLM must run with --max-logprobs ≥ %d)", err, c.beam(), c.beam())
	case c.freeBeam():
		return fmt.Errorf("%w (free decoding with a beam asks for top_logprobs = beam (%d): vLLM must run with --max-logprobs ≥ %d)", err, c.beam(), c.beam())
	}
	return err
}

// FreeReport is what free decoding read back, attached to the node's
// provenance as "free_decoding".
type FreeReport struct {
	Queries        int      `json:"queries"`
	NoTool         int      `json:"queries_without_a_tool"`
	Unknown        int      `json:"unknown_tokens"`
	UnknownQueries int      `json:"queries_with_unknown_tokens"`
	Duplicates     int      `json:"duplicate_tools_dropped"`
	Examples       []string `json:"unknown_examples,omitempty"` // the first 10
}

// Run asks every query's first step (all queries at once, at most the
// endpoint's concurrency in flight), then, for hierarchical constrained
// decoding, every beam's endpoint step. Each call is answered from the
// store's call cache when it holds it, so a re-run repeats no completed
// call. The first failing call stops the node.
func (t parametricType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	p, err := c.served(r, r.Pinned().(*parametricPinned))
	if err != nil {
		return err
	}
	tools, rows, err := t.readQueries(r)
	if err != nil {
		return err
	}
	s, err := newSearcher(c, p, tools)
	if err != nil {
		return err
	}
	client := p.model.Client(r)
	conc := p.model.Endpoint.Concurrency
	// do makes calls, the first alone: an answer each cannot read (a
	// server without log-probabilities, or one ranking before the mask)
	// fails the node after one call, not after all of them.
	do := func(calls []llm.Call, what func(i int) string, each func(i int, resp *llm.Response) error) error {
		var firstErr error
		done := 0
		for _, part := range [][2]int{{0, min(1, len(calls))}, {min(1, len(calls)), len(calls)}} {
			done += llmenv.DoAll(ctx, r, client, calls[part[0]:part[1]], conc, true, func(i int, resp *llm.Response, err error) {
				i += part[0]
				if err == nil {
					err = each(i, resp)
				}
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", what(i), callError(c, err))
				}
			})
			if firstErr == nil {
				firstErr = ctx.Err()
			}
			if firstErr != nil {
				return fmt.Errorf("%w; %d of %d calls answered and cached in the store: a re-run makes only the missing", firstErr, done, len(calls))
			}
		}
		return nil
	}
	query := func(i int) string { return "query " + rows[i].SampleID }
	calls := make([]llm.Call, len(rows))
	for i, row := range rows {
		calls[i] = s.first(row.Query)
	}
	var free FreeReport
	var beams [][]ts.Candidate
	var freeBeams [][]ts.FreeOutput
	err = do(calls, query, func(i int, resp *llm.Response) error {
		switch {
		case c.freeBeam():
			top, err := s.search.FreeTop(resp)
			if err != nil {
				return err
			}
			if !s.trie.Flat {
				if freeBeams == nil {
					freeBeams = make([][]ts.FreeOutput, len(rows))
				}
				freeBeams[i] = top
				return nil
			}
			for j := range top {
				top[j].Name = s.trie.Named(top[j].Name, "")
			}
			setOutputs(&rows[i], top, c.k())
		case c.Decoding == freeDecoding:
			found, unknown, dups := s.trie.FreeParse(resp.Text)
			for _, tool := range found[:min(len(found), c.k())] {
				rows[i].Ranked = append(rows[i].Ranked, tools[tool].ToolName)
			}
			free.Duplicates += dups
			free.Unknown += len(unknown)
			if len(unknown) > 0 {
				free.UnknownQueries++
			}
			if len(found) == 0 {
				free.NoTool++
			}
			for _, u := range unknown {
				if len(free.Examples) < 10 {
					free.Examples = append(free.Examples, u)
				}
			}
		case s.trie.Flat:
			if err := s.maskHeld(resp, s.trie.Tool); err != nil {
				return err
			}
			ranked, err := s.search.RankFlat(resp)
			if err != nil {
				return err
			}
			setRanking(&rows[i], tools, ranked, c.k())
		default:
			if err := s.maskHeld(resp, s.trie.API); err != nil {
				return err
			}
			b, err := s.search.APIBeams(resp)
			if err != nil {
				return err
			}
			if beams == nil {
				beams = make([][]ts.Candidate, len(rows))
			}
			beams[i] = b
		}
		return nil
	})
	if err != nil {
		return err
	}
	if beams != nil {
		type step struct{ q, b int }
		var steps []step
		var calls2 []llm.Call
		for q, bs := range beams {
			for b := range bs {
				steps = append(steps, step{q, b})
				calls2 = append(calls2, s.second(rows[q].Query, bs[b].Idx))
			}
		}
		cands := make([][]ts.Candidate, len(rows))
		err = do(calls2, func(i int) string {
			st := steps[i]
			return fmt.Sprintf("%s, endpoint step after %s", query(st.q), s.trie.APIs[beams[st.q][st.b].Idx].Token)
		}, func(i int, resp *llm.Response) error {
			st := steps[i]
			if err := s.maskHeld(resp, s.trie.APIs[beams[st.q][st.b].Idx].Endpoints); err != nil {
				return err
			}
			ext, err := s.search.Endpoints(beams[st.q][st.b], resp)
			cands[st.q] = append(cands[st.q], ext...)
			return err
		})
		if err != nil {
			return err
		}
		for q, cs := range cands {
			slices.SortFunc(cs, ts.ByScore)
			setRanking(&rows[q], tools, cs[:min(len(cs), c.beam())], c.k())
		}
	}
	if freeBeams != nil {
		type step struct{ q, b int }
		var steps []step
		var calls2 []llm.Call
		for q, bs := range freeBeams {
			for b := range bs {
				steps = append(steps, step{q, b})
				calls2 = append(calls2, s.freeSecond(rows[q].Query, bs[b].Name))
			}
		}
		outs := make([][]ts.FreeOutput, len(rows))
		err = do(calls2, func(i int) string {
			st := steps[i]
			return fmt.Sprintf("%s, second step after %q", query(st.q), freeBeams[st.q][st.b].Name)
		}, func(i int, resp *llm.Response) error {
			st := steps[i]
			first := freeBeams[st.q][st.b]
			top, err := s.search.FreeTop(resp)
			for j, o := range top {
				outs[st.q] = append(outs[st.q], ts.FreeOutput{Name: s.trie.Named(first.Name, o.Name), Score: first.Score + o.Score, Pos: st.b*c.beam() + j})
			}
			return err
		})
		if err != nil {
			return err
		}
		for q, cands := range outs {
			slices.SortFunc(cands, func(a, b ts.FreeOutput) int {
				if c := cmp.Compare(b.Score, a.Score); c != 0 {
					return c
				}
				return cmp.Compare(a.Pos, b.Pos)
			})
			setOutputs(&rows[q], cands[:min(len(cands), c.beam())], c.k())
		}
	}
	st := client.Stats()
	r.Report("usage", st)
	short := 0
	for _, row := range rows {
		if len(row.Ranked) < c.k() {
			short++
		}
	}
	calls0 := fmt.Sprintf("%d calls made, %d cached", st.Calls, st.Cached)
	switch {
	case c.freeBeam():
		valid := 0
		for _, row := range rows {
			for _, name := range row.Ranked {
				if s.trie.IsTool(name) {
					valid++
				}
			}
		}
		r.Note("%d queries, free decoding (%s tokens, beam %d), top %d: %d of %d outputs name a catalog tool; one token per step (%s), scores are summed log-probabilities with no end token and no length normalisation, where Hugging Face's beam search runs each beam to its end token; %s",
			len(rows), c.format(), c.beam(), c.k(), valid, listed(rows), steps(s.trie.Flat), calls0)
	case c.Decoding == freeDecoding:
		r.Report("free_decoding", free)
		r.Note("%d queries, free decoding (%s tokens, greedy): %d without a catalog tool, %d unknown tool tokens in %d queries, %d duplicates dropped; %s",
			len(rows), c.format(), free.NoTool, free.Unknown, free.UnknownQueries, free.Duplicates, calls0)
	default:
		r.Note("%d queries, constrained decoding (%s tokens, beam %d), top %d: %d queries with fewer than %d tools listed; %s; %s",
			len(rows), c.format(), c.beam(), c.k(), short, c.k(), scoreNote(s.trie.Flat), calls0)
	}
	return t.Write(r, rows)
}

// steps says how many tokens a free beam search takes.
func steps(flat bool) string {
	if flat {
		return "flat: one step"
	}
	return "hierarchical: two steps"
}

// scoreNote says what a constrained search's scores are, and how they
// differ from Hugging Face's trie-constrained beam search (ToolGen's).
func scoreNote(flat bool) string {
	if flat {
		return "scores are the server's log-probabilities after the allowed_token_ids mask (processed_logprobs: renormalised over the catalog's tokens; the order is Hugging Face's)"
	}
	return "scores are the two steps' log-probabilities summed, each renormalised over its allowed tokens (processed_logprobs), where Hugging Face's trie search sums raw log-softmax values and scores the end token: whole paths may rank differently"
}

// setOutputs writes a free beam search's best k outputs into a row.
func setOutputs(row *RetrieveRow, outs []ts.FreeOutput, k int) {
	for _, o := range outs[:min(len(outs), k)] {
		row.Ranked = append(row.Ranked, o.Name)
		row.Scores = append(row.Scores, o.Score)
	}
}

// listed counts the entries of the rows' rankings.
func listed(rows []RetrieveRow) int {
	n := 0
	for _, row := range rows {
		n += len(row.Ranked)
	}
	return n
}

// setRanking writes a search's best k into a row.
func setRanking(row *RetrieveRow, tools []CatalogRow, ranked []ts.Candidate, k int) {
	for _, sc := range ranked[:min(len(ranked), k)] {
		row.Ranked = append(row.Ranked, tools[sc.Idx].ToolName)
		row.Scores = append(row.Scores, sc.Score)
	}
}

// CallsModels: retrieve_parametric always calls its model.
func (parametricType) CallsModels(any) bool { return true }

// PlanCalls counts the calls a run would make and those the call cache
// holds. A hierarchical beam search's second-step calls follow from its
// first step's answer: when that is cached they are counted exactly, else
// as min(beam, APIs) calls (free decoding: beam calls) not cached, an
// upper bound, as they are when the cached answer cannot be read (no
// log-probabilities: the run fails on it).
func (t parametricType) PlanCalls(ctx context.Context, r nodes.Run) ([]nodes.CallPlan, error) {
	c := t.Config(r)
	// Trained weights are another model to the call cache.
	p, err := c.served(r, r.Pinned().(*parametricPinned))
	if err != nil {
		return nil, err
	}
	tools, rows, err := t.readQueries(r)
	if err != nil {
		return nil, err
	}
	s, err := newSearcher(c, p, tools)
	if err != nil {
		return nil, err
	}
	client := p.model.Client(r)
	var calls []llm.Call
	for _, row := range rows {
		first := s.first(row.Query)
		calls = append(calls, first)
		if s.trie.Flat || (c.Decoding == freeDecoding && !c.freeBeam()) {
			continue
		}
		var resp *llm.Response
		if client.Cached(first) {
			resp, _ = client.Do(ctx, first) // a replay: no call is made
		}
		// An answer the run cannot read (no log-probabilities) counts
		// as unanswered: the upper bound.
		var top []ts.FreeOutput
		var bs []ts.Candidate
		if resp != nil {
			if c.freeBeam() {
				top, err = s.search.FreeTop(resp)
			} else {
				bs, err = s.search.APIBeams(resp)
			}
			if err != nil {
				resp = nil
			}
		}
		switch {
		case c.freeBeam() && resp != nil:
			for _, o := range top {
				calls = append(calls, s.freeSecond(row.Query, o.Name))
			}
		case c.freeBeam():
			for range c.beam() {
				calls = append(calls, s.freeSecond(row.Query, ""))
			}
		case resp != nil:
			for _, b := range bs {
				calls = append(calls, s.second(row.Query, b.Idx))
			}
		default:
			for a := range min(c.beam(), len(s.trie.APIs)) {
				calls = append(calls, s.second(row.Query, a))
			}
		}
	}
	return []nodes.CallPlan{llmenv.Estimate(client, p.model.Config.ID, calls, 0)}, nil
}

// served is p with the trained weights the config names served (nil
// Trained: p): the model is the trained one, and without a tokens file
// constrained decoding reads the token ids from the trained directory's
// tokenizer.json (ToolGen's virtual tokens are added there).
func (c *parametricConfig) served(r nodes.Run, p *parametricPinned) (*parametricPinned, error) {
	if c.Trained == nil {
		return p, nil
	}
	m, err := p.model.WithTrained(r, "trained", c.Trained)
	if err != nil {
		return nil, err
	}
	q := *p
	q.model = m
	if c.Decoding == constrainedDecoding && c.Tokens == "" {
		t, err := llmenv.ReadTrained(r, *c.Trained)
		if err != nil {
			return nil, err
		}
		dir, err := llmenv.Unpack(r, t.Blob)
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
		if err != nil {
			return nil, nodes.Errorf("trained", "No tokenizer", "%s's weights have no tokenizer.json to read the tool tokens' ids from (set tokens = PATH): %v", c.Trained.Node, err)
		}
		if q.ids, err = ts.ReadTokenIDs(b); err != nil {
			return nil, nodes.Errorf("trained", "Invalid tokenizer", "%s: tokenizer.json: %v", c.Trained.Node, err)
		}
	}
	return &q, nil
}
