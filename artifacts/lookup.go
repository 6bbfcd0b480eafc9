package artifacts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// MinPrefix is the shortest digest prefix MatchPrefix accepts: shorter
// ones match too much of a large store to name anything.
const MinPrefix = 4

// Kinds of name a prefix can match.
const (
	KindAction  = "action"  // an action key with an entry in ac/
	KindFailure = "failure" // an action key with a failure record in fail/
	KindObject  = "object"  // a content digest with an object in cas/
)

// PrefixMatch is one name of the store that begins with a prefix.
type PrefixMatch struct {
	Digest Digest
	Kind   string // KindAction, KindFailure or KindObject
}

// MatchPrefix returns every action key (ac/), failed action key (fail/)
// and object digest (cas/) of the store that begins with prefix, as git
// resolves abbreviated object names: prefix is MinPrefix to 16 lower-case
// hex digits, a whole digest included. Matches are sorted by digest, then
// kind; a key that has both an entry and a failure record matches twice.
// It reads one shard directory of each kind and nothing else.
func (s *Store) MatchPrefix(prefix string) ([]PrefixMatch, error) {
	if len(prefix) < MinPrefix || len(prefix) > 16 || strings.Trim(prefix, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("digest prefix %q: want %d to 16 lower-case hex digits", prefix, MinPrefix)
	}
	var out []PrefixMatch
	for _, k := range []struct{ dir, ext, kind string }{
		{"ac", ".json", KindAction},
		{"fail", ".json", KindFailure},
		{"cas", ".parquet", KindObject},
	} {
		entries, err := os.ReadDir(filepath.Join(s.root, k.dir, prefix[:2]))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, e := range entries {
			name, ok := strings.CutSuffix(e.Name(), k.ext)
			if d := Digest(name); ok && d.Valid() && strings.HasPrefix(name, prefix) {
				out = append(out, PrefixMatch{d, k.kind})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Digest != out[j].Digest {
			return out[i].Digest < out[j].Digest
		}
		return out[i].Kind < out[j].Kind
	})
	return out, nil
}

// Writers returns the action keys that committed object d, first writer
// first, as the shard's writers log records them (see STORE.md); none
// when the log names none.
func (s *Store) Writers(d Digest) ([]Digest, error) {
	var out []Digest
	seen := map[Digest]bool{}
	err := readWriterLog(s.writersPath(d), func(ld, key Digest) {
		if ld == d && !seen[key] {
			seen[key] = true
			out = append(out, key)
		}
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read writers of %s: %w", d, err)
	}
	return out, nil
}

// Snapshots returns the snapshot of every pipeline with one in names/
// (trusted or not: see LoadSnapshot), sorted by pipeline. A file that
// does not decode is skipped: it names no results a run could use.
func (s *Store) Snapshots() ([]*Snapshot, error) {
	paths, err := filepath.Glob(filepath.Join(s.root, "names", "*.tsv"))
	if err != nil {
		return nil, err
	}
	var out []*Snapshot
	for _, p := range paths {
		text, st, err := readText(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, err
		}
		snap, err := decodeSnapshot(text)
		if err != nil || s.snapshotPath(snap.Pipeline) != p {
			continue
		}
		snap.Written = st.ModTime()
		out = append(out, snap)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pipeline < out[j].Pipeline })
	return out, nil
}

// ForgetSnapshot deletes the pipeline's snapshot, so that gc no longer
// keeps what its last runs recorded. The pipeline's next run looks every
// action up again (nothing is lost but the plan's "changed" reasons).
// A pipeline with no snapshot is not an error.
func (s *Store) ForgetSnapshot(pipeline string) error {
	p := s.snapshotPath(pipeline)
	unlock, err := flock(p+".lock", syscall.LOCK_EX, context.Background())
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
