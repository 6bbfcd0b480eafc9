package engine

import (
	"encoding/json"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
)

func TestCanonicalConfigIsJSONAndStable(t *testing.T) {
	cases := []string{
		`values = [1, 2]`,
		`extra = { note = "quote \" backslash \\ newline \n tab \t bell \u0007 é 日本" }`,
		`sleep_ms = 5`,
		`fail = "x"`,
	}
	for _, c := range cases {
		h := newHarness(t)
		g := h.graph(`node "rows" "a" {` + "\n" + c + "\n}\n" + `node "rows" "b" {
  inputs = [node.rows.a]
  add    = -3
}`)
		for _, inst := range g.Instances {
			b, err := canonicalConfig(inst, func(string) (d artifacts.Digest) { return "0123456789abcdef" })
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Errorf("%s: %v\n%s", c, err, b)
			}
			again, _ := canonicalConfig(inst, func(string) (d artifacts.Digest) { return "0123456789abcdef" })
			if string(again) != string(b) {
				t.Errorf("canonical config not stable: %s vs %s", b, again)
			}
		}
	}
}
