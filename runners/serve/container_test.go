package serve

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/container"
	"github.com/lacuna-dev/lacuna/runners/container/containertest"
)

// These tests run model servers in podman containers: an image holding
// testdata/fakeserver (a static Go stand-in for llama-server) pushed to a
// registry on 127.0.0.1 and run by digest, its weights mounted read-only.
// Without podman they skip, except under CI=true, where they fail.

const fakeServer = "./testdata/fakeserver"

// containerSpec is a llama.cpp spec whose server runs in a container of
// fakeserver's image (VARIANT=variant), with a weights file mounted at
// /lacuna/weights/model.gguf.
func containerSpec(t *testing.T, variant string) (Spec, container.Pinned) {
	t.Helper()
	eng := containertest.Podman(t)
	host := containertest.Registry(t)
	ref := host + "/fakeserver:v1"
	containertest.Push(t, ref, containertest.Image(t, "fakeserver", containertest.Program(t, fakeServer), "VARIANT="+variant))
	pin, err := container.Resolve(context.Background(), ref, container.InsecureLoopback())
	if err != nil {
		t.Fatal(err)
	}
	containertest.RemoveImages(t, eng, pin.String())
	weights := filepath.Join(t.TempDir(), "smol.gguf")
	if err := os.WriteFile(weights, []byte("not really a GGUF, but bytes with a digest"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("not really a GGUF, but bytes with a digest"))
	digest := "sha256:" + hex.EncodeToString(sum[:])
	return Spec{
		Kind:       LlamaCpp,
		Server:     pin.Digest,
		Weights:    []Weights{{Path: "/lacuna/weights/model.gguf", Digest: digest}},
		ServedName: "smol",
		Needs:      Needs{ContextSize: 512, ParallelSlots: 2},
		Wrapper: container.Server{Engine: eng, Spec: container.Spec{
			Image:  pin,
			Inputs: []container.Mount{{Source: weights, Target: "/lacuna/weights/model.gguf"}},
			CPUs:   1,
			Memory: 256 << 20,
			Env:    map[string]string{"DECLARED": "1"},
		}},
	}, pin
}

// podmanPS lists the containers (running or not) named name: "NAME STATUS".
func podmanPS(t *testing.T, name string) string {
	t.Helper()
	args := append(append([]string{}, containertest.PodmanArgs...), "ps", "--all", "--filter", "name=^"+name+"$", "--format", "{{.Names}} {{.Status}}")
	out, err := exec.Command("podman", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("podman ps: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestContainerServerStartsAnswersAndStops(t *testing.T) {
	spec, pin := containerSpec(t, "a")
	state := t.TempDir()
	log := serverLog(t)
	ctx := context.Background()
	srv, err := Start(ctx, spec, WithStateDir(state), WithLog(log), WithStartTimeout(3*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			srv.Stop(ctx)
		}
	}()
	name := srv.Container()
	t.Logf("container %s ready in %s (pull included)", name, srv.Startup().Round(time.Millisecond))
	if !strings.HasPrefix(name, "lacuna-serve-") {
		t.Fatalf("container name %q", name)
	}
	if ps := podmanPS(t, name); !strings.Contains(ps, "Up") {
		t.Fatalf("podman ps: %q, want the container up", ps)
	}
	if !strings.HasPrefix(srv.Endpoint(), "http://127.0.0.1:") {
		t.Errorf("endpoint %s", srv.Endpoint())
	}
	// The container shares the host's network and the server binds
	// 127.0.0.1 only: another address of this machine does not reach it.
	if ip := otherAddress(); ip != "" {
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(srv.Spec().Port)), time.Second); err == nil {
			c.Close()
			t.Errorf("the server answers on %s, not on loopback only", ip)
		}
	} else {
		t.Log("no non-loopback address to check the binding against")
	}
	// The server read the weights at their mount point, and they are the
	// host file's bytes.
	status, body, raw := post(t, srv.Endpoint()+"/chat/completions", map[string]any{
		"model": "smol", "messages": []map[string]string{{"role": "user", "content": "hi"}}, "max_tokens": 100,
	})
	if status != 200 {
		t.Fatalf("chat: %d %s", status, raw)
	}
	answer := body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
	if want := "weights /lacuna/weights/model.gguf " + spec.Weights[0].Digest; answer != want {
		t.Errorf("answer %q, want %q", answer, want)
	}
	logs := log.String()
	for _, want := range []string{"Trying to pull " + pin.String(), "fakeserver: serving smol on 127.0.0.1:"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q", want)
		}
	}
	leases, _ := os.ReadDir(state)
	if len(leases) != 1 {
		t.Fatalf("%d leases", len(leases))
	}
	lease, err := os.ReadFile(filepath.Join(state, leases[0].Name()))
	if err != nil || !strings.Contains(string(lease), `"container": "`+name+`"`) || !strings.Contains(string(lease), `"--ignore"`) {
		t.Errorf("lease does not name the container and its remove command: %s %v", lease, err)
	}

	t0 := time.Now()
	stopped = true
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(t0)
	t.Logf("stopped in %s", took.Round(time.Millisecond))
	// SIGTERM reached the server through the client (well within the
	// grace period, so not by the SIGKILL after it).
	if !strings.Contains(log.String(), "fakeserver: stopping on terminated") || took >= DefaultStopGrace {
		t.Errorf("the server did not stop on SIGTERM (stop took %s):\n%s", took, log)
	}
	if ps := podmanPS(t, name); ps != "" {
		t.Errorf("container left after Stop: %s", ps)
	}
	if leases, _ := os.ReadDir(state); len(leases) != 0 {
		t.Errorf("lease left after Stop")
	}
}

func TestContainerServerWithoutItsWeightsFailsAndLeavesNothing(t *testing.T) {
	spec, _ := containerSpec(t, "a")
	w := spec.Wrapper.(container.Server)
	w.Spec.Inputs = nil // the weights are not mounted: the server cannot read them
	spec.Wrapper = w
	before := podmanPS(t, "lacuna-serve-.*")
	state := t.TempDir()
	_, err := Start(context.Background(), spec, WithStateDir(state), WithStartTimeout(2*time.Minute))
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "/lacuna/weights/model.gguf: no such file") {
		t.Fatalf("a server without its weights: %v", err)
	}
	t.Logf("%v", err)
	if after := podmanPS(t, "lacuna-serve-.*"); after != before {
		t.Errorf("containers before the failed start:\n%s\nafter:\n%s", before, after)
	}
	if leases, _ := os.ReadDir(state); len(leases) != 0 {
		t.Errorf("lease left after a failed start")
	}
}

// TestContainerServeHelper is the process TestContainerKill9LeavesNoServer
// kills: it starts a container server with state directory
// $SERVE_CONTAINER_STATE, prints its container's name, and waits.
func TestContainerServeHelper(t *testing.T) {
	state := os.Getenv("SERVE_CONTAINER_STATE")
	if state == "" {
		t.Skip("run by TestContainerKill9LeavesNoServer")
	}
	spec, _ := containerSpec(t, "a")
	srv, err := Start(context.Background(), spec, WithStateDir(state), WithStartTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("server %d %s\n", srv.PID(), srv.Container())
	time.Sleep(10 * time.Minute)
}

func TestContainerKill9LeavesNoServer(t *testing.T) {
	containertest.Podman(t)
	state := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestContainerServeHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SERVE_CONTAINER_STATE="+state)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid, name := 0, ""
	sc := bufio.NewScanner(out)
	for pid == 0 && sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "server" {
			pid, _ = strconv.Atoi(f[1])
			name = f[2]
		}
	}
	if pid == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the helper never reported its server")
	}
	t.Cleanup(func() {
		// Whatever happens, no container of this test survives it.
		rm := append(append([]string{}, containertest.PodmanArgs...), "rm", "--force", "--ignore", "--time=0", name)
		exec.Command("podman", rm...).Run()
	})
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// The parent-death signal killed the podman client; conmon keeps the
	// container: that is what Reap is for.
	deadline := time.Now().Add(10 * time.Second)
	for !groupGone(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !groupGone(pid) {
		t.Fatalf("the podman client %d outlived its owner's kill -9", pid)
	}
	if ps := podmanPS(t, name); !strings.Contains(ps, "Up") {
		t.Fatalf("after kill -9 the container is %q: this test tests nothing", ps)
	}
	t0 := time.Now()
	reaped, err := Reap(state)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Reap took %s", time.Since(t0).Round(time.Millisecond))
	if len(reaped) != 1 || reaped[0].Container != name {
		t.Fatalf("Reap removed %+v, want the lease of container %s", reaped, name)
	}
	if ps := podmanPS(t, name); ps != "" {
		t.Fatalf("container left after Reap: %s", ps)
	}
	if leases, _ := os.ReadDir(state); len(leases) != 0 {
		t.Fatalf("leases left: %v", leases)
	}
}

func TestContainerServerIdentityIsTheImageDigest(t *testing.T) {
	a, pa := containerSpec(t, "a")
	b, pb := containerSpec(t, "b")
	if pa.Digest == pb.Digest {
		t.Fatal("two variants, one digest")
	}
	if a.Identity() == b.Identity() {
		t.Error("another image, the same identity")
	}
	// The same image from another registry (another port) is the same
	// server; its command line differs, so the pool does not share them.
	c, pc := containerSpec(t, "a")
	if pc.Digest != pa.Digest || pc.Repo == pa.Repo {
		t.Fatalf("same variant: %s and %s", pa, pc)
	}
	if a.Identity() != c.Identity() {
		t.Error("the same image's identity depends on its registry")
	}
	ka, _ := shareKey(a)
	kc, _ := shareKey(c)
	if ka == kc {
		t.Error("the pool would share servers run from different references")
	}
}

// otherAddress is an IPv4 address of this machine other than loopback,
// "" when it has none.
func otherAddress() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// TestContainerLlamaServerAnswers serves SmolLM2-135M-Instruct with
// llama.cpp's llama-server in a container: the binary and the shared
// libraries ldd lists for it in an image FROM scratch, pushed to a
// registry on 127.0.0.1 and run by digest, the GGUF mounted read-only.
func TestContainerLlamaServerAnswers(t *testing.T) {
	bin, gguf := realServer(t)
	eng := containertest.Podman(t)
	digest, err := ggufDigest()
	if err != nil {
		t.Fatal(err)
	}
	host := containertest.Registry(t)
	ref := host + "/llama-server:0.3.36"
	containertest.Push(t, ref, containertest.DynamicImage(t, bin, "llama-server"))
	pin, err := container.Resolve(context.Background(), ref, container.InsecureLoopback())
	if err != nil {
		t.Fatal(err)
	}
	containertest.RemoveImages(t, eng, pin.String())
	spec := Spec{
		Kind:       LlamaCpp,
		Command:    nil, // the image's entrypoint
		Server:     pin.Digest,
		Weights:    []Weights{{Path: "/lacuna/weights/smollm2.gguf", Digest: digest}},
		ServedName: "smollm2-135m",
		Needs:      Needs{ContextSize: 2048, ParallelSlots: 2},
		Extra:      []string{"-t", "2"},
		Wrapper: container.Server{Engine: eng, Spec: container.Spec{
			Image:  pin,
			Inputs: []container.Mount{{Source: gguf, Target: "/lacuna/weights/smollm2.gguf"}},
			Memory: 2 << 30,
		}},
	}
	log := serverLog(t)
	state := t.TempDir()
	ctx := context.Background()
	t0 := time.Now()
	srv, err := Start(ctx, spec, WithStateDir(state), WithLog(log), WithStartTimeout(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			srv.Stop(ctx)
		}
	}()
	t.Logf("llama-server ready in container %s after %s (pull included)", srv.Container(), time.Since(t0).Round(time.Millisecond))
	status, body, raw := post(t, srv.Endpoint()+"/chat/completions", map[string]any{
		"model":       "smollm2-135m",
		"messages":    []map[string]string{{"role": "user", "content": "What is the capital of France? Answer in one word."}},
		"max_tokens":  16,
		"temperature": 0,
		"seed":        1,
	})
	if status != 200 {
		t.Fatalf("chat: %d %s", status, raw)
	}
	choice := body["choices"].([]any)[0].(map[string]any)
	answer := choice["message"].(map[string]any)["content"].(string)
	t.Logf("answer: %q (model %v)", answer, body["model"])
	if strings.TrimSpace(answer) == "" || body["model"] != "smollm2-135m" {
		t.Errorf("answer %q from model %v", answer, body["model"])
	}
	if n, err := srv.Slots(ctx); err != nil || n != 2 {
		t.Errorf("slots %d, %v", n, err)
	}
	t1 := time.Now()
	stopped = true
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %s", time.Since(t1).Round(time.Millisecond))
	if ps := podmanPS(t, srv.Container()); ps != "" {
		t.Errorf("container left after Stop: %s", ps)
	}
	// The second start finds the image in podman's store.
	t2 := time.Now()
	again, err := Start(ctx, spec, WithLog(log), WithStartTimeout(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second start (image present) ready in %s", time.Since(t2).Round(time.Millisecond))
	t3 := time.Now()
	if err := again.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %s", time.Since(t3).Round(time.Millisecond))
}
