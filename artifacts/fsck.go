package artifacts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Problem is one finding of Fsck.
type Problem struct {
	Kind   string `json:"kind"` // corrupt-object, corrupt-blob, corrupt-call, dangling-action, bad-action, wrong-writer, missing-blob, unlisted-blob
	Name   Digest `json:"name"`
	Detail string `json:"detail"`
	Fixed  string `json:"fixed,omitempty"` // what was done about it
}

// FsckReport summarises a check.
type FsckReport struct {
	Objects  int       `json:"objects"`
	Actions  int       `json:"actions"`
	Blobs    int       `json:"blobs"`
	Calls    int       `json:"calls"` // call cache entries that verified
	Temp     int       `json:"temp_removed"`
	Problems []Problem `json:"problems"`
}

// Fsck verifies every object (decoding its rows and rehashing them),
// every blob, every call of the call cache, and every action entry: it must parse, its output must
// exist, and the action must be among the output's writers (the file's
// metadata names it or the shard's writers log records it; see
// ErrWrongWriter). With repair, corrupt objects and blobs move to
// quarantine/, damaged action entries (ErrDamagedAction) too, and action
// entries whose output is gone or was not written by them are removed,
// so the next run recomputes them (corrupt calls move to quarantine/ too:
// the call is made again); nothing valid is touched. Every blob an action
// lists (Action.Blobs) or its output's rows refer to (BlobRefs) must be
// there and intact, or the action is removed (missing-blob) and
// recomputed; a blob the rows refer to that the entry does not list is
// added to it (unlisted-blob), since gc keeps only listed blobs. Every repair that
// moves or removes an object or an action entry bumps the generation, so
// no snapshot still naming it is trusted. Repair holds the store lock
// exclusively, waiting for running runs to finish.
func (s *Store) Fsck(ctx context.Context, repair bool) (*FsckReport, error) {
	if repair {
		unlock, err := s.LockExclusive(ctx)
		if err != nil {
			return nil, err
		}
		defer unlock()
		defer s.Sync()
	}
	rep := &FsckReport{}
	if repair {
		rep.Temp = s.CleanTemp()
	}
	acts, err := s.Actions()
	if err != nil {
		return nil, err
	}
	recorded := map[Digest][]Object{} // what actions recorded of each object
	for _, k := range acts {
		if a, err := s.GetAction(k); err == nil {
			recorded[a.Output.Digest] = append(recorded[a.Output.Digest], a.Output)
		}
	}
	objs, err := s.list("cas", ".parquet")
	if err != nil {
		return nil, err
	}
	bad := map[Digest]bool{}
	fileWriter := map[Digest]Digest{} // the action in each object's metadata
	rowBlobs := map[Digest][]Digest{} // the blobs each object's rows refer to
	refErr := map[Digest]error{}      // a blob column holding what is not a digest
	for _, d := range objs {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rep.Objects++
		data, err := os.ReadFile(s.ObjectPath(d))
		var r *Reader
		if err == nil {
			r, err = decode(data, d)
		}
		for _, o := range recorded[d] {
			if err == nil {
				err = checkSum(o, data, r)
			}
		}
		if err == nil {
			fileWriter[d] = Digest(r.meta[MetaActionKey])
			rowBlobs[d], refErr[d] = BlobRefs(r)
		}
		if err != nil {
			p := Problem{Kind: "corrupt-object", Name: d, Detail: err.Error()}
			if repair {
				if qerr := s.Quarantine(d); qerr == nil {
					p.Fixed = "moved to quarantine/"
				}
			}
			bad[d] = true
			rep.Problems = append(rep.Problems, p)
		}
	}
	blobs, err := s.list("blobs", "")
	if err != nil {
		return nil, err
	}
	blobOK := map[Digest]bool{}
	for _, d := range blobs {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rep.Blobs++
		err := s.VerifyBlob(d)
		if err == nil {
			blobOK[d] = true
			continue
		}
		p := Problem{Kind: "corrupt-blob", Name: d, Detail: err.Error()}
		if repair && s.quarantine(s.BlobPath(d), string(d)+".blob") == nil {
			p.Fixed = "moved to quarantine/"
			s.bumpGeneration()
		}
		rep.Problems = append(rep.Problems, p)
	}
	if err := s.Calls().verify(ctx, repair, rep); err != nil {
		return nil, fmt.Errorf("verify the call cache: %w", err)
	}
	logged, err := s.writerPairs()
	if err != nil {
		return nil, err
	}
	for _, k := range acts {
		rep.Actions++
		a, err := s.GetAction(k)
		if err != nil {
			detail := err.Error()
			var de *DamagedActionError
			if errors.As(err, &de) {
				detail = de.Why
			}
			p := Problem{Kind: "bad-action", Name: k, Detail: detail}
			if repair && s.QuarantineAction(k) == nil {
				p.Fixed = "moved to quarantine/; the next run recomputes it"
			}
			rep.Problems = append(rep.Problems, p)
			continue
		}
		if _, err := os.Stat(s.ObjectPath(a.Output.Digest)); errors.Is(err, fs.ErrNotExist) || bad[a.Output.Digest] {
			p := Problem{Kind: "dangling-action", Name: k, Detail: fmt.Sprintf("%s: output %s is missing or corrupt", a.Node, a.Output.Digest)}
			if repair && os.Remove(s.path("ac", k, ".json")) == nil {
				p.Fixed = "removed; the next run recomputes it"
				s.bumpGeneration()
			}
			rep.Problems = append(rep.Problems, p)
			continue
		}
		if w := fileWriter[a.Output.Digest]; w != k && !logged[[2]Digest{a.Output.Digest, k}] {
			p := Problem{Kind: "wrong-writer", Name: k, Detail: fmt.Sprintf("%s: output %s was written by action %s, not by this one", a.Node, a.Output.Digest, w)}
			if repair && os.Remove(s.path("ac", k, ".json")) == nil {
				p.Fixed = "removed; the next run recomputes it"
				s.bumpGeneration()
			}
			rep.Problems = append(rep.Problems, p)
			continue
		}
		s.fsckActionBlobs(a, blobOK, rowBlobs[a.Output.Digest], refErr[a.Output.Digest], repair, rep)
	}
	return rep, nil
}

// fsckActionBlobs checks the blobs of action a: every blob its entry
// lists or its output's rows refer to (refs; refErr when a blob column
// holds what is not a digest) must be in the store and intact (ok). One
// that is not makes the action a miss (missing-blob: with repair its
// entry is removed, so the next run recomputes it). A blob the rows refer
// to that the entry does not list would not be kept by gc
// (unlisted-blob: with repair it is added to the entry's blobs).
func (s *Store) fsckActionBlobs(a *Action, ok map[Digest]bool, refs []Digest, refErr error, repair bool, rep *FsckReport) {
	listed := map[Digest]bool{}
	var why []string
	for _, d := range a.Blobs {
		listed[d] = true
		if !ok[d] {
			why = append(why, fmt.Sprintf("blob %s is missing or corrupt", d))
		}
	}
	var unlisted []Digest
	for _, d := range refs {
		if listed[d] {
			continue
		}
		if !ok[d] {
			why = append(why, fmt.Sprintf("its rows refer to blob %s, which is missing or corrupt", d))
		} else {
			unlisted = append(unlisted, d)
		}
	}
	if refErr != nil {
		why = append(why, fmt.Sprintf("output %s: %v", a.Output.Digest, refErr))
	}
	if len(why) > 0 {
		p := Problem{Kind: "missing-blob", Name: a.Key, Detail: a.Node + ": " + strings.Join(why, "; ")}
		if repair && os.Remove(s.path("ac", a.Key, ".json")) == nil {
			p.Fixed = "removed; the next run recomputes it"
			s.bumpGeneration()
		}
		rep.Problems = append(rep.Problems, p)
		return
	}
	if len(unlisted) == 0 {
		return
	}
	p := Problem{Kind: "unlisted-blob", Name: a.Key, Detail: fmt.Sprintf("%s: its rows refer to blobs %s that its entry does not list (gc would delete them)", a.Node, joinDigests(unlisted))}
	if repair {
		fixed := *a
		fixed.Blobs = slices.Sorted(maps.Keys(listed))
		fixed.Blobs = append(fixed.Blobs, unlisted...)
		slices.Sort(fixed.Blobs)
		if s.PutAction(&fixed) == nil {
			p.Fixed = "added to the entry's blobs"
		}
	}
	rep.Problems = append(rep.Problems, p)
}

func joinDigests(ds []Digest) string {
	ss := make([]string, len(ds))
	for i, d := range ds {
		ss[i] = string(d)
	}
	return strings.Join(ss, ", ")
}

// GCReport summarises a collection.
type GCReport struct {
	ActionsKept, ActionsRemoved int
	ObjectsKept, ObjectsRemoved int
	BlobsKept, BlobsRemoved     int
	BytesFreed                  int64
	// Removed are the actions removed (or, with dryRun, that would be),
	// by key, with the node and output their entries name (empty for an
	// entry that does not read).
	Removed []RemovedAction `json:",omitempty"`
}

// RemovedAction is one action a collection removed.
type RemovedAction struct {
	Key    Digest
	Node   string `json:",omitempty"`
	Output Digest `json:",omitempty"`
	Rows   int64
}

// GCOption configures GC.
type GCOption func(*gcConfig)

type gcConfig struct {
	roots []func() ([]Digest, error)
}

// GCRoots makes GC keep the objects roots names besides those of the kept
// actions: artifacts that no action wrote, such as the label sets of
// package annotations. GC calls roots while it holds the store lock
// exclusively, so a writer that holds the lock shared from committing
// its object until it names it in its roots cannot lose the object. An
// error from roots fails the collection before anything is deleted.
func GCRoots(roots func() ([]Digest, error)) GCOption {
	return func(c *gcConfig) { c.roots = append(c.roots, roots) }
}

// GC deletes every action not in keep, then every object that no kept
// action names as its output (nor a GCRoots function) and every blob that no kept action lists in
// its Blobs (the list is authoritative: rows are not read), plus failure
// records and lock files. It holds the
// store lock exclusively, so no run is using what it deletes. With dryRun it
// only counts. The call cache (calls/) is kept: no action references a
// call, and a call costs a model's time to make again; Calls.Clear
// deletes it.
func (s *Store) GC(ctx context.Context, keep map[Digest]bool, dryRun bool, opts ...GCOption) (*GCReport, error) {
	var cfg gcConfig
	for _, o := range opts {
		o(&cfg)
	}
	unlock, err := s.LockExclusive(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rep := &GCReport{}
	objects, blobs := map[Digest]bool{}, map[Digest]bool{}
	for _, roots := range cfg.roots {
		ds, err := roots()
		if err != nil {
			return nil, fmt.Errorf("gc roots: %w", err)
		}
		for _, d := range ds {
			objects[d] = true
		}
	}
	acts, err := s.Actions()
	if err != nil {
		return nil, err
	}
	remove := func(p string) {
		if st, err := os.Stat(p); err == nil {
			rep.BytesFreed += st.Size()
		}
		if !dryRun {
			os.Remove(p)
		}
	}
	for _, k := range acts {
		a, err := s.GetAction(k)
		if err == nil && keep[k] {
			rep.ActionsKept++
			objects[a.Output.Digest] = true
			for _, b := range a.Blobs {
				blobs[b] = true
			}
			continue
		}
		rep.ActionsRemoved++
		ra := RemovedAction{Key: k}
		if a != nil {
			ra.Node, ra.Output, ra.Rows = a.Node, a.Output.Digest, a.Output.Rows
		}
		rep.Removed = append(rep.Removed, ra)
		remove(s.path("ac", k, ".json"))
	}
	objs, err := s.list("cas", ".parquet")
	if err != nil {
		return nil, err
	}
	for _, d := range objs {
		if objects[d] {
			rep.ObjectsKept++
			continue
		}
		rep.ObjectsRemoved++
		remove(s.ObjectPath(d))
	}
	if err := s.pruneWriters(objects, keep, dryRun); err != nil {
		return nil, err
	}
	bl, err := s.list("blobs", "")
	if err != nil {
		return nil, err
	}
	for _, d := range bl {
		if blobs[d] {
			rep.BlobsKept++
			continue
		}
		rep.BlobsRemoved++
		remove(s.BlobPath(d))
	}
	if !dryRun {
		for _, dir := range []string{"fail", "locks"} {
			entries, _ := filepath.Glob(filepath.Join(s.root, dir, "??", "*"))
			for _, e := range entries {
				os.Remove(e)
			}
		}
		s.CleanTemp()
		if rep.ActionsRemoved+rep.ObjectsRemoved+rep.BlobsRemoved > 0 {
			s.bumpGeneration()
		}
		s.Sync()
	}
	return rep, nil
}

// pruneWriters rewrites every shard's writers log to the lines naming a
// kept action and a kept object (gc holds the store exclusively, so no
// Commit appends meanwhile).
func (s *Store) pruneWriters(objects, actions map[Digest]bool, dryRun bool) error {
	logs, err := filepath.Glob(filepath.Join(s.root, "cas", "??", "writers"))
	if err != nil || dryRun {
		return err
	}
	for _, p := range logs {
		var kept []byte
		err := readWriterLog(p, func(d, key Digest) {
			if objects[d] && actions[key] {
				kept = append(kept, writerLine(d, key)...)
			}
		})
		if err == nil {
			if len(kept) == 0 {
				err = os.Remove(p)
			} else {
				err = s.writeFileAtomic(p, kept)
			}
		}
		if err != nil {
			return fmt.Errorf("gc writers log %s: %w", p, err)
		}
	}
	return nil
}
