package artifacts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Problem is one finding of Fsck.
type Problem struct {
	Kind   string `json:"kind"` // corrupt-object, corrupt-blob, corrupt-call, dangling-action, bad-action, wrong-writer
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
// the call is made again); nothing valid is touched. Every repair that
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
	for _, d := range blobs {
		rep.Blobs++
		if err := s.VerifyBlob(d); err != nil {
			p := Problem{Kind: "corrupt-blob", Name: d, Detail: err.Error()}
			if repair && s.quarantine(s.BlobPath(d), string(d)+".blob") == nil {
				p.Fixed = "moved to quarantine/"
			}
			rep.Problems = append(rep.Problems, p)
		}
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
		}
	}
	return rep, nil
}

// GCReport summarises a collection.
type GCReport struct {
	ActionsKept, ActionsRemoved int
	ObjectsKept, ObjectsRemoved int
	BlobsKept, BlobsRemoved     int
	BytesFreed                  int64
}

// GC deletes every action not in keep, then every object and blob that no
// kept action references, plus failure records and lock files. It holds the
// store lock exclusively, so no run is using what it deletes. With dryRun it
// only counts. The call cache (calls/) is kept: no action references a
// call, and a call costs a model's time to make again; Calls.Clear
// deletes it.
func (s *Store) GC(ctx context.Context, keep map[Digest]bool, dryRun bool) (*GCReport, error) {
	unlock, err := s.LockExclusive(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rep := &GCReport{}
	objects, blobs := map[Digest]bool{}, map[Digest]bool{}
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
