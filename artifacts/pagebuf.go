package artifacts

import (
	"errors"
	"io"
	"os"
)

// spillAt is how many bytes of one column's pages a Writer keeps in memory
// before moving them to a temporary file.
var spillAt int64 = 4 << 20 // tests lower it

// pageSpill is the parquet.BufferPool of a Writer: the pages of a column
// chunk wait in memory while they are few, and in a temporary file under
// tmp/ once they pass spillAt, until the row group is written out. Without
// it a row group of long values (or one value of hundreds of MiB, which a
// page header repeats as the page's minimum and maximum) is held in memory
// whole until the row group ends. The bytes written are the same either
// way. Safe for concurrent use, as parquet-go requires.
type pageSpill struct{ s *Store }

func (p pageSpill) GetBuffer() io.ReadWriteSeeker { return &spillBuffer{s: p.s} }

func (p pageSpill) PutBuffer(b io.ReadWriteSeeker) {
	if sb, ok := b.(*spillBuffer); ok {
		sb.release()
	}
}

// spillBuffer is one column chunk's pages: in mem, or in f once spilled.
// Used by one goroutine at a time.
type spillBuffer struct {
	s   *Store
	mem []byte
	pos int64 // the read and write position in mem
	f   *os.File
}

func (b *spillBuffer) Write(p []byte) (int, error) {
	if b.f == nil && b.pos+int64(len(p)) > spillAt {
		if err := b.spill(); err != nil {
			return 0, err
		}
	}
	if b.f != nil {
		return b.f.Write(p)
	}
	if end := b.pos + int64(len(p)); end > int64(len(b.mem)) {
		b.mem = append(b.mem, make([]byte, end-int64(len(b.mem)))...)
	}
	n := copy(b.mem[b.pos:], p)
	b.pos += int64(n)
	return n, nil
}

// spill moves what mem holds to a temporary file, at the same position.
func (b *spillBuffer) spill() error {
	f, err := b.s.tempFile()
	if err != nil {
		return err
	}
	_, err = f.Write(b.mem)
	if err == nil {
		_, err = f.Seek(b.pos, io.SeekStart)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	b.f, b.mem = f, nil
	return nil
}

func (b *spillBuffer) Read(p []byte) (int, error) {
	if b.f != nil {
		return b.f.Read(p)
	}
	if b.pos >= int64(len(b.mem)) {
		return 0, io.EOF
	}
	n := copy(p, b.mem[b.pos:])
	b.pos += int64(n)
	return n, nil
}

func (b *spillBuffer) Seek(offset int64, whence int) (int64, error) {
	if b.f != nil {
		return b.f.Seek(offset, whence)
	}
	switch whence {
	case io.SeekCurrent:
		offset += b.pos
	case io.SeekEnd:
		offset += int64(len(b.mem))
	}
	if offset < 0 {
		return 0, errors.New("page buffer: seek before the start")
	}
	b.pos = offset
	return offset, nil
}

// release drops the pages: the file is closed and removed.
func (b *spillBuffer) release() {
	if b.f != nil {
		b.f.Close()
		os.Remove(b.f.Name())
	}
	b.f, b.mem, b.pos = nil, nil, 0
}
