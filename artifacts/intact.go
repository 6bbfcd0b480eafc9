package artifacts

import (
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ActionChecker answers ActionIntact for many keys against one time: a
// run's check of every action entry its snapshot answers. It stats each
// entry relative to its shard directory, opened once, so that a stat
// looks up one name rather than every component of the store's path:
// a no-op run of 100,000 nodes makes 100,000 of them.
//
// An ActionChecker is safe for concurrent use. Close releases the shard
// directories; Intact still answers after Close, through ActionIntact.
type ActionChecker struct {
	s     *Store
	since time.Time

	mu     sync.RWMutex // Intact holds it for reading, Close for writing
	closed bool
	shards [256]struct {
		once sync.Once
		fd   int // -1: the shard cannot be opened (no entry is in place)
	}
}

// NewActionChecker returns a checker of s's action entries against since
// (ActionIntact's argument).
func (s *Store) NewActionChecker(since time.Time) *ActionChecker {
	return &ActionChecker{s: s, since: since}
}

// Intact is s.ActionIntact(key, since).
func (c *ActionChecker) Intact(key Digest) bool {
	if !key.Valid() {
		return c.s.ActionIntact(key, c.since)
	}
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return c.s.ActionIntact(key, c.since)
	}
	sh := &c.shards[hexByte(key[0])<<4|hexByte(key[1])]
	sh.once.Do(func() {
		fd, err := unix.Open(filepath.Join(c.s.root, "ac", string(key[:2])), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			fd = -1
		}
		sh.fd = fd
	})
	var st unix.Stat_t
	var err error = unix.ENOENT
	for sh.fd >= 0 {
		if err = unix.Fstatat(sh.fd, string(key)+".json", &st, 0); err != unix.EINTR {
			break
		}
	}
	c.mu.RUnlock()
	if err != nil {
		return false
	}
	// As in ActionIntact: not after, rather than before.
	if !c.since.IsZero() && !time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec)).After(c.since) {
		return true
	}
	_, err = c.s.GetAction(key)
	return err == nil
}

// Close releases the shard directories. It waits for Intact calls in
// progress.
func (c *ActionChecker) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	for k := range c.shards {
		sh := &c.shards[k]
		sh.once.Do(func() { sh.fd = -1 }) // never opened: nothing to close
		if sh.fd >= 0 {
			unix.Close(sh.fd)
		}
	}
}

// hexByte is the value of a lower-case hex digit (Digest.Valid holds).
func hexByte(b byte) int {
	if b >= 'a' {
		return int(b-'a') + 10
	}
	return int(b - '0')
}
