package mine_test

import (
	"strconv"
	"testing"

	"example.com/mine"
)

func TestDouble(t *testing.T) {
	t.Parallel()
	// Doubling three gives six.
	if got := mine.Double(3); got != 6 {
		t.Errorf("Double(3) = %d, want 6", got)
	}
	t.Logf("checked %s", t.Name())
}

func TestDoubleTable(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Helper()
			if got := mine.Double(tc.in); got != tc.want {
				t.Fatalf("got %d", got)
			}
		})
	}
}

func TestBag(t *testing.T) {
	var b mine.Bag[string]
	b.Add("x")
	if b.Len() != 1 {
		t.Fatal("one value expected")
	}
}

func TestHandsT(t *testing.T) {
	check(t, mine.Double(1))
}

func TestTempDir(t *testing.T) {
	_ = t.TempDir()
	_ = mine.Double(2)
}

func TestSkips(t *testing.T) {
	if mine.Double(0) == 0 {
		t.Skip("nothing to do")
	}
}

func TestShadowsLog(t *testing.T) {
	log := mine.Join("a", "b")
	if log != "a,b" {
		t.Errorf("got %q", log)
	}
}

func TestUnrelated(t *testing.T) {
	if 1+1 != 2 {
		t.Fatal("arithmetic")
	}
}

func BenchmarkDouble(b *testing.B) {
	b.ReportAllocs()
	x := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x = mine.Double(x)
	}
	_ = x
}

func BenchmarkJoin(b *testing.B) {
	for b.Loop() {
		_ = mine.Join("a", "b")
	}
}

func BenchmarkParallel(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			mine.Double(1)
		}
	})
}

func TestTable(t *testing.T) {
	for name, f := range map[string]func() string{
		"double": func() string { return strconv.Itoa(mine.Double(2)) },
		"join":   func() string { return mine.Join("a", "b") },
	} {
		if f() == "" {
			t.Errorf("%s: empty", name)
		}
	}
}
