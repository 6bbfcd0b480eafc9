// Command embed times runners/embed on a file of texts, one a line, for
// bench/embed.sh: after one warm-up pass it embeds the texts REPS times
// with GOMAXPROCS texts at once and prints a JSON object (texts/s, model
// load time, threads).
//
//	embed MODEL_DIR TEXTS_FILE REPS OUT.f32
//
// OUT.f32 receives the vectors of the last pass (little-endian float32),
// for the cosine check against sentence-transformers.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
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
	if len(args) != 4 {
		return fmt.Errorf("usage: embed MODEL_DIR TEXTS_FILE REPS OUT.f32")
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
	start := time.Now()
	m, err := embed.Load(args[0], embed.Mean)
	if err != nil {
		return err
	}
	load := time.Since(start)
	threads := runtime.GOMAXPROCS(0)
	ctx := context.Background()
	if _, err := m.Embed(ctx, texts, threads); err != nil {
		return err
	}
	var vecs [][]float32
	start = time.Now()
	for i := 0; i < reps; i++ {
		if vecs, err = m.Embed(ctx, texts, threads); err != nil {
			return err
		}
	}
	elapsed := time.Since(start)
	var out []byte
	for _, v := range vecs {
		for _, x := range v {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
		}
	}
	if err := os.WriteFile(args[3], out, 0o644); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"impl":    "lacuna (runners/embed)",
		"texts":   len(texts),
		"threads": threads,
		"batch":   threads,
		"load_s":  load.Seconds(),
		"tps":     float64(reps*len(texts)) / elapsed.Seconds(),
	})
}
