package pypi_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/pypi"
	"github.com/lacuna-dev/lacuna/runners/pypi/pypitest"
)

// TestSdistIsFoundDownloadedCheckedAndUnpacked: a release published with
// a source distribution has it on its page beside the wheel; SdistFile
// finds it by version (1.1 is 1.1.0), Download checks its digest and
// Unpack returns its NAME-VERSION directory. A release with wheels only
// has none (ErrNotFound), and a download whose digest differs from the
// index's, or that the index gives none for, is refused. The JSON API
// lists the sdist as the simple API does.
func TestSdistIsFoundDownloadedCheckedAndUnpacked(t *testing.T) {
	with := rel("1.1.0", "2024-06-01")
	with.Sdist = map[string]string{"tests/test_demo.py": "def test_x():\n    assert True\n", "README.md": "# demo\n"}
	idx := serve(t, rel("1.0.0", "2024-01-10"), with)
	ctx := context.Background()
	p, err := idx.Project(ctx, pypitest.DemoProject)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Files) != 3 {
		t.Fatalf("files %+v, want two wheels and one sdist", p.Files)
	}
	if d, err := idx.CrossCheck(ctx, p); err != nil || len(d) != 0 {
		t.Errorf("the JSON API disagrees on the sdist: %v %+v", err, d)
	}
	if _, err := pypi.SdistFile(p, "1.0.0"); !errors.Is(err, pypi.ErrNotFound) {
		t.Errorf("1.0.0 (wheel only): %v, want ErrNotFound", err)
	}
	f, err := pypi.SdistFile(p, "1.1")
	if err != nil {
		t.Fatal(err)
	}
	if f.Filename != "lacuna_demo-1.1.0.tar.gz" {
		t.Errorf("sdist %s", f.Filename)
	}
	data, err := idx.Download(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	root, err := pypi.Unpack(f.Filename, data, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if root != filepath.Join(dir, "lacuna_demo-1.1.0") {
		t.Errorf("root %s", root)
	}
	for name, want := range map[string]string{"tests/test_demo.py": "def test_x():\n    assert True\n", "README.md": "# demo\n"} {
		if b, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "PKG-INFO")); err != nil || !strings.Contains(string(b), "Version: 1.1.0") {
		t.Errorf("PKG-INFO: %q %v", b, err)
	}

	for _, c := range []struct {
		name   string
		hashes map[string]string
		want   string
	}{
		{"another digest", map[string]string{"sha256": strings.Repeat("0", 64)}, "the index says 0000"},
		{"no digest", map[string]string{"md5": "x"}, "no sha256 digest"},
	} {
		g := f
		g.Hashes = c.hashes
		if _, err := idx.Download(ctx, g); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

type member struct {
	name, body string
	link       bool
}

func tarGz(t *testing.T, ms ...member) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, m := range ms {
		h := &tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.body)), Typeflag: tar.TypeReg}
		if m.link {
			h = &tar.Header{Name: m.name, Linkname: m.body, Typeflag: tar.TypeSymlink}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if !m.link {
			tw.Write([]byte(m.body))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func zipped(t *testing.T, ms ...member) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range ms {
		w, err := zw.Create(m.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(m.body))
	}
	zw.Close()
	return buf.Bytes()
}

// TestUnpackWritesOnlyContentsInsideItsDirectory: members that would
// leave the directory are refused, links are left out, a bound on the
// contents holds, and an archive without a single top directory unpacks
// to the directory itself.
func TestUnpackWritesOnlyContentsInsideItsDirectory(t *testing.T) {
	for _, c := range []struct {
		name     string
		file     string
		data     func(*testing.T) []byte
		max      int64
		wantErr  string
		wantRoot string // relative to the directory
		present  []string
		absent   []string
	}{
		{name: "sdist", file: "a-1.tar.gz", data: func(t *testing.T) []byte {
			return tarGz(t, member{name: "a-1/PKG-INFO", body: "x"}, member{name: "a-1/tests/test_a.py", body: "y"})
		}, wantRoot: "a-1", present: []string{"a-1/tests/test_a.py"}},
		{name: "links left out", file: "a-1.tar.gz", data: func(t *testing.T) []byte {
			return tarGz(t, member{name: "a-1/evil", body: "/etc/passwd", link: true}, member{name: "a-1/ok.py", body: "y"})
		}, wantRoot: "a-1", present: []string{"a-1/ok.py"}, absent: []string{"a-1/evil"}},
		{name: "parent", file: "a-1.tar.gz", data: func(t *testing.T) []byte {
			return tarGz(t, member{name: "a-1/../../escape.py", body: "y"})
		}, wantErr: "unsafe archive member"},
		{name: "absolute", file: "a-1.zip", data: func(t *testing.T) []byte {
			return zipped(t, member{name: "/abs.py", body: "y"})
		}, wantErr: "unsafe archive member"},
		{name: "too large", file: "a-1.tar.gz", data: func(t *testing.T) []byte {
			return tarGz(t, member{name: "a-1/big", body: strings.Repeat("x", 100)})
		}, max: 10, wantErr: "larger than the bound"},
		{name: "zip without a top directory", file: "a-1.zip", data: func(t *testing.T) []byte {
			return zipped(t, member{name: "setup.py", body: "x"}, member{name: "a/b.py", body: "y"})
		}, wantRoot: ".", present: []string{"setup.py", "a/b.py"}},
		{name: "not an archive format", file: "a-1.whl", data: func(t *testing.T) []byte { return nil }, wantErr: "not a .tar.gz"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			root, err := pypi.Unpack(c.file, c.data(t), dir, c.max)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.py")); err == nil {
					t.Errorf("a member was written outside the directory")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if root != filepath.Join(dir, c.wantRoot) {
				t.Errorf("root %s, want %s", root, filepath.Join(dir, c.wantRoot))
			}
			for _, p := range c.present {
				if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
					t.Errorf("%s: %v", p, err)
				}
			}
			for _, p := range c.absent {
				if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
					t.Errorf("%s was written", p)
				}
			}
		})
	}
}
