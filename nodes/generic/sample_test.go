package generic_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestSampleDrawsSeededRowsInInputOrder: n and fraction (rounded half up),
// stratified by a column or not, draw that many distinct rows, kept in
// the input's order; the same seed draws the same rows.
func TestSampleDrawsSeededRowsInInputOrder(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	for i := 0; i < 20; i++ {
		tier := "odd"
		if i%2 == 0 {
			tier = "even"
		}
		lines = append(lines, fmt.Sprintf(`{"id": %d, "tier": %q}`, i, tier))
	}
	write(t, dir, "rows.jsonl", strings.Join(lines, "\n")+"\n")
	cases := []struct {
		name, body string
		total      int            // rows drawn
		perTier    map[string]int // rows drawn per tier, when by is set
	}{
		{"n", `n = 5`, 5, nil},
		{"n larger than the input", `n = 50`, 20, nil},
		{"n zero", `n = 0`, 0, nil},
		{"fraction", `fraction = 0.25`, 5, nil},
		{"fraction rounds half up", `fraction = 0.125`, 3, nil},
		{"n by tier", `n = 3
  by = "tier"`, 6, map[string]int{"even": 3, "odd": 3}},
		{"fraction by tier", `fraction = 0.5
  by = "tier"`, 10, map[string]int{"even": 5, "odd": 5}},
		{"n by tier larger than a stratum", `n = 15
  by = "tier"`, 20, map[string]int{"even": 10, "odd": 10}},
	}
	// Each case runs three times: seeds 1, 1 and 2.
	seeds := []int{1, 1, 2}
	addr := func(c, k int) string { return fmt.Sprintf("node.sample.c%d_%d", c, k) }
	src := `node "import" "rows" { path = "rows.jsonl" }` + "\n"
	for i, c := range cases {
		for k, seed := range seeds {
			src += fmt.Sprintf("node \"sample\" \"c%d_%d\" {\n  input = node.import.rows\n  seed  = %d\n  %s\n}\n", i, k, seed, c.body)
		}
	}
	o := run(t, dir, src)
	if o.err != nil {
		t.Fatal(o.err)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var draws [][]int64
			tiers := map[string]int{}
			for k := range seeds {
				var ids []int64
				for _, r := range o.rows(t, addr(i, k)) {
					ids = append(ids, r["id"].(int64))
					if k == 0 {
						tiers[r["tier"].(string)]++
					}
				}
				if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
					t.Errorf("%s drew %v: not distinct rows in input order", addr(i, k), ids)
				}
				draws = append(draws, ids)
			}
			total := 0
			for _, n := range tiers {
				total += n
			}
			if c.perTier != nil && !mapsEqual(tiers, c.perTier) {
				t.Errorf("per tier %v, want %v", tiers, c.perTier)
			}
			if total != c.total {
				t.Errorf("drew %d rows, want %d", total, c.total)
			}
			if !slices.Equal(draws[0], draws[1]) {
				t.Errorf("seed 1 drew %v, then %v", draws[0], draws[1])
			}
			if n := len(draws[0]); n > 0 && n < 20 && slices.Equal(draws[0], draws[2]) {
				t.Errorf("seeds 1 and 2 drew the same rows %v", draws[0])
			}
		})
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
