package pyenv

import (
	"context"
	"os"
	"testing"
	"time"
)

// The uv installer needs uv, which is bootstrapped from PyPI: these tests
// run only with LACUNA_TEST_NET=1.

// netCache is a cache with the named installer ("uv": bootstrapped from
// PyPI into the test's directory, or "pip"), allowed to reach PyPI.
func netCache(t *testing.T, installer string) *Cache {
	t.Helper()
	if os.Getenv("LACUNA_TEST_NET") != "1" {
		t.Skip("needs PyPI: set LACUNA_TEST_NET=1")
	}
	c := pipCache(t) // the interpreter
	opt := testOptions()
	opt.CertFile = os.Getenv("SSL_CERT_FILE") // a TLS-inspecting proxy's CA, where there is one
	var err error
	start := time.Now()
	if installer == "uv" {
		c.Installer, err = BootstrapUV(context.Background(), t.TempDir(), "", c.Python, opt)
	} else {
		c.Installer, err = NewPip(context.Background(), shared.dir, c.Python, opt)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s ready in %s", c.Installer, time.Since(start).Round(time.Millisecond))
	return c
}

func TestUVEachVersionGetsItsPeriodsDependencies(t *testing.T) {
	checkPeriodDependencies(t, netCache(t, "uv"))
}

func TestUVBadInputFailsNamingTheRelease(t *testing.T) { checkBadInput(t, netCache(t, "uv")) }

// TestInstallsFromPyPI makes the environment of a real release as of its
// release day with each installer, twice (the second from the cache).
func TestInstallsFromPyPI(t *testing.T) {
	for _, inst := range []string{"uv", "pip"} {
		t.Run(inst, func(t *testing.T) {
			c := netCache(t, inst)
			ctx := context.Background()
			spec := Spec{Name: "pydantic", Version: "2.5.0", ExcludeNewer: ExcludeNewerFor(time.Date(2023, 11, 13, 17, 17, 45, 0, time.UTC))}
			start := time.Now()
			env, err := c.Create(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			cold := time.Since(start)
			start = time.Now()
			again, err := c.Create(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			warm := time.Since(start)
			start = time.Now()
			if _, err := c.Install(ctx, env.Lock, ""); err != nil {
				t.Fatal(err)
			}
			t.Logf("pydantic==2.5.0 with %s: cold %s, warm Create (resolve + cache hit) %s, Install of the pinned lock %s\n%s", c.Installer,
				cold.Round(time.Millisecond), warm.Round(time.Millisecond), time.Since(start).Round(time.Microsecond), env.Lock.Text())
			if again.Dir != env.Dir {
				t.Errorf("second create made %s, first %s", again.Dir, env.Dir)
			}
			if got := pyRun(t, env, "import pydantic; print(pydantic.VERSION)"); got != "2.5.0" {
				t.Errorf("pydantic.VERSION = %q", got)
			}
			for _, p := range env.Lock.Packages {
				if p.Name == "typing-extensions" && p.Version != "4.8.0" {
					t.Errorf("typing-extensions %s, want 4.8.0 (the newest on 2023-11-14)", p.Version)
				}
			}
		})
	}
}
