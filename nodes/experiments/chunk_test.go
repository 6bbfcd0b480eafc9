package experiments

import (
	"reflect"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/bm25"
)

// testCount counts a word's tokens as its last character when that is a
// digit ("c4" holds 4, "{0" none), else 1.
func testCount(w string) int {
	if c := w[len(w)-1]; c >= '0' && c <= '9' {
		return int(c - '0')
	}
	return 1
}

func TestChunkTextWindows(t *testing.T) {
	for _, c := range []struct {
		name          string
		text          string
		size, overlap int
		want          []string // each chunk's text
		tokens        []int
	}{
		{"empty text has no chunk", "", 4, 1, nil, nil},
		{"whitespace only has no chunk", " \n\t ", 4, 1, nil, nil},
		{"short doc is one chunk, its layout kept", "  a\n\tb  ", 4, 1, []string{"a\n\tb"}, []int{2}},
		{"exactly size tokens is one chunk", "a b c d", 4, 1, []string{"a b c d"}, []int{4}},
		{"one token past size starts a second window with the overlap", "a b c d e", 4, 1, []string{"a b c d", "d e"}, []int{4, 2}},
		{"zero overlap tiles", "a b c d e", 2, 0, []string{"a b", "c d", "e"}, []int{2, 2, 1}},
		{"last window ends exactly at the end: no overlap-only window", "a b c d e f g h", 4, 2,
			[]string{"a b c d", "c d e f", "e f g h"}, []int{4, 4, 4}},
		{"overlap never splits a word", "a1 b3 c1 d2", 4, 2, []string{"a1 b3", "c1 d2"}, []int{4, 3}},
		{"overlap shrinks to leave room for the next word", "a1 b1 c4", 4, 2, []string{"a1 b1", "c4"}, []int{2, 4}},
		{"a word over size is a window of its own", "a 6 b", 4, 1, []string{"a", "6", "b"}, []int{1, 6, 1}},
		{"tokenless words ride along, and fit in any overlap", "a {0 b }0 c", 2, 0, []string{"a {0 b }0", "}0 c"}, []int{2, 1}},
		{"tokenless words inside the overlap come with it", "a b {0 c d", 3, 1, []string{"a b {0 c", "{0 c d"}, []int{3, 2}},
		{"non-breaking space separates, zero-width space does not", "a\u00a0b\u200bc d", 1, 0,
			[]string{"a", "b\u200bc", "d"}, []int{1, 1, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			var tokens []int
			for _, ch := range chunkText(c.text, c.size, c.overlap, testCount) {
				got = append(got, c.text[ch.Start:ch.End])
				tokens = append(tokens, ch.Tokens)
			}
			if !reflect.DeepEqual(got, c.want) || !reflect.DeepEqual(tokens, c.tokens) {
				t.Errorf("chunkText(%q, %d, %d) = %q %v, want %q %v", c.text, c.size, c.overlap, got, tokens, c.want, c.tokens)
			}
		})
	}
}

// The chunker counts words alone; that is exact only because bm25.Tokenize
// splits at every whitespace the chunker splits at.
func TestChunkTokensAreTheTokenizersOnWholeText(t *testing.T) {
	text := "## Signature (S)\nPackage \"example.com/shapes\":\n\n```go\nfunc Clamp[T cmp.Ordered](v, lo, hi T) T\n```\u00a0Ünïcode—dash x\u3000y"
	n := 0
	for _, ch := range chunkText(text, 1<<20, 0, func(w string) int { return len(bm25.Tokenize(w)) }) {
		n += ch.Tokens
	}
	if want := len(bm25.Tokenize(text)); n != want || !strings.Contains(text, "\u3000") {
		t.Errorf("chunk tokens %d, bm25.Tokenize of the whole text %d", n, want)
	}
}
