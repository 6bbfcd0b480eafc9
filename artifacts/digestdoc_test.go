package artifacts_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/artifacts"
)

type docPos struct {
	X int32    `parquet:"x"`
	Y *float32 `parquet:"y,optional"`
}

// docRow has required, optional, list, repeated and nested columns.
type docRow struct {
	ID    int64    `parquet:"id"`
	Name  string   `parquet:"name"`
	Note  *string  `parquet:"note,optional"`
	Tags  []string `parquet:"tags,list"`
	Score float64  `parquet:"score"`
	Pos   docPos   `parquet:"pos"`
	Flags []bool   `parquet:"flags"`
}

// docStream builds the content digest's byte stream by STORE.md's rules,
// written from the document apart from the production hasher.
type docStream struct{ b []byte }

func (s *docStream) uvarint(n uint64) {
	for n >= 0x80 {
		s.b = append(s.b, byte(n)|0x80)
		n >>= 7
	}
	s.b = append(s.b, byte(n))
}

// entry is one value of a row: column, levels, then kind and bytes (or
// 0xff for a null, when value is nil).
type entry struct {
	col, rep, def int
	kind          byte
	value         []byte
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func (s *docStream) bytesValue(b []byte) []byte {
	var t docStream
	t.uvarint(uint64(len(b)))
	return append(t.b, b...)
}

// docEntries stripes one row: leaf columns id 0, name 1, note 2,
// tags.list.element 3, score 4, pos.x 5, pos.y 6, flags 7.
func (s *docStream) docEntries(r docRow) []entry {
	es := []entry{
		{col: 0, kind: 2, value: le64(uint64(r.ID))},
		{col: 1, kind: 6, value: s.bytesValue([]byte(r.Name))},
	}
	if r.Note != nil {
		es = append(es, entry{col: 2, def: 1, kind: 6, value: s.bytesValue([]byte(*r.Note))})
	} else {
		es = append(es, entry{col: 2})
	}
	if len(r.Tags) == 0 {
		es = append(es, entry{col: 3})
	}
	for i, tag := range r.Tags {
		es = append(es, entry{col: 3, rep: min(i, 1), def: 1, kind: 6, value: s.bytesValue([]byte(tag))})
	}
	es = append(es, entry{col: 4, kind: 5, value: le64(math.Float64bits(r.Score))})
	es = append(es, entry{col: 5, kind: 1, value: le32(uint32(r.Pos.X))})
	if r.Pos.Y != nil {
		es = append(es, entry{col: 6, def: 1, kind: 4, value: le32(math.Float32bits(*r.Pos.Y))})
	} else {
		es = append(es, entry{col: 6})
	}
	if len(r.Flags) == 0 {
		es = append(es, entry{col: 7})
	}
	for i, f := range r.Flags {
		v := byte(0)
		if f {
			v = 1
		}
		es = append(es, entry{col: 7, rep: min(i, 1), def: 1, kind: 0, value: []byte{v}})
	}
	return es
}

func docDigest(rows []docRow) artifacts.Digest {
	const fingerprint = `{"id":2:INT(64,true),"name":6:STRING,"note":?6:STRING,"tags":LIST{"list":*{"element":6:STRING}},"score":5,"pos":{"x":1:INT(32,true),"y":?4},"flags":*0}`
	s := &docStream{b: []byte("lacuna-rows-v1\x00" + fingerprint + "\x00")}
	for _, r := range rows {
		es := s.docEntries(r)
		s.uvarint(uint64(len(es)))
		for _, e := range es {
			s.uvarint(uint64(e.col))
			s.b = append(s.b, byte(e.rep), byte(e.def))
			if e.value == nil {
				s.b = append(s.b, 0xff)
				continue
			}
			s.b = append(s.b, e.kind)
			s.b = append(s.b, e.value...)
		}
	}
	s.b = append(s.b, le64(uint64(len(rows)))...)
	return artifacts.Digest(fmt.Sprintf("%016x", xxhash.Sum64(s.b)))
}

func TestContentDigestFollowsStoreDocument(t *testing.T) {
	note, y := "a note: <é> \n", float32(-1.5)
	long := make([]string, 200) // a list long enough for a two-byte uvarint row length
	for i := range long {
		long[i] = string(rune('a' + i%26))
	}
	rows := []docRow{
		{ID: 1, Name: "first", Note: &note, Tags: []string{"x", "y", "z"}, Score: 0.25, Pos: docPos{X: -7, Y: &y}, Flags: []bool{true, false}},
		{ID: -2, Name: "", Score: math.Inf(-1), Pos: docPos{X: 3}},
		{ID: 1 << 40, Name: "日本", Tags: long, Score: math.Copysign(0, -1), Flags: []bool{false}},
	}
	for n := range len(rows) + 1 {
		st, err := artifacts.Open(filepath.Join(t.TempDir(), "store"))
		if err != nil {
			t.Fatal(err)
		}
		w, err := st.NewWriter(artifacts.SchemaOf[docRow](), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows[:n] {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		obj, err := w.Commit()
		if err != nil {
			t.Fatal(err)
		}
		if want := docDigest(rows[:n]); obj.Digest != want {
			t.Errorf("%d rows: digest %s, STORE.md's rules give %s", n, obj.Digest, want)
		}
	}
}
