package container

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// These tests run real containers with podman, from images built here and
// pushed to a registry on 127.0.0.1.

func TestRunByDigestWithMountsEnvAndLogs(t *testing.T) {
	eng := testPodman(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	host := startRegistry(t)
	push(t, host+"/probe:v1", probeImage(t, "a"))
	pin, err := Resolve(ctx, host+"/probe:v1", InsecureLoopback())
	if err != nil {
		t.Fatal(err)
	}
	removeImages(t, eng, pin.String())

	in, out := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(in, "data.txt"), []byte("hello input"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The engine's client runs with this variable; the container must not
	// see it.
	t.Setenv("LACUNA_HOST_SECRET", "leaked")
	var log bytes.Buffer
	spec := Spec{
		Image:   pin,
		Args:    []string{"check", "/in", "/out"},
		Inputs:  []Mount{{Source: in, Target: "/in"}},
		Output:  Mount{Source: out, Target: "/out"},
		Env:     map[string]string{"DECLARED": "yes", "SPACED": "a b"},
		Workdir: "/out",
		CPUs:    1,
		Memory:  256 << 20,
		Network: "none",
		Log:     &log,
	}
	start := time.Now()
	res, err := eng.Run(ctx, spec)
	first := time.Since(start)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	if res.Image != pin.String() || !strings.HasPrefix(res.Container, "lacuna-") {
		t.Errorf("result %+v", res)
	}
	logs := log.String()
	for _, want := range []string{
		"Trying to pull " + pin.String(), // by digest, from the registry
		"cwd /out\n",
		"env DECLARED=yes\n",
		"env SPACED=a b\n",
		"env VARIANT=a\n", // the image's own
		"input write: open /in/new.txt: read-only file system\n",
		"probe: wrote /out/result.txt\n", // stderr reaches the log too
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "LACUNA_HOST_SECRET") {
		t.Errorf("the host's environment reached the container:\n%s", logs)
	}
	got, err := os.ReadFile(filepath.Join(out, "result.txt"))
	if err != nil || string(got) != "variant a: hello input" {
		t.Errorf("output %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(in, "new.txt")); err == nil {
		t.Error("the container wrote into its input")
	}

	// The second run finds the image in the store: the difference is the pull.
	log.Reset()
	start = time.Now()
	if _, err := eng.Run(ctx, spec); err != nil {
		t.Fatalf("second run: %v\n%s", err, log.String())
	}
	if strings.Contains(log.String(), "Trying to pull") {
		t.Errorf("the second run pulled again:\n%s", log.String())
	}
	t.Logf("pull+run %v, run (image present) %v", first.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

func TestRunExitStatusIsAnErrorNamingTheContainer(t *testing.T) {
	eng := testPodman(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	host := startRegistry(t)
	push(t, host+"/probe:v1", probeImage(t, "a"))
	pin, err := Resolve(ctx, host+"/probe:v1", InsecureLoopback())
	if err != nil {
		t.Fatal(err)
	}
	removeImages(t, eng, pin.String())
	var log bytes.Buffer
	_, err = eng.Run(ctx, Spec{
		Image: pin, Name: randomName("lacuna-test-exit-"), Args: []string{"exit", "3"},
		Output: Mount{Source: t.TempDir(), Target: "/out"}, Network: "none", Log: &log,
	})
	var xerr *ExitError
	if !errors.As(err, &xerr) || xerr.Code != 3 {
		t.Fatalf("err = %v, want an ExitError with status 3\n%s", err, log.String())
	}
	msg := err.Error()
	for _, want := range []string{xerr.Container, pin.String(), "status 3", "probe: exiting with 3"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}

	// An image that no registry serves: the engine's own failure (125)
	// with its reason.
	gone := pin
	gone.Digest = "sha256:" + strings.Repeat("0", 64)
	_, err = eng.Run(ctx, Spec{Image: gone, Output: Mount{Source: t.TempDir(), Target: "/out"}, Network: "none"})
	if !errors.As(err, &xerr) || xerr.Code != 125 || !strings.Contains(xerr.Output, gone.Digest) {
		t.Errorf("running an absent digest: %v", err)
	}
}

// signalWriter closes ready when what it was written contains word.
type signalWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	word  string
	ready chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.ready != nil && strings.Contains(w.buf.String(), w.word) {
		close(w.ready)
		w.ready = nil
	}
	return len(p), nil
}

func TestCancelKillsAndRemovesTheContainer(t *testing.T) {
	eng := testPodman(t)
	host := startRegistry(t)
	push(t, host+"/probe:v1", probeImage(t, "a"))
	pin, err := Resolve(context.Background(), host+"/probe:v1", InsecureLoopback())
	if err != nil {
		t.Fatal(err)
	}
	removeImages(t, eng, pin.String())
	ready := make(chan struct{})
	w := &signalWriter{word: "ready\n", ready: ready}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	name := randomName("lacuna-test-cancel-")
	done := make(chan error, 1)
	go func() {
		// The probe ignores SIGTERM and SIGINT: only a kill stops it.
		_, err := eng.Run(ctx, Spec{
			Image: pin, Name: name, Args: []string{"sleep"},
			Output: Mount{Source: t.TempDir(), Target: "/out"}, Network: "none", Log: w,
		})
		done <- err
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the run ended before it was cancelled: %v\n%s", err, w.buf.String())
	case <-time.After(3 * time.Minute):
		t.Fatal("the container never said ready")
	}
	// A second later the probe still runs: only the cancel can end it.
	time.Sleep(time.Second)
	running, err := eng.output(context.Background(), "ps", "--filter", "name=^"+name+"$", "--filter", "status=running", "--format", "{{.Names}}")
	if err != nil || strings.TrimSpace(running) != name {
		t.Fatalf("the container is not running before the cancel: %q, %v", running, err)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), name) {
			t.Errorf("err = %v, want context.Canceled naming %s", err, name)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Run did not return after cancel")
	}
	t.Logf("cancelled in %v", time.Since(start).Round(time.Millisecond))
	ls, err := eng.output(context.Background(), "ps", "--all", "--filter", "name=^"+name+"$", "--format", "{{.Names}} {{.Status}}")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(ls) != "" {
		t.Errorf("the container survived its cancel: %s", ls)
	}
}

func TestRunByDigestIgnoresALaterRetag(t *testing.T) {
	eng := testPodman(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	host := startRegistry(t)
	ref := host + "/probe:latest"
	push(t, ref, probeImage(t, "a"))
	before, err := Resolve(ctx, ref, InsecureLoopback())
	if err != nil {
		t.Fatal(err)
	}
	push(t, ref, probeImage(t, "b"))
	after, err := Resolve(ctx, ref, InsecureLoopback())
	if err != nil {
		t.Fatal(err)
	}
	if msg, moved := Moved(before, after); !moved {
		t.Fatalf("the retag went unseen: %s then %s", before, after)
	} else {
		t.Log(msg)
	}
	removeImages(t, eng, before.String(), after.String())
	for _, c := range []struct {
		pin  Pinned
		want string
	}{{before, "variant a\n"}, {after, "variant b\n"}} {
		var log bytes.Buffer
		_, err := eng.Run(ctx, Spec{Image: c.pin, Args: []string{"variant"},
			Output: Mount{Source: t.TempDir(), Target: "/out"}, Network: "none", Log: &log})
		if err != nil || !strings.HasSuffix(log.String(), c.want) {
			t.Errorf("run %s: %v, log %q; want it to end with %q", c.pin, err, log.String(), c.want)
		}
	}
}

func TestLocalOnlyImageResolvesToItsEngineID(t *testing.T) {
	eng := testPodman(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	img := probeImage(t, "local")
	ref := "localhost/" + randomName("lacuna-test-local-") + ":v1"
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "image.tar")
	if err := tarball.WriteToFile(archive, tag, img); err != nil {
		t.Fatal(err)
	}
	if out, err := eng.output(ctx, "load", "--input", archive); err != nil {
		t.Fatalf("podman load: %v\n%s", err, out)
	}
	removeImages(t, eng, ref)
	config, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	pin, err := Resolve(ctx, ref, WithLocal(eng), InsecureLoopback())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("resolved through podman in %v", time.Since(start).Round(time.Millisecond))
	// podman's image ID is the digest of the image's config.
	if !pin.Local || pin.Digest != config.String() || pin.String() != config.String() {
		t.Errorf("Resolve = %+v, want local %s", pin, config)
	}
	if _, err := Resolve(ctx, ref); err == nil {
		t.Error("a local-only image resolved without the engine")
	}
	var log bytes.Buffer
	if _, err := eng.Run(ctx, Spec{Image: pin, Args: []string{"variant"},
		Output: Mount{Source: t.TempDir(), Target: "/out"}, Network: "none", Log: &log}); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	if !strings.HasSuffix(log.String(), "variant local\n") {
		t.Errorf("log %q", log.String())
	}
}
