package goharness

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Descriptors of a harness process (gotool.Built.Run's ExtraFiles start
// at 7): the key its record is signed with, which the harness reads and
// closes while the package initialises, before any solution code runs;
// and the channel the record is written to.
const (
	KeyFD     = 7
	ChannelFD = 8
)

// maxRecord bounds what is read back from a channel.
const maxRecord = 64 << 20

// Channel is the out-of-band channel of one harness process: verdicts
// never come from what the process prints. The harness signs its one
// Record with a fresh random key (HMAC-SHA256) handed over on a
// descriptor it closes before the scenario runs; the solution cannot name
// the variable holding it (CheckSpan refuses lacuna… identifiers), so a
// line it writes to the channel fails authentication and the sample
// fails as tampered. Both files are unlinked at once: nothing on disk
// names them. A Channel serves one process; it is not safe for
// concurrent use.
type Channel struct {
	key     []byte
	variant byte
	keyFile *os.File
	out     *os.File
}

// NewChannel makes a channel with its files in dir, for a process that
// runs variant (VariantNormal, ...): the variant travels with the key.
func NewChannel(dir string, variant byte) (*Channel, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	c := &Channel{key: key, variant: variant}
	if c.keyFile, err = tempUnlinked(dir, "key-"); err != nil {
		return nil, err
	}
	if _, err = c.keyFile.Write(append(append([]byte(nil), c.key...), variant)); err == nil {
		_, err = c.keyFile.Seek(0, io.SeekStart)
	}
	if err == nil {
		c.out, err = tempUnlinked(dir, "channel-")
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("harness channel: %w", err)
	}
	return c, nil
}

func tempUnlinked(dir, prefix string) (*os.File, error) {
	f, err := os.CreateTemp(dir, prefix)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Files are the process's extra descriptors, KeyFD and ChannelFD.
func (c *Channel) Files() []*os.File { return []*os.File{c.keyFile, c.out} }

// Close closes both files.
func (c *Channel) Close() error {
	for _, f := range []*os.File{c.keyFile, c.out} {
		if f != nil {
			f.Close()
		}
	}
	return nil
}

// ErrNoRecord: the harness process ended without writing its record (it
// crashed, exited or was killed before the scenario finished).
var ErrNoRecord = errors.New("the harness wrote no record: the process ended before its scenario finished")

// ErrTampered: something other than the harness wrote to its channel.
var ErrTampered = errors.New("something other than the harness wrote to its channel")

// Record reads the record of unit once its process has ended.
func (c *Channel) Record(unit int) (*Record, error) {
	if _, err := c.out.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(c.out, maxRecord))
	if err != nil {
		return nil, err
	}
	return ReadRecord(c.key, data, unit, c.variant)
}

// ReadRecord reads the record of unit's variant from what its harness
// wrote to its channel, signed with key: exactly one line that
// authenticates and names them (ErrTampered otherwise), none at all being
// ErrNoRecord.
func ReadRecord(key, data []byte, unit int, variant byte) (*Record, error) {
	var rec *Record
	for line := range bytes.Lines(data) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		sum, body, ok := bytes.Cut(line, []byte(" "))
		mac := hmac.New(sha256.New, key)
		mac.Write(body)
		want, err := hex.DecodeString(string(sum))
		if !ok || err != nil || !hmac.Equal(want, mac.Sum(nil)) || rec != nil {
			return nil, ErrTampered
		}
		rec = &Record{}
		if err := json.Unmarshal(body, rec); err != nil || rec.Unit != unit || rec.Variant != string(variant) {
			return nil, ErrTampered
		}
	}
	if rec == nil {
		return nil, ErrNoRecord
	}
	return rec, nil
}

// newKey is a fresh signing key.
func newKey() ([]byte, error) {
	key := make([]byte, 32)
	_, err := rand.Read(key)
	return key, err
}
