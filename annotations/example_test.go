package annotations_test

import (
	"fmt"

	"github.com/lacuna-dev/lacuna/annotations"
)

// Two raters labelled the same six samples; they agree on five.
func ExampleKappa() {
	person := []string{"WrongLogic", "WrongLogic", "WrongLogic", "OK", "OK", "WrongParam"}
	judge := []string{"WrongLogic", "WrongLogic", "OK", "OK", "OK", "WrongParam"}
	k, n := annotations.Kappa(person, judge)
	fmt.Printf("κ = %.3f over %d pairs\n", k, n)
	// Output: κ = 0.739 over 6 pairs
}

// Labels join a judge node's rows by the row's item key.
func ExampleJudgeItem() {
	fmt.Println(annotations.JudgeItem("lo/Map/easy", "S#0", "qwen", "S"))
	fmt.Println(annotations.RRBItem("bb5ffd3b-5f7a-4f7a-b64c-d29589494a93"))
	// Output:
	// "lo/Map/easy" "S#0" "qwen" "S"
	// "bb5ffd3b-5f7a-4f7a-b64c-d29589494a93"
}
