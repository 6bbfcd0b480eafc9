// Package tailbuf keeps the end of a stream: the last bytes a process
// wrote, for an error message.
package tailbuf

import "sync"

// Buffer is an io.Writer that keeps the last Max bytes written to it.
// Safe for concurrent use (a process's stdout and stderr may share one).
type Buffer struct {
	Max int

	mu sync.Mutex
	b  []byte
}

// New returns a Buffer keeping the last max bytes.
func New(max int) *Buffer { return &Buffer{Max: max} }

func (t *Buffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.Max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// String is what the buffer holds.
func (t *Buffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
