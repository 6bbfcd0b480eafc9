package pyharness

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// SourceCall is one call of the target's name in Python source, its
// arguments as normalised source (normArg).
type SourceCall struct {
	Func   string   // the callee as written, normalised: "pkg.sub.name", "name", "obj.name"
	Args   []string // positional arguments in order, a spread keeping its "*"
	Kwargs []Kwarg  // keyword arguments in order, a spread as Name "**"+its expression
}

// Kwarg is one keyword argument.
type Kwarg struct{ Name, Value string }

// String is the call as source: Func(arg, ..., name=value, ...).
func (c SourceCall) String() string {
	parts := append([]string(nil), c.Args...)
	for _, k := range c.Kwargs {
		if strings.HasPrefix(k.Name, "**") {
			parts = append(parts, k.Name)
			continue
		}
		parts = append(parts, k.Name+"="+k.Value)
	}
	return c.Func + "(" + strings.Join(parts, ", ") + ")"
}

// TargetCalls lists, in source order, the calls of the target's name in
// code: every call whose callee is the name, a dotted path ending in it
// (pkg.sub.name, obj.name, f().name: a method target is called on a
// value), or a
// name it was imported as ("from pkg import name as alias"). A def or
// class statement of the name is not a call. The scan is lexical (Python's
// tokens, brackets matched), so it reads code that does not compile too;
// a call inside a string or a comment is not one.
func TargetCalls(code string, tg Target) []SourceCall {
	toks := pyTokens(code)
	names := map[string]bool{tg.Name(): true}
	for i := 0; i+3 < len(toks); i++ { // "import name as alias", "from m import a, name as alias"
		if toks[i].text == tg.Name() && toks[i+1].text == "as" && toks[i+2].kind == tokName {
			names[toks[i+2].text] = true
		}
	}
	var out []SourceCall
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].kind != tokName || toks[i+1].text != "(" || !names[toks[i].text] {
			continue
		}
		start := i // the callee: NAME(.NAME)* ending at i
		for start >= 2 && toks[start-1].text == "." && toks[start-2].kind == tokName {
			start -= 2
		}
		if start > 0 && (toks[start-1].text == "def" || toks[start-1].text == "class") {
			continue // a definition
		}
		end := matching(toks, i+1)
		if end < 0 {
			continue // unbalanced: the code is cut short
		}
		c := SourceCall{Func: render(toks[start : i+1])}
		if start > 0 && toks[start-1].text == "." {
			c.Func = "<expr>." + c.Func // a method called on an expression's value: f().name(...), xs[0].name(...)
		}
		for _, a := range splitTop(toks[i+2 : end]) {
			switch {
			case len(a) == 0:
			case a[0].text == "**":
				c.Kwargs = append(c.Kwargs, Kwarg{Name: "**" + normArg(a[1:])})
			case len(a) > 2 && a[0].kind == tokName && a[1].text == "=":
				c.Kwargs = append(c.Kwargs, Kwarg{Name: a[0].text, Value: normArg(a[2:])})
			case a[0].text == "*":
				c.Args = append(c.Args, "*"+normArg(a[1:]))
			default:
				c.Args = append(c.Args, normArg(a))
			}
		}
		out = append(out, c)
	}
	return out
}

// ParamCorr is how well the solver's calls of the target match the
// reference's, argument by argument, in [0, 1], as goharness.ParamCorr
// defines it for Go, with Python's keywords: positional arguments match
// by position and keyword arguments by name. The score is the number of
// matching arguments (a position where both calls have equal normalised
// source, a keyword both pass with equal normalised source) over the
// positions max(len(solver's positional), len(reference's)) plus the
// keywords either passes; two calls without arguments match fully (1).
// A keyword passed positionally, or the reverse, is a mismatch (the
// signature is not read), and so is an argument written differently but
// equal in value: that is the LLM judge's to weigh. A spread (*xs, **kw)
// matches only a spread of the same expression. When the solver calls the
// target more than once, the best-matching call counts. It is 0 when the
// solution never calls the target's name (TargetCalls). It is undefined
// (ok false) when the reference has no such call: nothing to measure.
//
// Arguments are compared as normalised source, not as Python's
// ast.unparse would print them: the tokens of the argument rejoined
// (whitespace, line breaks, comments and a trailing comma do not matter),
// its outer parentheses dropped, and a plain string literal written with
// single quotes ('a' and "a" match). It runs in lacuna's process: no
// Python is started, and the sample's code is never imported or run.
func ParamCorr(solution, reference string, tg Target) (corr float64, ok bool) {
	ref := TargetCalls(reference, tg)
	if len(ref) == 0 {
		return 0, false
	}
	return MatchCalls(TargetCalls(solution, tg), &ref[0]), true
}

// MatchCalls is ParamCorr's best match of calls against the reference's
// call ref.
func MatchCalls(calls []SourceCall, ref *SourceCall) float64 {
	best := 0.0
	for _, c := range calls {
		best = max(best, argMatch(c, *ref))
	}
	return best
}

func argMatch(a, b SourceCall) float64 {
	n, same := max(len(a.Args), len(b.Args)), 0
	for i := range min(len(a.Args), len(b.Args)) {
		if a.Args[i] == b.Args[i] {
			same++
		}
	}
	kw := map[string]string{}
	for _, k := range b.Kwargs {
		kw[k.Name] = k.Value
	}
	n += len(kw)
	for _, k := range a.Kwargs {
		v, ok := kw[k.Name]
		switch {
		case !ok:
			n++
		case v == k.Value:
			same++
		}
	}
	if n == 0 {
		return 1
	}
	return float64(same) / float64(n)
}

type tokKind int

const (
	tokName tokKind = iota
	tokNumber
	tokString
	tokOp
)

type pyToken struct {
	kind tokKind
	text string
}

// ops are Python's operators of more than one character, longest first.
var ops = []string{"**=", "//=", ">>=", "<<=", "...", "**", "//", "->", ":=", "==", "!=", "<=", ">=", "<<", ">>",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@="}

// pyTokens splits Python source into tokens, leaving out whitespace, line
// breaks and comments. A string literal (any prefix, triple-quoted or not)
// is one token; an unterminated one runs to the end.
func pyTokens(src string) []pyToken {
	var out []pyToken
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\\':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '\'' || c == '"':
			j := stringEnd(src, i)
			out = append(out, pyToken{tokString, src[i:j]})
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i + 1
			for j < len(src) && (isWord(src[j]) || src[j] == '.' || (src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E') && !strings.HasPrefix(src[i:], "0x")) {
				j++
			}
			out = append(out, pyToken{tokNumber, src[i:j]})
			i = j
		case isWord(c) || c >= utf8.RuneSelf:
			j := i
			for j < len(src) {
				r, n := utf8.DecodeRuneInString(src[j:])
				if !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
					break
				}
				j += n
			}
			if j == i { // a character Python would reject: keep it as an operator
				_, n := utf8.DecodeRuneInString(src[i:])
				out = append(out, pyToken{tokOp, src[i : i+n]})
				i += n
				continue
			}
			if j < len(src) && (src[j] == '\'' || src[j] == '"') && j-i <= 2 && strings.Trim(strings.ToLower(src[i:j]), "rbuf") == "" {
				k := stringEnd(src, j) // a prefixed string: r'...', f"...", rb'...'
				out = append(out, pyToken{tokString, src[i:k]})
				i = k
				continue
			}
			out = append(out, pyToken{tokName, src[i:j]})
			i = j
		default:
			op := src[i : i+1]
			for _, o := range ops {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			out = append(out, pyToken{tokOp, op})
			i += len(op)
		}
	}
	return out
}

// stringEnd is the index after the string literal whose quote is at i.
func stringEnd(src string, i int) int {
	q := src[i : i+1]
	if strings.HasPrefix(src[i:], q+q+q) {
		q = q + q + q
	}
	j := i + len(q)
	for j < len(src) {
		switch {
		case src[j] == '\\':
			j += 2
		case strings.HasPrefix(src[j:], q):
			return j + len(q)
		case src[j] == '\n' && len(q) == 1:
			return j // unterminated
		default:
			j++
		}
	}
	return len(src)
}

func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// matching is the index of the bracket closing the one at open; -1 for
// none.
func matching(toks []pyToken, open int) int {
	depth := 0
	for i := open; i < len(toks); i++ {
		if toks[i].kind != tokOp {
			continue
		}
		switch toks[i].text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// splitTop splits tokens at the commas outside brackets.
func splitTop(toks []pyToken) [][]pyToken {
	var out [][]pyToken
	depth, start := 0, 0
	for i, t := range toks {
		if t.kind != tokOp {
			continue
		}
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case ",":
			if depth == 0 {
				out = append(out, toks[start:i])
				start = i + 1
			}
		}
	}
	return append(out, toks[start:])
}

// normArg renders an argument's tokens, outer parentheses dropped (not a
// tuple's: "(a, b)" keeps them).
func normArg(toks []pyToken) string {
	for len(toks) >= 2 && toks[0].text == "(" && matching(toks, 0) == len(toks)-1 && len(splitTop(toks[1:len(toks)-1])) == 1 {
		toks = toks[1 : len(toks)-1]
	}
	return render(toks)
}

// render joins tokens: a space between two names, numbers or strings
// (so "not x" stays two words) and after a comma, nothing elsewhere; a
// plain string literal without quotes or backslashes in it is written
// with single quotes.
func render(toks []pyToken) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 && (t.kind != tokOp && toks[i-1].kind != tokOp || toks[i-1].text == ",") {
			b.WriteByte(' ')
		}
		text := t.text
		if t.kind == tokString && len(text) >= 2 && text[0] == '"' && !strings.HasPrefix(text, `"""`) {
			if body := text[1 : len(text)-1]; !strings.ContainsAny(body, `'"\`) && strings.HasSuffix(text, `"`) {
				text = "'" + body + "'"
			}
		}
		b.WriteString(text)
	}
	return b.String()
}
