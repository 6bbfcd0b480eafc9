// Package regfile opens files named in pipelines, refusing what is not a
// regular file: a FIFO or a device (/dev/zero) would block or never end,
// a directory or a socket cannot be read as data.
package regfile

import (
	"fmt"
	"os"
	"syscall"
)

// Open opens a regular file for reading. A FIFO, a device, a directory or
// a socket is refused before anything is read: the path is checked before
// it is opened (non-blocking, since opening a FIFO waits for a writer) and
// the open file is checked again, so a path swapped in between is refused
// too. The error says what the path is instead.
func Open(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = notRegular(path, st.Mode())
		}
		return nil, err
	}
	return f, nil
}

func notRegular(path string, m os.FileMode) error {
	kind := "not a regular file"
	switch {
	case m.IsDir():
		kind = "a directory"
	case m&os.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		kind = "a socket"
	case m&os.ModeDevice != 0:
		kind = "a device"
	}
	return fmt.Errorf("%s is %s; only regular files can be read", path, kind)
}
