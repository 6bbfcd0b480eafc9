package embed

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// EmbedCached is Embed with a cache of vectors in dir, shared by every
// caller and process that embeds with the same model: a text's vector is
// stored under a key of the model's Fingerprint, its pooling, its MaxTokens
// and the text, so texts embedded once (a catalog's documents embedded by
// one node and reused by another, or a rerun after k changed) are read back
// instead of encoded again. Only the missing texts are encoded, batch at a
// time as Embed does. A cached file of the wrong size is treated as missing
// and rewritten; files are written to a temporary name and renamed, so a
// reader never sees a partial vector. The result equals Embed's. Safe for
// concurrent use, also by several processes on one dir.
func (m *Model) EmbedCached(ctx context.Context, dir string, texts []string, batch int) ([][]float32, error) {
	out := make([][]float32, len(texts))
	paths := make([]string, len(texts))
	var missing []int
	for i, t := range texts {
		paths[i] = m.cachePath(dir, t)
		if v, ok := m.readCached(paths[i]); ok {
			out[i] = v
		} else {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	todo := make([]string, len(missing))
	for j, i := range missing {
		todo[j] = texts[i]
	}
	vs, err := m.Embed(ctx, todo, batch)
	if err != nil {
		return nil, err
	}
	for j, i := range missing {
		out[i] = vs[j]
		if err := writeCached(paths[i], vs[j]); err != nil {
			return nil, fmt.Errorf("embed: cache: %w", err)
		}
	}
	return out, nil
}

// Cached returns the vectors of texts EmbedCached has stored in dir, and
// whether every one was there; it encodes nothing (a plan that must not
// embed looks up with it).
func (m *Model) Cached(dir string, texts []string) ([][]float32, bool) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, ok := m.readCached(m.cachePath(dir, t))
		if !ok {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

func (m *Model) cachePath(dir, text string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%d\n", m.fingerprint, m.pooling, m.maxTokens)
	h.Write([]byte(text))
	key := hex.EncodeToString(h.Sum(nil))
	return filepath.Join(dir, key[:2], key+".f32")
}

func (m *Model) readCached(path string) ([]float32, bool) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) != 4*m.Dim() {
		return nil, false
	}
	v := make([]float32, m.Dim())
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, true
}

func writeCached(path string, v []float32) error {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
