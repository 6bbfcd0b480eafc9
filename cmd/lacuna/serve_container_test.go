package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/container/containertest"
)

// These tests serve a model in a container runner's image with podman:
// runners/serve/testdata/fakeserver (a static Go stand-in for
// llama-server, answering with the path and digest of the weights it
// read) in a FROM-scratch image pushed to a registry on 127.0.0.1 and
// referenced by tag; the real one runs llama.cpp's llama-server. Without
// podman they skip, except under CI=true, where they fail.

const containerServePipeline = `
runner "srv" {
  kind   = "container"
  image  = %q
  args   = ["--runtime=runc"]
  cpus   = 1
  memory = "256M"
  env    = { FAKESERVER_DELAY = %q }
}
model "tiny" {
  id          = "fake/tiny"
  concurrency = 2
  temperature = 0
  serve {
    kind         = "llamacpp"
    weights      = "w.gguf"
    runner       = runner.srv
    context_size = 512
  }
}
node "import" "mcq" { path = "mcq.jsonl" }
node "probe_eval" "mcq" {
  items = node.import.mcq
  model = model.tiny
}
`

// mcqItems are n ToolSense-shaped MCQ items.
func mcqItems(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id": "q%d", "question": "Which country does tool %d serve?", "correct_answer": "Thailand", "wrong_answers": ["Japan", "Chile", "Peru"], "tool": {"tool_name": "T%d&&E", "tool_title": "T%d", "tool_description": "d", "api_title": "E", "api_description": "e"}}`+"\n", i, i, i, i)
	}
	return b.String()
}

// servePipeline writes a pipeline whose model is served in a container of
// the fakeserver image pushed as ref, and returns its directory and the
// weights' digest.
func servePipeline(t *testing.T, ref, delay string, items int) (dir, digest string) {
	t.Helper()
	dir = t.TempDir()
	weights := []byte("GGUF stand-in: the bytes whose digest is the model")
	sum := sha256.Sum256(weights)
	os.WriteFile(filepath.Join(dir, "w.gguf"), weights, 0o644)
	os.WriteFile(filepath.Join(dir, "mcq.jsonl"), []byte(mcqItems(items)), 0o644)
	os.WriteFile(filepath.Join(dir, "p.hcl"), fmt.Appendf(nil, containerServePipeline, ref, delay), 0o644)
	return dir, "sha256:" + hex.EncodeToString(sum[:])
}

// podmanContainers lists the containers (running or not) whose name
// matches the regular expression re: "NAME STATUS" lines.
func podmanContainers(t *testing.T, re string) string {
	t.Helper()
	args := append(append([]string{}, containertest.PodmanArgs...), "ps", "--all", "--filter", "name="+re, "--format", "{{.Names}} {{.Status}}")
	out, err := exec.Command("podman", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("podman ps: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

var serveContainerName = regexp.MustCompile(`lacuna-serve-[0-9a-f]{12}`)

// storeMentions is every container name lacuna's store mentions (the
// nodes' logs say which container served them).
func storeMentions(t *testing.T, store string) []string {
	t.Helper()
	seen := map[string]bool{}
	var names []string
	filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, n := range serveContainerName.FindAllString(string(b), -1) {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
		return nil
	})
	return names
}

// fakeServer is runners/serve/testdata/fakeserver, built static.
func fakeServer(t *testing.T) []byte {
	t.Helper()
	return containertest.Program(t, "../../runners/serve/testdata/fakeserver")
}

func TestServeInAContainerRunner(t *testing.T) {
	eng := containertest.Podman(t)
	host := containertest.Registry(t)
	ref := host + "/fakeserver:v1"
	prog := fakeServer(t)
	d1 := containertest.Push(t, ref, containertest.Image(t, "fakeserver", prog, "VARIANT=a"))
	repo := host + "/fakeserver"
	containertest.RemoveImages(t, eng, repo+"@"+d1.String())
	dir, digest := servePipeline(t, ref, "0s", 3)
	store := filepath.Join(dir, ".lacuna")

	// A plan pins the image and starts nothing.
	r := lacuna(t, dir, "plan", "p.hcl")
	if r.code != 0 {
		t.Fatalf("plan: %s%s", r.stdout, r.stderr)
	}
	if names := storeMentions(t, store); len(names) > 0 {
		t.Fatalf("a plan started servers: %v", names)
	}

	t0 := time.Now()
	r = lacuna(t, dir, "run", "p.hcl", "--json")
	if r.code != 0 {
		t.Fatalf("run: %s%s", r.stdout, r.stderr)
	}
	t.Logf("run (pull, container start, 3 calls, stop) in %s", time.Since(t0).Round(time.Millisecond))
	log, _ := os.ReadFile(filepath.Join(store, "servers", "servers.log"))
	for _, want := range []string{"Trying to pull " + repo + "@" + d1.String(), "fakeserver: serving fake/tiny on 127.0.0.1:", "fakeserver: stopping on terminated"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("servers.log lacks %q:\n%s", want, log)
		}
	}
	// The answers come from the server in the container, which read the
	// weights at their mount point.
	cat := lacuna(t, dir, "cat", "p.hcl", "node.probe_eval.mcq", "--json")
	if want := "weights /lacuna/weights/w.gguf " + digest; strings.Count(cat.stdout, want) != 3 {
		t.Errorf("cat: want 3 answers %q:\n%s%s", want, cat.stdout, cat.stderr)
	}
	names := storeMentions(t, store)
	if len(names) != 1 {
		t.Fatalf("the store names containers %v, want the one that served the run", names)
	}
	if ps := podmanContainers(t, "^"+names[0]+"$"); ps != "" {
		t.Errorf("container left after the run: %s", ps)
	}
	if leases, _ := filepath.Glob(filepath.Join(store, "servers", "serve-*.json")); len(leases) != 0 {
		t.Errorf("leases left: %v", leases)
	}

	// The tag moves to another image: the server's identity changes, and
	// the plan says that the image did.
	d2 := containertest.Push(t, ref, containertest.Image(t, "fakeserver", prog, "VARIANT=b"))
	containertest.RemoveImages(t, eng, repo+"@"+d2.String())
	r = lacuna(t, dir, "plan", "p.hcl")
	short := func(d string) string { return strings.TrimPrefix(d, "sha256:")[:12] }
	if r.code != 0 || !strings.Contains(r.stdout, "model.serve.image sha256:"+short(d1.String())) || !strings.Contains(r.stdout, short(d2.String())) {
		t.Errorf("plan after the tag moved does not say so:\n%s%s", r.stdout, r.stderr)
	}
	t.Logf("plan after the retag:\n%s", r.stdout)
}

func TestServeInAContainerRunnerSurvivesKill9(t *testing.T) {
	eng := containertest.Podman(t)
	host := containertest.Registry(t)
	ref := host + "/fakeserver:v1"
	d := containertest.Push(t, ref, containertest.Image(t, "fakeserver", fakeServer(t), "VARIANT=a"))
	containertest.RemoveImages(t, eng, host+"/fakeserver@"+d.String())
	const items = 6
	dir, _ := servePipeline(t, ref, "1s", items)
	store := filepath.Join(dir, ".lacuna")
	var name string
	t.Cleanup(func() {
		if name != "" {
			rm := append(append([]string{}, containertest.PodmanArgs...), "rm", "--force", "--ignore", "--time=0", name)
			exec.Command("podman", rm...).Run()
		}
	})
	// Kill lacuna once its server is up in its container.
	deadline := time.Now().Add(3 * time.Minute)
	killed := killMidRun(t, dir, nil, func(string) bool {
		if names := storeMentions(t, store); len(names) > 0 {
			name = names[0]
		}
		return (name != "" && strings.Contains(podmanContainers(t, "^"+name+"$"), "Up")) || time.Now().After(deadline)
	}, "run", "p.hcl", "--json")
	if !killed || name == "" {
		t.Fatalf("lacuna was not killed while its server ran (killed %v, container %q)", killed, name)
	}
	// The parent-death signal killed the podman client; conmon keeps the
	// container running.
	time.Sleep(time.Second)
	ps := podmanContainers(t, "^"+name+"$")
	t.Logf("after kill -9: %s", ps)
	if !strings.Contains(ps, "Up") {
		t.Fatalf("the container did not outlive lacuna: the next run's reap has nothing to do, and this test tests nothing")
	}
	t0 := time.Now()
	r := lacuna(t, dir, "run", "p.hcl", "--json")
	if r.code != 0 {
		t.Fatalf("resumed run: %s%s", r.stdout, r.stderr)
	}
	t.Logf("resumed run in %s", time.Since(t0).Round(time.Millisecond))
	if !strings.Contains(r.stdout+r.stderr, "stopped model server") {
		t.Errorf("the next run did not say it stopped the server left behind:\n%s%s", r.stdout, r.stderr)
	}
	for _, n := range storeMentions(t, store) {
		if ps := podmanContainers(t, "^"+n+"$"); ps != "" {
			t.Errorf("container left after the next run: %s", ps)
		}
	}
	if leases, _ := filepath.Glob(filepath.Join(store, "servers", "serve-*.json")); len(leases) != 0 {
		t.Errorf("leases left: %v", leases)
	}
}

func TestServeRunnerMustBeLocalOrContainer(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "w.gguf"), []byte("w"), 0o644)
	for _, tc := range []struct {
		name, runner, ref, where, why string
	}{
		{"slurm", `runner "cluster" { kind = "slurm" }`, "runner.cluster",
			"p.hcl:7:15: error: Unsupported runner for a model server", "runner.cluster is of kind slurm"},
		{"not a reference", `runner "cluster" { kind = "local" }`, `"cluster"`,
			"p.hcl:7:15: error: Invalid runner", "runner must be a reference to a runner block"},
		{"undeclared", `runner "cluster" { kind = "local" }`, "runner.gpu",
			"p.hcl:7:15: error: Reference to undeclared runner", `No runner "gpu" is declared.`},
		{"slurm, serve as an object", `runner "cluster" { kind = "slurm" }`, "OBJECT",
			"p.hcl:4:11: error: Invalid serve", "serve.runner: the runner is of kind slurm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.runner + `
model "m" {
  id = "m"
  serve {
    kind    = "llamacpp"
    weights = "w.gguf"
    runner  = ` + tc.ref + `
  }
}
`
			if tc.ref == "OBJECT" {
				src = tc.runner + `
model "m" {
  id    = "m"
  serve = { kind = "llamacpp", weights = "w.gguf", runner = runner.cluster }
}
`
			}
			os.WriteFile(filepath.Join(dir, "p.hcl"), []byte(src), 0o644)
			r := lacuna(t, dir, "validate", "p.hcl")
			if r.code == 0 || !strings.Contains(r.stderr, tc.where) || !strings.Contains(r.stderr, tc.why) {
				t.Errorf("validate: exit %d\n%s%s\nwant %q and %q", r.code, r.stdout, r.stderr, tc.where, tc.why)
			}
		})
	}
}

const llamaContainerPipeline = `
runner "llama" {
  kind   = "container"
  image  = %q
  args   = ["--runtime=runc"]
  memory = "2G"
}
model "tiny" {
  id          = "HuggingFaceTB/SmolLM2-135M-Instruct"
  concurrency = 2
  temperature = 0
  serve {
    kind         = "llamacpp"
    weights      = %q
    runner       = runner.llama
    context_size = 2048
    extra        = ["-t", "2"]
  }
}
node "import" "mcq" { path = "mcq.jsonl" }
node "probe_eval" "mcq" {
  items = node.import.mcq
  model = model.tiny
}
`

// TestRealModelServedInAContainer runs a ToolSense MCQ probe on
// SmolLM2-135M-Instruct served by llama.cpp's llama-server in a container
// runner's image: the binary and the libraries ldd lists for it, FROM
// scratch, pushed to a registry on 127.0.0.1 by tag; the GGUF mounted
// read-only. It needs LACUNA_LLAMA_SERVER and LACUNA_GGUF (skips without,
// fails under CI=true) and podman.
func TestRealModelServedInAContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real model")
	}
	server, gguf := os.Getenv("LACUNA_LLAMA_SERVER"), os.Getenv("LACUNA_GGUF")
	if server == "" || gguf == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("LACUNA_LLAMA_SERVER and LACUNA_GGUF are not set: make test builds llama-server and fetches the model")
		}
		t.Skip("LACUNA_LLAMA_SERVER and LACUNA_GGUF are not set (make test sets them)")
	}
	eng := containertest.Podman(t)
	host := containertest.Registry(t)
	ref := host + "/llama-server:0.3.36"
	d := containertest.Push(t, ref, containertest.DynamicImage(t, server, "llama-server"))
	containertest.RemoveImages(t, eng, host+"/llama-server@"+d.String())
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mcq.jsonl"), []byte(mcqItems(2)), 0o644)
	os.WriteFile(filepath.Join(dir, "p.hcl"), fmt.Appendf(nil, llamaContainerPipeline, ref, gguf), 0o644)
	store := filepath.Join(dir, ".lacuna")
	t0 := time.Now()
	r := lacuna(t, dir, "run", "p.hcl", "--json")
	if r.code != 0 {
		log, _ := os.ReadFile(filepath.Join(store, "servers", "servers.log"))
		t.Fatalf("run: %s%s\nservers.log:\n%s", r.stdout, r.stderr, log)
	}
	t.Logf("run (pull, llama-server start, 2 calls, stop) in %s", time.Since(t0).Round(time.Millisecond))
	cat := lacuna(t, dir, "cat", "p.hcl", "node.probe_eval.mcq", "--json")
	if n := strings.Count(cat.stdout, `"model":"HuggingFaceTB/SmolLM2-135M-Instruct"`); n != 2 {
		t.Errorf("cat: %d rows answered by the model, want 2:\n%s%s", n, cat.stdout, cat.stderr)
	}
	t.Logf("%s", cat.stdout)
	for _, n := range storeMentions(t, store) {
		if ps := podmanContainers(t, "^"+n+"$"); ps != "" {
			t.Errorf("container left after the run: %s", ps)
		}
	}
}

func TestServeInAContainerRunnerStopsOnSIGINT(t *testing.T) {
	eng := containertest.Podman(t)
	host := containertest.Registry(t)
	ref := host + "/fakeserver:v1"
	d := containertest.Push(t, ref, containertest.Image(t, "fakeserver", fakeServer(t), "VARIANT=a"))
	containertest.RemoveImages(t, eng, host+"/fakeserver@"+d.String())
	dir, _ := servePipeline(t, ref, "2s", 6)
	store := filepath.Join(dir, ".lacuna")
	cmd := exec.Command(lacunaBin, "run", "p.hcl")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LACUNA_STORE=")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	name := ""
	t.Cleanup(func() {
		if name != "" {
			rm := append(append([]string{}, containertest.PodmanArgs...), "rm", "--force", "--ignore", "--time=0", name)
			exec.Command("podman", rm...).Run()
		}
	})
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if names := storeMentions(t, store); len(names) > 0 && strings.Contains(podmanContainers(t, "^"+names[0]+"$"), "Up") {
			name = names[0]
			break
		}
	}
	if name == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the server's container never came up:\n%s", out.String())
	}
	t0 := time.Now()
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	t.Logf("lacuna exited %v %s after SIGINT", err, time.Since(t0).Round(time.Millisecond))
	if ps := podmanContainers(t, "^"+name+"$"); ps != "" {
		t.Errorf("container left after SIGINT: %s\n%s", ps, out.String())
	}
	if leases, _ := filepath.Glob(filepath.Join(store, "servers", "serve-*.json")); len(leases) != 0 {
		t.Errorf("leases left: %v", leases)
	}
}
