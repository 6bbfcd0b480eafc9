package artifacts

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/parquet-go/parquet-go"
)

// A Digest names content: the xxhash64 of a canonical encoding, printed as 16
// lower-case hex digits. Artifacts are named by the digest of their logical
// rows (ContentHasher), actions by the digest of their inputs (engine keys).
type Digest string

// Valid reports whether d has the shape of a digest.
func (d Digest) Valid() bool {
	if len(d) != 16 {
		return false
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Short is the first 8 digits, for display.
func (d Digest) Short() string {
	if len(d) > 8 {
		return string(d[:8])
	}
	return string(d)
}

func digestOf(sum uint64) Digest { return Digest(fmt.Sprintf("%016x", sum)) }

// SumBytes is the file checksum used for integrity: xxhash64 of raw bytes.
func SumBytes(b []byte) Digest { return digestOf(xxhash.Sum64(b)) }

// SchemaFingerprint is a canonical text of a Parquet schema: field names in
// order, repetition, physical and logical types. It is part of every content
// digest, so two artifacts with the same values but different column types
// never share a name. It is computed by walking the schema rather than from
// parquet-go's String() so that a library upgrade does not rename artifacts.
func SchemaFingerprint(s *parquet.Schema) string {
	var b strings.Builder
	writeNodeFingerprint(&b, s)
	return b.String()
}

func writeNodeFingerprint(b *strings.Builder, n parquet.Node) {
	switch {
	case n.Optional():
		b.WriteByte('?')
	case n.Repeated():
		b.WriteByte('*')
	}
	if n.Leaf() {
		t := n.Type()
		b.WriteString(strconv.Itoa(int(t.Kind())))
		if lt := t.LogicalType(); lt != nil {
			b.WriteByte(':')
			b.WriteString(lt.String())
		}
		if t.Kind() == parquet.FixedLenByteArray {
			b.WriteByte('/')
			b.WriteString(strconv.Itoa(t.Length()))
		}
		return
	}
	if lt := n.Type().LogicalType(); lt != nil {
		b.WriteString(lt.String())
	}
	b.WriteByte('{')
	for i, f := range n.Fields() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(f.Name()))
		b.WriteByte(':')
		writeNodeFingerprint(b, f)
	}
	b.WriteByte('}')
}

// ContentHasher computes an artifact's content digest: xxhash64 over the
// schema fingerprint and a canonical encoding of each row's values (column
// index, levels, kind and bytes). Compression, page layout and metadata do
// not enter it, so re-encoding the same rows keeps the same name.
type ContentHasher struct {
	h    *xxhash.Digest
	buf  []byte
	rows int64
}

// NewContentHasher starts a digest for rows of schema s.
func NewContentHasher(s *parquet.Schema) *ContentHasher {
	c := &ContentHasher{h: xxhash.New()}
	c.h.WriteString("lacuna-rows-v1\x00")
	c.h.WriteString(SchemaFingerprint(s))
	c.h.WriteString("\x00")
	return c
}

// Add hashes one row.
func (c *ContentHasher) Add(row parquet.Row) {
	b := c.buf[:0]
	b = binary.AppendUvarint(b, uint64(len(row)))
	for _, v := range row {
		b = binary.AppendUvarint(b, uint64(v.Column()))
		b = append(b, byte(v.RepetitionLevel()), byte(v.DefinitionLevel()))
		if v.IsNull() {
			b = append(b, 0xff)
			continue
		}
		k := v.Kind()
		b = append(b, byte(k))
		switch k {
		case parquet.Boolean:
			if v.Boolean() {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		case parquet.Int32:
			b = binary.LittleEndian.AppendUint32(b, uint32(v.Int32()))
		case parquet.Int64:
			b = binary.LittleEndian.AppendUint64(b, uint64(v.Int64()))
		case parquet.Float:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v.Float()))
		case parquet.Double:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Double()))
		default:
			raw := v.ByteArray()
			b = binary.AppendUvarint(b, uint64(len(raw)))
			if len(raw) > 4096 {
				// Hashed where it is: a copy would double a large value.
				c.h.Write(b)
				c.h.Write(raw)
				b = b[:0]
				continue
			}
			b = append(b, raw...)
		}
	}
	c.h.Write(b)
	if cap(b) <= 1<<20 {
		c.buf = b
	}
	c.rows++
}

// Rows is how many rows were added.
func (c *ContentHasher) Rows() int64 { return c.rows }

// Digest returns the content digest of the rows added so far.
func (c *ContentHasher) Digest() Digest {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(c.rows))
	h := *c.h
	h.Write(n[:])
	return digestOf(h.Sum64())
}
