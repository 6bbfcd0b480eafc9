package modfetch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/modfetch/proxytest"
)

func fixture(t *testing.T, root, mod string, versions map[string]string, gomod string) {
	t.Helper()
	if err := proxytest.Write(root, mod, versions, gomod); err != nil {
		t.Fatal(err)
	}
}

func day(s string) time.Time { t, _ := time.Parse("2006-01-02", s); return t }

func TestResolvePicksVersionsAroundTheCutoff(t *testing.T) {
	root := t.TempDir()
	fixture(t, root, "example.com/lib", map[string]string{
		"v1.0.0": "2023-01-10", "v1.1.0": "2023-06-01", "v1.2.0-rc.1": "2024-01-05",
		"v1.2.0": "2024-03-01", "v1.3.0": "2024-08-01", "v1.4.0": "2024-10-01",
	}, "module example.com/lib\n\nretract v1.3.0 // broken release\n")
	p, err := ParseGOPROXY("file://" + root)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		opts     ResolveOptions
		old, new string
	}{
		{ResolveOptions{}, "v1.1.0", "v1.4.0"},
		{ResolveOptions{New: "first_after"}, "v1.1.0", "v1.2.0"},
		{ResolveOptions{Prerelease: true, New: "first_after"}, "v1.2.0-rc.1", "v1.2.0"}, // the rc came out before the cutoff
		{ResolveOptions{Retracted: true, New: "first_after"}, "v1.1.0", "v1.2.0"},
	}
	for _, c := range cases {
		r, err := Resolve(context.Background(), p, "example.com/lib", day("2024-01-15"), c.opts)
		if err != nil {
			t.Fatalf("%+v: %v", c.opts, err)
		}
		if r.Old.Version != c.old || r.New.Version != c.new {
			t.Errorf("%+v: got %s → %s, want %s → %s (%s)", c.opts, r.Old.Version, r.New.Version, c.old, c.new, r.Why)
		}
	}
	r, _ := Resolve(context.Background(), p, "example.com/lib", day("2024-09-01"), ResolveOptions{New: "first_after"})
	if r.Old.Version != "v1.2.0" || !strings.Contains(r.Why, "1 retracted") {
		t.Errorf("retracted v1.3.0 must not be chosen: %s → %s (%s)", r.Old.Version, r.New.Version, r.Why)
	}
	if _, err := Resolve(context.Background(), p, "example.com/lib", day("2025-01-01"), ResolveOptions{}); err == nil || !strings.Contains(err.Error(), "nothing is novel") {
		t.Errorf("cutoff after the newest release: %v", err)
	}
}

func TestResolveSearchesInsteadOfFetchingEveryVersion(t *testing.T) {
	root := t.TempDir()
	versions := map[string]string{}
	start := day("2020-01-01")
	for i := 0; i < 300; i++ {
		versions[fmt.Sprintf("v1.%d.0", i)] = start.AddDate(0, 0, 3*i).Format("2006-01-02")
	}
	fixture(t, root, "github.com/BurntSushi/toml", versions, "module github.com/BurntSushi/toml\n")
	p, _ := ParseGOPROXY("file://" + root)
	r, err := Resolve(context.Background(), p, "github.com/BurntSushi/toml", day("2021-01-01"), ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Old.Version != "v1.121.0" || r.New.Version != "v1.299.0" { // v1.122.0 is out at noon on the cutoff day
		t.Errorf("got %s → %s", r.Old.Version, r.New.Version)
	}
	if r.Requests > 16 {
		t.Errorf("%d .info requests for 300 versions; want a search, not a scan", r.Requests)
	}
}

func TestProxyChainsAndErrors(t *testing.T) {
	empty, full := t.TempDir(), t.TempDir()
	fixture(t, full, "example.com/m", map[string]string{"v0.1.0": "2023-01-01", "v0.2.0": "2024-06-01"}, "module example.com/m\n")
	p, err := ParseGOPROXY("file://" + empty + ",file://" + full + ",direct")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := Resolve(context.Background(), p, "example.com/m", day("2024-01-01"), ResolveOptions{}); err != nil || r.New.Version != "v0.2.0" {
		t.Errorf("fallback to the second proxy: %v %v", r, err)
	}
	untagged := t.TempDir()
	fixture(t, untagged, "example.com/untagged", map[string]string{}, "")
	pu, _ := ParseGOPROXY("file://" + untagged)
	if _, err := Resolve(context.Background(), pu, "example.com/untagged", day("2024-01-01"), ResolveOptions{}); !errors.Is(err, ErrUntagged) {
		t.Errorf("untagged module: %v", err)
	}
	if _, err := ParseGOPROXY("direct"); err == nil {
		t.Error("GOPROXY=direct accepted")
	}
	off, _ := ParseGOPROXY("off")
	if _, err := off.List(context.Background(), "example.com/m"); err == nil || !strings.Contains(err.Error(), "GOPROXY=off") {
		t.Errorf("GOPROXY=off: %v", err)
	}
	if _, err := ParseGOPROXY("ftp://x"); err == nil {
		t.Error("ftp proxy accepted")
	}
}

func TestHTTPProxyRetriesServerErrors(t *testing.T) {
	root := t.TempDir()
	fixture(t, root, "example.com/m", map[string]string{"v0.1.0": "2023-01-01", "v0.2.0": "2024-06-01"}, "module example.com/m\n")
	var hits, fails int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		if hits == 1 {
			fails++
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		http.FileServer(http.Dir(root)).ServeHTTP(w, r)
	}))
	defer srv.Close()
	p, _ := ParseGOPROXY(srv.URL)
	r, err := Resolve(context.Background(), p, "example.com/m", day("2024-01-01"), ResolveOptions{})
	if err != nil || r.Old.Version != "v0.1.0" || fails != 1 {
		t.Errorf("resolution over HTTP after a 503: %+v %v (fails %d)", r, err, fails)
	}
	if _, err := p.List(context.Background(), "example.com/absent"); !errors.Is(err, ErrNotFound) {
		t.Errorf("absent module: %v", err)
	}
}

func TestResolveFollowsMajorVersionsAndKeepsIncompatible(t *testing.T) {
	root := t.TempDir()
	fixture(t, root, "example.com/lib", map[string]string{
		"v1.0.0": "2023-01-10", "v1.1.0": "2024-01-05", "v3.0.0+incompatible": "2024-02-01",
	}, "module example.com/lib\n")
	fixture(t, root, "example.com/lib/v2", map[string]string{"v2.0.0": "2024-09-01", "v2.1.0": "2025-01-10"}, "module example.com/lib/v2\n")
	fixture(t, root, "example.com/lib/v3", map[string]string{"v3.0.0-beta.1": "2025-03-01"}, "module example.com/lib/v3\n")
	p, err := ParseGOPROXY("file://" + root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// +incompatible versions are releases of the module itself.
	r, err := Resolve(ctx, p, "example.com/lib", day("2024-01-20"), ResolveOptions{})
	if err != nil || r.Old.Version != "v1.1.0" || r.New.Version != "v3.0.0+incompatible" || r.NewModule != "example.com/lib" {
		t.Fatalf("incompatible: %+v %v", r, err)
	}
	if _, err := Resolve(ctx, p, "example.com/lib", day("2024-06-01"), ResolveOptions{}); err == nil || !strings.Contains(err.Error(), "nothing is novel") {
		t.Errorf("without follow_major the v2 module is another module: %v", err)
	}
	for _, c := range []struct {
		opts    ResolveOptions
		mod, nv string
	}{
		{ResolveOptions{FollowMajor: true}, "example.com/lib/v2", "v2.1.0"}, // v3 has only a pre-release
		{ResolveOptions{FollowMajor: true, New: "first_after"}, "example.com/lib/v2", "v2.0.0"},
		{ResolveOptions{FollowMajor: true, Prerelease: true}, "example.com/lib/v3", "v3.0.0-beta.1"},
	} {
		r, err := Resolve(ctx, p, "example.com/lib", day("2024-06-01"), c.opts)
		if err != nil {
			t.Fatalf("%+v: %v", c.opts, err)
		}
		if r.Old.Version != "v3.0.0+incompatible" || r.NewModule != c.mod || r.New.Version != c.nv {
			t.Errorf("%+v: %s → %s@%s, want %s@%s (%s)", c.opts, r.Old.Version, r.NewModule, r.New.Version, c.mod, c.nv, r.Why)
		}
	}
	for in, want := range map[string]string{"example.com/lib": "example.com/lib/v2", "example.com/lib/v2": "example.com/lib/v3", "gopkg.in/yaml.v3": ""} {
		if got := NextMajor(in); got != want {
			t.Errorf("NextMajor(%s) = %q, want %q", in, got, want)
		}
	}
}
