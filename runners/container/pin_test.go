package container

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestResolvePinsATagToItsRegistryDigest(t *testing.T) {
	ctx := context.Background()
	host := startRegistry(t)
	img := probeImage(t, "a")
	want := push(t, host+"/probe:v1", img)

	p, err := Resolve(ctx, host+"/probe:v1", InsecureLoopback())
	if err != nil {
		t.Fatal(err)
	}
	if p.Digest != want.String() || p.Repo != host+"/probe" || p.Local || !p.Insecure {
		t.Fatalf("Resolve = %+v, want digest %s in %s/probe, insecure", p, want, host)
	}
	if p.String() != host+"/probe@"+want.String() {
		t.Errorf("String = %s", p.String())
	}

	// A reference by digest is pinned as it is, with no registry asked:
	// this one names a manifest the registry does not hold.
	absent := host + "/probe@sha256:" + strings.Repeat("0", 64)
	q, err := Resolve(ctx, absent)
	if err != nil || q.String() != absent {
		t.Errorf("Resolve(%s) = %+v, %v", absent, q, err)
	}

	// Without InsecureLoopback the registry is still reached (go-containerregistry
	// speaks plain HTTP to loopback hosts) but the pull would verify TLS.
	r, err := Resolve(ctx, host+"/probe:v1")
	if err != nil || r.Digest != want.String() || r.Insecure {
		t.Errorf("Resolve without InsecureLoopback = %+v, %v", r, err)
	}

	if _, err := Resolve(ctx, host+"/probe:absent", InsecureLoopback()); err == nil || !strings.Contains(err.Error(), "probe:absent") {
		t.Errorf("an absent tag resolved: %v", err)
	}
}

func TestResolveSeesARetaggedImage(t *testing.T) {
	ctx := context.Background()
	host := startRegistry(t)
	ref := host + "/probe:latest"
	a := push(t, ref, probeImage(t, "a"))
	before, err := Resolve(ctx, ref, InsecureLoopback())
	if err != nil {
		t.Fatal(err)
	}
	if msg, moved := Moved(before, before); moved {
		t.Errorf("a pin moved from itself: %s", msg)
	}
	again, err := Resolve(ctx, ref, InsecureLoopback())
	if err != nil {
		t.Fatal(err)
	}
	if _, moved := Moved(before, again); moved {
		t.Error("a tag nobody touched moved")
	}

	b := push(t, ref, probeImage(t, "b"))
	if a == b {
		t.Fatal("the two variants have one digest")
	}
	after, err := Resolve(ctx, ref, InsecureLoopback())
	if err != nil {
		t.Fatal(err)
	}
	if before.String() == after.String() || after.Digest != b.String() {
		t.Fatalf("after the retag: %s, before %s (want %s)", after, before, b)
	}
	msg, moved := Moved(before, after)
	want := "tag " + ref + " moved from " + a.String() + " to " + b.String()
	if !moved || msg != want {
		t.Errorf("Moved = %q, %v; want %q", msg, moved, want)
	}
}

// fakeImages is not the thing under test: it stands for an engine's store
// in the test of Resolve's fallback order (the real engine's is tested in
// TestLocalOnlyImageResolvesToItsEngineID).
type fakeImages map[string]string

func (f fakeImages) ImageID(_ context.Context, ref string) (string, error) {
	if id, ok := f[ref]; ok {
		return id, nil
	}
	return "", errors.New("no such image")
}

func TestResolveFallsBackToTheEngineOnlyWithoutARegistry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	host := startRegistry(t)
	want := push(t, host+"/probe:v1", probeImage(t, "a"))
	id := "sha256:" + strings.Repeat("1", 64)
	local := fakeImages{host + "/probe:v1": id, host + "/probe:dev": id}

	// The registry holds v1: the engine's copy is not asked.
	p, err := Resolve(ctx, host+"/probe:v1", WithLocal(local))
	if err != nil || p.Local || p.Digest != want.String() {
		t.Errorf("Resolve(v1) = %+v, %v; want the registry's %s", p, err, want)
	}
	// dev is only in the engine.
	start := time.Now()
	p, err = Resolve(ctx, host+"/probe:dev", WithLocal(local))
	if err != nil || !p.Local || p.Digest != id || p.String() != id {
		t.Errorf("Resolve(dev) = %+v, %v; want the local %s", p, err, id)
	}
	t.Logf("a local-only image resolved in %v", time.Since(start).Round(time.Millisecond))
	// Neither holds it: both say so.
	_, err = Resolve(ctx, host+"/probe:nowhere", WithLocal(local))
	if err == nil || !strings.Contains(err.Error(), "not in a registry") || !strings.Contains(err.Error(), "no such image") {
		t.Errorf("Resolve(nowhere): %v", err)
	}
}
