package main

import (
	"encoding/json"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/modfetch/proxytest"
)

const shapesPipeline = nodetest.ShapesHead + `node "surface_diff" "shapes" { versions = node.version_resolve.shapes }
node "bundle" "shapes" { apis = node.surface_diff.shapes }
`

// Nodes that build and run code carry the toolchain in their keys: a go
// command reporting another version, or another GOFLAGS, recomputes them,
// and plan says which identity changed, from what to what. The go command
// here is a wrapper around the real one that can claim another version.
func TestToolchainChangeRecomputesWhatItBuilt(t *testing.T) {
	realGo, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(realGo, "env", "GOVERSION", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(out))
	version, gocache := lines[0], lines[1]

	bin := t.TempDir()
	wrapper := `#!/bin/sh
if [ -n "$FAKE_GOVERSION" ] && [ "$1" = env ]; then
  "` + realGo + `" "$@" | sed "s/` + version + `/$FAKE_GOVERSION/"
  exit 0
fi
exec "` + realGo + `" "$@"
`
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	proxy, dir := t.TempDir(), t.TempDir()
	if err := proxytest.WriteShapes(proxy); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.hcl"), []byte(shapesPipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("GOPROXY", "file://"+proxy)
	t.Setenv("GOSUMDB", "off")
	t.Setenv("GOFLAGS", "")
	t.Setenv("LACUNA_GOCACHE", gocache)

	if r := lacuna(t, dir, "run", "p.hcl"); r.code != 0 {
		t.Fatalf("run: %s%s", r.stdout, r.stderr)
	}
	plan := func(t *testing.T) map[string]map[string]any {
		t.Helper()
		r := lacuna(t, dir, "plan", "--json", "p.hcl")
		if r.code != 0 {
			t.Fatalf("plan: %s%s", r.stdout, r.stderr)
		}
		var doc struct{ Nodes []map[string]any }
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("plan --json: %v\n%s", err, r.stdout)
		}
		m := map[string]map[string]any{}
		for _, e := range doc.Nodes {
			m[e["node"].(string)] = e
		}
		return m
	}
	for _, tc := range []struct {
		name, env, value string
		want             string // the bundle's reason; "" = cached
	}{
		{"same toolchain", "", "", ""},
		{"go upgraded", "FAKE_GOVERSION", "go1.99.0", "identity changed: toolchain " + version + " → go1.99.0"},
		{"GOFLAGS", "GOFLAGS", "-tags=lacunatest", "identity changed: go.GOFLAGS -mod=mod -modcacherw → -tags=lacunatest -mod=mod -modcacherw"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv(tc.env, tc.value)
			}
			p := plan(t)
			for _, n := range []string{"node.version_resolve.shapes", "node.surface_diff.shapes"} {
				if p[n]["status"] != "cached" {
					t.Errorf("%s: %v (builds nothing; the toolchain is not its identity)", n, p[n])
				}
			}
			b := p["node.bundle.shapes"]
			switch {
			case tc.want == "" && b["status"] != "cached":
				t.Errorf("bundle: %v, want cached", b)
			case tc.want != "" && (b["status"] != "run" || b["reason"] != tc.want):
				t.Errorf("bundle: %v, want run because %q", b, tc.want)
			}
		})
	}
}

// What a node read outside the pipeline and what it wrote into its rows
// are in its key: an imported file edited and reverted gives back the
// rows of each content, and a renamed node never leaves its old name in
// the rows a concat's source_column wrote.
func TestKeysFollowFilesAndNames(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pipeline := func(name string) string {
		return strings.ReplaceAll(`
node "import" "NAME" { path = "t.jsonl" }
node "concat" "all" {
  inputs        = [node.import.NAME]
  source_column = "from"
}`, "NAME", name)
	}
	cat := func() string {
		t.Helper()
		r := lacuna(t, dir, "cat", "p.hcl", "node.concat.all", "--format", "jsonl")
		if r.code != 0 {
			t.Fatalf("cat: %s", r.stderr)
		}
		return strings.TrimSpace(r.stdout)
	}
	steps := []struct {
		name, file, want string
	}{
		{"a", `{"x": 1}`, `{"from":"node.import.a","x":1}`},
		{"a", `{"x": 2}`, `{"from":"node.import.a","x":2}`},
		{"a", `{"x": 1}`, `{"from":"node.import.a","x":1}`}, // reverted: the first rows again
		{"b", `{"x": 1}`, `{"from":"node.import.b","x":1}`}, // renamed: the new name
	}
	for i, s := range steps {
		write("t.jsonl", s.file+"\n")
		write("p.hcl", pipeline(s.name))
		if r := lacuna(t, dir, "run", "p.hcl"); r.code != 0 {
			t.Fatalf("step %d: run: %s%s", i, r.stdout, r.stderr)
		}
		if got := cat(); got != s.want {
			t.Errorf("step %d: rows %s, want %s", i, got, s.want)
		}
	}
}
