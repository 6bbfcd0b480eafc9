package containertest_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/runners/container"
	"github.com/lacuna-dev/lacuna/runners/container/containertest"
)

func TestProbeImagesResolveByDigestAndDiffer(t *testing.T) {
	host := containertest.Registry(t)
	da := containertest.Push(t, host+"/probe:a", containertest.ProbeImage(t, "a"))
	db := containertest.Push(t, host+"/probe:b", containertest.ProbeImage(t, "b"))
	if da == db {
		t.Fatal("images of different variants have one digest")
	}
	for ref, want := range map[string]string{host + "/probe:a": da.String(), host + "/probe:b": db.String()} {
		p, err := container.Resolve(context.Background(), ref, container.InsecureLoopback())
		if err != nil || p.Digest != want || p.Repo != host+"/probe" {
			t.Errorf("resolve %s: %+v, %v; want %s", ref, p, err, want)
		}
	}
}

func TestProbeRunsInPodman(t *testing.T) {
	eng := containertest.Podman(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	host := containertest.Registry(t)
	containertest.Push(t, host+"/probe:v1", containertest.ProbeImage(t, "a"))
	pin, err := container.Resolve(ctx, host+"/probe:v1", container.InsecureLoopback())
	if err != nil {
		t.Fatal(err)
	}
	containertest.RemoveImages(t, eng, pin.String())
	out := t.TempDir()
	var log bytes.Buffer
	_, err = eng.Run(ctx, container.Spec{
		Image:  pin,
		Args:   []string{"env", ";", "mkdir", "/out/d", ";", "write", "/out/d/f", "hello", ";", "try-write", "/etc/x"},
		Output: container.Mount{Source: out, Target: "/out"},
		Log:    &log,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if got, err := os.ReadFile(filepath.Join(out, "d", "f")); err != nil || string(got) != "hello" {
		t.Errorf("output %q, %v", got, err)
	}
	for _, want := range []string{"env VARIANT=a\n", "try-write /etc/x: "} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
}
