package artifacts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An action entry that is there but is not its key's entry is reported as
// damaged, naming the file, never as a bare JSON error; QuarantineAction
// moves it aside and bumps the generation.
func TestDamagedActionEntryIsReportedAndQuarantined(t *testing.T) {
	s := openTemp(t)
	key := Digest("0123456789abcdef")
	putAction(t, s, key, "node.x", sampleRows())
	path := s.path("ac", key, ".json")
	good, _ := os.ReadFile(path)
	other := strings.Replace(string(good), `"key":"0123456789abcdef"`, `"key":"fedcba9876543210"`, 1)
	for _, tc := range []struct{ name, body, why string }{
		{"random bytes", "\x8f\x00\xffz{{", "not JSON of an action entry"},
		{"empty", "", "not JSON of an action entry"},
		{"cut short", string(good[:len(good)/2]), "not JSON of an action entry"},
		{"another key's entry", other, `it names key "fedcba9876543210"`},
		{"a bad output digest", strings.Replace(string(good), `"output":{"digest":"`, `"output":{"digest":"XY`, 1), "is not a digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := s.GetAction(key)
			var de *DamagedActionError
			if !errors.As(err, &de) || !errors.Is(err, ErrDamagedAction) || !strings.Contains(de.Why, tc.why) {
				t.Fatalf("got %v, want a damaged entry: %s", err, tc.why)
			}
			want := filepath.Join("ac", "01", "0123456789abcdef.json")
			if de.Path != want || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "lacuna fsck") {
				t.Errorf("error %q does not name %s and the repair", err, want)
			}
		})
	}
	if ok := s.ActionIntact(key, time.Time{}); ok {
		t.Error("ActionIntact of a damaged entry")
	}
	then := time.Now().Add(-time.Hour)
	os.Chtimes(path, then, then)
	if ok := s.ActionIntact(key, time.Now()); !ok {
		t.Error("ActionIntact reads an entry not modified since the snapshot (it should only stat it)")
	}
	gen := s.Generation()
	if err := s.QuarantineAction(key); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetAction(key); !errors.Is(err, ErrNotFound) || s.Generation() != gen+1 {
		t.Errorf("after QuarantineAction: %v, generation %d → %d", err, gen, s.Generation())
	}
	if _, err := os.Stat(filepath.Join(s.Root(), "quarantine", string(key)+".json")); err != nil {
		t.Error(err)
	}
	if err := s.QuarantineAction(key); err != nil {
		t.Errorf("quarantining an entry already gone: %v", err)
	}
}
