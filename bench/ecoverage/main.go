// Command ecoverage is the Go side of bench/e_coverage.sh: for every
// library, the C1-kept tasks whose E (the examples a prompt shows of the
// task's bundle) is not empty, by the rule generate renders E with
// (cells.SelectExamples over the bundle's valid examples, the task's own
// source left out).
//
//	ecoverage [-max N] [-bytes B] LIB C1.jsonl BUNDLE.jsonl [LIB C1.jsonl BUNDLE.jsonl ...]
//
// The files are `lacuna cat --format jsonl` of a c1 node and of the bundle
// node its tasks come from. It prints a Markdown table (library, kept
// tasks, kept tasks with E not empty, share; then the examples per bundle
// by kind, valid ones only) and, with -tasks, every kept task with an
// empty E.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/novelapibench/cells"
)

type task struct {
	TaskID  string `json:"task_id"`
	APIID   string `json:"api_id"`
	Example string `json:"example"`
	Keep    bool   `json:"keep"`
}

type example struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Code   string `json:"code"`
	Output string `json:"output"`
	Valid  bool   `json:"valid"`
}

type bundle struct {
	APIID    string    `json:"api_id"`
	Examples []example `json:"e_examples"`
}

func main() {
	max := flag.Int("max", cells.DefaultExampleLimits.Max, "E's max_examples")
	bytes := flag.Int("bytes", cells.DefaultExampleLimits.Bytes, "E's max_example_bytes")
	list := flag.Bool("tasks", false, "list the kept tasks whose E is empty")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 || len(args)%3 != 0 {
		fmt.Fprintln(os.Stderr, "usage: ecoverage [-max N] [-bytes B] [-tasks] LIB C1.jsonl BUNDLE.jsonl ...")
		os.Exit(2)
	}
	lim := cells.ExampleLimits{Max: *max, Bytes: *bytes}
	fmt.Printf("E as generate renders it (max_examples %d, max_example_bytes %d), C1-kept tasks:\n\n", lim.Max, lim.Bytes)
	fmt.Println("| library | kept tasks | E not empty | share | bundles | valid examples per bundle (mean) | by kind |")
	fmt.Println("|---|---|---|---|---|---|---|")
	var empty []string
	for i := 0; i < len(args); i += 3 {
		lib := args[i]
		tasks, err := readJSONL[task](args[i+1])
		check(err)
		bundles, err := readJSONL[bundle](args[i+2])
		check(err)
		byAPI := map[string]bundle{}
		kinds := map[string]int{}
		valid := 0
		for _, b := range bundles {
			byAPI[b.APIID] = b
			for _, e := range b.Examples {
				if e.Valid {
					valid++
					k := e.Kind
					if k == "" {
						k = "example"
					}
					kinds[k]++
				}
			}
		}
		kept, nonEmpty := 0, 0
		for _, t := range tasks {
			if !t.Keep {
				continue
			}
			kept++
			var vs []cells.Example
			for _, e := range byAPI[t.APIID].Examples {
				if e.Valid {
					vs = append(vs, cells.Example{Name: e.Name, Kind: e.Kind, Code: e.Code, Output: e.Output})
				}
			}
			if len(cells.SelectExamples(vs, t.Example, lim)) > 0 {
				nonEmpty++
			} else {
				empty = append(empty, fmt.Sprintf("%s %s %s (%s)", lib, t.TaskID, t.APIID, t.Example))
			}
		}
		share := "n/a"
		if kept > 0 {
			share = fmt.Sprintf("%.1f%%", 100*float64(nonEmpty)/float64(kept))
		}
		mean := 0.0
		if len(bundles) > 0 {
			mean = float64(valid) / float64(len(bundles))
		}
		var ks []string
		for k, n := range kinds {
			ks = append(ks, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(ks)
		fmt.Printf("| %s | %d | %d | %s | %d | %.2f | %s |\n", lib, kept, nonEmpty, share, len(bundles), mean, strings.Join(ks, ", "))
	}
	if *list && len(empty) > 0 {
		fmt.Println("\nKept tasks with an empty E:")
		for _, e := range empty {
			fmt.Println("-", e)
		}
	}
}

func readJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<28)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "ecoverage:", err)
		os.Exit(1)
	}
}
