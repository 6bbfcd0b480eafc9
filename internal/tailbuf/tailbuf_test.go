package tailbuf

import "testing"

func TestBufferKeepsTheLastBytes(t *testing.T) {
	for _, tc := range []struct {
		max    int
		writes []string
		want   string
	}{
		{4, []string{"ab"}, "ab"},
		{4, []string{"ab", "cdef"}, "cdef"},
		{4, []string{"abcdefgh"}, "efgh"},
		{4, []string{"abc", "d", "e"}, "bcde"},
		{0, []string{"abc"}, ""},
	} {
		b := New(tc.max)
		for _, w := range tc.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", w, n, err)
			}
		}
		if got := b.String(); got != tc.want {
			t.Errorf("max %d, writes %q: %q, want %q", tc.max, tc.writes, got, tc.want)
		}
	}
}
