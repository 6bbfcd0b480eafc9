// Package mine is the fixture of the example miners' tests.
package mine

import "strings"

// Double returns twice x.
func Double(x int) int { return 2 * x }

// Join joins words with a comma.
func Join(words ...string) string { return strings.Join(words, ",") }

// Bag holds values.
type Bag[T any] struct{ items []T }

// Add puts v in the bag.
func (b *Bag[T]) Add(v T) { b.items = append(b.items, v) }

// Len is how many values the bag holds.
func (b *Bag[T]) Len() int { return len(b.items) }

func secret() int { return 42 }

var hidden = 3

func plusHidden(x int) int { return x + hidden }
