package artifacts

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cespare/xxhash/v2"
)

// Object locates a stored Parquet artifact. Digest names its rows; FileSum
// checks its bytes.
type Object struct {
	Digest  Digest `json:"digest"`
	FileSum Digest `json:"file_sum,omitempty"`
	Size    int64  `json:"size"`
	Rows    int64  `json:"rows"`
}

// Input is one input artifact of an action, as recorded in provenance.
type Input struct {
	Name   string `json:"name"`   // the config attribute it came through
	Node   string `json:"node"`   // the address that produced it
	Digest Digest `json:"digest"` // its content digest (what the key used)
}

// Action is an action-cache entry: what an action key produced and the
// provenance needed to explain and reproduce it.
type Action struct {
	Key      Digest            `json:"key"`
	Output   Object            `json:"output"`
	Node     string            `json:"node"`
	Type     string            `json:"type"`
	Version  string            `json:"version"`
	Config   json.RawMessage   `json:"config"`
	Inputs   []Input           `json:"inputs,omitempty"`
	Identity map[string]string `json:"identity,omitempty"`
	Blobs    []Digest          `json:"blobs,omitempty"`
	Started  time.Time         `json:"started"`
	Seconds  float64           `json:"seconds"`
	Host     string            `json:"host"`
	Tool     string            `json:"tool"`
	Logs     string            `json:"logs,omitempty"`
}

// Failure records why an action failed. It never marks the key as done:
// the next run tries again.
type Failure struct {
	Key     Digest    `json:"key"`
	Node    string    `json:"node"`
	Type    string    `json:"type"`
	Error   string    `json:"error"`
	Logs    string    `json:"logs,omitempty"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	Host    string    `json:"host"`
}

// ErrNotFound is returned for keys and digests the store does not hold.
var ErrNotFound = fs.ErrNotExist

// GetAction returns the cache entry of key, or ErrNotFound.
func (s *Store) GetAction(key Digest) (*Action, error) {
	var a Action
	if err := readJSON(s.path("ac", key, ".json"), &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// PutAction records a finished action. Its output object must already be
// in cas/: the index is written after the data it points at.
func (s *Store) PutAction(a *Action) error {
	if err := s.writeJSON(s.path("ac", a.Key, ".json"), a); err != nil {
		return err
	}
	os.Remove(s.path("fail", a.Key, ".json"))
	return nil
}

// PutFailure records a failed action for `lacuna show`.
func (s *Store) PutFailure(f *Failure) error {
	return s.writeJSON(s.path("fail", f.Key, ".json"), f)
}

// GetFailure returns the last failure of key, or ErrNotFound.
func (s *Store) GetFailure(key Digest) (*Failure, error) {
	var f Failure
	if err := readJSON(s.path("fail", key, ".json"), &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// Name records which action key a node address last resolved to, in one
// pipeline. Plans use it to say why a node will run (config changed, input
// changed, ...); nothing depends on it for correctness.
type Name struct {
	Pipeline string `json:"pipeline"`
	Node     string `json:"node"`
	Key      Digest `json:"key"`
}

func nameDigest(pipeline, node string) Digest {
	return digestOf(xxhash.Sum64String(pipeline + "\x00" + node))
}

// LastKey returns the key the node had at its last successful run.
func (s *Store) LastKey(pipeline, node string) (Digest, bool) {
	var n Name
	if err := readJSON(s.path("names", nameDigest(pipeline, node), ".json"), &n); err != nil {
		return "", false
	}
	return n.Key, n.Node == node
}

// SetLastKey records key as the node's current key.
func (s *Store) SetLastKey(pipeline, node string, key Digest) error {
	if k, ok := s.LastKey(pipeline, node); ok && k == key {
		return nil
	}
	return s.writeJSON(s.path("names", nameDigest(pipeline, node), ".json"), Name{pipeline, node, key})
}

// Actions lists every action key in the cache.
func (s *Store) Actions() ([]Digest, error) {
	return s.list("ac", ".json")
}

func (s *Store) list(dir, ext string) ([]Digest, error) {
	var out []Digest
	err := filepath.WalkDir(filepath.Join(s.root, dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		name := d.Name()
		if len(name) == 16+len(ext) && name[16:] == ext {
			if dg := Digest(name[:16]); dg.Valid() {
				out = append(out, dg)
			}
		}
		return nil
	})
	return out, err
}
