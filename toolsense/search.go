package toolsense

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lacuna-dev/lacuna/runners/llm"
)

// Trie is a catalog's tool tokens as a search over them sees it: flat,
// one token per tool (Tool); hierarchical, API tokens (APIs, API) and
// under each its endpoint tokens. A tool is an index into Tools, which is
// in catalog order. NewTrie builds it; it is read-only afterwards, safe
// for concurrent readers.
type Trie struct {
	// Tools is the catalog, in order.
	Tools []CatalogRow
	// Flat says the tokens are FlatTokens (else HierarchicalTokens).
	Flat bool
	// Open and Close spell a token around its name.
	Open, Close string
	// Tool maps a flat token to its tool (flat only).
	Tool map[string]int
	// APIs are the API tokens in first catalog order, and API maps each
	// to its index in APIs (hierarchical only).
	APIs  []API
	API   map[string]int
	names map[string]int // tool_name → tool
}

// API is an API token and the endpoint tokens that may follow it.
type API struct {
	Token string
	// First is the position of the API's first tool in the catalog.
	First int
	// Endpoints maps an endpoint token to its tool; Order lists them in
	// catalog order.
	Endpoints map[string]int
	Order     []string
}

// NewTrie spells the tokens of tools in format (FlatTokens or
// HierarchicalTokens) around open and close (ToolTokens) and builds their
// trie. A hierarchical tool ToolTokens cannot split is an error.
func NewTrie(tools []CatalogRow, format, open, close string) (*Trie, error) {
	t := &Trie{Tools: tools, Flat: format == FlatTokens, Open: open, Close: close, Tool: map[string]int{}, API: map[string]int{}, names: map[string]int{}}
	for i, tool := range tools {
		t.names[tool.ToolName] = i
		toks, err := ToolTokens(tool, format, open, close)
		if err != nil {
			return nil, err
		}
		if t.Flat {
			t.Tool[toks[0]] = i
			continue
		}
		at, et := toks[0], toks[1]
		j, seen := t.API[at]
		if !seen {
			j = len(t.APIs)
			t.API[at] = j
			t.APIs = append(t.APIs, API{Token: at, First: i, Endpoints: map[string]int{}})
		}
		t.APIs[j].Endpoints[et] = i
		t.APIs[j].Order = append(t.APIs[j].Order, et)
	}
	return t, nil
}

// IsTool says whether name is a catalog tool's tool_name.
func (t *Trie) IsTool(name string) bool {
	_, ok := t.names[name]
	return ok
}

// Named is a free-decoding output's entry in a ranking: the tool_name of
// the tool its tokens name (flat: first is one tool token; hierarchical:
// first an API token and second one of its endpoint tokens), or their
// raw text (first + second) when they name none.
func (t *Trie) Named(first, second string) string {
	if t.Flat {
		if i, ok := t.Tool[first]; ok {
			return t.Tools[i].ToolName
		}
		return first
	}
	if a, ok := t.API[first]; ok {
		if i, ok := t.APIs[a].Endpoints[second]; ok {
			return t.Tools[i].ToolName
		}
	}
	return first + second
}

// FreeParse reads a free-decoding answer back to tools: the virtual
// tokens in order of appearance (hierarchical: an API token followed by
// one of its endpoint tokens makes a tool), each tool once. unknown are
// the tokens (or, hierarchical, unpaired API or endpoint tokens) that
// name no catalog tool, in order; dups counts repeated tools dropped.
func (t *Trie) FreeParse(answer string) (tools []int, unknown []string, dups int) {
	open, close := t.Open, t.Close
	var toks []string
	for rest := answer; ; {
		i := strings.Index(rest, open)
		if i < 0 {
			break
		}
		j := strings.Index(rest[i+len(open):], close)
		if j < 0 {
			break
		}
		// The token opens at the last open before its close:
		// "<<<A&&E>>" is "<" then "<<A&&E>>".
		at := i + len(open) + j
		i = strings.LastIndex(rest[:at], open)
		end := at + len(close)
		toks = append(toks, rest[i:end])
		rest = rest[end:]
	}
	seen := map[int]bool{}
	add := func(tool int) {
		if seen[tool] {
			dups++
			return
		}
		seen[tool] = true
		tools = append(tools, tool)
	}
	for i := 0; i < len(toks); i++ {
		if t.Flat {
			if tool, ok := t.Tool[toks[i]]; ok {
				add(tool)
			} else {
				unknown = append(unknown, toks[i])
			}
			continue
		}
		if a, ok := t.API[toks[i]]; ok && i+1 < len(toks) {
			if tool, ok := t.APIs[a].Endpoints[toks[i+1]]; ok {
				add(tool)
				i++
				continue
			}
		}
		unknown = append(unknown, toks[i])
	}
	return tools, unknown, dups
}

// Candidate is one entry of a constrained search: a tool (or, at step 1
// of a hierarchical search, an API) and its summed log-probability.
type Candidate struct {
	Idx   int
	Score float64
	Pos   int // catalog position, for ties
}

// ByScore orders candidates best first: higher score, then earlier
// catalog position.
func ByScore(a, b Candidate) int {
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	return cmp.Compare(a.Pos, b.Pos)
}

// TopOf reads a one-token answer's top log-probabilities as the allowed
// tokens' scores (allowed maps a token to its tool or API; byID a token
// id to its text). Constrained requests ask for return_tokens_as_token_ids,
// so an entry reads "token_id:N" and is matched by its id through the
// tokens file (two tokens of one text stay apart, and the server's way of
// spelling a token does not matter). An entry in any other form (a server
// that ignores return_tokens_as_token_ids) is matched by its text, a
// fallback: there a token the server spells otherwise is outside, and
// two tokens of one text are one entry of the client's map. An entry
// outside the allowed tokens is an error: the server ranked before the
// allowed_token_ids mask (vLLM's raw_logprobs), so its list may leave
// out allowed tokens and its ranking must not be kept.
func TopOf(resp *llm.Response, allowed map[string]int, byID map[int]string) (map[int]float64, error) {
	if len(resp.Logprobs) == 0 || len(resp.Logprobs[0].Top) == 0 {
		return nil, errors.New("the server answered without top log-probabilities: constrained decoding ranks the tool tokens by them (vLLM returns them for logprobs / top_logprobs; a server that does not cannot serve constrained decoding)")
	}
	hits := map[int]float64{}
	var outside []string
	for entry, lp := range resp.Logprobs[0].Top {
		text := entry
		if s, ok := strings.CutPrefix(entry, "token_id:"); ok {
			text = "" // an id the tokens file does not name is outside
			if id, err := strconv.Atoi(s); err == nil {
				text = byID[id]
			}
		}
		i, ok := allowed[text]
		if !ok {
			outside = append(outside, entry)
			continue
		}
		hits[i] = lp
	}
	if len(outside) > 0 {
		slices.Sort(outside)
		return nil, fmt.Errorf("%d of the %d top log-probabilities are of tokens outside the allowed ones (first: %q): the server ranked the whole vocabulary, not the allowed_token_ids it sampled from, so allowed tokens may be missing from its list; run vLLM with --logprobs-mode processed_logprobs (its default, raw_logprobs, ranks before the mask). If it runs so, the server spells the tool tokens differently from the tokens file and ignored return_tokens_as_token_ids. The answer stays in the call cache and fails every re-run: once the server is fixed, set or change the model block's seed (in every call's key; a temperature-0 answer does not depend on it), or run lacuna gc --calls", len(outside), len(resp.Logprobs[0].Top), outside[:min(3, len(outside))])
	}
	return hits, nil
}

// Search reads the answers of a beam search of width Beam over Trie's
// tokens, one step at a time: the caller makes the requests (the first
// step's, then, hierarchical, one endpoint step per API kept) and hands
// each answer here. Scores are the log-probabilities as the server gives
// them, summed over the steps. It is not mutated by its methods.
type Search struct {
	Trie *Trie
	Beam int
	// ByID maps a token id to its text (constrained decoding: the tokens
	// file inverted), for TopOf.
	ByID map[int]string
}

// RankFlat is a flat constrained search's result: the listed tools, best
// first (ByScore), at most Beam.
func (s *Search) RankFlat(resp *llm.Response) ([]Candidate, error) {
	hits, err := TopOf(resp, s.Trie.Tool, s.ByID)
	if err != nil {
		return nil, err
	}
	out := make([]Candidate, 0, len(hits))
	for i, lp := range hits {
		out = append(out, Candidate{Idx: i, Score: lp, Pos: i})
	}
	slices.SortFunc(out, ByScore)
	return out[:min(len(out), s.Beam)], nil
}

// APIBeams is a hierarchical constrained search's first step: the best
// Beam APIs (Idx into Trie.APIs; ties by their first tool's position).
func (s *Search) APIBeams(resp *llm.Response) ([]Candidate, error) {
	hits, err := TopOf(resp, s.Trie.API, s.ByID)
	if err != nil {
		return nil, err
	}
	out := make([]Candidate, 0, len(hits))
	for a, lp := range hits {
		out = append(out, Candidate{Idx: a, Score: lp, Pos: s.Trie.APIs[a].First})
	}
	slices.SortFunc(out, ByScore)
	return out[:min(len(out), s.Beam)], nil
}

// Endpoints extends beam b (an API of APIBeams) by its endpoint step's
// answer: one candidate tool per endpoint listed, scored b's score plus
// the endpoint's, unsorted.
func (s *Search) Endpoints(b Candidate, resp *llm.Response) ([]Candidate, error) {
	hits, err := TopOf(resp, s.Trie.APIs[b.Idx].Endpoints, s.ByID)
	if err != nil {
		return nil, err
	}
	out := make([]Candidate, 0, len(hits))
	for tool, lp := range hits {
		out = append(out, Candidate{Idx: tool, Score: b.Score + lp, Pos: tool})
	}
	return out, nil
}

// FreeOutput is one output of a free beam search: a catalog tool's
// tool_name (Trie.Named), or the raw text of an output that names none.
type FreeOutput struct {
	Name  string
	Score float64
	Pos   int // the order the search met it in, for ties
}

// FreeTop is a free step's answer: every listed token, best first (ties
// by text), at most Beam of them, Pos unset.
func (s *Search) FreeTop(resp *llm.Response) ([]FreeOutput, error) {
	if len(resp.Logprobs) == 0 || len(resp.Logprobs[0].Top) == 0 {
		return nil, errors.New("the server answered without top log-probabilities: free decoding with a beam ranks the first tokens by them (vLLM returns them for logprobs / top_logprobs)")
	}
	out := make([]FreeOutput, 0, len(resp.Logprobs[0].Top))
	for text, lp := range resp.Logprobs[0].Top {
		out = append(out, FreeOutput{Name: text, Score: lp})
	}
	slices.SortFunc(out, func(a, b FreeOutput) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out[:min(len(out), s.Beam)], nil
}
