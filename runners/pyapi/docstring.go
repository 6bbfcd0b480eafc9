package pyapi

import (
	"regexp"
	"strings"
)

// ParamDoc is the description of one parameter in a docstring.
type ParamDoc struct {
	Name        string // without the * or ** of *args and **kwargs
	Type        string // as written, "" when the docstring gives none
	Description string // lines joined by spaces, paragraphs by a blank line
	Style       string // numpydoc, google or sphinx
}

// ParamDocs parses the per-parameter descriptions of a docstring written
// in any of the three common styles, or a mix:
//
//	numpydoc: a "Parameters" (or "Other Parameters") header underlined with
//	          dashes; entries "name : type" (or "x, y : type", or "name"),
//	          descriptions indented below them.
//	Google:   an "Args:" (Arguments, Parameters, Params, Keyword Args,
//	          Keyword Arguments, Other Parameters) line; entries
//	          "name (type): description" or "name: description" indented
//	          under it, continuation lines indented further.
//	Sphinx:   ":param name: description" (also :param type name:,
//	          :parameter, :arg, :argument, :key, :keyword), with
//	          ":type name: type"; continuation lines indented.
//
// Entries come in the order they appear; a name described twice keeps its
// first description (and gains a type from a later :type field).
func ParamDocs(doc string) []ParamDoc {
	lines := strings.Split(strings.ReplaceAll(doc, "\t", "    "), "\n")
	var out []ParamDoc
	index := map[string]int{}
	add := func(p ParamDoc) {
		if p.Name == "" {
			return
		}
		if i, ok := index[p.Name]; ok {
			if out[i].Type == "" {
				out[i].Type = p.Type
			}
			if out[i].Description == "" {
				out[i].Description = p.Description
			}
			return
		}
		index[p.Name] = len(out)
		out = append(out, p)
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case numpyHeader.MatchString(line) && i+1 < len(lines) && dashes.MatchString(lines[i+1]) && indent(lines[i+1]) == indent(line):
			i = numpySection(lines, i+2, indent(line), add) - 1
		case googleHeader.MatchString(line):
			i = googleSection(lines, i+1, indent(line), add) - 1
		case sphinxField.MatchString(line):
			i = sphinxFields(lines, i, add) - 1
		}
	}
	return out
}

var (
	numpyHeader  = regexp.MustCompile(`^\s*(Parameters|Other Parameters)\s*$`)
	dashes       = regexp.MustCompile(`^\s*-{3,}\s*$`)
	numpyEntry   = regexp.MustCompile(`^\s*(\*{0,2}[A-Za-z_]\w*(?:\s*,\s*\*{0,2}[A-Za-z_]\w*)*)\s*(?::\s*(.*?))?\s*$`)
	googleHeader = regexp.MustCompile(`^\s*(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters)\s*:\s*$`)
	googleEntry  = regexp.MustCompile(`^\s*(\*{0,2}[A-Za-z_]\w*)\s*(?:\(([^)]*)\))?\s*:\s*(.*?)\s*$`)
	sphinxField  = regexp.MustCompile(`^\s*:(param|parameter|arg|argument|key|keyword|type)\s+([^:]*?)\s*:\s*(.*?)\s*$`)
)

func indent(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }

func blank(s string) bool { return strings.TrimSpace(s) == "" }

// text joins description lines: spaces within a paragraph, a blank line
// between paragraphs.
type text struct {
	paras []string
	cur   []string
}

func (t *text) add(line string) {
	if blank(line) {
		t.flush()
		return
	}
	t.cur = append(t.cur, strings.TrimSpace(line))
}

func (t *text) flush() {
	if len(t.cur) > 0 {
		t.paras = append(t.paras, strings.Join(t.cur, " "))
		t.cur = nil
	}
}

func (t *text) String() string {
	t.flush()
	return strings.Join(t.paras, "\n\n")
}

// numpySection parses entries from line i at indentation base; it returns
// the index of the first line after the section.
func numpySection(lines []string, i, base int, add func(ParamDoc)) int {
	var names []string
	var typ string
	var desc text
	emit := func() {
		d := desc.String()
		for _, n := range names {
			add(ParamDoc{Name: strings.TrimLeft(n, "*"), Type: typ, Description: d, Style: "numpydoc"})
		}
		names, typ, desc = nil, "", text{}
	}
	for ; i < len(lines); i++ {
		line := lines[i]
		if blank(line) {
			desc.add(line)
			continue
		}
		if indent(line) > base {
			desc.add(line)
			continue
		}
		// A line at the section's indentation: an entry, or the end.
		if i+1 < len(lines) && dashes.MatchString(lines[i+1]) {
			break // the next section's header
		}
		m := numpyEntry.FindStringSubmatch(line)
		if m == nil || indent(line) < base {
			break
		}
		emit()
		for _, n := range strings.Split(m[1], ",") {
			names = append(names, strings.TrimSpace(n))
		}
		typ = m[2]
	}
	emit()
	return i
}

// googleSection parses the entries indented under a header at
// indentation base.
func googleSection(lines []string, i, base int, add func(ParamDoc)) int {
	entry := -1
	var cur ParamDoc
	var desc text
	emit := func() {
		if cur.Name != "" {
			cur.Description = desc.String()
			add(cur)
		}
		cur, desc = ParamDoc{}, text{}
	}
	for ; i < len(lines); i++ {
		line := lines[i]
		if blank(line) {
			desc.add(line)
			continue
		}
		ind := indent(line)
		if ind <= base {
			break
		}
		if entry < 0 {
			entry = ind
		}
		if ind > entry {
			desc.add(line)
			continue
		}
		m := googleEntry.FindStringSubmatch(line)
		if m == nil {
			desc.add(line)
			continue
		}
		emit()
		cur = ParamDoc{Name: strings.TrimLeft(m[1], "*"), Type: strings.TrimSpace(m[2]), Style: "google"}
		desc.add(m[3])
	}
	emit()
	return i
}

// sphinxFields parses consecutive field-list entries from line i.
func sphinxFields(lines []string, i int, add func(ParamDoc)) int {
	for i < len(lines) {
		m := sphinxField.FindStringSubmatch(lines[i])
		if m == nil {
			return i
		}
		base := indent(lines[i])
		var desc text
		desc.add(m[3])
		j := i + 1
		for ; j < len(lines) && !blank(lines[j]) && indent(lines[j]) > base; j++ {
			desc.add(lines[j])
		}
		words := strings.Fields(m[2])
		if len(words) > 0 {
			name := strings.TrimLeft(words[len(words)-1], "*")
			if m[1] == "type" {
				add(ParamDoc{Name: name, Type: desc.String(), Style: "sphinx"})
			} else {
				add(ParamDoc{Name: name, Type: strings.Join(words[:len(words)-1], " "), Description: desc.String(), Style: "sphinx"})
			}
		}
		i = j
		for i < len(lines) && blank(lines[i]) && i+1 < len(lines) && sphinxField.MatchString(lines[i+1]) {
			i++
		}
	}
	return i
}

// DefaultMinDocWords is the threshold below which a docstring is thin: a
// docstring of fewer than 5 words of prose (doctest examples not counted)
// says too little to write a task or a bundle from.
const DefaultMinDocWords = 5

// DocWords counts the words of a docstring's prose: doctest examples
// (">>>" and "..." lines and the output that follows them up to a blank
// line) are not counted.
func DocWords(doc string) int {
	n, inExample := 0, false
	for _, line := range strings.Split(doc, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, ">>>"):
			inExample = true
		case t == "":
			inExample = false
		case !inExample:
			n += len(strings.Fields(t))
		}
	}
	return n
}
