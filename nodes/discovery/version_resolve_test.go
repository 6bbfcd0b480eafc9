package discovery_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/discovery"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/runners/modfetch/proxytest"

	_ "github.com/lacuna-dev/lacuna/nodes/generic"
)

const pipeline = `
model "m" {
  id     = "example/model"
  cutoff = "CUTOFF"
}
library "lib" {
  ecosystem = "go"
  name      = "example.com/lib"
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

func run(t *testing.T, dir, cutoff string) map[string]*engine.Result {
	t.Helper()
	return nodetest.Run(t, dir, strings.Replace(pipeline, "CUTOFF", cutoff, 1)).Nodes
}

func TestVersionResolveThroughAFileProxy(t *testing.T) {
	proxy, dir := t.TempDir(), t.TempDir()
	if err := proxytest.Write(proxy, "example.com/lib", map[string]string{
		"v1.0.0": "2023-01-10", "v1.1.0": "2024-03-01", "v1.2.0": "2024-09-01",
	}, "module example.com/lib\n"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOPROXY", "file://"+proxy)

	run1 := nodetest.Run(t, dir, strings.Replace(pipeline, "CUTOFF", "2024-06-01", 1))
	st, res := run1.Store, run1.Nodes
	rd, err := st.Open(res["node.version_resolve.lib"].Output)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := artifacts.ReadAll[discovery.VersionRow](rd)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].VOld != "v1.1.0" || rows[0].VNew != "v1.2.0" || rows[0].VOldTime.Format("2006-01-02") != "2024-03-01" || rows[0].Why == "" {
		t.Errorf("row %+v", rows)
	}
	// Another model whose cutoff picks the same versions: version_resolve
	// re-runs, everything below it is reused.
	res = run(t, dir, "2024-07-15")
	if res["node.version_resolve.lib"].State != "done" || res["node.filter.downstream"].State != "cached" {
		t.Errorf("same effective versions: resolve %s, downstream %s", res["node.version_resolve.lib"].State, res["node.filter.downstream"].State)
	}
	// A new upstream release changes the version list, so the key.
	if err := proxytest.Write(proxy, "example.com/lib", map[string]string{
		"v1.0.0": "2023-01-10", "v1.1.0": "2024-03-01", "v1.2.0": "2024-09-01", "v1.3.0": "2024-11-01",
	}, "module example.com/lib\n"); err != nil {
		t.Fatal(err)
	}
	res = run(t, dir, "2024-07-15")
	if res["node.filter.downstream"].State != "done" {
		t.Error("a new release did not re-resolve")
	}
}

// TestVersionResolveRejectsBadConfig: each case is one node with one
// problem, reported at the attribute that has it.
func TestVersionResolveRejectsBadConfig(t *testing.T) {
	for _, c := range []struct {
		name      string
		ecosystem string
		attrs     string // the node's attributes besides library
		summary   string
		at        string // the source text the diagnostic points at
	}{
		{"cutoff not a date", "go", `cutoff = "June 2024"`, "Invalid cutoff", `"June 2024"`},
		{"unknown new", "go", "cutoff = \"2024-06-01\"\n  new = \"oldest\"", "Invalid choice of v_new", `"oldest"`},
		{"ecosystem not supported", "npm", `cutoff = "2024-06-01"`, "Ecosystem not supported yet", "library.lib"},
		{"yanked on Go", "go", "cutoff = \"2024-06-01\"\n  yanked = true", "Not for Go", "true"},
		{"follow_major on Python", "python", "cutoff = \"2024-06-01\"\n  follow_major = true", "Not for Python", "true"},
		{"retracted on Python", "python", "cutoff = \"2024-06-01\"\n  retracted = true", "Not for Python", "true"},
		{"not a Python project name", "python", `cutoff = "2024-06-01"`, "Invalid Python project name", "library.lib"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := `
library "lib" {
  ecosystem = "` + c.ecosystem + `"
  name      = "example.com/lib"
}
node "version_resolve" "v" {
  library = library.lib
  ` + c.attrs + `
}
`
			cfg, diags := engine.LoadSource("p.hcl", []byte(src), t.TempDir())
			if !diags.HasErrors() {
				_, diags = engine.Expand(cfg, engine.Options{})
			}
			if len(diags) != 1 {
				t.Fatalf("want one diagnostic, got %v", diags)
			}
			d := diags[0]
			if d.Summary != c.summary {
				t.Errorf("summary %q, want %q", d.Summary, c.summary)
			}
			if d.Subject == nil || string(d.Subject.SliceBytes([]byte(src))) != c.at {
				t.Errorf("points at %v, want %q", d.Subject, c.at)
			}
		})
	}
}

// A release published between the key's version list and the node's run
// must not end up in rows cached under the old list's key: the proxy here
// publishes v1.3.0 right after its list is first read.
func TestVersionResolveRunsOnTheListItsKeyHolds(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	if err := proxytest.Write(root, "example.com/lib", map[string]string{
		"v1.0.0": "2023-01-10", "v1.1.0": "2024-03-01", "v1.2.0": "2024-09-01",
	}, "module example.com/lib\n"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	files := http.FileServer(http.Dir(root))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		files.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/@v/list") {
			once.Do(func() {
				if err := proxytest.Write(root, "example.com/lib", map[string]string{
					"v1.0.0": "2023-01-10", "v1.1.0": "2024-03-01", "v1.2.0": "2024-09-01", "v1.3.0": "2024-10-01",
				}, "module example.com/lib\n"); err != nil {
					t.Error(err)
				}
			})
		}
	}))
	defer srv.Close()
	t.Setenv("GOPROXY", srv.URL)

	vnew := func(res map[string]*engine.Result, st *artifacts.Store) string {
		t.Helper()
		rd, err := st.Open(res["node.version_resolve.lib"].Output)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := artifacts.ReadAll[discovery.VersionRow](rd)
		if err != nil || len(rows) != 1 {
			t.Fatalf("rows %v: %v", rows, err)
		}
		return rows[0].VNew
	}
	first := nodetest.Run(t, dir, strings.Replace(pipeline, "CUTOFF", "2024-06-01", 1))
	if got := vnew(first.Nodes, first.Store); got != "v1.2.0" {
		t.Fatalf("first run: v_new %s, want v1.2.0 (the newest in the list its key was computed from)", got)
	}
	second := nodetest.Run(t, dir, strings.Replace(pipeline, "CUTOFF", "2024-06-01", 1))
	if second.Nodes["node.version_resolve.lib"].State == "cached" {
		t.Fatal("the new release did not change the key")
	}
	if got := vnew(second.Nodes, second.Store); got != "v1.3.0" {
		t.Fatalf("second run: v_new %s, want v1.3.0", got)
	}
}
