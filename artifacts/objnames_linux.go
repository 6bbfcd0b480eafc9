package artifacts

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// readObjectNames returns the digests of the objects in a cas/ shard
// directory, unsorted (nil when it cannot be read). It parses the
// directory's entries itself (getdents64): os.File.Readdirnames would
// make a string of every name, 100,000 of them on a no-op run of a large
// sweep, each dropped at once.
func readObjectNames(dir string) []uint64 {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var set []uint64
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return set
		}
		// struct linux_dirent64: d_ino u64, d_off s64, d_reclen u16,
		// d_type u8, d_name NUL-terminated.
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return set
			}
			name := b[19:reclen]
			for k, c := range name {
				if c == 0 {
					name = name[:k]
					break
				}
			}
			if d, ok := objectNumber(name); ok {
				set = append(set, d)
			}
			b = b[reclen:]
		}
	}
}
