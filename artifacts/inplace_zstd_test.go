package artifacts

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestInPlaceZstdRoundTrips compresses pages of every shape the writer
// gives it (short; long and compressible; long and incompressible, whose
// frames outgrow the page; a short page whose buffer shares the long one's
// array, as the writer's two buffers do after a long page) and decodes
// them with parquet-go's own codec.
func TestInPlaceZstdRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	text := func(n int) []byte {
		const alphabet = "abcdefghijklmnopqrstuvwxyz .,"
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return b
	}
	shared := text(3 << 20)
	for _, tc := range []struct {
		name string
		src  []byte
		dst  []byte
	}{
		{"short", text(1000), nil},
		{"one chunk exactly", text(inPlaceChunk), nil},
		{"long compressible", text(5<<20 + 17), nil},
		{"long incompressible", random(3<<20 + 5), nil},
		{"long, dst is src", text(2 << 20), nil},
		{"short, dst shares src's array", shared[:4096], shared[8192:8192]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := bytes.Clone(tc.src)
			dst := tc.dst
			if tc.name == "long, dst is src" {
				dst = tc.src[:0]
			}
			out, err := zstdCodec.Encode(dst, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := zstdCodec.Decode(nil, out)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("round trip changed the page: %d bytes back, want %d", len(got), len(want))
			}
		})
	}
}

// TestLongValuesRoundTripThroughTheStore writes rows whose values are
// long (each its own page compressed in place) between short ones and
// reads them back.
func TestLongValuesRoundTripThroughTheStore(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	long := func(n int, alphabet string) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return b
	}
	values := [][]byte{
		[]byte("short"),
		long(3<<20, "ab"),
		long(2<<20+3, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/"),
		[]byte("after"),
		long(4<<20, "xyz "),
	}
	w, err := st.NewWriter(parquet.NewSchema("row", parquet.Group{"v": parquet.Leaf(parquet.ByteArrayType)}), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := w.Write(map[string]any{"v": v}); err != nil {
			t.Fatal(err)
		}
	}
	obj, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := r.Columns("v")
	if err != nil {
		t.Fatal(err)
	}
	if len(cols) != len(values) {
		t.Fatalf("read %d rows, want %d", len(cols), len(values))
	}
	for i, row := range cols {
		if v := row[0]; !bytes.Equal(v.ByteArray(), values[i]) {
			t.Errorf("row %d: %d bytes back, want %d", i, len(v.ByteArray()), len(values[i]))
		}
	}
}
