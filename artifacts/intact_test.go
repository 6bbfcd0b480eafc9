package artifacts

import (
	"os"
	"testing"
	"time"
)

// ActionChecker answers as ActionIntact does, entry by entry, before and
// after Close: a missing entry, one in another shard, one not modified
// since (only stat-ed, so damage in place passes), one modified since
// (read: good passes, damaged fails), a key that is not a digest.
func TestActionCheckerAnswersAsActionIntact(t *testing.T) {
	s := openTemp(t)
	good, damaged, old := Digest("0123456789abcdef"), Digest("01ffffffffffffff"), Digest("abcdef0123456789")
	for _, k := range []Digest{good, damaged, old} {
		putAction(t, s, k, "node.x", sampleRows())
	}
	if err := os.WriteFile(s.path("ac", damaged, ".json"), []byte("{{"), 0o644); err != nil {
		t.Fatal(err)
	}
	then := time.Now().Add(-time.Hour)
	os.WriteFile(s.path("ac", old, ".json"), []byte("{{"), 0o644)
	os.Chtimes(s.path("ac", old, ".json"), then, then)
	since := time.Now().Add(-time.Minute)
	for _, tc := range []struct {
		name  string
		key   Digest
		since time.Time
		want  bool
	}{
		{"good, modified since", good, since, true},
		{"good, no snapshot time", good, time.Time{}, true},
		{"damaged, modified since", damaged, since, false},
		{"damaged in place, not modified since", old, since, true},
		{"damaged, no snapshot time", old, time.Time{}, false},
		{"missing, in a shard that exists", "0100000000000000", since, false},
		{"missing, in a shard that does not", "ee00000000000000", since, false},
		{"not a digest", "../../x", since, false},
	} {
		if got := s.ActionIntact(tc.key, tc.since); got != tc.want {
			t.Fatalf("%s: ActionIntact = %v, want %v", tc.name, got, tc.want)
		}
		c := s.NewActionChecker(tc.since)
		for _, phase := range []string{"open", "closed"} {
			if got := c.Intact(tc.key); got != tc.want {
				t.Errorf("%s (%s): Intact = %v, want %v", tc.name, phase, got, tc.want)
			}
			c.Close()
		}
	}
}
