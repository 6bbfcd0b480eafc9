package artifacts

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The writers relation records which actions produced which object, so
// that an action entry pointing at an object its action never wrote (an
// edited or misplaced entry) is refused instead of served.
//
// An object's first writer is named in its own metadata (MetaActionKey).
// Besides, every Commit appends one line "DIGEST KEY\n" to cas/XX/writers,
// the log of the shard XX that holds the object. Logging every writer,
// not only the later ones, keeps the relation after an object is removed
// and recomputed by another action: the first action's line is still
// there. The log is appended with one write(2) on an O_APPEND descriptor,
// which the kernel does not interleave with other appends, and a reader
// ignores a line that is not whole (a power loss can cut the last one).
// gc rewrites the logs to the lines of the actions and objects it keeps.

// ErrWrongWriter reports an action entry, or a snapshot entry, whose
// output object was not written by its action.
var ErrWrongWriter = errors.New("object was not written by this action")

func (s *Store) writersPath(d Digest) string {
	return filepath.Join(filepath.Dir(s.ObjectPath(d)), "writers")
}

// writerLine is the log line recording that action key wrote object d.
func writerLine(d, key Digest) []byte {
	return []byte(string(d) + " " + string(key) + "\n")
}

// recordWriter appends (d, key) to d's shard log. It is called after the
// object is in cas/ and before any action entry names it.
func (s *Store) recordWriter(d, key Digest) error {
	path := s.writersPath(d)
	if err := s.ensureDir(path); err != nil {
		return err
	}
	f, err := openFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("record writer of %s: %w", d, err)
	}
	_, err = f.Write(writerLine(d, key))
	if err == nil && s.syncEach {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("record writer of %s: %w", d, err)
	}
	s.dirty.Store(true)
	return nil
}

// loggedWriter reports whether d's shard log records key as a writer of d.
func (s *Store) loggedWriter(d, key Digest) (bool, error) {
	found := false
	err := readWriterLog(s.writersPath(d), func(ld, lk Digest) { found = found || ld == d && lk == key })
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read writers of %s: %w", d, err)
	}
	return found, nil
}

// writerPairs reads every shard log: the set of (object, action) pairs.
func (s *Store) writerPairs() (map[[2]Digest]bool, error) {
	logs, err := filepath.Glob(filepath.Join(s.root, "cas", "??", "writers"))
	if err != nil {
		return nil, err
	}
	pairs := map[[2]Digest]bool{}
	for _, p := range logs {
		if err := readWriterLog(p, func(d, key Digest) { pairs[[2]Digest{d, key}] = true }); err != nil {
			return nil, err
		}
	}
	return pairs, nil
}

// readWriterLog calls fn for every whole, well-formed line of a log.
func readWriterLog(path string, fn func(d, key Digest)) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for len(data) > 0 {
		line, rest, whole := bytes.Cut(data, []byte{'\n'})
		if d, key, ok := bytes.Cut(line, []byte{' '}); whole && ok && Digest(d).Valid() && Digest(key).Valid() {
			fn(Digest(d), Digest(key))
		}
		data = rest
	}
	return nil
}

// checkWriter verifies that obj, found through the action obj.Action, was
// written by that action: the file's metadata names it (fileWriter), or
// the shard log records it. An Object with no Action (read by its digest
// alone) is not checked. On a mismatch the action entry, if it still
// points at the object, is moved to quarantine/ and the generation bumped,
// so that snapshots naming it are distrusted and the next run recomputes.
func (s *Store) checkWriter(obj Object, fileWriter Digest) error {
	if obj.Action == "" || obj.Action == fileWriter {
		return nil
	}
	ok, err := s.loggedWriter(obj.Digest, obj.Action)
	if err != nil || ok {
		return err
	}
	err = fmt.Errorf("object %s: written by action %s, not by %s: %w", obj.Digest, fileWriter, obj.Action, ErrWrongWriter)
	if derr := s.dropAction(obj.Action, obj.Digest); derr != nil {
		return fmt.Errorf("%w (dropping the action entry: %v)", err, derr)
	}
	return err
}

// dropAction moves the entry of key to quarantine/ when it names object d,
// and bumps the generation either way (a snapshot may name the pair).
func (s *Store) dropAction(key, d Digest) error {
	if a, err := s.GetAction(key); err == nil && a.Output.Digest == d {
		if err := s.quarantine(s.path("ac", key, ".json"), string(key)+".json"); err != nil {
			return err
		}
	}
	return s.bumpGeneration()
}
