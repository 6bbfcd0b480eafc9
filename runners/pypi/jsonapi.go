package pypi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"
)

// JSONAPI is the base of the index's PyPI JSON API (…/pypi/), where
// NAME/json describes a project: the simple API's base with its last
// "simple" segment replaced (https://pypi.org/simple/ →
// https://pypi.org/pypi/), as Warehouse lays them out. ok is false when
// the index URL has no such segment.
func (ix *Index) JSONAPI() (base string, ok bool) {
	p := strings.TrimSuffix(ix.base.Path, "/")
	if !strings.HasSuffix(p, "/simple") {
		return "", false
	}
	u := *ix.base
	u.Path = strings.TrimSuffix(p, "simple") + "pypi/"
	return u.String(), true
}

// Disagreement is a release on which the simple API and the JSON API
// differ.
type Disagreement struct {
	Version string
	// What differs, in words: "time 2024-08-01T12:00:00Z here,
	// 2024-08-02T… in the JSON API", "yanked here only", "absent from
	// the JSON API", ...
	What string
}

type jsonProject struct {
	Releases map[string][]struct {
		Filename   string `json:"filename"`
		UploadTime string `json:"upload_time_iso_8601"`
		Yanked     bool   `json:"yanked"`
	} `json:"releases"`
}

// CrossCheck compares the releases of p (from the simple API) with the
// JSON API's account of the same project: each release's earliest
// upload time (to the second), whether it is yanked, and whether the
// JSON API has it. It returns the disagreements, in version order; an
// error when the JSON API cannot be read (ErrNotFound when the index has
// none or lacks the project). Releases the JSON API has but p lacks are
// reported too.
func (ix *Index) CrossCheck(ctx context.Context, p *Project) ([]Disagreement, error) {
	base, ok := ix.JSONAPI()
	if !ok {
		return nil, fmt.Errorf("%s: %w: the index URL %s has no /simple/ segment to find a JSON API beside", p.Name, ErrNotFound, ix.URL())
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	u = u.ResolveReference(&url.URL{Path: p.Name + "/json"})
	body, _, err := ix.get(ctx, u.String(), "application/json")
	if err != nil {
		return nil, fmt.Errorf("JSON API for %s: %w", p.Name, err)
	}
	var w jsonProject
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("JSON API for %s: not a PyPI JSON document: %w (starts %q)", p.Name, err, snippet(body))
	}
	if w.Releases == nil {
		return nil, fmt.Errorf("JSON API for %s: %w: the document has no releases", p.Name, ErrNotFound)
	}
	theirs := map[string]Release{}
	for listed, files := range w.Releases {
		r := Release{Listed: listed, Files: len(files)}
		yanked := 0
		for _, f := range files {
			t, err := time.Parse(time.RFC3339Nano, f.UploadTime)
			if err != nil {
				return nil, fmt.Errorf("JSON API for %s %s: file %s: upload_time_iso_8601 %q: %w", p.Name, listed, f.Filename, f.UploadTime, err)
			}
			if r.Time.IsZero() || t.Before(r.Time) {
				r.Time = t
			}
			if f.Yanked {
				yanked++
			}
		}
		r.Yanked = len(files) > 0 && yanked == len(files)
		theirs[versionKey(listed)] = r
	}
	var out []Disagreement
	seen := map[string]bool{}
	for _, r := range Releases(p) {
		k := versionKey(r.Listed)
		seen[k] = true
		t, ok := theirs[k]
		switch {
		case !ok:
			out = append(out, Disagreement{r.Listed, "absent from the JSON API"})
			continue
		case r.Files != t.Files:
			out = append(out, Disagreement{r.Listed, fmt.Sprintf("%d files here, %d in the JSON API", r.Files, t.Files)})
		}
		if !r.Time.Truncate(time.Second).Equal(t.Time.Truncate(time.Second)) {
			out = append(out, Disagreement{r.Listed, fmt.Sprintf("first upload %s here, %s in the JSON API", stamp(r.Time), stamp(t.Time))})
		}
		if r.Yanked != t.Yanked {
			out = append(out, Disagreement{r.Listed, fmt.Sprintf("yanked %v here, %v in the JSON API", r.Yanked, t.Yanked)})
		}
	}
	var extra []string
	for k, t := range theirs {
		if !seen[k] {
			extra = append(extra, t.Listed)
		}
	}
	sort.Strings(extra)
	for _, v := range extra {
		out = append(out, Disagreement{v, "absent from the simple API"})
	}
	return out, nil
}

// versionKey is the normalised version, or the spelling when it does not
// parse.
func versionKey(s string) string {
	if v, err := ParseVersion(s); err == nil {
		return v.key()
	}
	return "raw:" + s
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339)
}
