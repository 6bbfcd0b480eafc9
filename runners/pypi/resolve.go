package pypi

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Release is one version of a project as the index dates it.
type Release struct {
	// Listed is the version as the index spells it (what pip installs).
	Listed  string
	Version Version
	// Time is the earliest upload-time among the release's files (the
	// files without one do not count); zero when none has one.
	Time time.Time
	// Files counts the release's files.
	Files int
	// Yanked: every file of the release is yanked (PEP 592).
	Yanked       bool
	YankedReason string
	// Skip says why the release cannot be dated or used ("" when it can):
	// "invalid version", "no files", "no upload-time".
	Skip string
}

// Releases groups a project's files by version: one Release per listed
// version (and per version only files name, for an API 1.0 page), in
// PEP 440 order, the versions that do not parse last in listed order.
// Files whose names carry no recognisable version are ignored.
func Releases(p *Project) []Release {
	byKey := map[string]*Release{}
	var order []*Release
	add := func(listed string) *Release {
		v, err := ParseVersion(listed)
		key := "raw:" + listed
		if err == nil {
			key = v.key()
		}
		if r, ok := byKey[key]; ok {
			return r
		}
		r := &Release{Listed: listed, Version: v}
		if err != nil {
			r.Skip = "invalid version"
		}
		byKey[key] = r
		order = append(order, r)
		return r
	}
	for _, v := range p.Versions {
		add(v)
	}
	yanked := map[*Release]int{}
	for _, f := range p.Files {
		ver := fileVersion(p.Name, f.Filename)
		if ver == "" {
			continue
		}
		var r *Release
		if v, err := ParseVersion(ver); err == nil {
			r = byKey[v.key()]
		}
		if r == nil {
			if len(p.Versions) > 0 {
				continue // a file of no listed version
			}
			r = add(ver)
		}
		r.Files++
		if !f.UploadTime.IsZero() && (r.Time.IsZero() || f.UploadTime.Before(r.Time)) {
			r.Time = f.UploadTime
		}
		if f.Yanked {
			yanked[r]++
			if r.YankedReason == "" {
				r.YankedReason = f.YankedReason
			}
		}
	}
	out := make([]Release, 0, len(order))
	for _, r := range order {
		r.Yanked = r.Files > 0 && yanked[r] == r.Files
		if !r.Yanked {
			r.YankedReason = ""
		}
		switch {
		case r.Skip != "":
		case r.Files == 0:
			r.Skip = "no files"
		case r.Time.IsZero():
			r.Skip = "no upload-time"
		}
		out = append(out, *r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.Skip == "invalid version") != (b.Skip == "invalid version") {
			return b.Skip == "invalid version"
		}
		if a.Skip == "invalid version" {
			return false
		}
		return Compare(a.Version, b.Version) < 0
	})
	return out
}

// distExtensions are the distribution file suffixes, longest first.
var distExtensions = []string{".tar.gz", ".tar.bz2", ".tar.xz", ".tar.Z", ".tgz", ".tar", ".zip", ".whl", ".egg", ".exe", ".msi", ".rpm", ".dmg", ".deb"}

// fileVersion is the version part of a distribution file's name: wheels
// and eggs name-version-tags, sdists name-version (the name as the
// project spells it, normalised or not); "" when the name does not start
// with the project's.
func fileVersion(project, filename string) string {
	stem := ""
	for _, ext := range distExtensions {
		if strings.HasSuffix(strings.ToLower(filename), strings.ToLower(ext)) {
			stem = filename[:len(filename)-len(ext)]
			break
		}
	}
	if stem == "" {
		return ""
	}
	for i := 0; i < len(stem); i++ {
		if stem[i] != '-' {
			continue
		}
		if n, err := Normalize(stem[:i]); err != nil || n != project {
			continue
		}
		rest := stem[i+1:]
		if strings.HasSuffix(filename, ".whl") || strings.HasSuffix(filename, ".egg") {
			rest, _, _ = strings.Cut(rest, "-")
		}
		return rest
	}
	return ""
}

// ResolveOptions choose which releases count.
type ResolveOptions struct {
	// New is "latest" (the highest release after the cutoff, the default)
	// or "first_after" (the lowest release after the cutoff above Old).
	New string
	// Prerelease keeps pre-releases and development releases.
	Prerelease bool
	// Yanked keeps releases whose files are all yanked.
	Yanked bool
}

// Resolution is the pair of releases a model is compared on.
type Resolution struct {
	Project string
	// Old is the highest usable release uploaded at or before the cutoff;
	// New a higher one uploaded after it.
	Old, New Release
	// Why explains the choice. It names no cutoff: two cutoffs that pick
	// the same releases give the same sentence.
	Why string
	// Releases are all releases, in PEP 440 order, with Skip set for
	// those that were not considered (including "pre-release" and
	// "yanked" when the options exclude them).
	Releases []Release
}

// Source is what resolution needs from an index.
type Source interface {
	Project(ctx context.Context, name string) (*Project, error)
}

var _ Source = (*Index)(nil)

// ErrNoRelease is returned when no usable release falls on one side of
// the cutoff.
var ErrNoRelease = errors.New("no usable release")

// Resolve fetches the project from src and resolves it (ResolveProject).
func Resolve(ctx context.Context, src Source, name string, cutoff time.Time, opts ResolveOptions) (*Resolution, error) {
	p, err := src.Project(ctx, name)
	if err != nil {
		return nil, err
	}
	return ResolveProject(p, cutoff, opts)
}

// ResolveProject picks Old and New. Releases are compared by version,
// not by upload order: a backport uploaded after the cutoff (1.10.19
// after 2.9.0) is neither Old nor New. Releases that cannot be dated
// (no files, no upload-time) are skipped with their reason in Why; an
// index that dates no file at all is an error.
func ResolveProject(p *Project, cutoff time.Time, opts ResolveOptions) (*Resolution, error) {
	rels := Releases(p)
	res := &Resolution{Project: p.Name, Releases: rels}
	if len(rels) == 0 {
		return nil, fmt.Errorf("%s: %w: the index lists no releases", p.Name, ErrNoRelease)
	}
	dated := 0
	for i := range rels {
		r := &rels[i]
		switch {
		case r.Skip != "":
		case r.Version.IsPrerelease() && !opts.Prerelease:
			r.Skip = "pre-release"
		case r.Yanked && !opts.Yanked:
			r.Skip = "yanked"
		}
		if !rels[i].Time.IsZero() {
			dated++
		}
	}
	if dated == 0 {
		return nil, fmt.Errorf("%s: the index gives no upload-time for any file (PEP 700 needs simple API 1.1; this page is %s): releases cannot be dated against a cutoff", p.Name, p.APIVersion)
	}
	old := -1
	for i, r := range rels {
		if r.Skip == "" && !r.Time.After(cutoff) {
			old = i // rels is in version order: the last one is the highest
		}
	}
	if old < 0 {
		first := -1
		for i, r := range rels {
			if r.Skip == "" && (first < 0 || r.Time.Before(rels[first].Time)) {
				first = i
			}
		}
		if first < 0 {
			return nil, fmt.Errorf("%s: %w: all %d releases are skipped (%s)", p.Name, ErrNoRelease, len(rels), skipSummary(rels, -1))
		}
		return nil, fmt.Errorf("%s: %w at or before the cutoff %s (the first, %s, was uploaded %s)", p.Name, ErrNoRelease, cutoff.Format("2006-01-02"), rels[first].Listed, rels[first].Time.UTC().Format(time.RFC3339))
	}
	newer, newIdx := 0, -1
	for i := old + 1; i < len(rels); i++ {
		r := rels[i]
		if r.Skip != "" || !r.Time.After(cutoff) {
			continue
		}
		newer++
		if newIdx < 0 || opts.New != "first_after" {
			newIdx = i
		}
	}
	if newIdx < 0 {
		return nil, fmt.Errorf("%s: %w after the cutoff %s above %s (uploaded %s): nothing is novel", p.Name, ErrNoRelease, cutoff.Format("2006-01-02"), rels[old].Listed, rels[old].Time.UTC().Format(time.RFC3339))
	}
	res.Old, res.New = rels[old], rels[newIdx]
	kind := "final release"
	if opts.Prerelease {
		kind = "release"
	}
	if !opts.Yanked {
		kind = "non-yanked " + kind
	}
	mode := "the highest"
	if opts.New == "first_after" {
		mode = "the lowest"
	}
	res.Why = fmt.Sprintf("%s: the highest %s uploaded at or before the cutoff (first file %s); %s: %s of the %d such releases above it uploaded after the cutoff (first file %s); %d releases listed, skipped (named: above %s or undatable): %s",
		res.Old.Listed, kind, res.Old.Time.UTC().Format(time.RFC3339), res.New.Listed, mode, newer, res.New.Time.UTC().Format(time.RFC3339),
		len(rels), res.Old.Listed, skipSummary(rels, old))
	return res, nil
}

// skipSummary counts skipped releases by reason and names up to five of
// each reason among those worth seeing: the undatable ones (the index's
// faults) and those above the release at index above (all with -1).
func skipSummary(rels []Release, above int) string {
	reasons := []string{"pre-release", "yanked", "no upload-time", "no files", "invalid version"}
	count, nameable := map[string]int{}, map[string]int{}
	named := map[string][]string{}
	for i, r := range rels {
		if r.Skip == "" {
			continue
		}
		count[r.Skip]++
		if r.Skip == "no upload-time" || r.Skip == "no files" || i > above {
			nameable[r.Skip]++
			if len(named[r.Skip]) < 5 {
				named[r.Skip] = append(named[r.Skip], r.Listed)
			}
		}
	}
	var parts []string
	for _, k := range reasons {
		if count[k] == 0 {
			continue
		}
		s := fmt.Sprintf("%d %s", count[k], k)
		if len(named[k]) > 0 {
			list := strings.Join(named[k], ", ")
			if nameable[k] > len(named[k]) {
				list += ", …"
			}
			s += " (" + list + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
