// Command embed times runners/embed on a file of texts, one a line, for
// bench/embed.sh: after one warm-up pass it embeds the texts REPS times
// with GOMAXPROCS goroutines and prints a JSON object: texts/s, model load
// time, threads, the CPU's vector features, the kernel that ran, the
// useful GFLOP/s (the encoder's matrix products, Model.EncoderFLOPs, per
// second of wall time and of the process's CPU time) and the FMA peak
// they are a fraction of.
//
//	embed MODEL_DIR TEXTS_FILE REPS OUT.f32 [KERNEL]
//	embed peak THREADS LANES
//
// KERNEL is one of embed.Kernels (default: the fastest this CPU runs).
// OUT.f32 receives the vectors of the last pass (little-endian float32),
// for the cosine check against sentence-transformers. "embed peak" only
// measures the peak, for LANES of 8 (AVX2) or 16 (AVX-512).
//
// The peak is measured, not computed from a clock rate: one goroutine per
// thread, each locked to its OS thread, runs 12 independent FMAs a cycle
// on registers of the kernel's width (peak_amd64.s); each thread's rate is
// its FLOPs over its own CPU time, so the time it waited for a CPU that
// other processes held does not count; the peak is the sum over threads,
// best of 5 tries. The clock rate it implies (at two FMA units a core) is
// printed beside the one /proc/cpuinfo reports.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lacuna-dev/lacuna/runners/embed"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 3 && args[0] == "peak" {
		threads, err1 := strconv.Atoi(args[1])
		lanes, err2 := strconv.Atoi(args[2])
		if err1 != nil || err2 != nil || threads < 1 || (lanes != 8 && lanes != 16) {
			return fmt.Errorf("usage: embed peak THREADS LANES (8 or 16)")
		}
		p := peak(lanes, threads)
		if p == 0 {
			return fmt.Errorf("no FMA loop of %d lanes on this CPU", lanes)
		}
		return json.NewEncoder(os.Stdout).Encode(map[string]any{
			"threads": threads, "lanes": lanes, "features": features(),
			"peak_gflops_per_thread": p, "peak_gflops": p * float64(threads), "ghz_implied": p / (2 * float64(lanes) * 2),
		})
	}
	if len(args) != 4 && len(args) != 5 {
		return fmt.Errorf("usage: embed MODEL_DIR TEXTS_FILE REPS OUT.f32 [KERNEL] | embed peak THREADS LANES")
	}
	reps, err := strconv.Atoi(args[2])
	if err != nil || reps < 1 {
		return fmt.Errorf("REPS %q: want a positive integer", args[2])
	}
	raw, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	texts := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	var opts []embed.Option
	if len(args) == 5 && args[4] != "" {
		opts = append(opts, embed.WithKernel(args[4]))
	}
	start := time.Now()
	m, err := embed.Load(args[0], embed.Mean, opts...)
	if err != nil {
		return err
	}
	load := time.Since(start)
	threads := runtime.GOMAXPROCS(0)
	var flop float64 // per pass
	for _, t := range texts {
		flop += m.EncoderFLOPs(len(m.Tokens(t)))
	}
	ctx := context.Background()
	if _, err := m.Embed(ctx, texts, threads); err != nil {
		return err
	}
	var vecs [][]float32
	cpu0 := processCPU()
	start = time.Now()
	for i := 0; i < reps; i++ {
		if vecs, err = m.Embed(ctx, texts, threads); err != nil {
			return err
		}
	}
	elapsed := time.Since(start).Seconds()
	cpuSec := processCPU() - cpu0
	var out []byte
	for _, v := range vecs {
		for _, x := range v {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
		}
	}
	if err := os.WriteFile(args[3], out, 0o644); err != nil {
		return err
	}
	model, mhz := cpuinfo()
	res := map[string]any{
		"impl":           "lacuna (runners/embed)",
		"texts":          len(texts),
		"threads":        threads,
		"batch":          threads,
		"load_s":         load.Seconds(),
		"tps":            float64(reps*len(texts)) / elapsed,
		"kernel":         m.Kernel(),
		"lanes":          m.KernelLanes(),
		"kernels":        embed.Kernels(),
		"cpu":            model,
		"cpuinfo_mhz":    mhz,
		"features":       features(),
		"gflop_per_text": flop / float64(len(texts)) / 1e9,
		"gflops":         float64(reps) * flop / elapsed / 1e9,
	}
	if cpuSec > 0 {
		res["cpu_s"] = cpuSec
		res["gflops_per_cpu_s"] = float64(reps) * flop / cpuSec / 1e9
	}
	if perThread := peak(m.KernelLanes(), threads); perThread > 0 {
		res["peak_gflops"] = perThread * float64(threads)
		res["peak_ghz"] = perThread / (2 * float64(m.KernelLanes()) * 2)
		res["peak_frac"] = res["gflops"].(float64) / (perThread * float64(threads))
		if g, ok := res["gflops_per_cpu_s"].(float64); ok {
			res["peak_frac_cpu"] = g / perThread
		}
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// peak returns the FMA peak of one thread in GFLOP/s at the vector width
// lanes, measured on threads threads at once (see the package comment), 0
// where it cannot be measured.
func peak(lanes, threads int) float64 {
	loop, perIter := fmaLoop(lanes)
	if loop == nil || threadCPU() == 0 {
		return 0
	}
	const iters = 20_000_000
	best := 0.0
	for try := 0; try < 5; try++ {
		rates := make([]float64, threads)
		var wg sync.WaitGroup
		for t := range rates {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c := threadCPU()
				loop(iters)
				if c = threadCPU() - c; c > 0 {
					rates[t] = iters * perIter / c / 1e9
				}
			}()
		}
		wg.Wait()
		sum := 0.0
		for _, r := range rates {
			sum += r
		}
		best = max(best, sum/float64(threads))
	}
	return best
}

// cpuinfo returns the model name and clock rate (MHz) /proc/cpuinfo gives
// for the first CPU, empty and 0 where it cannot be read.
func cpuinfo() (string, float64) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "", 0
	}
	defer f.Close()
	var model string
	var mhz float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			if model == "" {
				model = strings.TrimSpace(v)
			}
		case "cpu MHz":
			if mhz == 0 {
				mhz, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
			}
		}
	}
	return model, mhz
}
