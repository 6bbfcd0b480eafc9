package gotool

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// TestAnOfflineBuildAsksNoProxyForAnAnswersImport: a unit importing a
// package no module in the build list provides asks the proxy for it in
// an online build (and with ",direct" would next ask the host it names);
// Offline, the build asks nothing and the unit fails to compile with the
// go command's "module lookup disabled by GOPROXY=off".
func TestAnOfflineBuildAsksNoProxyForAnAnswersImport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	var mu sync.Mutex
	var asked []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer proxy.Close()
	sb, err := sandbox.New()
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOPROXY="+proxy.URL, "GOSUMDB=off")
	tc, err := NewToolchain(t.TempDir(), Options{Environ: env, GoCache: sharedBuildCache(t)})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := tc.NewWorkspace(sb, "offline", sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_, _, mod := workspace(t)
	units := []Unit{
		testUnit("func Test_u0(t *testing.T) {}\n"),
		testUnit("func Test_u1(t *testing.T) { x.F() }\n", "evil.example.com/x"),
	}
	for _, offline := range []bool{false, true} {
		mu.Lock()
		asked = nil
		mu.Unlock()
		built, err := tc.BuildBatch(context.Background(), mod, units, ws.BatchOptions(TestOptions{Offline: offline}))
		if err != nil {
			t.Fatal(err)
		}
		u0, u1 := built.Units[0], built.Units[1]
		built.Close()
		if u0.CompileError != "" || u1.CompileError == "" {
			t.Fatalf("offline %v: unit 0 %q, unit 1 %q: want only unit 1 not to compile", offline, u0.CompileError, u1.CompileError)
		}
		mu.Lock()
		evil := 0
		for _, p := range asked {
			if strings.Contains(p, "evil.example.com") {
				evil++
			}
		}
		mu.Unlock()
		switch {
		case !offline && evil == 0:
			t.Errorf("online: the proxy was not asked for evil.example.com (asked %v): the test shows nothing", asked)
		case offline && evil > 0:
			t.Errorf("offline: the proxy was asked %v", asked)
		case offline && !strings.Contains(u1.CompileError, "module lookup disabled by GOPROXY=off"):
			t.Errorf("offline: unit 1's error %q", u1.CompileError)
		}
	}
}
