package pipelines_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/artifacts"
)

var updateKeys = flag.Bool("update-keys", false, "rewrite testdata/keys/*.txt from this run's action keys")

// checkKeys records what every instance's action key is made of after a
// full run of file, and compares it with testdata/keys/NAME.txt: the node
// type, its logic version, the canonical config (its input digests named by
// the instance that produced them, loopback ports and temporary directories elided, then hashed) and
// the pinned identity. actionKey hashes exactly these with the input
// digests, so a move of code between packages, or any change that should
// leave a node type's rows alone, is proved to keep every user's keys
// (upstream rows being equal). A change that means to recompute a type
// bumps its version and rewrites the file with -update-keys; the file's
// diff then names exactly the instances whose keys moved.
//
// The identity (the go command, the sandbox, the interpreter) differs
// between machines: when any recorded identity is not this machine's, the
// file is not held to (the test logs it), so only a change of lacuna's own
// making fails the test.
func checkKeys(t *testing.T, st *artifacts.Store, file string, vars map[string]string, name string) {
	t.Helper()
	got := map[string]keyLine{}
	for _, e := range planEntries(t, st, file, vars) {
		if e.Key == "" {
			t.Errorf("%s: no key after a full run (%s: %s)", e.Node, e.Status, e.Reason)
			continue
		}
		a, err := st.GetAction(e.Key)
		if err != nil {
			t.Fatalf("%s: %v", e.Node, err)
		}
		config := string(a.Config)
		for _, in := range a.Inputs {
			config = strings.ReplaceAll(config, string(in.Digest), "<"+in.Node+">")
		}
		id, err := json.Marshal(a.Identity) // map keys sorted
		if err != nil {
			t.Fatal(err)
		}
		got[e.Node] = keyLine{
			shape:    a.Type + " v" + a.Version + " config " + fmt.Sprintf("%016x", xxhash.Sum64String(normalize(config))),
			identity: normalize(string(id)),
		}
	}
	path := filepath.Join("testdata", "keys", name+".txt")
	if *updateKeys {
		nodes := make([]string, 0, len(got))
		for n := range got {
			nodes = append(nodes, n)
		}
		sort.Strings(nodes)
		var b strings.Builder
		b.WriteString("# instance\ttype, version, config hash\tpinned identity (written by go test ./pipelines -update-keys)\n")
		for _, n := range nodes {
			b.WriteString(n + "\t" + got[n].shape + "\t" + got[n].identity + "\n")
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with -update-keys)", err)
	}
	want := map[string]keyLine{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.SplitN(l, "\t", 3)
		if len(f) != 3 {
			t.Fatalf("%s: bad line %q", path, l)
		}
		want[f[0]] = keyLine{f[1], f[2]}
	}
	foreign := 0
	for n, w := range want {
		if g, ok := got[n]; ok && g.identity != w.identity {
			foreign++
		}
	}
	for n, w := range want {
		g, ok := got[n]
		switch {
		case !ok:
			t.Errorf("%s: recorded in %s, not in the pipeline now", n, path)
		case g.shape != w.shape && foreign == 0:
			t.Errorf("%s: key made of %s, recorded %s: a node type changed without -update-keys", n, g.shape, w.shape)
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("%s: not recorded in %s (rewrite it with -update-keys)", n, path)
		}
	}
	if foreign > 0 {
		t.Logf("keys not held to %s: %d of %d instances were recorded under another identity (toolchain, sandbox); -update-keys rewrites it on this machine", path, foreign, len(want))
	}
}

// keyLine is what an instance's action key is made of, but for the input
// digests.
type keyLine struct{ shape, identity string }

// loopback and tempDir match what differs between runs of one test: the
// scripted servers' ports and the test's temporary directory.
var (
	loopback = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)
	tempDir  = regexp.MustCompile(regexp.QuoteMeta(os.TempDir()) + `/[^/"]+/[0-9]+`)
)

// normalize elides what differs between runs of one test.
func normalize(s string) string {
	return tempDir.ReplaceAllString(loopback.ReplaceAllString(s, "127.0.0.1:PORT"), "TMP")
}
