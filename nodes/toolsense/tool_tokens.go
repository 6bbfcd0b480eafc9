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
// (<<API&&ENDPOINT>>); hierarchical, the API token then the endpoint token
// (<<API>>, <<ENDPOINT>>) from tool_title and api_title, or, when either
// is missing, from tool_name split at its first "&&" (a title holding
// "&&" is split right only by the titles). A hierarchical tool with
// neither is an error.
func toolTokens(tool CatalogRow, format, open, close string) ([]string, error) {
	if format != hierarchicalTokens {
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
