// Command bm25 is the Go side of bench/bm25.sh: runners/bm25 against
// rank_bm25 on the released ToolSense RRB corpus.
//
//	bm25 tokens RRB.jsonl TOKENS.json   catalog and queries, tokenized
//	bm25 time TOKENS.json REPS TOP.i64  timings as one JSON line on stdout
//
// The catalog and the documents are the retrieve node's
// (toolsense.ReadRRB, toolsense.DocText, bm25.Tokenize), as in the parity
// test of runners/bm25. Both sides index the same token lists from
// TOKENS.json, so tokenization is outside every timing.
package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/lacuna-dev/lacuna/runners/bm25"
	"github.com/lacuna-dev/lacuna/toolsense"
)

type corpus struct {
	Docs    [][]string `json:"docs"`
	Queries [][]string `json:"queries"`
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bm25:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	switch {
	case len(args) == 3 && args[0] == "tokens":
		return tokens(args[1], args[2])
	case len(args) == 4 && args[0] == "time":
		reps, err := strconv.Atoi(args[2])
		if err != nil || reps < 1 {
			return fmt.Errorf("REPS %q: want a positive integer", args[2])
		}
		return timeIt(args[1], reps, args[3])
	}
	return fmt.Errorf("usage: bm25 tokens RRB.jsonl TOKENS.json | bm25 time TOKENS.json REPS TOP.i64")
}

func tokens(rrb, out string) error {
	f, err := os.Open(rrb)
	if err != nil {
		return err
	}
	defer f.Close()
	queries, catalog, err := toolsense.ReadRRB(f, rrb)
	if err != nil {
		return err
	}
	var c corpus
	for _, q := range queries {
		c.Queries = append(c.Queries, bm25.Tokenize(q))
	}
	for _, t := range catalog {
		c.Docs = append(c.Docs, bm25.Tokenize(toolsense.DocText(t)))
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

func timeIt(path string, reps int, topOut string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var c corpus
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	b = nil
	const k = 50
	var build, scores, top []float64
	var ix *bm25.Index
	for range reps {
		t := time.Now()
		ix = bm25.New(c.Docs, bm25.Options{})
		build = append(build, time.Since(t).Seconds())
	}
	for range reps {
		t := time.Now()
		for _, q := range c.Queries {
			ix.Scores(q)
		}
		scores = append(scores, time.Since(t).Seconds())
	}
	var tops []int64
	for r := range reps {
		t := time.Now()
		for _, q := range c.Queries {
			hits := ix.Top(q, k)
			if r == 0 {
				for _, h := range hits {
					tops = append(tops, int64(h.Doc))
				}
			}
		}
		top = append(top, time.Since(t).Seconds())
	}
	out := make([]byte, 0, 8*len(tops))
	for _, d := range tops {
		out = binary.LittleEndian.AppendUint64(out, uint64(d))
	}
	if err := os.WriteFile(topOut, out, 0o644); err != nil {
		return err
	}
	// The index's own heap: live bytes with and without one index.
	ix = nil
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	ix = bm25.New(c.Docs, bm25.Options{})
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(ix)
	nq := float64(len(c.Queries))
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"impl":        "lacuna runners/bm25 (Go " + runtime.Version() + ")",
		"docs":        len(c.Docs),
		"queries":     len(c.Queries),
		"build_s":     median(build),
		"scores_qps":  nq / median(scores),
		"top50_qps":   nq / median(top),
		"index_bytes": int64(m1.HeapAlloc) - int64(m0.HeapAlloc),
	})
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}
