// Package pypi reads Python package indexes through the protocols pip
// and uv use: the PEP 691 JSON simple API with the PEP 700 fields
// (versions, upload-time), PEP 592 yanking and PEP 658/714 core metadata;
// it parses and orders PEP 440 versions and resolves the pair of releases
// a model is compared on against a cutoff date. It knows nothing of
// installing or analysing packages; the index URL is passed in, never
// read from the environment.
package pypi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// DefaultIndex is pip's default index.
const DefaultIndex = "https://pypi.org/simple/"

// Accept asks for PEP 691 JSON; HTML is accepted only to report clearly
// that an index serves nothing else.
const accept = "application/vnd.pypi.simple.v1+json, text/html;q=0.01"

// ErrNotFound is an index's 404 or 410: it has no such project.
var ErrNotFound = errors.New("not found")

// Index is a PEP 691 simple index. Its methods are safe for concurrent use.
type Index struct {
	base     *url.URL
	client   *http.Client
	maxBytes int64
}

// Option configures an Index.
type Option func(*Index)

// WithHTTPClient sets the HTTP client (default: one with a 60 s timeout).
func WithHTTPClient(c *http.Client) Option { return func(ix *Index) { ix.client = c } }

// WithMaxResponseBytes bounds every response body (default 64 MiB, more
// than the largest projects' pages on pypi.org).
func WithMaxResponseBytes(n int64) Option { return func(ix *Index) { ix.maxBytes = n } }

// NewIndex returns the index whose simple API is at base ("" is
// DefaultIndex), an http(s) URL such as https://pypi.org/simple/.
func NewIndex(base string, opts ...Option) (*Index, error) {
	if base == "" {
		base = DefaultIndex
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("index URL %q: want an http:// or https:// URL like %s", redact(base), DefaultIndex)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	ix := &Index{base: u, client: &http.Client{Timeout: 60 * time.Second}, maxBytes: 64 << 20}
	for _, o := range opts {
		o(ix)
	}
	return ix, nil
}

// URL is the index's simple API base, with any password redacted.
func (ix *Index) URL() string { return ix.base.Redacted() }

// redact hides a password in a URL for messages.
func redact(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "(unparsable URL)"
}

var nameRE = regexp.MustCompile(`(?i)^([a-z0-9]|[a-z0-9][a-z0-9._-]*[a-z0-9])$`)
var separatorsRE = regexp.MustCompile(`[-_.]+`)

// Normalize is a project name as PEP 503 normalises it (Foo.Bar_baz →
// foo-bar-baz), or an error for a name PEP 508 does not allow.
func Normalize(name string) (string, error) {
	if !nameRE.MatchString(name) {
		return "", fmt.Errorf("%q is not a valid Python project name (PEP 508: letters, digits, '.', '-', '_')", name)
	}
	return strings.ToLower(separatorsRE.ReplaceAllString(name, "-")), nil
}

// Project is a project's page on the index.
type Project struct {
	// Name is the normalised name.
	Name string
	// APIVersion is the page's meta.api-version (1.0, 1.1, ...).
	APIVersion string
	// Versions are the versions the page lists (PEP 700), as spelled
	// there; from the files' names for an API 1.0 page.
	Versions []string
	Files    []File
}

// File is one distribution file on a project page.
type File struct {
	Filename string
	// URL is absolute (resolved against the page's URL).
	URL    string
	Hashes map[string]string
	// RequiresPython is the file's Requires-Python, "" when absent.
	RequiresPython string
	// Yanked reports a yanked file (PEP 592); YankedReason is the
	// reason the index gives, if any.
	Yanked       bool
	YankedReason string
	// UploadTime is zero when the index gives none.
	UploadTime time.Time
	// CoreMetadata reports that the file's METADATA is served at URL +
	// ".metadata" (PEP 658, PEP 714); CoreMetadataHashes are its hashes.
	CoreMetadata       bool
	CoreMetadataHashes map[string]string
	Size               int64
}

// pageJSON is the wire form of a PEP 691 project page.
type pageJSON struct {
	Meta struct {
		APIVersion string `json:"api-version"`
	} `json:"meta"`
	Name     string     `json:"name"`
	Versions []string   `json:"versions"`
	Files    []fileJSON `json:"files"`
}

type fileJSON struct {
	Filename       string            `json:"filename"`
	URL            string            `json:"url"`
	Hashes         map[string]string `json:"hashes"`
	RequiresPython *string           `json:"requires-python"`
	Yanked         json.RawMessage   `json:"yanked"`
	UploadTime     *string           `json:"upload-time"`
	CoreMetadata   json.RawMessage   `json:"core-metadata"`
	DistInfoMeta   json.RawMessage   `json:"dist-info-metadata"`
	Size           *int64            `json:"size"`
}

// Project fetches a project's page. A project the index does not have is
// ErrNotFound; an index that answers HTML only, or anything but a PEP 691
// page of API version 1.x, is an error that says so.
func (ix *Index) Project(ctx context.Context, name string) (*Project, error) {
	norm, err := Normalize(name)
	if err != nil {
		return nil, err
	}
	page := ix.base.ResolveReference(&url.URL{Path: norm + "/"})
	body, ctype, err := ix.get(ctx, page.String(), accept)
	if err != nil {
		return nil, fmt.Errorf("project %s on %s: %w", norm, ix.URL(), err)
	}
	mt, _, _ := mime.ParseMediaType(ctype)
	switch mt {
	case "application/vnd.pypi.simple.v1+json", "application/vnd.pypi.simple.latest+json":
	case "text/html", "application/vnd.pypi.simple.v1+html":
		return nil, fmt.Errorf("project %s on %s: the index serves only the PEP 503 HTML API, which has no upload times; lacuna needs an index with the PEP 691 JSON API and PEP 700 upload-time (pypi.org, devpi, a recent pypiserver)", norm, ix.URL())
	default:
		return nil, fmt.Errorf("project %s on %s: the index answered %q, not a PEP 691 JSON page", norm, ix.URL(), ctype)
	}
	p, err := parsePage(body, page)
	if err != nil {
		return nil, fmt.Errorf("project %s on %s: %w", norm, ix.URL(), err)
	}
	if got, _ := Normalize(p.Name); p.Name != "" && got != norm {
		return nil, fmt.Errorf("project %s on %s: the page is for %q", norm, ix.URL(), p.Name)
	}
	p.Name = norm
	return p, nil
}

func parsePage(body []byte, page *url.URL) (*Project, error) {
	var w pageJSON
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("not a PEP 691 JSON page: %w (starts %q)", err, snippet(body))
	}
	if w.Meta.APIVersion == "" {
		return nil, fmt.Errorf("not a PEP 691 JSON page: no meta.api-version (starts %q)", snippet(body))
	}
	if !strings.HasPrefix(w.Meta.APIVersion, "1.") && w.Meta.APIVersion != "1" {
		return nil, fmt.Errorf("simple API version %s is not supported (want 1.x)", w.Meta.APIVersion)
	}
	p := &Project{Name: w.Name, APIVersion: w.Meta.APIVersion, Versions: w.Versions}
	for i, f := range w.Files {
		if f.Filename == "" || f.URL == "" {
			return nil, fmt.Errorf("file %d has no filename or url", i)
		}
		u, err := page.Parse(f.URL)
		if err != nil {
			return nil, fmt.Errorf("file %s: url %q: %w", f.Filename, f.URL, err)
		}
		out := File{Filename: f.Filename, URL: u.String(), Hashes: f.Hashes}
		if f.RequiresPython != nil {
			out.RequiresPython = *f.RequiresPython
		}
		if out.Yanked, out.YankedReason, err = boolOrString(f.Yanked); err != nil {
			return nil, fmt.Errorf("file %s: yanked: %w", f.Filename, err)
		}
		if f.UploadTime != nil {
			if out.UploadTime, err = time.Parse(time.RFC3339Nano, *f.UploadTime); err != nil {
				return nil, fmt.Errorf("file %s: upload-time %q is not an ISO 8601 time", f.Filename, *f.UploadTime)
			}
		}
		meta := f.CoreMetadata
		if len(meta) == 0 {
			meta = f.DistInfoMeta
		}
		if out.CoreMetadata, out.CoreMetadataHashes, err = boolOrHashes(meta); err != nil {
			return nil, fmt.Errorf("file %s: core-metadata: %w", f.Filename, err)
		}
		if f.Size != nil {
			out.Size = *f.Size
		}
		p.Files = append(p.Files, out)
	}
	return p, nil
}

// boolOrString decodes PEP 592's yanked: false, true or a reason.
func boolOrString(raw json.RawMessage) (bool, string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return false, "", nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err == nil {
		return b, "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return false, "", fmt.Errorf("%s is neither a boolean nor a string", raw)
	}
	return true, s, nil
}

// boolOrHashes decodes PEP 714's core-metadata: false, true or hashes.
func boolOrHashes(raw json.RawMessage) (bool, map[string]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return false, nil, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err == nil {
		return b, nil, nil
	}
	var h map[string]string
	if err := json.Unmarshal(raw, &h); err != nil {
		return false, nil, fmt.Errorf("%s is neither a boolean nor a map of hashes", raw)
	}
	return true, h, nil
}

func snippet(b []byte) string {
	if len(b) > 60 {
		b = b[:60]
	}
	return string(b)
}

// get fetches u, retrying 429s, 5xx and transport errors a few times with
// backoff. It returns the body and Content-Type.
func (ix *Index) get(ctx context.Context, u, accept string) ([]byte, string, error) {
	var last error
	for attempt := 0; attempt < 4; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, "", ctx.Err()
			case <-time.After(time.Duration(1<<attempt) * 250 * time.Millisecond):
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, "", err
		}
		req.Header.Set("Accept", accept)
		resp, err := ix.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, "", ctx.Err()
			}
			last = err
			continue
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, ix.maxBytes+1))
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
			return nil, "", fmt.Errorf("%s: %w", redact(u), ErrNotFound)
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			last = fmt.Errorf("%s: %s", redact(u), resp.Status)
			continue
		case resp.StatusCode != http.StatusOK:
			return nil, "", fmt.Errorf("%s: %s", redact(u), resp.Status)
		case err != nil:
			last = fmt.Errorf("%s: %w", redact(u), err)
			continue
		case int64(len(b)) > ix.maxBytes:
			return nil, "", fmt.Errorf("%s: response larger than %d bytes", redact(u), ix.maxBytes)
		}
		return b, resp.Header.Get("Content-Type"), nil
	}
	return nil, "", last
}
