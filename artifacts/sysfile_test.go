package artifacts

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestReadFileAndOpenFileBehaveLikeOS(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"one byte", []byte("x")},
		{"a page and more", bytes.Repeat([]byte("abc\n"), 5000)},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := readFile(p)
		if err != nil || !bytes.Equal(got, tc.data) {
			t.Errorf("%s: readFile = %d bytes, %v; want %d bytes", tc.name, len(got), err, len(tc.data))
		}
	}
	if _, err := readFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("readFile of a missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := openFile(filepath.Join(dir, "one byte"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Errorf("O_EXCL over an existing file: %v, want fs.ErrExist", err)
	}
	f, err := openFile(filepath.Join(dir, "log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a\n", "b\n"} {
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	if got, _ := os.ReadFile(filepath.Join(dir, "log")); string(got) != "a\nb\n" {
		t.Errorf("appended %q, want %q", got, "a\nb\n")
	}
	if st, _ := os.Stat(filepath.Join(dir, "log")); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
}
