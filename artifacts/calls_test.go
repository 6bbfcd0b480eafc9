package artifacts

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cespare/xxhash/v2"
)

const callKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestCallRoundTripsInTheDocumentedFormat(t *testing.T) {
	s := openTemp(t)
	c := s.Calls()
	if _, ok, err := c.Get(callKey); ok || err != nil {
		t.Fatalf("empty cache: ok %v, err %v", ok, err)
	}
	value := []byte(`{"text":"func F() {}\n","prompt_tokens":12}`)
	if err := c.Put(callKey, value); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.Get(callKey)
	if err != nil || !ok || !bytes.Equal(got, value) {
		t.Fatalf("Get = %q, %v, %v", got, ok, err)
	}
	// STORE.md: calls/XX/KEY holds the magic line, 16 hex digits of the
	// value's xxhash64 and a newline, then the value.
	raw, err := os.ReadFile(filepath.Join(s.Root(), "calls", callKey[:2], callKey))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("lacuna-call-v1\n%016x\n%s", xxhash.Sum64(value), value)
	if string(raw) != want {
		t.Errorf("file is %q, want %q", raw, want)
	}
}

func TestCorruptCallIsQuarantinedAndReportedAbsent(t *testing.T) {
	for _, damage := range []struct {
		name string
		edit func([]byte) []byte
	}{
		{"flipped value byte", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }},
		{"truncated", func(b []byte) []byte { return b[:10] }},
		{"bad magic", func(b []byte) []byte { b[0] = 'L'; return b }},
		{"bad checksum digits", func(b []byte) []byte { b[len("lacuna-call-v1\n")] = 'z'; return b }},
	} {
		t.Run(damage.name, func(t *testing.T) {
			s := openTemp(t)
			c := s.Calls()
			if err := c.Put(callKey, []byte("answer")); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(s.Root(), "calls", callKey[:2], callKey)
			raw, _ := os.ReadFile(p)
			if err := os.WriteFile(p, damage.edit(raw), 0o644); err != nil {
				t.Fatal(err)
			}
			if v, ok, err := c.Get(callKey); ok || err != nil {
				t.Fatalf("corrupt call: Get = %q, %v, %v; want absent", v, ok, err)
			}
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("corrupt call still in calls/: %v", err)
			}
			if _, err := os.Stat(filepath.Join(s.Root(), "quarantine", callKey+".call")); err != nil {
				t.Errorf("not in quarantine/: %v", err)
			}
			if err := c.Put(callKey, []byte("answer")); err != nil {
				t.Fatal(err)
			}
			if v, ok, _ := c.Get(callKey); !ok || string(v) != "answer" {
				t.Errorf("after re-Put: %q, %v", v, ok)
			}
		})
	}
}

func TestCallKeysMustBeLowerCaseHex(t *testing.T) {
	s := openTemp(t)
	for _, key := range []string{
		"", "0123456789abcde", strings.Repeat("a", 129), strings.ToUpper(callKey),
		"../../../../etc/passwd0000000000", callKey[:60] + "/abc", callKey[:63] + "g",
	} {
		if err := s.Calls().Put(key, []byte("x")); err == nil {
			t.Errorf("Put accepted key %q", key)
		}
		if _, _, err := s.Calls().Get(key); err == nil {
			t.Errorf("Get accepted key %q", key)
		}
	}
	for _, key := range []string{callKey[:16], strings.Repeat("f", 128)} {
		if err := s.Calls().Put(key, []byte("x")); err != nil {
			t.Errorf("Put refused key %q: %v", key, err)
		}
	}
}

// Writers of one key write the same call; readers racing with them see
// either nothing or a whole value, never a torn or quarantined one.
func TestConcurrentPutsOfOneKey(t *testing.T) {
	s := openTemp(t)
	value := bytes.Repeat([]byte("the same answer "), 4096)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 20; n++ {
				if err := s.Calls().Put(callKey, value); err != nil {
					errs <- err
					return
				}
				v, ok, err := s.Calls().Get(callKey)
				if err != nil || !ok || !bytes.Equal(v, value) {
					errs <- fmt.Errorf("Get after Put: ok %v, err %v, %d bytes", ok, err, len(v))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if q, _ := os.ReadDir(filepath.Join(s.Root(), "quarantine")); len(q) > 0 {
		t.Errorf("quarantined %d files", len(q))
	}
	if left, _ := os.ReadDir(filepath.Join(s.Root(), "tmp")); len(left) > 0 {
		t.Errorf("%d temp files left", len(left))
	}
}

func TestFsckVerifiesCallsAndGCKeepsThemUnlessCleared(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	keys := []string{callKey, strings.Repeat("1", 64), strings.Repeat("2", 64)}
	for _, k := range keys {
		if err := s.Calls().Put(k, []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	bad := filepath.Join(s.Root(), "calls", "22", keys[2])
	if err := os.WriteFile(bad, []byte("lacuna-call-v1\n0000000000000000\nv"), 0o644); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(s.Root(), "calls", "33", keys[1])
	os.MkdirAll(filepath.Dir(stray), 0o755)
	os.Link(filepath.Join(s.Root(), "calls", "11", keys[1]), stray)

	rep, err := s.Fsck(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, p := range rep.Problems {
		kinds[p.Kind+" "+string(p.Name)]++
	}
	if rep.Calls != 2 || len(rep.Problems) != 2 || kinds["corrupt-call "+keys[2]] != 1 || kinds["corrupt-call "+keys[1]] != 1 {
		t.Fatalf("dry run: %d calls ok, problems %+v", rep.Calls, rep.Problems)
	}
	if _, err := os.Stat(bad); err != nil {
		t.Errorf("a dry run moved the corrupt call: %v", err)
	}
	if rep, err = s.Fsck(ctx, true); err != nil || rep.Calls != 2 || len(rep.Problems) != 2 || rep.Problems[0].Fixed == "" {
		t.Fatalf("repair: %+v, %v", rep, err)
	}
	if rep, err = s.Fsck(ctx, false); err != nil || rep.Calls != 2 || len(rep.Problems) != 0 {
		t.Fatalf("after repair: %+v, %v", rep, err)
	}

	if _, err := s.GC(ctx, map[Digest]bool{}, false); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys[:2] {
		if _, ok, err := s.Calls().Get(k); !ok || err != nil {
			t.Errorf("gc removed call %s: %v", k, err)
		}
	}
	n, size, err := s.Calls().Clear(ctx, true)
	if err != nil || n != 2 || size == 0 {
		t.Fatalf("Clear dry run: %d calls, %d bytes, %v", n, size, err)
	}
	if _, ok, _ := s.Calls().Get(keys[0]); !ok {
		t.Error("a dry run cleared a call")
	}
	if n, _, err = s.Calls().Clear(ctx, false); err != nil || n != 2 {
		t.Fatalf("Clear: %d calls, %v", n, err)
	}
	for _, k := range keys {
		if _, ok, _ := s.Calls().Get(k); ok {
			t.Errorf("call %s survived Clear", k)
		}
	}
}
