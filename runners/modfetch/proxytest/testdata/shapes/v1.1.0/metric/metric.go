// Package metric holds measures on the grid.
package metric

// Manhattan returns the taxicab distance between two grid points.
func Manhattan(x1, y1, x2, y2 int) int { return abs(x1-x2) + abs(y1-y2) }

// Point is a position on the integer grid.
type Point struct{ X, Y int }

// Rect is an axis-aligned rectangle given by two corners.
type Rect struct{ Min, Max Point }

// Dx returns the width of the rectangle r.
func (r Rect) Dx() int { return r.Max.X - r.Min.X }

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
