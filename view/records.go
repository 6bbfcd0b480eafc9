package view

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lacuna-dev/lacuna/artifacts"
)

// records is an artifact's rows decoded as maps from column to value
// (string, bool, int64, float64, nil, []any, map[string]any), as lacuna
// cat decodes them. Shared by handlers: never modified after decoding.
type records struct {
	Digest  artifacts.Digest
	Meta    map[string]string
	Columns []string
	Rows    []map[string]any
}

// recordCache keeps the last few decoded artifacts (a page of a large
// artifact, then its next page, should not decode it twice).
type recordCache struct {
	mu    sync.Mutex
	max   int
	order []artifacts.Digest
	m     map[artifacts.Digest]*records
}

func newRecordCache(n int) *recordCache {
	return &recordCache{max: n, m: map[artifacts.Digest]*records{}}
}

func (c *recordCache) get(d artifacts.Digest) *records {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[d]
}

func (c *recordCache) put(r *records) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[r.Digest]; ok {
		return
	}
	if len(c.order) == c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.order = append(c.order, r.Digest)
	c.m[r.Digest] = r
}

// records reads and verifies the artifact d (its rows must hash to d)
// and decodes every row.
func (s *Server) records(d artifacts.Digest) (*records, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("%q is not an artifact digest", d)
	}
	if r := s.cache.get(d); r != nil {
		return r, nil
	}
	rd, err := s.cfg.Store.Open(artifacts.Object{Digest: d})
	if err != nil {
		return nil, err
	}
	out := &records{Digest: d, Meta: rd.Meta()}
	for _, f := range rd.Schema().Fields() {
		out.Columns = append(out.Columns, f.Name())
	}
	if out.Rows, err = rd.Maps(); err != nil {
		return nil, fmt.Errorf("artifact %s: %w", d, err)
	}
	s.cache.put(out)
	return out, nil
}

// find returns the first row whose columns have the given values (as
// text), and its index; -1 when none.
func (rs *records) find(kv ...string) (map[string]any, int) {
	for i, r := range rs.Rows {
		ok := true
		for j := 0; j+1 < len(kv) && ok; j += 2 {
			ok = text(r[kv[j]]) == kv[j+1]
		}
		if ok {
			return r, i
		}
	}
	return nil, -1
}

func (rs *records) has(cols ...string) bool {
	for _, c := range cols {
		if !slices.Contains(rs.Columns, c) {
			return false
		}
	}
	return true
}

// text is a value as text: a string as it is, a list or group as JSON,
// a number as Go formats it, "" for null.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(v), 'g', -1, 32)
	case map[string]any, []any:
		b, _ := json.Marshal(artifacts.JSONSafe(v))
		return string(b)
	}
	return fmt.Sprint(v)
}

func str(r map[string]any, col string) string { return text(r[col]) }

func strs(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		out = append(out, text(e))
	}
	return out
}

func num(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case float32:
		return float64(v), true
	case int64:
		return float64(v), true
	case int32:
		return float64(v), true
	case int:
		return float64(v), true
	}
	return 0, false
}

// filter is one condition of the artifact page: a column's text equal
// to a value (COL=VALUE), or holding a substring, ignoring case
// (COL~TEXT).
type filter struct {
	Col, Op, Val string
}

func (f filter) String() string { return f.Col + f.Op + f.Val }

// parseFilter reads COL=VALUE or COL~TEXT (the first = or ~ splits).
func parseFilter(s string) (filter, error) {
	i := strings.IndexAny(s, "=~")
	if i <= 0 {
		return filter{}, fmt.Errorf("filter %q: want COLUMN=VALUE or COLUMN~TEXT", s)
	}
	return filter{Col: s[:i], Op: s[i : i+1], Val: s[i+1:]}, nil
}

func (f filter) keep(r map[string]any) bool {
	t := text(r[f.Col])
	if f.Op == "=" {
		return t == f.Val
	}
	return strings.Contains(strings.ToLower(t), strings.ToLower(f.Val))
}

// compare orders two values: numbers by value (NaN last), else by text;
// null first.
func compare(a, b any) int {
	if a == nil || b == nil {
		switch {
		case a == nil && b == nil:
			return 0
		case a == nil:
			return -1
		}
		return 1
	}
	x, okx := num(a)
	y, oky := num(b)
	if okx && oky {
		switch {
		case math.IsNaN(x) && math.IsNaN(y):
			return 0
		case math.IsNaN(x):
			return 1
		case math.IsNaN(y):
			return -1
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	if ba, ok := a.(bool); ok {
		if bb, ok := b.(bool); ok {
			switch {
			case ba == bb:
				return 0
			case !ba:
				return -1
			}
			return 1
		}
	}
	return strings.Compare(text(a), text(b))
}
