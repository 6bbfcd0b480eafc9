package artifacts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Pages past spillAt wait in a file under tmp/ instead of memory; the
// bytes written are the same, and no file is left behind.
func TestSpilledPagesGiveTheSameBytes(t *testing.T) {
	long := strings.Repeat("a long value that does not fit in one small page ", 4000)
	rows := []toolRow{{Name: long, Score: 1}, {Name: "short"}, {Name: long + "!", Tags: []string{long}}}
	s := openTemp(t)
	inMemory := writeRows(t, s, rows, nil)
	old := spillAt
	spillAt = 1024
	defer func() { spillAt = old }()
	s2 := openTemp(t)
	spilled := writeRows(t, s2, rows, nil)
	if spilled != inMemory {
		t.Errorf("spilled pages wrote %+v, in memory %+v", spilled, inMemory)
	}
	if r, err := s2.Open(spilled); err != nil || r.NumRows() != 3 {
		t.Fatalf("reading the spilled object: %v", err)
	}
	if left, _ := os.ReadDir(filepath.Join(s2.Root(), "tmp")); len(left) != 0 {
		t.Errorf("files left in tmp/: %v", left)
	}
}
