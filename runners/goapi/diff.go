package goapi

import "strings"

// Change is one API of the new version, compared with the old one.
type Change struct {
	API
	// Novel: nothing of the old version is this API, by identity, through
	// an alias, or moved.
	Novel bool
	// SameAs is the old identity this API was reconciled with when its own
	// identity is new (a move or an alias); How says which rule matched.
	SameAs string
	How    string
	// Family groups near-duplicates: the same receiver and base name (a
	// name without its Err / Ctx / WithContext suffix) in any package of
	// the module, such as lo.Map, lo/it.Map and lo/mutable.Map.
	Family string
	// FamilyNovel counts the novel APIs of the family; FamilyKnown says
	// whether one of its members was already in the old version.
	FamilyNovel int
	FamilyKnown bool
}

// Diff compares two API surfaces of a module on identity. An API of the
// new version is not novel when its identity was in the old one; when it
// is an alias of something old; when an old identity became an alias of
// it (a move that left an alias behind); or when an old API that is gone
// had the same kind, receiver, name and signature in another package (a
// move without an alias).
func Diff(old, new []API) []Change {
	oldIDs := map[string]API{}
	for _, a := range old {
		oldIDs[a.ID] = a
	}
	newIDs := map[string]bool{}
	aliasNew := map[string]string{} // alias identity → what it names
	aliasedBy := map[string][]string{}
	for _, a := range new {
		newIDs[a.ID] = true
		if a.AliasOf != "" {
			aliasNew[a.ID] = a.AliasOf
			aliasedBy[a.AliasOf] = append(aliasedBy[a.AliasOf], a.ID)
		}
	}
	aliasOld := map[string]string{}
	for _, a := range old {
		if a.AliasOf != "" {
			aliasOld[a.ID] = a.AliasOf
		}
	}
	// Old APIs that are gone, by what a move would keep.
	gone := map[string][]string{}
	for _, a := range old {
		if !newIDs[a.ID] {
			gone[moveKey(a)] = append(gone[moveKey(a)], a.ID)
		}
	}
	out := make([]Change, len(new))
	for i, a := range new {
		c := Change{API: a, Novel: true}
		switch {
		case oldIDs[a.ID].ID != "":
			c.Novel, c.How = false, "in the old version"
		default:
			if target, ok := resolve(a.ID, aliasNew); ok && target != a.ID && known(target, oldIDs, aliasOld) {
				c.Novel, c.SameAs, c.How = false, target, "alias of an API of the old version"
				break
			}
			for _, from := range movedFrom(a, aliasedBy) {
				if oldIDs[from].ID != "" && aliasOld[from] == "" {
					c.Novel, c.SameAs, c.How = false, from, "moved: the old identity is now an alias of it"
					break
				}
			}
			if c.Novel {
				if ids := gone[moveKey(a)]; len(ids) == 1 {
					c.Novel, c.SameAs, c.How = false, ids[0], "moved: same kind, name and signature, old identity gone"
				}
			}
		}
		out[i] = c
	}
	families(out)
	return out
}

// DiffModules is Diff across a major-version change, where v_new is
// another module (example.com/m/v2): identities are compared with the new
// module path read as the old one, and reported with their real paths.
func DiffModules(old, new []API, oldMod, newMod string) []Change {
	if oldMod == newMod {
		return Diff(old, new)
	}
	rename := func(id string) string {
		if id == newMod || strings.HasPrefix(id, newMod+"/") || strings.HasPrefix(id, newMod+".") {
			return oldMod + id[len(newMod):]
		}
		return id
	}
	mapped := make([]API, len(new))
	for i, a := range new {
		a.ID, a.Package, a.AliasOf = rename(a.ID), rename(a.Package), rename(a.AliasOf)
		mapped[i] = a
	}
	out := Diff(old, mapped)
	for i := range out {
		out[i].API = new[i]
	}
	return out
}

// resolve follows alias chains (types, and methods through their
// receiver's alias).
func resolve(id string, alias map[string]string) (string, bool) {
	seen := 0
	for seen < 8 {
		if t, ok := alias[id]; ok {
			id = t
			seen++
			continue
		}
		// A method of an alias: pkg.T.M with pkg.T an alias.
		if i := strings.LastIndex(id, "."); i > 0 {
			if t, ok := alias[id[:i]]; ok {
				id = t + id[i:]
				seen++
				continue
			}
		}
		break
	}
	return id, seen > 0
}

func known(id string, oldIDs map[string]API, aliasOld map[string]string) bool {
	if oldIDs[id].ID != "" {
		return true
	}
	for oid := range aliasOld {
		if t, _ := resolve(oid, aliasOld); t == id {
			return true
		}
	}
	return false
}

// movedFrom lists the identities that now alias a (for a method, that
// alias its receiver).
func movedFrom(a API, aliasedBy map[string][]string) []string {
	if a.Receiver == "" {
		return aliasedBy[a.ID]
	}
	var out []string
	for _, t := range aliasedBy[a.Package+"."+a.Receiver] {
		out = append(out, t+"."+a.Name)
	}
	return out
}

func moveKey(a API) string {
	return a.Kind + "\x00" + a.Receiver + "\x00" + a.Name + "\x00" + strings.Join(strings.Fields(a.Signature), " ")
}

// variantSuffixes are the name endings that make a variant of a function.
var variantSuffixes = []string{"WithContext", "Ctx", "Err"}

// FamilyOf is the family key of an API: receiver and base name.
func FamilyOf(a API) string {
	base := a.Name
	for _, s := range variantSuffixes {
		if len(base) > len(s) && strings.HasSuffix(base, s) {
			base = strings.TrimSuffix(base, s)
			break
		}
	}
	if a.Receiver != "" {
		return a.Receiver + "." + base
	}
	return base
}

func families(cs []Change) {
	novel := map[string]int{}
	knownFam := map[string]bool{}
	for i := range cs {
		cs[i].Family = FamilyOf(cs[i].API)
		if cs[i].Novel {
			novel[cs[i].Family]++
		} else {
			knownFam[cs[i].Family] = true
		}
	}
	for i := range cs {
		cs[i].FamilyNovel = novel[cs[i].Family]
		cs[i].FamilyKnown = knownFam[cs[i].Family]
	}
}

// FamilyRepresentatives picks one member per family among the indices
// eligible: the one in the package with the shortest import path, then the
// shortest name, then the smallest identity. It returns the chosen
// indices.
func FamilyRepresentatives(cs []Change, eligible func(int) bool) map[int]bool {
	best := map[string]int{}
	for i := range cs {
		if !eligible(i) {
			continue
		}
		f := cs[i].Family
		j, ok := best[f]
		if !ok || better(cs[i].API, cs[j].API) {
			best[f] = i
		}
	}
	out := make(map[int]bool, len(best))
	for _, i := range best {
		out[i] = true
	}
	return out
}

func better(a, b API) bool {
	if la, lb := strings.Count(a.Package, "/"), strings.Count(b.Package, "/"); la != lb {
		return la < lb
	}
	if len(a.Name) != len(b.Name) {
		return len(a.Name) < len(b.Name)
	}
	return a.ID < b.ID
}
