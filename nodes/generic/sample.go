package generic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/parquet-go/parquet-go"
)

func init() { nodes.Register(sampleType{}) }

// sampleConfig: `node "sample" "dev" { input = node.import.x  n = 50  by = "tier" }`.
type sampleConfig struct {
	Input nodes.Ref `hcl:"input"`
	// N rows, or N per stratum when By is set (all of a smaller stratum).
	N *int64 `hcl:"n,optional"`
	// Fraction of the rows (of each stratum with By), rounded half up.
	Fraction *float64 `hcl:"fraction,optional"`
	Seed     int64    `hcl:"seed,optional"`
	// By names a top-level column to stratify by.
	By string `hcl:"by,optional"`
}

type sampleType struct{ nodes.Dynamic[sampleConfig] }

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = sampleType{}
	_ nodes.Documented = sampleType{}
	_ nodes.Validator  = sampleType{}
)

func (sampleType) Name() string    { return "sample" }
func (sampleType) Version() string { return "1" }
func (sampleType) Doc() string {
	return "Seeded random sample of `n` rows or a `fraction`, optionally stratified `by` a column. " +
		"Sampled rows keep their input order."
}

func (sampleType) Schema() nodes.Schema {
	return nodes.SameAsInput(func(c *sampleConfig) nodes.Ref { return c.Input })
}

func (sampleType) Validate(cfg any) error {
	c := cfg.(*sampleConfig)
	switch {
	case c.N == nil && c.Fraction == nil:
		return nodes.Errorf("", "Missing sample size", "set n (rows) or fraction (0 to 1).")
	case c.N != nil && c.Fraction != nil:
		return nodes.Errorf("fraction", "Conflicting sample size", "set n or fraction, not both.")
	case c.N != nil && *c.N < 0:
		return nodes.Errorf("n", "Invalid sample size", "n must not be negative; got %d.", *c.N)
	case c.Fraction != nil && (*c.Fraction < 0 || *c.Fraction > 1 || math.IsNaN(*c.Fraction)):
		return nodes.Errorf("fraction", "Invalid sample fraction", "fraction must be between 0 and 1; got %g.", *c.Fraction)
	}
	return nil
}

func (t sampleType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	in, err := r.Input(c.Input)
	if err != nil {
		return err
	}
	rows := in.Rows()
	strata := map[string][]int{}
	var names []string
	if c.By == "" {
		all := make([]int, len(rows))
		for i := range all {
			all[i] = i
		}
		strata[""], names = all, []string{""}
	} else {
		col, err := topLevelColumn(in.Schema(), c.By)
		if err != nil {
			return err
		}
		for i, row := range rows {
			k := stratumKey(row, col)
			if _, ok := strata[k]; !ok {
				names = append(names, k)
			}
			strata[k] = append(strata[k], i)
		}
		sort.Strings(names)
	}
	var keep []int
	for _, name := range names {
		idx := strata[name]
		k := len(idx)
		if c.N != nil && int(*c.N) < k {
			k = int(*c.N)
		}
		if c.Fraction != nil {
			k = int(math.Floor(*c.Fraction*float64(len(idx)) + 0.5))
		}
		// Each stratum draws from its own stream, so adding a stratum
		// does not reshuffle the others.
		rng := rand.New(rand.NewPCG(uint64(c.Seed), xxhash.Sum64String(name)))
		chosen := append([]int(nil), idx...)
		for i := 0; i < k; i++ {
			j := i + rng.IntN(len(chosen)-i)
			chosen[i], chosen[j] = chosen[j], chosen[i]
		}
		keep = append(keep, chosen[:k]...)
		if c.By != "" {
			r.Logf("%s=%s: %d of %d", c.By, name, k, len(idx))
		}
	}
	sort.Ints(keep)
	w, err := r.Output(in.Schema())
	if err != nil {
		return err
	}
	out := make([]parquet.Row, len(keep))
	for i, k := range keep {
		out[i] = rows[k]
	}
	return w.WriteRows(out)
}

// topLevelColumn finds a non-repeated top-level leaf column by name.
func topLevelColumn(s *parquet.Schema, name string) (int, error) {
	leaf, ok := s.Lookup(name)
	if !ok {
		var cols []string
		for _, f := range s.Fields() {
			cols = append(cols, f.Name())
		}
		return 0, fmt.Errorf("no column %q; the input has columns %s", name, strings.Join(cols, ", "))
	}
	if leaf.Node.Repeated() || len(leaf.Path) != 1 {
		return 0, errors.New("column " + name + " is not a top-level scalar column")
	}
	return leaf.ColumnIndex, nil
}

func stratumKey(row parquet.Row, col int) string {
	for _, v := range row {
		if v.Column() == col {
			if v.IsNull() {
				return "<null>"
			}
			return v.String()
		}
	}
	return "<null>"
}
