package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/parquet-go/parquet-go"
)

// Comparison is how a recomputed output compares with the cached one
// (`lacuna verify`).
type Comparison struct {
	// Identical: the two have one digest.
	Identical bool `json:"identical"`
	// Reproducible: the rows are the same once the columns the type
	// declares volatile (nodes.Schema.Volatile) are set aside.
	Reproducible bool `json:"reproducible"`
	// Volatile counts, for each volatile column that differs, the rows
	// where it does: information, not a failure.
	Volatile map[string]int `json:"volatile,omitempty"`
	// Differing is how many rows differ in a column that is not
	// volatile, and First describes the first difference ("row 3,
	// column passed: cached true, recomputed false"), or how the schemas
	// or row counts differ.
	Differing int    `json:"differing,omitempty"`
	First     string `json:"first,omitempty"`
}

// CompareOutputs compares the output cached (an object of st, read by its
// digest) with the output recomputed by an action of type t: digest
// first, then, when they differ, row by row with t's volatile columns set
// aside. It reads both objects only when their digests differ.
func CompareOutputs(st *artifacts.Store, t nodes.Type, cached, recomputed artifacts.Digest) (*Comparison, error) {
	if cached == recomputed {
		return &Comparison{Identical: true, Reproducible: true}, nil
	}
	open := func(d artifacts.Digest) (*artifacts.Reader, error) {
		r, err := st.Open(artifacts.Object{Digest: d})
		if err != nil {
			return nil, fmt.Errorf("compare outputs: %w", err)
		}
		return r, nil
	}
	a, err := open(cached)
	if err != nil {
		return nil, err
	}
	b, err := open(recomputed)
	if err != nil {
		return nil, err
	}
	c := &Comparison{}
	if artifacts.SchemaFingerprint(a.Schema()) != artifacts.SchemaFingerprint(b.Schema()) {
		c.First = fmt.Sprintf("the schemas differ:\n%s\nversus recomputed\n%s", a.Schema(), b.Schema())
		return c, nil
	}
	if a.NumRows() != b.NumRows() {
		c.First = fmt.Sprintf("%d rows cached, %d recomputed", a.NumRows(), b.NumRows())
		return c, nil
	}
	cols := a.Schema().Columns()
	volatile := nodes.VolatileColumns(t)
	isVolatile := make([]bool, len(cols))
	for i, path := range cols {
		isVolatile[i] = len(path) > 0 && slices.Contains(volatile, path[0])
	}
	ra, rb := a.Rows(), b.Rows()
	for n := range ra {
		va, vb := byColumn(ra[n], len(cols)), byColumn(rb[n], len(cols))
		differs := false
		var moved []string // the volatile columns that differ in this row
		for col := range cols {
			if slices.EqualFunc(va[col], vb[col], parquet.DeepEqual) {
				continue
			}
			if isVolatile[col] {
				if !slices.Contains(moved, cols[col][0]) {
					moved = append(moved, cols[col][0])
				}
				continue
			}
			if c.First == "" {
				was, now := showValues(va[col], vb[col])
				c.First = fmt.Sprintf("row %d, column %s: cached %s, recomputed %s", n, strings.Join(cols[col], "."), was, now)
			}
			differs = true
		}
		if differs {
			c.Differing++
		}
		for _, name := range moved {
			if c.Volatile == nil {
				c.Volatile = map[string]int{}
			}
			c.Volatile[name]++
		}
	}
	c.Reproducible = c.Differing == 0
	return c, nil
}

// byColumn groups a row's values by leaf column.
func byColumn(row parquet.Row, n int) [][]parquet.Value {
	out := make([][]parquet.Value, n)
	row.Range(func(col int, vals []parquet.Value) bool {
		if col < n {
			out[col] = vals
		}
		return true
	})
	return out
}

// showValues renders a column's values in two rows for a message: a
// text from a little before where the two first differ, cut to a
// readable length, so that two long texts show what is not the same.
func showValues(a, b []parquet.Value) (string, string) {
	if len(a) == 1 && len(b) == 1 && isText(a[0]) && isText(b[0]) {
		x, y := string(a[0].ByteArray()), string(b[0].ByteArray())
		p := 0
		for p < len(x) && p < len(y) && x[p] == y[p] {
			p++
		}
		from := max(0, p-20)
		return cut(x, from), cut(y, from)
	}
	return showAll(a), showAll(b)
}

func isText(v parquet.Value) bool {
	return !v.IsNull() && (v.Kind() == parquet.ByteArray || v.Kind() == parquet.FixedLenByteArray)
}

// cut quotes s from byte from, at most 60 bytes of it.
func cut(s string, from int) string {
	head, tail := "", ""
	if from > 0 {
		s, head = s[from:], "…"
	}
	if len(s) > 60 {
		s, tail = s[:60], "…"
	}
	return head + strconv.Quote(s) + tail
}

func showAll(vals []parquet.Value) string {
	parts := make([]string, 0, len(vals))
	for _, v := range vals {
		switch {
		case v.IsNull():
			parts = append(parts, "null")
		case isText(v):
			parts = append(parts, cut(string(v.ByteArray()), 0))
		default:
			parts = append(parts, v.String())
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
