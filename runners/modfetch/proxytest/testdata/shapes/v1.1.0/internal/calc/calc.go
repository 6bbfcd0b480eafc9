// Package calc is internal to the module.
package calc

// Add returns the sum of the two integers a and b.
func Add(a, b int) int { return a + b }
