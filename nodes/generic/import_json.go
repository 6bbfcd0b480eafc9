package generic

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxRecord bounds one record (a JSON object, a CSV row) in bytes of the
// file: 1 GiB. A record is held in memory whole, so this bounds the memory
// one record may take; a file may hold any number of them. Tests lower it.
var maxRecord int64 = 1 << 30

// maxJSONDepth bounds how deeply JSON values nest, as encoding/json does.
const maxJSONDepth = 10000

// rawJSON is a nested object or array kept as compact JSON text, exactly as
// the file wrote its keys (in order), strings (escapes included) and
// numbers: a JSON column stores it unchanged, and no map is built for it.
type rawJSON []byte

// textChunk is the size of the chunks a long value is read into.
const textChunk = 1 << 20

// text accumulates one value's bytes: in one slice while it is short, in
// chunks of textChunk once it is not, joined once into a slice of the exact
// size at the end. Growing one slice by append would copy the value at
// every growth and leave about four times its size as garbage before the
// last; chunks cost one copy, made when the size is known. With off, it
// keeps nothing.
type text struct {
	buf    []byte   // the current chunk: the whole text while it is short
	chunks [][]byte // the full chunks before buf
	off    bool
}

func (t *text) reset(off bool) {
	if cap(t.buf) > textChunk {
		t.buf = nil
	}
	t.buf, t.chunks, t.off = t.buf[:0], nil, off
}

func (t *text) addByte(c byte) {
	if t.off {
		return
	}
	if len(t.buf) == cap(t.buf) && cap(t.buf) >= textChunk {
		t.chunks = append(t.chunks, t.buf)
		t.buf = make([]byte, 0, textChunk)
	}
	t.buf = append(t.buf, c)
}

func (t *text) add(p []byte) {
	for _, c := range p {
		t.addByte(c)
	}
}

func (t *text) size() int {
	n := len(t.buf)
	for _, c := range t.chunks {
		n += len(c)
	}
	return n
}

// take returns the text in a slice of its own.
func (t *text) take() []byte {
	out := make([]byte, 0, t.size())
	for _, c := range t.chunks {
		out = append(out, c...)
	}
	return append(out, t.buf...)
}

// string returns the text as a string (one copy, of the exact size).
func (t *text) string() string {
	var b strings.Builder
	b.Grow(t.size())
	for _, c := range t.chunks {
		b.Write(c)
	}
	b.Write(t.buf)
	return b.String()
}

// jsonRecords reads JSON objects from a stream: one per line (JSONL; any
// whitespace separates them), or the elements of one top-level array. It
// never changes what it reads without saying so: a duplicate key (at any
// depth), invalid UTF-8, an escaped lone surrogate or a record over
// maxRecord bytes is an error naming file:line:col. Numbers are
// json.Number with the file's text; top-level values are string, bool,
// json.Number, nil or rawJSON. With kinds, only the kinds of the values
// are wanted (inferring a schema): strings come back empty and nested
// values as an empty rawJSON, checked as thoroughly but never held, so
// that memory is not that of the largest value. A jsonRecords is used by
// one goroutine.
type jsonRecords struct {
	r         *bufio.Reader
	name      string
	kinds     bool
	line, col int
	started   bool
	array     bool     // inside a top-level array
	done      bool     // the array is closed
	n, start  int64    // bytes read, and where the current record started
	keys      []keySet // the keys of the objects open at each depth
	dec       text     // a string being decoded
	raw       text     // a nested value's JSON text
	discard   text     // keeps nothing
	num       []byte   // a scalar being read
}

func newJSONRecords(r *bufio.Reader, name string, kinds bool) *jsonRecords {
	return &jsonRecords{r: r, name: name, kinds: kinds, line: 1, col: 1, discard: text{off: true}}
}

func (j *jsonRecords) errorf(format string, args ...any) error {
	return j.errorAt(j.line, j.col, format, args...)
}

func (j *jsonRecords) errorAt(line, col int, format string, args ...any) error {
	return fmt.Errorf("%s:%d:%d: %s", j.name, line, col, fmt.Sprintf(format, args...))
}

// readByte reads one byte, keeping the position; io.EOF at the end.
func (j *jsonRecords) readByte() (byte, error) {
	c, err := j.r.ReadByte()
	if err != nil {
		return 0, err
	}
	j.n++
	if j.n-j.start > maxRecord {
		return 0, j.errorf("record larger than %d bytes (the limit for one record)", maxRecord)
	}
	switch {
	case c == '\n':
		j.line, j.col = j.line+1, 1
	case c&0xC0 != 0x80:
		j.col++
	}
	return c, nil
}

// peek returns the next byte without reading it; 0 at the end.
func (j *jsonRecords) peek() byte {
	b, err := j.r.Peek(1)
	if err != nil {
		return 0
	}
	return b[0]
}

func (j *jsonRecords) skipSpace() {
	for {
		switch j.peek() {
		case ' ', '\t', '\r', '\n':
			j.readByte()
		default:
			return
		}
	}
}

// next returns the next record and the line it starts on; io.EOF after the
// last.
func (j *jsonRecords) next() (map[string]any, int, error) {
	j.start = j.n
	if !j.started {
		j.started = true
		j.skipSpace()
		if j.peek() == '[' {
			j.readByte()
			j.array = true
			j.skipSpace()
			if j.peek() == ']' {
				j.readByte()
				j.done = true
			}
		}
	} else if j.array && !j.done {
		j.skipSpace()
		c, err := j.readByte()
		switch {
		case err == io.EOF:
			return nil, 0, j.errorf("unexpected end of file in the top-level array")
		case err != nil:
			return nil, 0, err
		case c == ']':
			j.done = true
		case c != ',':
			return nil, 0, j.errorf("want , or ] after an array element, got %q", c)
		}
	}
	j.skipSpace()
	if j.peek() == 0 {
		if _, err := j.r.Peek(1); err != io.EOF {
			if err == nil {
				return nil, 0, j.errorf("NUL byte outside a string")
			}
			return nil, 0, err
		}
		if j.array && !j.done {
			return nil, 0, j.errorf("unexpected end of file in the top-level array")
		}
		return nil, 0, io.EOF
	}
	if j.done {
		return nil, 0, j.errorf("data after the top-level array")
	}
	line := j.line
	if j.peek() != '{' {
		return nil, 0, fmt.Errorf("%s:%d: not a JSON object", j.name, line)
	}
	j.start = j.n
	rec, err := j.object()
	return rec, line, err
}

// object reads a top-level object, decoding its values one level deep.
func (j *jsonRecords) object() (map[string]any, error) {
	j.readByte() // {
	rec := map[string]any{}
	j.skipSpace()
	if j.peek() == '}' {
		j.readByte()
		return rec, nil
	}
	for {
		j.skipSpace()
		kl, kc := j.line, j.col
		if j.peek() != '"' {
			return nil, j.errorf("want a string key")
		}
		if err := j.str(nil, true); err != nil {
			return nil, err
		}
		key := j.dec.string()
		if _, dup := rec[key]; dup {
			return nil, fmt.Errorf("%s:%d:%d: duplicate key %q in one object; the file would be read differently by different tools, so remove one", j.name, kl, kc, key)
		}
		if err := j.colon(); err != nil {
			return nil, err
		}
		j.skipSpace()
		var v any
		switch c := j.peek(); c {
		case '{', '[':
			j.raw.reset(j.kinds)
			if err := j.rawValue(1); err != nil {
				return nil, err
			}
			v = rawJSON(nil)
			if !j.kinds {
				v = rawJSON(j.raw.take())
			}
			j.raw.reset(false)
		case '"':
			if err := j.str(nil, !j.kinds); err != nil {
				return nil, err
			}
			v = ""
			if !j.kinds {
				v = j.dec.string()
			}
			j.dec.reset(false)
		default:
			text, err := j.scalar()
			if err != nil {
				return nil, err
			}
			v = scalarValue(text)
		}
		rec[key] = v
		if end, err := j.comma('}'); err != nil || end {
			return rec, err
		}
	}
}

func (j *jsonRecords) colon() error {
	j.skipSpace()
	c, err := j.readByte()
	if err != nil || c != ':' {
		return j.errorf("want : after an object key")
	}
	return nil
}

// comma reads the separator after a member or element: true at the closer.
func (j *jsonRecords) comma(closer byte) (bool, error) {
	j.skipSpace()
	c, err := j.readByte()
	switch {
	case err == io.EOF:
		return false, j.errorf("unexpected end of file")
	case err != nil:
		return false, err
	case c == closer:
		return true, nil
	case c == ',':
		return false, nil
	}
	return false, j.errorf("want , or %c, got %q", closer, c)
}

// rawValue reads a nested object or array into j.raw as compact JSON,
// checking it as object() does.
func (j *jsonRecords) rawValue(depth int) error {
	if depth > maxJSONDepth {
		return j.errorf("JSON nested deeper than %d levels", maxJSONDepth)
	}
	out := &j.raw
	open, _ := j.readByte()
	out.addByte(open)
	closer := byte(']')
	if open == '{' {
		closer = '}'
		if len(j.keys) < depth {
			j.keys = append(j.keys, make([]keySet, depth-len(j.keys))...)
		}
		j.keys[depth-1].reset()
	}
	j.skipSpace()
	if j.peek() == closer {
		j.readByte()
		out.addByte(closer)
		return nil
	}
	for first := true; ; first = false {
		if !first {
			out.addByte(',')
		}
		j.skipSpace()
		if open == '{' {
			kl, kc := j.line, j.col
			if j.peek() != '"' {
				return j.errorf("want a string key")
			}
			if err := j.str(out, true); err != nil {
				return err
			}
			k := j.dec.string()
			if j.keys[depth-1].add(k) {
				return fmt.Errorf("%s:%d:%d: duplicate key %q in one object; the file would be read differently by different tools, so remove one", j.name, kl, kc, k)
			}
			if err := j.colon(); err != nil {
				return err
			}
			out.addByte(':')
			j.skipSpace()
		}
		var err error
		switch j.peek() {
		case '{', '[':
			err = j.rawValue(depth + 1)
		case '"':
			err = j.str(out, false)
		default:
			var text []byte
			if text, err = j.scalar(); err == nil {
				out.add(text)
			}
		}
		if err != nil {
			return err
		}
		end, err := j.comma(closer)
		if err != nil {
			return err
		}
		if end {
			out.addByte(closer)
			return nil
		}
	}
}

// str reads a JSON string, with decode decoding it into j.dec (reset
// first), and appending its JSON text as written to out when out is not
// nil. It checks UTF-8 and escapes either way.
func (j *jsonRecords) str(out *text, decode bool) error {
	j.readByte() // "
	if out == nil {
		out = &j.discard
	}
	out.addByte('"')
	s := &j.dec
	s.reset(!decode)
	for {
		c, err := j.readByte()
		if err != nil {
			if err == io.EOF {
				return j.errorf("unterminated string")
			}
			return err
		}
		switch {
		case c == '"':
			out.addByte('"')
			return nil
		case c < 0x20:
			return j.errorAt(j.line, j.col-1, "control character %q in a string (JSON requires it escaped)", c)
		case c == '\\':
			line, col := j.line, j.col-1
			e, _ := j.readByte()
			out.addByte('\\')
			out.addByte(e)
			switch e {
			case '"', '\\', '/':
				s.addByte(e)
			case 'b':
				s.addByte('\b')
			case 'f':
				s.addByte('\f')
			case 'n':
				s.addByte('\n')
			case 'r':
				s.addByte('\r')
			case 't':
				s.addByte('\t')
			case 'u':
				r, hex, err := j.hex4()
				if err != nil {
					return err
				}
				out.add(hex)
				if utf16.IsSurrogate(r) {
					var low rune = -1
					if b, _ := j.r.Peek(2); string(b) == "\\u" {
						j.readByte()
						j.readByte()
						if low, hex, err = j.hex4(); err != nil {
							return err
						}
						out.addByte('\\')
						out.addByte('u')
						out.add(hex)
					}
					if r = utf16.DecodeRune(r, low); r == utf8.RuneError {
						return j.errorAt(line, col, "escaped lone UTF-16 surrogate in a string; it has no UTF-8 form, and Parquet strings must be UTF-8")
					}
				}
				var buf [utf8.UTFMax]byte
				s.add(utf8.AppendRune(buf[:0], r))
			default:
				return j.errorAt(line, col, "invalid escape \\%c in a string", e)
			}
		case c < utf8.RuneSelf:
			s.addByte(c)
			out.addByte(c)
		default:
			line, col := j.line, j.col
			if c&0xC0 != 0x80 {
				col-- // readByte counted c as a character
			}
			var buf [utf8.UTFMax]byte
			buf[0] = c
			n := 1
			for n < utf8.UTFMax && !utf8.FullRune(buf[:n]) && j.peek()&0xC0 == 0x80 {
				buf[n], _ = j.readByte()
				n++
			}
			if r, size := utf8.DecodeRune(buf[:n]); r == utf8.RuneError && size <= 1 || size != n {
				return j.errorAt(line, col, "invalid UTF-8 in a string; Parquet strings must be UTF-8: convert the file to UTF-8 (e.g. iconv -f LATIN1 -t UTF-8)")
			}
			s.add(buf[:n])
			out.add(buf[:n])
		}
	}
}

func (j *jsonRecords) hex4() (rune, []byte, error) {
	var hex [4]byte
	for i := range hex {
		hex[i], _ = j.readByte()
	}
	r, err := strconv.ParseUint(string(hex[:]), 16, 16)
	if err != nil {
		return 0, nil, j.errorf("invalid \\u escape in a string")
	}
	return rune(r), hex[:], nil
}

// scalar reads a number, true, false or null and returns its text, valid
// until the next call.
func (j *jsonRecords) scalar() ([]byte, error) {
	line, col := j.line, j.col
	text := j.num[:0]
	for {
		c := j.peek()
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '+' || c == '.' || c == 'E') {
			break
		}
		j.readByte()
		text = append(text, c)
	}
	j.num = text
	switch string(text) {
	case "true", "false", "null":
		return text, nil
	}
	if !isJSONNumber(text) {
		if len(text) == 0 {
			return nil, j.errorf("want a JSON value")
		}
		return nil, fmt.Errorf("%s:%d:%d: %q is not a JSON value", j.name, line, col, text)
	}
	return text, nil
}

// scalarValue is the Go value of scalar's text: bool, nil or json.Number.
func scalarValue(text []byte) any {
	switch string(text) {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	return json.Number(text)
}

// isJSONNumber reports whether s is a number in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s []byte) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, n = i+1, n+1
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// errInexact says a number has no exact double.
var errInexact = errors.New("a double cannot hold it exactly")

// exactFloat converts a JSON number to the double that reads back as the
// same decimal number (0.1 does; 2^53+1 and 1e400 do not).
func exactFloat(n json.Number) (float64, error) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return 0, errInexact
	}
	if !sameDecimal(string(n), strconv.FormatFloat(f, 'e', -1, 64)) {
		return 0, errInexact
	}
	return f, nil
}

// sameDecimal compares two decimal numbers' values exactly, without big
// arithmetic (an exponent of a billion costs nothing).
func sameDecimal(a, b string) bool {
	na, ea, oka := normDecimal(a)
	nb, eb, okb := normDecimal(b)
	return oka && okb && na == nb && (na == "" || na == "-" || ea == eb)
}

// normDecimal writes a decimal number as sign+digits (no leading or
// trailing zeros) and the power of ten of its first digit.
func normDecimal(s string) (string, int64, bool) {
	sign := ""
	if s != "" && (s[0] == '-' || s[0] == '+') {
		if s[0] == '-' {
			sign = "-"
		}
		s = s[1:]
	}
	mant, exp := s, int64(0)
	for i := 0; i < len(s); i++ {
		if s[i] == 'e' || s[i] == 'E' {
			mant = s[:i]
			e, err := strconv.ParseInt(s[i+1:], 10, 64)
			if err != nil || e > 1<<40 || e < -(1<<40) {
				return "", 0, false
			}
			exp = e
			break
		}
	}
	intPart, frac := mant, ""
	for i := 0; i < len(mant); i++ {
		if mant[i] == '.' {
			intPart, frac = mant[:i], mant[i+1:]
			break
		}
	}
	digits := intPart + frac
	lead := 0
	for lead < len(digits) && digits[lead] == '0' {
		lead++
	}
	digits = digits[lead:]
	end := len(digits)
	for end > 0 && digits[end-1] == '0' {
		end--
	}
	digits = digits[:end]
	if digits == "" {
		return "", 0, true // zero, of either sign
	}
	return sign + digits, exp + int64(len(intPart)) - int64(lead) - 1, true
}

// keySet holds an object's keys: a short list while the object is small
// (most are), a map once it is not.
type keySet struct {
	list []string
	m    map[string]struct{}
}

func (k *keySet) reset() { k.list, k.m = k.list[:0], nil }

// add adds key and reports whether it was there already.
func (k *keySet) add(key string) bool {
	if k.m != nil {
		_, dup := k.m[key]
		k.m[key] = struct{}{}
		return dup
	}
	if slices.Contains(k.list, key) {
		return true
	}
	k.list = append(k.list, key)
	if len(k.list) > 16 {
		k.m = make(map[string]struct{}, 2*len(k.list))
		for _, s := range k.list {
			k.m[s] = struct{}{}
		}
	}
	return false
}
