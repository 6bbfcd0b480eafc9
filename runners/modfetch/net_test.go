package modfetch

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestRealProxyAndChecksumDatabase resolves and downloads a real module
// through proxy.golang.org, verified by sum.golang.org. Opt-in: it needs
// the network (LACUNA_TEST_NET=1).
func TestRealProxyAndChecksumDatabase(t *testing.T) {
	if os.Getenv("LACUNA_TEST_NET") == "" {
		t.Skip("set LACUNA_TEST_NET=1 to use proxy.golang.org and sum.golang.org")
	}
	p, err := NewProxy(Env{})
	if err != nil {
		t.Fatal(err)
	}
	cutoff, _ := time.Parse("2006-01-02", "2024-06-01")
	r, err := Resolve(context.Background(), p, "github.com/samber/lo", cutoff.Add(24*time.Hour-1), ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Old.Version != "v1.39.0" {
		t.Errorf("lo at 2024-06-01: v_old %s, want v1.39.0", r.Old.Version)
	}
	f, err := NewFetcher(t.TempDir(), Env{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := f.Download(context.Background(), "github.com/samber/lo", "v1.39.0")
	if err != nil {
		t.Fatal(err)
	}
	if m.Hash != "h1:4gTz1wUhNYLhFSKl6O+8peW0v2F4BCY034GRpU9WnuA=" || m.Verified != "sumdb sum.golang.org" {
		t.Errorf("download %+v", m)
	}
}
