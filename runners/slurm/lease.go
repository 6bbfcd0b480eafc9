package slurm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrLeaseLost is returned by Lease.Renew and Lease.Release, and sent by
// Lease.KeepAlive, when another holder has taken the lease over (it had
// expired: it was not renewed within its TTL).
var ErrLeaseLost = errors.New("lease lost to another holder")

// HeldError is returned by Locker.TryAcquire while another holder's lease
// is live.
type HeldError struct {
	Dir     string
	Holder  string
	Expires time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("lease %s is held by %s until %s", e.Dir, e.Holder, e.Expires.Format(time.RFC3339Nano))
}

// A Locker takes leases on one directory: an exclusive claim that expires
// unless its holder renews it, safe on shared storage where flock(2) and
// fcntl locks are not (NFS without a working lock manager, or hosts that
// share the files but not a lock daemon).
//
// The directory holds one file per generation of the lease, named by its
// generation number, written once by exclusive creation: a temporary file
// with the whole record is link(2)ed to the generation's name, which fails
// when that name exists and is atomic on NFS (see open(2) on O_EXCL over
// NFS). The live lease is the highest generation. A contender that finds
// it expired, or released, creates the next generation; only one
// contender can create it, so exactly one takes a stale lease over.
// Generations are never deleted (one small file per acquisition; a
// released lease is rewritten with no expiry), so they are contiguous
// from 1 and no contender can mistake an older state for the current
// one. A holder renews by rewriting its generation's record (temporary
// file and rename) and checks that the next generation does not exist;
// when it does, the lease is lost. On NFS a client may see another
// client's new generation only after its attribute cache expires
// (acdirmax), so a holder that let its lease expire may learn that it
// lost it that much later; exclusive creation itself is decided by the
// server and is never stale.
//
// Expiry times are written with the holder's clock and compared with the
// reader's: clocks of the hosts sharing a directory must agree to within
// a small part of TTL. A holder that stops renewing (killed, paused) keeps
// believing it holds the lease until its next Renew: leases exclude
// holders that keep renewing within TTL, as all leases do.
//
// The zero Locker is not usable: Dir is required. Other zero fields take
// defaults. A Locker is safe for concurrent use; each Lease is used by
// one goroutine at a time except Lost/KeepAlive, which may run beside it.
type Locker struct {
	Dir string // the lease's directory, created when missing
	// Holder names this holder in the lease record (default: host, pid
	// and a random suffix, unique per Locker value use).
	Holder string
	TTL    time.Duration // how long a lease lives without renewal, default 30 s
	// Retry is how often Acquire tries again while the lease is held,
	// default TTL/10.
	Retry time.Duration
}

// A Lease is a held generation of a Locker's directory.
type Lease struct {
	dir    string
	holder string
	ttl    time.Duration
	gen    uint64
}

type leaseRecord struct {
	Holder  string    `json:"holder"`
	Gen     uint64    `json:"gen"`
	Expires time.Time `json:"expires"` // zero: released
}

func (lk *Locker) ttl() time.Duration {
	if lk.TTL > 0 {
		return lk.TTL
	}
	return 30 * time.Second
}

func (lk *Locker) holder() string {
	if lk.Holder != "" {
		return lk.Holder
	}
	return defaultHolder()
}

func defaultHolder() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), randomHex(4))
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b)
}

// Acquire takes the lease, waiting (polling every Retry) while another
// holder's lease is live, until ctx is done.
func (lk *Locker) Acquire(ctx context.Context) (*Lease, error) {
	retry := lk.Retry
	if retry <= 0 {
		retry = lk.ttl() / 10
	}
	holder := lk.holder()
	for {
		l, err := lk.tryAcquire(holder)
		var held *HeldError
		if !errors.As(err, &held) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (waiting: %v)", err, ctx.Err())
		case <-time.After(retry):
		}
	}
}

// TryAcquire takes the lease when it is free, released or expired, and
// returns a *HeldError when another holder's lease is live.
func (lk *Locker) TryAcquire() (*Lease, error) {
	return lk.tryAcquire(lk.holder())
}

func (lk *Locker) tryAcquire(holder string) (*Lease, error) {
	if lk.Dir == "" {
		return nil, errors.New("lease: Locker.Dir is empty")
	}
	if err := os.MkdirAll(lk.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("lease: %w", err)
	}
	ttl := lk.ttl()
	// Each lost race means another contender created a generation; a
	// few rounds settle it (the next round sees its live lease).
	for range 16 {
		top, err := topGeneration(lk.Dir)
		if err != nil {
			return nil, err
		}
		if top > 0 {
			rec, mtime, err := readLeaseRecord(lk.Dir, top)
			switch {
			case err != nil && !errors.Is(err, fs.ErrNotExist):
				// An unreadable record: treat it as live for one TTL
				// after its last write, then as expired.
				if time.Since(mtime) < ttl {
					return nil, &HeldError{Dir: lk.Dir, Holder: "(unreadable record)", Expires: mtime.Add(ttl)}
				}
			case err == nil && !rec.Expires.IsZero() && time.Now().Before(rec.Expires):
				return nil, &HeldError{Dir: lk.Dir, Holder: rec.Holder, Expires: rec.Expires}
			}
		}
		l := &Lease{dir: lk.Dir, holder: holder, ttl: ttl, gen: top + 1}
		ok, err := createExclusive(lk.Dir, genName(l.gen), l.record(time.Now()))
		if err != nil {
			return nil, err
		}
		if ok {
			return l, nil
		}
	}
	return nil, fmt.Errorf("lease %s: too much contention", lk.Dir)
}

// Holder is the holder id written in the lease.
func (l *Lease) Holder() string { return l.holder }

// Generation is the lease's generation: it grows by one at every
// acquisition of the directory, so it can fence work done under the lease.
func (l *Lease) Generation() uint64 { return l.gen }

func (l *Lease) record(now time.Time) []byte {
	b, _ := json.Marshal(leaseRecord{Holder: l.holder, Gen: l.gen, Expires: now.Add(l.ttl)})
	return append(b, '\n')
}

// check returns ErrLeaseLost when a higher generation exists or the
// record is no longer this holder's.
func (l *Lease) check() error {
	if _, err := os.Stat(filepath.Join(l.dir, genName(l.gen+1))); err == nil {
		return ErrLeaseLost
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	rec, _, err := readLeaseRecord(l.dir, l.gen)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ErrLeaseLost
		}
		return err
	}
	if rec.Holder != l.holder || rec.Gen != l.gen {
		return ErrLeaseLost
	}
	return nil
}

// Renew extends the lease to TTL from now. It returns ErrLeaseLost when
// another holder took it over, in which case this holder must stop the
// work the lease protects.
func (l *Lease) Renew() error {
	if err := l.check(); err != nil {
		return err
	}
	if err := writeAtomic(l.dir, genName(l.gen), l.record(time.Now())); err != nil {
		return err
	}
	// A contender that read the old expiry just before our write may have
	// created the next generation meanwhile.
	return l.check()
}

// Release gives the lease up: the next contender takes it at once.
// Releasing a lease that was lost returns ErrLeaseLost and changes
// nothing.
func (l *Lease) Release() error {
	if err := l.check(); err != nil {
		return err
	}
	b, _ := json.Marshal(leaseRecord{Holder: l.holder, Gen: l.gen})
	return writeAtomic(l.dir, genName(l.gen), append(b, '\n'))
}

// KeepAlive renews the lease every TTL/3 until ctx is done. The returned
// channel receives one error and is closed when the lease is lost
// (ErrLeaseLost) or could not be renewed for a whole TTL; it is closed
// without a value when ctx ends first.
func (l *Lease) KeepAlive(ctx context.Context) <-chan error {
	ch := make(chan error, 1)
	go func() {
		defer close(ch)
		t := time.NewTicker(l.ttl / 3)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			err := l.Renew()
			switch {
			case err == nil:
				last = time.Now()
			case errors.Is(err, ErrLeaseLost):
				ch <- err
				return
			case time.Since(last) >= l.ttl:
				ch <- fmt.Errorf("lease %s not renewed for %s: %w", l.dir, l.ttl, err)
				return
			}
		}
	}()
	return ch
}

func genName(g uint64) string { return fmt.Sprintf("%020d", g) }

// topGeneration returns the highest generation in dir, 0 when none.
// Generations are contiguous from 1 and never deleted (a generation is
// created only after the one below it was seen), so the highest is found
// by looking names up upwards from the highest that a directory listing
// shows: a listing may miss names created or cached concurrently (NFS
// caches directory contents), a lookup of one name is revalidated.
func topGeneration(dir string) (uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("lease: %w", err)
	}
	var top uint64
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if g, err := strconv.ParseUint(e.Name(), 10, 64); err == nil {
			top = max(top, g)
		}
	}
	for {
		_, err := os.Stat(filepath.Join(dir, genName(top+1)))
		if errors.Is(err, fs.ErrNotExist) {
			return top, nil
		}
		if err != nil {
			return 0, fmt.Errorf("lease: %w", err)
		}
		top++
	}
}

func readLeaseRecord(dir string, gen uint64) (leaseRecord, time.Time, error) {
	p := filepath.Join(dir, genName(gen))
	var rec leaseRecord
	fi, err := os.Stat(p)
	if err != nil {
		return rec, time.Time{}, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return rec, fi.ModTime(), err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fi.ModTime(), fmt.Errorf("lease record %s: %w", p, err)
	}
	return rec, fi.ModTime(), nil
}

// createExclusive creates dir/name with content, failing (false, nil)
// when it exists. The content is complete before the name appears.
func createExclusive(dir, name string, content []byte) (bool, error) {
	tmp, err := writeTemp(dir, name, content)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	final := filepath.Join(dir, name)
	err = os.Link(tmp, final)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	// Over NFS a retransmitted LINK may report failure although the
	// first one succeeded: the temporary file then has two links.
	var st syscall.Stat_t
	if serr := syscall.Stat(tmp, &st); serr == nil && st.Nlink == 2 {
		return true, nil
	}
	return false, fmt.Errorf("lease: %w", err)
}

// writeTemp writes content to a new temporary file in dir, synced.
func writeTemp(dir, name string, content []byte) (string, error) {
	f, err := os.CreateTemp(dir, "."+name+".tmp-")
	if err != nil {
		return "", err
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// writeAtomic replaces dir/name with content (temporary file, rename).
func writeAtomic(dir, name string, content []byte) error {
	tmp, err := writeTemp(dir, name, content)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
