package artifacts

import (
	"os"
	"testing"
)

func TestObjectIndexAnswersFromOneReadOfEachShard(t *testing.T) {
	s := openTemp(t)
	kept := writeRows(t, s, sampleRows(), nil)
	removed := writeRows(t, s, sampleRows()[:1], nil)
	if err := os.Remove(s.ObjectPath(removed.Digest)); err != nil {
		t.Fatal(err)
	}
	idx, prefetched := s.NewObjectIndex(), s.NewObjectIndex()
	prefetched.Prefetch(3)
	for _, tc := range []struct {
		name string
		d    Digest
		want bool
	}{
		{"an object in cas/", kept.Digest, true},
		{"an object removed from cas/", removed.Digest, false},
		{"a digest never written", Digest("00000000000000ff"), false},
		{"a malformed digest", Digest("../VERSION"), false},
		{"an empty digest", "", false},
	} {
		if got := idx.Has(tc.d); got != tc.want {
			t.Errorf("%s: Has(%q) = %v, want %v", tc.name, tc.d, got, tc.want)
		}
		if got := prefetched.Has(tc.d); got != tc.want {
			t.Errorf("%s: Has(%q) after Prefetch = %v, want %v", tc.name, tc.d, got, tc.want)
		}
	}

	// The index is a picture of each shard when first read: an object
	// written afterwards to an already read shard reads as absent there,
	// and present in a fresh index.
	later := writeRows(t, s, sampleRows()[1:], nil)
	shardRead := later.Digest[:2] == kept.Digest[:2] || later.Digest[:2] == removed.Digest[:2]
	if got := idx.Has(later.Digest); shardRead && got {
		t.Errorf("Has(%s) after the shard was read = true, want false", later.Digest)
	}
	if !s.NewObjectIndex().Has(later.Digest) {
		t.Errorf("a fresh index does not see %s", later.Digest)
	}
}

// Only DIGEST.parquet names an object: what Digest.Valid accepts (16
// lower-case hex digits), with that extension.
func TestObjectNumberReadsOnlyObjectNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    uint64
		ok   bool
	}{
		{"0123456789abcdef.parquet", 0x0123456789abcdef, true},
		{"ffffffffffffffff.parquet", 0xffffffffffffffff, true},
		{"0123456789ABCDEF.parquet", 0, false},
		{"0123456789abcdef.writers", 0, false},
		{"0123456789abcdef.parquet.tmp", 0, false},
		{"0123456789abcde.parquet", 0, false},
		{"0123456789abcdeg.parquet", 0, false},
		{".parquet", 0, false},
	} {
		if n, ok := objectNumber([]byte(tc.name)); n != tc.n || ok != tc.ok {
			t.Errorf("objectNumber(%q) = %x, %v; want %x, %v", tc.name, n, ok, tc.n, tc.ok)
		}
	}
}
