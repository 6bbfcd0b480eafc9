package artifacts

import (
	"encoding/json"
	"math"
	"testing"
)

func TestJSONSafeWritesNaNAndInfinityAsNull(t *testing.T) {
	shared := map[string]any{"a": math.NaN(), "b": "x"}
	for _, c := range []struct {
		in   any
		want string
	}{
		{math.NaN(), "null"},
		{math.Inf(1), "null"},
		{float32(math.Inf(-1)), "null"},
		{1.5, "1.5"},
		{[]any{1.0, math.NaN()}, "[1,null]"},
		{shared, `{"a":null,"b":"x"}`},
		{[]map[string]any{{"c": math.Inf(-1)}}, `[{"c":null}]`},
	} {
		b, err := json.Marshal(JSONSafe(c.in))
		if err != nil || string(b) != c.want {
			t.Errorf("JSONSafe(%v) = %s (%v), want %s", c.in, b, err, c.want)
		}
	}
	if !math.IsNaN(shared["a"].(float64)) {
		t.Error("JSONSafe changed the map it was given")
	}
}
