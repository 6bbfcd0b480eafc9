package artifacts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// Calls is the store's cache of completed model calls (STORE.md, "Call
// cache"): calls/XX/KEY, one file a call, written atomically as each call
// completes and verified on every read. Keys are chosen by the caller
// (runners/llm: the model's identity, the canonical request and the sample
// index) and must be 16 to 128 lower-case hex digits. Safe for concurrent
// use by any number of processes: the last writer of a key wins, and every
// writer of a key writes the same call.
type Calls struct{ s *Store }

// Calls returns the store's call cache.
func (s *Store) Calls() *Calls { return &Calls{s: s} }

const callMagic = "lacuna-call-v1\n"

func (c *Calls) path(key string) (string, error) {
	if len(key) < 16 || len(key) > 128 {
		return "", fmt.Errorf("call key %q: want 16 to 128 hex digits", key)
	}
	for i := 0; i < len(key); i++ {
		if !(key[i] >= '0' && key[i] <= '9' || key[i] >= 'a' && key[i] <= 'f') {
			return "", fmt.Errorf("call key %q: want lower-case hex digits", key)
		}
	}
	return filepath.Join(c.s.root, "calls", key[:2], key), nil
}

// Get returns the value stored under key. A file that fails its checksum
// is moved to quarantine/ and reported as absent: the call is made again.
// (Before moving it, Get checks that the name still holds the file it
// read, so a value a concurrent Put just renamed into place is kept.)
func (c *Calls) Get(key string) ([]byte, bool, error) {
	p, err := c.path(key)
	if err != nil {
		return nil, false, err
	}
	v, st, err := readCall(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case errors.Is(err, errBadCall):
		c.quarantine(p, key, st)
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("call cache: %w", err)
	}
	return v, true, nil
}

// Put stores value under key, atomically: a reader sees the previous
// value or all of this one.
func (c *Calls) Put(key string, value []byte) error {
	p, err := c.path(key)
	if err != nil {
		return err
	}
	b := make([]byte, 0, len(callMagic)+17+len(value))
	b = append(b, callMagic...)
	b = appendHex16(b, xxhash.Sum64(value))
	b = append(b, '\n')
	b = append(b, value...)
	if err := c.s.writeFileAtomic(p, b); err != nil {
		return fmt.Errorf("call cache: %w", err)
	}
	return nil
}

// verify checks every call file for Fsck, counting the good ones in
// rep.Calls and reporting the others as corrupt-call problems; with repair
// they move to quarantine/. A file whose name is not a key is corrupt too.
func (c *Calls) verify(ctx context.Context, repair bool, rep *FsckReport) error {
	return filepath.WalkDir(filepath.Join(c.s.root, "calls"), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		key := d.Name()
		_, st, err := readCall(p)
		if want, perr := c.path(key); perr != nil {
			err = perr
		} else if want != p {
			err = fmt.Errorf("in the wrong shard (%s)", filepath.Base(filepath.Dir(p)))
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile
		}
		if err == nil {
			rep.Calls++
			return nil
		}
		prob := Problem{Kind: "corrupt-call", Name: Digest(key), Detail: err.Error()}
		if repair && c.quarantine(p, key, st) == nil {
			prob.Fixed = "moved to quarantine/"
		}
		rep.Problems = append(rep.Problems, prob)
		return nil
	})
}

// Clear deletes every call of the cache (lacuna gc --calls), holding the
// store lock exclusively so that no run is writing meanwhile, and returns
// how many calls and bytes it deleted; with dryRun it only counts.
func (c *Calls) Clear(ctx context.Context, dryRun bool) (calls int, bytes int64, err error) {
	unlock, err := c.s.LockExclusive(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer unlock()
	err = filepath.WalkDir(filepath.Join(c.s.root, "calls"), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		if info, err := d.Info(); err == nil {
			bytes += info.Size()
		}
		calls++
		if dryRun {
			return nil
		}
		return os.Remove(p)
	})
	if err != nil {
		return calls, bytes, fmt.Errorf("clear the call cache: %w", err)
	}
	if !dryRun {
		c.s.dirty.Store(true)
		c.s.Sync()
	}
	return calls, bytes, nil
}

var errBadCall = errors.New("not a valid call file")

// readCall reads and checks a call file. A file that fails its check
// gives an error wrapping errBadCall, with st describing the file read.
func readCall(p string) (v []byte, st os.FileInfo, err error) {
	f, err := openFile(p, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err = f.Stat()
	if err != nil {
		return nil, nil, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, st, err
	}
	v, err = decodeCall(b)
	if err != nil {
		return nil, st, fmt.Errorf("%w: %v", errBadCall, err)
	}
	return v, st, nil
}

// quarantine moves the corrupt call file at p aside, unless p no longer
// names the file that was read (st): a concurrent Put replaced it.
func (c *Calls) quarantine(p, key string, st os.FileInfo) error {
	if now, err := os.Stat(p); err != nil || st == nil || !os.SameFile(now, st) {
		return err
	}
	return c.s.quarantine(p, key+".call")
}

func decodeCall(b []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(b, []byte(callMagic))
	if !ok || len(rest) < 17 || rest[16] != '\n' {
		return nil, errors.New("not a call file")
	}
	sum, err := strconv.ParseUint(string(rest[:16]), 16, 64)
	if err != nil {
		return nil, errors.New("bad checksum field")
	}
	v := rest[17:]
	if xxhash.Sum64(v) != sum {
		return nil, errors.New("checksum mismatch")
	}
	return v, nil
}

func appendHex16(b []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	for i := 15; i >= 0; i-- {
		b = append(b, digits[(v>>(uint(i)*4))&0xf])
	}
	return b
}
