package toolsense

import (
	"strings"
	"testing"
)

// TestRRBValidateNamesTheFirstBadTierInOrder: Validate's message does
// not depend on map order.
func TestRRBValidateNamesTheFirstBadTierInOrder(t *testing.T) {
	cfg := &rrbGenerateConfig{Samples: map[string]int{"medium": 0, "easy": 0, "hard": 0, "trivial": 1, "zany": 1}}
	first := rrbGenerateType{}.Validate(cfg).Error()
	for range 30 {
		if got := (rrbGenerateType{}).Validate(cfg).Error(); got != first {
			t.Fatalf("Validate said %q, then %q", first, got)
		}
	}
	wantIn(t, first, `samples["easy"]`)
}

func wantIn(t *testing.T, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Errorf("%q does not contain %q", got, want)
	}
}
