package parametric

import "testing"

func TestHparamsJSONKeepsNumbersAndBooleans(t *testing.T) {
	for _, c := range []struct {
		in   map[string]string
		want string
	}{
		{nil, ""},
		{map[string]string{"clamp_norm_factor": "2", "v_lr": "5e-1"}, `{"clamp_norm_factor":2,"v_lr":5e-1}`},
		{map[string]string{"key_position": "prompt_last", "early": "true"}, `{"early":true,"key_position":"prompt_last"}`},
		{map[string]string{"quoted": `"x"`}, `{"quoted":"\"x\""}`},
	} {
		b, err := hparamsJSON(c.in)
		if err != nil || string(b) != c.want {
			t.Errorf("hparamsJSON(%v) = %s (%v), want %s", c.in, b, err, c.want)
		}
	}
}
