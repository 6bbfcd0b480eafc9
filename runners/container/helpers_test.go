package container

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// missing skips the test saying why, or fails it under CI=true, where
// testdata/setup.sh has installed everything.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (CI=true: runners/container/testdata/setup.sh installs it)", args...)
	}
	t.Skipf(format+" (run runners/container/testdata/setup.sh as root; the test fails instead under CI=true)", args...)
}

// testPodman is podman as this project's machines need it: runc as the
// runtime (see testdata/setup.sh for the containers.conf it also needs).
func testPodman(t *testing.T) *Engine {
	t.Helper()
	e, err := NewEngine("podman", WithArgs("--runtime=runc"))
	if err != nil {
		missing(t, "podman is not installed: %v", err)
	}
	return e
}

func writeExecutable(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

var probe struct {
	once sync.Once
	dir  string
	tar  []byte
	err  error
}

// probeLayer is a tar holding /probe, testdata/probe compiled static for
// Linux, built once per test binary.
func probeLayer(t *testing.T) []byte {
	t.Helper()
	probe.once.Do(func() {
		probe.dir, probe.err = os.MkdirTemp("", "container-probe-")
		if probe.err != nil {
			return
		}
		bin := filepath.Join(probe.dir, "probe")
		cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./testdata/probe/main.go")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
		var out []byte
		if out, probe.err = cmd.CombinedOutput(); probe.err != nil {
			probe.err = &buildError{probe.err, string(out)}
			return
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			probe.err = err
			return
		}
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		hdr := &tar.Header{Name: "probe", Mode: 0o755, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			probe.err = err
			return
		}
		_, _ = tw.Write(data)
		probe.err = tw.Close()
		probe.tar = buf.Bytes()
	})
	if probe.err != nil {
		t.Fatalf("building the probe: %v", probe.err)
	}
	return probe.tar
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if probe.dir != "" {
		os.RemoveAll(probe.dir)
	}
	os.Exit(code)
}

// probeImage is an image of one layer (the probe) whose entrypoint is
// /probe and whose environment sets VARIANT=variant: images of different
// variants differ in content.
func probeImage(t *testing.T, variant string) v1.Image {
	t.Helper()
	data := probeLayer(t)
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint = []string{"/probe"}
	cf.Config.Env = []string{"PATH=/", "VARIANT=" + variant}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// startRegistry serves an empty registry on 127.0.0.1 for the test and
// returns its host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func push(t *testing.T, ref string, img v1.Image) v1.Hash {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func randomName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// removeImages removes what the test pulled or loaded from podman's store.
func removeImages(t *testing.T, e *Engine, refs ...string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, r := range refs {
			_, _ = e.output(ctx, "rmi", "--force", "--ignore", r)
		}
	})
}
