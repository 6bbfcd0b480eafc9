package pyapi

import (
	"maps"
	"testing"
)

// BenchmarkSurface measures one helper run on the fixture's 2.0 (its slow
// module left out): interpreter start, imports, listing, JSON.
func BenchmarkSurface(b *testing.B) {
	files := maps.Clone(shapesFiles["2.0"])
	delete(files, "shapes/slow.py")
	dir := b.TempDir()
	writeTree(b, dir, files)
	py := python(b)
	b.ResetTimer()
	for range b.N {
		s, err := Surface(b.Context(), py, []string{dir}, "shapes")
		if err != nil {
			b.Fatal(err)
		}
		if len(s.APIs) == 0 {
			b.Fatal("no API")
		}
	}
}
