package artifacts

import (
	"reflect"
	"strings"
	"testing"
)

func TestSnapshotRoundTripsAndRefusesMalformedLines(t *testing.T) {
	snap := &Snapshot{Pipeline: "dir/p \"1\".lacuna", Generation: 7, Nodes: map[string]SnapshotNode{
		`node.sample.s["a\tb"]`: {Key: "00000000000000aa", Output: Object{Digest: "00000000000000bb", FileSum: "00000000000000cc", Size: 12, Rows: 3, Writer: "00000000000000dd", Action: "00000000000000aa"}, Note: "kept 3\tof 5"},
		"node.import.data":      {Key: "00000000000000ee", Failed: true, Output: Object{Action: "00000000000000ee"}},
	}}
	got, err := decodeSnapshot(string(encodeSnapshot(snap)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, snap) {
		t.Errorf("decode(encode(s)) = %+v, want %+v", got, snap)
	}

	good := "\"node.a\"\t00000000000000aa\t00000000000000bb\t\t1\t2\t\t0"
	for _, tc := range []struct {
		name, body string
		nodes      int
		ok         bool
	}{
		{"no nodes", "", 0, true},
		{"a line without a note (older files)", good + "\n", 1, true},
		{"a line with a note", good + "\t\"n\"\n", 1, true},
		{"two lines", good + "\n" + strings.Replace(good, "node.a", "node.b", 1) + "\n", 2, true},
		{"seven fields", "\"node.a\"\t1\t2\t3\t4\t5\t6\n", 0, false},
		{"ten fields", good + "\t\"n\"\tx\n", 0, false},
		{"an empty line between nodes", good + "\n\n" + good + "\n", 0, false},
		{"a size that is not a number", strings.Replace(good, "\t1\t2\t", "\tx\t2\t", 1) + "\n", 0, false},
	} {
		s, err := decodeSnapshot(snapshotHeader + "\t\"p\"\t1\n" + tc.body)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !tc.ok && err == nil:
			t.Errorf("%s: decoded, want an error", tc.name)
		case tc.ok && len(s.Nodes) != tc.nodes:
			t.Errorf("%s: %d nodes, want %d", tc.name, len(s.Nodes), tc.nodes)
		}
	}
}
