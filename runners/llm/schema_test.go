package llm

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSchemaChecksTheSubset(t *testing.T) {
	score := `{"type": "object", "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1}}, "required": ["score"]}`
	judge := `{"type": "object", "properties": {
		"class": {"type": "string", "enum": ["OK", "API_misuse"]},
		"confidence": {"type": "number"},
		"line": {"type": "integer"},
		"calls": {"type": "array", "items": {"type": "string"}},
		"fatal": {"type": "boolean"},
		"note": {"type": ["string", "null"]}
	}, "required": ["class"], "additionalProperties": false}`
	for _, tc := range []struct {
		name, schema, value string
		why                 string // "" when it holds; else a fragment of the reason
	}{
		{"all fields", judge, `{"class": "OK", "confidence": 0.9, "line": 12, "calls": ["lo.Map"], "fatal": false, "note": null}`, ""},
		{"only the required", judge, `{"class": "API_misuse"}`, ""},
		{"integer written as 3.0", judge, `{"class": "OK", "line": 3.0}`, ""},
		{"missing required", judge, `{"confidence": 1}`, `required property "class"`},
		{"off the enum", judge, `{"class": "bad"}`, "enum"},
		{"extra property", judge, `{"class": "OK", "extra": 1}`, `"extra" is not allowed`},
		{"wrong type", judge, `{"class": "OK", "confidence": "high"}`, "#/confidence: want number, got string"},
		{"fractional integer", judge, `{"class": "OK", "line": 1.5}`, "want integer"},
		{"item of the wrong type", judge, `{"class": "OK", "calls": ["a", 2]}`, "#/calls/1"},
		{"not an object", judge, `["OK"]`, "want object, got array"},
		{"open object", `{"type": "object", "properties": {"a": {"type": "string"}}}`, `{"a": "x", "b": 2}`, ""},
		{"numeric enum by value", `{"enum": [1, 2]}`, `2.0`, ""},
		{"no type accepts anything", `{}`, `"x"`, ""},
		// Bounds: a judge's score of 1e15 must not hold a 0..1 schema.
		{"score in range", score, `{"score": 0.5}`, ""},
		{"score at the minimum", score, `{"score": 0}`, ""},
		{"score at the maximum", score, `{"score": 1}`, ""},
		{"score far above", score, `{"score": 1e15}`, "#/score: 1e15 is outside maximum 1"},
		{"score below", score, `{"score": -0.1}`, "outside minimum 0"},
		{"exclusive minimum", `{"type": "number", "exclusiveMinimum": 0}`, `0`, "outside exclusiveMinimum 0"},
		{"above an exclusive minimum", `{"type": "number", "exclusiveMinimum": 0}`, `1e-9`, ""},
		{"exclusive maximum", `{"type": "integer", "exclusiveMaximum": 5}`, `5`, "outside exclusiveMaximum 5"},
		{"draft 4 exclusive maximum", `{"maximum": 5, "exclusiveMaximum": true}`, `5`, "outside exclusiveMaximum maximum 5"},
		{"draft 4 inclusive maximum", `{"maximum": 5, "exclusiveMaximum": false}`, `5`, ""},
		{"bounds leave strings alone", `{"type": ["number", "string"], "minimum": 3}`, `"2"`, ""},
		{"items bounded", `{"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 6}}`, `[1, 6, 7]`, "#/2: 7 is outside maximum 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := parseSchema(json.RawMessage(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			held, why := checkAnswer(&Request{}, sc, tc.value)
			if held != (tc.why == "") || !strings.Contains(why, tc.why) {
				t.Errorf("held %v (%q), want reason containing %q", held, why, tc.why)
			}
		})
	}
}

func TestSchemaRejectsWhatItCannotCheck(t *testing.T) {
	for _, s := range []string{`[]`, `{"type": "tuple"}`, `{"type": 3}`, `{"properties": []}`, `{"required": "a"}`, `{"items": 1}`, `{"enum": {}}`, `not json`,
		`{"minimum": "3"}`, `{"exclusiveMaximum": "x"}`, `{"exclusiveMinimum": true}`} {
		if _, err := parseSchema(json.RawMessage(s)); err == nil {
			t.Errorf("schema %s was accepted", s)
		}
	}
}

func TestChoiceAcceptsBareAndQuotedAnswers(t *testing.T) {
	req := &Request{Choice: []string{"OK", "hallucination"}}
	for answer, want := range map[string]bool{
		"OK": true, " hallucination\n": true, `"OK"`: true, "<think>maybe</think>OK": true,
		"ok": false, "OK.": false, `"nope"`: false, "": false,
	} {
		if held, why := checkAnswer(req, nil, answer); held != want {
			t.Errorf("answer %q: held %v (%s), want %v", answer, held, why, want)
		}
	}
}
