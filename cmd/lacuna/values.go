package main

import (
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// What cat, diff and the JSON they print make of an artifact's values:
// Parquet's logical types read as what they mean, not as the integers
// that store them. A timestamp is an RFC 3339 string in UTC (with the
// fraction of a second it has, none when whole), a date YYYY-MM-DD; in
// text and JSON alike.

// record decodes one row of r: column name → value (nil for a null,
// []any for a list or repeated field, map[string]any for a group).
func record(r *artifacts.Reader, row parquet.Row) (map[string]any, error) {
	var v any
	if err := r.Schema().Reconstruct(&v, row); err != nil {
		return nil, err
	}
	rec, _ := v.(map[string]any)
	if rec == nil {
		rec = map[string]any{}
	}
	groupValues(r.Schema(), rec)
	return rec, nil
}

// groupValues converts the fields of a group's decoded value in place.
func groupValues(g parquet.Node, m map[string]any) {
	for _, f := range g.Fields() {
		if x, ok := m[f.Name()]; ok {
			m[f.Name()] = fieldValue(f, x)
		}
	}
}

// fieldValue converts the decoded value v of field n.
func fieldValue(n parquet.Node, v any) any {
	if v == nil {
		return nil
	}
	if l, ok := v.([]any); ok && (n.Repeated() || isList(n)) {
		elem := n
		if isList(n) {
			elem = n.Fields()[0].Fields()[0]
		}
		for i, x := range l {
			l[i] = oneValue(elem, x)
		}
		return l
	}
	return oneValue(n, v)
}

// oneValue converts one value of n (an element, for a repeated n).
func oneValue(n parquet.Node, v any) any {
	if v == nil {
		return nil
	}
	if !n.Leaf() {
		if isList(n) {
			return fieldValue(n, v)
		}
		if m, ok := v.(map[string]any); ok {
			groupValues(n, m)
		}
		return v
	}
	lt := n.Type().LogicalType()
	if lt == nil {
		return v
	}
	switch t := lt.Value.(type) {
	case *format.TimestampType:
		i, ok := asInt64(v)
		switch t.Unit.Value.(type) {
		case *format.MilliSeconds:
			if ok {
				return formatTime(time.UnixMilli(i))
			}
		case *format.MicroSeconds:
			if ok {
				return formatTime(time.UnixMicro(i))
			}
		case *format.NanoSeconds:
			if ok {
				return formatTime(time.Unix(0, i))
			}
		}
	case *format.DateType:
		if i, ok := asInt64(v); ok {
			return time.Unix(i*86400, 0).UTC().Format(time.DateOnly)
		}
	}
	return v
}

// formatTime writes t as RFC 3339 in UTC, with its fraction of a second
// when it has one.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// formatStamp writes when something happened (a node computed, a run
// started) as RFC 3339 in UTC, to the second.
func formatStamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func isList(n parquet.Node) bool {
	lt := n.Type().LogicalType()
	return !n.Leaf() && isListType(lt) && len(n.Fields()) == 1 && len(n.Fields()[0].Fields()) == 1
}

func asInt64(v any) (int64, bool) {
	switch i := v.(type) {
	case int64:
		return i, true
	case int32:
		return int64(i), true
	case int:
		return int64(i), true
	}
	return 0, false
}

func isListType(lt *format.LogicalType) bool {
	if lt == nil {
		return false
	}
	_, ok := lt.Value.(*format.ListType)
	return ok
}
