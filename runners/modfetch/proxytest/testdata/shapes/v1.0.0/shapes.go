// Package shapes is a test fixture: a small module in two versions.
package shapes

// Area returns the area of a w by h rectangle.
func Area(w, h float64) float64 { return w * h }

// Point is a position on the integer grid.
type Point struct{ X, Y int }

// Rect is an axis-aligned rectangle given by two corners.
type Rect struct{ Min, Max Point }

// Dx returns the width of the rectangle r.
func (r Rect) Dx() int { return r.Max.X - r.Min.X }
