package engine

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/bench/dag"
)

func benchPipeline(b *testing.B, n int, style dag.Style) (string, *Config) {
	dir := b.TempDir()
	if err := dag.Write(dir, n, style); err != nil {
		b.Fatal(err)
	}
	cfg, diags := Load(filepath.Join(dir, "pipeline.hcl"))
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	return dir, cfg
}

// BenchmarkLoadExpand10k is parsing and expanding a 10,000-instance sweep.
func BenchmarkLoadExpand10k(b *testing.B) {
	dir, _ := benchPipeline(b, 10000, dag.ForEach)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cfg, diags := Load(filepath.Join(dir, "pipeline.hcl"))
		if diags.HasErrors() {
			b.Fatal(diags.Error())
		}
		if _, diags := Expand(cfg, Options{}); diags.HasErrors() {
			b.Fatal(diags.Error())
		}
	}
}

// BenchmarkNoopRun1k is a run of 1,002 cached instances.
func BenchmarkNoopRun1k(b *testing.B) {
	dir, cfg := benchPipeline(b, 1000, dag.ForEach)
	g, _ := Expand(cfg, Options{})
	st, _ := artifacts.Open(filepath.Join(dir, ".lacuna"))
	x := &Executor{Store: st, Jobs: 2, Pipeline: filepath.Join(dir, "pipeline.hcl")}
	if _, _, err := x.Run(context.Background(), g, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, sum, err := x.Run(context.Background(), g, nil); err != nil || sum.Cached != 1002 {
			b.Fatal(err, sum)
		}
	}
}
