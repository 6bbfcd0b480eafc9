package embed

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// cacheVersion names the code that computes a cached vector and the cache
// file format; it is hashed into every cache key. Bump it whenever a change
// to the encoder (encoder.go), the GEMM driver or its kernels (gemm.go,
// kernel_*), Tokens, basicTokens, the pooling or normalize could change a
// vector for the same model files, pooling, MaxTokens and text, and
// whenever the file format changes: the old files are then never read
// again (they stay on disk until the cache directory is removed).
//
// 2: a CRC-32C of the vector follows it in the file.
// 3: the GEMM encoder (one FMA chain per element, float32 softmax).
const cacheVersion = 3

// crcTable is the Castagnoli table of the cache files' checksums.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// staleTemp is the age beyond which a ".tmp-*" file in a cache directory
// is taken to be left over by a process that died while writing it.
const staleTemp = time.Hour

// swept holds the cache directories whose stale temporary files this
// process has already removed.
var swept sync.Map

// CacheWriteError is what EmbedCached returns, together with every vector,
// when it could not store some of them (a full or read-only disk): the
// vectors are complete and equal Embed's, only the cache is short.
// Callers that can go on without the cache report it rather than fail.
type CacheWriteError struct {
	// Unstored is how many of the computed vectors were not stored.
	Unstored int
	// Err is the first write's error.
	Err error
}

func (e *CacheWriteError) Error() string {
	return fmt.Sprintf("embed: cache: %d vectors not stored: %v", e.Unstored, e.Err)
}

func (e *CacheWriteError) Unwrap() error { return e.Err }

// EmbedCached is Embed with a cache of vectors in dir, shared by every
// caller and process that embeds with the same model: a text's vector is
// stored under a key of cacheVersion, the model's Fingerprint, its
// pooling, its MaxTokens and the text, so texts embedded once (a catalog's
// documents embedded by one node and reused by another, or a rerun after k
// changed) are read back instead of encoded again. Only the missing texts
// are encoded, batch at a time as Embed does. A cached file of the wrong
// size or whose checksum does not match its vector is treated as missing
// and rewritten; files are written to a temporary name, made readable by
// all (0644) and renamed, so a reader never sees a partial vector. The
// result equals Embed's.
//
// When a vector cannot be stored, EmbedCached stops storing and returns
// every vector with a *CacheWriteError; any other error comes with no
// vectors. The cache grows without bound (one file of 4·Dim+4 bytes per
// distinct text and model); nothing evicts it. The first call on a dir
// in a process removes the ".tmp-*" files older than an hour that a
// killed writer left. Safe for concurrent use, also by several processes
// on one dir.
func (m *Model) EmbedCached(ctx context.Context, dir string, texts []string, batch int) ([][]float32, error) {
	if _, done := swept.LoadOrStore(dir, true); !done {
		sweepTemps(dir, time.Now().Add(-staleTemp))
	}
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
	var werr *CacheWriteError
	for j, i := range missing {
		out[i] = vs[j]
		if werr != nil {
			werr.Unstored++
		} else if err := writeCached(paths[i], vs[j]); err != nil {
			werr = &CacheWriteError{Unstored: 1, Err: err}
		}
	}
	if werr != nil {
		return out, werr
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
	return cachePath(dir, cacheVersion, m.fingerprint, m.pooling, m.maxTokens, text)
}

// cachePath is the file of a vector under dir: dir/XX/KEY.f32, KEY the hex
// SHA-256 of everything the vector depends on, XX its first two digits.
func cachePath(dir string, version int, fingerprint string, pooling Pooling, maxTokens int, text string) string {
	h := sha256.New()
	fmt.Fprintf(h, "lacuna embed cache %d\n%s\n%s\n%d\n", version, fingerprint, pooling, maxTokens)
	h.Write([]byte(text))
	key := hex.EncodeToString(h.Sum(nil))
	return filepath.Join(dir, key[:2], key+".f32")
}

// readCached reads a vector file: Dim little-endian float32s, then the
// little-endian CRC-32C of those bytes. It reports false when the file is
// absent, unreadable, of another size or fails its checksum.
func (m *Model) readCached(path string) ([]float32, bool) {
	b, err := os.ReadFile(path)
	n := 4 * m.Dim()
	if err != nil || len(b) != n+4 || crc32.Checksum(b[:n], crcTable) != binary.LittleEndian.Uint32(b[n:]) {
		return nil, false
	}
	v := make([]float32, m.Dim())
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, true
}

func writeCached(path string, v []float32) error {
	b := make([]byte, 4*len(v), 4*len(v)+4)
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// sweepTemps removes the ".tmp-*" files in dir's shard directories last
// modified before cutoff. It is best effort: what it cannot read or
// remove it leaves.
func sweepTemps(dir string, cutoff time.Time) {
	shards, _ := os.ReadDir(dir)
	for _, s := range shards {
		if !s.IsDir() {
			continue
		}
		files, _ := os.ReadDir(filepath.Join(dir, s.Name()))
		for _, f := range files {
			if !strings.HasPrefix(f.Name(), ".tmp-") {
				continue
			}
			if fi, err := f.Info(); err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(cutoff) {
				os.Remove(filepath.Join(dir, s.Name(), f.Name()))
			}
		}
	}
}
