package toolsense

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// The ToolGen training formats (seed 002 Appendix C.1: the five Stage 1
// memorization formats; Appendix C.2: the Stage 2 retrieval pairs). The
// names are ASCII so that a filter's where can spell them.
const (
	// FormatDescTok: the tool's JSON information → its token(s)
	// (<<API&&ENDPOINT>>, or <<API>><<ENDPOINT>> hierarchical); every
	// configuration.
	FormatDescTok = "desc->tok"
	// FormatTokDesc: the token(s) → the tool's plain-language
	// description (TG-3FM, TG-5FM).
	FormatTokDesc = "tok->desc"
	// FormatDescAPITok: the tool's JSON information → its API token alone,
	// the first hierarchical step (TG-5FM).
	FormatDescAPITok = "desc->api_tok"
	// FormatDescAPITokEndpointTok: the JSON information and the API token
	// → the endpoint token, the second hierarchical step (TG-5FM).
	FormatDescAPITokEndpointTok = "desc+api_tok->endpoint_tok"
	// FormatMCTS: Multi-Choice Tool Selection (Appendix B): the
	// description and K+1 candidate tokens, shuffled → the tool's token
	// (TG-3FM, TG-5FM).
	FormatMCTS = "mcts"
	// FormatQueryTok: a user query → a gold tool's token(s): Stage 2.
	FormatQueryTok = "query->tok"
)

// DefaultMCTSNegatives is the paper's K, the hard negatives beside the
// tool in an MCTS item (Appendix B: K = 4, five options).
const DefaultMCTSNegatives = 4

// ToolGenConfig is one of the paper's training configurations (seed 002
// §4.1, Table 1, Appendix C.3). SystemPrompt says whether every example,
// in both stages, is wrapped in its task prompt (Appendix K: the K.1
// memorization prompts, the K.2 retrieval prompt); without it (TG) a
// Stage 1 input is the tool's JSON information alone and a Stage 2 input
// the bare query. Formats are the Stage 1 formats, in the order the rows
// list them for each tool.
type ToolGenConfig struct {
	Name string
	// TokenFormat is FlatTokens or HierarchicalTokens, as
	// retrieve_parametric's token_format spells it.
	TokenFormat  string
	SystemPrompt bool
	Formats      []string
}

// Prompt is retrieve_parametric's prompt attribute that queries a model
// trained in this configuration as it was trained: "k2" with the system
// prompt, "none" (the bare query) without.
func (c ToolGenConfig) Prompt() string {
	if c.SystemPrompt {
		return "k2"
	}
	return "none"
}

// Has says whether Stage 1 of c includes format.
func (c ToolGenConfig) Has(format string) bool { return slices.Contains(c.Formats, format) }

// toolGenConfigs are Table 1's five configurations. TG-5FM's formats are
// in Table 1's footnote order.
var toolGenConfigs = []ToolGenConfig{
	{Name: "TG", TokenFormat: FlatTokens, Formats: []string{FormatDescTok}},
	{Name: "TG-SP", TokenFormat: FlatTokens, SystemPrompt: true, Formats: []string{FormatDescTok}},
	{Name: "TG-3FM", TokenFormat: FlatTokens, SystemPrompt: true, Formats: []string{FormatDescTok, FormatTokDesc, FormatMCTS}},
	{Name: "TG-H", TokenFormat: HierarchicalTokens, SystemPrompt: true, Formats: []string{FormatDescTok}},
	{Name: "TG-5FM", TokenFormat: HierarchicalTokens, SystemPrompt: true,
		Formats: []string{FormatDescTok, FormatDescAPITok, FormatDescAPITokEndpointTok, FormatTokDesc, FormatMCTS}},
}

// ToolGenConfigNames are the configurations' names in Table 1's order.
func ToolGenConfigNames() []string {
	out := make([]string, len(toolGenConfigs))
	for i, c := range toolGenConfigs {
		out[i] = c.Name
	}
	return out
}

// LookupToolGenConfig is the configuration named name (case-sensitive,
// as Table 1 writes it); ok is false for any other name.
func LookupToolGenConfig(name string) (c ToolGenConfig, ok bool) {
	for _, c := range toolGenConfigs {
		if c.Name == name {
			c.Formats = slices.Clone(c.Formats)
			return c, true
		}
	}
	return ToolGenConfig{}, false
}

// The K.1 memorization prompts (seed 002 Appendix K.1, Figures 11–15), as
// printed; the line breaks the paper's rendering drops are put back where
// retrieval.txt (Figure 16) has its own: one before each placeholder's
// block, one between blocks. Their bytes are in ToolGenPromptDigest.
const (
	descTokPrompt = "You will be provided with the information about the tool in the JSON format. Your task is to predict the tool " +
		"that corresponds to the given tool information. You only need to predict the tool. Please don’t include any additional " +
		"text in your response. The tool information is provided below:\n{tool_info}"
	tokDescPrompt = "You will be provided with a tool representation tokens. Your task is to describe what this tool does in plain " +
		"language. Please don’t include any additional text in your response other than the description. The tool " +
		"representation is provided below:\n{tool_token}"
	descAPITokPrompt = "You will be provided with the information about the tool in the JSON format. Your task is to identify the " +
		"API this tool belongs to and produce its corresponding API token. Only respond with the API token and nothing else. " +
		"The tool information is provided below:\n{tool_info}"
	descAPITokEndpointTokPrompt = "You will be provided with the information about the tool in the JSON format along with its API. " +
		"Your task is to identify the Endpoint this tool belongs to within that API and produce its corresponding Endpoint token. " +
		"Only respond with the Endpoint token and nothing else. The tool information and API are provided below:\n" +
		"Tool Information: {tool_info}\nAPI: {api_token}"
	mctsPrompt = "You will be provided with the description of a tool along with line-separated multiple choice options for the " +
		"tool tokens. Your task is to select the correct tool token that corresponds to the given tool description. Please " +
		"respond with only the correct tool token without any additional text. The tool description and options are provided " +
		"below:\n[START OF TOOL DESCRIPTION]\n{tool_description}\n[END OF TOOL DESCRIPTION]\n[START OF OPTIONS]\n{tool_options}\n" +
		"[END OF OPTIONS]\nFrom the above new line-separated options, select the correct tool. Only respond with the tool " +
		"representation (sequence of tokens that represent tool) and nothing else."
)

// ToolGenPromptDigest is the digest of the K.1 memorization prompts'
// bytes, for the identity of the nodes that write them (the K.2 prompt
// has its own, RetrievalPromptDigest).
func ToolGenPromptDigest() string {
	h := xxhash.New()
	for _, p := range []string{descTokPrompt, tokDescPrompt, descAPITokPrompt, descAPITokEndpointTokPrompt, mctsPrompt} {
		fmt.Fprintf(h, "%d\x00", len(p))
		h.Write([]byte(p))
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// fill replaces the {name} placeholders of prompt in one pass, so a value
// holding a placeholder's text is not filled again.
func fill(prompt string, kv ...string) string {
	return strings.NewReplacer(kv...).Replace(prompt)
}

// ToolInfo is a tool's {tool_info} (Figures 11, 13, 14): the JSON object
// of its tool_title, tool_description, api_title and api_description, in
// that order, missing (empty) fields left out, compact, with <, > and &
// written as themselves. tool_name is left out: it is the two titles
// joined by "&&", the flat token's very text.
func ToolInfo(t CatalogRow) string {
	info := struct {
		ToolTitle       string `json:"tool_title,omitempty"`
		ToolDescription string `json:"tool_description,omitempty"`
		APITitle        string `json:"api_title,omitempty"`
		APIDescription  string `json:"api_description,omitempty"`
	}{t.ToolTitle, t.ToolDescription, t.APITitle, t.APIDescription}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(info) // strings always encode
	return strings.TrimSuffix(b.String(), "\n")
}

// ToolGenExample is one training example: Prompt is the user turn (the
// trainer applies the model's chat template), Completion the assistant's
// answer. Token is the tool's whole token sequence (flat: one token,
// hierarchical: API then endpoint token, written together) and Tokens
// the vocabulary entries it is made of.
type ToolGenExample struct {
	Format     string
	Prompt     string
	Completion string
	ToolName   string
	Token      string
	Tokens     []string
}

// ToolGenData writes a configuration's training examples with one token
// spelling (Open, Close: retrieve_parametric's token_open, token_close)
// and, for MCTS, Negatives hard negatives per item whose options are
// shuffled by Seed. Its methods are pure functions of their arguments.
type ToolGenData struct {
	Config      ToolGenConfig
	Open, Close string
	Negatives   int
	Seed        uint64
}

// tokens are tool's virtual tokens in the configuration's format.
func (d ToolGenData) tokens(tool CatalogRow) ([]string, error) {
	return ToolTokens(tool, d.Config.TokenFormat, d.Open, d.Close)
}

// Vocabulary is the virtual tokens to add to a model's vocabulary for
// tools: each tool's tokens (flat: one; hierarchical: its API token, then
// its endpoint token), distinct, in catalog order. A hierarchical tool
// ToolTokens cannot split is an error.
func (d ToolGenData) Vocabulary(tools []CatalogRow) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, t := range tools {
		toks, err := d.tokens(t)
		if err != nil {
			return nil, err
		}
		for _, tok := range toks {
			if !seen[tok] {
				seen[tok] = true
				out = append(out, tok)
			}
		}
	}
	return out, nil
}

// Memorization is tool's Stage 1 examples, one per format of the
// configuration, in its order:
//
//   - desc->tok: Figure 11 around ToolInfo (without the system prompt,
//     ToolInfo alone) → the whole token sequence;
//   - desc->api_tok: Figure 13 → the API token;
//   - desc+api_tok->endpoint_tok: Figure 14 with ToolInfo and the API
//     token → the endpoint token;
//   - tok->desc: Figure 12 around the token sequence → Description;
//   - mcts: Figure 15 with Description and, one per line, the token
//     sequences of the tool and of the first Negatives tools of pool
//     whose sequence differs from the tool's and from each other's (its
//     hard negatives, nearest first), in the order
//     rand.New(rand.NewPCG(Seed, xxhash(tool_name))).Perm(Negatives+1)
//     (a function of the seed and the tool alone) → the tool's sequence.
//
// A tool without a description has no tok->desc and no mcts example:
// those formats are returned in skipped. A pool with fewer distinct
// negatives than Negatives is an error naming the tool, as is a
// hierarchical tool (or negative) that ToolTokens cannot split.
func (d ToolGenData) Memorization(tool CatalogRow, pool []CatalogRow) (examples []ToolGenExample, skipped []string, err error) {
	toks, err := d.tokens(tool)
	if err != nil {
		return nil, nil, err
	}
	seq := strings.Join(toks, "")
	info := ToolInfo(tool)
	desc := Description(tool)
	ex := func(format, prompt, completion string) {
		examples = append(examples, ToolGenExample{Format: format, Prompt: prompt, Completion: completion,
			ToolName: tool.ToolName, Token: seq, Tokens: toks})
	}
	for _, f := range d.Config.Formats {
		switch f {
		case FormatDescTok:
			p := info
			if d.Config.SystemPrompt {
				p = fill(descTokPrompt, "{tool_info}", info)
			}
			ex(f, p, seq)
		case FormatDescAPITok, FormatDescAPITokEndpointTok:
			if len(toks) != 2 {
				return nil, nil, fmt.Errorf("format %s needs hierarchical tokens; configuration %s has %s tokens", f, d.Config.Name, d.Config.TokenFormat)
			}
			if f == FormatDescAPITok {
				ex(f, fill(descAPITokPrompt, "{tool_info}", info), toks[0])
			} else {
				ex(f, fill(descAPITokEndpointTokPrompt, "{tool_info}", info, "{api_token}", toks[0]), toks[1])
			}
		case FormatTokDesc:
			if desc == "" {
				skipped = append(skipped, f)
				continue
			}
			ex(f, fill(tokDescPrompt, "{tool_token}", seq), desc)
		case FormatMCTS:
			if desc == "" {
				skipped = append(skipped, f)
				continue
			}
			opts, err := d.mctsOptions(tool, seq, pool)
			if err != nil {
				return nil, nil, err
			}
			ex(f, fill(mctsPrompt, "{tool_description}", desc, "{tool_options}", strings.Join(opts, "\n")), seq)
		default:
			return nil, nil, fmt.Errorf("configuration %s: unknown format %q", d.Config.Name, f)
		}
	}
	return examples, skipped, nil
}

// mctsOptions are an MCTS item's options: the tool's sequence seq and
// the first Negatives distinct other sequences of pool, shuffled.
func (d ToolGenData) mctsOptions(tool CatalogRow, seq string, pool []CatalogRow) ([]string, error) {
	if d.Negatives < 1 {
		return nil, errors.New("MCTS needs at least one negative")
	}
	opts := []string{seq}
	seen := map[string]bool{seq: true}
	for _, n := range pool {
		if len(opts) == d.Negatives+1 {
			break
		}
		toks, err := d.tokens(n)
		if err != nil {
			return nil, fmt.Errorf("negative of %q: %w", tool.ToolName, err)
		}
		s := strings.Join(toks, "")
		if seen[s] {
			continue
		}
		seen[s] = true
		opts = append(opts, s)
	}
	if len(opts) < d.Negatives+1 {
		return nil, fmt.Errorf("tool %q: its pool has %d distinct negatives, MCTS needs %d", tool.ToolName, len(opts)-1, d.Negatives)
	}
	perm := rand.New(rand.NewPCG(d.Seed, xxhash.Sum64String(tool.ToolName))).Perm(len(opts))
	out := make([]string, len(opts))
	for i, j := range perm {
		out[i] = opts[j]
	}
	return out, nil
}

// RetrievalInput is a Stage 2 user turn for query: the K.2 prompt around
// it (RetrievalPrompt, what retrieve_parametric sends with prompt "k2")
// with the system prompt, the bare query (prompt "none") without.
func (c ToolGenConfig) RetrievalInput(query string) string {
	if c.SystemPrompt {
		return RetrievalPrompt(query)
	}
	return query
}

// Retrieval is the Stage 2 example of query and one of its gold tools
// (seed 002 Appendix C.2; a query with n gold tools makes n examples,
// Appendix E): RetrievalInput(query) → the tool's token sequence.
func (d ToolGenData) Retrieval(query string, tool CatalogRow) (ToolGenExample, error) {
	toks, err := d.tokens(tool)
	if err != nil {
		return ToolGenExample{}, err
	}
	seq := strings.Join(toks, "")
	return ToolGenExample{Format: FormatQueryTok, Prompt: d.Config.RetrievalInput(query), Completion: seq,
		ToolName: tool.ToolName, Token: seq, Tokens: toks}, nil
}

// GoldToolNames reads a training row's gold tools: a JSON tool object or
// a list of them (an RRB row's tool, DecodeTools), a JSON list of
// tool_name strings, or, when the value does not start with "{" or "["
// (leading white space aside), one tool_name, byte-exact. Repeats are
// dropped, the first kept. No tool, or a tool object without a
// tool_name, is an error.
func GoldToolNames(raw string) ([]string, error) {
	s := strings.TrimSpace(raw)
	var names []string
	switch {
	case s == "":
		return nil, errors.New("no gold tool")
	case s[0] == '{' || s[0] == '[':
		tools, err := DecodeTools([]byte(s))
		if err != nil {
			if s[0] != '[' || json.Unmarshal([]byte(s), &names) != nil {
				return nil, fmt.Errorf("neither a tool object, a list of them nor a list of tool names: %w", err)
			}
			break
		}
		for i, t := range tools {
			if t.ToolName == nil || *t.ToolName == "" || *t.ToolName == "None" {
				return nil, fmt.Errorf("gold tool %d has no tool_name", i+1)
			}
			names = append(names, *t.ToolName)
		}
	default:
		names = []string{raw}
	}
	var out []string
	for _, n := range names {
		if n == "" {
			return nil, errors.New("an empty tool name")
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no gold tool")
	}
	return out, nil
}
