package pypi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/pypi"
	"github.com/lacuna-dev/lacuna/runners/pypi/pypitest"
)

func cutoff(date string) time.Time {
	d, err := time.Parse("2006-01-02", date)
	if err != nil {
		panic(err)
	}
	return d.Add(24*time.Hour - time.Nanosecond)
}

// serve publishes releases of the demo project and returns its index.
func serve(t *testing.T, releases ...pypitest.Release) *pypi.Index {
	t.Helper()
	ix := pypitest.NewIndex()
	if err := ix.Publish(pypitest.DemoProject, releases...); err != nil {
		t.Fatal(err)
	}
	idx, err := pypi.NewIndex(pypitest.Serve(t, ix))
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func rel(v, date string) pypitest.Release {
	r := pypitest.Release{Version: v, Files: map[string]string{"lacuna_demo/__init__.py": ""}}
	if date != "" {
		r.Uploaded = pypitest.Day(date)
	}
	return r
}

// TestResolvePicksReleasesAroundTheCutoff: the demo project holds 1.0.0,
// 1.1.0, 1.2.0rc1 (pre-release), 1.2.0, 1.2.1 (yanked), 1.3.0.
func TestResolvePicksReleasesAroundTheCutoff(t *testing.T) {
	idx := serve(t, pypitest.Demo(nil)...)
	for _, c := range []struct {
		name     string
		cutoff   string
		opts     pypi.ResolveOptions
		old, new string
		why      []string
	}{
		{"latest skips yanked and pre-releases", "2024-09-19", pypi.ResolveOptions{}, "1.2.0", "1.3.0",
			[]string{"1.2.0: the highest non-yanked final release uploaded at or before the cutoff (first file 2024-09-01T12:00:00Z)", "1.3.0: the highest of the 1 such releases", "6 releases listed", "1 pre-release", "1 yanked (1.2.1)"}},
		{"the cutoff day counts as known", "2024-09-01", pypi.ResolveOptions{}, "1.2.0", "1.3.0", nil},
		{"first_after skips the pre-release", "2024-07-01", pypi.ResolveOptions{New: "first_after"}, "1.1.0", "1.2.0",
			[]string{"1.2.0: the lowest of the 2 such releases", "1 pre-release (1.2.0rc1)"}},
		{"latest", "2024-07-01", pypi.ResolveOptions{}, "1.1.0", "1.3.0", nil},
		{"prerelease admits the rc", "2024-08-15", pypi.ResolveOptions{Prerelease: true}, "1.2.0rc1", "1.3.0",
			[]string{"the highest non-yanked release uploaded"}},
		{"yanked admits the yanked release", "2024-10-15", pypi.ResolveOptions{Yanked: true}, "1.2.1", "1.3.0",
			[]string{"the highest final release uploaded"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := pypi.Resolve(context.Background(), idx, pypitest.DemoProject, cutoff(c.cutoff), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Old.Listed != c.old || res.New.Listed != c.new {
				t.Errorf("old %s new %s, want %s %s", res.Old.Listed, res.New.Listed, c.old, c.new)
			}
			for _, w := range c.why {
				if !strings.Contains(res.Why, w) {
					t.Errorf("why %q lacks %q", res.Why, w)
				}
			}
		})
	}
}

// TestResolveWhyNamesNoCutoff: two cutoffs that pick the same releases
// give the same row text, so nothing below version_resolve recomputes.
func TestResolveWhyNamesNoCutoff(t *testing.T) {
	idx := serve(t, pypitest.Demo(nil)...)
	a, err := pypi.Resolve(context.Background(), idx, "lacuna-demo", cutoff("2024-09-02"), pypi.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := pypi.Resolve(context.Background(), idx, "lacuna-demo", cutoff("2024-10-30"), pypi.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Why != b.Why {
		t.Errorf("why differs:\n%s\n%s", a.Why, b.Why)
	}
}

// TestResolveComparesVersionsNotUploadOrder: a backport of the old
// series uploaded after the cutoff is neither v_old nor v_new.
func TestResolveComparesVersionsNotUploadOrder(t *testing.T) {
	idx := serve(t, rel("1.0.0", "2024-01-01"), rel("2.0.0", "2024-05-01"), rel("1.0.1", "2024-07-01"), rel("2.1.0", "2024-08-01"))
	res, err := pypi.Resolve(context.Background(), idx, "lacuna-demo", cutoff("2024-06-01"), pypi.ResolveOptions{New: "first_after"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Old.Listed != "2.0.0" || res.New.Listed != "2.1.0" {
		t.Errorf("old %s new %s, want 2.0.0 2.1.0", res.Old.Listed, res.New.Listed)
	}
	_, err = pypi.Resolve(context.Background(), idx, "lacuna-demo", cutoff("2024-09-01"), pypi.ResolveOptions{})
	if !errors.Is(err, pypi.ErrNoRelease) || !strings.Contains(err.Error(), "nothing is novel") {
		t.Errorf("only a backport after the cutoff: %v", err)
	}
}

// TestResolveGivesUndatableReleasesAReason: a release without files or
// without upload-time is skipped and named in Why; an index that dates
// nothing is an error that names PEP 700.
func TestResolveGivesUndatableReleasesAReason(t *testing.T) {
	empty := rel("1.1.0", "2024-02-01")
	empty.NoFiles = true
	idx := serve(t, rel("1.0.0", "2024-01-01"), empty, rel("1.2.0", ""), rel("1.3.0", "2024-08-01"))
	res, err := pypi.Resolve(context.Background(), idx, "lacuna-demo", cutoff("2024-06-01"), pypi.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Old.Listed != "1.0.0" || res.New.Listed != "1.3.0" {
		t.Errorf("old %s new %s", res.Old.Listed, res.New.Listed)
	}
	for _, w := range []string{"1 no upload-time (1.2.0)", "1 no files (1.1.0)"} {
		if !strings.Contains(res.Why, w) {
			t.Errorf("why %q lacks %q", res.Why, w)
		}
	}
	idx = serve(t, rel("1.0.0", ""), rel("1.1.0", ""))
	_, err = pypi.Resolve(context.Background(), idx, "lacuna-demo", cutoff("2024-06-01"), pypi.ResolveOptions{})
	if err == nil || !strings.Contains(err.Error(), "PEP 700") {
		t.Errorf("an index without upload times: %v", err)
	}
}

func TestResolveFailsWithoutReleasesOnEitherSide(t *testing.T) {
	idx := serve(t, pypitest.Demo(nil)...)
	for date, want := range map[string]string{
		"2023-01-01": "no usable release at or before the cutoff 2023-01-01 (the first, 1.0.0, was uploaded 2024-01-10T12:00:00Z)",
		"2025-01-01": "no usable release after the cutoff 2025-01-01 above 1.3.0",
	} {
		_, err := pypi.Resolve(context.Background(), idx, "lacuna-demo", cutoff(date), pypi.ResolveOptions{})
		if !errors.Is(err, pypi.ErrNoRelease) || !strings.Contains(err.Error(), want) {
			t.Errorf("cutoff %s: %v, want %q", date, err, want)
		}
	}
}

// TestProjectReadsPEP691AndPEP700Fields: names are normalised, relative
// URLs resolved, yanked reasons, core metadata, requires-python and
// upload times read.
func TestProjectReadsPEP691AndPEP700Fields(t *testing.T) {
	r := rel("1.0.0", "2024-01-01")
	r.Yanked, r.YankedReason, r.RequiresPython = true, "bad build", ">=3.9"
	idx := serve(t, r, rel("1.1.0", "2024-02-01"))
	p, err := idx.Project(context.Background(), "Lacuna_Demo")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "lacuna-demo" || p.APIVersion != "1.1" || strings.Join(p.Versions, ",") != "1.0.0,1.1.0" || len(p.Files) != 2 {
		t.Fatalf("project %+v", p)
	}
	f := p.Files[0]
	if !f.Yanked || f.YankedReason != "bad build" || f.RequiresPython != ">=3.9" || !f.CoreMetadata || f.CoreMetadataHashes["sha256"] == "" ||
		f.Hashes["sha256"] == "" || !f.UploadTime.Equal(pypitest.Day("2024-01-01")) || f.Size == 0 ||
		!strings.HasPrefix(f.URL, "http://127.0.0.1:") || !strings.HasSuffix(f.URL, "/files/lacuna_demo-1.0.0-py3-none-any.whl") {
		t.Errorf("file %+v", f)
	}
	if p.Files[1].Yanked {
		t.Error("1.1.0 yanked")
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"Django": "django", "Foo.Bar_baz": "foo-bar-baz", "a--_.b": "a-b", "ruamel.yaml": "ruamel-yaml", "x": "x",
	} {
		if got, err := pypi.Normalize(in); err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-foo", "foo-", "foo/bar", "../x", "a b"} {
		if _, err := pypi.Normalize(bad); err == nil {
			t.Errorf("Normalize(%q) accepted", bad)
		}
	}
}

// TestIndexReportsBadAnswersClearly: each broken index answer is an
// error that says what was wrong.
func TestIndexReportsBadAnswersClearly(t *testing.T) {
	for _, c := range []struct {
		name, ctype, body string
		status            int
		want              string
	}{
		{"404", "text/plain", "no", 404, "not found"},
		{"garbage JSON", "application/vnd.pypi.simple.v1+json", "<html>oops", 200, "not a PEP 691 JSON page"},
		{"JSON without meta", "application/vnd.pypi.simple.v1+json", `{"files":[]}`, 200, "no meta.api-version"},
		{"HTML only", "text/html; charset=utf-8", `<a href="x-1.0.tar.gz">x-1.0.tar.gz</a>`, 200, "PEP 503 HTML API"},
		{"other content type", "application/octet-stream", "zz", 200, `answered "application/octet-stream"`},
		{"API version 2", "application/vnd.pypi.simple.v1+json", `{"meta":{"api-version":"2.0"},"files":[]}`, 200, "simple API version 2.0 is not supported"},
		{"bad upload-time", "application/vnd.pypi.simple.v1+json", `{"meta":{"api-version":"1.1"},"files":[{"filename":"x-1.0.tar.gz","url":"x","upload-time":"yesterday"}]}`, 200, `upload-time "yesterday"`},
		{"bad yanked", "application/vnd.pypi.simple.v1+json", `{"meta":{"api-version":"1.1"},"files":[{"filename":"x-1.0.tar.gz","url":"x","yanked":3}]}`, 200, "neither a boolean nor a string"},
		{"403", "text/plain", "no", 403, "403 Forbidden"},
		{"too large", "application/vnd.pypi.simple.v1+json", `{"meta":{"api-version":"1.1"},"files":[]}` + strings.Repeat(" ", 400), 200, "larger than 300 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Accept") == "" || !strings.Contains(r.Header.Get("Accept"), "application/vnd.pypi.simple.v1+json") {
					t.Errorf("Accept %q", r.Header.Get("Accept"))
				}
				w.Header().Set("Content-Type", c.ctype)
				w.WriteHeader(c.status)
				fmt.Fprint(w, c.body)
			}))
			defer srv.Close()
			idx, err := pypi.NewIndex(srv.URL+"/simple", pypi.WithMaxResponseBytes(300))
			if err != nil {
				t.Fatal(err)
			}
			_, err = idx.Project(context.Background(), "x")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to say %q", err, c.want)
			}
			if c.status == 404 && !errors.Is(err, pypi.ErrNotFound) {
				t.Errorf("404 is not ErrNotFound: %v", err)
			}
		})
	}
}

func TestNewIndexRejectsNonHTTPURLsAndHidesPasswords(t *testing.T) {
	for _, u := range []string{"file:///tmp/simple", "pypi.org/simple", "ftp://x/"} {
		if _, err := pypi.NewIndex(u); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
	idx, err := pypi.NewIndex("https://user:secret@example.com/simple")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(idx.URL(), "secret") || idx.URL() != "https://user:xxxxx@example.com/simple/" {
		t.Errorf("URL %s", idx.URL())
	}
	if _, err := pypi.NewIndex("https://user:secret@exa mple.com/"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("bad URL error %v", err)
	}
}

// TestReleasesGroupFilesByTheVersionInTheirNames: sdists (legacy names
// with hyphens or capitals too), wheels and eggs; the earliest upload
// dates the release; a release is yanked only when every file is.
func TestReleasesGroupFilesByTheVersionInTheirNames(t *testing.T) {
	at := func(s string) time.Time { return pypitest.Day(s) }
	p := &pypi.Project{Name: "python-dateutil", Versions: []string{"2.8.0", "2.9.0.post0", "2.10", "3.0"}, Files: []pypi.File{
		{Filename: "python_dateutil-3.0.0-py3-none-any.whl", UploadTime: at("2025-01-01")},
		{Filename: "python-dateutil-2.8.0.tar.gz", UploadTime: at("2019-02-05")},
		{Filename: "python_dateutil-2.8.0-py2.py3-none-any.whl", UploadTime: at("2019-02-04"), Yanked: true},
		{Filename: "Python-Dateutil-2.9.0.post0.zip", UploadTime: at("2024-03-01"), Yanked: true, YankedReason: "r"},
		{Filename: "python_dateutil-2.9.0.post0-py3.11.egg", UploadTime: at("2024-03-02"), Yanked: true},
		{Filename: "otherpkg-2.10.tar.gz", UploadTime: at("2024-04-01")},
		{Filename: "python-dateutil-9.9.tar.gz", UploadTime: at("2024-04-01")},
	}}
	rels := pypi.Releases(p)
	if len(rels) != 4 {
		t.Fatalf("releases %+v", rels)
	}
	if r := rels[0]; r.Listed != "2.8.0" || r.Files != 2 || !r.Time.Equal(at("2019-02-04")) || r.Yanked || r.Skip != "" {
		t.Errorf("2.8.0: %+v", r)
	}
	if r := rels[1]; r.Listed != "2.9.0.post0" || r.Files != 2 || !r.Yanked || r.YankedReason != "r" {
		t.Errorf("2.9.0.post0: %+v", r)
	}
	if r := rels[2]; r.Listed != "2.10" || r.Files != 0 || r.Skip != "no files" {
		t.Errorf("2.10: %+v", r)
	}
	if r := rels[3]; r.Listed != "3.0" || r.Files != 1 {
		t.Errorf("3.0 (its file spells it 3.0.0): %+v", r)
	}
}

// TestCrossCheckAgainstTheJSONAPI: the fixture's two APIs agree; a
// release the simple API cannot date is a disagreement.
func TestCrossCheckAgainstTheJSONAPI(t *testing.T) {
	idx := serve(t, pypitest.Demo(nil)...)
	ctx := context.Background()
	p, err := idx.Project(ctx, "lacuna-demo")
	if err != nil {
		t.Fatal(err)
	}
	d, err := idx.CrossCheck(ctx, p)
	if err != nil || len(d) != 0 {
		t.Errorf("disagreements %v, %v", d, err)
	}
	idx = serve(t, rel("1.0.0", "2024-01-01"), rel("1.1.0", ""))
	if p, err = idx.Project(ctx, "lacuna-demo"); err != nil {
		t.Fatal(err)
	}
	d, err = idx.CrossCheck(ctx, p)
	if err != nil || len(d) != 1 || d[0].Version != "1.1.0" || !strings.HasPrefix(d[0].What, "first upload none here") {
		t.Errorf("disagreements %v, %v", d, err)
	}
	p.Versions = append(p.Versions, "9.0")
	d, _ = idx.CrossCheck(ctx, p)
	if len(d) != 2 || d[1].Version != "9.0" || d[1].What != "absent from the JSON API" {
		t.Errorf("a release only the simple API has: %v", d)
	}
}

func TestJSONAPIBesideTheSimpleAPI(t *testing.T) {
	for in, want := range map[string]string{
		"https://pypi.org/simple/":                 "https://pypi.org/pypi/",
		"https://test.pypi.org/simple":             "https://test.pypi.org/pypi/",
		"https://mirror.example/root/pypi/simple/": "https://mirror.example/root/pypi/pypi/",
		"https://example.com/index/":               "",
	} {
		idx, err := pypi.NewIndex(in)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := idx.JSONAPI()
		if got != want || ok != (want != "") {
			t.Errorf("%s: %q %v, want %q", in, got, ok, want)
		}
	}
}
