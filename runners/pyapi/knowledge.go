package pyapi

import (
	"regexp"
	"strings"
)

// SParam is one parameter or result in S: the columns of the Go bundle's
// Param (name, type, variadic, doc) and what Python adds (kind, default).
type SParam struct {
	Name string
	// Type is the annotation as written; when there is none, the type the
	// docstring gives.
	Type       string
	Variadic   bool   // *args (var_positional)
	Kind       string // Param.Kind; "" for a result
	Default    string
	HasDefault bool
	Doc        string // what the docstring says of it, "" when nothing
}

// S is an API's signature tier.
type S struct {
	// Signature is the surface's signature as Python declares it: "def
	// area(w: float, h: float = 1.0) -> float", "class Point(x: float =
	// 0.0)", "@property\ndef size(self) -> int".
	Signature string
	// Params are the parameters, less the receiver (self or cls of a
	// method, like the Go receiver).
	Params []SParam
	// Results is the return annotation as one unnamed result (or the
	// docstring's return type when there is no annotation); empty when
	// neither says anything. Classes have none: calling one makes an
	// instance.
	Results []SParam
}

// Signature builds S for a from the surface and its docstring (its own,
// else the inherited one): per-parameter descriptions from ParamDocs, the
// result's from the Returns section (numpydoc "Returns" underlined,
// Google "Returns:", Sphinx ":returns:" and ":rtype:").
func Signature(a API) S {
	doc := DocOf(a)
	docs := map[string]ParamDoc{}
	for _, p := range ParamDocs(doc) {
		docs[p.Name] = p
	}
	s := S{Signature: a.Signature, Params: []SParam{}, Results: []SParam{}}
	switch a.Kind {
	case "class":
		s.Signature = "class " + a.Signature
	case "property":
		s.Signature = "@property\ndef " + a.Signature
	default:
		s.Signature = "def " + a.Signature
	}
	for i, p := range a.Params {
		if i == 0 && ((a.Kind == "method" || a.Kind == "property") && p.Name == "self" || a.Kind == "classmethod" && p.Name == "cls") {
			continue
		}
		d := docs[p.Name]
		typ := p.Annotation
		if typ == "" {
			typ = d.Type
		}
		s.Params = append(s.Params, SParam{Name: p.Name, Type: typ, Variadic: p.Kind == "var_positional", Kind: p.Kind,
			Default: p.Default, HasDefault: p.HasDefault, Doc: d.Description})
	}
	if a.Kind != "class" {
		rtype, rdoc := ReturnDoc(doc)
		if a.Returns != "" {
			rtype = a.Returns
		}
		if rtype != "" || rdoc != "" {
			s.Results = append(s.Results, SParam{Type: rtype, Doc: rdoc})
		}
	}
	return s
}

// Text renders S the way the Go bundle's S is shown (cells' S.tmpl): the
// signature, then one line per parameter and per result, "name type:
// doc" (here with " = default" after the type, and "*" before a *args).
func (s S) Text() string {
	var b strings.Builder
	b.WriteString(s.Signature)
	line := func(p SParam) {
		b.WriteString("\n- ")
		if p.Name != "" {
			if p.Variadic {
				b.WriteString("*")
			} else if p.Kind == "var_keyword" {
				b.WriteString("**")
			}
			b.WriteString(p.Name)
			if p.Type != "" || p.HasDefault {
				b.WriteString(" ")
			}
		}
		b.WriteString(p.Type)
		if p.HasDefault {
			if p.Type != "" {
				b.WriteString(" ")
			}
			b.WriteString("= " + p.Default)
		}
		if p.Doc != "" {
			b.WriteString(": " + p.Doc)
		}
	}
	if len(s.Params) > 0 {
		b.WriteString("\n\nParameters:")
		for _, p := range s.Params {
			line(p)
		}
	}
	if len(s.Results) > 0 {
		b.WriteString("\n\nResults:")
		for _, p := range s.Results {
			line(p)
		}
	}
	return b.String()
}

// DocOf is the docstring a bundle quotes for a: its own, else the one it
// inherits from a base class of the library (not one of the standard
// library: that says nothing of the API).
func DocOf(a API) string {
	if strings.TrimSpace(a.Doc) != "" || a.StdlibDoc {
		return a.Doc
	}
	return a.InheritedDoc
}

var (
	numpyReturns  = regexp.MustCompile(`^\s*(Returns|Yields)\s*$`)
	googleReturns = regexp.MustCompile(`^\s*(Returns|Return|Yields)\s*:\s*(.*?)\s*$`)
	sphinxReturns = regexp.MustCompile(`^\s*:(returns?|rtype)\s*:\s*(.*?)\s*$`)
	anySection    = regexp.MustCompile(`^\s*:\w`)
)

// ReturnDoc returns the type and description of the result a docstring
// documents: a numpydoc "Returns" section ("name : type" or "type" with
// the description indented below), a Google "Returns:" block ("type:
// description", or a description), or Sphinx ":returns:" and ":rtype:".
// Empty when it documents none.
func ReturnDoc(doc string) (typ, desc string) {
	lines := strings.Split(strings.ReplaceAll(doc, "\t", "    "), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case numpyReturns.MatchString(line) && i+1 < len(lines) && dashes.MatchString(lines[i+1]):
			base, j := indent(line), i+2
			if j >= len(lines) || blank(lines[j]) {
				return "", ""
			}
			head := strings.TrimSpace(lines[j])
			if _, ty, ok := strings.Cut(head, " : "); ok {
				typ = strings.TrimSpace(ty)
			} else {
				typ = head
			}
			var t text
			for j++; j < len(lines) && (blank(lines[j]) || indent(lines[j]) > base); j++ {
				t.add(lines[j])
			}
			return typ, t.String()
		case googleReturns.MatchString(line) && !numpyReturns.MatchString(line):
			m := googleReturns.FindStringSubmatch(line)
			base := indent(line)
			var t text
			t.add(m[2])
			for j := i + 1; j < len(lines) && (blank(lines[j]) || indent(lines[j]) > base); j++ {
				t.add(lines[j])
			}
			d := t.String()
			if ty, rest, ok := strings.Cut(d, ": "); ok && !strings.Contains(ty, " ") {
				return ty, rest
			}
			return "", d
		case sphinxReturns.MatchString(line):
			for ; i < len(lines) && anySection.MatchString(lines[i]); i++ {
				if m := sphinxReturns.FindStringSubmatch(lines[i]); m != nil {
					var t text
					t.add(m[2])
					for i+1 < len(lines) && !blank(lines[i+1]) && indent(lines[i+1]) > indent(lines[i]) {
						i++
						t.add(lines[i])
					}
					if m[1] == "rtype" {
						typ = t.String()
					} else {
						desc = t.String()
					}
				}
			}
			return typ, desc
		}
	}
	return "", ""
}

var exampleHeader = regexp.MustCompile(`^\s*(Examples?|Usage)\s*:?\s*$`)

// Prose is M_prose's doc tier (the Go bundle's "doc" tier: the doc comment
// itself): the docstring DocOf gives, less its doctest examples (">>>"
// and "..." lines and the output that follows them up to a blank line,
// which E holds) and the Examples header they leave empty. Parameter
// sections stay: the paper does not make M_prose orthogonal to S.
func Prose(a API) string {
	lines := strings.Split(DocOf(a), "\n")
	var kept []string
	inExample := false
	for _, line := range lines {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, ">>>"):
			inExample = true
		case t == "":
			inExample = false
			kept = append(kept, line)
		case !inExample:
			kept = append(kept, line)
		}
	}
	// Drop a header (and its underline) followed by nothing but blank
	// lines up to the next header or the end.
	var out []string
	for i := 0; i < len(kept); i++ {
		if exampleHeader.MatchString(kept[i]) {
			j := i + 1
			if j < len(kept) && dashes.MatchString(kept[j]) {
				j++
			}
			k := j
			for k < len(kept) && blank(kept[k]) {
				k++
			}
			if k == len(kept) || (k+1 < len(kept) && dashes.MatchString(kept[k+1])) || googleHeader.MatchString(kept[k]) || exampleHeader.MatchString(kept[k]) {
				i = k - 1
				continue
			}
		}
		out = append(out, kept[i])
	}
	s := strings.Join(out, "\n")
	for strings.Contains(s, "\n\n\n") {
		s = strings.ReplaceAll(s, "\n\n\n", "\n\n")
	}
	return strings.TrimSpace(s)
}
