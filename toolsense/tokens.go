package toolsense

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The formats of ToolGen virtual tokens (seed 002 §3.3).
const (
	// FlatTokens is one token per tool: open + tool_name + close,
	// <<API&&ENDPOINT>>.
	FlatTokens = "flat"
	// HierarchicalTokens is two tokens per tool, the API's then the
	// endpoint's: <<API>>, <<ENDPOINT>>.
	HierarchicalTokens = "hierarchical"
)

// The default spelling of a ToolGen virtual token around its name.
const (
	DefaultTokenOpen  = "<<"
	DefaultTokenClose = ">>"
)

// ToolTokens spells a tool's ToolGen virtual tokens, as retrieve_parametric
// and probe_eval both name them: flat (any format but HierarchicalTokens),
// one token open+tool_name+close (<<API&&ENDPOINT>>); hierarchical, the
// API token then the endpoint token (<<API>>, <<ENDPOINT>>) from
// tool_title and api_title, or, when either is missing, from tool_name
// split at its first "&&" (a title holding "&&" is split right only by
// the titles). A hierarchical tool with neither is an error.
func ToolTokens(tool CatalogRow, format, open, close string) ([]string, error) {
	if format != HierarchicalTokens {
		return []string{open + tool.ToolName + close}, nil
	}
	a, e := tool.ToolTitle, tool.APITitle
	if a == "" || e == "" {
		var ok bool
		if a, e, ok = strings.Cut(tool.ToolName, "&&"); !ok {
			return nil, fmt.Errorf("tool %q has no tool_title and api_title, nor a \"&&\" in its tool_name to split it at: hierarchical tokens need both parts", tool.ToolName)
		}
	}
	return []string{open + a + close, open + e + close}, nil
}

// ReadTokenIDs reads a model's token ids: a JSON object from token text
// to id (Hugging Face's added_tokens.json), or a tokenizer.json, whose
// added_tokens list it reads (virtual tokens are added tokens). Two texts
// with one id, or one text twice, is an error (the same on every run).
func ReadTokenIDs(b []byte) (map[string]int, error) {
	var flat map[string]int
	if err := json.Unmarshal(b, &flat); err == nil {
		return flat, checkIDs(flat)
	}
	var tok struct {
		AddedTokens []struct {
			ID      *int    `json:"id"`
			Content *string `json:"content"`
		} `json:"added_tokens"`
	}
	if err := json.Unmarshal(b, &tok); err != nil || tok.AddedTokens == nil {
		return nil, errors.New("neither a JSON object from token text to id (added_tokens.json) nor a tokenizer.json with added_tokens")
	}
	ids := map[string]int{}
	for i, t := range tok.AddedTokens {
		if t.ID == nil || t.Content == nil {
			return nil, fmt.Errorf("added_tokens[%d] has no id or no content", i)
		}
		if _, dup := ids[*t.Content]; dup {
			return nil, fmt.Errorf("added token %q is listed twice", *t.Content)
		}
		ids[*t.Content] = *t.ID
	}
	return ids, checkIDs(ids)
}

// checkIDs fails when two texts share an id, naming the first such pair
// in text order (the same error on every run).
func checkIDs(ids map[string]int) error {
	texts := slices.Sorted(maps.Keys(ids))
	seen := map[int]string{}
	for _, text := range texts {
		id := ids[text]
		if other, dup := seen[id]; dup {
			return fmt.Errorf("tokens %q and %q have the same id %d", other, text, id)
		}
		seen[id] = text
	}
	return nil
}

// TokenIDs is the ids of tokens in ids (ReadTokenIDs' map), ascending. A
// token without an id is an error saying how many lack one and naming
// the first few in text order.
func TokenIDs(tokens []string, ids map[string]int) ([]int, error) {
	out := make([]int, 0, len(tokens))
	var missing []string
	for _, tok := range tokens {
		id, ok := ids[tok]
		if !ok {
			missing = append(missing, tok)
			continue
		}
		out = append(out, id)
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("%d catalog tokens have no id in the tokens file (first: %q)", len(missing), missing[:min(3, len(missing))])
	}
	slices.Sort(out)
	return out, nil
}
