package bm25

import (
	"math"
	"reflect"
	"testing"
)

func TestTokenizeSplitsOnNonLetterDigitRunesAndLowerCases(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"empty", "", nil},
		{"only separators", " !-?.\t\n", nil},
		{"punctuation and digits", "Get QR-Code v2.0", []string{"get", "qr", "code", "v2", "0"}},
		{"underscores and slashes separate", "/qr_code/{id}", []string{"qr", "code", "id"}},
		{"unicode letters lower-cased", "Café ÜBER Straße ΑΘΗΝΑ", []string{"café", "über", "straße", "αθηνα"}},
		{"script without spaces is one run", "日本語テキスト 2", []string{"日本語テキスト", "2"}},
		{"unicode digits are word runes", "x٣y", []string{"x٣y"}},
		{"combining mark separates", "cafe\u0301s", []string{"cafe", "s"}},
		{"invalid utf-8 separates", "ab\xffcd", []string{"ab", "cd"}},
		{"leading and trailing runs", "Hello, World", []string{"hello", "world"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Tokenize(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Tokenize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// The corpus of the hand-computed cases: N = 4, avgdl = 9/4; "a" is in 3 of 4
// documents, so its idf log(3/7) is negative and is floored to
// 0.25 × mean idf = 0.25 × (log(3/7) + 4 log(7/3)) / 5 = 0.25 × 3/5 × log(7/3).
var handCorpus = [][]string{{"a", "b"}, {"a", "c"}, {"a", "d", "d"}, {"e", "e"}}

// handTerm is one term's contribution by the formula, written out by hand.
func handTerm(idf, tf, dl float64) float64 {
	const k1, b, avgdl = 1.5, 0.75, 9.0 / 4
	return idf * tf * (k1 + 1) / (tf + k1*(1-b+b*dl/avgdl))
}

func TestScoresMatchHandComputedBM25Okapi(t *testing.T) {
	idfRare := math.Log(7.0 / 3)              // b, c, d, e: in 1 of 4 documents
	floor := 0.25 * 3.0 / 5 * math.Log(7.0/3) // a: negative idf floored
	ix := New(handCorpus, Options{})
	for _, tc := range []struct {
		name  string
		query []string
		want  []float64
	}{
		{"rare term in one document", []string{"b"}, []float64{handTerm(idfRare, 1, 2), 0, 0, 0}},
		{"term frequency 2", []string{"d"}, []float64{0, 0, handTerm(idfRare, 2, 3), 0}},
		{"negative idf floored to epsilon times mean idf", []string{"a"},
			[]float64{handTerm(floor, 1, 2), handTerm(floor, 1, 2), handTerm(floor, 1, 3), 0}},
		{"duplicate query tokens counted", []string{"b", "b"}, []float64{2 * handTerm(idfRare, 1, 2), 0, 0, 0}},
		{"terms summed", []string{"a", "e"},
			[]float64{handTerm(floor, 1, 2), handTerm(floor, 1, 2), handTerm(floor, 1, 3), handTerm(idfRare, 2, 2)}},
		{"unknown term scores 0", []string{"zzz"}, []float64{0, 0, 0, 0}},
		{"empty query scores 0", nil, []float64{0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ix.Scores(tc.query)
			if len(got) != len(tc.want) {
				t.Fatalf("Scores(%q) has %d scores, want %d", tc.query, len(got), len(tc.want))
			}
			for d := range got {
				if math.Abs(got[d]-tc.want[d]) > 1e-12 {
					t.Errorf("Scores(%q)[%d] = %.17g, want %.17g", tc.query, d, got[d], tc.want[d])
				}
			}
		})
	}
}

func TestOptionsChangeScores(t *testing.T) {
	const k1, b, eps = 1.2, 0.5, 0.5
	ix := New(handCorpus, Options{K1: k1, B: b, Epsilon: eps})
	floor := eps * 3.0 / 5 * math.Log(7.0/3)
	want := floor * (k1 + 1) / (1 + k1*(1-b+b*3/(9.0/4)))
	if got := ix.Scores([]string{"a"})[2]; math.Abs(got-want) > 1e-12 {
		t.Errorf("score of a in document 2 = %.17g, want %.17g", got, want)
	}
}

func TestTopRanksByScoreThenDocumentOrder(t *testing.T) {
	ix := New(handCorpus, Options{})
	doc := func(hits []Hit) []int {
		var ds []int
		for _, h := range hits {
			ds = append(ds, h.Doc)
		}
		return ds
	}
	for _, tc := range []struct {
		name  string
		query []string
		k     int
		want  []int
	}{
		// Documents 0 and 1 tie (same length, same terms): lower index first;
		// document 2 is longer, so lower; document 3 scores 0.
		{"ties by document order", []string{"a"}, 4, []int{0, 1, 2, 3}},
		{"highest first", []string{"a", "e"}, 2, []int{3, 0}},
		{"k beyond Len returns all", []string{"c"}, 10, []int{1, 0, 2, 3}},
		{"all zero keeps document order", []string{"zzz"}, 3, []int{0, 1, 2}},
		{"k cuts inside a tie", []string{"a"}, 1, []int{0}},
		{"k cuts after a tie", []string{"a"}, 2, []int{0, 1}},
		{"k cuts inside zero scores", []string{"b"}, 3, []int{0, 1, 2}},
		{"k zero returns nothing", []string{"a"}, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits := ix.Top(tc.query, tc.k)
			if got := doc(hits); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Top(%q, %d) documents = %v, want %v", tc.query, tc.k, got, tc.want)
			}
			scores := ix.Scores(tc.query)
			for _, h := range hits {
				if h.Score != scores[h.Doc] {
					t.Errorf("hit %d score %g, Scores gives %g", h.Doc, h.Score, scores[h.Doc])
				}
			}
		})
	}
}

func TestDegenerateCorporaScoreZero(t *testing.T) {
	for _, tc := range []struct {
		name string
		docs [][]string
	}{
		{"no documents", nil},
		{"only empty documents", [][]string{{}, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := New(tc.docs, Options{})
			if ix.Len() != len(tc.docs) {
				t.Errorf("Len = %d, want %d", ix.Len(), len(tc.docs))
			}
			scores := ix.Scores([]string{"a", "a"})
			if len(scores) != len(tc.docs) {
				t.Fatalf("%d scores, want %d", len(scores), len(tc.docs))
			}
			for d, s := range scores {
				if s != 0 {
					t.Errorf("score[%d] = %g, want 0", d, s)
				}
			}
			if got := len(ix.Top([]string{"a"}, 5)); got != len(tc.docs) {
				t.Errorf("Top returned %d hits, want %d", got, len(tc.docs))
			}
		})
	}
}

func TestNewDoesNotKeepDocs(t *testing.T) {
	docs := [][]string{{"a", "b"}, {"c"}, {"c"}}
	ix := New(docs, Options{})
	before := ix.Scores([]string{"b"})
	docs[0][1] = "c"
	if after := ix.Scores([]string{"b"}); !reflect.DeepEqual(before, after) {
		t.Errorf("scores changed after the caller's docs changed: %v, then %v", before, after)
	}
}
