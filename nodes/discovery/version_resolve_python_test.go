package discovery_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/nodes/discovery"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/runners/pypi"
	"github.com/lacuna-dev/lacuna/runners/pypi/pypitest"
)

const pythonPipeline = `
model "m" {
  id     = "example/model"
  cutoff = "CUTOFF"
}
library "lib" {
  ecosystem = "python"
  name      = "NAME"
}
node "version_resolve" "lib" {
  library = library.lib
  cutoff  = model.m.cutoff
}
node "filter" "downstream" {
  input = node.version_resolve.lib
  where = true
}
`

func runPython(t *testing.T, dir, name, cutoff string) *nodetest.Result {
	t.Helper()
	return nodetest.Run(t, dir, strings.NewReplacer("CUTOFF", cutoff, "NAME", name).Replace(pythonPipeline))
}

func row(t *testing.T, r *nodetest.Result) discovery.VersionRow {
	t.Helper()
	rows := nodetest.Read[discovery.VersionRow](t, r, "node.version_resolve.lib")
	if len(rows) != 1 {
		t.Fatalf("rows %+v", rows)
	}
	return rows[0]
}

// useIndex points the run's installer environment at url (PIP_INDEX_URL
// wins over the uv variables).
func useIndex(t *testing.T, url string) {
	t.Setenv("PIP_INDEX_URL", url)
	t.Setenv("UV_INDEX_URL", "")
	t.Setenv("UV_DEFAULT_INDEX", "")
}

// TestVersionResolvePythonThroughALoopbackIndex: the demo project holds
// 1.0.0, 1.1.0, 1.2.0rc1, 1.2.0, 1.2.1 (yanked), 1.3.0.
func TestVersionResolvePythonThroughALoopbackIndex(t *testing.T) {
	ix := pypitest.NewIndex()
	if err := ix.Publish(pypitest.DemoProject, pypitest.Demo(nil)...); err != nil {
		t.Fatal(err)
	}
	useIndex(t, pypitest.Serve(t, ix))
	dir := t.TempDir()

	got := row(t, runPython(t, dir, "Lacuna_Demo", "2024-09-19"))
	if got.Library != "Lacuna_Demo" || got.Ecosystem != "python" || got.VOld != "1.2.0" || got.VNew != "1.3.0" || got.VNewModule != "lacuna-demo" ||
		!got.VOldTime.Equal(pypitest.Day("2024-09-01")) || !got.VNewTime.Equal(pypitest.Day("2024-11-01")) ||
		!strings.Contains(got.Why, "1.2.0: the highest non-yanked final release") || !strings.Contains(got.Why, "1 yanked (1.2.1)") {
		t.Errorf("row %+v", got)
	}
	// Another cutoff that picks the same releases: nothing below re-runs.
	res := runPython(t, dir, "Lacuna_Demo", "2024-10-20").Nodes
	if res["node.version_resolve.lib"].State != "done" || res["node.filter.downstream"].State != "cached" {
		t.Errorf("same releases: resolve %s, downstream %s", res["node.version_resolve.lib"].State, res["node.filter.downstream"].State)
	}
	// A yank changes the page, so the key and v_new.
	yanked := pypitest.Demo(nil)[5]
	yanked.Yanked = true
	if err := ix.Publish(pypitest.DemoProject, yanked); err != nil {
		t.Fatal(err)
	}
	r := runPython(t, dir, "Lacuna_Demo", "2024-07-01")
	if got := row(t, r); got.VOld != "1.1.0" || got.VNew != "1.2.0" {
		t.Errorf("after yanking 1.3.0: %s → %s, want 1.1.0 → 1.2.0", got.VOld, got.VNew)
	}
	// Unchanged page, same cutoff: cached.
	if s := runPython(t, dir, "Lacuna_Demo", "2024-07-01").Nodes["node.version_resolve.lib"].State; s != "cached" {
		t.Errorf("unchanged page: %s, want cached", s)
	}
}

// A release published between the key's page and the node's run must not
// end up in rows cached under the old page's key.
func TestVersionResolvePythonRunsOnThePageItsKeyHolds(t *testing.T) {
	ix := pypitest.NewIndex()
	if err := ix.Publish(pypitest.DemoProject, pypitest.Demo(nil)...); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ix.ServeHTTP(w, r)
		if strings.HasPrefix(r.URL.Path, "/simple/") {
			once.Do(func() {
				if err := ix.Publish(pypitest.DemoProject, pypitest.Release{Version: "1.4.0", Uploaded: pypitest.Day("2024-12-01"), Files: map[string]string{"lacuna_demo/__init__.py": ""}}); err != nil {
					t.Error(err)
				}
			})
		}
	}))
	defer srv.Close()
	useIndex(t, srv.URL+"/simple/")
	dir := t.TempDir()
	if got := row(t, runPython(t, dir, "lacuna-demo", "2024-09-19")); got.VNew != "1.3.0" {
		t.Fatalf("first run: v_new %s, want 1.3.0 (the newest on the page its key was computed from)", got.VNew)
	}
	second := runPython(t, dir, "lacuna-demo", "2024-09-19")
	if second.Nodes["node.version_resolve.lib"].State == "cached" {
		t.Fatal("the new release did not change the key")
	}
	if got := row(t, second); got.VNew != "1.4.0" {
		t.Fatalf("second run: v_new %s, want 1.4.0", got.VNew)
	}
}

// TestVersionResolvePythonFailsClearlyOnBadIndexes: the node fails with
// the index's fault in its error.
func TestVersionResolvePythonFailsClearlyOnBadIndexes(t *testing.T) {
	ix := pypitest.NewIndex()
	if err := ix.Publish(pypitest.DemoProject, pypitest.Release{Version: "1.0.0", Files: map[string]string{"lacuna_demo/__init__.py": ""}}); err != nil {
		t.Fatal(err)
	}
	fixture := pypitest.Serve(t, ix)
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.pypi.simple.v1+json")
		w.Write([]byte("]]"))
	}))
	defer garbage.Close()
	for _, c := range []struct{ name, index, project, want string }{
		{"unknown project", fixture, "no-such-project", "not found"},
		{"garbage page", garbage.URL + "/simple/", "lacuna-demo", "not a PEP 691 JSON page"},
		{"no upload times", fixture, "lacuna-demo", "PEP 700"},
	} {
		t.Run(c.name, func(t *testing.T) {
			useIndex(t, c.index)
			src := strings.NewReplacer("CUTOFF", "2024-09-19", "NAME", c.project).Replace(pythonPipeline)
			r := nodetest.RunErr(t, t.TempDir(), src)
			res := r.Nodes["node.version_resolve.lib"]
			if res.Err == nil || !strings.Contains(res.Err.Error(), c.want) {
				t.Errorf("error %v, want it to say %q", res.Err, c.want)
			}
		})
	}
}

// TestVersionResolvePythonOnRealPyPI resolves pydantic at 2024-09-19 on
// pypi.org. Opt-in: it needs the network (LACUNA_TEST_NET=1). It checks
// the chosen releases' sides of the cutoff, not which they are.
func TestVersionResolvePythonOnRealPyPI(t *testing.T) {
	if os.Getenv("LACUNA_TEST_NET") == "" {
		t.Skip("set LACUNA_TEST_NET=1 to use pypi.org")
	}
	useIndex(t, "")
	got := row(t, runPython(t, t.TempDir(), "pydantic", "2024-09-19"))
	cutoff := time.Date(2024, 9, 20, 0, 0, 0, 0, time.UTC)
	if got.VOldTime.IsZero() || !got.VOldTime.Before(cutoff) || !got.VNewTime.After(cutoff) {
		t.Errorf("pydantic %s (%s) → %s (%s): not on the two sides of 2024-09-19", got.VOld, got.VOldTime, got.VNew, got.VNewTime)
	}
	vo, err1 := pypi.ParseVersion(got.VOld)
	vn, err2 := pypi.ParseVersion(got.VNew)
	if err1 != nil || err2 != nil || pypi.Compare(vo, vn) >= 0 || vo.IsPrerelease() || vn.IsPrerelease() {
		t.Errorf("pydantic %s → %s: want two final releases in rising order", got.VOld, got.VNew)
	}
	t.Logf("pydantic: %s", got.Why)
}
