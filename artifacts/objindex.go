package artifacts

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
)

// ObjectIndex answers whether objects are in cas/ by reading each shard
// directory once, on the first question about that shard, instead of one
// stat per object: a no-op run of 100,000 nodes asks about every object
// its snapshot names, and 256 directory reads cost a fraction of 100,000
// stats.
//
// An index reflects each shard as it was when it was read: an object
// written later reads as absent (the caller falls back to the action
// cache, which stats it), one removed later as present. Runs hold the
// store's shared lock, so gc and fsck --repair, which remove objects under
// the exclusive lock, cannot make it stale while a run uses it. An
// ObjectIndex is safe for concurrent use.
type ObjectIndex struct {
	s      *Store
	shards [256]struct {
		once sync.Once
		set  []uint64 // digests present, as sorted numbers
	}
}

// NewObjectIndex returns an empty index of s's objects.
func (s *Store) NewObjectIndex() *ObjectIndex {
	return &ObjectIndex{s: s}
}

// Has reports whether object d was in cas/ when its shard was read. A
// shard that cannot be read holds nothing.
func (x *ObjectIndex) Has(d Digest) bool {
	if !d.Valid() {
		return false
	}
	set := x.shard(hexByte(d[0])<<4 | hexByte(d[1]))
	n, _ := strconv.ParseUint(string(d), 16, 64)
	_, ok := slices.BinarySearch(set, n)
	return ok
}

// Prefetch reads every shard not read yet, on workers goroutines, and
// returns when all are read: for a caller about to ask about most of the
// store's objects, that wants the reads done at once.
func (x *ObjectIndex) Prefetch(workers int) {
	var wg sync.WaitGroup
	for g := range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := g; k < len(x.shards); k += max(workers, 1) {
				x.shard(k)
			}
		}()
	}
	wg.Wait()
}

func (x *ObjectIndex) shard(k int) []uint64 {
	sh := &x.shards[k]
	sh.once.Do(func() { sh.set = x.read(fmt.Sprintf("%02x", k)) })
	return sh.set
}

func (x *ObjectIndex) read(shard string) []uint64 {
	set := readObjectNames(filepath.Join(x.s.root, "cas", shard))
	slices.Sort(set)
	return set
}

// objectNumber is the digest named by a cas/ file name (DIGEST.parquet)
// as a number; ok is false for any other name.
func objectNumber(name []byte) (n uint64, ok bool) {
	if len(name) != 16+len(".parquet") || string(name[16:]) != ".parquet" {
		return 0, false
	}
	for _, c := range name[:16] {
		switch {
		case c >= '0' && c <= '9':
			n = n<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			n = n<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return n, true
}
