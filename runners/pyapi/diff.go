package pyapi

import (
	"slices"
	"strings"
)

// Change is one API of the new version, compared with the old one.
type Change struct {
	API
	// Novel: nothing of the old version is this API, by identity, through
	// one of its paths, or moved.
	Novel bool
	// SameAs is the old identity this API was reconciled with when its own
	// identity is new (a move, a rename that left an alias); How says which
	// rule matched.
	SameAs string
	How    string
	// OldPath is the old API's canonical path when it differs from Path:
	// canonical-path drift.
	OldPath string
	// OldSignature is the old API's signature when its parameters or
	// return annotation changed (a rename alone is not a change).
	OldSignature string
	// OldImportError is set on a novel API whose defining module failed to
	// import in the old version: the old surface of that module was read
	// from its syntax tree only, so an API reachable there through a
	// re-export may have been missed.
	OldImportError string
}

// Diff compares two surfaces of a package on object identity. An API of
// the new version is not novel when its identity was in the old one; when
// one of its paths (exported or unlisted) was a path of an old API (a re-export, or a move or
// rename that kept the old name as an alias); or when an old API that is
// gone had the same kind, class, name and signature (a move without an
// alias). Methods follow their class: a method of a moved class is
// reachable at its old path through the class's alias.
func Diff(old, new *PackageSurface) []Change {
	oldIDs := map[string]API{}
	oldPaths := map[string]string{} // path → old identity
	for _, a := range old.APIs {
		oldIDs[a.ID] = a
		for _, p := range a.Paths {
			oldPaths[p] = a.ID
		}
		for _, p := range a.UnlistedPaths {
			if _, ok := oldPaths[p]; !ok {
				oldPaths[p] = a.ID
			}
		}
	}
	newIDs := map[string]bool{}
	for _, a := range new.APIs {
		newIDs[a.ID] = true
	}
	gone := map[string][]string{}
	for _, a := range old.APIs {
		if !newIDs[a.ID] {
			gone[moveKey(a)] = append(gone[moveKey(a)], a.ID)
		}
	}
	failed := map[string]string{}
	for _, m := range old.Modules {
		if m.Error != "" {
			failed[m.Name] = m.Error
		}
	}
	out := make([]Change, len(new.APIs))
	for i, a := range new.APIs {
		c := Change{API: a, Novel: true}
		if _, ok := oldIDs[a.ID]; ok {
			c.Novel, c.How = false, "in the old version"
		} else {
			for _, p := range slices.Concat(a.Paths, a.UnlistedPaths) {
				if id, ok := oldPaths[p]; ok {
					c.Novel, c.SameAs, c.How = false, id, "reachable at the old path "+p+" (re-export or alias)"
					break
				}
			}
			if c.Novel {
				if ids := gone[moveKey(a)]; len(ids) == 1 {
					c.Novel, c.SameAs, c.How = false, ids[0], "moved: same kind, class, name and signature, old identity gone"
				}
			}
		}
		if !c.Novel {
			was := a.ID
			if c.SameAs != "" {
				was = c.SameAs
			}
			o := oldIDs[was]
			if o.Path != a.Path {
				c.OldPath = o.Path
			}
			if params(o.Signature) != params(a.Signature) {
				c.OldSignature = o.Signature
			}
		} else if err, ok := failed[a.Module()]; ok {
			c.OldImportError = err
		}
		out[i] = c
	}
	return out
}

// moveKey is what a move keeps: kind, enclosing class name, name and
// signature (whitespace normalised).
func moveKey(a API) string {
	q := a.QualName()
	class := ""
	if i := strings.LastIndex(q, "."); i >= 0 {
		class = q[:i]
		if j := strings.LastIndex(class, "."); j >= 0 {
			class = class[j+1:]
		}
	}
	return a.Kind + "\x00" + class + "\x00" + a.Name + "\x00" + strings.Join(strings.Fields(a.Signature), " ")
}

// params is a signature without the name: "(a, b) -> int".
func params(sig string) string {
	if i := strings.Index(sig, "("); i >= 0 {
		return strings.Join(strings.Fields(sig[i:]), " ")
	}
	return sig
}
