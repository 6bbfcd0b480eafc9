package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// killMidRun starts `lacuna ARGS` in dir with env added, and kills it with
// SIGKILL once stop says so: stop sees each line lacuna prints on stdout,
// and "" every 50 ms (for conditions on the store). It reports false when
// lacuna ended before stop held.
func killMidRun(t *testing.T, dir string, env []string, stop func(line string) bool, args ...string) bool {
	t.Helper()
	cmd := exec.Command(lacunaBin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "LACUNA_STORE="), env...)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(stdout); sc.Scan(); {
			lines <- sc.Text()
		}
	}()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	stopped := false
	for !stopped {
		select {
		case l, ok := <-lines:
			if !ok {
				cmd.Wait()
				return false
			}
			stopped = stop(l)
		case <-tick.C:
			stopped = stop("")
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	go func() {
		for range lines {
		}
	}()
	cmd.Wait()
	return true
}

// doneEvents is a killMidRun stop that holds after n "done" events of
// `run --json`; *count is how many it saw.
func doneEvents(n int, count *int) func(string) bool {
	return func(l string) bool {
		if strings.Contains(l, `"event":"done"`) {
			*count++
		}
		return *count >= n
	}
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
	if rows, _ := s["rows"].(float64); rows <= 0 || s["seconds"] == nil {
		t.Errorf("first run summary %v: want its rows and seconds", s)
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

	done := 0
	if !killMidRun(t, dir, nil, doneEvents(300, &done), "run", "pipeline.hcl", "--json", "-j", "2") {
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
	if r.code != 0 || !strings.Contains(r.stdout, "\nremoved 2 actions") {
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
	// --where keeps matching rows, --columns picks and orders columns.
	r = lacuna(t, dir, "cat", "pipeline.hcl", "node.sample.s1", "--format", "csv", "--columns", "text,id")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 6 || lines[0] != "text,id" {
		t.Errorf("cat --columns: %q %s", r.stdout, r.stderr)
	}
	first := strings.Split(strings.Split(strings.TrimSpace(r.stdout), "\n")[1], ",")
	r = lacuna(t, dir, "cat", "pipeline.hcl", "node.sample.s1", "--format", "csv", "--where", "id="+first[1])
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 || !strings.Contains(lines[1], first[0]) {
		t.Errorf("cat --where id=%s: %q %s", first[1], r.stdout, r.stderr)
	}
	r = lacuna(t, dir, "cat", "pipeline.hcl", "node.sample.s1", "--format", "jsonl", "--columns", "text,id", "--limit", "1")
	if !strings.HasPrefix(r.stdout, `{"text":`) || strings.Contains(r.stdout, `"group"`) {
		t.Errorf("cat jsonl --columns: %q", r.stdout)
	}
	r = lacuna(t, dir, "cat", "pipeline.hcl", "node.sample.s1", "--format", "csv", "--where", "id="+first[1], "--where", "id=no such id")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 1 {
		t.Errorf("cat --where twice on one column keeps rows meeting both: %q", r.stdout)
	}
	if r := lacuna(t, dir, "cat", "pipeline.hcl", "node.sample.s1", "--columns", "txet"); r.code == 0 || !strings.Contains(r.stderr, `did you mean "text"`) {
		t.Errorf("cat --columns txet: %d %s", r.code, r.stderr)
	}
	key := m["action"].(map[string]any)["key"].(string)
	if r := lacuna(t, dir, "show", key); !strings.Contains(r.stdout, "node.sample.s1") {
		t.Errorf("show KEY: %s %s", r.stdout, r.stderr)
	}
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if ee != nil {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("killed by %s, not exited", ws.Signal())
		}
		return ee.ExitCode()
	}
	return 0
}

// TestSignalStopsValidateThatDoesNotReturn blocks validate reading a
// --var-file that is a FIFO no one writes to: it cannot finish by itself,
// so lacuna must exit on the signal, after the grace period or at once on
// a second signal, with the shell's status for the first signal.
func TestSignalStopsValidateThatDoesNotReturn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		signals []syscall.Signal
		want    int
	}{
		{"one SIGTERM", []syscall.Signal{syscall.SIGTERM}, 143},
		{"one SIGINT", []syscall.Signal{syscall.SIGINT}, 130},
		{"two SIGINTs", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, 130},
		{"SIGTERM then SIGINT", []syscall.Signal{syscall.SIGTERM, syscall.SIGINT}, 143},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := benchDAG(t, 2)
			fifo := filepath.Join(dir, "vars.hcl")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hung binary fails the test
			defer cancel()
			cmd := exec.CommandContext(ctx, lacunaBin, "validate", "pipeline.hcl", "--var-file", fifo)
			cmd.Dir = dir
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan string)
			go func() {
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			// The FIFO opens for writing once validate has opened it for
			// reading: from then on validate waits for data that never comes.
			var said []string
			for {
				w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
				if err == nil {
					defer w.Close()
					break
				}
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("validate exited before reading the FIFO:\n%s", strings.Join(said, "\n"))
					}
					said = append(said, l)
				case <-time.After(10 * time.Millisecond):
				}
			}
			for i, s := range tc.signals {
				cmd.Process.Signal(s)
				if i == len(tc.signals)-1 {
					break
				}
				// Pending signals merge: send the next once this one is seen.
				for l := range lines {
					said = append(said, l)
					if strings.Contains(l, "stopping (a second signal exits at once)") {
						break
					}
				}
			}
			for l := range lines {
				said = append(said, l)
			}
			out := strings.Join(said, "\n")
			if code := exitCode(t, cmd.Wait()); code != tc.want {
				t.Errorf("exit status %d, want %d\n%s", code, tc.want, out)
			}
			// One signal waits out the grace period; a second one does not.
			if grace := strings.Contains(out, fmt.Sprintf("after %s, exiting", signalGrace)); grace != (len(tc.signals) == 1) {
				t.Errorf("grace period message %v with %d signal(s):\n%s", grace, len(tc.signals), out)
			}
		})
	}
}

// TestSIGTERMStopsRunAndItResumes stops a run with one SIGTERM after its
// first node: it exits 143, the store is sound, and the next run reuses
// what was done.
func TestSIGTERMStopsRunAndItResumes(t *testing.T) {
	dir := benchDAG(t, 2000)
	cmd := exec.Command(lacunaBin, "run", "pipeline.hcl", "--json", "-j", "2")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LACUNA_STORE=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var rest bytes.Buffer
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"event":"done"`) {
			cmd.Process.Signal(syscall.SIGTERM)
			break
		}
	}
	io.Copy(&rest, stdout) // keep the pipe drained until it exits
	if code := exitCode(t, cmd.Wait()); code != 143 {
		t.Fatalf("exit status %d after SIGTERM, want 143\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say the run was interrupted: %s", stderr.String())
	}
	if f := lacuna(t, dir, "fsck"); f.code != 0 {
		t.Errorf("fsck after SIGTERM: %s", f.stdout)
	}
	r := lacuna(t, dir, "run", "pipeline.hcl", "--json", "-j", "2")
	s := summary(t, r.stdout)
	if r.code != 0 || s["cached"].(float64) < 1 || s["executed"].(float64)+s["cached"].(float64) != 2002 {
		t.Errorf("resumed run: %d %v %s", r.code, s, r.stderr)
	}
}

// TestHelpAndDashHPrintTheSameUsage checks every command listed by
// `lacuna help`: `lacuna help CMD` and `lacuna CMD -h` print one text.
func TestHelpAndDashHPrintTheSameUsage(t *testing.T) {
	dir := t.TempDir()
	list := lacuna(t, dir, "help")
	var names []string
	for _, line := range strings.Split(list.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "lacuna" && strings.HasPrefix(line, "  ") {
			names = append(names, f[1])
		}
	}
	if len(names) < 13 {
		t.Fatalf("lacuna help lists %d commands:\n%s", len(names), list.stdout)
	}
	for _, name := range names {
		h := lacuna(t, dir, "help", name)
		d := lacuna(t, dir, name, "-h")
		if h.code != 0 || d.code != 0 || !strings.HasPrefix(h.stdout, "Usage: lacuna "+name) {
			t.Errorf("%s: help exit %d, -h exit %d, help says %q", name, h.code, d.code, h.stdout)
		}
		if h.stdout != d.stderr {
			t.Errorf("lacuna help %s:\n%s\nlacuna %s -h:\n%s", name, h.stdout, name, d.stderr)
		}
	}
	// Shared flag groups read the same in every command that has them.
	for _, name := range []string{"validate", "plan", "run", "show", "cat", "export", "verify", "graph", "gc"} {
		if h := lacuna(t, dir, "help", name).stdout; !strings.Contains(h, "-var-file value\n    \tread variables from an HCL or JSON file (repeatable)") {
			t.Errorf("%s has no shared --var-file flag:\n%s", name, h)
		}
	}
	if r := lacuna(t, dir, "run", "--no-such-flag", "p.hcl"); r.code != 2 || !strings.Contains(r.stderr, "flag provided but not defined") {
		t.Errorf("unknown flag: %d %s", r.code, r.stderr)
	}
	if r := lacuna(t, dir, "nosuchcommand"); r.code != 2 {
		t.Errorf("unknown command: exit %d", r.code)
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

func TestRunRecomputeRunsACachedNodeAgain(t *testing.T) {
	dir := benchDAG(t, 2)
	lacuna(t, dir, "run", "pipeline.hcl")
	r := lacuna(t, dir, "run", "pipeline.hcl", "--json", "--recompute", "node.sample.s1")
	if s := summary(t, r.stdout); s["executed"] != 1.0 {
		t.Errorf("run --recompute node.sample.s1: %v\n%s", s, r.stderr)
	}
	if r := lacuna(t, dir, "run", "pipeline.hcl", "--recompute", "node.sample.nope"); r.code != 2 || !strings.Contains(r.stderr, "no such node instance") {
		t.Errorf("run --recompute of an unknown node: %d %s", r.code, r.stderr)
	}
}

// Random bytes over an action entry: cat and show name the entry and the
// way out instead of a JSON error, plan says the node will run because of
// it, run moves it to quarantine/ (saying so) and recomputes the same
// rows; damage fsck finds first is repaired so that plan and run stop
// saying cached.
func TestDamagedActionEntryIsReportedAndRecomputed(t *testing.T) {
	dir := benchDAG(t, 3)
	lacuna(t, dir, "run", "pipeline.hcl")
	want := digests(t, dir)
	r := lacuna(t, dir, "show", "pipeline.hcl", "node.sample.s1", "--json")
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("show --json: %v %s", err, r.stdout)
	}
	key := m["action"].(map[string]any)["key"].(string)
	entry := filepath.Join(".lacuna", "ac", key[:2], key+".json")
	damage := func() {
		t.Helper()
		junk := []byte("\x9c\xff{\"key\x00 not an entry \xfe")
		if err := os.WriteFile(filepath.Join(dir, entry), junk, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	damage()

	rel := filepath.Join("ac", key[:2], key+".json")
	for _, args := range [][]string{{"cat", "pipeline.hcl", "node.sample.s1"}, {"cat", key}, {"show", key}} {
		r := lacuna(t, dir, args...)
		if r.code == 0 || !strings.Contains(r.stderr, "action entry "+rel+" is damaged") || !strings.Contains(r.stderr, "lacuna fsck") {
			t.Errorf("%v: exit %d, stderr %q; want the entry named and the repair suggested", args, r.code, r.stderr)
		}
	}
	if r := lacuna(t, dir, "show", "pipeline.hcl", "node.sample.s1"); !strings.Contains(r.stdout, rel+" is damaged") {
		t.Errorf("show: %q %q", r.stdout, r.stderr)
	}
	if r := lacuna(t, dir, "plan", "pipeline.hcl"); !strings.Contains(r.stdout, "is damaged") {
		t.Errorf("plan does not say why node.sample.s1 runs: %s", r.stdout)
	}
	r = lacuna(t, dir, "run", "pipeline.hcl", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"event":"damaged","time"`) || summary(t, r.stdout)["executed"] != 1.0 {
		t.Errorf("run over a damaged entry: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, ".lacuna", "quarantine", key+".json")); err != nil {
		t.Error(err)
	}
	if got := digests(t, dir); got["node.sample.s1"] != want["node.sample.s1"] {
		t.Error("the recomputed node has other rows")
	}

	// Damage found by fsck first (its time set back: nothing a run's stat
	// of the entry can see).
	damage()
	then := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, entry), then, then)
	if f := lacuna(t, dir, "fsck", "--dry-run"); f.code != 1 || !strings.Contains(f.stdout, "bad-action "+key) {
		t.Errorf("fsck --dry-run: %d %s", f.code, f.stdout)
	}
	if f := lacuna(t, dir, "fsck"); f.code != 1 || !strings.Contains(f.stdout, "moved to quarantine/") {
		t.Errorf("fsck: %d %s", f.code, f.stdout)
	}
	if r := lacuna(t, dir, "plan", "pipeline.hcl"); !strings.Contains(r.stdout, "action entry is gone") {
		t.Errorf("plan after fsck still trusts the snapshot: %s", r.stdout)
	}
	if r := lacuna(t, dir, "cat", "pipeline.hcl", "node.sample.s1"); r.code == 0 || strings.Contains(r.stderr, "no such file") || !strings.Contains(r.stderr, "not computed") {
		t.Errorf("cat after fsck: %d %q", r.code, r.stderr)
	}
	if r := lacuna(t, dir, "run", "pipeline.hcl", "--json"); r.code != 0 || summary(t, r.stdout)["executed"] != 1.0 {
		t.Errorf("run after fsck: %s %s", r.stdout, r.stderr)
	}
	if got := digests(t, dir); got["node.sample.s1"] != want["node.sample.s1"] {
		t.Error("the recomputed node has other rows")
	}
	if f := lacuna(t, dir, "fsck"); f.code != 0 {
		t.Errorf("fsck after the re-run: %s", f.stdout)
	}
}
