// Package containertest builds what tests of containers need, for real:
// a registry on 127.0.0.1 (go-containerregistry's pkg/registry), small
// images holding a static Go program, and podman as this project's
// machines run it. It is for tests only.
//
// A tool a test needs that is missing (podman) skips the test saying why,
// except under CI=true, where it fails: CI installs everything
// (runners/container/testdata/setup.sh).
package containertest

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
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

	"github.com/lacuna-dev/lacuna/runners/container"
)

// Probe is the import path of this package's probe program (see
// probe/main.go): a static binary that reports what a container sees and
// writes outputs, for Image.
const Probe = "github.com/lacuna-dev/lacuna/runners/container/containertest/probe"

// PodmanArgs are the global arguments podman needs on this project's
// machines (no crun: runc).
var PodmanArgs = []string{"--runtime=runc"}

// Missing skips the test saying why, or fails it under CI=true.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf(format+" (CI=true: runners/container/testdata/setup.sh installs it)", args...)
	}
	tb.Skipf(format+" (run runners/container/testdata/setup.sh as root; the test fails instead under CI=true)", args...)
}

// Podman is podman with PodmanArgs, or Missing when it is not installed.
func Podman(tb testing.TB) *container.Engine {
	tb.Helper()
	e, err := container.NewEngine("podman", container.WithArgs(PodmanArgs...))
	if err != nil {
		Missing(tb, "podman is not installed: %v", err)
	}
	return e
}

// Registry serves an empty registry on 127.0.0.1 until the test ends and
// returns its host:port.
func Registry(tb testing.TB) string {
	tb.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	tb.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// Push writes img to ref (a tag or digest in a Registry) and returns its
// digest.
func Push(tb testing.TB, ref string, img v1.Image) v1.Hash {
	tb.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		tb.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		tb.Fatalf("push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

var builds sync.Map // package → *build

type build struct {
	once sync.Once
	bin  []byte
	err  error
}

// Program is the Go main package pkg (an import path, or a directory the
// go command accepts from the test's working directory) compiled static
// for Linux on this architecture, once per test binary.
func Program(tb testing.TB, pkg string) []byte {
	tb.Helper()
	v, _ := builds.LoadOrStore(pkg, &build{})
	b := v.(*build)
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "containertest-")
		if err != nil {
			b.err = err
			return
		}
		defer os.RemoveAll(dir)
		bin := dir + "/program"
		cmd := exec.Command("go", "build", "-trimpath", "-o", bin, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = &buildError{pkg, err, string(out)}
			return
		}
		b.bin, b.err = os.ReadFile(bin)
	})
	if b.err != nil {
		tb.Fatalf("building %s: %v", pkg, b.err)
	}
	return b.bin
}

type buildError struct {
	pkg string
	err error
	out string
}

func (e *buildError) Error() string { return "go build " + e.pkg + ": " + e.err.Error() + ": " + e.out }

// Image is an image of one layer holding program (Program's bytes) as
// /NAME, its entrypoint, for linux on this architecture, with PATH=/ and
// env ("K=V") as its environment: images with different env differ in
// content (and digest).
func Image(tb testing.TB, name string, program []byte, env ...string) v1.Image {
	tb.Helper()
	return FilesImage(tb, []File{{Path: name, Data: program, Mode: 0o755}}, []string{path.Join("/", name)}, env...)
}

// File is a regular file of a FilesImage: its path in the image
// (relative to /, or absolute), content and mode.
type File struct {
	Path string
	Data []byte
	Mode int64
}

// FilesImage is an image of one layer holding files (their directories
// are created), FROM scratch, for linux on this architecture, with
// entrypoint and PATH=/ and env ("K=V") as its environment.
func FilesImage(tb testing.TB, files []File, entrypoint []string, env ...string) v1.Image {
	tb.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range files {
		name := strings.TrimPrefix(path.Clean("/"+f.Path), "/")
		var parents []string
		for d := path.Dir(name); d != "." && !dirs[d]; d = path.Dir(d) {
			parents = append(parents, d)
			dirs[d] = true
		}
		for i := len(parents) - 1; i >= 0; i-- {
			hdr := &tar.Header{Name: parents[i] + "/", Mode: 0o755, ModTime: time.Unix(0, 0), Typeflag: tar.TypeDir}
			if err := tw.WriteHeader(hdr); err != nil {
				tb.Fatal(err)
			}
		}
		hdr := &tar.Header{Name: name, Mode: f.Mode, Size: int64(len(f.Data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			tb.Fatal(err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		tb.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		tb.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint = entrypoint
	cf.Config.Env = append([]string{"PATH=/"}, env...)
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		tb.Fatal(err)
	}
	return img
}

// DynamicImage is FilesImage of DynamicProgram(bin, name): bin as /NAME,
// its entrypoint, with its shared libraries and LD_LIBRARY_PATH naming
// their directories, and env.
func DynamicImage(tb testing.TB, bin, name string, env ...string) v1.Image {
	tb.Helper()
	files := DynamicProgram(tb, bin, name)
	var dirs []string
	for _, f := range files[1:] {
		if d := path.Dir(f.Path); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	env = append([]string{"LD_LIBRARY_PATH=" + strings.Join(dirs, ":")}, env...)
	return FilesImage(tb, files, []string{path.Join("/", name)}, env...)
}

// DynamicProgram is the files that run the dynamically linked program
// bin in an image FROM scratch: bin as /NAME and the shared libraries
// ldd(1) lists for it (the dynamic loader included), each at the path
// ldd names, with its content (symbolic links followed). An image of them
// needs LD_LIBRARY_PATH naming the libraries' directories when the
// loader's built-in search path does not.
func DynamicProgram(tb testing.TB, bin, name string) []File {
	tb.Helper()
	out, err := exec.Command("ldd", bin).CombinedOutput()
	if err != nil {
		tb.Fatalf("ldd %s: %v: %s", bin, err, out)
	}
	read := func(p string, mode int64) File {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			tb.Fatal(err)
		}
		data, err := os.ReadFile(real)
		if err != nil {
			tb.Fatal(err)
		}
		return File{Path: p, Data: data, Mode: mode}
	}
	files := []File{read(bin, 0o755)}
	files[0].Path = name
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		lib := ""
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			lib = f[2]
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			lib = f[0] // the loader
		}
		if lib != "" {
			files = append(files, read(lib, 0o755))
		}
	}
	return files
}

// ProbeImage is Image of the probe program as /probe, with VARIANT=variant
// in its environment: probe images of different variants differ.
func ProbeImage(tb testing.TB, variant string) v1.Image {
	tb.Helper()
	return Image(tb, "probe", Program(tb, Probe), "VARIANT="+variant)
}

// RemoveImages removes refs (what a test pulled) from e's image store
// when the test ends.
func RemoveImages(tb testing.TB, e *container.Engine, refs ...string) {
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, r := range refs {
			args := []string{"rmi", "--force", r}
			if e.Kind() == container.Podman {
				args = append(append([]string{}, PodmanArgs...), "rmi", "--force", "--ignore", r)
			}
			_ = exec.CommandContext(ctx, e.Path(), args...).Run()
		}
	})
}
