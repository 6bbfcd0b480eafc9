package artifacts

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/parquet-go/parquet-go"
	"golang.org/x/sys/unix"
)

// Blobs hold large non-tabular outputs (adapters, checkpoints, codebooks):
// blobs/XX/DIGEST, named by the xxhash64 of their bytes. A directory is
// stored as one blob, its canonical tar (PackDir). Rows refer to blobs by
// digest in blob columns (IsBlobColumn), and an action entry lists every
// blob its output refers to (Action.Blobs), which is what gc keeps and
// fsck checks. The format is in STORE.md ("Blobs").
//
// Every method here is safe for concurrent use by many goroutines and
// processes: a blob is written to tmp/ and linked to its name, never
// replacing a file, so any number of writers of the same bytes end with
// one file, and a reader sees a whole blob or none.

// ErrBlobNotFound is in the chain of the error of a read of a blob the
// store does not hold (with ErrNotFound).
var ErrBlobNotFound = fmt.Errorf("blob not in the store: %w", ErrNotFound)

// ErrCorruptBlob is in the chain of the error of a read of a blob whose
// bytes do not hash to its name (with ErrCorrupt).
var ErrCorruptBlob = fmt.Errorf("corrupt blob: %w", ErrCorrupt)

// A BlobError is a blob that a read found missing or corrupt. A corrupt
// blob has been moved to quarantine/ by the read that found it; either
// way the store's generation was bumped, so the next run looks every
// action up again and recomputes the actions that list the blob.
type BlobError struct {
	Digest Digest
	Got    Digest // what the bytes hash to; empty when the blob is missing
	Err    error  // ErrBlobNotFound or ErrCorruptBlob
}

func (e *BlobError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("blob %s is not in the store: the actions that wrote it are recomputed by the next run", e.Digest)
	}
	return fmt.Sprintf("blob %s is corrupt (its bytes hash to %s): moved to quarantine/; the actions that wrote it are recomputed by the next run", e.Digest, e.Got)
}

func (e *BlobError) Unwrap() error { return e.Err }

// blobBuf is the copy buffer of a blob write or read: large enough that
// a gigabyte is a thousand system calls, small enough to not matter.
const blobBuf = 1 << 20

// PutBlob stores r's bytes as a blob and returns their digest. The bytes
// are streamed (memory stays bounded whatever their size), hashed while
// written to tmp/, fsynced when the store syncs each write
// (WithSyncEach), and linked to blobs/XX/DIGEST. If that name exists, the
// blob there is verified and kept (a corrupt one is quarantined and
// replaced), so writing a blob again is a no-op and concurrent writers of
// the same bytes are safe. The caller records the digest in its rows and
// its action's Blobs (the engine does so for a node's PutBlob).
func (s *Store) PutBlob(r io.Reader) (Digest, error) {
	f, err := s.tempFile()
	if err != nil {
		return "", err
	}
	h := xxhash.New()
	if _, err := io.CopyBuffer(io.MultiWriter(f, h), onlyReader{r}, make([]byte, blobBuf)); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("write blob: %w", err)
	}
	d := digestOf(h.Sum64())
	defer os.Remove(f.Name())
	if err := s.closeTemp(f); err != nil {
		return "", fmt.Errorf("write blob: %w", err)
	}
	for attempt := 0; ; attempt++ {
		existed, err := s.linkNoReplace(f.Name(), s.BlobPath(d))
		if err != nil {
			return "", fmt.Errorf("store blob %s: %w", d, err)
		}
		if !existed {
			return d, nil
		}
		// Another writer got there first (or a power loss left a cut
		// file): keep the existing blob if it verifies.
		err = s.checkBlob(d, true)
		if err == nil {
			return d, nil
		}
		if !errors.Is(err, ErrBlobNotFound) && !errors.Is(err, ErrCorruptBlob) || attempt == 3 {
			return "", fmt.Errorf("store blob %s: %w", d, err)
		}
	}
}

// onlyReader hides a reader's WriterTo, so that io.CopyBuffer always
// copies through its bounded buffer.
type onlyReader struct{ io.Reader }

// PutBlobDir stores directory dir as one blob, its canonical tar
// (PackDir), streamed: nothing is staged outside tmp/.
func (s *Store) PutBlobDir(dir string) (Digest, error) {
	return PutPackedDir(dir, s.PutBlob)
}

// PutPackedDir packs dir (PackDir) into put through a pipe, as it is
// read, and returns put's digest. Node code uses it with its Run's
// PutBlob, which records the blob in the action.
func PutPackedDir(dir string, put func(io.Reader) (Digest, error)) (Digest, error) {
	pr, pw := io.Pipe()
	var packErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		packErr = PackDir(pw, dir)
		pw.CloseWithError(packErr)
	}()
	d, err := put(pr)
	pr.CloseWithError(errors.New("the blob's writer stopped reading")) // unblocks the packer if put gave up
	<-done
	if err == nil && packErr != nil { // put returned before the end
		err = packErr
	}
	if err != nil {
		return "", fmt.Errorf("store directory %s: %w", dir, err)
	}
	return d, nil
}

// BlobPath is where blob d lives.
func (s *Store) BlobPath(d Digest) string { return s.path("blobs", d, "") }

// HasBlob reports whether blob d is in the store (a stat, not a check of
// its bytes).
func (s *Store) HasBlob(d Digest) bool {
	if !d.Valid() {
		return false
	}
	st, err := os.Stat(s.BlobPath(d))
	return err == nil && st.Mode().IsRegular()
}

// MissingBlobs returns the digests of ds that the store does not hold
// (HasBlob), in order. An action whose blobs are not all there is a
// cache miss: the engine recomputes it.
func (s *Store) MissingBlobs(ds []Digest) []Digest {
	var out []Digest
	for _, d := range ds {
		if !s.HasBlob(d) {
			out = append(out, d)
		}
	}
	return out
}

// A BlobReader reads one blob and verifies it: the Read that reaches the
// end of the bytes returns a *BlobError (ErrCorruptBlob) instead of
// io.EOF when they do not hash to the blob's name, having moved the blob
// to quarantine/. Bytes read before the end are not verified yet: act on
// them only once Read returned io.EOF (or Verify returned nil). A
// BlobReader is for one goroutine.
type BlobReader struct {
	s    *Store
	d    Digest
	f    *os.File
	h    *xxhash.Digest
	size int64
	err  error // sticky: the end's verdict, or a read error
}

// OpenBlob opens blob d for reading through a verifying BlobReader. A
// blob that is not there is a *BlobError (ErrBlobNotFound), and bumps the
// generation: something deleted it, so the next run trusts no snapshot
// and recomputes the actions that list it.
func (s *Store) OpenBlob(d Digest) (*BlobReader, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("open blob: %q is not a digest", d)
	}
	f, err := openFile(s.BlobPath(d), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		s.bumpGeneration()
		return nil, &BlobError{Digest: d, Err: ErrBlobNotFound}
	}
	if err != nil {
		return nil, fmt.Errorf("open blob %s: %w", d, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open blob %s: %w", d, err)
	}
	return &BlobReader{s: s, d: d, f: f, h: xxhash.New(), size: st.Size()}, nil
}

// Digest is the blob's name.
func (b *BlobReader) Digest() Digest { return b.d }

// Size is the blob's length in bytes.
func (b *BlobReader) Size() int64 { return b.size }

// Read reads the blob; see BlobReader for the check at the end.
func (b *BlobReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.f.Read(p)
	b.h.Write(p[:n])
	switch {
	case err == io.EOF:
		if got := digestOf(b.h.Sum64()); got != b.d {
			b.err = b.s.corruptBlob(b.d, got, b.f)
			return n, b.err
		}
		b.err = io.EOF
	case err != nil:
		b.err = fmt.Errorf("read blob %s: %w", b.d, err)
		return n, b.err
	}
	return n, err
}

// Verify reads the rest of the blob and returns nil if all of it hashed
// to its name, or the error Read returned at the end.
func (b *BlobReader) Verify() error {
	_, err := io.CopyBuffer(io.Discard, b, make([]byte, blobBuf))
	return err
}

// Close closes the blob's file.
func (b *BlobReader) Close() error { return b.f.Close() }

// corruptBlob quarantines blob d, whose file f hashed to got, and
// returns the error that reports it.
func (s *Store) corruptBlob(d, got Digest, f *os.File) error {
	e := &BlobError{Digest: d, Got: got, Err: ErrCorruptBlob}
	if err := s.quarantineBlob(d, f); err != nil {
		return fmt.Errorf("%w (and it could not be quarantined: %v)", e, err)
	}
	return e
}

// quarantineBlob moves blob d to quarantine/DIGEST.blob, but only the
// file open as f: a writer may have replaced a corrupt blob with a good
// one since f was opened (PutBlob), and that one stays. When a
// replacement lands between the check and the move, it is moved back.
// The generation is bumped either way.
func (s *Store) quarantineBlob(d Digest, f *os.File) error {
	defer s.bumpGeneration()
	fst, err := f.Stat()
	if err != nil {
		return err
	}
	p := s.BlobPath(d)
	if st, err := os.Lstat(p); err != nil || !os.SameFile(st, fst) {
		return nil // gone, or already replaced
	}
	aside, err := s.tempFile()
	if err != nil {
		return err
	}
	aside.Close()
	if err := os.Rename(p, aside.Name()); err != nil {
		os.Remove(aside.Name())
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if st, err := os.Lstat(aside.Name()); err == nil && !os.SameFile(st, fst) {
		// Moved a replacement written after the check: put it back.
		defer os.Remove(aside.Name())
		_, err := s.linkNoReplace(aside.Name(), p)
		return err
	}
	return s.quarantine(aside.Name(), string(d)+".blob")
}

// checkBlob rehashes blob d: nil, or a *BlobError (ErrBlobNotFound,
// ErrCorruptBlob), or another error reading it. With quarantine a corrupt
// blob is moved aside (and the generation bumped).
func (s *Store) checkBlob(d Digest, quarantine bool) error {
	f, err := openFile(s.BlobPath(d), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return &BlobError{Digest: d, Err: ErrBlobNotFound}
	}
	if err != nil {
		return err
	}
	defer f.Close()
	h := xxhash.New()
	if _, err := io.CopyBuffer(h, f, make([]byte, blobBuf)); err != nil {
		return fmt.Errorf("read blob %s: %w", d, err)
	}
	got := digestOf(h.Sum64())
	switch {
	case got == d:
		return nil
	case quarantine:
		return s.corruptBlob(d, got, f)
	}
	return &BlobError{Digest: d, Got: got, Err: ErrCorruptBlob}
}

// VerifyBlob rehashes blob d. It moves nothing: a missing blob is a
// *BlobError with ErrBlobNotFound, a corrupt one with ErrCorruptBlob
// (fsck decides what to do about it).
func (s *Store) VerifyBlob(d Digest) error { return s.checkBlob(d, false) }

// ExtractBlob unpacks directory blob d (a tar, as PutBlobDir writes) into
// dir, which must not exist or be an empty directory. It extracts into a
// temporary directory beside dir and renames it to dir only once the
// whole blob has verified, so dir never holds the contents of a corrupt
// blob (a corrupt blob is quarantined and reported as by OpenBlob). Only
// regular files, directories and symbolic links that stay inside dir are
// extracted; permission bits are kept, times are not.
func (s *Store) ExtractBlob(d Digest, dir string) error {
	if st, err := os.Lstat(dir); err == nil {
		if !st.IsDir() {
			return fmt.Errorf("extract blob %s: %s exists and is not a directory", d, dir)
		}
		if ents, err := os.ReadDir(dir); err != nil || len(ents) > 0 {
			return fmt.Errorf("extract blob %s: %s exists and is not empty", d, dir)
		}
	}
	b, err := s.OpenBlob(d)
	if err != nil {
		return err
	}
	defer b.Close()
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("extract blob %s: %w", d, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".extract-")
	if err != nil {
		return fmt.Errorf("extract blob %s: %w", d, err)
	}
	err = unpack(b, tmp)
	// The tar ends before the blob may: what follows is hashed too, and
	// a corrupt blob is reported as such even when the corruption made
	// the tar unreadable.
	if verr := b.Verify(); verr != nil && (err == nil || errors.As(verr, new(*BlobError))) {
		err = verr
	}
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		os.RemoveAll(tmp)
		if errors.As(err, new(*BlobError)) {
			return err
		}
		return fmt.Errorf("extract blob %s: %w", d, err)
	}
	return nil
}

// epoch is the modification time of every entry of a canonical tar.
var epoch = time.Unix(0, 0)

// PackDir writes directory dir to w as a canonical tar, so that the same
// files give the same bytes (and blob digest) wherever and whenever they
// are packed: one entry per directory, regular file and symbolic link
// under dir (dir itself excluded), in byte order of their slash-separated
// paths relative to dir; directories named with a trailing slash; each
// entry's permission bits (mode & 0777) kept, and its modification time
// (zero: the Unix epoch), owner and group ids (0) and names (empty)
// zeroed; archive/tar's USTAR headers, PAX records only for a field USTAR
// cannot hold (a long path or link, a size of 8 GiB or more); ending in
// the two zero blocks. Hard links are stored as the files they name;
// a symbolic link must be relative and stay inside dir; any other kind
// of file (a device, a socket, a pipe) fails, as does a file that
// changes size while it is packed.
func PackDir(w io.Writer, dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("pack: %s is not a directory", dir)
	}
	var names []string
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pack %s: %w", dir, err)
	}
	slices.Sort(names)
	tw := tar.NewWriter(w)
	buf := make([]byte, 256<<10)
	for _, name := range names {
		full := filepath.Join(dir, filepath.FromSlash(name))
		fi, err := os.Lstat(full)
		if err != nil {
			return fmt.Errorf("pack %s: %w", dir, err)
		}
		hdr := &tar.Header{Name: name, Mode: int64(fi.Mode().Perm()), ModTime: epoch}
		switch m := fi.Mode(); {
		case m.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
		case m.IsRegular():
			hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
		case m&fs.ModeSymlink != 0:
			target, err := os.Readlink(full)
			if err != nil {
				return fmt.Errorf("pack %s: %w", dir, err)
			}
			if !linkInside(name, target) {
				return fmt.Errorf("pack %s: %s is a symbolic link to %s, outside the directory", dir, name, target)
			}
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
		default:
			return fmt.Errorf("pack %s: %s is a %v, not a file, directory or symbolic link", dir, name, m.Type())
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("pack %s: %s: %w", dir, name, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if err := copyFile(tw, full, hdr.Size, buf); err != nil {
				return fmt.Errorf("pack %s: %s: %w", dir, name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("pack %s: %w", dir, err)
	}
	return nil
}

// copyFile copies exactly size bytes of file p to w, failing if the file
// is shorter or longer now.
func copyFile(w io.Writer, p string, size int64, buf []byte) error {
	f, err := openFile(p, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.CopyBuffer(w, io.LimitReader(onlyReader{f}, size), buf)
	if err != nil {
		return err
	}
	if n < size {
		return fmt.Errorf("changed while packing (%d of %d bytes)", n, size)
	}
	if m, _ := f.Read(buf[:1]); m > 0 {
		return fmt.Errorf("changed while packing (longer than %d bytes)", size)
	}
	return nil
}

// linkInside reports whether a symbolic link at name (slash-separated,
// relative to the packed directory) pointing at target stays inside it.
func linkInside(name, target string) bool {
	if target == "" || path.IsAbs(target) || strings.ContainsRune(target, 0) {
		return false
	}
	p := path.Join(path.Dir(name), target)
	return p != ".." && !strings.HasPrefix(p, "../")
}

// unpack extracts tar r into the empty directory dir. An entry must name
// a clean relative path whose parent is dir or a directory entry before
// it, so nothing is written outside dir or through a link.
func unpack(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	dirs := map[string]bool{".": true}
	type dirMode struct {
		path string
		mode fs.FileMode
	}
	var modes []dirMode
	buf := make([]byte, 256<<10)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		if name == "" || name != path.Clean(name) || path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") || strings.ContainsRune(name, 0) || strings.Contains(name, "\\") {
			return fmt.Errorf("tar entry %q: not a clean relative path", hdr.Name)
		}
		if !dirs[path.Dir(name)] {
			return fmt.Errorf("tar entry %q: its directory is not an earlier directory entry", hdr.Name)
		}
		full := filepath.Join(dir, filepath.FromSlash(name))
		mode := fs.FileMode(hdr.Mode).Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.Mkdir(full, 0o700); err != nil {
				return err
			}
			dirs[name] = true
			modes = append(modes, dirMode{full, mode})
		case tar.TypeReg:
			f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
			if err != nil {
				return err
			}
			_, err = io.CopyBuffer(f, onlyReader{tr}, buf)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Chmod(full, mode)
			}
			if err != nil {
				return fmt.Errorf("tar entry %q: %w", hdr.Name, err)
			}
		case tar.TypeSymlink:
			if !linkInside(name, hdr.Linkname) {
				return fmt.Errorf("tar entry %q: a symbolic link to %s, outside the directory", hdr.Name, hdr.Linkname)
			}
			if err := os.Symlink(hdr.Linkname, full); err != nil {
				return err
			}
		default:
			return fmt.Errorf("tar entry %q: type %q is not a file, directory or symbolic link", hdr.Name, hdr.Typeflag)
		}
	}
	// Permissions last, deepest first: a read-only directory is filled
	// before it is closed.
	for i := len(modes) - 1; i >= 0; i-- {
		if err := os.Chmod(modes[i].path, modes[i].mode); err != nil {
			return err
		}
	}
	return nil
}

// IsBlobColumn reports whether a field name marks a blob column: it
// ends in `_blob` or `_blobs`. A leaf string column with such a field on
// its path (`adapter_blob string`, `shard_blobs []string`) holds blob
// digests: each value is the digest of a blob in the store, or empty (no
// blob).
func IsBlobColumn(name string) bool {
	return strings.HasSuffix(name, "_blob") || strings.HasSuffix(name, "_blobs")
}

// BlobColumns returns the blob columns among schema's leaf columns, by
// column index, with their dotted paths (none for most schemas).
func BlobColumns(schema *parquet.Schema) map[int]string {
	var out map[int]string
	for _, p := range schema.Columns() {
		if !slices.ContainsFunc(p, IsBlobColumn) {
			continue
		}
		leaf, ok := schema.Lookup(p...)
		if !ok || leaf.Node.Type().Kind() != parquet.ByteArray {
			continue
		}
		if lt := leaf.Node.Type().LogicalType(); lt == nil || lt.String() != "STRING" {
			continue
		}
		if out == nil {
			out = map[int]string{}
		}
		out[leaf.ColumnIndex] = strings.Join(p, ".")
	}
	return out
}

// BlobRefs returns the blobs r's rows refer to (the values of its blob
// columns, BlobColumns), sorted and without repeats; nil when it has no
// blob column. A value that is neither empty nor a digest is an error.
func BlobRefs(r *Reader) ([]Digest, error) {
	cols := BlobColumns(r.Schema())
	if len(cols) == 0 {
		return nil, nil
	}
	seen := map[Digest]bool{}
	for _, row := range r.Rows() {
		for _, v := range row {
			col, ok := cols[v.Column()]
			if !ok || v.IsNull() {
				continue
			}
			b := v.ByteArray()
			if len(b) == 0 {
				continue
			}
			d := Digest(b)
			if !d.Valid() {
				return nil, fmt.Errorf("blob column %s holds %q, not a blob digest", col, truncateRef(b))
			}
			seen[d] = true
		}
	}
	out := make([]Digest, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	slices.Sort(out)
	return out, nil
}

func truncateRef(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}
