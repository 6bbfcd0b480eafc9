package llm

import (
	"slices"
	"strings"
)

// StripThink splits a reasoning model's answer into the answer without its
// <think>...</think> blocks and the thinking (an unclosed block runs to the
// end and is all thinking). A </think> with no opening tag before it closes
// a block that began with the answer: R1-style chat templates put the
// opening tag in the prompt. Both parts are trimmed; several blocks'
// thinking is joined by blank lines.
func StripThink(text string) (answer, thinking string) {
	const open, close = "<think>", "</think>"
	var ans, th []string
	rest := text
	if c := strings.Index(rest, close); c >= 0 {
		if o := strings.Index(rest, open); o < 0 || o > c {
			th = append(th, rest[:c])
			rest = rest[c+len(close):]
		}
	}
	for {
		o := strings.Index(rest, open)
		if o < 0 {
			ans = append(ans, rest)
			break
		}
		ans = append(ans, rest[:o])
		rest = rest[o+len(open):]
		c := strings.Index(rest, close)
		if c < 0 {
			th = append(th, rest)
			break
		}
		th = append(th, rest[:c])
		rest = rest[c+len(close):]
	}
	for i := range th {
		th[i] = strings.TrimSpace(th[i])
	}
	return strings.TrimSpace(strings.Join(ans, "")), strings.Join(nonEmpty(th), "\n\n")
}

// AnswerJSON is the JSON of an answer asked to be JSON (a Request with a
// Schema or Choice): the answer without its think blocks (StripThink)
// and, when all that is left is one fenced block tagged json (any case)
// or untagged, that block's body; trimmed. Anything else comes back as
// StripThink leaves it, for the caller's JSON decoder to refuse.
//
// Response.SchemaHeld is decided on AnswerJSON(Response.Text): callers
// that decode a constrained answer (a judge's verdict) decode
// AnswerJSON(resp.Text), not the raw text, which keeps a reasoning
// model's <think> block and the fence a model adds when the server did
// not constrain it.
func AnswerJSON(text string) string {
	answer, _ := StripThink(text)
	lines := strings.Split(answer, "\n")
	if len(lines) < 2 {
		return oneLineFence(answer)
	}
	mark, info, ok := openFence(lines[0])
	if tag := strings.ToLower(info); !ok || tag != "" && tag != "json" {
		return answer
	}
	body := lines[1 : len(lines)-1]
	if !closesFence(lines[len(lines)-1], mark) || slices.ContainsFunc(body, func(l string) bool { return closesFence(l, mark) }) {
		return answer
	}
	return strings.TrimSpace(strings.Join(body, "\n"))
}

// oneLineFence is the body of a fence opened and closed on one line
// (```json {...}```), or line as it is.
func oneLineFence(line string) string {
	for _, mark := range []string{"```", "~~~"} {
		body, ok := strings.CutPrefix(line, mark)
		if !ok {
			continue
		}
		body, ok = strings.CutSuffix(body, mark)
		if !ok || strings.Contains(body, mark) {
			return line
		}
		if tag, rest, ok := strings.Cut(body, " "); ok && strings.EqualFold(tag, "json") {
			body = rest
		}
		return strings.TrimSpace(body)
	}
	return line
}

// nonEmpty drops empty strings.
func nonEmpty(xs []string) []string {
	out := xs[:0]
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// fence is one fenced block of an answer.
type fence struct {
	tag  string // the info string's first word, lower-cased
	body string
}

// fences finds the ``` (or ~~~) blocks of a Markdown answer. A block left
// open (an answer cut at max_tokens) runs to the end.
func fences(text string) []fence {
	var out []fence
	lines := strings.SplitAfter(text, "\n")
	for i := 0; i < len(lines); i++ {
		mark, info, ok := openFence(lines[i])
		if !ok {
			continue
		}
		var body strings.Builder
		j := i + 1
		for ; j < len(lines); j++ {
			if closesFence(lines[j], mark) {
				break
			}
			body.WriteString(lines[j])
		}
		tag := ""
		if f := strings.Fields(info); len(f) > 0 {
			tag = strings.ToLower(strings.TrimPrefix(f[0], "{."))
			tag = strings.TrimRight(tag, "}")
		}
		out = append(out, fence{tag: tag, body: body.String()})
		i = j
	}
	return out
}

// openFence reads a fence's opening line: up to 3 spaces, 3 or more
// backticks or tildes, an info string.
func openFence(line string) (mark, info string, ok bool) {
	l := strings.TrimRight(line, "\r\n")
	t := strings.TrimLeft(l, " ")
	if len(l)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return "", "", false
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	if n < 3 {
		return "", "", false
	}
	info = t[n:]
	if t[0] == '`' && strings.Contains(info, "`") {
		return "", "", false
	}
	return t[:n], strings.TrimSpace(info), true
}

func closesFence(line, mark string) bool {
	t := strings.TrimSpace(line)
	return len(t) >= len(mark) && strings.Trim(t, mark[:1]) == "" && t[0] == mark[0]
}

// ExtractCode finds the code in an answer: the fenced block tagged lang (or
// untagged) that looks most like code, several blocks joined when the
// answer splits imports from the body; with no fence, the whole answer.
// how says which ("fence:go", "fences:2", "whole").
//
// Blocks tagged lang (for "go", also "golang"; for "python", also "py"
// and "python3") are preferred; untagged blocks are used only when none
// is tagged, and blocks tagged with another language (a shell command,
// the program's output) never. Of several
// candidates the longest is the code, unless it lacks the imports that a
// block holding only a package clause and imports gives: then that block
// and the code are joined ("fences:2"). A single untagged block is
// "fence". An answer with no usable fence is returned whole, trimmed,
// think blocks included (callers strip them first with StripThink).
func ExtractCode(answer, lang string) (code, how string) {
	lang = strings.ToLower(lang)
	var tagged, untagged []fence
	for _, f := range fences(answer) {
		switch {
		case f.tag == "":
			untagged = append(untagged, f)
		case lang == "" || f.tag == lang || lang == "go" && f.tag == "golang" || lang == "python" && (f.tag == "py" || f.tag == "python3"):
			tagged = append(tagged, f)
		}
	}
	cands, label := tagged, "fence:"+lang
	if lang == "" {
		label = "fence"
	}
	if len(cands) == 0 {
		cands, label = untagged, "fence"
	}
	if len(cands) == 0 {
		return strings.TrimSpace(answer), "whole"
	}
	var main, header *fence
	for i := range cands {
		f := &cands[i]
		if isHeader(f.body) {
			if header == nil {
				header = f
			}
			continue
		}
		if main == nil || codeLines(f.body) > codeLines(main.body) {
			main = f
		}
	}
	if main == nil {
		return strings.TrimSpace(header.body), label
	}
	if header != nil && !hasImports(main.body) {
		return join(header.body, main.body), "fences:2"
	}
	return strings.TrimSpace(main.body), label
}

// codeLines counts the lines that are neither blank nor comments.
func codeLines(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "//") {
			n++
		}
	}
	return n
}

// isHeader reports whether a block holds only a package clause and
// imports.
func isHeader(s string) bool {
	inGroup, imports := false, false
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "//"):
		case inGroup:
			if l == ")" {
				inGroup = false
			}
		case strings.HasPrefix(l, "package "):
		case strings.HasPrefix(l, "import ("):
			inGroup, imports = true, true
		case strings.HasPrefix(l, "import "):
			imports = true
		default:
			return false
		}
	}
	return imports
}

// join puts a header block's imports into code that lacks them, after
// the code's package clause when it has one (the header's is dropped).
func join(header, code string) string {
	header, code = strings.TrimSpace(header), strings.TrimSpace(code)
	_, himports := cutPackage(header)
	cpkg, rest := cutPackage(code)
	if cpkg == "" {
		return header + "\n\n" + code
	}
	return cpkg + "\n\n" + himports + "\n\n" + rest
}

// cutPackage splits Go source at its package clause: the clause's line (""
// when none comes before the first declaration) and the rest, trimmed.
func cutPackage(s string) (pkg, rest string) {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "package ") {
			return t, strings.TrimSpace(strings.Join(append(lines[:i:i], lines[i+1:]...), "\n"))
		}
		if t != "" && !strings.HasPrefix(t, "//") {
			break
		}
	}
	return "", s
}

// hasImports reports whether Go source has an import declaration.
func hasImports(s string) bool {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "import ") || strings.HasPrefix(l, "import(") {
			return true
		}
	}
	return false
}
