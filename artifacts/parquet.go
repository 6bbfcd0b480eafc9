package artifacts

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	kzstd "github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// Parquet layout constants. They are part of what makes the same rows give
// the same bytes; changing one changes file checksums (never content
// digests), so they only change with FormatVersion.
const (
	createdBy      = "lacuna"
	rowGroupRows   = 1 << 16
	pageBufferSize = 64 << 10
	// SchemaVersionKey etc. are the key-value metadata lacuna writes.
	MetaNode          = "lacuna.node"
	MetaType          = "lacuna.type"
	MetaActionKey     = "lacuna.action_key"
	MetaSchemaVersion = "lacuna.schema_version"
)

var zstdCodec = inPlaceZstd{&zstd.Codec{Level: zstd.SpeedDefault}}

// inPlaceChunk is the most bytes of a long page compressed as one zstd
// frame by inPlaceZstd.
const inPlaceChunk = 1 << 20

// inPlaceZstd is parquet-go's zstd codec, except that a page over
// inPlaceChunk bytes (one long value: a record of hundreds of MiB) is
// compressed over its own bytes, as a run of zstd frames of inPlaceChunk
// input bytes each, instead of into a second buffer about its size. A run
// of frames is one valid zstd stream: every Parquet reader decodes it.
// Pages up to inPlaceChunk give the same bytes as the plain codec.
//
// Encode may overwrite src: parquet-go's writer compresses a page from its
// encoding buffer and never reads that buffer again before encoding the
// next page into it (writerBuffers.compress swaps the two buffers). That is
// the only caller: the store's Writer.
type inPlaceZstd struct{ *zstd.Codec }

// chunkEncoder compresses inPlaceZstd's frames: parquet-go's level, with a
// window no larger than a frame's input (the default window's history
// buffer alone is 16 MiB). Safe for concurrent use (EncodeAll).
var chunkEncoder = sync.OnceValues(func() (*kzstd.Encoder, error) {
	return kzstd.NewWriter(nil, kzstd.WithEncoderLevel(kzstd.SpeedDefault), kzstd.WithWindowSize(inPlaceChunk), kzstd.WithEncoderConcurrency(1))
})

func (c inPlaceZstd) Encode(dst, src []byte) ([]byte, error) {
	if len(src) <= inPlaceChunk {
		if overlap(dst, src) {
			// After a long page the writer's two buffers are one array.
			dst = nil
		}
		return c.Codec.Encode(dst, src)
	}
	enc, err := chunkEncoder()
	if err != nil {
		return dst, err
	}
	var (
		frame   = make([]byte, 0, inPlaceChunk+inPlaceChunk>>7+1024)
		pending []byte // output not yet copied: it would overrun unread input
		w       int    // output written to src[:w]
	)
	for r := 0; r < len(src); {
		end := min(r+inPlaceChunk, len(src))
		frame = enc.EncodeAll(src[r:end], frame[:0])
		rest := frame
		r = end
		// Copy what fits behind the read position, older bytes first; the
		// rest waits in pending. A frame is never more than a few dozen
		// bytes longer than its input, so pending stays that small.
		n := copy(src[w:r], pending)
		w += n
		pending = append(pending[:0], pending[n:]...)
		if len(pending) == 0 {
			n = copy(src[w:r], rest)
			w += n
			rest = rest[n:]
		}
		pending = append(pending, rest...)
	}
	if len(pending) == 0 {
		return src[:w], nil
	}
	if w+len(pending) <= cap(src) {
		return append(src[:w], pending...), nil
	}
	// Incompressible: the frames are longer than the page.
	out := make([]byte, 0, w+len(pending))
	return append(append(out, src[:w]...), pending...), nil
}

// overlap says whether a and b, up to their capacities, share memory.
func overlap(a, b []byte) bool {
	if cap(a) == 0 || cap(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return a0 < b0+uintptr(cap(b)) && b0 < a0+uintptr(cap(a))
}

// ErrCorrupt reports an object whose bytes or rows do not match its name.
var ErrCorrupt = errors.New("corrupt object")

// Writer writes one artifact: rows go to a temporary Parquet file while
// their content digest is computed; Commit renames the file to cas/ under
// that digest. The file carries no timestamps or host names, so the same
// rows and metadata always give the same bytes.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	s      *Store
	f      *os.File
	sum    *xxhash.Digest
	w      *parquet.GenericWriter[any]
	schema *parquet.Schema
	hash   *ContentHasher
	long   *longRows // nil: the schema has no long values (see longRows)
	longs  int       // the long rows written, each a row group
	buf    []parquet.Row
	meta   map[string]string
	done   bool
}

type hashingWriter struct {
	w   io.Writer
	sum *xxhash.Digest
	n   int64
}

func (h *hashingWriter) Write(p []byte) (int, error) {
	n, err := h.w.Write(p)
	h.sum.Write(p[:n])
	h.n += int64(n)
	return n, err
}

// NewWriter starts an artifact with the given schema. meta becomes the
// file's key-value metadata (node address, type, action key, schema version).
func (s *Store) NewWriter(schema *parquet.Schema, meta map[string]string) (*Writer, error) {
	f, err := s.tempFile()
	if err != nil {
		return nil, err
	}
	w := &Writer{s: s, f: f, sum: xxhash.New(), schema: schema, hash: NewContentHasher(schema), long: newLongRows(s, schema), meta: meta}
	opts := []parquet.WriterOption{
		schema,
		parquet.CreatedBy(createdBy, "", ""),
		parquet.Compression(zstdCodec),
		parquet.MaxRowsPerRowGroup(rowGroupRows),
		parquet.PageBufferSize(pageBufferSize),
		parquet.ColumnPageBuffers(pageSpill{s}),
	}
	// A byte array column's values may be large (a record of hundreds of
	// MiB): its minimum and maximum are not copied into page headers and
	// the footer, where each would be a whole copy of the longest value.
	for _, leaf := range schema.Columns() {
		if col, ok := schema.Lookup(leaf...); ok && col.Node.Type().Kind() == parquet.ByteArray {
			opts = append(opts, parquet.SkipPageBounds(leaf...), parquet.SkipPageStatistics(leaf...))
		}
	}
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		opts = append(opts, parquet.KeyValueMetadata(k, meta[k]))
	}
	w.w = parquet.NewGenericWriter[any](&hashingWriter{w: f, sum: w.sum}, opts...)
	return w, nil
}

// Schema is the artifact's schema.
func (w *Writer) Schema() *parquet.Schema { return w.schema }

// WriteRows appends rows, which must follow the writer's schema. A long
// row (longRows) is written as a row group of its own.
func (w *Writer) WriteRows(rows []parquet.Row) error {
	for _, r := range rows {
		w.hash.Add(r)
	}
	if w.long == nil {
		_, err := w.w.WriteRows(rows)
		return err
	}
	for len(rows) > 0 {
		i := 0
		for i < len(rows) && !w.long.isLong(rows[i]) {
			i++
		}
		if i > 0 {
			if _, err := w.w.WriteRows(rows[:i]); err != nil {
				return err
			}
		}
		if i == len(rows) {
			break
		}
		if err := w.writeLong(rows[i]); err != nil {
			return err
		}
		rows = rows[i+1:]
		if w.longs++; w.longs == maxLongRows {
			// Parquet's row groups are counted in 16 bits: the rest of
			// the artifact's rows go through parquet-go, whatever their
			// length.
			if _, err := w.w.WriteRows(rows); err != nil {
				return err
			}
			w.long = nil
			break
		}
	}
	return nil
}

// writeLong writes a long row through a file of its own (longRows), which
// parquet-go copies into the artifact after flushing the rows before it.
func (w *Writer) writeLong(row parquet.Row) error {
	f, size, err := w.long.write(row)
	if err != nil {
		return fmt.Errorf("long row: %w", err)
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	pf, err := parquet.OpenFile(f, size, parquet.FileSchema(w.schema), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("long row: %w", err)
	}
	_, err = w.w.WriteRowGroup(pf.RowGroups()[0])
	return err
}

// Write appends one Go value (a struct matching the schema, or a
// map[string]any for a schema built from parquet.Group).
func (w *Writer) Write(v any) error {
	w.buf = append(w.buf[:0], w.schema.Deconstruct(nil, v))
	err := w.WriteRows(w.buf)
	w.buf[0] = nil // the row's values may be large: keep none past the call
	return err
}

// SetMeta adds a key-value pair to the file's metadata (before Commit).
// Metadata is not part of the content digest.
func (w *Writer) SetMeta(key, value string) { w.w.SetKeyValueMetadata(key, value) }

// Rows is the number of rows written so far.
func (w *Writer) Rows() int64 { return w.hash.Rows() }

// Abort discards the artifact.
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
	os.Remove(w.f.Name())
}

// Commit finishes the file and moves it into cas/, then logs the action
// its metadata names (MetaActionKey) as a writer of the object (see
// ErrWrongWriter). The move never replaces a file: if an object with the same digest is
// already there and verifies, it is kept, this file is dropped, and the
// returned Object describes the existing file (its checksum and writer);
// a corrupt one is quarantined and replaced. Any number of Writers, in
// any processes, may commit the same rows at once: all of them return the
// one file that won.
func (w *Writer) Commit() (Object, error) {
	if w.done {
		return Object{}, errors.New("writer already closed")
	}
	if err := w.w.Close(); err != nil {
		w.Abort()
		return Object{}, err
	}
	st, err := w.f.Stat()
	if err != nil {
		w.Abort()
		return Object{}, err
	}
	w.done = true
	if err := w.s.closeTemp(w.f); err != nil {
		os.Remove(w.f.Name())
		return Object{}, err
	}
	defer os.Remove(w.f.Name())
	action := Digest(w.meta[MetaActionKey])
	obj := Object{Digest: w.hash.Digest(), FileSum: digestOf(w.sum.Sum64()), Size: st.Size(), Rows: w.hash.Rows(), Writer: action, Action: action}
	// Linking again is needed only when the existing object turns out
	// corrupt (statObject quarantines it) or is removed meanwhile.
	for attempt := 0; ; attempt++ {
		existed, err := w.s.linkNoReplace(w.f.Name(), w.s.ObjectPath(obj.Digest))
		if err != nil {
			return Object{}, fmt.Errorf("commit object %s: %w", obj.Digest, err)
		}
		if !existed {
			break
		}
		existing, err := w.s.statObject(obj.Digest)
		if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
			continue
		}
		if err != nil {
			return Object{}, fmt.Errorf("commit object %s: %w", obj.Digest, err)
		}
		existing.Action = action
		obj = existing
		break
	}
	if action != "" {
		if err := w.s.recordWriter(obj.Digest, action); err != nil {
			return Object{}, err
		}
	}
	return obj, nil
}

// ObjectPath is where the object with digest d lives.
func (s *Store) ObjectPath(d Digest) string { return s.path("cas", d, ".parquet") }

// checkSum compares an object's bytes with the checksum an action
// recorded. The writer is deterministic, so the same producing action
// always writes the same bytes: a mismatch is corruption, unless the file
// now holds the same rows as written by another action (the object was
// removed, then recomputed by a different node), which its metadata shows;
// whether the recording action is still among the object's writers is
// checkWriter's question.
func checkSum(obj Object, data []byte, r *Reader) error {
	if obj.FileSum == "" || SumBytes(data) == obj.FileSum {
		return nil
	}
	if obj.Writer != "" && Digest(r.meta[MetaActionKey]) != obj.Writer {
		return nil
	}
	return fmt.Errorf("object %s: file checksum %s, recorded %s: %w", obj.Digest, SumBytes(data), obj.FileSum, ErrCorrupt)
}

// statObject verifies an existing object and describes it; a corrupt one is
// quarantined and reported as missing.
func (s *Store) statObject(d Digest) (Object, error) {
	data, err := os.ReadFile(s.ObjectPath(d))
	if err != nil {
		return Object{}, err
	}
	r, err := decode(data, d)
	if err != nil {
		if qerr := s.Quarantine(d); qerr != nil {
			return Object{}, fmt.Errorf("object %s is corrupt (%v) and could not be quarantined: %w", d, err, qerr)
		}
		return Object{}, fs.ErrNotExist
	}
	return Object{Digest: d, FileSum: SumBytes(data), Size: int64(len(data)), Rows: int64(len(r.rows)), Writer: Digest(r.meta[MetaActionKey])}, nil
}

// Quarantine moves a corrupt object out of cas/ so that it is recomputed.
func (s *Store) Quarantine(d Digest) error {
	s.cache.drop(d)
	if err := s.quarantine(s.ObjectPath(d), string(d)+".parquet"); err != nil {
		return err
	}
	return s.bumpGeneration()
}

// quarantine moves path into quarantine/ as name. A source already gone
// is not an error (another reader moved it); a missing quarantine/ (a
// user cleaned it up) is made again rather than leaving the file in place.
func (s *Store) quarantine(path, name string) error {
	dir := filepath.Join(s.root, "quarantine")
	err := os.Rename(path, filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Lstat(path); serr != nil {
			return nil // the source is gone
		}
		if err = os.MkdirAll(dir, 0o755); err == nil {
			err = os.Rename(path, filepath.Join(dir, name))
		}
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Reader is a verified, decoded artifact. Its rows are shared with the
// store's cache: callers must not modify them.
type Reader struct {
	Object Object
	schema *parquet.Schema
	meta   map[string]string
	rows   []parquet.Row
}

// Schema is the artifact's Parquet schema.
func (r *Reader) Schema() *parquet.Schema { return r.schema }

// Meta returns the file's key-value metadata.
func (r *Reader) Meta() map[string]string { return r.meta }

// Rows returns every row.
func (r *Reader) Rows() []parquet.Row { return r.rows }

// NumRows is the row count.
func (r *Reader) NumRows() int { return len(r.rows) }

// Maps decodes every row into a map from column name to value, as
// parquet.Schema.Reconstruct makes them (groups as nested maps, lists as
// slices). Safe for concurrent use.
func (r *Reader) Maps() ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(r.rows))
	for i, row := range r.rows {
		var v any
		if err := r.schema.Reconstruct(&v, row); err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
		m, _ := v.(map[string]any)
		out = append(out, m)
	}
	return out, nil
}

// JSONSafe is v (a value Maps makes) with every NaN or infinite float,
// also inside lists and maps, replaced by nil, which JSON writes as null
// (it has neither). Lists and maps are copied, never changed: rows may be
// shared.
func JSONSafe(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil
		}
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = JSONSafe(x[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = JSONSafe(e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = JSONSafe(x[i])
		}
		return out
	}
	return v
}

// Open reads and verifies an object: its rows, decoded and hashed, must
// give its digest, and its bytes must match the checksum obj carries (from
// the action that recorded it; see checkSum). A mismatch returns
// ErrCorrupt and quarantines the file, so that the next run recomputes it.
// When obj.Action is set, that action must be among the object's writers;
// otherwise Open returns ErrWrongWriter, leaves the object (it is another
// action's valid output) and drops the action entry (see checkWriter).
func (s *Store) Open(obj Object) (*Reader, error) {
	if r := s.cache.get(obj.Digest); r != nil {
		if err := s.checkWriter(obj, r.Object.Writer); err != nil {
			return nil, err
		}
		return r, nil
	}
	data, err := readFile(s.ObjectPath(obj.Digest))
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", obj.Digest, err)
	}
	r, err := decode(data, obj.Digest)
	if err == nil {
		err = checkSum(obj, data, r)
	}
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			if qerr := s.Quarantine(obj.Digest); qerr != nil {
				err = fmt.Errorf("%w (and it could not be quarantined: %v)", err, qerr)
			}
		}
		return nil, err
	}
	if err := s.checkWriter(obj, Digest(r.meta[MetaActionKey])); err != nil {
		return nil, err
	}
	r.Object = Object{Digest: obj.Digest, FileSum: SumBytes(data), Size: int64(len(data)), Rows: int64(len(r.rows)), Writer: Digest(r.meta[MetaActionKey])}
	s.cache.put(r, int64(len(data))*4)
	return r, nil
}

// decode parses a Parquet file and checks its rows against digest want.
func decode(data []byte, want Digest) (rd *Reader, err error) {
	defer func() {
		// parquet-go can panic on some malformed files; a damaged object is
		// corruption to report, not a crash.
		if p := recover(); p != nil {
			rd, err = nil, fmt.Errorf("object %s: %v: %w", want, p, ErrCorrupt)
		}
	}()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("object %s: %v: %w", want, err, ErrCorrupt)
	}
	schema := internSchema(f.Schema())
	rd = &Reader{schema: schema, meta: map[string]string{}}
	for _, kv := range f.Metadata().KeyValueMetadata {
		rd.meta[kv.Key] = kv.Value
	}
	rows := make([]parquet.Row, 0, f.NumRows())
	pr := parquet.NewReader(f, schema)
	defer pr.Close()
	buf := make([]parquet.Row, 64)
	for {
		n, err := pr.ReadRows(buf)
		for _, row := range buf[:n] {
			rows = append(rows, row.Clone())
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("object %s: %v: %w", want, err, ErrCorrupt)
		}
		if n == 0 {
			break
		}
	}
	h := NewContentHasher(schema)
	for _, row := range rows {
		h.Add(row)
	}
	if want != "" && h.Digest() != want {
		return nil, fmt.Errorf("object %s: rows hash to %s: %w", want, h.Digest(), ErrCorrupt)
	}
	rd.rows = rows
	return rd, nil
}

// schemas interns decoded schemas by fingerprint: a fan-in of ten
// thousand artifacts of one schema then holds one Schema, not ten thousand.
var schemas sync.Map // fingerprint → *parquet.Schema

func internSchema(s *parquet.Schema) *parquet.Schema {
	v, _ := schemas.LoadOrStore(SchemaFingerprint(s), s)
	return v.(*parquet.Schema)
}

// ReadAll decodes every row of r into T, a struct whose parquet tags match
// the artifact's schema (the row type the producing node declared).
func ReadAll[T any](r *Reader) ([]T, error) {
	schema := SchemaOf[T]()
	if SchemaFingerprint(schema) != SchemaFingerprint(r.schema) {
		var zero T
		return nil, fmt.Errorf("artifact %s does not have the schema of %T:\n%s\nversus\n%s", r.Object.Digest, zero, r.schema, schema)
	}
	out := make([]T, len(r.rows))
	for i, row := range r.rows {
		if err := schema.Reconstruct(&out[i], row); err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
	}
	return out, nil
}

// SchemaOf is the Parquet schema of row type T.
func SchemaOf[T any]() *parquet.Schema {
	var zero T
	return parquet.SchemaOf(zero)
}

// Columns reads the named top-level columns of an artifact whose schema
// is not fixed (an import's, or another node type's): one value per row
// and name, null where the column is optional and empty. A missing or
// repeated column is an error naming the columns there are.
func (r *Reader) Columns(names ...string) ([][]parquet.Value, error) {
	idx := make([]int, len(names))
	for i, name := range names {
		leaf, ok := r.schema.Lookup(name)
		if !ok || leaf.Node.Repeated() || len(leaf.Path) != 1 {
			var cols []string
			for _, f := range r.schema.Fields() {
				cols = append(cols, f.Name())
			}
			return nil, fmt.Errorf("no top-level column %q; the input has %s", name, strings.Join(cols, ", "))
		}
		idx[i] = leaf.ColumnIndex
	}
	out := make([][]parquet.Value, len(r.rows))
	for n, row := range r.rows {
		vals := make([]parquet.Value, len(names))
		for i := range vals {
			vals[i] = parquet.NullValue()
		}
		for _, v := range row {
			for i, c := range idx {
				if v.Column() == c {
					vals[i] = v
				}
			}
		}
		out[n] = vals
	}
	return out, nil
}

// Text is a value as text: a string or JSON column's bytes, or the value
// formatted (an int64 id); "" for null.
func Text(v parquet.Value) string {
	if v.IsNull() {
		return ""
	}
	if v.Kind() == parquet.ByteArray || v.Kind() == parquet.FixedLenByteArray {
		return string(v.ByteArray())
	}
	return v.String()
}
