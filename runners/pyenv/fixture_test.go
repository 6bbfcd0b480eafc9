package pyenv

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
	"html"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A fixture index: a PEP 691 / PEP 503 simple index on loopback serving
// wheels and sdists built here, with PEP 700 upload times. (The shared
// fixtures of runners/pypi/pypitest will replace it.)

type fixtureFile struct {
	project  string
	filename string
	data     []byte
	uploaded time.Time
}

func (f fixtureFile) sha256() string {
	s := sha256.Sum256(f.data)
	return hex.EncodeToString(s[:])
}

type fixtureIndex struct {
	srv      *httptest.Server
	files    []fixtureFile
	requests atomic.Int64 // every request served
}

func newFixtureIndex(t testing.TB, files ...fixtureFile) *fixtureIndex {
	ix := &fixtureIndex{files: files}
	ix.srv = httptest.NewServer(ix)
	t.Cleanup(ix.srv.Close)
	return ix
}

func (ix *fixtureIndex) URL() string { return ix.srv.URL + "/simple/" }

func (ix *fixtureIndex) file(name string) fixtureFile {
	for _, f := range ix.files {
		if f.filename == name {
			return f
		}
	}
	panic("no fixture file " + name)
}

func (ix *fixtureIndex) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ix.requests.Add(1)
	if name, ok := strings.CutPrefix(r.URL.Path, "/files/"); ok {
		for _, f := range ix.files {
			if f.filename == name {
				w.Write(f.data)
				return
			}
		}
		http.NotFound(w, r)
		return
	}
	project, ok := strings.CutPrefix(r.URL.Path, "/simple/")
	project = strings.TrimSuffix(project, "/")
	if !ok || project == "" {
		http.NotFound(w, r)
		return
	}
	var files []fixtureFile
	versions := map[string]bool{}
	for _, f := range ix.files {
		if Normalize(f.project) == Normalize(project) {
			files = append(files, f)
			versions[strings.Split(f.filename, "-")[1]] = true
		}
	}
	if len(files) == 0 {
		http.NotFound(w, r)
		return
	}
	if strings.Contains(r.Header.Get("Accept"), pep691) {
		type jf struct {
			Filename   string            `json:"filename"`
			URL        string            `json:"url"`
			Hashes     map[string]string `json:"hashes"`
			UploadTime string            `json:"upload-time,omitempty"`
		}
		doc := struct {
			Meta     map[string]string `json:"meta"`
			Name     string            `json:"name"`
			Versions []string          `json:"versions"`
			Files    []jf              `json:"files"`
		}{Meta: map[string]string{"api-version": "1.1"}, Name: Normalize(project)}
		for v := range versions {
			doc.Versions = append(doc.Versions, v)
		}
		sort.Strings(doc.Versions)
		for _, f := range files {
			up := "" // no PEP 700 upload time
			if !f.uploaded.IsZero() {
				up = f.uploaded.UTC().Format("2006-01-02T15:04:05.000000Z")
			}
			doc.Files = append(doc.Files, jf{f.filename, "../../files/" + f.filename, map[string]string{"sha256": f.sha256()}, up})
		}
		w.Header().Set("Content-Type", pep691)
		json.NewEncoder(w).Encode(doc)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprintf(w, "<!DOCTYPE html><html><body>\n")
	for _, f := range files {
		fmt.Fprintf(w, "<a href=\"../../files/%s#sha256=%s\">%s</a><br>\n", html.EscapeString(f.filename), f.sha256(), html.EscapeString(f.filename))
	}
	fmt.Fprintf(w, "</body></html>\n")
}

// wheel builds a pure-Python wheel (or one tagged tag) of project version
// with a module of the same name and the given Requires-Dist.
func wheel(project, version, tag string, uploaded time.Time, requires ...string) fixtureFile {
	if tag == "" {
		tag = "py3-none-any"
	}
	mod := strings.ReplaceAll(Normalize(project), "-", "_")
	dist := mod + "-" + version + ".dist-info"
	meta := "Metadata-Version: 2.1\nName: " + project + "\nVersion: " + version + "\n"
	for _, r := range requires {
		meta += "Requires-Dist: " + r + "\n"
	}
	files := [][2]string{
		{mod + "/__init__.py", fmt.Sprintf("__version__ = %q\n", version)},
		{dist + "/METADATA", meta},
		{dist + "/WHEEL", "Wheel-Version: 1.0\nGenerator: lacuna-test\nRoot-Is-Purelib: true\nTag: " + tag + "\n"},
	}
	var record strings.Builder
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, _ := zw.Create(f[0])
		w.Write([]byte(f[1]))
		s := sha256.Sum256([]byte(f[1]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f[0], base64.RawURLEncoding.EncodeToString(s[:]), len(f[1]))
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", dist)
	w, _ := zw.Create(dist + "/RECORD")
	w.Write([]byte(record.String()))
	zw.Close()
	return fixtureFile{project: project, filename: fmt.Sprintf("%s-%s-%s.whl", mod, version, tag), data: buf.Bytes(), uploaded: uploaded}
}

// failingSdist is an sdist whose in-tree build backend always fails.
func failingSdist(project, version string, uploaded time.Time) fixtureFile {
	mod := strings.ReplaceAll(Normalize(project), "-", "_")
	root := mod + "-" + version + "/"
	files := [][2]string{
		{root + "PKG-INFO", "Metadata-Version: 2.1\nName: " + project + "\nVersion: " + version + "\n"},
		{root + "pyproject.toml", "[build-system]\nrequires = []\nbuild-backend = \"failing_backend\"\nbackend-path = [\".\"]\n"},
		{root + "failing_backend.py", "def _fail(*a, **k):\n    raise RuntimeError(\"" + project + " cannot be built here\")\n" +
			"get_requires_for_build_wheel = prepare_metadata_for_build_wheel = build_wheel = build_sdist = _fail\n"},
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), ModTime: uploaded})
		tw.Write([]byte(f[1]))
	}
	tw.Close()
	gz.Close()
	return fixtureFile{project: project, filename: mod + "-" + version + ".tar.gz", data: buf.Bytes(), uploaded: uploaded}
}

func day(s string) time.Time {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return t
}

// standardIndex: alpha 1.0 (2020-06) and 2.0 (2021-06), both needing
// beta, of which 1.0 (2020-01) and 1.1 (2021-01) exist; gamma has only a
// Windows wheel and an sdist that fails to build; delta needs beta==1.0
// and epsilon, which needs beta>=1.1; zeta's file has no upload time.
func standardIndex(t testing.TB) *fixtureIndex {
	return newFixtureIndex(t,
		wheel("beta", "1.0", "", day("2020-01-01")),
		wheel("beta", "1.1", "", day("2021-01-01")),
		wheel("alpha", "1.0", "", day("2020-06-01"), "beta"),
		wheel("alpha", "2.0", "", day("2021-06-01"), "beta>=1.1"),
		wheel("gamma", "1.0", "cp311-cp311-win_amd64", day("2020-01-01")),
		failingSdist("gamma", "1.0", day("2020-01-01")),
		wheel("delta", "1.0", "", day("2022-01-01"), "beta==1.0", "epsilon"),
		wheel("epsilon", "1.0", "", day("2022-01-01"), "beta>=1.1"),
		wheel("zeta", "1.0", "", time.Time{}),
	)
}
