package bm25_test

import (
	"fmt"

	"github.com/lacuna-dev/lacuna/runners/bm25"
)

func ExampleIndex_Top() {
	texts := []string{
		"QR code generator: returns a QR code image for a URL",
		"Weather forecast for a city",
		"Barcode and QR scanner",
	}
	docs := make([][]string, len(texts))
	for i, s := range texts {
		docs[i] = bm25.Tokenize(s)
	}
	ix := bm25.New(docs, bm25.Options{})
	for _, h := range ix.Top(bm25.Tokenize("QR code image"), 2) {
		fmt.Printf("%d %.4f\n", h.Doc, h.Score)
	}
	// Output:
	// 0 1.0851
	// 2 0.0890
}
