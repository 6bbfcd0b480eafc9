package artifacts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const (
	keyA = Digest("aaaaaaaaaaaaaaa1")
	keyB = Digest("bbbbbbbbbbbbbbb2")
)

// reopen is a second process's view of the store: no shared row cache.
func reopen(t *testing.T, s *Store) *Store {
	t.Helper()
	fresh, err := Open(s.Root(), WithCacheBytes(0))
	if err != nil {
		t.Fatal(err)
	}
	return fresh
}

func fsckKinds(t *testing.T, s *Store, repair bool) map[string][]Problem {
	t.Helper()
	rep, err := s.Fsck(context.Background(), repair)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string][]Problem{}
	for _, p := range rep.Problems {
		kinds[p.Kind] = append(kinds[p.Kind], p)
	}
	return kinds
}

func TestActionEntryPointingAtAnotherNodesObjectIsRefused(t *testing.T) {
	forgeries := map[string]func(own, other Object) Object{
		"whole output copied": func(own, other Object) Object { return other },
		"digest only":         func(own, other Object) Object { own.Digest = other.Digest; return own },
		"writer claimed":      func(own, other Object) Object { other.Writer = keyA; return other },
	}
	for name, forge := range forgeries {
		t.Run(name, func(t *testing.T) {
			s := openTemp(t)
			own := putAction(t, s, keyA, "node.t.a", sampleRows()[:1])
			other := putAction(t, s, keyB, "node.t.b", sampleRows())
			a, err := s.GetAction(keyA)
			if err != nil {
				t.Fatal(err)
			}
			a.Output = forge(own, other)
			if err := s.PutAction(a); err != nil {
				t.Fatal(err)
			}

			kinds := fsckKinds(t, s, false)
			if ps := kinds["wrong-writer"]; len(ps) != 1 || ps[0].Name != keyA || ps[0].Fixed != "" || len(kinds) != 1 {
				t.Fatalf("dry fsck: %+v, want one unfixed wrong-writer for %s", kinds, keyA)
			}
			if _, err := os.Stat(s.path("ac", keyA, ".json")); err != nil {
				t.Fatal("a dry-run fsck removed the action entry")
			}

			gen := s.Generation()
			st := reopen(t, s)
			forged, err := st.GetAction(keyA)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Open(forged.Output); !errors.Is(err, ErrWrongWriter) || !strings.Contains(err.Error(), string(keyA)) {
				t.Fatalf("read through the forged entry: %v, want ErrWrongWriter naming %s", err, keyA)
			}
			if _, err := st.GetAction(keyA); !errors.Is(err, ErrNotFound) {
				t.Errorf("forged entry still in ac/ after the read refused it: %v", err)
			}
			if st.Generation() == gen {
				t.Error("generation not bumped: snapshots naming the forged entry stay trusted")
			}
			if b, err := st.GetAction(keyB); err != nil {
				t.Fatal(err)
			} else if _, err := st.Open(b.Output); err != nil {
				t.Errorf("the other node's object is no longer readable through its own action: %v", err)
			}
			if kinds := fsckKinds(t, st, false); len(kinds) != 0 {
				t.Errorf("fsck after the read dropped the entry: %+v", kinds)
			}
		})
	}
}

func TestFsckRepairDropsActionOfAnotherObject(t *testing.T) {
	s := openTemp(t)
	putAction(t, s, keyA, "node.t.a", sampleRows()[:1])
	other := putAction(t, s, keyB, "node.t.b", sampleRows())
	a, _ := s.GetAction(keyA)
	a.Output = other
	s.PutAction(a)

	kinds := fsckKinds(t, s, true)
	if ps := kinds["wrong-writer"]; len(ps) != 1 || ps[0].Fixed == "" {
		t.Fatalf("repair fsck: %+v", kinds)
	}
	if _, err := s.GetAction(keyA); !errors.Is(err, ErrNotFound) {
		t.Errorf("repair kept the entry: %v", err)
	}
	if kinds := fsckKinds(t, s, false); len(kinds) != 0 {
		t.Errorf("fsck after repair: %+v", kinds)
	}
}

func TestSnapshotNamingAnotherObjectIsRefused(t *testing.T) {
	s := openTemp(t)
	putAction(t, s, keyA, "node.t.a", sampleRows()[:1])
	other := putAction(t, s, keyB, "node.t.b", sampleRows())
	if err := s.SaveSnapshot("p.lacuna", s.Generation(), map[string]SnapshotNode{"node.t.a": {Key: keyA, Output: other}}); err != nil {
		t.Fatal(err)
	}
	st := reopen(t, s)
	snap, valid := st.LoadSnapshot("p.lacuna")
	if !valid {
		t.Fatal("fresh snapshot not trusted")
	}
	if _, err := st.Open(snap.Nodes["node.t.a"].Output); !errors.Is(err, ErrWrongWriter) {
		t.Fatalf("read through the snapshot: %v, want ErrWrongWriter", err)
	}
	if _, valid := st.LoadSnapshot("p.lacuna"); valid {
		t.Error("snapshot still trusted after a refused read")
	}
	if _, err := st.GetAction(keyA); err != nil {
		t.Errorf("the correct action entry was dropped: %v", err)
	}
}

func TestSameRowsFromAnotherActionAreServed(t *testing.T) {
	cases := []struct {
		name   string
		remove bool // object removed before the second action recomputes it
	}{
		{"committed while the first file exists", false},
		{"recomputed after the first file was removed", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openTemp(t)
			first := putAction(t, s, keyA, "node.t.a", sampleRows())
			if c.remove {
				os.Remove(s.ObjectPath(first.Digest))
			}
			second := putAction(t, s, keyB, "node.t.b", sampleRows())
			if second.Digest != first.Digest {
				t.Fatalf("same rows, digests %s and %s", first.Digest, second.Digest)
			}
			wantWriter := keyA
			if c.remove {
				wantWriter = keyB
			}
			if second.Writer != wantWriter {
				t.Errorf("second commit describes writer %s, the file's is %s", second.Writer, wantWriter)
			}
			st := reopen(t, s)
			for _, k := range []Digest{keyA, keyB} {
				a, err := st.GetAction(k)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := st.Open(a.Output); err != nil {
					t.Errorf("read through %s: %v", k, err)
				}
			}
			if kinds := fsckKinds(t, st, false); len(kinds) != 0 {
				t.Errorf("fsck: %+v", kinds)
			}
		})
	}
}

func TestGCPrunesTheWritersLog(t *testing.T) {
	s := openTemp(t)
	obj := putAction(t, s, keyA, "node.t.a", sampleRows())
	putAction(t, s, keyB, "node.t.b", sampleRows())
	if _, err := s.GC(context.Background(), map[Digest]bool{keyB: true}, false); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(s.writersPath(obj.Digest))
	if err != nil {
		t.Fatal(err)
	}
	if want := string(writerLine(obj.Digest, keyB)); string(log) != want {
		t.Errorf("writers log after gc = %q, want %q", log, want)
	}
	a, _ := s.GetAction(keyB)
	if _, err := reopen(t, s).Open(a.Output); err != nil {
		t.Errorf("kept action unreadable after gc: %v", err)
	}
	if _, err := s.GC(context.Background(), map[Digest]bool{}, false); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(s.Root(), "cas", "*", "*")); len(left) != 0 {
		t.Errorf("gc of everything left %v", left)
	}
}

func TestWritersLogIgnoresATornLine(t *testing.T) {
	s := openTemp(t)
	obj := putAction(t, s, keyA, "node.t.a", sampleRows())
	// A power loss cut the line that would have recorded keyB.
	f, _ := os.OpenFile(s.writersPath(obj.Digest), os.O_WRONLY|os.O_APPEND, 0)
	f.Write(writerLine(obj.Digest, keyB)[:33])
	f.Close()
	if ok, err := s.loggedWriter(obj.Digest, keyB); ok || err != nil {
		t.Errorf("torn line counted: %v %v", ok, err)
	}
	if ok, err := s.loggedWriter(obj.Digest, keyA); !ok || err != nil {
		t.Errorf("whole line not found: %v %v", ok, err)
	}
	// Garbage after it (a line longer than any scanner buffer) is skipped too.
	f, _ = os.OpenFile(s.writersPath(obj.Digest), os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte("\nnot a line\n" + strings.Repeat("x", 1<<17) + "\n"))
	f.Close()
	if kinds := fsckKinds(t, s, false); len(kinds) != 0 {
		t.Errorf("fsck over a damaged writers log: %+v", kinds)
	}
}

func TestConcurrentActionsCommittingOneObjectAgree(t *testing.T) {
	s := openTemp(t)
	objs := make([]Object, 8)
	keys := make([]Digest, len(objs))
	var wg sync.WaitGroup
	for i := range objs {
		keys[i] = Digest(strings.Repeat(string(rune('1'+i)), 16))
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			st, _ := Open(s.Root())
			objs[i] = putAction(t, st, keys[i], "node.t.x", sampleRows())
		}(i)
	}
	wg.Wait()
	data, err := os.ReadFile(s.ObjectPath(objs[0].Digest))
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range objs {
		if o.FileSum != SumBytes(data) {
			t.Errorf("writer %d recorded checksum %s; the file on disk has %s", i, o.FileSum, SumBytes(data))
		}
		a, _ := s.GetAction(keys[i])
		if _, err := reopen(t, s).Open(a.Output); err != nil {
			t.Errorf("read through action %d: %v", i, err)
		}
	}
	if kinds := fsckKinds(t, s, false); len(kinds) != 0 {
		t.Errorf("fsck: %+v", kinds)
	}
}

func TestActionConfigIsStoredAsItsExactBytes(t *testing.T) {
	s := openTemp(t)
	cfg := "{\"note\":\"a <b> & c \u2028 é\"}"
	if err := s.PutAction(&Action{Key: keyA, Config: []byte(cfg)}); err != nil {
		t.Fatal(err)
	}
	a, err := s.GetAction(keyA)
	if err != nil {
		t.Fatal(err)
	}
	if string(a.Config) != cfg {
		t.Errorf("stored config %s, want the key's bytes %s", a.Config, cfg)
	}
}
