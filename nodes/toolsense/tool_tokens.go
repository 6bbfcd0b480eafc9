package toolsense

import (
	"fmt"
	"strings"
)

// The default spelling of a ToolGen virtual token around its name.
const (
	defaultTokenOpen  = "<<"
	defaultTokenClose = ">>"
)

// toolTokens spells a tool's ToolGen virtual tokens, as retrieve_parametric
// and probe_eval both name them: flat, one token open+tool_name+close
// (<<API&&ENDPOINT>>); hierarchical, the API token then the endpoint token,
// tool_name split at its first "&&" (<<API>>, <<ENDPOINT>>). A
// hierarchical tool_name without "&&" is an error.
func toolTokens(toolName, format, open, close string) ([]string, error) {
	if format != hierarchicalTokens {
		return []string{open + toolName + close}, nil
	}
	a, e, ok := strings.Cut(toolName, "&&")
	if !ok {
		return nil, fmt.Errorf("tool %q has no \"&&\" to split into API and endpoint tokens", toolName)
	}
	return []string{open + a + close, open + e + close}, nil
}
