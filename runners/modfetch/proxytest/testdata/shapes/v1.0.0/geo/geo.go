// Package geo measures distances.
package geo

// Manhattan returns the taxicab distance between two grid points.
func Manhattan(x1, y1, x2, y2 int) int { return abs(x1-x2) + abs(y1-y2) }

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
