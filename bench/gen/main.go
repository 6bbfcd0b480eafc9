// Command gen writes a benchmark pipeline (see package dag):
//
//	go run ./bench/gen -n 1000 -style blocks -out /tmp/bench1k
//	go run ./bench/gen -edit -style blocks -out /tmp/bench1k
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/lacuna-dev/lacuna/bench/dag"
)

func main() {
	n := flag.Int("n", 1000, "number of sample nodes")
	style := flag.String("style", "blocks", "blocks (N node blocks) or for_each (one block, N instances)")
	out := flag.String("out", "", "directory to write")
	edit := flag.Bool("edit", false, "change one sample node's seed in an existing pipeline")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gen: -out is required")
		os.Exit(2)
	}
	var err error
	if *edit {
		err = dag.EditOne(*out, dag.Style(*style))
	} else {
		err = dag.Write(*out, *n, dag.Style(*style))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
