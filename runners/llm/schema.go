package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// schema is a parsed JSON schema of the subset lacuna's requests use:
// type (object, string, number, integer, boolean, array, null, or a list
// of them), properties, required, enum, items, additionalProperties
// false, and a number's minimum, maximum, exclusiveMinimum and
// exclusiveMaximum (numbers, as JSON Schema 2020-12 has them; draft 4's
// boolean exclusiveMinimum / exclusiveMaximum, which make minimum /
// maximum exclusive, are read too). Other keywords are not checked.
type schema struct {
	types    []string
	props    map[string]*schema
	required []string
	enum     []any
	items    *schema
	closed   bool // additionalProperties: false
	bounds   []bound
}

// bound is one numeric bound: the value must be above (or at, unless
// strict) min, or below (or at) max.
type bound struct {
	keyword string
	limit   float64
	upper   bool // a maximum
	strict  bool // exclusive
}

func (b bound) holds(x float64) bool {
	switch {
	case b.upper && b.strict:
		return x < b.limit
	case b.upper:
		return x <= b.limit
	case b.strict:
		return x > b.limit
	}
	return x >= b.limit
}

// parseSchema reads a schema document.
func parseSchema(raw json.RawMessage) (*schema, error) {
	var v any
	if err := decodeJSON(raw, &v); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return buildSchema(v, "#")
}

func buildSchema(v any, at string) (*schema, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema %s: not an object", at)
	}
	s := &schema{}
	switch t := m["type"].(type) {
	case nil:
	case string:
		s.types = []string{t}
	case []any:
		for _, x := range t {
			name, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("schema %s: type list holds a non-string", at)
			}
			s.types = append(s.types, name)
		}
	default:
		return nil, fmt.Errorf("schema %s: type is neither a string nor a list", at)
	}
	for _, t := range s.types {
		switch t {
		case "object", "string", "number", "integer", "boolean", "array", "null":
		default:
			return nil, fmt.Errorf("schema %s: unknown type %q", at, t)
		}
	}
	if p, ok := m["properties"]; ok {
		pm, ok := p.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("schema %s: properties is not an object", at)
		}
		s.props = map[string]*schema{}
		for k, sub := range pm {
			ps, err := buildSchema(sub, at+"/properties/"+k)
			if err != nil {
				return nil, err
			}
			s.props[k] = ps
		}
	}
	if r, ok := m["required"]; ok {
		rl, ok := r.([]any)
		if !ok {
			return nil, fmt.Errorf("schema %s: required is not a list", at)
		}
		for _, x := range rl {
			name, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("schema %s: required holds a non-string", at)
			}
			s.required = append(s.required, name)
		}
	}
	if e, ok := m["enum"]; ok {
		el, ok := e.([]any)
		if !ok {
			return nil, fmt.Errorf("schema %s: enum is not a list", at)
		}
		s.enum = el
	}
	if it, ok := m["items"]; ok {
		is, err := buildSchema(it, at+"/items")
		if err != nil {
			return nil, err
		}
		s.items = is
	}
	if ap, ok := m["additionalProperties"].(bool); ok && !ap {
		s.closed = true
	}
	for _, k := range []struct {
		name, exclusive string
		upper           bool
	}{{"minimum", "exclusiveMinimum", false}, {"maximum", "exclusiveMaximum", true}} {
		draft4 := false
		switch x := m[k.exclusive].(type) {
		case nil:
		case bool:
			draft4 = x
		case json.Number:
			f, err := x.Float64()
			if err != nil {
				return nil, fmt.Errorf("schema %s: %s %s is not a number", at, k.exclusive, x)
			}
			s.bounds = append(s.bounds, bound{keyword: k.exclusive, limit: f, upper: k.upper, strict: true})
		default:
			return nil, fmt.Errorf("schema %s: %s is neither a number nor a boolean", at, k.exclusive)
		}
		switch x := m[k.name].(type) {
		case nil:
			if draft4 {
				return nil, fmt.Errorf("schema %s: %s = true without %s", at, k.exclusive, k.name)
			}
		case json.Number:
			f, err := x.Float64()
			if err != nil {
				return nil, fmt.Errorf("schema %s: %s %s is not a number", at, k.name, x)
			}
			name := k.name
			if draft4 {
				name = k.exclusive + " " + k.name
			}
			s.bounds = append(s.bounds, bound{keyword: name, limit: f, upper: k.upper, strict: draft4})
		default:
			return nil, fmt.Errorf("schema %s: %s is not a number", at, k.name)
		}
	}
	return s, nil
}

// check reports why v does not satisfy s ("" when it does).
func (s *schema) check(v any, at string) string {
	if len(s.types) > 0 {
		ok := false
		for _, t := range s.types {
			if hasType(v, t) {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Sprintf("%s: want %s, got %s", at, strings.Join(s.types, " or "), typeName(v))
		}
	}
	if s.enum != nil {
		ok := false
		for _, e := range s.enum {
			if jsonEqual(e, v) {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Sprintf("%s: %s is not one of the enum's values", at, excerpt(mustJSON(v), 60))
		}
	}
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		for _, b := range s.bounds {
			if err != nil || !b.holds(f) {
				return fmt.Sprintf("%s: %s is outside %s %s", at, x, b.keyword, strconv.FormatFloat(b.limit, 'g', -1, 64))
			}
		}
	case map[string]any:
		for _, r := range s.required {
			if _, ok := x[r]; !ok {
				return fmt.Sprintf("%s: required property %q is missing", at, r)
			}
		}
		for k, pv := range x {
			ps, ok := s.props[k]
			if !ok {
				if s.closed {
					return fmt.Sprintf("%s: property %q is not allowed", at, k)
				}
				continue
			}
			if why := ps.check(pv, at+"/"+k); why != "" {
				return why
			}
		}
	case []any:
		if s.items != nil {
			for i, iv := range x {
				if why := s.items.check(iv, at+"/"+strconv.Itoa(i)); why != "" {
					return why
				}
			}
		}
	}
	return ""
}

func hasType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		if _, err := n.Int64(); err == nil {
			return true
		}
		f, err := n.Float64()
		return err == nil && f == float64(int64(f))
	}
	return false
}

func typeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// jsonEqual compares two decoded JSON values; numbers compare by value.
func jsonEqual(a, b any) bool {
	an, aok := a.(json.Number)
	bn, bok := b.(json.Number)
	if aok && bok {
		af, e1 := an.Float64()
		bf, e2 := bn.Float64()
		return e1 == nil && e2 == nil && af == bf
	}
	return reflect.DeepEqual(a, b)
}

// decodeJSON decodes exactly one JSON value with numbers kept exact.
func decodeJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// checkAnswer reports whether an answer satisfied the request's schema or
// choice, and why not. What is checked is AnswerJSON(text): a reasoning
// model's think blocks and a fence around the whole answer are not part of
// it.
func checkAnswer(req *Request, sc *schema, text string) (bool, string) {
	answer := AnswerJSON(text)
	if len(req.Choice) > 0 {
		// vLLM's structured_outputs choice answers the bare string;
		// response_format's string enum answers it as a JSON string.
		cand := answer
		var s string
		if json.Unmarshal([]byte(answer), &s) == nil {
			cand = s
		}
		for _, c := range req.Choice {
			if cand == c || answer == c {
				return true, ""
			}
		}
		return false, fmt.Sprintf("answer %q is none of the %d choices", excerpt(answer, 60), len(req.Choice))
	}
	var v any
	if err := decodeJSON([]byte(answer), &v); err != nil {
		return false, fmt.Sprintf("answer is not JSON: %v", err)
	}
	if why := sc.check(v, "#"); why != "" {
		return false, why
	}
	return true, ""
}
