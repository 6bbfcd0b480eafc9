package goharness

import (
	"context"
	"testing"
)

// BenchmarkRunUnits builds and runs 48 harnesses of the fixture's Scale
// task (the reference), each in a process of its own: under the
// supervisor (a sandbox per chunk of units, reset between them) and with
// a sandbox per unit. The metrics split the time into the batched build
// and the runs:
//
//	go test ./novelapibench/goharness -run '^$' -bench RunUnits -benchtime 3x
func BenchmarkRunUnits(b *testing.B) {
	f := newSpiedFixture(b, Target{ID: "example.com/shapes.Scale", Package: "example.com/shapes", Name: "Scale"})
	if !f.supervise {
		b.Skip("needs bubblewrap")
	}
	units := make([]Unit, 48)
	for i := range units {
		u := f.unit(scaleTask, scaleTask.ReferenceAnswer(), 1)
		u.Index = i
		units[i] = Harness(u)
	}
	for _, mode := range []struct {
		name      string
		supervise bool
	}{{"supervised", true}, {"sandbox-each", false}} {
		b.Run(mode.name, func(b *testing.B) {
			var build, run float64
			for b.Loop() {
				runs, st, err := RunUnits(context.Background(), f.tc, f.mod, units, f.opts, RunConfig{Dir: f.work, Parallel: 2, Supervise: mode.supervise})
				if err != nil {
					b.Fatal(err)
				}
				for i, r := range runs {
					if r.Record == nil {
						b.Fatalf("unit %d: %v %+v", i, r.Err, r.Process)
					}
				}
				build += st.Build
				run += st.Run
			}
			b.ReportMetric(1000*run/float64(b.N*len(units)), "run-ms/unit")
			b.ReportMetric(1000*build/float64(b.N*len(units)), "build-ms/unit")
		})
	}
}
