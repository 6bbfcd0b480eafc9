package artifacts

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/encoding/rle"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// longValueAt is the length from which a byte-array value makes its row a
// long row (see longRows). A variable so that tests can lower it.
var longValueAt = inPlaceChunk

// maxLongRows is the most long rows an artifact writes as row groups of
// their own: half the row groups a Parquet file may have. A variable so
// that tests can lower it.
var maxLongRows = parquet.MaxRowGroups / 2

// columnIndexSizeLimit is parquet-go's default, which the Writer keeps.
const columnIndexSizeLimit = parquet.DefaultColumnIndexSizeLimit

// longRows writes the long rows of a Writer: rows holding a byte-array
// value of longValueAt bytes or more (a record of hundreds of MiB that
// import reads). parquet-go, writing such a row, holds the value three
// times at once: the row's, its column buffer's copy and the encoded page.
// A long row is written as a row group of its own instead: longRows
// encodes and compresses each column's one-value page itself, straight
// from the row's values, into a temporary Parquet file under tmp/, and
// the Writer hands that file's row group to parquet-go, which copies its
// column chunks into the artifact byte for byte (the verbatim copy of
// parquet.Writer.WriteRowGroup). A long value is read in place and never
// copied whole: the write holds the row and a few MiB.
//
// The pages, statistics and indexes are those parquet-go writes for the
// same row alone in a row group; the Writer's file is the one parquet-go
// writes when the row group is flushed before and after the long row
// (TestLongRowsAreWrittenAsParquetGoWrites). Only flat schemas (every
// column a top-level optional or required leaf, in the default encoding
// or plain, with the Writer's codec) take this way; rows of any other
// schema are written by parquet-go whatever their length.
//
// A longRows is used by its Writer's goroutine only.
type longRows struct {
	s       *Store
	schema  *parquet.Schema
	columns []longColumn
	// elements is the schema as a Parquet footer lists it, read from an
	// empty file parquet-go writes with the schema.
	elements []format.SchemaElement
}

// longColumn is one leaf of a flat schema.
type longColumn struct {
	path     []string
	typ      parquet.Type
	enc      encoding.Encoding
	maxDef   byte
	byteKind bool // a byte array: no page statistics or bounds (NewWriter)
}

// newLongRows returns the long-row writer for schema, or nil when the
// schema is not flat or has no byte-array column.
func newLongRows(s *Store, schema *parquet.Schema) *longRows {
	l := &longRows{s: s, schema: schema}
	hasBytes := false
	for i, path := range schema.Columns() {
		leaf, ok := schema.Lookup(path...)
		if !ok || len(path) != 1 || leaf.ColumnIndex != i || leaf.MaxRepetitionLevel != 0 || leaf.MaxDefinitionLevel > 1 {
			return nil
		}
		node := leaf.Node
		if node.Compression() != nil {
			return nil
		}
		typ := node.Type()
		kind := typ.Kind()
		enc := node.Encoding()
		switch {
		case kind == parquet.Int96:
			return nil
		case enc == nil && kind == parquet.ByteArray:
			enc = &parquet.DeltaLengthByteArray
		case enc == nil:
			enc = &parquet.Plain
		case enc.Encoding() != format.Plain:
			return nil
		}
		hasBytes = hasBytes || kind == parquet.ByteArray
		l.columns = append(l.columns, longColumn{path: path, typ: typ, enc: enc, maxDef: byte(leaf.MaxDefinitionLevel), byteKind: kind == parquet.ByteArray})
	}
	if !hasBytes {
		return nil
	}
	return l
}

// isLong says whether row, a row of the schema, holds a long value.
func (l *longRows) isLong(row parquet.Row) bool {
	if len(row) != len(l.columns) {
		return false
	}
	long := false
	for i, v := range row {
		if v.Column() != i {
			return false
		}
		_, isLong := longValue(v)
		long = long || isLong
	}
	return long
}

// longValue returns v's bytes if v is a long value.
func longValue(v parquet.Value) ([]byte, bool) {
	if v.Kind() != parquet.ByteArray {
		return nil, false
	}
	b := v.ByteArray()
	return b, len(b) >= longValueAt
}

// footerElements reads the schema's elements from an empty Parquet file.
func (l *longRows) footerElements() ([]format.SchemaElement, error) {
	if l.elements != nil {
		return l.elements, nil
	}
	var b bytes.Buffer
	if err := parquet.NewGenericWriter[any](&b, l.schema).Close(); err != nil {
		return nil, err
	}
	f, err := parquet.OpenFile(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		return nil, err
	}
	l.elements = f.Metadata().Schema
	return l.elements, nil
}

// longPage is one column's page of a long row, encoded.
type longPage struct {
	header     format.PageHeader
	levels     []byte // definition levels, not compressed (data page v2)
	body       []byte // the compressed values of a short value
	bodyOff    int64  // or their place in the frames file, for a long one
	bodyLen    int64
	long       bool
	index      format.ColumnIndex
	meta       format.ColumnMetaData
	headerSize int64
}

// write writes row, a long row, to a temporary Parquet file of one row
// group and returns it open, with its size; the caller removes it.
func (l *longRows) write(row parquet.Row) (_ *os.File, _ int64, err error) {
	elements, err := l.footerElements()
	if err != nil {
		return nil, 0, err
	}
	// The short values go through a parquet.Buffer, as parquet-go's writer
	// buffers them; a long value's place holds an empty value there, of
	// the same levels, and its page is built here.
	short := make(parquet.Row, len(row))
	for i, v := range row {
		if _, long := longValue(v); long {
			v = parquet.ByteArrayValue([]byte{}).Level(v.RepetitionLevel(), v.DefinitionLevel(), i)
		}
		short[i] = v
	}
	buf := parquet.NewBuffer(l.schema)
	if _, err := buf.WriteRows([]parquet.Row{short}); err != nil {
		return nil, 0, err
	}
	columns := buf.ColumnBuffers()

	frames, err := l.s.tempFile()
	if err != nil {
		return nil, 0, err
	}
	defer func() {
		frames.Close()
		os.Remove(frames.Name())
	}()
	fbuf := bufio.NewWriterSize(frames, 64<<10)
	fw := &offsetWriter{w: fbuf}
	pages := make([]longPage, len(l.columns))
	for i, col := range l.columns {
		if err := col.encode(&pages[i], columns[i].Page(), row[i], fw); err != nil {
			return nil, 0, fmt.Errorf("column %s: %w", col.path[0], err)
		}
	}
	if err := fbuf.Flush(); err != nil {
		return nil, 0, err
	}

	f, err := l.s.tempFile()
	if err != nil {
		return nil, 0, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 64<<10)
	out := &offsetWriter{w: bw}
	io.WriteString(out, "PAR1")
	group := format.RowGroup{NumRows: 1, FileOffset: 4}
	enc := new(thrift.CompactProtocol)
	for i := range l.columns {
		p := &pages[i]
		header, err := thrift.Marshal(enc, &p.header)
		if err != nil {
			return nil, 0, err
		}
		p.meta.DataPageOffset = out.n
		out.Write(header)
		out.Write(p.levels)
		if p.long {
			if _, err := io.Copy(out, io.NewSectionReader(frames, p.bodyOff, p.bodyLen)); err != nil {
				return nil, 0, err
			}
		} else {
			out.Write(p.body)
		}
		p.headerSize = int64(len(header))
		p.meta.TotalUncompressedSize = p.headerSize + int64(p.header.UncompressedPageSize)
		p.meta.TotalCompressedSize = p.headerSize + int64(p.header.CompressedPageSize)
		group.TotalByteSize += p.meta.TotalUncompressedSize
		group.TotalCompressedSize += p.meta.TotalCompressedSize
		group.Columns = append(group.Columns, format.ColumnChunk{MetaData: p.meta})
	}
	for i := range l.columns {
		b, err := thrift.Marshal(enc, &pages[i].index)
		if err != nil {
			return nil, 0, err
		}
		group.Columns[i].ColumnIndexOffset, group.Columns[i].ColumnIndexLength = out.n, int32(len(b))
		out.Write(b)
	}
	for i := range l.columns {
		p := &pages[i]
		oi := format.OffsetIndex{PageLocations: []format.PageLocation{{
			Offset:             p.meta.DataPageOffset,
			CompressedPageSize: int32(p.meta.TotalCompressedSize),
		}}}
		b, err := thrift.Marshal(enc, &oi)
		if err != nil {
			return nil, 0, err
		}
		group.Columns[i].OffsetIndexOffset, group.Columns[i].OffsetIndexLength = out.n, int32(len(b))
		out.Write(b)
	}
	footer, err := thrift.Marshal(enc, &format.FileMetaData{
		Version:   2,
		Schema:    elements,
		NumRows:   1,
		RowGroups: []format.RowGroup{group},
		CreatedBy: createdBy,
	})
	if err != nil {
		return nil, 0, err
	}
	out.Write(footer)
	out.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(footer))))
	io.WriteString(out, "PAR1")
	if out.err != nil {
		return nil, 0, out.err
	}
	if err := bw.Flush(); err != nil {
		return nil, 0, err
	}
	return f, out.n, nil
}

// encode builds p, col's page of one value v, as parquet-go's
// ColumnWriter.writeDataPage and recordPageStats do for a data page v2.
// page is the value's page in a parquet.Buffer (an empty value in place of
// a long one). A long value's compressed bytes go to frames.
func (col longColumn) encode(p *longPage, page parquet.Page, v parquet.Value, frames *offsetWriter) error {
	var err error
	if col.maxDef > 0 {
		levels := rle.Encoding{BitWidth: 1}
		if p.levels, err = levels.EncodeLevels(nil, page.DefinitionLevels()); err != nil {
			return err
		}
	}
	numValues, numNulls := page.NumValues(), page.NumNulls()
	var uncompressed, compressed int64
	crc := crc32.Update(0, crc32.IEEETable, p.levels)
	unencoded := int64(0)
	if value, long := longValue(v); long {
		prefix, err := col.lengthPrefix(len(value))
		if err != nil {
			return err
		}
		p.long, p.bodyOff = true, frames.n
		if crc, err = compressLong(frames, crc, prefix, value); err != nil {
			return err
		}
		p.bodyLen = frames.n - p.bodyOff
		uncompressed, compressed = int64(len(prefix)+len(value)), p.bodyLen
		unencoded = int64(len(value))
	} else {
		values, err := page.Type().Encode(nil, page.Data(), col.enc)
		if err != nil {
			return err
		}
		if p.body, err = zstdCodec.Encode(nil, values); err != nil {
			return err
		}
		crc = crc32.Update(crc, crc32.IEEETable, p.body)
		uncompressed, compressed = int64(len(values)), int64(len(p.body))
		if col.byteKind {
			data := page.Data()
			unencoded = data.Size()
		}
	}
	levelsLen := int64(len(p.levels))
	if uncompressed+levelsLen > 1<<31-1 {
		return fmt.Errorf("page size limit exceeded: %d>%d", uncompressed+levelsLen, 1<<31-1)
	}

	var stats format.Statistics
	var minValue, maxValue parquet.Value
	hasBounds := false
	if !col.byteKind {
		minValue, maxValue, hasBounds = page.Bounds()
		stats = format.Statistics{
			Min: minValue.Bytes(), Max: maxValue.Bytes(), NullCount: numNulls,
			MinValue: minValue.Bytes(), MaxValue: maxValue.Bytes(),
		}
	} else {
		minValue, maxValue = parquet.Value{}, parquet.Value{}
	}
	p.header = format.PageHeader{
		Type:                 format.DataPageV2,
		UncompressedPageSize: int32(levelsLen + uncompressed),
		CompressedPageSize:   int32(levelsLen + compressed),
		CRC:                  int32(crc),
	}
	p.header.DataPageHeaderV2 = thrift.New(format.DataPageHeaderV2{
		NumValues:                  int32(numValues),
		NumNulls:                   int32(numNulls),
		NumRows:                    int32(page.NumRows()),
		Encoding:                   col.enc.Encoding(),
		DefinitionLevelsByteLength: int32(levelsLen),
		IsCompressed:               thrift.New(true),
		Statistics:                 stats,
	})

	indexer := col.typ.NewColumnIndexer(columnIndexSizeLimit)
	indexer.IndexPage(numValues, numNulls, minValue, maxValue)
	p.index = indexer.ColumnIndex()
	var histogram []int64
	if col.maxDef > 0 {
		histogram = make([]int64, col.maxDef+1)
		for _, level := range page.DefinitionLevels() {
			histogram[level]++
		}
		p.index.DefinitionLevelHistogram = append(p.index.DefinitionLevelHistogram[:0], histogram...)
	}
	p.meta = format.ColumnMetaData{
		Type:          format.Type(col.typ.Kind()),
		Encoding:      col.encodings(),
		PathInSchema:  col.path,
		Codec:         zstdCodec.CompressionCodec(),
		NumValues:     numValues,
		Statistics:    format.Statistics{NullCount: numNulls},
		EncodingStats: []format.PageEncodingStats{{PageType: format.DataPageV2, Encoding: col.enc.Encoding(), Count: 1}},
		SizeStatistics: format.SizeStatistics{
			UnencodedByteArrayDataBytes: unencoded,
			DefinitionLevelHistogram:    histogram,
		},
	}
	if hasBounds {
		p.meta.Statistics.MinValue = minValue.AppendBytes(nil)
		p.meta.Statistics.MaxValue = maxValue.AppendBytes(nil)
	}
	return nil
}

// encodings are the encodings a column chunk's metadata lists, sorted.
func (col longColumn) encodings() []format.Encoding {
	e := col.enc.Encoding()
	if col.maxDef == 0 {
		return []format.Encoding{e}
	}
	if e < format.RLE {
		return []format.Encoding{e, format.RLE}
	}
	return []format.Encoding{format.RLE, e}
}

// lengthPrefix is what col's encoding writes before the bytes of one
// value of n bytes: its length.
func (col longColumn) lengthPrefix(n int) ([]byte, error) {
	switch col.enc.Encoding() {
	case format.Plain:
		return binary.LittleEndian.AppendUint32(nil, uint32(n)), nil
	case format.DeltaLengthByteArray:
		// The lengths, delta-encoded, then the bytes: encoding no bytes
		// gives the lengths alone.
		return col.enc.EncodeByteArray(nil, nil, []uint32{0, uint32(n)})
	}
	return nil, fmt.Errorf("no long values in encoding %s", col.enc)
}

// compressLong writes the zstd compression of prefix followed by value to
// w, as inPlaceZstd compresses a page of those bytes: over inPlaceChunk
// bytes, a run of frames of inPlaceChunk input bytes each. It returns crc
// updated with the bytes written.
func compressLong(w io.Writer, crc uint32, prefix, value []byte) (uint32, error) {
	if len(prefix)+len(value) <= inPlaceChunk {
		out, err := zstdCodec.Encode(nil, append(append([]byte(nil), prefix...), value...))
		if err != nil {
			return crc, err
		}
		_, err = w.Write(out)
		return crc32.Update(crc, crc32.IEEETable, out), err
	}
	enc, err := chunkEncoder()
	if err != nil {
		return crc, err
	}
	chunk := make([]byte, 0, inPlaceChunk)
	frame := make([]byte, 0, inPlaceChunk+inPlaceChunk>>7+1024)
	rest := [2][]byte{prefix, value}
	for len(rest[0])+len(rest[1]) > 0 {
		chunk = chunk[:0]
		for i := range rest {
			n := min(len(rest[i]), inPlaceChunk-len(chunk))
			chunk = append(chunk, rest[i][:n]...)
			rest[i] = rest[i][n:]
		}
		frame = enc.EncodeAll(chunk, frame[:0])
		if _, err := w.Write(frame); err != nil {
			return crc, err
		}
		crc = crc32.Update(crc, crc32.IEEETable, frame)
	}
	return crc, nil
}

// offsetWriter counts what it writes and keeps the first error.
type offsetWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (o *offsetWriter) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	o.n += int64(n)
	if err != nil {
		o.err = err
	} else if n < len(p) {
		o.err = io.ErrShortWrite
	}
	return n, o.err
}
