package goharness

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/goapi"
	"github.com/lacuna-dev/lacuna/runners/gotool"
	"github.com/lacuna-dev/lacuna/runners/modfetch"
)

// benchHarnesses prepares n harness units (the fixture's Scale task, the
// reference solution) under the spy.
func benchHarnesses(b *testing.B, n int) (*gotool.Toolchain, *modfetch.Module, []gotool.Unit, gotool.BatchOptions) {
	abs, _ := filepath.Abs(fixtureNew)
	exs, err := goapi.Examples(abs)
	if err != nil {
		b.Fatal(err)
	}
	var ex goapi.Example
	for _, e := range exs {
		if e.Name == "ExampleScale" {
			ex = e
		}
	}
	tg := Target{ID: "example.com/shapes.Scale", Package: "example.com/shapes", Name: "Scale"}
	tasks, _, err := TasksFromExample(ex, tg)
	if err != nil {
		b.Fatal(err)
	}
	f := newSpiedFixture(b, tg.ID)
	units := make([]gotool.Unit, n)
	for i := range units {
		units[i] = Harness(tasks[0], tasks[0].Mask, i, f.access, tg.Package, "example.com/shapes", nil)
	}
	return f.tc, f.mod, units, f.opts
}

// BenchmarkHarnessesBatched runs 24 harnesses in one go test (how solve
// runs them); compare with BenchmarkHarnessesOneGoTestEach:
//
//	go test ./novelapibench/goharness -run '^$' -bench Harnesses -benchtime 3x
func BenchmarkHarnessesBatched(b *testing.B) {
	tc, mod, units, opts := benchHarnesses(b, 24)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tc.RunBatch(context.Background(), mod, units, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N*len(units)), "s/harness")
}

// BenchmarkHarnessesOneGoTestEach is the peer: one go test per harness.
func BenchmarkHarnessesOneGoTestEach(b *testing.B) {
	tc, mod, units, opts := benchHarnesses(b, 24)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, u := range units {
			if _, err := tc.RunBatch(context.Background(), mod, []gotool.Unit{u}, opts); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N*len(units)), "s/harness")
}
