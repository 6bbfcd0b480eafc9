package artifacts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"
)

// Locks are flock(2) locks on files under locks/. The kernel drops them when
// the holding process exits, however it exits, so a kill -9 never leaves a
// store that needs a manual unlock.

// Unlock releases a lock.
type Unlock func()

func flock(path string, how int, ctx context.Context) (Unlock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
			return nil, err
		}
	}
	return lockFile(f, how, ctx)
}

func lockFile(f *os.File, how int, ctx context.Context) (Unlock, error) {
	err := retry(ctx, func() (bool, error) {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		return err == syscall.EWOULDBLOCK || err == syscall.EINTR, err
	})
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// retry calls try until it succeeds or fails for good (busy = false),
// backing off from 1 ms to 100 ms, and gives up when ctx is done.
func retry(ctx context.Context, try func() (busy bool, err error)) error {
	wait := time.Millisecond
	for {
		busy, err := try()
		if err == nil || !busy {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		if wait < 100*time.Millisecond {
			wait *= 2
		}
	}
}

// LockKey takes the exclusive lock of one action key, waiting while another
// goroutine or process holds it. The holder computes the action; a waiter,
// once it gets the lock, finds the action cached and reuses it.
//
// Key locks are open-file-description byte-range locks on one file,
// locks/keys, at an offset derived from the key: no file is created per
// key (creating files is the dominant cost of a small node on ext4), and
// like flock they vanish with the process that held them. Each call opens
// its own description, so goroutines of one process exclude each other too.
func (s *Store) LockKey(ctx context.Context, key Digest) (Unlock, error) {
	f, err := openFile(filepath.Join(s.root, "locks", "keys"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: int64(xxhash.Sum64String(string(key)) >> 2), Len: 1}
	err = retry(ctx, func() (bool, error) {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
		return err == unix.EAGAIN || err == unix.EACCES || err == unix.EINTR, err
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock key %s: %w", key, err)
	}
	return func() {
		un := lk
		un.Type = unix.F_UNLCK
		unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &un)
		f.Close()
	}, nil
}

// LockShared is held by every run for its whole duration; gc and fsck
// --repair take LockExclusive, so they never delete what a run is using.
func (s *Store) LockShared(ctx context.Context) (Unlock, error) {
	return flock(filepath.Join(s.root, "locks", "store.lock"), syscall.LOCK_SH, ctx)
}

// LockExclusive waits until no run holds the store.
func (s *Store) LockExclusive(ctx context.Context) (Unlock, error) {
	return flock(filepath.Join(s.root, "locks", "store.lock"), syscall.LOCK_EX, ctx)
}
