// Package shapes is a test fixture: a small module in two versions.
package shapes

import "example.com/shapes/metric"

// Area returns the area of a w by h rectangle.
func Area(w, h float64) float64 { return w * h }

// OldArea computes the area from integer sides.
//
// Deprecated: use Area.
func OldArea(w, h int) int { return w * h }

// Point is a position on the integer grid.
type Point struct{ X, Y int }

// Coord is another name for a Point, kept for readability.
type Coord = Point

// Rect moved to package metric; this alias keeps old code compiling.
type Rect = metric.Rect

// Number is the set of types Scale accepts.
type Number interface {
	~int | ~int64 | ~float64
}

// Scale multiplies every element of xs by the factor k and returns a new
// slice; xs is left as it was.
func Scale[T Number](xs []T, k T) []T {
	out := make([]T, len(xs))
	copy(out, xs)
	mulAll(out, k)
	return out
}

// ScaleErr is like Scale but refuses a zero factor k with an error.
func ScaleErr[T Number](xs []T, k T) ([]T, error) {
	if k == 0 {
		return nil, errZero
	}
	return Scale(xs, k), nil
}

// mulAll multiplies in place.
func mulAll[T Number](xs []T, k T) {
	for i := range xs {
		xs[i] *= k // scale one element
	}
}

var errZero = zeroError{}

type zeroError struct{}

func (zeroError) Error() string { return "shapes: zero factor" }

// Tiny does little.
func Tiny() {}

// Clamp limits the value v to the closed range between lo and hi.
func Clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// Apply calls f on every element of xs and returns the results in order.
func Apply(xs []int, f func(int) int) []int {
	out := make([]int, 0, len(xs))
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

// Shape is anything that has an area.
type Shape interface{ Area() float64 }

// TotalArea adds up the areas of all the shapes it is given.
func TotalArea(all ...Shape) float64 {
	sum := 0.0
	for _, s := range all {
		sum += s.Area()
	}
	return sum
}
