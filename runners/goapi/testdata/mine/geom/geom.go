// Package geom measures.
package geom

// Square returns x*x.
func Square(x int) int { return x * x }
