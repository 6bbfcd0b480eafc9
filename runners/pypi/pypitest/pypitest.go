// Package pypitest builds real wheels (and source distributions) in Go
// and serves them from a PEP 691 index on loopback, for offline tests of
// the Python layers: the
// simple API (JSON, with PEP 700 upload-time and versions, PEP 592
// yanking, PEP 658/714 core metadata), the files at their URLs with
// correct hashes, and the PyPI JSON API (/pypi/NAME/json) beside it.
// pip and uv install from it.
package pypitest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Release is one version of a fixture project, published as one
// pure-Python wheel (py3-none-any).
type Release struct {
	Version string
	// Uploaded is the wheel's upload-time; zero serves none (a release the
	// index cannot date).
	Uploaded time.Time
	// Yanked yanks the wheel; YankedReason is served as the reason when
	// set.
	Yanked       bool
	YankedReason string
	// Files are the wheel's contents besides its .dist-info: path (with
	// "/") → source, such as "demo/__init__.py".
	Files map[string]string
	// RequiresPython goes to METADATA and the index ("" for none).
	RequiresPython string
	// Metadata are more METADATA header lines, such as
	// "License-Expression: MIT" or "Requires-Dist: typing-extensions".
	Metadata []string
	// NoFiles lists the version with no file at all.
	NoFiles bool
	// Sdist, when not nil, publishes a source distribution beside the
	// wheel: NAME-VERSION.tar.gz holding these files (path with "/" →
	// content, such as "tests/test_core.py") and PKG-INFO under the
	// directory NAME-VERSION/, as sdists lay themselves out.
	Sdist map[string]string
}

// BuildSdist builds the source distribution of release r of project:
// r.Sdist's files and PKG-INFO under NAME-VERSION/ in a gzipped tar. The
// same arguments give the same bytes.
func BuildSdist(project string, r Release) (Wheel, error) {
	base := distName(project) + "-" + r.Version
	meta := "Metadata-Version: 2.1\nName: " + project + "\nVersion: " + r.Version + "\nSummary: lacuna test fixture\n"
	all := map[string]string{"PKG-INFO": meta}
	for p, c := range r.Sdist {
		if strings.HasPrefix(p, "/") || strings.Contains(p, "..") {
			return Wheel{}, fmt.Errorf("sdist file %q: a fixture path must be relative", p)
		}
		all[p] = c
	}
	names := make([]string, 0, len(all))
	for p := range all {
		names = append(names, p)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.ModTime = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	tw := tar.NewWriter(zw)
	for _, p := range names {
		h := &tar.Header{Name: base + "/" + p, Mode: 0o644, Size: int64(len(all[p])), Typeflag: tar.TypeReg, ModTime: zw.ModTime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return Wheel{}, err
		}
		if _, err := tw.Write([]byte(all[p])); err != nil {
			return Wheel{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return Wheel{}, err
	}
	if err := zw.Close(); err != nil {
		return Wheel{}, err
	}
	sum := sha256.Sum256(buf.Bytes())
	return Wheel{Filename: base + ".tar.gz", Data: buf.Bytes(), SHA256: hex.EncodeToString(sum[:]), Metadata: []byte(meta)}, nil
}

// Wheel is a built wheel (or, from BuildSdist, a source distribution).
type Wheel struct {
	Filename string
	Data     []byte
	// SHA256 is the hex digest of Data; Metadata the dist-info METADATA.
	SHA256   string
	Metadata []byte
}

// BuildWheel builds the wheel of release r of project: r.Files (path →
// content) plus NAME-VERSION.dist-info/{METADATA,WHEEL,RECORD}, RECORD
// with each file's sha256 and size. The same arguments give the same
// bytes.
func BuildWheel(project string, r Release) (Wheel, error) {
	dist, version := distName(project), r.Version
	info := dist + "-" + version + ".dist-info/"
	meta := "Metadata-Version: 2.1\nName: " + project + "\nVersion: " + version + "\nSummary: lacuna test fixture\n"
	if r.RequiresPython != "" {
		meta += "Requires-Python: " + r.RequiresPython + "\n"
	}
	for _, l := range r.Metadata {
		meta += strings.TrimRight(l, "\n") + "\n"
	}
	all := map[string]string{}
	for p, c := range r.Files {
		if strings.HasPrefix(p, info) || strings.HasPrefix(p, "/") || strings.Contains(p, "..") {
			return Wheel{}, fmt.Errorf("wheel file %q: a fixture path must be relative and outside the .dist-info", p)
		}
		all[p] = c
	}
	all[info+"METADATA"] = meta
	all[info+"WHEEL"] = "Wheel-Version: 1.0\nGenerator: lacuna-pypitest\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
	names := make([]string, 0, len(all)+1)
	for p := range all {
		names = append(names, p)
	}
	sort.Strings(names)
	var record strings.Builder
	for _, p := range names {
		sum := sha256.Sum256([]byte(all[p]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", p, base64.RawURLEncoding.EncodeToString(sum[:]), len(all[p]))
	}
	record.WriteString(info + "RECORD,,\n")
	all[info+"RECORD"] = record.String()
	names = append(names, info+"RECORD")

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, p := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: p, Method: zip.Deflate, Modified: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			return Wheel{}, err
		}
		if _, err := w.Write([]byte(all[p])); err != nil {
			return Wheel{}, err
		}
	}
	if err := zw.Close(); err != nil {
		return Wheel{}, err
	}
	sum := sha256.Sum256(buf.Bytes())
	return Wheel{
		Filename: dist + "-" + version + "-py3-none-any.whl",
		Data:     buf.Bytes(), SHA256: hex.EncodeToString(sum[:]), Metadata: []byte(meta),
	}, nil
}

var separators = regexp.MustCompile(`[-_.]+`)

// normalize is PEP 503's normalised name.
func normalize(name string) string { return strings.ToLower(separators.ReplaceAllString(name, "-")) }

// distName is the name as wheel file names spell it.
func distName(name string) string { return strings.ReplaceAll(normalize(name), "-", "_") }

// Index is a PEP 691 index of fixture projects; it is an http.Handler
// (see Serve). Its methods are safe for concurrent use, also while it
// serves.
type Index struct {
	mu       sync.Mutex
	projects map[string]*project // normalised name →
	wheels   map[string]Wheel    // file name →
}

type project struct {
	name     string
	releases []Release
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{projects: map[string]*project{}, wheels: map[string]Wheel{}}
}

// Publish adds releases of a project (building their wheels), replacing
// a release of the same version.
func (ix *Index) Publish(name string, releases ...Release) error {
	built := map[string]Wheel{}
	sdists := map[string]Wheel{}
	for _, r := range releases {
		if r.NoFiles {
			continue
		}
		w, err := BuildWheel(name, r)
		if err != nil {
			return fmt.Errorf("%s %s: %w", name, r.Version, err)
		}
		built[r.Version] = w
		if r.Sdist != nil {
			if sdists[r.Version], err = BuildSdist(name, r); err != nil {
				return fmt.Errorf("%s %s: %w", name, r.Version, err)
			}
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	p := ix.projects[normalize(name)]
	if p == nil {
		p = &project{name: name}
		ix.projects[normalize(name)] = p
	}
	for _, r := range releases {
		kept := p.releases[:0]
		for _, old := range p.releases {
			if old.Version != r.Version {
				kept = append(kept, old)
			}
		}
		p.releases = append(kept, r)
		if w, ok := built[r.Version]; ok {
			ix.wheels[w.Filename] = w
		}
		if w, ok := sdists[r.Version]; ok {
			ix.wheels[w.Filename] = w
		}
	}
	return nil
}

// Published is a new index with releases of the project name published,
// failing tb when a wheel cannot be built.
func Published(tb testing.TB, name string, releases ...Release) *Index {
	tb.Helper()
	ix := NewIndex()
	if err := ix.Publish(name, releases...); err != nil {
		tb.Fatal(err)
	}
	return ix
}

// Wheel returns the wheel of a published release.
func (ix *Index) Wheel(name, version string) (Wheel, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	w, ok := ix.wheels[distName(name)+"-"+version+"-py3-none-any.whl"]
	return w, ok
}

// Serve serves ix on 127.0.0.1 until the test ends and returns the simple
// API's URL (http://127.0.0.1:PORT/simple/).
func Serve(tb testing.TB, ix *Index) string {
	srv := httptest.NewServer(ix)
	tb.Cleanup(srv.Close)
	return srv.URL + "/simple/"
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// ServeHTTP answers /simple/NAME/ (PEP 691 JSON; 404 for unknown or
// unnormalised names), /files/WHEEL, /files/WHEEL.metadata and
// /files/SDIST, and
// /pypi/NAME/json.
func (ix *Index) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, "/simple/") && strings.HasSuffix(path, "/"):
		name := strings.TrimSuffix(strings.TrimPrefix(path, "/simple/"), "/")
		p := ix.projects[name]
		if p == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.pypi.simple.v1+json")
		json.NewEncoder(w).Encode(ix.simplePage(name, p))
	case strings.HasPrefix(path, "/files/"):
		file := strings.TrimPrefix(path, "/files/")
		meta := strings.HasSuffix(file, ".metadata")
		wh, ok := ix.wheels[strings.TrimSuffix(file, ".metadata")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if meta {
			w.Write(wh.Metadata)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(wh.Data)
	case strings.HasPrefix(path, "/pypi/") && strings.HasSuffix(path, "/json"):
		name := normalize(strings.TrimSuffix(strings.TrimPrefix(path, "/pypi/"), "/json"))
		p := ix.projects[name]
		if p == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(ix.jsonPage(p))
	default:
		http.NotFound(w, r)
	}
}

func (ix *Index) simplePage(name string, p *project) map[string]any {
	versions := []string{}
	files := []map[string]any{}
	for _, r := range p.releases {
		versions = append(versions, r.Version)
		if r.NoFiles {
			continue
		}
		for _, wh := range ix.files(p.name, r) {
			f := map[string]any{
				"filename": wh.Filename,
				"url":      "../../files/" + wh.Filename,
				"hashes":   map[string]string{"sha256": wh.SHA256},
				"size":     len(wh.Data),
			}
			if strings.HasSuffix(wh.Filename, ".whl") {
				msum := sha256.Sum256(wh.Metadata)
				f["core-metadata"] = map[string]string{"sha256": hex.EncodeToString(msum[:])}
				// The PEP 691 name, which pip before 23.3 reads.
				f["dist-info-metadata"] = map[string]string{"sha256": hex.EncodeToString(msum[:])}
			}
			if r.RequiresPython != "" {
				f["requires-python"] = r.RequiresPython
			}
			if !r.Uploaded.IsZero() {
				f["upload-time"] = stamp(r.Uploaded)
			}
			switch {
			case r.Yanked && r.YankedReason != "":
				f["yanked"] = r.YankedReason
			case r.Yanked:
				f["yanked"] = true
			}
			files = append(files, f)
		}
	}
	return map[string]any{"meta": map[string]string{"api-version": "1.1"}, "name": name, "versions": versions, "files": files}
}

// files are release r's files: its wheel, then its sdist when it has one.
func (ix *Index) files(project string, r Release) []Wheel {
	out := []Wheel{ix.wheels[distName(project)+"-"+r.Version+"-py3-none-any.whl"]}
	if sd, ok := ix.wheels[distName(project)+"-"+r.Version+".tar.gz"]; ok {
		out = append(out, sd)
	}
	return out
}

// jsonPage is the PyPI JSON API's document, releases only. Its upload
// times are the simple API's (the current time for an undated release,
// as Warehouse always has one).
func (ix *Index) jsonPage(p *project) map[string]any {
	releases := map[string][]map[string]any{}
	for _, r := range p.releases {
		releases[r.Version] = []map[string]any{}
		if r.NoFiles {
			continue
		}
		up := r.Uploaded
		if up.IsZero() {
			up = time.Now()
		}
		for _, wh := range ix.files(p.name, r) {
			releases[r.Version] = append(releases[r.Version], map[string]any{
				"filename": wh.Filename, "upload_time_iso_8601": stamp(up), "yanked": r.Yanked,
				"digests": map[string]string{"sha256": wh.SHA256},
			})
		}
	}
	return map[string]any{"info": map[string]string{"name": p.name}, "releases": releases}
}

// FilesFromDir reads a source tree (such as testdata/demo/1.1.0) into a
// Release's Files: slash-separated paths relative to dir → contents.
func FilesFromDir(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fixture files under %s: %w", dir, err)
	}
	return files, nil
}

// Day is noon UTC of a YYYY-MM-DD date, for Release.Uploaded.
func Day(date string) time.Time {
	d, err := time.Parse("2006-01-02", date)
	if err != nil {
		panic(fmt.Sprintf("pypitest.Day(%q): %v", date, err))
	}
	return d.Add(12 * time.Hour)
}

// DemoProject is the name of the fixture project Demo returns.
const DemoProject = "lacuna-demo"

// Demo is a small project to resolve against, its module lacuna_demo
// holding files (nil: a one-function module per version): 1.0.0
// (2024-01-10), 1.1.0 (2024-06-01), 1.2.0rc1 (2024-08-01, a
// pre-release), 1.2.0 (2024-09-01), 1.2.1 (2024-10-01, yanked) and 1.3.0
// (2024-11-01). Other packages' tests put their own modules in files.
func Demo(files func(version string) map[string]string) []Release {
	if files == nil {
		files = func(v string) map[string]string {
			return map[string]string{"lacuna_demo/__init__.py": fmt.Sprintf("__version__ = %q\n\n\ndef hello(name: str) -> str:\n    \"\"\"Greet name.\"\"\"\n    return 'hello ' + name\n", v)}
		}
	}
	rel := func(v, date string) Release { return Release{Version: v, Uploaded: Day(date), Files: files(v)} }
	yanked := rel("1.2.1", "2024-10-01")
	yanked.Yanked, yanked.YankedReason = true, "broken import"
	return []Release{
		rel("1.0.0", "2024-01-10"), rel("1.1.0", "2024-06-01"), rel("1.2.0rc1", "2024-08-01"),
		rel("1.2.0", "2024-09-01"), yanked, rel("1.3.0", "2024-11-01"),
	}
}
