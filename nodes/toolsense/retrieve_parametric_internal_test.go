package toolsense

import (
	"errors"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes"
)

// TestHierarchicalToolWithoutPartsIsATokenFormatError: a catalog tool
// that hierarchical tokens cannot split (no titles, no "&&" in its
// tool_name) fails the search's set-up at token_format.
func TestHierarchicalToolWithoutPartsIsATokenFormatError(t *testing.T) {
	c := &parametricConfig{Decoding: constrainedDecoding, TokenFormat: "hierarchical"}
	_, err := newSearcher(c, &parametricPinned{}, []CatalogRow{{ToolName: "lonely", APITitle: "x"}})
	var ce *nodes.ConfigError
	if !errors.As(err, &ce) || ce.Attr != "token_format" {
		t.Errorf("a tool without parts: %v, want a token_format error", err)
	}
}
