package embed

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
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

func TestEmbedCachedRecomputesAFileWhoseBytesChanged(t *testing.T) {
	m, err := Load(tinyDir(t, nil), Mean)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	ctx := context.Background()
	texts := []string{"the cat", "on the mat"}
	want, err := m.EmbedCached(ctx, cache, texts, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Flip bits of a stored vector's first value (and, in another file, of
	// its checksum), keeping each file's length.
	for i, at := range []int{2, 4 * m.Dim()} {
		p := m.cachePath(cache, texts[i])
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[at] ^= 0x40
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := m.EmbedCached(ctx, cache, texts, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("%q: corrupted cache file read back as %v, want %v recomputed", texts[i], got[i], want[i])
		}
		if v, ok := m.readCached(m.cachePath(cache, texts[i])); !ok || !slices.Equal(v, want[i]) {
			t.Errorf("%q: the corrupted file was not rewritten", texts[i])
		}
	}
}

func TestCacheKeyChangesWithVersionAndEveryInput(t *testing.T) {
	base := cachePath("d", cacheVersion, "sha256:aa", Mean, 128, "text")
	for name, p := range map[string]string{
		"version":     cachePath("d", cacheVersion+1, "sha256:aa", Mean, 128, "text"),
		"fingerprint": cachePath("d", cacheVersion, "sha256:ab", Mean, 128, "text"),
		"pooling":     cachePath("d", cacheVersion, "sha256:aa", CLS, 128, "text"),
		"max tokens":  cachePath("d", cacheVersion, "sha256:aa", Mean, 127, "text"),
		"text":        cachePath("d", cacheVersion, "sha256:aa", Mean, 128, "text "),
	} {
		if p == base {
			t.Errorf("another %s gives the same cache file %s", name, p)
		}
	}
}

func TestEmbedCachedWritesFilesReadableByAll(t *testing.T) {
	m, err := Load(tinyDir(t, nil), Mean)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	if _, err := m.EmbedCached(context.Background(), cache, []string{"the cat"}, 1); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(m.cachePath(cache, "the cat"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("cache file mode %v, want -rw-r--r--", fi.Mode().Perm())
	}
}

func TestEmbedCachedReturnsTheVectorsWhenTheCacheCannotBeWritten(t *testing.T) {
	m, err := Load(tinyDir(t, nil), Mean)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	texts := []string{"the cat", "on the mat", "the dog ran"}
	want, err := m.Embed(ctx, texts, 2)
	if err != nil {
		t.Fatal(err)
	}
	// A regular file where the cache directory should be: no shard
	// directory can be made in it, whoever runs the test (root included).
	cache := filepath.Join(t.TempDir(), "cache")
	if err := os.WriteFile(cache, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := m.EmbedCached(ctx, cache, texts, 2)
	var werr *CacheWriteError
	if !errors.As(err, &werr) {
		t.Fatalf("err %v, want a *CacheWriteError", err)
	}
	if werr.Unstored != len(texts) {
		t.Errorf("Unstored %d, want %d", werr.Unstored, len(texts))
	}
	if len(got) != len(texts) {
		t.Fatalf("%d vectors, want %d", len(got), len(texts))
	}
	for i := range texts {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("%q: %v, want Embed's %v", texts[i], got[i], want[i])
		}
	}
}

func TestEmbedCachedRemovesOnlyStaleTemporaryFiles(t *testing.T) {
	m, err := Load(tinyDir(t, nil), Mean)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	shard := filepath.Join(cache, "ab")
	if err := os.MkdirAll(shard, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	files := map[string]bool{ // name: kept
		".tmp-stale": false,
		".tmp-fresh": true,
		"stale.f32":  true,
	}
	for name := range files {
		p := filepath.Join(shard, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if name != ".tmp-fresh" {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := m.EmbedCached(context.Background(), cache, []string{"the cat"}, 1); err != nil {
		t.Fatal(err)
	}
	for name, kept := range files {
		_, err := os.Stat(filepath.Join(shard, name))
		if exists := err == nil; exists != kept {
			t.Errorf("%s: exists %v, want %v", name, exists, kept)
		}
	}
}
