package pypi

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// sdistExtensions are the source distribution formats Unpack reads, in
// the order SdistFile prefers them (PEP 625's .tar.gz first).
var sdistExtensions = []string{".tar.gz", ".tgz", ".zip"}

// SdistFile is the source distribution of version on project page p: a
// file of one of the formats Unpack reads (.tar.gz, .tgz, .zip) whose name
// carries the version (compared as PEP 440 versions: 1.0 is 1.0.0), a
// file that is not yanked preferred, then .tar.gz. A release without one
// (wheels only) is ErrNotFound.
func SdistFile(p *Project, version string) (File, error) {
	want := versionKey(version)
	best, bestRank := File{}, -1
	for _, f := range p.Files {
		ext := -1
		for i, e := range sdistExtensions {
			if strings.HasSuffix(strings.ToLower(f.Filename), e) {
				ext = i
				break
			}
		}
		if ext < 0 {
			continue
		}
		v := fileVersion(p.Name, f.Filename)
		if v == "" || versionKey(v) != want {
			continue
		}
		rank := 2*len(sdistExtensions) - ext
		if f.Yanked {
			rank -= len(sdistExtensions)
		}
		if rank > bestRank {
			best, bestRank = f, rank
		}
	}
	if bestRank < 0 {
		return File{}, fmt.Errorf("%s %s: no source distribution (.tar.gz, .zip) on the index: %w", p.Name, version, ErrNotFound)
	}
	return best, nil
}

// Download fetches f and checks it against the sha256 digest the index
// gave for it; a file without one is refused (nothing would tell a
// damaged or substituted download from the real one).
func (ix *Index) Download(ctx context.Context, f File) ([]byte, error) {
	want := strings.ToLower(f.Hashes["sha256"])
	if want == "" {
		return nil, fmt.Errorf("%s: the index gives no sha256 digest to check it against", f.Filename)
	}
	b, _, err := ix.get(ctx, f.URL, "*/*")
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", f.Filename, err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != want {
		return nil, fmt.Errorf("download %s: sha256 %s, the index says %s", f.Filename, got, want)
	}
	return b, nil
}

// ErrUnsafeArchive is an archive member Unpack will not write: an
// absolute path or one that leaves the directory.
var ErrUnsafeArchive = errors.New("unsafe archive member")

// Unpack writes the regular files and directories of source distribution
// data (named filename: .tar.gz, .tgz or .zip) under dir, and returns
// the directory holding its contents: the single top-level directory
// sdists have (name-version/), else dir. Links, devices and other special
// members are left out; a member with an absolute path or ".." is
// ErrUnsafeArchive; more than maxBytes of contents in all (0: 1 GiB) is an
// error. Files are written 0644, directories 0755.
func Unpack(filename string, data []byte, dir string, maxBytes int64) (string, error) {
	if maxBytes <= 0 {
		maxBytes = 1 << 30
	}
	w := &unpacker{dir: dir, left: maxBytes, tops: map[string]bool{}}
	var err error
	switch lower := strings.ToLower(filename); {
	case strings.HasSuffix(lower, ".tar.gz") || strings.HasSuffix(lower, ".tgz"):
		err = w.tar(data)
	case strings.HasSuffix(lower, ".zip"):
		err = w.zip(data)
	default:
		return "", fmt.Errorf("unpack %s: not a .tar.gz, .tgz or .zip", filename)
	}
	if err != nil {
		return "", fmt.Errorf("unpack %s: %w", filename, err)
	}
	if len(w.tops) == 1 && !w.topFile {
		for t := range w.tops {
			return filepath.Join(dir, t), nil
		}
	}
	return dir, nil
}

type unpacker struct {
	dir     string
	left    int64
	tops    map[string]bool
	topFile bool // a regular file at the top level
}

// target is where member name goes ("" for the archive's root), or an
// error for an unsafe name; file says the member is a regular file.
func (w *unpacker) target(name string, file bool) (string, error) {
	clean, err := safe(name)
	if err != nil || clean == "." {
		return "", err
	}
	top, rest, _ := strings.Cut(clean, "/")
	w.tops[top] = true
	if file && rest == "" {
		w.topFile = true
	}
	return filepath.Join(w.dir, filepath.FromSlash(clean)), nil
}

// safe is member name cleaned, or ErrUnsafeArchive for an absolute path
// or one that leaves the directory.
func safe(name string) (string, error) {
	clean := path.Clean(strings.ReplaceAll(name, "\\", "/"))
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(name, "\x00") {
		return "", fmt.Errorf("%w: %q", ErrUnsafeArchive, name)
	}
	return clean, nil
}

func (w *unpacker) write(name string, r io.Reader) error {
	dst, err := w.target(name, true)
	if err != nil || dst == "" {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, w.left+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if w.left -= n; w.left < 0 {
		return fmt.Errorf("contents larger than the bound")
	}
	return nil
}

func (w *unpacker) mkdir(name string) error {
	dst, err := w.target(name, false)
	if err != nil || dst == "" {
		return err
	}
	return os.MkdirAll(dst, 0o755)
}

func (w *unpacker) tar(data []byte) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeReg:
			err = w.write(h.Name, tr)
		case tar.TypeDir:
			err = w.mkdir(h.Name)
		default: // links, devices, PAX globals: not contents
			_, err = safe(h.Name)
		}
		if err != nil {
			return err
		}
	}
}

func (w *unpacker) zip(data []byte) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	for _, f := range zr.File {
		mode := f.Mode()
		switch {
		case mode.IsDir():
			err = w.mkdir(f.Name)
		case mode.IsRegular():
			var rc io.ReadCloser
			if rc, err = f.Open(); err == nil {
				err = w.write(f.Name, rc)
				rc.Close()
			}
		default:
			_, err = safe(f.Name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
