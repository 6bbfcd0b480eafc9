package artifacts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cespare/xxhash/v2"
)

// Object locates a stored Parquet artifact. Digest names its rows; FileSum
// checks its bytes as written by Writer, the action key in the file's
// metadata.
//
// Action is the action through which the object was found: GetAction,
// LoadSnapshot and Commit set it, and Open then refuses the object unless
// that action is among its writers (see ErrWrongWriter). It is not stored:
// an action entry's key is its file name, a snapshot line's is its key.
type Object struct {
	Digest  Digest `json:"digest"`
	FileSum Digest `json:"file_sum,omitempty"`
	Size    int64  `json:"size"`
	Rows    int64  `json:"rows"`
	Writer  Digest `json:"writer,omitempty"`
	Action  Digest `json:"-"`
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
	// Note is the node's one-line result summary ("428 novel, 212 kept").
	Note string `json:"note,omitempty"`
	// Reports are the node's named records (model usage, ...).
	Reports map[string]json.RawMessage `json:"reports,omitempty"`
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
	// Reports are the node's named records up to the failure (the calls
	// it made before failing, ...).
	Reports map[string]json.RawMessage `json:"reports,omitempty"`
}

// ErrNotFound is returned for keys and digests the store does not hold.
var ErrNotFound = fs.ErrNotExist

// ErrDamagedAction is in the chain of GetAction's error when the entry
// exists but is not an action entry of its key (bytes that are not its
// JSON, or another key's entry): a *DamagedActionError.
var ErrDamagedAction = errors.New("damaged action entry")

// DamagedActionError is an action entry that cannot be read as what its
// name says. Nothing is moved by the read that finds it: a run moves it
// to quarantine/ (QuarantineAction) and recomputes, fsck --repair does
// the same, read-only commands report it.
type DamagedActionError struct {
	Key  Digest
	Path string // relative to the store's root: ac/XX/KEY.json
	Why  string
}

func (e *DamagedActionError) Error() string {
	return fmt.Sprintf("action entry %s is damaged (%s): run the pipeline again to recompute it, or `lacuna fsck` to move it to quarantine/ (the next run recomputes it)", e.Path, e.Why)
}

func (e *DamagedActionError) Unwrap() error { return ErrDamagedAction }

// GetAction returns the cache entry of key, ErrNotFound, or a
// *DamagedActionError (ErrDamagedAction) for an entry that does not
// decode or names another key.
func (s *Store) GetAction(key Digest) (*Action, error) {
	path := s.path("ac", key, ".json")
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	var a Action
	why := ""
	switch err := json.Unmarshal(data, &a); {
	case err != nil:
		why = "not JSON of an action entry: " + err.Error()
	case a.Key != key:
		why = fmt.Sprintf("it names key %q", a.Key)
	case a.Output.Digest != "" && !a.Output.Digest.Valid():
		why = fmt.Sprintf("its output digest %q is not a digest", a.Output.Digest)
	}
	if why != "" {
		rel, _ := filepath.Rel(s.root, path)
		return nil, &DamagedActionError{Key: key, Path: rel, Why: why}
	}
	a.Output.Action = key
	return &a, nil
}

// QuarantineAction moves the entry of key to quarantine/KEY.json and
// bumps the generation, so that no snapshot naming it is trusted: the
// next run recomputes the action. An entry already gone is not an error.
func (s *Store) QuarantineAction(key Digest) error {
	if err := s.quarantine(s.path("ac", key, ".json"), string(key)+".json"); err != nil {
		return fmt.Errorf("quarantine action entry %s: %w", key, err)
	}
	return s.bumpGeneration()
}

// PutAction records a finished action. Its output object must already be
// in cas/: the index is written after the data it points at.
func (s *Store) PutAction(a *Action) error {
	return s.writeJSON(s.path("ac", a.Key, ".json"), a)
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

// A Snapshot records, for one pipeline, what each node address resolved
// to at its last run: the action key and output. A run that computes the
// same key for an address takes the output from the snapshot without
// reading the action cache (a stat of the entry: ActionIntact), which
// makes a no-op run of ten thousand nodes one file read and a stat per
// node. The snapshot is trusted only while the store's generation is the
// one it was written at: every deletion (gc, fsck repair, quarantine, a
// damaged action entry) bumps the generation. Plans also use the recorded
// keys to say why a node will run.
type Snapshot struct {
	Pipeline   string                  `json:"pipeline"`
	Generation uint64                  `json:"generation"`
	Nodes      map[string]SnapshotNode `json:"nodes"`
	// Written is when the snapshot's file was last written (its
	// modification time; zero when there is none). Not stored.
	Written time.Time `json:"-"`
}

// SnapshotNode is one address in a Snapshot.
type SnapshotNode struct {
	Key    Digest `json:"key"`
	Output Object `json:"output"`
	Failed bool   `json:"failed,omitempty"`
	Note   string `json:"note,omitempty"`
}

func (s *Store) snapshotPath(pipeline string) string {
	return filepath.Join(s.root, "names", string(digestOf(xxhash.Sum64String(pipeline)))+".tsv")
}

// The snapshot file is one header line, "lacuna-snapshot-v1 TAB quoted
// pipeline TAB generation", then one line per node: quoted address, key,
// digest, file sum, size, rows, writer, failed (0 or 1), quoted note,
// tab-separated (files written before notes existed have no note). A
// line format, because a no-op run of ten thousand nodes reads it first.
const snapshotHeader = "lacuna-snapshot-v1"

func encodeSnapshot(snap *Snapshot) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\t%s\t%d\n", snapshotHeader, strconv.Quote(snap.Pipeline), snap.Generation)
	nodes := make([]string, 0, len(snap.Nodes))
	for n := range snap.Nodes {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		e := snap.Nodes[n]
		failed := 0
		if e.Failed {
			failed = 1
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%d\t%s\n", strconv.Quote(n), e.Key, e.Output.Digest, e.Output.FileSum, e.Output.Size, e.Output.Rows, e.Output.Writer, failed, strconv.Quote(e.Note))
	}
	return []byte(b.String())
}

// decodeSnapshot parses a snapshot file's text. The snapshot's digests
// are substrings of text, which they keep alive: read the file into a
// string (readText), not a []byte converted.
func decodeSnapshot(text string) (*Snapshot, error) {
	first, rest, _ := strings.Cut(strings.TrimSuffix(text, "\n"), "\n")
	head := strings.Split(first, "\t")
	if len(head) != 3 || head[0] != snapshotHeader {
		return nil, errors.New("not a snapshot")
	}
	pipeline, err := strconv.Unquote(head[1])
	if err != nil {
		return nil, err
	}
	gen, err := strconv.ParseUint(head[2], 10, 64)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{Pipeline: pipeline, Generation: gen, Nodes: make(map[string]SnapshotNode, strings.Count(rest, "\n")+1)}
	var f [9]string // one line's fields, reused: no allocation per line
	for more := rest != ""; more; {
		var line string
		line, rest, more = strings.Cut(rest, "\n")
		nf := splitTabs(line, f[:])
		if nf != 8 && nf != 9 {
			return nil, fmt.Errorf("bad snapshot line %q", line)
		}
		note := ""
		if nf == 9 {
			if note, err = strconv.Unquote(f[8]); err != nil {
				return nil, err
			}
		}
		node, err := strconv.Unquote(f[0])
		if err != nil {
			return nil, err
		}
		size, err1 := strconv.ParseInt(f[4], 10, 64)
		rows, err2 := strconv.ParseInt(f[5], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad snapshot line %q", line)
		}
		snap.Nodes[node] = SnapshotNode{
			Key:    Digest(f[1]),
			Output: Object{Digest: Digest(f[2]), FileSum: Digest(f[3]), Size: size, Rows: rows, Writer: Digest(f[6]), Action: Digest(f[1])},
			Failed: f[7] == "1",
			Note:   note,
		}
	}
	return snap, nil
}

// splitTabs splits line at tabs into f and returns the number of fields,
// len(f)+1 when there are more than f holds.
func splitTabs(line string, f []string) int {
	for n := 0; ; n++ {
		if n == len(f) {
			return n + 1
		}
		field, after, found := strings.Cut(line, "\t")
		f[n] = field
		if !found {
			return n + 1
		}
		line = after
	}
}

// LoadSnapshot returns the pipeline's snapshot, and whether its outputs can
// be trusted (no deletion since it was written).
func (s *Store) LoadSnapshot(pipeline string) (*Snapshot, bool) {
	path := s.snapshotPath(pipeline)
	text, st, err := readText(path)
	var snap *Snapshot
	if err == nil {
		snap, err = decodeSnapshot(text)
	}
	if err != nil || snap.Pipeline != pipeline {
		return &Snapshot{Pipeline: pipeline, Nodes: map[string]SnapshotNode{}}, false
	}
	snap.Written = st.ModTime()
	return snap, snap.Generation == s.Generation()
}

// SnapshotSize is the size in bytes of the pipeline's snapshot file (0
// when there is none): about a hundred bytes a node. A run that will
// ask about most objects of a large snapshot reads cas/ while it loads it.
func (s *Store) SnapshotSize(pipeline string) int64 {
	st, err := os.Stat(s.snapshotPath(pipeline))
	if err != nil {
		return 0
	}
	return st.Size()
}

// readText reads a file into a string without a second copy (a 100,000
// node snapshot is 10 MB), and returns its FileInfo.
func readText(path string) (string, fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	var b strings.Builder
	b.Grow(int(st.Size()) + 512) // room for growth since the stat: one read past it sees EOF
	if _, err := io.Copy(&b, f); err != nil {
		return "", nil, err
	}
	return b.String(), st, nil
}

// ActionIntact reports whether the action entry of key is in place and,
// if it was modified after since, reads as key's entry
// (GetAction). A run that trusts a snapshot written at since asks it of
// every node the snapshot answers: an entry removed or overwritten since
// is then recomputed like a missing or damaged one, at the cost of one
// stat per node, not one read and decode (a no-op run of ten thousand
// nodes stays cheap). Damage that keeps the modification time (a disk's
// bit rot) is found by fsck, and by the commands that read the entry.
func (s *Store) ActionIntact(key Digest, since time.Time) bool {
	st, err := os.Stat(s.path("ac", key, ".json"))
	if err != nil {
		return false
	}
	// Not after, rather than before: file times tick coarsely (a few ms),
	// and the entries a run writes just before its snapshot share the
	// snapshot's time.
	if !since.IsZero() && !st.ModTime().After(since) {
		return true
	}
	_, err = s.GetAction(key)
	return err == nil
}

// SaveSnapshot merges updates into the pipeline's snapshot, written at
// generation gen (the generation the run started at), under a lock so that
// concurrent runs do not lose each other's updates.
func (s *Store) SaveSnapshot(pipeline string, gen uint64, updates map[string]SnapshotNode) error {
	if len(updates) == 0 {
		return nil
	}
	unlock, err := flock(s.snapshotPath(pipeline)+".lock", syscall.LOCK_EX, context.Background())
	if err != nil {
		return err
	}
	defer unlock()
	snap, valid := s.LoadSnapshot(pipeline)
	if !valid {
		// Entries written before a deletion may point at nothing: keep
		// only the keys (for plan explanations), not the outputs.
		for k, n := range snap.Nodes {
			snap.Nodes[k] = SnapshotNode{Key: n.Key, Failed: n.Failed}
		}
	}
	changed := snap.Generation != gen
	for node, n := range updates {
		if snap.Nodes[node] != n {
			snap.Nodes[node], changed = n, true
		}
	}
	if !changed {
		return nil
	}
	snap.Generation = gen
	return s.writeFileAtomic(s.snapshotPath(pipeline), encodeSnapshot(snap))
}

// Generation counts deletions from the store.
func (s *Store) Generation() uint64 {
	b, err := os.ReadFile(filepath.Join(s.root, "generation"))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n
}

func (s *Store) bumpGeneration() error {
	unlock, err := flock(filepath.Join(s.root, "locks", "generation"), syscall.LOCK_EX, context.Background())
	if err != nil {
		return err
	}
	defer unlock()
	return s.writeFileAtomic(filepath.Join(s.root, "generation"), []byte(strconv.FormatUint(s.Generation()+1, 10)+"\n"))
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
