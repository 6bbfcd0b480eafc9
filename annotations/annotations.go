// Package annotations holds the labels people give to a pipeline's rows:
// the failure class of a NovelAPIBench sample (to validate the judge, as
// NovelAPIBench does) or the verdict on a ToolSense RRB item (valid,
// invalid, ...; as ToolSense validates its generator's judge).
//
// A pipeline's labels are a store artifact like any node's output: every
// save (Add) writes the whole current label set as a new content-addressed
// Parquet object in cas/, then appends its digest to the pipeline's ref
// file annotations/P.tsv (P: the pipeline hash names/ uses), whose last
// line is the current set and whose earlier lines are the sets before it.
// Nothing is ever rewritten in place: a save that fails leaves the
// previous set current. artifacts/STORE.md documents the layout; gc keeps
// every set a ref names (Roots).
//
// Labels cost a person's time, so the package is built never to lose one:
// Add holds an exclusive flock on annotations/P.tsv.lock while it reads
// the current set, merges the new labels into it, commits the object and
// renames the new ref into place, so concurrent saves (goroutines of one
// process, or many processes sharing a store) are serialised and each one
// sees the labels of those before it. Readers (Load) take no lock: the
// ref is replaced by rename, so they see the set before or after a save,
// never a mixture.
package annotations

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lacuna-dev/lacuna/artifacts"
)

// Label kinds.
const (
	// KindFailureClass labels a judge row (JudgeItem) with the failure
	// class a person assigns: OK or one of the judge's six classes.
	KindFailureClass = "failure_class"
	// KindRRBItem labels an RRB row (RRBItem) with a person's verdict on
	// the item: valid, invalid, or a reason it is invalid.
	KindRRBItem = "rrb_item"
)

// Label is one person's label of one row.
//
// A label set holds at most one label per (Kind, Node, Item, Annotator):
// a later label of the same row by the same annotator replaces the
// earlier one in the current set (the earlier set keeps it).
type Label struct {
	Kind string // KindFailureClass or KindRRBItem
	// Node is the address of the node whose row is labelled
	// (node.judge.qwen, node.import.rrb).
	Node string
	// Item is the row's stable key within Node: JudgeItem or RRBItem.
	Item      string
	Label     string // the class or verdict given
	Annotator string // who gave it
	Note      string // free text, may be empty
	// Time is when the label was given; Add sets a zero Time to the time
	// of the save. Stored to the nanosecond, in UTC.
	Time time.Time
}

// row is a Label as stored: one row of an annotations artifact.
type row struct {
	Kind      string    `parquet:"kind"`
	Node      string    `parquet:"node"`
	Item      string    `parquet:"item"`
	Label     string    `parquet:"label"`
	Annotator string    `parquet:"annotator"`
	Note      string    `parquet:"note"`
	Time      time.Time `parquet:"time,timestamp(nanosecond)"`
}

// ArtifactType is the lacuna.type metadata of an annotations artifact.
const ArtifactType = "annotations"

// schemaVersion is the lacuna.schema_version of the artifact's rows.
const schemaVersion = "1"

// refHeader opens every ref file.
const refHeader = "lacuna-annotations-v1"

// JudgeItem is the item key of a judge row (nodes/judge.JudgeRow): its
// task, sample, model and cell, which together name one sample of one
// judge node. The form (each field quoted as strconv.Quote does, joined
// by spaces) is stable: labels are joined with judge rows by it.
func JudgeItem(taskID, sampleID, model, cell string) string {
	return quoteJoin(taskID, sampleID, model, cell)
}

// RRBItem is the item key of an RRB row (a released or generated
// Realistic Retrieval Benchmark row, or a retrieve row of one): its
// sample_id, quoted as strconv.Quote does.
func RRBItem(sampleID string) string { return quoteJoin(sampleID) }

func quoteJoin(fields ...string) string {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Quote(f))
	}
	return b.String()
}

// Save is one saved label set, a line of the ref.
type Save struct {
	Digest artifacts.Digest // the artifact holding the whole set
	Rows   int64            // its label count
	Time   time.Time        // when it was saved (UTC)
}

// ErrDamagedRef is in the chain of the error of a ref file that does not
// read as one (a bad header, a line that is not DIGEST TAB ROWS TAB
// TIME, another pipeline's ref).
var ErrDamagedRef = errors.New("damaged annotations ref")

// RefPath is the ref file of pipeline's labels in store s:
// annotations/P.tsv, P the 16-hex-digit xxhash64 of the pipeline name
// (as names/ uses).
func RefPath(s *artifacts.Store, pipeline string) string {
	return filepath.Join(s.Root(), "annotations", string(artifacts.SumBytes([]byte(pipeline)))+".tsv")
}

// History returns pipeline's saves, oldest first (the last is the
// current set); none when nothing was ever saved. It reads the ref only.
func History(s *artifacts.Store, pipeline string) ([]Save, error) {
	path := RefPath(s, pipeline)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read annotations of %s: %w", pipeline, err)
	}
	name, saves, err := decodeRef(data)
	if err == nil && name != pipeline {
		err = fmt.Errorf("%w: it belongs to pipeline %q", ErrDamagedRef, name)
	}
	if err != nil {
		return nil, fmt.Errorf("annotations ref %s: %w (move it aside to start a new label set; the sets it names stay in cas/)", relPath(s, path), err)
	}
	return saves, nil
}

// Load returns pipeline's current labels, in key order (Kind, Node,
// Item, Annotator); none when nothing was ever saved. The set's artifact
// is verified as every read of the store is: one whose rows do not hash
// to its name is an error (and is moved to quarantine/), never an empty
// set.
func Load(s *artifacts.Store, pipeline string) ([]Label, error) {
	saves, err := History(s, pipeline)
	if err != nil || len(saves) == 0 {
		return nil, err
	}
	return loadSave(s, pipeline, saves[len(saves)-1])
}

// LoadSave returns the labels of one save of History (an earlier set).
func LoadSave(s *artifacts.Store, pipeline string, sv Save) ([]Label, error) {
	return loadSave(s, pipeline, sv)
}

func loadSave(s *artifacts.Store, pipeline string, sv Save) ([]Label, error) {
	r, err := s.Open(artifacts.Object{Digest: sv.Digest})
	if err != nil {
		return nil, fmt.Errorf("annotations of %s: label set %s: %w", pipeline, sv.Digest, err)
	}
	rows, err := artifacts.ReadAll[row](r)
	if err != nil {
		return nil, fmt.Errorf("annotations of %s: label set %s: %w", pipeline, sv.Digest, err)
	}
	if int64(len(rows)) != sv.Rows {
		return nil, fmt.Errorf("annotations of %s: label set %s has %d labels, its ref line says %d: %w", pipeline, sv.Digest, len(rows), sv.Rows, ErrDamagedRef)
	}
	out := make([]Label, len(rows))
	for i, r := range rows {
		out[i] = Label{Kind: r.Kind, Node: r.Node, Item: r.Item, Label: r.Label, Annotator: r.Annotator, Note: r.Note, Time: r.Time.UTC()}
	}
	return out, nil
}

// Add merges ls into pipeline's current label set and saves the result:
// a new artifact in cas/, then a new last line of the ref. It returns
// the digest of the saved set (the current one unchanged when ls adds
// nothing new). A label replaces the current one of its (Kind, Node,
// Item, Annotator); of several in ls with one key, the last counts.
//
// Every label needs a known Kind and a non-empty Node, Item, Label and
// Annotator; one that lacks them fails the whole call, saving nothing.
//
// Add is safe to call from many goroutines and processes at once: it
// holds the ref's flock from reading the current set to renaming the new
// ref into place, so no save loses another's labels, and the store's
// shared lock, so gc (which keeps every set a ref names) cannot collect
// the new object between its commit and the ref naming it. The object
// and the ref are fsynced before Add returns.
func Add(s *artifacts.Store, pipeline string, ls ...Label) (artifacts.Digest, error) {
	now := time.Now().UTC()
	for i := range ls {
		if err := check(ls[i]); err != nil {
			return "", fmt.Errorf("label %d: %w", i+1, err)
		}
		if ls[i].Time.IsZero() {
			ls[i].Time = now
		}
	}
	unlockStore, err := s.LockShared(context.Background())
	if err != nil {
		return "", err
	}
	defer unlockStore()
	path := RefPath(s, pipeline)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	unlock, err := lockExclusive(path + ".lock")
	if err != nil {
		return "", fmt.Errorf("lock annotations of %s: %w", pipeline, err)
	}
	defer unlock()

	saves, err := History(s, pipeline)
	if err != nil {
		return "", err
	}
	var cur []Label
	if len(saves) > 0 {
		if cur, err = loadSave(s, pipeline, saves[len(saves)-1]); err != nil {
			return "", fmt.Errorf("%w; nothing was saved (removing the ref's last line makes the set before it current)", err)
		}
	}
	merged := merge(cur, ls)
	w, err := s.NewWriter(artifacts.SchemaOf[row](), map[string]string{
		artifacts.MetaType:          ArtifactType,
		artifacts.MetaNode:          "annotations",
		artifacts.MetaSchemaVersion: schemaVersion,
	})
	if err != nil {
		return "", err
	}
	for _, l := range merged {
		if err := w.Write(row{Kind: l.Kind, Node: l.Node, Item: l.Item, Label: l.Label, Annotator: l.Annotator, Note: l.Note, Time: l.Time.UTC()}); err != nil {
			w.Abort()
			return "", fmt.Errorf("write annotations of %s: %w", pipeline, err)
		}
	}
	obj, err := w.Commit()
	if err != nil {
		return "", fmt.Errorf("write annotations of %s: %w", pipeline, err)
	}
	if len(saves) > 0 && saves[len(saves)-1].Digest == obj.Digest {
		return obj.Digest, nil
	}
	// Data first: the object is durable before a ref names it.
	if err := s.Sync(); err != nil {
		return "", err
	}
	saves = append(saves, Save{Digest: obj.Digest, Rows: obj.Rows, Time: now})
	if err := writeAtomic(s, path, encodeRef(pipeline, saves)); err != nil {
		return "", fmt.Errorf("save annotations of %s: %w", pipeline, err)
	}
	return obj.Digest, nil
}

// Roots returns every label set any ref of the store names, current and
// earlier, for gc to keep. A damaged ref is an error: gc must not delete
// what it cannot read.
func Roots(s *artifacts.Store) ([]artifacts.Digest, error) {
	refs, err := filepath.Glob(filepath.Join(s.Root(), "annotations", "*.tsv"))
	if err != nil {
		return nil, err
	}
	var out []artifacts.Digest
	for _, p := range refs {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		_, saves, err := decodeRef(data)
		if err != nil {
			return nil, fmt.Errorf("annotations ref %s: %w", relPath(s, p), err)
		}
		for _, sv := range saves {
			out = append(out, sv.Digest)
		}
	}
	return out, nil
}

func check(l Label) error {
	switch l.Kind {
	case KindFailureClass, KindRRBItem:
	default:
		return fmt.Errorf("kind %q is neither %q nor %q", l.Kind, KindFailureClass, KindRRBItem)
	}
	for _, f := range []struct{ name, v string }{{"node", l.Node}, {"item", l.Item}, {"label", l.Label}, {"annotator", l.Annotator}} {
		if strings.TrimSpace(f.v) == "" {
			return fmt.Errorf("%s is empty", f.name)
		}
	}
	return nil
}

// key orders and identifies labels in a set.
func key(l Label) [4]string { return [4]string{l.Kind, l.Node, l.Item, l.Annotator} }

// merge returns cur with add applied (later labels of a key replacing
// earlier ones), sorted by key.
func merge(cur, add []Label) []Label {
	byKey := make(map[[4]string]Label, len(cur)+len(add))
	for _, l := range cur {
		byKey[key(l)] = l
	}
	for _, l := range add {
		byKey[key(l)] = l
	}
	out := make([]Label, 0, len(byKey))
	for _, l := range byKey {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b Label) int {
		ka, kb := key(a), key(b)
		return slices.Compare(ka[:], kb[:])
	})
	return out
}

// The ref is text: the line "lacuna-annotations-v1 TAB quoted pipeline",
// then one line per save, oldest first: digest TAB rows TAB time
// (RFC 3339 with nanoseconds, UTC).
func encodeRef(pipeline string, saves []Save) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\t%s\n", refHeader, strconv.Quote(pipeline))
	for _, sv := range saves {
		fmt.Fprintf(&b, "%s\t%d\t%s\n", sv.Digest, sv.Rows, sv.Time.UTC().Format(time.RFC3339Nano))
	}
	return b.Bytes()
}

func decodeRef(data []byte) (pipeline string, saves []Save, err error) {
	text, ok := strings.CutSuffix(string(data), "\n")
	if !ok {
		return "", nil, fmt.Errorf("%w: it does not end with a newline (cut short?)", ErrDamagedRef)
	}
	lines := strings.Split(text, "\n")
	head := strings.Split(lines[0], "\t")
	if len(head) != 2 || head[0] != refHeader {
		return "", nil, fmt.Errorf("%w: line 1 is not %q TAB a quoted pipeline name", ErrDamagedRef, refHeader)
	}
	if pipeline, err = strconv.Unquote(head[1]); err != nil {
		return "", nil, fmt.Errorf("%w: line 1: bad pipeline name %s", ErrDamagedRef, head[1])
	}
	for i, line := range lines[1:] {
		f := strings.Split(line, "\t")
		bad := func(why string) error {
			return fmt.Errorf("%w: line %d (%q): %s", ErrDamagedRef, i+2, line, why)
		}
		if len(f) != 3 {
			return "", nil, bad("want DIGEST TAB ROWS TAB TIME")
		}
		d := artifacts.Digest(f[0])
		if !d.Valid() {
			return "", nil, bad("not a digest")
		}
		rows, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || rows < 0 {
			return "", nil, bad("bad row count")
		}
		t, err := time.Parse(time.RFC3339Nano, f[2])
		if err != nil {
			return "", nil, bad("bad time")
		}
		saves = append(saves, Save{Digest: d, Rows: rows, Time: t.UTC()})
	}
	if len(saves) == 0 {
		return "", nil, fmt.Errorf("%w: it names no label set", ErrDamagedRef)
	}
	return pipeline, saves, nil
}

func relPath(s *artifacts.Store, p string) string {
	if r, err := filepath.Rel(s.Root(), p); err == nil {
		return r
	}
	return p
}

// lockExclusive takes an exclusive flock on path, waiting for it. Each
// call opens its own file description, so the lock excludes goroutines of
// one process as well as other processes; the kernel drops it when the
// holder dies.
func lockExclusive(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

var tmpSeq atomic.Uint64

// writeAtomic writes data to path through a temporary file under the
// store's tmp/ (named PID-... so that the store's CleanTemp removes it if
// this process dies mid-write), fsynced, then renamed over path; the
// directory is fsynced so the new name survives a power loss.
func writeAtomic(s *artifacts.Store, path string, data []byte) error {
	name := fmt.Sprintf("%d-annotations%d-%s", os.Getpid(), tmpSeq.Add(1), strconv.FormatUint(rand.Uint64(), 36))
	tmp := filepath.Join(s.Root(), "tmp", name)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Kappa is Cohen's κ of two raters' labels of the same items, a[i] and
// b[i] labelling item i: (pₒ − pₑ) / (1 − pₑ), pₒ the share of items
// they agree on and pₑ the agreement expected by chance from each
// rater's label frequencies (as sklearn's cohen_kappa_score, unweighted).
// Only pairs where both labels are non-empty count (an empty label is a
// missing one), up to the shorter slice's length; n is their number.
// κ is NaN when it is undefined: no pairs, or pₑ = 1 (both raters used
// one and the same label for every item).
func Kappa(a, b []string) (kappa float64, n int) {
	ca, cb := map[string]int{}, map[string]int{}
	agree := 0
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] == "" || b[i] == "" {
			continue
		}
		n++
		ca[a[i]]++
		cb[b[i]]++
		if a[i] == b[i] {
			agree++
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	nn := float64(n)
	po := float64(agree) / nn
	pe := 0.0
	for c, x := range ca {
		pe += float64(x) / nn * float64(cb[c]) / nn
	}
	if pe == 1 {
		return math.NaN(), n
	}
	return (po - pe) / (1 - pe), n
}
