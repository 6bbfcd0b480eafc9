//go:build !amd64

package embed

// haveDot4x2 is a variable, as on amd64, so that tests can switch it.
var haveDot4x2 = false

func dot4x2(w *float32, stride int, x0, x1 *float32, n int, acc *[64]float32) {
	panic("embed: dot4x2 needs amd64")
}
