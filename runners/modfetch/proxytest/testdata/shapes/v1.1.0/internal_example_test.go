package shapes

import "fmt"

// describe is a same-file helper the example needs.
func describe(v int) string { return fmt.Sprintf("clamped to %d", v) }

func ExampleClamp() {
	fmt.Println(describe(Clamp(15, 0, 10)))
	// Output: clamped to 10
}

func ExampleScaleErr() {
	_, err := ScaleErr([]int{1}, 0)
	fmt.Println(err, errZero == err)
	// Output: shapes: zero factor true
}
