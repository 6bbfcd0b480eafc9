package embed

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestFingerprintChangesWithEveryFileLoadReadsAndOnlyThose(t *testing.T) {
	dir := tinyDir(t, nil)
	base, err := Fingerprint(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Load(dir, Mean)
	if err != nil {
		t.Fatal(err)
	}
	if m.Fingerprint() != base {
		t.Errorf("Model.Fingerprint %s, Fingerprint(dir) %s: want equal", m.Fingerprint(), base)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("not read by Load"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fp, _ := Fingerprint(dir); fp != base {
		t.Errorf("a file Load does not read changed the fingerprint")
	}
	seen := map[string]string{base: "original"}
	for _, f := range modelFiles {
		t.Run(f.name, func(t *testing.T) {
			p := filepath.Join(dir, f.name)
			orig, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(p, orig, 0o644)
			if err := os.WriteFile(p, append(slices.Clone(orig), ' '), 0o644); err != nil {
				t.Fatal(err)
			}
			fp, err := Fingerprint(dir)
			if err != nil {
				t.Fatal(err)
			}
			if other, dup := seen[fp]; dup {
				t.Errorf("editing %s gives the fingerprint of %s", f.name, other)
			}
			seen[fp] = f.name
			if f.optional {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if fp, err := Fingerprint(dir); err != nil || seen[fp] != "" {
					t.Errorf("removing %s: fingerprint %s (seen as %q), err %v; want a new one", f.name, fp, seen[fp], err)
				}
			} else {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if _, err := Fingerprint(dir); err == nil {
					t.Errorf("Fingerprint without %s: no error", f.name)
				}
			}
		})
	}
}

func TestEmbedCachedEqualsEmbedAndReadsBackWhatItStored(t *testing.T) {
	dir := tinyDir(t, nil)
	m, err := Load(dir, Mean)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	ctx := context.Background()
	texts := []string{"the cat", "on the mat", "the cat"}
	want, err := m.Embed(ctx, texts, 2)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.EmbedCached(ctx, cache, texts, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("text %d: EmbedCached %v, Embed %v", i, got[i], want[i])
		}
	}
	// A stored vector is what a later call returns: plant a marker vector
	// for "on the mat", and a truncated file for "the cat" (recomputed).
	marker := make([]float32, m.Dim())
	marker[0] = 42
	if err := writeCached(m.cachePath(cache, "on the mat"), marker); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.cachePath(cache, "the cat"), []byte{1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = m.EmbedCached(ctx, cache, texts, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[1], marker) {
		t.Errorf("second call did not read the stored vector of %q", texts[1])
	}
	if !slices.Equal(got[0], want[0]) || !slices.Equal(got[2], want[2]) {
		t.Errorf("a truncated cache file was not recomputed: %v, want %v", got[0], want[0])
	}
	// Another pooling of the same files is another key.
	cls, err := Load(dir, CLS)
	if err != nil {
		t.Fatal(err)
	}
	if cls.cachePath(cache, "x") == m.cachePath(cache, "x") {
		t.Errorf("mean and CLS pooling share a cache key")
	}
}
