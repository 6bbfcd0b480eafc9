package shapes_test

import (
	"fmt"

	"example.com/shapes"
)

func ExampleScale() {
	fmt.Println(shapes.Scale([]int{1, 2, 3}, 2))
	// Output: [2 4 6]
}

func ExampleStack_Push() {
	var s shapes.Stack[string]
	s.Push("a")
	s.Push("b")
	fmt.Println(s.Len())
	// Output: 2
}

// The expected output is wrong on purpose: validation must catch it.
func ExampleStack_Pop() {
	var s shapes.Stack[int]
	s.Push(7)
	v, ok := s.Pop()
	fmt.Println(v, ok)
	// Output: 8 true
}

func ExampleStack_Len() {
	var s shapes.Stack[int]
	for i := 0; i < 3; i++ {
		s.Push(i)
	}
	fmt.Println(s.Len())
	// Output: 3
}

func ExampleApply() {
	double := func(x int) int { return 2 * x }
	fmt.Println(shapes.Apply([]int{1, 2, 3}, double))
	// Output: [2 4 6]
}

type square struct{ side float64 }

func (s square) Area() float64 { return s.side * s.side }

func ExampleTotalArea() {
	fmt.Println(shapes.TotalArea(square{1}, square{2}))
	// Output: 5
}
