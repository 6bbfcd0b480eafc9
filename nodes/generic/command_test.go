package generic_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/generic"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/runners/container"
	"github.com/lacuna-dev/lacuna/runners/container/containertest"
	"github.com/zclconf/go-cty/cty"
)

const commandInput = `
node "import" "a" { path = "a.csv" }
`

// blobBytes reads a blob of the store whole.
func blobBytes(t *testing.T, st *artifacts.Store, d string) []byte {
	t.Helper()
	br, err := st.OpenBlob(artifacts.Digest(d))
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	b, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func byName(rows []generic.CommandRow) map[string]generic.CommandRow {
	m := map[string]generic.CommandRow{}
	for _, r := range rows {
		m[r.Name] = r
	}
	return m
}

// checkDirBlob unpacks a directory blob and compares its files.
func checkDirBlob(t *testing.T, st *artifacts.Store, d string, want map[string]string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "x")
	if err := st.ExtractBlob(artifacts.Digest(d), dir); err != nil {
		t.Fatal(err)
	}
	for name, content := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != content {
			t.Errorf("dir blob %s: %q, %v; want %q", name, got, err, content)
		}
	}
}

func action(t *testing.T, r *nodetest.Result, addr string) *artifacts.Action {
	t.Helper()
	a, err := r.Store.GetAction(r.Nodes[addr].Key)
	if err != nil {
		t.Fatalf("%s: %v", addr, err)
	}
	return a
}

func TestCommandLocalInputsOutputsEnvAndLogs(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.csv", "id,name\n1,x\n2,y\n")
	t.Setenv("LACUNA_HOST_SECRET", "leaked")
	src := commandInput + `
runner "here" {
  kind = "local"
  env  = { FROM_RUNNER = "r" }
}
node "command" "c" {
  runner  = runner.here
  inputs  = [node.import.a]
  env     = { GREETING = "world" }
  command = ["sh", "-c", <<-EOT
    set -e
    f=$(sed -n 's/.*"node.import.a": "\(.*\)".*/\1/p' "$LACUNA_IN/inputs.json")
    cp "$LACUNA_IN/$f" "$LACUNA_OUT/copy.parquet"
    printf 'hello %s\n' "$GREETING" > "$LACUNA_OUT/a.txt"
    mkdir -p "$LACUNA_OUT/d/sub"
    printf x > "$LACUNA_OUT/d/one"
    printf yz > "$LACUNA_OUT/d/sub/two"
    env | sort > "$LACUNA_OUT/env.txt"
    pwd > "$LACUNA_OUT/pwd.txt"
    echo "to stdout"
    echo "to stderr" >&2
    printf 'no newline'
  EOT
  ]
}
`
	r := nodetest.Run(t, dir, src)
	rows := nodetest.Read[generic.CommandRow](t, r, "node.command.c")
	var names []string
	for _, row := range rows {
		names = append(names, row.Name+":"+row.Kind)
	}
	if got := strings.Join(names, " "); got != "a.txt:file copy.parquet:file d:dir env.txt:file pwd.txt:file" {
		t.Fatalf("rows %s", got)
	}
	m := byName(rows)
	if a := m["a.txt"]; a.Text != "hello world\n" || a.Size != 12 || string(blobBytes(t, r.Store, a.ContentBlob)) != "hello world\n" {
		t.Errorf("a.txt %+v", a)
	}
	// The command read the input's Parquet file through inputs.json: its
	// copy is the store's object, byte for byte.
	obj, err := os.ReadFile(r.Store.ObjectPath(r.Nodes["node.import.a"].Output.Digest))
	if err != nil {
		t.Fatal(err)
	}
	if c := m["copy.parquet"]; c.Size != int64(len(obj)) || string(blobBytes(t, r.Store, c.ContentBlob)) != string(obj) {
		t.Errorf("copy.parquet %+v is not the input's object (%d bytes)", c, len(obj))
	}
	if d := m["d"]; d.Size != 3 || d.Text != "" {
		t.Errorf("d %+v", d)
	} else {
		checkDirBlob(t, r.Store, d.ContentBlob, map[string]string{"one": "x", "sub/two": "yz"})
	}
	env := m["env.txt"].Text
	for _, want := range []string{"FROM_RUNNER=r\n", "GREETING=world\n", "LACUNA_IN=/", "LACUNA_OUT=/", "PATH=" + os.Getenv("PATH") + "\n", "HOME=/"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	if strings.Contains(env, "LACUNA_HOST_SECRET") {
		t.Errorf("the run's environment reached the command:\n%s", env)
	}
	if got := strings.TrimSpace(m["pwd.txt"].Text); got != dir {
		if real, _ := filepath.EvalSymlinks(dir); got != real {
			t.Errorf("ran in %s, want the pipeline's directory %s", got, dir)
		}
	}
	a := action(t, r, "node.command.c")
	for _, want := range []string{"to stdout\n", "to stderr\n", "no newline\n"} {
		if !strings.Contains(a.Logs, want) {
			t.Errorf("log lacks %q:\n%s", want, a.Logs)
		}
	}
	if a.Identity["program"] == "" || a.Identity["runner_env"] == "" || len(a.Blobs) != 5 {
		t.Errorf("identity %v, blobs %v", a.Identity, a.Blobs)
	}

	// Cached the second time; the runner's env is in the key.
	if again := nodetest.Run(t, dir, src); again.Nodes["node.command.c"].State != engine.StateCached {
		t.Errorf("second run: %s", again.Nodes["node.command.c"].State)
	}
	changed := strings.Replace(src, `FROM_RUNNER = "r"`, `FROM_RUNNER = "s"`, 1)
	for _, e := range nodetest.Plan(t, dir, changed) {
		if e.Node == "node.command.c" && (e.Status != engine.PlanRun || !strings.Contains(e.Reason, "identity changed: runner_env")) {
			t.Errorf("plan after the runner's env changed: %s (%s)", e.Status, e.Reason)
		}
	}
}

func TestCommandFailureIsNotCached(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.csv", "id\n1\n")
	src := commandInput + `
node "command" "c" {
  inputs  = [node.import.a]
  command = ["sh", "-c", "echo partial > \"$LACUNA_OUT/x\"; echo boom >&2; exit 3"]
}
`
	for run := 1; run <= 2; run++ {
		r := nodetest.RunErr(t, dir, src)
		res := r.Nodes["node.command.c"]
		if res.State != engine.StateFailed || res.Err == nil || !strings.Contains(res.Err.Error(), "exit status 3: boom") {
			t.Fatalf("run %d: %s, %v", run, res.State, res.Err)
		}
		if _, err := r.Store.GetAction(res.Key); err == nil {
			t.Fatalf("run %d: a failed command was cached", run)
		}
		f, err := r.Store.GetFailure(res.Key)
		if err != nil || !strings.Contains(f.Logs, "boom") {
			t.Errorf("run %d: failure %+v, %v", run, f, err)
		}
	}
	for _, e := range nodetest.Plan(t, dir, src) {
		if e.Node == "node.command.c" && (e.Status != engine.PlanRun || e.Reason != "failed last time") {
			t.Errorf("plan: %s (%s)", e.Status, e.Reason)
		}
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func TestCommandCancelKillsItsProcesses(t *testing.T) {
	dir := t.TempDir()
	src := `
node "command" "c" {
  command = ["sh", "-c", "sleep 300 & echo $! > child.pid; echo started; wait"]
}
`
	file := filepath.Join(dir, "p.hcl")
	g, diags := engine.ExpandSource(file, []byte(src), dir, engine.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	st, err := artifacts.Open(filepath.Join(dir, ".lacuna"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(filepath.Join(dir, "child.pid")); err == nil {
				time.Sleep(100 * time.Millisecond) // the pid written whole
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	x := &engine.Executor{Store: st, Jobs: 1, Pipeline: file, Environ: os.Environ()}
	start := time.Now()
	res, _, err := x.Run(ctx, g, nil)
	if took := time.Since(start); took > 20*time.Second || err == nil {
		t.Fatalf("run returned after %s: %v", took, err)
	}
	for i, r := range res {
		if r.State == engine.StateDone || r.State == engine.StateCached {
			t.Errorf("%s: %s after cancel", i.Addr, r.State)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("the command's child %d survived the cancelled run", pid)
	}
}

func TestCommandConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"no command on this machine", `node "command" "c" {}`, "No command"},
		{"program not on PATH", `node "command" "c" { command = ["no-such-program-xyz"] }`, "not on the run's PATH"},
		{"relative program missing", `node "command" "c" { command = ["./missing.sh"] }`, "not an executable file"},
		{"container without image", `
runner "box" { kind = "container" }
node "command" "c" {
  runner  = runner.box
  command = ["true"]
}`, "a container runner needs an image"},
		{"fractional gpus", `
runner "box" {
  kind = "container"
  image = "x"
  gpus = 1.5
}
node "command" "c" {
  runner  = runner.box
  command = ["true"]
}`, "gpus = 1.5: want a whole number"},
		{"reserved variable", `
runner "here" { env = { LACUNA_OUT = "/" } }
node "command" "c" {
  runner  = runner.here
  command = ["true"]
}`, `"LACUNA_OUT" cannot be set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var got []string
			for _, e := range nodetest.Plan(t, dir, tc.src) {
				if e.Node == "node.command.c" {
					got = append(got, e.Status+": "+e.Reason)
				}
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], engine.PlanError) || !strings.Contains(got[0], tc.want) {
				t.Errorf("plan: %q, want an error with %q", got, tc.want)
			}
		})
	}
	dir := t.TempDir()
	_, diags := engine.ExpandSource(filepath.Join(dir, "p.hcl"), []byte(`
node "command" "c" {
  command = ["true"]
  env     = { LACUNA_IN = "x" }
}`), dir, engine.Options{})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "LACUNA_IN is set by the node") {
		t.Errorf("env LACUNA_IN: %v", diags)
	}
}

func TestDecodeRunner(t *testing.T) {
	obj := func(attrs map[string]cty.Value) cty.Value {
		all := map[string]cty.Value{}
		for _, a := range []string{"kind", "image", "engine", "memory", "gpu_type", "partition", "account", "time"} {
			all[a] = cty.NullVal(cty.String)
		}
		for _, a := range []string{"concurrency", "cpus", "gpus"} {
			all[a] = cty.NullVal(cty.Number)
		}
		all["env"] = cty.NullVal(cty.Map(cty.String))
		all["args"] = cty.NullVal(cty.List(cty.String))
		for k, v := range attrs {
			all[k] = v
		}
		return cty.ObjectVal(all)
	}
	r, err := nodes.DecodeRunner("gpu", obj(map[string]cty.Value{
		"kind":   cty.StringVal("container"),
		"image":  cty.StringVal("python:3.12"),
		"cpus":   cty.NumberFloatVal(1.5),
		"gpus":   cty.NumberIntVal(2),
		"memory": cty.StringVal("16G"),
		"env":    cty.MapVal(map[string]cty.Value{"K": cty.StringVal("v")}),
		"args":   cty.ListVal([]cty.Value{cty.StringVal("--runtime=runc")}),
	}))
	if err != nil || r.Name != "gpu" || r.Kind != "container" || r.Image != "python:3.12" || r.CPUs != 1.5 || r.GPUs != 2 || r.Env["K"] != "v" || len(r.Args) != 1 {
		t.Fatalf("%+v, %v", r, err)
	}
	for _, tc := range []struct {
		mem  string
		want int64
		err  bool
	}{
		{"16G", 16 << 30, false}, {"512M", 512 << 20, false}, {"512Mi", 512 << 20, false}, {"2GB", 2 << 30, false},
		{"64k", 64 << 10, false}, {"1T", 1 << 40, false}, {"100", 100 << 20, false}, {"4096B", 4096, false},
		{"", 0, false}, {"lots", 0, true}, {"1.5G", 0, true}, {"99999999999999T", 0, true},
	} {
		got, err := nodes.Runner{Memory: tc.mem}.MemoryBytes()
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("memory %q: %d, %v; want %d (error %v)", tc.mem, got, err, tc.want, tc.err)
		}
	}
	if _, err := nodes.DecodeRunner("x", obj(map[string]cty.Value{"concurrency": cty.NumberIntVal(-1)})); err == nil {
		t.Error("concurrency -1 decoded")
	}
}

// The container tests run real containers with podman, from an image
// built here (containertest's probe) and pushed to a registry on
// 127.0.0.1, pulled by digest.

func containerPipeline(host string) string {
	return commandInput + `
runner "box" {
  kind   = "container"
  image  = "` + host + `/probe:v1"
  engine = "podman"
  args   = ["--runtime=runc"]
  env    = { DECLARED = "yes" }
  cpus   = 1
  memory = "256M"
}
node "command" "c" {
  runner  = runner.box
  inputs  = [node.import.a]
  env     = { FROM_NODE = "n" }
  workdir = "/lacuna/out"
  command = ["/probe",
    "env", ";",
    "cat", "/lacuna/in/inputs.json", ";",
    "try-write", "/lacuna/in/0.parquet", ";",
    "try-write", "/lacuna/in/inputs.json", ";",
    "copy", "/lacuna/in/0.parquet", "copy.parquet", ";",
    "write", "a.txt", "hi", ";",
    "mkdir", "d/sub", ";",
    "write", "d/sub/f", "xyz"]
}
`
}

func TestCommandInContainerPinnedByDigest(t *testing.T) {
	eng := containertest.Podman(t)
	host := containertest.Registry(t)
	ref := host + "/probe:v1"
	digestA := containertest.Push(t, ref, containertest.ProbeImage(t, "a"))
	pinA := host + "/probe@" + digestA.String()
	containertest.RemoveImages(t, eng, pinA)
	dir := t.TempDir()
	write(t, dir, "a.csv", "id,name\n1,x\n")
	t.Setenv("LACUNA_HOST_SECRET", "leaked")
	src := containerPipeline(host)

	r := nodetest.Run(t, dir, src)
	a := action(t, r, "node.command.c")
	if a.Identity["image"] != pinA {
		t.Errorf("identity %v, want image %s", a.Identity, pinA)
	}
	for _, want := range []string{
		"image " + pinA + " (" + ref + "), engine podman",
		"Trying to pull " + pinA, // by digest
		"env DECLARED=yes\n", "env FROM_NODE=n\n", "env LACUNA_IN=/lacuna/in\n", "env LACUNA_OUT=/lacuna/out\n",
		"env VARIANT=a\n", // the image's own
		`cat /lacuna/in/inputs.json: {`, `"node.import.a": "0.parquet"`,
		"try-write /lacuna/in/0.parquet: open /lacuna/in/0.parquet: read-only file system",
		"try-write /lacuna/in/inputs.json: open /lacuna/in/inputs.json: read-only file system",
	} {
		if !strings.Contains(a.Logs, want) {
			t.Errorf("log lacks %q:\n%s", want, a.Logs)
		}
	}
	if strings.Contains(a.Logs, "LACUNA_HOST_SECRET") {
		t.Errorf("the run's environment reached the container:\n%s", a.Logs)
	}
	rows := nodetest.Read[generic.CommandRow](t, r, "node.command.c")
	m := byName(rows)
	if len(rows) != 3 || m["a.txt"].Text != "hi" || m["a.txt"].Kind != "file" || m["d"].Kind != "dir" || m["d"].Size != 3 {
		t.Errorf("rows %+v", rows)
	}
	checkDirBlob(t, r.Store, m["d"].ContentBlob, map[string]string{"sub/f": "xyz"})
	obj, err := os.ReadFile(r.Store.ObjectPath(r.Nodes["node.import.a"].Output.Digest))
	if err != nil {
		t.Fatal(err)
	}
	if string(blobBytes(t, r.Store, m["copy.parquet"].ContentBlob)) != string(obj) {
		t.Error("the container's copy of its input is not the store's object")
	}
	if err := r.Store.VerifyBlob(artifacts.Digest(m["a.txt"].ContentBlob)); err != nil {
		t.Error(err)
	}

	// The tag moves to another image: plan says so, the key changes and
	// the node runs in the new image.
	digestB := containertest.Push(t, ref, containertest.ProbeImage(t, "b"))
	pinB := host + "/probe@" + digestB.String()
	containertest.RemoveImages(t, eng, pinB)
	wantReason := "identity changed: image " + digestA.String()[:len("sha256:")+12] + "… → " + digestB.String()[:len("sha256:")+12] + "…"
	found := false
	for _, e := range nodetest.Plan(t, dir, src) {
		if e.Node == "node.command.c" {
			found = true
			if e.Status != engine.PlanRun || e.Reason != wantReason {
				t.Errorf("plan after the tag moved: %s (%s), want run (%s)", e.Status, e.Reason, wantReason)
			}
		}
	}
	if !found {
		t.Error("plan has no entry for node.command.c")
	}
	r2 := nodetest.Run(t, dir, src)
	if k1, k2 := r.Nodes["node.command.c"].Key, r2.Nodes["node.command.c"].Key; k1 == k2 || r2.Nodes["node.command.c"].State != engine.StateDone {
		t.Errorf("after the tag moved: key %s → %s, %s", k1, k2, r2.Nodes["node.command.c"].State)
	}
	if a2 := action(t, r2, "node.command.c"); a2.Identity["image"] != pinB || !strings.Contains(a2.Logs, "env VARIANT=b\n") {
		t.Errorf("second image: identity %v, log:\n%s", a2.Identity, a2.Logs)
	}
}

func TestCommandInContainerExitStatusFailsTheNode(t *testing.T) {
	eng := containertest.Podman(t)
	host := containertest.Registry(t)
	d := containertest.Push(t, host+"/probe:v1", containertest.ProbeImage(t, "a"))
	pin := host + "/probe@" + d.String()
	containertest.RemoveImages(t, eng, pin)
	dir := t.TempDir()
	src := `
runner "box" {
  kind   = "container"
  image  = "` + host + `/probe:v1"
  args   = ["--runtime=runc"]
}
node "command" "c" {
  runner  = runner.box
  command = ["/probe", "write", "/lacuna/out/partial", "x", ";", "exit", "3"]
}
`
	r := nodetest.RunErr(t, dir, src)
	res := r.Nodes["node.command.c"]
	var xerr *container.ExitError
	if res.State != engine.StateFailed || !errors.As(res.Err, &xerr) || xerr.Code != 3 || xerr.Image != pin || !strings.HasPrefix(xerr.Container, "lacuna-command-c-") {
		t.Fatalf("%s: %v (%#v)", res.State, res.Err, xerr)
	}
	for _, want := range []string{"container lacuna-command-c-", "(image " + pin + ") exited with status 3: probe: exiting with 3"} {
		if !strings.Contains(res.Err.Error(), want) {
			t.Errorf("error %q lacks %q", res.Err, want)
		}
	}
	if _, err := r.Store.GetAction(res.Key); err == nil {
		t.Error("a failed container run was cached")
	}
}
