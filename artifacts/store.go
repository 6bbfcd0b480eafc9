// Package artifacts is lacuna's content-addressed store: Parquet objects
// named by the digest of their rows, an action cache mapping action keys to
// those objects, blobs, per-key locks and the tools that check and prune it
// (fsck, gc). The on-disk format is described in STORE.md.
//
// A Store is safe for concurrent use by many goroutines and by many processes
// sharing one directory: every file is written to a temporary name and renamed
// into place, and work on one action key is serialised by a lock file that the
// kernel releases when its holder dies.
package artifacts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// FormatVersion is written to the store's VERSION file; a store written by a
// newer, incompatible lacuna is refused rather than misread.
const FormatVersion = "1"

// Store is a store directory. The zero value is not usable; call Open.
type Store struct {
	root      string
	syncEach  bool
	dirty     atomic.Bool
	cache     *rowCache
	tmpPrefix string
	dirs      sync.Map // shard directories known to exist
}

// tmpSeq numbers temporary files across every Store of the process.
var tmpSeq atomic.Uint64

// Option configures Open.
type Option func(*Store)

// WithSyncEach makes every write fsync its file before the rename. By
// default writes are flushed once per run by Sync (group commit): a crash
// of the process loses nothing, and a power loss can leave objects that
// fail verification and are recomputed (see STORE.md).
func WithSyncEach(on bool) Option { return func(s *Store) { s.syncEach = on } }

// WithCacheBytes bounds the in-process cache of decoded artifacts (default
// 64 MiB; 0 disables it).
func WithCacheBytes(n int64) Option { return func(s *Store) { s.cache = newRowCache(n) } }

var layoutDirs = []string{"ac", "cas", "blobs", "calls", "runs", "locks", "fail", "names", "tmp", "quarantine"}

// ErrNoStore is in the chain of OpenExisting's error when root holds no
// store.
var ErrNoStore = errors.New("no store")

// Open opens the store at root, creating its layout when it does not exist.
func Open(root string, opts ...Option) (*Store, error) {
	return open(root, true, opts)
}

// OpenExisting opens the store at root like Open, but never creates one:
// when root holds no store (no VERSION file) it fails with an error
// wrapping ErrNoStore, and leaves the file system as it was. Commands that
// only read use it, so that asking about a store that is not there does
// not leave an empty one behind.
func OpenExisting(root string, opts ...Option) (*Store, error) {
	return open(root, false, opts)
}

func open(root string, create bool, opts []Option) (*Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	s := &Store{root: abs, cache: newRowCache(64 << 20), tmpPrefix: strconv.Itoa(os.Getpid()) + "-"}
	for _, o := range opts {
		o(s)
	}
	vf := filepath.Join(abs, "VERSION")
	if b, err := os.ReadFile(vf); err == nil {
		if v := strings.TrimSpace(string(b)); v != FormatVersion {
			return nil, fmt.Errorf("store %s has format version %q; this lacuna reads version %s", abs, v, FormatVersion)
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return nil, fmt.Errorf("%s: %w", abs, ErrNoStore)
		}
		for _, d := range layoutDirs {
			if err := os.MkdirAll(filepath.Join(abs, d), 0o755); err != nil {
				return nil, fmt.Errorf("create store: %w", err)
			}
		}

		if err := s.writeFileAtomic(vf, []byte(FormatVersion+"\n")); err != nil {
			return nil, fmt.Errorf("create store: %w", err)
		}
	} else {
		return nil, fmt.Errorf("open store: %w", err)
	}
	return s, nil
}

// Root is the store's absolute path.
func (s *Store) Root() string { return s.root }

// CacheDir returns root/cache/name, created if missing: caches shared by
// every run whose content is checked on use (verified module downloads,
// the Go build cache). They are not artifacts; gc leaves them and deleting
// them costs only time.
func (s *Store) CacheDir(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("bad cache name %q", name)
	}
	d := filepath.Join(s.root, "cache", name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", err
	}
	return d, nil
}

// path joins a layout directory, a two-digit shard and a name.
func (s *Store) path(dir string, d Digest, ext string) string {
	shard := "xx"
	if len(d) >= 2 {
		shard = string(d[:2])
	}
	return filepath.Join(s.root, dir, shard, string(d)+ext)
}

// ensureDir creates a shard directory once per process, so that writes do
// not pay for a failed open or rename and a mkdir.
func (s *Store) ensureDir(path string) error {
	dir := filepath.Dir(path)
	if _, ok := s.dirs.Load(dir); ok {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	s.dirs.Store(dir, true)
	return nil
}

// tempFile creates a file under tmp/ whose name starts with the pid, so
// that CleanTemp can tell the leftovers of dead processes from live work.
func (s *Store) tempFile() (*os.File, error) {
	name := s.tmpPrefix + strconv.FormatUint(tmpSeq.Add(1), 10) + "-" + strconv.FormatUint(rand.Uint64(), 36)
	return openFile(filepath.Join(s.root, "tmp", name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
}

// writeFileAtomic writes data to path through a temporary file and a rename,
// so readers see either the old content or all of the new.
func (s *Store) writeFileAtomic(path string, data []byte) error {
	f, err := s.tempFile()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) { // store being created: tmp/ not there yet
			f, err = os.CreateTemp(filepath.Dir(path), ".tmp-*")
		}
		if err != nil {
			return err
		}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	return s.finishTemp(f, path)
}

// finishTemp syncs (when configured), closes and renames a temp file over
// path: for files whose last version wins (action entries, snapshots).
func (s *Store) finishTemp(f *os.File, path string) error {
	if err := s.closeTemp(f); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := s.ensureDir(path); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	s.dirty.Store(true)
	return nil
}

// closeTemp syncs (when configured) and closes a temp file.
func (s *Store) closeTemp(f *os.File) error {
	if s.syncEach {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// linkNoReplace gives the closed temp file tmp the name path unless that
// name exists: it never replaces a file, and reports existed when path was
// already there. The caller removes tmp afterwards. Content-addressed
// files use it so that two writers of one name cannot swap bytes under a
// reader that recorded the first file's checksum. link(2) fails with
// EEXIST instead of replacing; file systems without hard links get
// renameat2(RENAME_NOREPLACE), which has the same contract.
func (s *Store) linkNoReplace(tmp, path string) (existed bool, err error) {
	if err := s.ensureDir(path); err != nil {
		return false, err
	}
	err = unix.Link(tmp, path)
	if err == unix.EPERM || err == unix.ENOTSUP || err == unix.EMLINK {
		err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_NOREPLACE)
	}
	switch {
	case err == unix.EEXIST:
		return true, nil
	case err != nil:
		return false, &os.LinkError{Op: "link", Old: tmp, New: path, Err: err}
	}
	s.dirty.Store(true)
	return false, nil
}

// Sync makes everything written so far durable (one syncfs for the whole
// store instead of an fsync per file). The run loop calls it at the end of
// every run, including interrupted ones.
func (s *Store) Sync() error {
	if !s.dirty.Swap(false) {
		return nil
	}
	f, err := os.Open(s.root)
	if err != nil {
		return err
	}
	defer f.Close()
	return syncfs(f)
}

func syncfs(f *os.File) error { return unix.Syncfs(int(f.Fd())) }

// writeJSON writes v as one line of JSON atomically. Strings are not
// HTML-escaped, so that an action's canonical config is stored as the
// exact bytes its key was computed from.
func (s *Store) writeJSON(path string, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return s.writeFileAtomic(path, b.Bytes())
}

func readJSON(path string, v any) error {
	b, err := readFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// CleanTemp removes temporary files left by processes that no longer run
// (a kill -9 mid-write leaves one). Files of live processes are kept.
func (s *Store) CleanTemp() (removed int) {
	entries, _ := os.ReadDir(filepath.Join(s.root, "tmp"))
	for _, e := range entries {
		pid, _, ok := strings.Cut(e.Name(), "-")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(pid)
		if err == nil && n != os.Getpid() && processAlive(n) {
			continue
		}
		if n == os.Getpid() {
			continue
		}
		if os.Remove(filepath.Join(s.root, "tmp", e.Name())) == nil {
			removed++
		}
	}
	return removed
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
