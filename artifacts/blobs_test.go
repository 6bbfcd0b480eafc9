package artifacts

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
)

// pattern is n deterministic, poorly compressible bytes.
func pattern(n int, seed uint64) []byte {
	b := make([]byte, n)
	g := &genReader{left: int64(n), x: seed | 1}
	io.ReadFull(g, b)
	return b
}

// genReader yields left pseudo-random bytes (xorshift64) without holding
// them: a blob of any size with no memory behind it.
type genReader struct {
	left int64
	x    uint64
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	n := len(p) &^ 7
	for i := 0; i < n; i += 8 {
		g.x ^= g.x << 13
		g.x ^= g.x >> 7
		g.x ^= g.x << 17
		binary.LittleEndian.PutUint64(p[i:], g.x)
	}
	for i := n; i < len(p); i++ {
		p[i] = byte(g.x >> (8 * (i - n)))
	}
	g.left -= int64(len(p))
	return len(p), nil
}

func readBlob(t *testing.T, s *Store, d Digest) ([]byte, error) {
	t.Helper()
	b, err := s.OpenBlob(d)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return io.ReadAll(b)
}

func TestBlobRoundTripsAndIsNamedByItsBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"small", []byte("adapter weights")},
		{"several buffers", pattern(3*blobBuf+17, 7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			d, err := s.PutBlob(bytes.NewReader(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if want := digestOf(xxhash.Sum64(tc.data)); d != want {
				t.Fatalf("digest %s, want xxhash64 of the bytes %s", d, want)
			}
			again, err := s.PutBlob(bytes.NewReader(tc.data))
			if err != nil || again != d {
				t.Fatalf("second write: %s, %v", again, err)
			}
			other, err := openTemp(t).PutBlob(bytes.NewReader(tc.data))
			if err != nil || other != d {
				t.Fatalf("another store: %s, %v", other, err)
			}
			got, err := readBlob(t, s, d)
			if err != nil || !bytes.Equal(got, tc.data) {
				t.Fatalf("read back %d bytes, %v", len(got), err)
			}
			b, err := s.OpenBlob(d)
			if err != nil {
				t.Fatal(err)
			}
			if b.Size() != int64(len(tc.data)) || b.Verify() != nil {
				t.Errorf("size %d, verify %v", b.Size(), b.Verify())
			}
			b.Close()
			if s.VerifyBlob(d) != nil || !s.HasBlob(d) {
				t.Error("stored blob does not verify")
			}
			if tmp, _ := os.ReadDir(filepath.Join(s.Root(), "tmp")); len(tmp) != 0 {
				t.Errorf("left %d temp files", len(tmp))
			}
		})
	}
}

// tree is a directory's content as ExtractBlob must give it back:
// regular files (content), directories ("/") and links ("-> target"),
// with permission bits.
type tree map[string]struct {
	content string
	mode    fs.FileMode
}

func makeTree(t *testing.T, dir string, tr tree, reverse bool) {
	t.Helper()
	names := make([]string, 0, len(tr))
	for n := range tr {
		names = append(names, n)
	}
	sort.Strings(names)
	if reverse { // another creation order, another set of times
		for i, j := 0, len(names)-1; i < j; i, j = i+1, j-1 {
			names[i], names[j] = names[j], names[i]
		}
	}
	for _, n := range names {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o755)
	}
	var dirs []string
	for _, n := range names {
		e, p := tr[n], filepath.Join(dir, n)
		switch {
		case strings.HasSuffix(e.content, "/"):
			os.MkdirAll(p, 0o755)
			dirs = append(dirs, n)
		case strings.HasPrefix(e.content, "-> "):
			if err := os.Symlink(strings.TrimPrefix(e.content, "-> "), p); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(p, []byte(e.content), 0o600); err != nil {
				t.Fatal(err)
			}
			os.Chmod(p, e.mode)
			if reverse {
				os.Chtimes(p, time.Unix(1e9, 0), time.Unix(1e9, 0))
			}
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, n := range dirs {
		os.Chmod(filepath.Join(dir, n), tr[n].mode)
	}
	t.Cleanup(func() {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error { os.Chmod(p, 0o755); return nil })
	})
}

func readTree(t *testing.T, dir string) tree {
	t.Helper()
	out := tree{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := out[rel]
		e.mode = fi.Mode().Perm()
		switch {
		case fi.IsDir():
			e.content = "/"
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			e.content, e.mode = "-> "+target, 0
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.content = string(b)
		}
		out[rel] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func adapterTree() tree {
	long := strings.Repeat("deep-directory-name/", 8) + "weights.safetensors" // over USTAR's 100+155 split: a PAX path
	return tree{
		"adapter_config.json":    {`{"r":8}`, 0o644},
		"adapter_model.bin":      {string(pattern(70000, 3)), 0o600},
		"a":                      {"/", 0o755},
		"a/b":                    {"inner", 0o644},
		"a-b":                    {"sorts between a and a/b", 0o644},
		"empty":                  {"/", 0o700},
		"ro":                     {"/", 0o555},
		"ro/frozen":              {"read-only dir's file", 0o444},
		"run.sh":                 {"#!/bin/sh\n", 0o755},
		"latest":                 {"-> adapter_model.bin", 0},
		"a/up":                   {"-> ../run.sh", 0},
		filepath.FromSlash(long): {"x", 0o644},
		strings.Repeat("n", 120): {"a name USTAR cannot hold: PAX", 0o644},
		"poids-été.bin":          {"not ASCII: PAX", 0o644},
	}
}

func TestDirectoryBlobRoundTripsAndIsCanonical(t *testing.T) {
	s := openTemp(t)
	want := adapterTree()
	src1, src2 := filepath.Join(t.TempDir(), "one"), filepath.Join(t.TempDir(), "two")
	makeTree(t, src1, want, false)
	makeTree(t, src2, want, true)
	for n, e := range want { // the parents of the long path
		if e.content == "x" {
			for d := filepath.Dir(n); d != "."; d = filepath.Dir(d) {
				want[d] = struct {
					content string
					mode    fs.FileMode
				}{"/", 0o755}
			}
		}
	}
	d1, err := s.PutBlobDir(src1)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := s.PutBlobDir(src2)
	if err != nil || d2 != d1 {
		t.Fatalf("same files created in another order at other times: %s vs %s (%v)", d2, d1, err)
	}
	out := filepath.Join(t.TempDir(), "adapter")
	if err := s.ExtractBlob(d1, out); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(out, "ro"), 0o755) })
	got := readTree(t, out)
	for n, e := range want {
		if got[n] != e {
			t.Errorf("%s: extracted %q %o, want %q %o", n, got[n].content, got[n].mode, e.content, e.mode)
		}
	}
	if len(got) != len(want) {
		t.Errorf("extracted %d entries, want %d", len(got), len(want))
	}
	if err := s.ExtractBlob(d1, out); err == nil {
		t.Error("extracted over a non-empty directory")
	}

	// The tar itself: sorted paths, nothing of the host.
	b, _ := s.OpenBlob(d1)
	defer b.Close()
	tr := tar.NewReader(b)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, strings.TrimSuffix(h.Name, "/"))
		if !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: time %v, owner %d:%d %q:%q", h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname)
		}
	}
	if !sort.StringsAreSorted(names) {
		t.Errorf("entries out of order: %q", names)
	}
	if err := b.Verify(); err != nil {
		t.Error(err)
	}

	// A permission bit is content.
	os.Chmod(filepath.Join(src2, "run.sh"), 0o644)
	if d3, err := s.PutBlobDir(src2); err != nil || d3 == d1 {
		t.Errorf("changing a mode kept the digest: %s, %v", d3, err)
	}
}

// TestPackedTarFollowsStoreDocument builds the canonical tar of a small
// directory from STORE.md's description alone ("Directory blobs") and
// compares it with PackDir's bytes.
func TestPackedTarFollowsStoreDocument(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "sub"), 0o750)
	os.WriteFile(filepath.Join(dir, "sub", "w.bin"), []byte("hello"), 0o640)
	os.Symlink("sub/w.bin", filepath.Join(dir, "link"))

	octal := func(field []byte, v int64) { // zero-padded digits, then NUL
		s := strconv.FormatInt(v, 8)
		copy(field, strings.Repeat("0", len(field)-1-len(s))+s)
	}
	header := func(name string, mode int64, size int64, typ byte, link string) []byte {
		h := make([]byte, 512)
		copy(h[0:100], name)
		octal(h[100:108], mode)
		octal(h[108:116], 0) // uid
		octal(h[116:124], 0) // gid
		octal(h[124:136], size)
		octal(h[136:148], 0) // mtime
		h[156] = typ
		copy(h[157:257], link)
		copy(h[257:265], "ustar\x0000")
		octal(h[329:337], 0) // devmajor
		octal(h[337:345], 0) // devminor
		copy(h[148:156], "        ")
		var sum int64
		for _, c := range h {
			sum += int64(c)
		}
		copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
		return h
	}
	var want bytes.Buffer
	want.Write(header("link", 0o777, 0, '2', "sub/w.bin"))
	want.Write(header("sub/", 0o750, 0, '5', ""))
	want.Write(header("sub/w.bin", 0o640, 5, '0', ""))
	want.Write(append([]byte("hello"), make([]byte, 512-5)...))
	want.Write(make([]byte, 1024))

	var got bytes.Buffer
	if err := PackDir(&got, dir); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		for i := range min(got.Len(), want.Len()) {
			if got.Bytes()[i] != want.Bytes()[i] {
				t.Fatalf("PackDir differs from STORE.md at byte %d (block %d, offset %d): %q vs %q", i, i/512, i%512, got.Bytes()[i], want.Bytes()[i])
			}
		}
		t.Fatalf("PackDir wrote %d bytes, STORE.md describes %d", got.Len(), want.Len())
	}
}

func TestPackAndExtractRefuseWhatLeavesTheDirectory(t *testing.T) {
	t.Run("pack", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			make func(dir string) error
			want string
		}{
			{"absolute link", func(d string) error { return os.Symlink("/etc/passwd", filepath.Join(d, "l")) }, "outside the directory"},
			{"escaping link", func(d string) error { return os.Symlink("../../x", filepath.Join(d, "l")) }, "outside the directory"},
			{"fifo", func(d string) error { return syscall.Mkfifo(filepath.Join(d, "p"), 0o644) }, "not a file, directory or symbolic link"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				dir := t.TempDir()
				if err := tc.make(dir); err != nil {
					t.Skip(err)
				}
				s := openTemp(t)
				if _, err := s.PutBlobDir(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("err %v, want %q", err, tc.want)
				}
				if tmp, _ := os.ReadDir(filepath.Join(s.Root(), "tmp")); len(tmp) != 0 {
					t.Errorf("a failed pack left %d temp files", len(tmp))
				}
			})
		}
	})
	t.Run("extract", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			entries []tar.Header
		}{
			{"parent path", []tar.Header{{Name: "../evil", Typeflag: tar.TypeReg}}},
			{"absolute path", []tar.Header{{Name: "/tmp/evil", Typeflag: tar.TypeReg}}},
			{"through a link", []tar.Header{{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "."}, {Name: "l/evil", Typeflag: tar.TypeReg}}},
			{"link out", []tar.Header{{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "../.."}}},
			{"device", []tar.Header{{Name: "dev", Typeflag: tar.TypeChar}}},
			{"no parent entry", []tar.Header{{Name: "d/f", Typeflag: tar.TypeReg}}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var buf bytes.Buffer
				tw := tar.NewWriter(&buf)
				for _, h := range tc.entries {
					h.Mode = 0o644
					tw.WriteHeader(&h)
				}
				tw.Close()
				s := openTemp(t)
				d, err := s.PutBlob(&buf)
				if err != nil {
					t.Fatal(err)
				}
				parent := t.TempDir()
				out := filepath.Join(parent, "out")
				if err := s.ExtractBlob(d, out); err == nil {
					t.Fatal("extracted")
				}
				if ents, _ := os.ReadDir(parent); len(ents) != 0 {
					t.Errorf("left %d entries beside the target", len(ents))
				}
			})
		}
	})
}

func TestConcurrentWritersOfOneBlob(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	data := pattern(4*blobBuf+5, 11)
	const n = 8
	digests := make([]Digest, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(root, WithSyncEach(i%2 == 0)) // a Store each, as separate processes would
			if err == nil {
				digests[i], err = s.PutBlob(bytes.NewReader(data))
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	s, _ := Open(root)
	for i := range n {
		if errs[i] != nil || digests[i] != digests[0] {
			t.Fatalf("writer %d: %s, %v", i, digests[i], errs[i])
		}
	}
	if err := s.VerifyBlob(digests[0]); err != nil {
		t.Fatal(err)
	}
	shard, _ := os.ReadDir(filepath.Dir(s.BlobPath(digests[0])))
	tmp, _ := os.ReadDir(filepath.Join(root, "tmp"))
	if len(shard) != 1 || len(tmp) != 0 {
		t.Errorf("%d files in the shard, %d left in tmp/", len(shard), len(tmp))
	}
}

func TestCorruptBlobIsDetectedOnReadAndQuarantined(t *testing.T) {
	damage := []struct {
		name string
		do   func(p string) error
	}{
		{"flipped byte", func(p string) error {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteAt([]byte{0xff}, 12345)
			return err
		}},
		{"cut by a power loss", func(p string) error { return os.Truncate(p, 20000) }},
		{"grown", func(p string) error {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.Write([]byte("tail"))
			return err
		}},
	}
	reads := []struct {
		name string
		read func(s *Store, d Digest) error
	}{
		{"OpenBlob", func(s *Store, d Digest) error {
			b, err := s.OpenBlob(d)
			if err != nil {
				return err
			}
			defer b.Close()
			_, err = io.Copy(io.Discard, b)
			return err
		}},
		{"ExtractBlob", func(s *Store, d Digest) error {
			return s.ExtractBlob(d, filepath.Join(filepath.Dir(s.Root()), "out"))
		}},
	}
	for _, dm := range damage {
		for _, rd := range reads {
			t.Run(dm.name+"/"+rd.name, func(t *testing.T) {
				s := openTemp(t)
				src := t.TempDir()
				os.WriteFile(filepath.Join(src, "w.bin"), pattern(100000, 5), 0o644)
				d, err := s.PutBlobDir(src)
				if err != nil {
					t.Fatal(err)
				}
				if err := dm.do(s.BlobPath(d)); err != nil {
					t.Fatal(err)
				}
				gen := s.Generation()
				err = rd.read(s, d)
				var be *BlobError
				if !errors.As(err, &be) || !errors.Is(err, ErrCorruptBlob) || !errors.Is(err, ErrCorrupt) || be.Digest != d {
					t.Fatalf("read of a damaged blob: %v", err)
				}
				if !strings.Contains(err.Error(), "quarantine") || !strings.Contains(err.Error(), "recomputed") {
					t.Errorf("error does not say what happens: %v", err)
				}
				if s.HasBlob(d) {
					t.Error("damaged blob left in blobs/")
				}
				if _, err := os.Stat(filepath.Join(s.Root(), "quarantine", string(d)+".blob")); err != nil {
					t.Error("damaged blob not in quarantine/")
				}
				if s.Generation() <= gen {
					t.Error("generation not bumped")
				}
				if ents, _ := os.ReadDir(filepath.Dir(s.Root())); len(ents) != 1 {
					t.Errorf("a failed extraction left %d entries beside the store", len(ents)-1)
				}
				// Writing it again (the recompute) restores it.
				if d2, err := s.PutBlobDir(src); err != nil || d2 != d || s.VerifyBlob(d) != nil {
					t.Errorf("rewrite: %s, %v", d2, err)
				}
			})
		}
	}
}

func TestWritingOverACorruptBlobReplacesIt(t *testing.T) {
	s := openTemp(t)
	data := pattern(50000, 9)
	d, _ := s.PutBlob(bytes.NewReader(data))
	os.Truncate(s.BlobPath(d), 100)
	if d2, err := s.PutBlob(bytes.NewReader(data)); err != nil || d2 != d {
		t.Fatalf("%s, %v", d2, err)
	}
	if err := s.VerifyBlob(d); err != nil {
		t.Fatalf("the cut blob was kept: %v", err)
	}
}

func TestMissingBlobIsReportedAndDistrustsSnapshots(t *testing.T) {
	s := openTemp(t)
	d, _ := s.PutBlob(strings.NewReader("codebook"))
	os.Remove(s.BlobPath(d))
	gen := s.Generation()
	_, err := s.OpenBlob(d)
	if !errors.Is(err, ErrBlobNotFound) || !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), string(d)) {
		t.Fatalf("err %v", err)
	}
	if s.Generation() <= gen {
		t.Error("generation not bumped: a run would trust a snapshot whose action lost its blob")
	}
	if m := s.MissingBlobs([]Digest{d}); len(m) != 1 {
		t.Errorf("MissingBlobs %v", m)
	}
	if _, err := s.OpenBlob("../../etc"); err == nil {
		t.Error("opened a name that is not a digest")
	}
}

type adapterRow struct {
	Name    string   `parquet:"name"`
	Adapter string   `parquet:"adapter_blob"`
	Shards  []string `parquet:"shard_blobs,list"`
	Raw     []byte   `parquet:"raw_blob"` // bytes, not a string: not a blob column
	Blob    string   `parquet:"blob"`     // no suffix: not a blob column
}

func TestBlobColumnsAndRefs(t *testing.T) {
	cols := BlobColumns(SchemaOf[adapterRow]())
	var names []string
	for _, n := range cols {
		names = append(names, n)
	}
	sort.Strings(names)
	if strings.Join(names, " ") != "adapter_blob shard_blobs.list.element" {
		t.Errorf("blob columns %q", names)
	}
	if len(BlobColumns(SchemaOf[toolRow]())) != 0 {
		t.Error("toolRow has blob columns")
	}
	for _, tc := range []struct {
		name string
		rows []adapterRow
		want string // refs joined by spaces, or "error"
	}{
		{"none", []adapterRow{{Name: "x", Blob: "not a ref", Raw: []byte("zz")}}, ""},
		{"sorted and unique", []adapterRow{
			{Adapter: "00000000000000bb", Shards: []string{"00000000000000aa", "00000000000000bb"}},
			{Adapter: "00000000000000aa"},
		}, "00000000000000aa 00000000000000bb"},
		{"not a digest", []adapterRow{{Adapter: "weights.bin"}}, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			w, _ := s.NewWriter(SchemaOf[adapterRow](), nil)
			for _, r := range tc.rows {
				w.Write(r)
			}
			obj, err := w.Commit()
			if err != nil {
				t.Fatal(err)
			}
			r, err := s.Open(obj)
			if err != nil {
				t.Fatal(err)
			}
			refs, err := BlobRefs(r)
			got := fmt.Sprint(refs)
			got = strings.Trim(got, "[]")
			if err != nil {
				got = "error"
			}
			if got != tc.want {
				t.Errorf("refs %q (%v), want %q", got, err, tc.want)
			}
		})
	}
}

// putBlobAction commits rows as action key's output with the given
// listed blobs, as the engine does.
func putBlobAction(t *testing.T, s *Store, key Digest, node string, rows []adapterRow, listed []Digest) {
	t.Helper()
	w, err := s.NewWriter(SchemaOf[adapterRow](), map[string]string{MetaNode: node, MetaActionKey: string(key)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		w.Write(r)
	}
	obj, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutAction(&Action{Key: key, Output: obj, Node: node, Blobs: listed}); err != nil {
		t.Fatal(err)
	}
}

func TestFsckChecksTheBlobsOfActions(t *testing.T) {
	const key = Digest("00000000000000a1")
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, s *Store)
		kinds  string // the problems' kinds, sorted
		remove bool   // repair removes the action entry
		listed int    // blobs the entry lists after repair
	}{
		{"intact", func(t *testing.T, s *Store) {
			d, _ := s.PutBlob(strings.NewReader("w"))
			putBlobAction(t, s, key, "node.sft.a", []adapterRow{{Adapter: string(d)}}, []Digest{d})
		}, "", false, 1},
		{"listed blob missing", func(t *testing.T, s *Store) {
			d, _ := s.PutBlob(strings.NewReader("w"))
			putBlobAction(t, s, key, "node.sft.a", []adapterRow{{Name: "x"}}, []Digest{d})
			os.Remove(s.BlobPath(d))
		}, "missing-blob", true, 0},
		{"listed blob corrupt", func(t *testing.T, s *Store) {
			d, _ := s.PutBlob(strings.NewReader("weights"))
			putBlobAction(t, s, key, "node.sft.a", []adapterRow{{Adapter: string(d)}}, []Digest{d})
			os.WriteFile(s.BlobPath(d), []byte("weighTs"), 0o644)
		}, "corrupt-blob missing-blob", true, 0},
		{"referenced blob missing", func(t *testing.T, s *Store) {
			putBlobAction(t, s, key, "node.sft.a", []adapterRow{{Adapter: "00000000000000ff"}}, nil)
		}, "missing-blob", true, 0},
		{"bad reference", func(t *testing.T, s *Store) {
			putBlobAction(t, s, key, "node.sft.a", []adapterRow{{Adapter: "weights.bin"}}, nil)
		}, "missing-blob", true, 0},
		{"referenced blob not listed", func(t *testing.T, s *Store) {
			d1, _ := s.PutBlob(strings.NewReader("one"))
			d2, _ := s.PutBlob(strings.NewReader("two"))
			putBlobAction(t, s, key, "node.sft.a", []adapterRow{{Adapter: string(d1), Shards: []string{string(d2)}}}, []Digest{d1})
		}, "unlisted-blob", false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			tc.setup(t, s)
			entry, _ := os.ReadFile(s.path("ac", key, ".json"))
			kindsOf := func(repair bool) string {
				var ks []string
				for k := range fsckKinds(t, s, repair) {
					ks = append(ks, k)
				}
				sort.Strings(ks)
				return strings.Join(ks, " ")
			}
			if got := kindsOf(false); got != tc.kinds {
				t.Fatalf("dry run found %q, want %q", got, tc.kinds)
			}
			if now, _ := os.ReadFile(s.path("ac", key, ".json")); !bytes.Equal(now, entry) {
				t.Fatal("the dry run changed the action entry")
			}
			gen := s.Generation()
			if got := kindsOf(true); got != tc.kinds {
				t.Fatalf("repair found %q, want %q", got, tc.kinds)
			}
			a, err := s.GetAction(key)
			if tc.remove {
				if err == nil {
					t.Fatal("the action whose blob is gone is still cached: it would not recompute")
				}
				if s.Generation() <= gen {
					t.Error("generation not bumped")
				}
			} else if err != nil || len(a.Blobs) != tc.listed {
				t.Fatalf("after repair: %+v, %v", a, err)
			}
			if got := kindsOf(true); got != "" {
				t.Errorf("fsck after repair still finds %q", got)
			}
		})
	}
}

func TestGCKeepsTheBlobsOfKeptActions(t *testing.T) {
	s := openTemp(t)
	kept, _ := s.PutBlob(strings.NewReader("kept adapter"))
	shared, _ := s.PutBlob(strings.NewReader("shared codebook"))
	dropped, _ := s.PutBlob(strings.NewReader("old checkpoint"))
	stray, _ := s.PutBlob(strings.NewReader("written by an interrupted run"))
	putBlobAction(t, s, "00000000000000a1", "node.sft.new", []adapterRow{{Adapter: string(kept)}}, []Digest{kept, shared})
	putBlobAction(t, s, "00000000000000a2", "node.sft.old", []adapterRow{{Adapter: string(dropped)}}, []Digest{dropped, shared})
	dry, err := s.GC(context.Background(), map[Digest]bool{"00000000000000a1": true}, true)
	if err != nil || dry.BlobsRemoved != 2 || !s.HasBlob(dropped) || !s.HasBlob(stray) {
		t.Fatalf("dry run %+v, %v", dry, err)
	}
	rep, err := s.GC(context.Background(), map[Digest]bool{"00000000000000a1": true}, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.BlobsKept != 2 || rep.BlobsRemoved != 2 || rep.ActionsRemoved != 1 {
		t.Errorf("report %+v", rep)
	}
	for d, want := range map[Digest]bool{kept: true, shared: true, dropped: false, stray: false} {
		if s.HasBlob(d) != want {
			t.Errorf("blob %s present %v after gc, want %v", d, !want, want)
		}
	}
	if p := fsckKinds(t, s, false); len(p) != 0 {
		t.Errorf("fsck after gc: %v", p)
	}
}

// TestLargeBlobStreamsInBoundedMemory writes and reads back a 1 GiB blob
// and checks that the heap stays small: the bytes are streamed, never
// held. LACUNA_BLOB_TEST_MIB sets another size.
func TestLargeBlobStreamsInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1 GiB")
	}
	size := int64(1 << 30)
	if v, err := strconv.Atoi(os.Getenv("LACUNA_BLOB_TEST_MIB")); err == nil && v > 0 {
		size = int64(v) << 20
	}
	s := openTemp(t)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peakHeap, peakRSS := sampleMemory(t)

	start := time.Now()
	d, err := s.PutBlob(&genReader{left: size, x: 42})
	if err != nil {
		t.Fatal(err)
	}
	wrote := time.Since(start)
	var afterWrite runtime.MemStats
	runtime.ReadMemStats(&afterWrite)

	start = time.Now()
	b, err := s.OpenBlob(d)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.CopyBuffer(io.Discard, b, make([]byte, 256<<10))
	b.Close()
	if err != nil || n != size {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	read := time.Since(start)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	heap, rss := peakHeap(), peakRSS()
	t.Logf("%d MiB blob: write %v (%.0f MiB/s), verified read %v (%.0f MiB/s); allocated %.1f MiB writing, %.1f MiB reading; peak heap %.1f MiB (%.1f MiB before), peak RSS %.1f MiB",
		size>>20, wrote.Round(time.Millisecond), float64(size>>20)/wrote.Seconds(), read.Round(time.Millisecond), float64(size>>20)/read.Seconds(),
		float64(afterWrite.TotalAlloc-before.TotalAlloc)/(1<<20), float64(after.TotalAlloc-afterWrite.TotalAlloc)/(1<<20),
		float64(heap)/(1<<20), float64(before.HeapAlloc)/(1<<20), float64(rss)/(1<<20))
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("allocated %d MiB to stream %d MiB: the blob is held, not streamed", alloc>>20, size>>20)
	}
	if heap > before.HeapAlloc+32<<20 {
		t.Errorf("heap grew from %d to %d MiB", before.HeapAlloc>>20, heap>>20)
	}
}

// sampleMemory samples the heap and the resident set every 10 ms until
// the test ends, returning functions that report their peaks so far.
func sampleMemory(t *testing.T) (heap, rss func() uint64) {
	var mu sync.Mutex
	var maxHeap, maxRSS uint64
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		r := residentBytes()
		mu.Lock()
		maxHeap, maxRSS = max(maxHeap, m.HeapAlloc), max(maxRSS, r)
		mu.Unlock()
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			sample()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	get := func(p *uint64) func() uint64 {
		return func() uint64 { sample(); mu.Lock(); defer mu.Unlock(); return *p }
	}
	return get(&maxHeap), get(&maxRSS)
}

func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
