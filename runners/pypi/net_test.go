package pypi_test

import (
	"context"
	"os"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/pypi"
)

// TestRealPyPI resolves pydantic at 2024-09-19 through pypi.org's simple
// API and cross-checks its releases with the JSON API. Opt-in: it needs
// the network (LACUNA_TEST_NET=1). It checks the chosen releases' sides
// of the cutoff, not which they are.
func TestRealPyPI(t *testing.T) {
	if os.Getenv("LACUNA_TEST_NET") == "" {
		t.Skip("set LACUNA_TEST_NET=1 to use pypi.org")
	}
	ctx := context.Background()
	idx, err := pypi.NewIndex("")
	if err != nil {
		t.Fatal(err)
	}
	c := cutoff("2024-09-19")
	res, err := pypi.Resolve(ctx, idx, "pydantic", c, pypi.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Old.Time.After(c) || !res.New.Time.After(c) || pypi.Compare(res.Old.Version, res.New.Version) >= 0 {
		t.Errorf("%s (%s) → %s (%s)", res.Old.Listed, res.Old.Time, res.New.Listed, res.New.Time)
	}
	p, err := idx.Project(ctx, "pydantic")
	if err != nil {
		t.Fatal(err)
	}
	d, err := idx.CrossCheck(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range d {
		if x.Version == res.Old.Listed || x.Version == res.New.Listed {
			t.Errorf("the JSON API disagrees on a chosen release: %s: %s", x.Version, x.What)
		}
	}
	t.Logf("%s\n%d releases, %d disagreements with the JSON API: %v", res.Why, len(res.Releases), len(d), d)
}
