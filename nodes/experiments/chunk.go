package experiments

import "unicode"

// A chunk is a window of a document for retrieval: the text of whole words
// [Start, End) (byte offsets) and the tokens they hold.
//
// The chunker counts tokens with the retriever's own tokenizer but never
// cuts a word: a document is split at whitespace into words (runs of
// characters other than ' ', '\t', '\n', '\r' and Unicode space separators
// (Zs), the whitespace both BERT's basic tokenizer and bm25.Tokenize split
// on), each word's tokens are counted alone, and a chunk is a run of whole
// words. Both tokenizers split at that whitespace first, so the tokens of a
// run of words are the sum of the tokens of its words: a chunk's count is
// exactly what the retriever sees, and its text keeps the document's own
// line breaks and indentation.
type chunk struct {
	Start, End int // byte offsets in the document
	Tokens     int
}

// word is a run of non-whitespace bytes [start, end) and its tokens.
type word struct{ start, end, tokens int }

// words splits text into words, each counted by count.
func words(text string, count func(string) int) []word {
	var out []word
	start := -1
	for i, r := range text {
		if isChunkSpace(r) {
			if start >= 0 {
				out = append(out, word{start, i, count(text[start:i])})
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, word{start, len(text), count(text[start:])})
	}
	return out
}

func isChunkSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || unicode.Is(unicode.Zs, r)
}

// chunkText splits text into windows of at most size tokens, each after the
// first beginning with the longest run of the previous window's last words
// that holds at most overlap tokens (so consecutive windows share at most
// overlap tokens), shortened further when needed so that the window also
// takes the next word: every window ends past the previous one. A word of
// more than size tokens is a window of its own (the dense encoder truncates
// it). A text with no word has no chunk; a text of at most size tokens is
// one. count gives the tokens of one word; words with none (punctuation
// under bm25) ride along with their neighbours. size must be at least 1 and
// overlap in [0, size).
func chunkText(text string, size, overlap int, count func(string) int) []chunk {
	ws := words(text, count)
	var out []chunk
	for i := 0; i < len(ws); {
		j, tokens := i, 0
		for j < len(ws) && (j == i || tokens+ws[j].tokens <= size) {
			tokens += ws[j].tokens
			j++
		}
		out = append(out, chunk{Start: ws[i].start, End: ws[j-1].end, Tokens: tokens})
		if j == len(ws) {
			break
		}
		// The next window starts at the earliest k in (i, j] whose words
		// k..j-1 hold at most overlap tokens and leave room for word j.
		k, kept := j, 0
		for k-1 > i && kept+ws[k-1].tokens <= overlap && kept+ws[k-1].tokens+ws[j].tokens <= size {
			k--
			kept += ws[k].tokens
		}
		i = k
	}
	return out
}
