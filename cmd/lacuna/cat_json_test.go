package main

import (
	"encoding/json"
	"math"
	"testing"
)

func TestJSONSafeWritesNaNAndInfinityAsNull(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{
		{math.NaN(), "null"},
		{math.Inf(1), "null"},
		{float32(math.Inf(-1)), "null"},
		{1.5, "1.5"},
		{[]any{1.0, math.NaN()}, "[1,null]"},
		{map[string]any{"a": math.NaN(), "b": "x"}, `{"a":null,"b":"x"}`},
	} {
		b, err := json.Marshal(jsonSafe(c.in))
		if err != nil || string(b) != c.want {
			t.Errorf("jsonSafe(%v) = %s (%v), want %s", c.in, b, err, c.want)
		}
	}
}
