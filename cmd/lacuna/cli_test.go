package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/bench/dag"
)

// The tests here run the real binary, as users and scripts do.
var lacunaBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lacuna-bin")
	if err != nil {
		panic(err)
	}
	lacunaBin = filepath.Join(dir, "lacuna")
	out, err := exec.Command("go", "build", "-o", lacunaBin, ".").CombinedOutput()
	if err != nil {
		panic("build: " + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

func lacuna(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(lacunaBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LACUNA_STORE=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

// summary parses the last line of `run --json`.
func summary(t *testing.T, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil || m["event"] != "summary" {
		t.Fatalf("last line is not a summary: %q (%v)", lines[len(lines)-1], err)
	}
	return m
}

func benchDAG(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	if err := dag.Write(dir, n, dag.Blocks); err != nil {
		t.Fatal(err)
	}
	return dir
}

// digests maps every node to its output digest, from `plan --json`.
func digests(t *testing.T, dir string, extra ...string) map[string]string {
	t.Helper()
	r := lacuna(t, dir, append([]string{"plan", "pipeline.hcl", "--json"}, extra...)...)
	var plan struct {
		Nodes []struct{ Node, Status, Digest string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatalf("plan --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	m := map[string]string{}
	for _, n := range plan.Nodes {
		if n.Status != "cached" {
			t.Errorf("%s is %s after a complete run", n.Node, n.Status)
		}
		m[n.Node] = n.Digest
	}
	return m
}

func TestRunJSONEndsWithSummary(t *testing.T) {
	dir := benchDAG(t, 20)
	r := lacuna(t, dir, "run", "pipeline.hcl", "--json", "-j", "2")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	s := summary(t, r.stdout)
	if s["executed"] != 22.0 || s["cached"] != 0.0 || s["failed"] != 0.0 || s["skipped"] != 0.0 {
		t.Errorf("first run summary %v", s)
	}
	s = summary(t, lacuna(t, dir, "run", "pipeline.hcl", "--json").stdout)
	if s["executed"] != 0.0 || s["cached"] != 22.0 {
		t.Errorf("second run summary %v", s)
	}
	// The plain output, as a log reads it.
	r = lacuna(t, dir, "run", "pipeline.hcl")
	if !strings.Contains(r.stdout, "0 executed, 22 cached, 0 failed, 0 skipped") {
		t.Errorf("plain output: %q", r.stdout)
	}
}

func TestKill9MidRunResumesWithSameDigests(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000-node run")
	}
	dir := benchDAG(t, 1000)
	ref := t.TempDir() // an uninterrupted run, for comparison
	for _, f := range []string{"pipeline.hcl", "data.jsonl"} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		os.WriteFile(filepath.Join(ref, f), b, 0o644)
	}
	if r := lacuna(t, ref, "run", "pipeline.hcl", "-j", "2"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	want := digests(t, ref)

	cmd := exec.Command(lacunaBin, "run", "pipeline.hcl", "--json", "-j", "2")
	cmd.Dir = dir
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"event":"done"`) {
			done++
		}
		if done == 300 {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if done < 300 {
		t.Fatalf("the run finished before it could be killed (%d nodes)", done)
	}
	r := lacuna(t, dir, "run", "pipeline.hcl", "--json", "-j", "2")
	if r.code != 0 {
		t.Fatalf("resumed run failed: %s", r.stderr)
	}
	s := summary(t, r.stdout)
	if s["cached"].(float64) < 300 || s["executed"].(float64)+s["cached"].(float64) != 1002 {
		t.Errorf("resume summary %v: want at least 300 reused", s)
	}
	if f := lacuna(t, dir, "fsck"); f.code != 0 || !strings.Contains(f.stdout, "no problems found") {
		t.Errorf("fsck after kill -9: %s%s", f.stdout, f.stderr)
	}
	got := digests(t, dir)
	for node, d := range want {
		if got[node] != d {
			t.Errorf("%s: digest %s after kill and resume, %s uninterrupted", node, got[node], d)
		}
	}
}

func TestTwoConcurrentRunsShareTheWork(t *testing.T) {
	dir := benchDAG(t, 300)
	cmds := make([]*exec.Cmd, 2)
	outs := make([]*bytes.Buffer, 2)
	for k := range cmds {
		cmds[k] = exec.Command(lacunaBin, "run", "pipeline.hcl", "--json", "-j", "2")
		cmds[k].Dir = dir
		outs[k] = &bytes.Buffer{}
		cmds[k].Stdout = outs[k]
		cmds[k].Stderr = os.Stderr
		if err := cmds[k].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for k, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("run %d: %v", k, err)
		}
	}
	executed := 0.0
	for _, o := range outs {
		s := summary(t, o.String())
		if s["failed"] != 0.0 || s["executed"].(float64)+s["cached"].(float64) != 302 {
			t.Errorf("summary %v", s)
		}
		executed += s["executed"].(float64)
	}
	if executed != 302 {
		t.Errorf("the two runs executed %v nodes between them, want each of 302 once", executed)
	}
	if f := lacuna(t, dir, "fsck"); f.code != 0 {
		t.Errorf("fsck: %s", f.stdout)
	}
}

func TestCorruptObjectIsCaughtAndRecomputed(t *testing.T) {
	dir := benchDAG(t, 3)
	lacuna(t, dir, "run", "pipeline.hcl")
	objs, _ := filepath.Glob(filepath.Join(dir, ".lacuna", "cas", "*", "*.parquet"))
	if len(objs) == 0 {
		t.Fatal("no objects")
	}
	want := digests(t, dir)
	d := want["node.sample.s1"]
	path := filepath.Join(dir, ".lacuna", "cas", d[:2], d+".parquet")
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 0x01
	os.WriteFile(path, b, 0o644)

	if r := lacuna(t, dir, "cat", "pipeline.hcl", "node.sample.s1"); r.code == 0 || !strings.Contains(r.stderr, "corrupt") {
		t.Errorf("cat of a corrupt object: code %d, %q", r.code, r.stderr)
	}
	// cat quarantined it; a damaged copy put back is found by fsck.
	os.WriteFile(path, b, 0o644)
	f := lacuna(t, dir, "fsck")
	if f.code != 1 || !strings.Contains(f.stdout, "corrupt-object "+d) || !strings.Contains(f.stdout, "quarantine") {
		t.Errorf("fsck: %d %s", f.code, f.stdout)
	}
	if r := lacuna(t, dir, "run", "pipeline.hcl", "--json"); r.code != 0 || summary(t, r.stdout)["executed"] == 0.0 {
		t.Errorf("re-run after quarantine: %s %s", r.stdout, r.stderr)
	}
	if f := lacuna(t, dir, "fsck"); f.code != 0 {
		t.Errorf("fsck after recompute: %s", f.stdout)
	}
	if got := digests(t, dir); got["node.sample.s1"] != d || got["node.concat.all"] != want["node.concat.all"] {
		t.Error("recomputed digests differ")
	}
}

func TestBadPipelineNamesFileLineColumn(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "p.hcl"), []byte("node \"import\" \"a\" { path = \"x.jsonl\" }\nnode \"sample\" \"b\" {\n  input = node.import.aa\n  n = 1\n}\n"), 0o644)
	r := lacuna(t, dir, "validate", "p.hcl")
	if r.code != 1 || !strings.Contains(r.stderr, "p.hcl:3:11: error: Reference to undeclared node") || !strings.Contains(r.stderr, `Did you mean "node.import.a"?`) {
		t.Errorf("validate: %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "panic") {
		t.Error(r.stderr)
	}
}

func TestExportVerifyAndGC(t *testing.T) {
	dir := benchDAG(t, 3)
	lacuna(t, dir, "run", "pipeline.hcl")
	out := filepath.Join(dir, "export")
	if r := lacuna(t, dir, "export", "pipeline.hcl", "--to", out); r.code != 0 {
		t.Fatal(r.stderr)
	}
	for _, f := range []string{"import/data.parquet", "sample/s0.parquet", "sample/s2.parquet", "concat/all.parquet", "views.sql"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	views, _ := os.ReadFile(filepath.Join(out, "views.sql"))
	if !strings.Contains(string(views), `CREATE OR REPLACE VIEW "sample" AS SELECT * FROM read_parquet('sample/*.parquet'`) {
		t.Errorf("views.sql:\n%s", views)
	}
	if r := lacuna(t, dir, "export", "pipeline.hcl", "--to", filepath.Join(dir, "arrow"), "--format", "arrow"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "arrow", "concat", "all.arrow")); err != nil {
		t.Error(err)
	}
	if r := lacuna(t, dir, "verify", "pipeline.hcl", "node.sample.s1", "node.concat.all"); r.code != 0 || strings.Count(r.stdout, "ok ") != 2 {
		t.Errorf("verify: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// Editing a node leaves its old result for gc.
	p := filepath.Join(dir, "pipeline.hcl")
	if err := dag.EditOne(dir, dag.Blocks); err != nil {
		t.Fatal(err)
	}
	lacuna(t, dir, "run", "pipeline.hcl")
	r := lacuna(t, dir, "gc", p)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "removed 2 actions") {
		t.Errorf("gc: %s %s", r.stdout, r.stderr)
	}
	if r := lacuna(t, dir, "run", "pipeline.hcl", "--json"); summary(t, r.stdout)["executed"] != 0.0 {
		t.Error("gc removed something the pipeline uses")
	}
}

func TestShowAndCatFormats(t *testing.T) {
	dir := benchDAG(t, 2)
	lacuna(t, dir, "run", "pipeline.hcl")
	r := lacuna(t, dir, "show", "pipeline.hcl", "node.sample.s1", "--json")
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || m["object"].(map[string]any)["rows"] != 5.0 {
		t.Errorf("show --json: %v %s", err, r.stdout)
	}
	r = lacuna(t, dir, "cat", "pipeline.hcl", "node.sample.s1", "--format", "csv")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 6 || lines[0] != "group,id,text" {
		t.Errorf("cat csv: %q", r.stdout)
	}
	r = lacuna(t, dir, "cat", "pipeline.hcl", "node.import.data", "--format", "jsonl", "--limit", "2")
	if strings.Count(r.stdout, "\n") != 2 || !strings.Contains(r.stdout, `"text":"row 0 of the benchmark table"`) {
		t.Errorf("cat jsonl: %q", r.stdout)
	}
	key := m["action"].(map[string]any)["key"].(string)
	if r := lacuna(t, dir, "show", key); !strings.Contains(r.stdout, "node.sample.s1") {
		t.Errorf("show KEY: %s %s", r.stdout, r.stderr)
	}
}

func TestInterruptStopsCleanly(t *testing.T) {
	dir := benchDAG(t, 2000)
	cmd := exec.Command(lacunaBin, "run", "pipeline.hcl", "-j", "2")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Start()
	time.Sleep(700 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Skipf("run was not interrupted mid-way (%v): %s", err, out.String())
	}
	if !strings.Contains(out.String(), "interrupted") {
		t.Errorf("output: %s", out.String())
	}
	if f := lacuna(t, dir, "fsck"); f.code != 0 {
		t.Errorf("fsck after SIGINT: %s", f.stdout)
	}
}

// TestExportOpensInDuckDB opens an export with real DuckDB (the npm
// package, which carries its binary). Opt-in: it needs the npm registry.
func TestExportOpensInDuckDB(t *testing.T) {
	if os.Getenv("LACUNA_TEST_DUCKDB") == "" {
		t.Skip("set LACUNA_TEST_DUCKDB=1 to install @duckdb/node-api with npm and check views.sql")
	}
	mods := t.TempDir()
	install := exec.Command("npm", "install", "--prefix", mods, "@duckdb/node-api@1.5.6-r.1")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install: %v\n%s", err, out)
	}
	dir := benchDAG(t, 4)
	lacuna(t, dir, "run", "pipeline.hcl")
	out := filepath.Join(dir, "export")
	lacuna(t, dir, "export", "pipeline.hcl", "--to", out)
	// ES modules resolve packages from the script's folder.
	src, _ := os.ReadFile("testdata/duckdb_views.mjs")
	script := filepath.Join(mods, "duckdb_views.mjs")
	os.WriteFile(script, src, 0o644)
	b, err := exec.Command("node", script, out).CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, b)
	}
	want := `{"n":"20"}` + "\n" + `{"n":"20"}` + "\n" + `{"t":"BIGINT"}` + "\n"
	if string(b) != want {
		t.Errorf("duckdb said:\n%s\nwant:\n%s", b, want)
	}
}

func TestGraphAndFmt(t *testing.T) {
	dir := benchDAG(t, 2)
	dot := lacuna(t, dir, "graph", "pipeline.hcl").stdout
	if !strings.Contains(dot, `"node.import.data" -> "node.sample.s1";`) || !strings.Contains(dot, `"node.sample.s1" -> "node.concat.all";`) {
		t.Errorf("dot:\n%s", dot)
	}
	if m := lacuna(t, dir, "graph", "pipeline.hcl", "--format", "mermaid").stdout; !strings.HasPrefix(m, "flowchart LR") || strings.Count(m, "-->") != 4 {
		t.Errorf("mermaid:\n%s", m)
	}
	p := filepath.Join(dir, "messy.hcl")
	os.WriteFile(p, []byte("node \"import\" \"a\" {\npath=\"x.jsonl\"\n}\n"), 0o644)
	if r := lacuna(t, dir, "fmt", "--check", "messy.hcl"); r.code != 1 {
		t.Errorf("fmt --check on an unformatted file: %d", r.code)
	}
	lacuna(t, dir, "fmt", "messy.hcl")
	if b, _ := os.ReadFile(p); !strings.Contains(string(b), "  path = \"x.jsonl\"") {
		t.Errorf("fmt wrote:\n%s", b)
	}
	if r := lacuna(t, dir, "fmt", "--check", "messy.hcl"); r.code != 0 {
		t.Errorf("fmt --check after fmt: %d", r.code)
	}
}
