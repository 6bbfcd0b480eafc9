package artifacts

import (
	"fmt"
	"io"
	"os"

	"github.com/cespare/xxhash/v2"
)

// Blobs hold large non-tabular outputs (adapters, checkpoints, logs).
// Parquet rows refer to them by digest; actions list the blobs they wrote
// so that gc keeps them.

// PutBlob stores r's bytes and returns their digest. A blob already
// stored under that digest is kept.
func (s *Store) PutBlob(r io.Reader) (Digest, error) {
	f, err := s.tempFile()
	if err != nil {
		return "", err
	}
	h := xxhash.New()
	if _, err := io.Copy(io.MultiWriter(f, h), r); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	d := digestOf(h.Sum64())
	defer os.Remove(f.Name())
	if err := s.closeTemp(f); err != nil {
		return "", err
	}
	if _, err := s.linkNoReplace(f.Name(), s.BlobPath(d)); err != nil {
		return "", fmt.Errorf("store blob %s: %w", d, err)
	}
	return d, nil
}

// BlobPath is where blob d lives.
func (s *Store) BlobPath(d Digest) string { return s.path("blobs", d, "") }

// OpenBlob opens blob d and checks its digest when fully read by VerifyBlob.
func (s *Store) OpenBlob(d Digest) (*os.File, error) { return os.Open(s.BlobPath(d)) }

// VerifyBlob rehashes a blob.
func (s *Store) VerifyBlob(d Digest) error {
	f, err := s.OpenBlob(d)
	if err != nil {
		return err
	}
	defer f.Close()
	h := xxhash.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := digestOf(h.Sum64()); got != d {
		return fmt.Errorf("blob %s hashes to %s: %w", d, got, ErrCorrupt)
	}
	return nil
}
