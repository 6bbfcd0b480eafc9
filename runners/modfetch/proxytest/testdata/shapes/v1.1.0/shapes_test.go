package shapes_test

import (
	"testing"

	"example.com/shapes"
)

func TestScaleKeepsItsInput(t *testing.T) {
	xs := []int{1, 2, 3}
	got := shapes.Scale(xs, 3)
	if got[2] != 9 || xs[2] != 3 {
		t.Fatalf("Scale(%v, 3) = %v", xs, got)
	}
}

func TestClamp(t *testing.T) {
	for _, c := range []struct{ v, want int }{{-1, 0}, {5, 5}, {11, 10}} {
		t.Run("", func(t *testing.T) {
			if got := shapes.Clamp(c.v, 0, 10); got != c.want {
				t.Errorf("Clamp(%d, 0, 10) = %d, want %d", c.v, got, c.want)
			}
		})
	}
}

// A test that hands its T to a helper is no example.
func TestScaleByHelper(t *testing.T) {
	same(t, shapes.Scale([]int{1}, 1)[0], 1)
}

func same(t *testing.T, got, want int) {
	t.Helper()
	if got != want {
		t.Fatalf("got %d, want %d", got, want)
	}
}

func BenchmarkApply(b *testing.B) {
	xs := []int{1, 2, 3}
	inc := func(x int) int { return x + 1 }
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		shapes.Apply(xs, inc)
	}
}
