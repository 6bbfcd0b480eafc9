package artifacts

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"
)

type toolRow struct {
	Name  string   `parquet:"name"`
	Score float64  `parquet:"score"`
	Tags  []string `parquet:"tags,list"`
	Note  *string  `parquet:"note,optional"`
}

func sampleRows() []toolRow {
	note := "hard negative"
	return []toolRow{
		{Name: "QR Code API&&QR code image", Score: 0.5, Tags: []string{"qr", "image"}},
		{Name: "TVB QR Code&&Get QR Code", Score: 1, Note: &note},
		{Name: "", Score: -2.25},
	}
}

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func writeRows(t *testing.T, s *Store, rows []toolRow, meta map[string]string) Object {
	t.Helper()
	w, err := s.NewWriter(SchemaOf[toolRow](), meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	obj, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// putAction commits rows as the output of action key (the way the engine
// does: the key in the file's metadata) and records the action entry.
func putAction(t *testing.T, s *Store, key Digest, node string, rows []toolRow) Object {
	t.Helper()
	obj := writeRows(t, s, rows, map[string]string{MetaNode: node, MetaActionKey: string(key)})
	if err := s.PutAction(&Action{Key: key, Output: obj, Node: node}); err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestSameRowsGiveSameBytes(t *testing.T) {
	meta := map[string]string{MetaNode: "node.import.a", MetaActionKey: "0123456789abcdef"}
	a, b := openTemp(t), openTemp(t)
	oa, ob := writeRows(t, a, sampleRows(), meta), writeRows(t, b, sampleRows(), meta)
	ba, _ := os.ReadFile(a.ObjectPath(oa.Digest))
	bb, _ := os.ReadFile(b.ObjectPath(ob.Digest))
	if oa != ob || !bytes.Equal(ba, bb) {
		t.Fatalf("same rows, different results: %+v vs %+v", oa, ob)
	}
	if bytes.Contains(ba, []byte("parquet-go")) {
		t.Error("file names the parquet library version; created_by must be pinned")
	}
}

func TestContentDigestIgnoresMetadataAndEncoding(t *testing.T) {
	s := openTemp(t)
	o1 := writeRows(t, s, sampleRows(), map[string]string{MetaNode: "node.x.a"})
	s2 := openTemp(t)
	o2 := writeRows(t, s2, sampleRows(), map[string]string{MetaNode: "node.y.b"})
	if o1.Digest != o2.Digest {
		t.Errorf("metadata changed the content digest: %s vs %s", o1.Digest, o2.Digest)
	}
	if o1.FileSum == o2.FileSum {
		t.Error("different metadata, same file checksum")
	}
	// The digest depends on values, order and schema.
	rows := sampleRows()
	rows[0], rows[1] = rows[1], rows[0]
	if o3 := writeRows(t, openTemp(t), rows, nil); o3.Digest == o1.Digest {
		t.Error("row order does not change the digest")
	}
	h1 := NewContentHasher(SchemaOf[toolRow]())
	h2 := NewContentHasher(parquet.SchemaOf(struct {
		Name string `parquet:"name"`
	}{}))
	if h1.Digest() == h2.Digest() {
		t.Error("schema does not change the digest of zero rows")
	}
}

func TestReadBackTypedRows(t *testing.T) {
	s := openTemp(t)
	obj := writeRows(t, s, sampleRows(), nil)
	s2, _ := Open(s.Root(), WithCacheBytes(0)) // no shared cache: read the file
	r, err := s2.Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll[toolRow](r)
	if err != nil {
		t.Fatal(err)
	}
	want := sampleRows()
	if len(got) != len(want) || got[1].Name != want[1].Name || *got[1].Note != *want[1].Note || got[0].Tags[1] != "image" {
		t.Errorf("read back %+v", got)
	}
}

func TestFlippedByteIsDetected(t *testing.T) {
	for _, where := range []string{"data", "footer", "quarantine removed"} {
		t.Run(where, func(t *testing.T) {
			s := openTemp(t)
			if where == "quarantine removed" { // a user's clean-up must not leave corrupt objects in place
				if err := os.RemoveAll(filepath.Join(s.Root(), "quarantine")); err != nil {
					t.Fatal(err)
				}
			}
			obj := writeRows(t, s, sampleRows(), nil)
			path := s.ObjectPath(obj.Digest)
			b, _ := os.ReadFile(path)
			i := 8 // inside the first page
			if where == "footer" {
				i = len(b) - 20
			}
			b[i] ^= 0x40
			os.WriteFile(path, b, 0o644)
			fresh, _ := Open(s.Root())
			if _, err := fresh.Open(obj); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read of a corrupted object: %v, want ErrCorrupt", err)
			}
			if _, err := os.Stat(path); err == nil {
				t.Error("corrupt object was not quarantined on read")
			}
		})
	}
}

func TestFsckFindsAndQuarantinesCorruption(t *testing.T) {
	s := openTemp(t)
	good := putAction(t, s, "00000000000000aa", "node.t.good", sampleRows())
	bad := putAction(t, s, "00000000000000bb", "node.t.bad", sampleRows()[:1])
	b, _ := os.ReadFile(s.ObjectPath(bad.Digest))
	b[10] ^= 0xff
	os.WriteFile(s.ObjectPath(bad.Digest), b, 0o644)

	rep, err := s.Fsck(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Objects != 2 || len(rep.Problems) != 2 {
		t.Fatalf("dry fsck: %+v", rep)
	}
	if _, err := os.Stat(s.ObjectPath(bad.Digest)); err != nil {
		t.Error("a dry-run fsck moved an object")
	}
	rep, _ = s.Fsck(context.Background(), true)
	kinds := map[string]bool{}
	for _, p := range rep.Problems {
		kinds[p.Kind] = p.Fixed != ""
	}
	if !kinds["corrupt-object"] || !kinds["dangling-action"] {
		t.Errorf("repair fsck: %+v", rep.Problems)
	}
	rep, _ = s.Fsck(context.Background(), true)
	if len(rep.Problems) != 0 || rep.Objects != 1 {
		t.Errorf("fsck after repair still finds %+v", rep)
	}
	if _, err := s.Open(good); err != nil {
		t.Errorf("repair touched a good object: %v", err)
	}
}

func TestConcurrentWritersOfOneObject(t *testing.T) {
	s := openTemp(t)
	var wg sync.WaitGroup
	objs := make([]Object, 8)
	for i := range objs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			st, _ := Open(s.Root())
			objs[i] = writeRows(t, st, sampleRows(), map[string]string{"writer": string(rune('a' + i))})
		}(i)
	}
	wg.Wait()
	for _, o := range objs[1:] {
		if o.Digest != objs[0].Digest {
			t.Fatalf("digests differ: %v", objs)
		}
	}
	fresh, _ := Open(s.Root())
	if _, err := fresh.Open(objs[0]); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(s.Root(), "tmp", "*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestCleanTempKeepsLiveWriters(t *testing.T) {
	s := openTemp(t)
	dead := filepath.Join(s.Root(), "tmp", "999999999-1-x")
	os.WriteFile(dead, []byte("partial"), 0o644)
	w, _ := s.NewWriter(SchemaOf[toolRow](), nil)
	defer w.Abort()
	if n := s.CleanTemp(); n != 1 {
		t.Errorf("removed %d temp files, want 1 (the dead process's)", n)
	}
	if _, err := os.Stat(dead); err == nil {
		t.Error("dead writer's temp file kept")
	}
}

func TestStoreRefusesNewerFormat(t *testing.T) {
	s := openTemp(t)
	os.WriteFile(filepath.Join(s.Root(), "VERSION"), []byte("99\n"), 0o644)
	if _, err := Open(s.Root()); err == nil {
		t.Error("opened a store of an unknown format")
	}
}
