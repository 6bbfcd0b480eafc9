package artifacts

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// openFile is os.OpenFile for the store's regular files, without the
// runtime poller: os.OpenFile tries to register every file with epoll,
// which costs four fcntl calls and a failing epoll_ctl per open on Linux
// and gains nothing for regular files. A node of a full run opens about
// five such files. Errors are *os.PathError, as from os.OpenFile.
func openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := unix.Open(name, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		switch err {
		case nil:
			return os.NewFile(uintptr(fd), name), nil
		case unix.EINTR:
			continue
		}
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
}

// readFile is os.ReadFile through openFile.
func readFile(name string) ([]byte, error) {
	f, err := openFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := 512
	if st, err := f.Stat(); err == nil && st.Size() > 0 && st.Size() < 1<<30 {
		size = int(st.Size()) + 1 // one more, to see EOF without growing
	}
	data := make([]byte, 0, size)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}
