package engine

import (
	"bytes"
	"fmt"
	"github.com/lacuna-dev/lacuna/internal/regfile"
	"io"

	"github.com/hashicorp/hcl/v2"
)

// MaxNesting is how deeply expressions may nest in a pipeline file: open
// brackets, braces, parentheses, strings, template interpolations and
// chains of unary operators (`!`, `-`) together. The HCL parser recurses
// once per level, so without a bound a file of a million `[` exhausts the
// goroutine stack and kills the process; real pipelines stay below 20.
const MaxNesting = 256

// checkNesting scans src for nesting deeper than MaxNesting before it is
// parsed. It follows strings, template interpolations, heredocs and
// comments the way the HCL scanner does; what it cannot follow (an
// unterminated string, a stray closer) is left for the parser to report,
// because only depth is its concern. It returns nil or one diagnostic at
// the first opener past the limit. It runs in one pass without allocating
// more than the depth it tracks.
func checkNesting(src []byte, filename string) *hcl.Diagnostic {
	type frame struct {
		kind byte   // '{', '[', '(', 's' string, 't' interpolation, 'h' heredoc
		id   []byte // a heredoc's closing identifier
	}
	var stack []frame
	line, col := 1, 1
	unary := 0 // consecutive unary operators just seen
	tooDeep := func(i, depth int) *hcl.Diagnostic {
		pos := hcl.Pos{Line: line, Column: col, Byte: i}
		return &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Expression nested too deeply",
			Detail: fmt.Sprintf("Expressions may nest at most %d levels (brackets, braces, parentheses, strings, "+
				"interpolations and unary operators together); this one reaches %d here. Flatten it, or build the value with a function such as range() or flatten().",
				MaxNesting, depth),
			Subject: &hcl.Range{Filename: filename, Start: pos, End: hcl.Pos{Line: line, Column: col + 1, Byte: i + 1}},
		}
	}
	// advance moves the position over src[i:j], counting lines and
	// characters (not bytes, as HCL's columns do).
	advance := func(i, j int) {
		for ; i < j; i++ {
			switch {
			case src[i] == '\n':
				line, col = line+1, 1
			case src[i]&0xC0 != 0x80:
				col++
			}
		}
	}
	for i := 0; i < len(src); {
		top := byte(0)
		if len(stack) > 0 {
			top = stack[len(stack)-1].kind
		}
		c := src[i]
		if top != 's' && top != 'h' && plain[c] {
			// The common case, kept cheap: a byte that opens, closes or
			// negates nothing.
			if c == '\n' {
				line, col = line+1, 1
			} else if c&0xC0 != 0x80 {
				col++
			}
			if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
				unary = 0
			}
			i++
			continue
		}
		if top == 's' || top == 'h' {
			switch {
			case top == 'h' && (i == 0 || src[i-1] == '\n') && bytes.Equal(bytes.TrimSpace(lineAt(src, i)), stack[len(stack)-1].id):
				stack = stack[:len(stack)-1]
				n := len(lineAt(src, i))
				advance(i, i+n)
				i += n
				continue
			case top == 's' && c == '\\' && i+1 < len(src):
				advance(i, i+2)
				i += 2
				continue
			case (c == '$' || c == '%') && i+2 < len(src) && src[i+1] == c && src[i+2] == '{':
				advance(i, i+3) // $${ and %%{ are literal text
				i += 3
				continue
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == '{':
				if len(stack)+1 > MaxNesting {
					return tooDeep(i, len(stack)+1)
				}
				stack = append(stack, frame{kind: 't'})
				advance(i, i+2)
				i += 2
				continue
			case top == 's' && (c == '"' || c == '\n'):
				stack = stack[:len(stack)-1] // a newline ends a broken string; the parser reports it
			}
			advance(i, i+1)
			i++
			continue
		}
		open := byte(0)
		var id []byte
		next := i + 1
		switch c {
		case '"', '{', '[', '(':
			open = c
			if c == '"' {
				open = 's'
			}
		case '<':
			if i+1 < len(src) && src[i+1] == '<' {
				j, k := heredocMarker(src, i)
				if k > j && k < len(src) && (src[k] == '\n' || src[k] == '\r') {
					open, id = 'h', src[j:k]
					next = k + 1
					if src[k] == '\r' && next < len(src) && src[next] == '\n' {
						next++
					}
				}
			}
		case '}', ']', ')':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case '#':
			next = endOfLine(src, i)
		case '/':
			if i+1 < len(src) && src[i+1] == '/' {
				next = endOfLine(src, i)
			} else if i+1 < len(src) && src[i+1] == '*' {
				if j := bytes.Index(src[i+2:], []byte("*/")); j >= 0 {
					next = i + 2 + j + 2
				} else {
					next = len(src)
				}
			}
		}
		switch {
		case c == '!' || c == '-':
			unary++
			if len(stack)+unary > MaxNesting {
				return tooDeep(i, len(stack)+unary)
			}
		case c != ' ' && c != '\t' && c != '\r' && c != '\n':
			unary = 0
		}
		if open != 0 {
			if len(stack)+1 > MaxNesting {
				return tooDeep(i, len(stack)+1)
			}
			stack = append(stack, frame{kind: open, id: id})
		}
		advance(i, next)
		i = next
	}
	return nil
}

// plain marks the bytes that checkNesting's code mode passes over.
var plain = func() (t [256]bool) {
	for i := range t {
		t[i] = true
	}
	for _, c := range []byte("\"{[()]}<#/!-") {
		t[c] = false
	}
	return t
}()

// lineAt returns src from i to the end of its line, without the newline.
func lineAt(src []byte, i int) []byte {
	return src[i:endOfLine(src, i)]
}

// endOfLine is the index of the newline ending the line that holds i, or
// len(src).
func endOfLine(src []byte, i int) int {
	if j := bytes.IndexByte(src[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(src)
}

// MaxFileSize bounds what file() reads: a pipeline's value is held in
// memory and hashed into keys, so a file larger than this belongs in an
// `import` node, which streams.
const MaxFileSize = 64 << 20

// readRegularFile reads a regular file of at most max bytes. A FIFO, a
// device (/dev/zero), a directory or a socket is refused before it is read
// from: the path is checked before opening (opening a FIFO blocks until a
// writer appears, so it is opened non-blocking) and the opened file is
// checked again, so a path swapped in between is refused too. A file that
// grows past max while it is read is refused as well.
func readRegularFile(path string, max int64) ([]byte, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s has %d bytes, more than the limit of %d", path, st.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s grew past the limit of %d bytes while it was read", path, max)
	}
	return b, nil
}
