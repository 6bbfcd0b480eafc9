package engine

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Large pipelines (generated ones with thousands of node blocks) are parsed
// in chunks of whole top-level blocks. hclsyntax tokenizes a file into one
// slice before parsing it; for a file of 10,000 blocks that slice is tens of
// megabytes, regrown and copied many times. Chunks keep every slice small.
// Positions stay exact (each chunk starts at its real line, column and
// byte), and if any chunk fails to parse, the whole file is parsed instead,
// so diagnostics are exactly what a whole-file parse gives.

// chunkMin is the file size from which chunked parsing is used, and the
// approximate size of a chunk. Tests lower it to chunk small files.
var chunkMin = 128 << 10

// parseChunked parses src as one or more bodies; ok is false when the
// caller should parse the whole file instead.
func parseChunked(src []byte, filename string) (bodies []hcl.Body, ok bool) {
	if len(src) < chunkMin {
		return nil, false
	}
	cuts := topLevelCuts(src)
	if cuts == nil {
		return nil, false
	}
	starts := append([]hcl.Pos{{Line: 1, Column: 1, Byte: 0}}, cuts...)
	bodies = make([]hcl.Body, len(starts))
	failed := make([]bool, len(starts))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(starts) {
					return
				}
				end := len(src)
				if i+1 < len(starts) {
					end = starts[i+1].Byte
				}
				f, diags := hclsyntax.ParseConfig(src[starts[i].Byte:end], filename, starts[i])
				// Top-level attributes are errors in a pipeline; let the
				// whole-file parse report them as it would.
				if f == nil || diags.HasErrors() || len(f.Body.(*hclsyntax.Body).Attributes) > 0 {
					failed[i] = true
					continue
				}
				bodies[i] = f.Body
			}
		}()
	}
	wg.Wait()
	for _, bad := range failed {
		if bad {
			return nil, false
		}
	}
	return bodies, true
}

// topLevelCuts finds line starts, about chunkMin apart, where nothing is
// heredocMarker reads the marker of a heredoc opening at src[i:] ("<<ID"
// or "<<-ID"): ID is src[j:k], empty when none follows.
func heredocMarker(src []byte, i int) (j, k int) {
	j = i + 2
	if j < len(src) && src[j] == '-' {
		j++
	}
	k = j
	for k < len(src) && (src[k] == '_' || src[k] == '-' || src[k] >= 'a' && src[k] <= 'z' || src[k] >= 'A' && src[k] <= 'Z' || src[k] >= '0' && src[k] <= '9') {
		k++
	}
	return j, k
}

// open: no bracket, string, template interpolation, heredoc or comment.
// It returns nil when it cannot follow the source (then nothing is cut).
func topLevelCuts(src []byte) []hcl.Pos {
	var cuts []hcl.Pos
	var stack []byte // '{', '[', '(' and 's' (string), 't' (template ${ or %{ in a string)
	line, last := 1, 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		top := byte(0)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top == 's' {
			switch {
			case c == '\\':
				i++
			case (c == '$' || c == '%') && i+2 < len(src) && src[i+1] == c && src[i+2] == '{':
				i += 2 // $${ and %%{ are literal text
			case c == '"':
				stack = stack[:len(stack)-1]
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == '{':
				stack = append(stack, 't')
				i++
			case c == '\n':
				return nil // strings do not span lines
			}
			continue
		}
		switch c {
		case '\n':
			line++
			if len(stack) == 0 && i+1-last >= chunkMin && i+1 < len(src) {
				cuts = append(cuts, hcl.Pos{Line: line, Column: 1, Byte: i + 1})
				last = i + 1
			}
		case '"':
			stack = append(stack, 's')
		case '{', '[', '(':
			stack = append(stack, c)
		case '}', ']', ')':
			if len(stack) == 0 {
				return nil
			}
			open := stack[len(stack)-1]
			if !(open == '{' && c == '}' || open == 't' && c == '}' || open == '[' && c == ']' || open == '(' && c == ')') {
				return nil
			}
			stack = stack[:len(stack)-1]
		case '#':
			j := bytes.IndexByte(src[i:], '\n')
			if j < 0 {
				return cuts
			}
			i += j - 1
		case '/':
			if i+1 < len(src) && src[i+1] == '/' {
				j := bytes.IndexByte(src[i:], '\n')
				if j < 0 {
					return cuts
				}
				i += j - 1
			} else if i+1 < len(src) && src[i+1] == '*' {
				j := bytes.Index(src[i+2:], []byte("*/"))
				if j < 0 {
					return nil
				}
				line += bytes.Count(src[i:i+2+j], []byte("\n"))
				i += j + 3
			}
		case '<':
			if i+1 < len(src) && src[i+1] == '<' {
				// A heredoc: <<ID or <<-ID to the end of the line, then
				// everything up to a line that is ID alone.
				j, k := heredocMarker(src, i)
				if k == j || k >= len(src) || src[k] != '\n' {
					return nil
				}
				id := string(src[j:k])
				pos := k + 1
				for {
					nl := bytes.IndexByte(src[pos:], '\n')
					var text []byte
					if nl < 0 {
						text = src[pos:]
					} else {
						text = src[pos : pos+nl]
					}
					line++
					if string(bytes.TrimSpace(text)) == id {
						i = pos + len(text) - 1
						break
					}
					if nl < 0 {
						return nil
					}
					pos += nl + 1
				}
			}
		}
	}
	if len(stack) != 0 {
		return nil
	}
	return cuts
}
