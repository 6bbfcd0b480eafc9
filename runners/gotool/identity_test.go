package gotool

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The toolchain's identity comes from the environment it was given, never
// the process's, and names the version and the build settings.
func TestIdentityReadsTheGivenEnvironment(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goBin, "env", "GOVERSION").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(out))
	t.Setenv("GOFLAGS", "-tags=fromtheprocess")
	path := "PATH=" + os.Getenv("PATH")
	for _, tc := range []struct {
		name    string
		environ []string
		want    map[string]string
	}{
		{"plain", []string{path}, map[string]string{"toolchain": version, "go.GOFLAGS": "-mod=mod -modcacherw", "go.CGO_ENABLED": "0"}},
		{"user GOFLAGS", []string{path, "GOFLAGS=-tags=given"}, map[string]string{"go.GOFLAGS": "-tags=given -mod=mod -modcacherw"}},
		{"experiment", []string{path, "GOEXPERIMENT=jsonv2"}, map[string]string{"go.GOEXPERIMENT": "jsonv2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc0, err := NewToolchain(t.TempDir(), Options{Environ: tc.environ})
			if err != nil {
				t.Fatal(err)
			}
			id, err := tc0.Identity(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.want {
				if id[k] != v {
					t.Errorf("%s = %q, want %q (identity %v)", k, id[k], v, id)
				}
			}
			if strings.Contains(id["go.GOFLAGS"], "fromtheprocess") {
				t.Errorf("the process's GOFLAGS leaked into the identity: %v", id)
			}
		})
	}
	if _, err := NewToolchain(t.TempDir(), Options{Environ: []string{"PATH=/nonexistent"}}); err == nil && !fileExists("/usr/local/go/bin/go") {
		t.Error("a PATH without go found a go command")
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
