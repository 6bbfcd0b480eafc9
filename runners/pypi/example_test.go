package pypi_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/lacuna-dev/lacuna/runners/pypi"
	"github.com/lacuna-dev/lacuna/runners/pypi/pypitest"
)

// ExampleResolve resolves a project against a cutoff through a PEP 691
// index (here the fixture index; "" would be pypi.org).
func ExampleResolve() {
	fixture := pypitest.NewIndex()
	if err := fixture.Publish(pypitest.DemoProject, pypitest.Demo(nil)...); err != nil {
		panic(err)
	}
	srv := httptest.NewServer(fixture)
	defer srv.Close()

	idx, err := pypi.NewIndex(srv.URL + "/simple/")
	if err != nil {
		panic(err)
	}
	cutoff := time.Date(2024, 9, 19, 23, 59, 59, 0, time.UTC)
	res, err := pypi.Resolve(context.Background(), idx, "Lacuna_Demo", cutoff, pypi.ResolveOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Old.Listed, res.Old.Time.Format("2006-01-02"), "→", res.New.Listed, res.New.Time.Format("2006-01-02"))
	// Output: 1.2.0 2024-09-01 → 1.3.0 2024-11-01
}

func ExampleCompare() {
	a, _ := pypi.ParseVersion("1.0rc1")
	b, _ := pypi.ParseVersion("1.0.post1")
	fmt.Println(pypi.Compare(a, b), a.IsPrerelease(), b.IsPrerelease())
	// Output: -1 true false
}
