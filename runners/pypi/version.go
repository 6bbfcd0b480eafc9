package pypi

import (
	"fmt"
	"regexp"
	"strings"
)

// Version is a parsed PEP 440 version. The zero value is not a version;
// values come from ParseVersion.
type Version struct {
	epoch   string   // digits, no leading zeros
	release []string // digits, no leading zeros
	pre     string   // "a", "b", "rc" or ""
	preN    string
	post    string // digits; "" with hasPost false means none
	hasPost bool
	dev     string
	hasDev  bool
	local   []string // lower case
}

// The regular expression of PEP 440's appendix (packaging.version).
var versionRE = regexp.MustCompile(`(?i)^\s*v?(?:(?:(?P<epoch>[0-9]+)!)?(?P<release>[0-9]+(?:\.[0-9]+)*)` +
	`(?P<pre>[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>[0-9]+)?)?` +
	`(?P<post>(?:-(?P<post_n1>[0-9]+))|(?:[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?))?` +
	`(?P<dev>[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?)` +
	`(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$`)

// ParseVersion parses s as PEP 440 spells versions, accepting the
// alternative spellings the PEP normalises (1.0-alpha.1, v2, 1.0-1).
func ParseVersion(s string) (Version, error) {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return Version{}, fmt.Errorf("%q is not a PEP 440 version", s)
	}
	g := func(name string) string { return m[versionRE.SubexpIndex(name)] }
	v := Version{epoch: trimZeros(g("epoch"))}
	for _, p := range strings.Split(g("release"), ".") {
		v.release = append(v.release, trimZeros(p))
	}
	if l := strings.ToLower(g("pre_l")); l != "" {
		switch l {
		case "alpha":
			l = "a"
		case "beta":
			l = "b"
		case "c", "pre", "preview":
			l = "rc"
		}
		v.pre, v.preN = l, trimZeros(g("pre_n"))
	}
	if g("post") != "" {
		v.hasPost = true
		v.post = trimZeros(g("post_n1") + g("post_n2"))
	}
	if g("dev") != "" {
		v.hasDev, v.dev = true, trimZeros(g("dev_n"))
	}
	if l := g("local"); l != "" {
		v.local = strings.FieldsFunc(strings.ToLower(l), func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	}
	return v, nil
}

// trimZeros is a digit string without leading zeros ("" and "000" are "0").
func trimZeros(s string) string {
	s = strings.TrimLeft(s, "0")
	if s == "" {
		return "0"
	}
	return s
}

// String is the normalised form (packaging's str(Version)): 1.0a1.post2.dev3+ubuntu.1.
func (v Version) String() string {
	var b strings.Builder
	if v.epoch != "0" {
		b.WriteString(v.epoch + "!")
	}
	b.WriteString(strings.Join(v.release, "."))
	if v.pre != "" {
		b.WriteString(v.pre + v.preN)
	}
	if v.hasPost {
		b.WriteString(".post" + v.post)
	}
	if v.hasDev {
		b.WriteString(".dev" + v.dev)
	}
	if len(v.local) > 0 {
		b.WriteString("+" + strings.Join(v.local, "."))
	}
	return b.String()
}

// key is the normalised form without the release's trailing zeros:
// versions that compare equal (1.0, 1.0.0) have the same key.
func (v Version) key() string {
	w := v
	if w.release = stripTrailingZeros(v.release); len(w.release) == 0 {
		w.release = []string{"0"}
	}
	return w.String()
}

// IsPrerelease reports a pre-release or development release (1.0rc1,
// 1.0.dev0, 1.0.post1.dev2), as pip decides what --pre admits.
func (v Version) IsPrerelease() bool { return v.pre != "" || v.hasDev }

// IsLocal reports a local version label (1.0+cu118).
func (v Version) IsLocal() bool { return len(v.local) > 0 }

// Compare orders versions as PEP 440 does: -1, 0 or +1. Trailing zeros
// of the release do not count (1.0 == 1.0.0); within a release,
// 1.0.dev0 < 1.0a1.dev0 < 1.0a1 < 1.0b1 < 1.0rc1 < 1.0 < 1.0+local <
// 1.0.post1.dev0 < 1.0.post1.
func Compare(a, b Version) int {
	if c := cmpNum(a.epoch, b.epoch); c != 0 {
		return c
	}
	ar, br := stripTrailingZeros(a.release), stripTrailingZeros(b.release)
	for i := 0; i < len(ar) || i < len(br); i++ {
		if i >= len(ar) {
			return -1
		}
		if i >= len(br) {
			return 1
		}
		if c := cmpNum(ar[i], br[i]); c != 0 {
			return c
		}
	}
	if c := cmpPre(a, b); c != 0 {
		return c
	}
	// No post release sorts first.
	if c := cmpOptional(a.hasPost, a.post, b.hasPost, b.post, -1); c != 0 {
		return c
	}
	// No dev release sorts last.
	if c := cmpOptional(a.hasDev, a.dev, b.hasDev, b.dev, 1); c != 0 {
		return c
	}
	return cmpLocal(a.local, b.local)
}

func stripTrailingZeros(r []string) []string {
	for len(r) > 0 && r[len(r)-1] == "0" {
		r = r[:len(r)-1]
	}
	return r
}

// cmpNum compares digit strings without leading zeros, of any length.
func cmpNum(a, b string) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// cmpOptional compares optional numbers; absent sorts as absentSign
// against any present number (-1: before, +1: after).
func cmpOptional(ha bool, a string, hb bool, b string, absentSign int) int {
	switch {
	case !ha && !hb:
		return 0
	case !ha:
		return absentSign
	case !hb:
		return -absentSign
	}
	return cmpNum(a, b)
}

// preRank places the pre-release segment: a bare dev release (1.0.dev0)
// before every pre-release, a final (or post) release after them.
func preRank(v Version) int {
	switch {
	case v.pre == "" && !v.hasPost && v.hasDev:
		return 0
	case v.pre == "a":
		return 1
	case v.pre == "b":
		return 2
	case v.pre == "rc":
		return 3
	}
	return 4
}

func cmpPre(a, b Version) int {
	ra, rb := preRank(a), preRank(b)
	if ra != rb {
		if ra < rb {
			return -1
		}
		return 1
	}
	if a.pre != "" {
		return cmpNum(a.preN, b.preN)
	}
	return 0
}

// cmpLocal: no label sorts first; numeric segments compare as numbers and
// sort after alphanumeric ones; a longer label that extends a shorter one
// sorts after it.
func cmpLocal(a, b []string) int {
	for i := 0; i < len(a) || i < len(b); i++ {
		if i >= len(a) {
			return -1
		}
		if i >= len(b) {
			return 1
		}
		na, nb := isDigits(a[i]), isDigits(b[i])
		var c int
		switch {
		case na && nb:
			c = cmpNum(trimZeros(a[i]), trimZeros(b[i]))
		case na:
			c = 1
		case nb:
			c = -1
		default:
			c = strings.Compare(a[i], b[i])
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
