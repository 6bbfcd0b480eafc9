package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestLeaseExcludesASecondContenderUntilReleased(t *testing.T) {
	dir := t.TempDir()
	a := &Locker{Dir: dir, Holder: "a", TTL: time.Minute}
	b := &Locker{Dir: dir, Holder: "b", TTL: time.Minute}
	la, err := a.TryAcquire()
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.TryAcquire()
	var held *HeldError
	if !errors.As(err, &held) || held.Holder != "a" {
		t.Fatalf("b's TryAcquire while a holds: got %v, want a HeldError naming a", err)
	}
	if err := la.Renew(); err != nil {
		t.Fatalf("a's Renew: %v", err)
	}
	if err := la.Release(); err != nil {
		t.Fatal(err)
	}
	lb, err := b.TryAcquire()
	if err != nil {
		t.Fatalf("b after a released: %v", err)
	}
	if lb.Generation() != la.Generation()+1 {
		t.Errorf("generations %d then %d, want consecutive", la.Generation(), lb.Generation())
	}
	if err := la.Renew(); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("a's Renew after b took over: %v, want ErrLeaseLost", err)
	}
	// Acquire waits for the holder's release.
	go func() {
		time.Sleep(200 * time.Millisecond)
		lb.Release()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := (&Locker{Dir: dir, Holder: "c", TTL: time.Minute, Retry: 20 * time.Millisecond}).Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("Acquire returned after %s, before the holder released", d)
	}
}

func TestLeaseExpiredIsTakenOverAndTheOldHolderLearnsIt(t *testing.T) {
	dir := t.TempDir()
	ttl := 300 * time.Millisecond
	a := &Locker{Dir: dir, Holder: "a", TTL: ttl}
	b := &Locker{Dir: dir, Holder: "b", TTL: time.Minute}
	la, err := a.TryAcquire()
	if err != nil {
		t.Fatal(err)
	}
	var held *HeldError
	if _, err := b.TryAcquire(); !errors.As(err, &held) {
		t.Fatalf("b before a's lease expired: %v, want HeldError", err)
	}
	time.Sleep(ttl + 50*time.Millisecond) // a never renews: it is "dead"
	lb, err := b.TryAcquire()
	if err != nil {
		t.Fatalf("b after a's lease expired: %v", err)
	}
	if err := la.Renew(); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("a's Renew after expiry and takeover: %v, want ErrLeaseLost", err)
	}
	if err := la.Release(); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("a's Release after takeover: %v, want ErrLeaseLost", err)
	}
	// a's KeepAlive reports the loss instead of renewing.
	select {
	case err := <-la.KeepAlive(context.Background()):
		if !errors.Is(err, ErrLeaseLost) {
			t.Errorf("KeepAlive sent %v, want ErrLeaseLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("KeepAlive did not report the lost lease")
	}
	if err := lb.Renew(); err != nil {
		t.Errorf("b's Renew: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{genName(1), genName(2)}; !slices.Equal(names, want) {
		t.Errorf("lease directory holds %v, want %v", names, want)
	}
}

func TestLeaseKeptAliveIsNotTakenOver(t *testing.T) {
	dir := t.TempDir()
	ttl := 300 * time.Millisecond
	la, err := (&Locker{Dir: dir, Holder: "a", TTL: ttl}).TryAcquire()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := la.KeepAlive(ctx)
	deadline := time.Now().Add(4 * ttl)
	for time.Now().Before(deadline) {
		var held *HeldError
		if _, err := (&Locker{Dir: dir, Holder: "b", TTL: ttl}).TryAcquire(); !errors.As(err, &held) {
			t.Fatalf("b took a lease that a keeps alive: %v", err)
		}
		time.Sleep(30 * time.Millisecond)
	}
	cancel()
	if err, ok := <-ch; ok {
		t.Errorf("KeepAlive ended with %v, want a closed channel", err)
	}
}

// Many contenders race for one expired lease: exactly one wins.
func TestLeaseExpiredHasOneWinnerAmongRacingContenders(t *testing.T) {
	for round := range 5 {
		dir := t.TempDir()
		if _, err := (&Locker{Dir: dir, Holder: "dead", TTL: 10 * time.Millisecond}).TryAcquire(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		var wins atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 12 {
			wg.Go(func() {
				<-start
				_, err := (&Locker{Dir: dir, Holder: fmt.Sprint("c", i), TTL: time.Minute}).TryAcquire()
				var held *HeldError
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.As(err, &held):
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if w := wins.Load(); w != 1 {
			t.Fatalf("round %d: %d contenders took the expired lease, want 1", round, w)
		}
	}
}

// Contenders that acquire, work and release never overlap.
func TestLeaseMutualExclusionUnderContention(t *testing.T) {
	dir := t.TempDir()
	var inside, entries atomic.Int32
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			lk := &Locker{Dir: dir, Holder: fmt.Sprint("w", i), TTL: 10 * time.Second, Retry: time.Millisecond}
			for range 15 {
				l, err := lk.Acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if n := inside.Add(1); n != 1 {
					t.Errorf("%d holders at once", n)
				}
				entries.Add(1)
				time.Sleep(200 * time.Microsecond)
				inside.Add(-1)
				if err := l.Release(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if entries.Load() != 90 {
		t.Errorf("%d entries, want 90", entries.Load())
	}
}

// A holder in another process that is killed (kill -9: it never
// releases) keeps the lease until it expires; then it is taken over.
func TestLeaseOfAKilledProcessIsTakenOverAfterItsTTL(t *testing.T) {
	dir := t.TempDir()
	ttl := 1500 * time.Millisecond
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLeaseHolder$")
	cmd.Env = append(os.Environ(), "LACUNA_SLURM_LEASE_HELPER="+dir, "LACUNA_SLURM_LEASE_TTL="+ttl.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	buf := make([]byte, 64)
	n, _ := out.Read(buf) // "held" once it holds the lease
	if !strings.Contains(string(buf[:n]), "held") {
		t.Fatalf("helper said %q", buf[:n])
	}
	me := &Locker{Dir: dir, Holder: "parent", TTL: time.Minute}
	time.Sleep(2 * ttl) // it renews: still held
	var held *HeldError
	if _, err := me.TryAcquire(); !errors.As(err, &held) || held.Holder != "helper" {
		t.Fatalf("while the helper lives: %v, want its HeldError", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	me.Retry = 50 * time.Millisecond
	if _, err := me.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(killed); d > ttl+time.Second {
		t.Errorf("took the lease %s after the kill, TTL is %s", d, ttl)
	}
}

func TestHelperLeaseHolder(t *testing.T) {
	dir := os.Getenv("LACUNA_SLURM_LEASE_HELPER")
	if dir == "" {
		t.Skip("helper process for TestLeaseOfAKilledProcessIsTakenOverAfterItsTTL")
	}
	ttl, _ := time.ParseDuration(os.Getenv("LACUNA_SLURM_LEASE_TTL"))
	l, err := (&Locker{Dir: dir, Holder: "helper", TTL: ttl}).TryAcquire()
	if err != nil {
		t.Fatal(err)
	}
	l.KeepAlive(context.Background())
	fmt.Println("held")
	time.Sleep(time.Minute)
	t.Fatal("not killed")
}

func TestLeaseRecordIsWholeOrAbsent(t *testing.T) {
	dir := t.TempDir()
	l, err := (&Locker{Dir: dir, Holder: "a", TTL: time.Minute}).TryAcquire()
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := readLeaseRecord(dir, l.Generation())
	if err != nil || rec.Holder != "a" || rec.Gen != 1 || time.Until(rec.Expires) < 50*time.Second {
		t.Fatalf("record %+v, %v", rec, err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file %s left", filepath.Join(dir, e.Name()))
		}
	}
}
