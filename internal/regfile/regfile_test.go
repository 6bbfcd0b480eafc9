package regfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	fifo := filepath.Join(dir, "fifo")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{file, ""},
		{fifo, "is a named pipe (FIFO)"},
		{"/dev/zero", "is a device"},
		{dir, "is a directory"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		f, err := Open(tc.path)
		if f != nil {
			f.Close()
		}
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Open(%s): %v, want %q", tc.path, err, tc.want)
		}
	}
}
