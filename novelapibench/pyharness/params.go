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
// value), or a name it was imported as ("from pkg import name as alias",
// an "as" in an import statement only). A def or class statement of the
// name is not a call. The scan is lexical (Python's tokens, brackets
// matched), so it reads code that does not compile too; a call inside a
// string or a comment is not one, but one inside an f-string's
// replacement field (f"{scale(xs)}") is. A call the scan cannot see is
// not listed: the name passed as a value (map(scale, xs),
// functools.partial(scale, k=2)) or called under a name assigned from it
// (g = scale; g(xs)).
func TargetCalls(code string, tg Target) []SourceCall {
	toks := pyTokens(code)
	return targetCalls(toks, targetNames(toks, tg))
}

// targetNames are the names a call of the target goes by in toks: its
// own, and each name an import statement binds it to ("import name as
// alias", "from m import a, name as alias").
func targetNames(toks []pyToken, tg Target) map[string]bool {
	names := map[string]bool{tg.Name(): true}
	for i := 0; i+2 < len(toks); i++ {
		if toks[i].text == tg.Name() && toks[i+1].text == "as" && toks[i+2].kind == tokName && inImport(toks, i) {
			names[toks[i+2].text] = true
		}
	}
	return names
}

// inImport reports whether the name at i is in an import statement's list
// of names: walking back over names, dots, commas, "as" and "(" reaches
// "import" before any other keyword or token.
func inImport(toks []pyToken, i int) bool {
	for i--; i >= 0; i-- {
		t := toks[i]
		switch {
		case t.text == "import":
			return true
		case t.kind == tokName && t.text != "as" && keywords[t.text]:
			return false
		case t.kind == tokName, t.text == ".", t.text == ",", t.text == "(":
		default:
			return false
		}
	}
	return false
}

// keywords are Python's keywords, and the soft keyword case (a name
// before "as" in a match statement's pattern).
var keywords = map[string]bool{}

func init() {
	for _, k := range strings.Fields("False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield case") {
		keywords[k] = true
	}
}

// targetCalls is TargetCalls of tokens, names the callee names that count.
func targetCalls(toks []pyToken, names map[string]bool) []SourceCall {
	var out []SourceCall
	for i := 0; i < len(toks); i++ {
		if toks[i].kind == tokString {
			for _, field := range fstringFields(toks[i].text) {
				out = append(out, targetCalls(pyTokens(field), names)...)
			}
			continue
		}
		start, end, ok := callAt(toks, i, names)
		if !ok {
			continue
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

// callAt reports whether the name at i is the callee of a call of one of
// names (not a def or class statement of it, and its parentheses closed):
// start is the index of the callee's first token (NAME(.NAME)* ending at
// i), end that of the call's closing parenthesis.
func callAt(toks []pyToken, i int, names map[string]bool) (start, end int, ok bool) {
	if i+1 >= len(toks) || toks[i].kind != tokName || toks[i+1].text != "(" || !names[toks[i].text] {
		return 0, 0, false
	}
	start = i
	for start >= 2 && toks[start-1].text == "." && toks[start-2].kind == tokName {
		start -= 2
	}
	if start > 0 && (toks[start-1].text == "def" || toks[start-1].text == "class") {
		return 0, 0, false // a definition
	}
	end = matching(toks, i+1)
	return start, end, end >= 0 // end < 0: unbalanced, the code is cut short
}

// ParamCorr is how well the solver's calls of the target match the
// reference's, argument by argument, in [0, 1], as goharness.ParamCorr
// defines it for Go, with Python's keywords: positional arguments match
// by position and keyword arguments by name. Only the reference's first
// call of the target's name (TargetCalls) is compared, as Go's
// TargetCall. The score is the number of matching arguments (a position
// where both calls have equal normalised source, a keyword both pass with
// equal normalised source) over the positions max(len(solver's
// positional), len(reference's)) plus the keywords either passes, a
// keyword the solver repeats counting once more for each repetition (it
// never matches twice, so the score stays within [0, 1]); two calls
// without arguments match fully (1). A keyword passed positionally, or
// the reverse, is a mismatch (the signature is not read), and so is an
// argument written differently but equal in value: that is the LLM
// judge's to weigh. A spread (*xs, **kw) matches only a spread of the
// same expression, once. When the solver calls the target more than once,
// the best-matching call counts. It is 0 when the solution's source shows
// no call of the target's name (TargetCalls): a caller that knows the
// solution called the target nonetheless (a call the lexical scan cannot
// see, such as map(scale, xs)) should hold the score unknown, as
// nodes/tasks' judge does. It is undefined (ok false) when the reference
// has no such call: nothing to measure.
//
// Arguments are compared as normalised source, not as Python's
// ast.unparse would print them: the tokens of the argument rejoined
// (whitespace, line breaks, comments and a trailing comma do not matter),
// its outer parentheses dropped, and a plain string literal written with
// single quotes ('a' and "a" match). It runs in lacuna's process: no
// Python is started, and the sample's code is never imported or run.
func ParamCorr(solution, reference string, tg Target) (corr float64, ok bool) {
	var ref *SourceCall
	if refs := TargetCalls(reference, tg); len(refs) > 0 {
		ref = &refs[0]
	}
	return MatchCalls(TargetCalls(solution, tg), ref)
}

// MatchCalls is ParamCorr from the solver's calls (TargetCalls) and the
// reference's first call of the target (nil for none: ok false), for
// callers that have them already, as goharness.MatchCalls.
func MatchCalls(calls []SourceCall, ref *SourceCall) (corr float64, ok bool) {
	if ref == nil {
		return 0, false
	}
	best := 0.0
	for _, c := range calls {
		best = max(best, argMatch(c, *ref))
	}
	return best, true
}

func argMatch(a, b SourceCall) float64 {
	n, same := max(len(a.Args), len(b.Args)), 0
	for i := range min(len(a.Args), len(b.Args)) {
		if a.Args[i] == b.Args[i] {
			same++
		}
	}
	kw := map[string]string{} // the reference's keywords not yet matched
	for _, k := range b.Kwargs {
		if _, dup := kw[k.Name]; dup {
			n++ // the reference repeats a keyword (it does not compile): the repeat is never matched
		}
		kw[k.Name] = k.Value
	}
	n += len(kw)
	for _, k := range a.Kwargs {
		v, ok := kw[k.Name]
		switch {
		case !ok:
			n++ // an extra keyword, or a repeated one
		case v == k.Value:
			same++
		}
		delete(kw, k.Name)
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
	pos  int // the byte offset of text in the source scanned
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
			j, _ := scanString(src, i, false)
			out = append(out, pyToken{tokString, src[i:j], i})
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i + 1
			for j < len(src) && (isWord(src[j]) || src[j] == '.' || (src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E') && !strings.HasPrefix(src[i:], "0x")) {
				j++
			}
			out = append(out, pyToken{tokNumber, src[i:j], i})
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
				out = append(out, pyToken{tokOp, src[i : i+n], i})
				i += n
				continue
			}
			if prefix := strings.ToLower(src[i:j]); j < len(src) && (src[j] == '\'' || src[j] == '"') && j-i <= 2 && strings.Trim(prefix, "rbuft") == "" {
				k, _ := scanString(src, j, strings.ContainsAny(prefix, "ft")) // a prefixed string: r'...', f"...", rb'...', t'...'
				out = append(out, pyToken{tokString, src[i:k], i})
				i = k
				continue
			}
			out = append(out, pyToken{tokName, src[i:j], i})
			i = j
		default:
			op := src[i : i+1]
			for _, o := range ops {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			out = append(out, pyToken{tokOp, op, i})
			i += len(op)
		}
	}
	return out
}

// scanString scans the string literal whose quote is at i: end is the
// index after it. For a formatted string (fmt: an f or t prefix) its
// replacement fields are code: a quote inside one does not end the
// literal (Python 3.12 lets a field reuse the outer quote: f"{d["k"]}"),
// and fields are the fields' expressions (before a conversion or a
// format spec), in order; "{{" and "}}" are literal braces.
func scanString(src string, i int, fmt bool) (end int, fields []string) {
	q := src[i : i+1]
	if strings.HasPrefix(src[i:], q+q+q) {
		q = q + q + q
	}
	j := i + len(q)
	depth := 0      // brackets open inside a replacement field, its own brace counted
	exprStart := -1 // where the current field's expression begins; -1 outside one or past its end
	inSpec := false // in the current field's format spec (or after its conversion)
	for j < len(src) {
		c := src[j]
		if depth > 0 { // inside a replacement field
			switch {
			case !inSpec && (c == '\'' || c == '"'):
				k := j // a string inside the field, its prefix the letters before the quote
				for k > 0 && isWord(src[k-1]) {
					k--
				}
				p := strings.ToLower(src[k:j])
				j, _ = scanString(src, j, strings.Trim(p, "rbuft") == "" && strings.ContainsAny(p, "ft"))
				continue
			case c == '{' || !inSpec && (c == '(' || c == '['):
				depth++
			case !inSpec && (c == ')' || c == ']'):
				depth--
			case c == '}':
				depth--
				if depth == 0 {
					if exprStart >= 0 {
						fields = append(fields, src[exprStart:j])
					}
					exprStart, inSpec = -1, false
				}
			case depth == 1 && !inSpec && (c == ':' || c == '!' && j+1 < len(src) && src[j+1] != '='):
				fields = append(fields, src[exprStart:j])
				exprStart, inSpec = -1, true
			}
			j++
			continue
		}
		switch {
		case c == '\\':
			j += 2
		case strings.HasPrefix(src[j:], q):
			return j + len(q), fields
		case c == '\n' && len(q) == 1:
			return j, fields // unterminated
		case fmt && (strings.HasPrefix(src[j:], "{{") || strings.HasPrefix(src[j:], "}}")):
			j += 2
		case fmt && c == '{':
			depth, exprStart = 1, j+1
			j++
		default:
			j++
		}
	}
	return len(src), fields
}

// fstringFields are the expressions of a string literal's replacement
// fields: none unless it is formatted (an f or t prefix).
func fstringFields(lit string) []string {
	k := strings.IndexAny(lit, `'"`)
	if k < 0 || !strings.ContainsAny(strings.ToLower(lit[:k]), "ft") {
		return nil
	}
	_, fields := scanString(lit, k, true)
	return fields
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

// splitTop splits tokens at the commas outside brackets and outside a
// lambda's parameters (from "lambda" to its ":").
func splitTop(toks []pyToken) [][]pyToken {
	var out [][]pyToken
	depth, start := 0, 0
	var lambdas []int // the depths of the lambdas whose ":" is still to come
	for i, t := range toks {
		if t.kind == tokName && t.text == "lambda" {
			lambdas = append(lambdas, depth)
			continue
		}
		if t.kind != tokOp {
			continue
		}
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case ":":
			if n := len(lambdas); n > 0 && lambdas[n-1] == depth {
				lambdas = lambdas[:n-1]
			}
		case ",":
			if depth == 0 && len(lambdas) == 0 {
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
