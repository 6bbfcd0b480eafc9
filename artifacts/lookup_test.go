package artifacts

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestOpenExistingNeverCreatesAStore(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	if _, err := OpenExisting(root); !errors.Is(err, ErrNoStore) {
		t.Fatalf("OpenExisting of nothing: %v, want ErrNoStore", err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenExisting left %s behind (%v)", root, err)
	}
	if _, err := Open(root); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenExisting(root); err != nil {
		t.Errorf("OpenExisting of a store Open created: %v", err)
	}
}

func TestMatchPrefixFindsActionsFailuresAndObjects(t *testing.T) {
	s := openTemp(t)
	obj := putAction(t, s, "abcd000000000001", "node.a", sampleRows())
	putAction(t, s, "abcd000000000002", "node.b", sampleRows()[:1])
	if err := s.PutFailure(&Failure{Key: "abce000000000003", Node: "node.c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutFailure(&Failure{Key: "abcd000000000001", Node: "node.a"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		prefix string
		want   []PrefixMatch
		bad    bool
	}{
		{prefix: "abcd00000000000", want: []PrefixMatch{{"abcd000000000001", KindAction}, {"abcd000000000001", KindFailure}, {"abcd000000000002", KindAction}}},
		{prefix: "abcd000000000002", want: []PrefixMatch{{"abcd000000000002", KindAction}}},
		{prefix: "abce", want: []PrefixMatch{{"abce000000000003", KindFailure}}},
		{prefix: string(obj.Digest[:6]), want: []PrefixMatch{{obj.Digest, KindObject}}},
		{prefix: "ffff"},
		{prefix: "abc", bad: true},
		{prefix: "ABCD", bad: true},
		{prefix: "abcx", bad: true},
		{prefix: "abcd0000000000010", bad: true},
	} {
		got, err := s.MatchPrefix(tc.prefix)
		switch {
		case tc.bad && err == nil:
			t.Errorf("MatchPrefix(%q) = %v, want an error", tc.prefix, got)
		case !tc.bad && err != nil:
			t.Errorf("MatchPrefix(%q): %v", tc.prefix, err)
		case !tc.bad && !reflect.DeepEqual(got, tc.want):
			t.Errorf("MatchPrefix(%q) = %v, want %v", tc.prefix, got, tc.want)
		}
	}
}

func TestWritersListsEveryActionThatCommittedAnObject(t *testing.T) {
	s := openTemp(t)
	obj := putAction(t, s, "1000000000000001", "node.a", sampleRows())
	putAction(t, s, "2000000000000002", "node.b", sampleRows()) // same rows, another action
	putAction(t, s, "1000000000000001", "node.a", sampleRows()) // committed again
	got, err := s.Writers(obj.Digest)
	if err != nil || !reflect.DeepEqual(got, []Digest{"1000000000000001", "2000000000000002"}) {
		t.Errorf("Writers = %v (%v)", got, err)
	}
	if got, err := s.Writers("00000000000000ff"); err != nil || len(got) != 0 {
		t.Errorf("Writers of an object never written = %v (%v)", got, err)
	}
}

func TestSnapshotsListsEveryPipelineAndForgetDropsOne(t *testing.T) {
	s := openTemp(t)
	for _, p := range []string{"/b/second.hcl", "/a/first.hcl"} {
		if err := s.SaveSnapshot(p, s.Generation(), map[string]SnapshotNode{"node.x": {Key: "1000000000000001"}}); err != nil {
			t.Fatal(err)
		}
	}
	// A file that is not a snapshot names nothing.
	os.WriteFile(filepath.Join(s.Root(), "names", "0000000000000000.tsv"), []byte("junk\n"), 0o644)
	snaps, err := s.Snapshots()
	if err != nil || len(snaps) != 2 || snaps[0].Pipeline != "/a/first.hcl" || snaps[1].Nodes["node.x"].Key != "1000000000000001" {
		t.Fatalf("Snapshots = %+v (%v)", snaps, err)
	}
	if err := s.ForgetSnapshot("/a/first.hcl"); err != nil {
		t.Fatal(err)
	}
	if err := s.ForgetSnapshot("/never/ran.hcl"); err != nil {
		t.Errorf("forgetting a pipeline with no snapshot: %v", err)
	}
	if snaps, _ := s.Snapshots(); len(snaps) != 1 || snaps[0].Pipeline != "/b/second.hcl" {
		t.Errorf("after ForgetSnapshot: %+v", snaps)
	}
}

func TestGCReportNamesTheRemovedActions(t *testing.T) {
	s := openTemp(t)
	putAction(t, s, "1000000000000001", "node.kept", sampleRows())
	gone := putAction(t, s, "2000000000000002", "node.gone", sampleRows()[:2])
	for _, dry := range []bool{true, false} {
		rep, err := s.GC(t.Context(), map[Digest]bool{"1000000000000001": true}, dry)
		want := []RemovedAction{{Key: "2000000000000002", Node: "node.gone", Output: gone.Digest, Rows: 2}}
		if err != nil || !reflect.DeepEqual(rep.Removed, want) {
			t.Errorf("dry run %v: Removed = %+v (%v), want %+v", dry, rep.Removed, err, want)
		}
	}
}
