package artifacts

import (
	"bytes"
	"errors"
	"fmt"
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
func (c *Calls) Get(key string) ([]byte, bool, error) {
	p, err := c.path(key)
	if err != nil {
		return nil, false, err
	}
	b, err := readFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	v, err := decodeCall(b)
	if err != nil {
		c.quarantine(p, key)
		return nil, false, nil
	}
	return v, true, nil
}

// Put stores value under key, atomically.
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
	return c.s.writeFileAtomic(p, b)
}

// Verify checks every call file, moving the corrupt ones to quarantine/.
func (c *Calls) Verify() (ok, bad int, err error) {
	err = filepath.WalkDir(filepath.Join(c.s.root, "calls"), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		b, err := readFile(p)
		if err != nil {
			return err
		}
		if _, err := decodeCall(b); err != nil {
			bad++
			c.quarantine(p, d.Name())
			return nil
		}
		ok++
		return nil
	})
	return ok, bad, err
}

func (c *Calls) quarantine(p, key string) {
	q := filepath.Join(c.s.root, "quarantine", key+".call")
	if c.s.ensureDir(q) == nil && os.Rename(p, q) == nil {
		return
	}
	os.Remove(p)
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
