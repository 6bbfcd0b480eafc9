package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// memoryFloor is the least memory lacuna lets itself use before the
// garbage collector works harder.
const memoryFloor = 96 << 20

// governMemory keeps the soft memory limit at twice the live heap, and at
// least memoryFloor. Decoding many small Parquet files makes garbage far
// faster than live data; with a fixed GOGC the heap of a 10,000-node run
// peaks well above what it holds. Pipelines that really hold more get a
// limit that grows with them (the same heap goal as GOGC=100), so large
// data never makes the collector thrash. GOMEMLIMIT, when set, wins.
func governMemory(ctx context.Context) {
	if env.memLimitSet {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	set := func() {
		metrics.Read(sample)
		limit := int64(memoryFloor)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			if live := int64(sample[0].Value.Uint64()); 2*live+16<<20 > limit {
				limit = 2*live + 16<<20
			}
		}
		debug.SetMemoryLimit(limit)
	}
	set()
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				set()
			}
		}
	}()
}
