package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// mode is how a constrained request goes on the wire through this
// client: ResponseFormat (JSONSchema and "" mean it), StructuredOutputs,
// JSONObject or NoConstraint.
func (c *Client) mode() string {
	switch c.ep.Structured {
	case "", JSONSchema:
		return ResponseFormat
	}
	return c.ep.Structured
}

// checkMode reports an Endpoint.Structured this client does not know.
func checkMode(s string) error {
	switch s {
	case "", ResponseFormat, JSONSchema, StructuredOutputs, JSONObject, NoConstraint:
		return nil
	}
	return fmt.Errorf("endpoint's structured output %q: want %q (or %q), %q, %q or %q", s, JSONSchema, ResponseFormat, StructuredOutputs, JSONObject, NoConstraint)
}

// fallbackMode is what a constrained request falls back to when the
// server refuses response_format json_schema: a schema goes in the
// prompt with response_format json_object; choices, which json_object
// cannot express (it asks for an object), are checked here only.
func fallbackMode(r *Request) string {
	if len(r.Schema) > 0 {
		return JSONObject
	}
	return NoConstraint
}

// refusals remembers, for the process, the servers (base URL and served
// name) that refused response_format json_schema, and what they said:
// later constrained calls to them go straight to the fallback.
var refusals sync.Map // string → string

func (c *Client) refusalKey() string { return c.ep.BaseURL + "\x00" + c.ep.ServedName }

// refusesJSONSchema says whether err is the server refusing
// response_format json_schema: a refusal of the request
// (StatusError.Refused) whose message names response_format or
// json_schema.
func refusesJSONSchema(err error) (string, bool) {
	var se *StatusError
	if !errors.As(err, &se) || !se.Refused {
		return "", false
	}
	low := strings.ToLower(se.Body)
	if !strings.Contains(low, "response_format") && !strings.Contains(low, "json_schema") {
		return "", false
	}
	return fmt.Sprintf("HTTP %d: %s", se.Status, excerpt(errorMessage(se.Body), 160)), true
}

// fallbackWarning is the Response.Warning of a call made through the
// fallback.
func fallbackWarning(refusal, mode string) string {
	how := "the schema went in the prompt, response_format json_object was sent, and the answer was checked against the schema here"
	if mode == NoConstraint {
		how = "the choices were sent unconstrained and the answer checked against them here"
	}
	return fmt.Sprintf("the server refused response_format json_schema (%s): %s; set structured_output = %q in the model block to ask this way from the start", refusal, how, mode)
}

// schemaPrompt is what a json_object request adds to the prompt: the
// schema the answer must satisfy.
func schemaPrompt(schema []byte) string {
	return "\n\nAnswer with one JSON object, and nothing else, that satisfies this JSON schema:\n" + string(schema)
}

// withSchemaPrompt returns the messages with schemaPrompt appended to the
// last user message (a new user message when there is none).
func withSchemaPrompt(msgs []Message, schema []byte) []Message {
	out := append([]Message(nil), msgs...)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Role == "user" {
			out[i].Content += schemaPrompt(schema)
			return out
		}
	}
	return append(out, Message{Role: "user", Content: strings.TrimSpace(schemaPrompt(schema))})
}

// constrain puts the request's constraint on the wire request w as mode
// says.
func constrain(w *wireRequest, r *Request, mode string) error {
	name := r.SchemaName
	if name == "" {
		name = "answer"
	}
	var schema []byte
	if len(r.Schema) > 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, r.Schema); err != nil {
			return fmt.Errorf("request's schema: %w", err)
		}
		schema = b.Bytes()
	}
	switch {
	case len(schema) == 0 && len(r.Choice) == 0, mode == NoConstraint:
	case mode == StructuredOutputs && schema != nil:
		w.StructuredOutputs = &structuredOutputs{JSON: schema}
	case mode == StructuredOutputs:
		w.StructuredOutputs = &structuredOutputs{Choice: r.Choice}
	case mode == JSONObject && schema != nil:
		w.ResponseFormat = &responseFormat{Type: "json_object"}
		if w.Prompt != nil {
			p := *w.Prompt + schemaPrompt(schema)
			w.Prompt = &p
		} else {
			w.Messages = withSchemaPrompt(w.Messages, schema)
		}
	case mode == JSONObject:
		// Choices: json_object would ask for an object; checked here only.
	case schema != nil:
		w.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: &jsonSchema{Name: name, Schema: schema, Strict: true}}
	default:
		enum, err := json.Marshal(map[string]any{"type": "string", "enum": r.Choice})
		if err != nil {
			return fmt.Errorf("encode choices: %w", err)
		}
		w.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: &jsonSchema{Name: name, Schema: enum, Strict: true}}
	}
	return nil
}

// brokeConstraint explains an answer that broke its request's constraint:
// why (the schema check's reason), how the constraint was sent and what
// that says of the server, named as it names itself.
func (c *Client) brokeConstraint(why, mode string, resp *Response) string {
	who := "the server at " + c.shown
	if resp.Server != "" {
		who += " (Server: " + resp.Server + ")"
	}
	if resp.FinishReason == "length" {
		return why + " (the answer was cut at max_tokens)"
	}
	switch mode {
	case StructuredOutputs:
		return why + "; " + who + " answered outside the constraint sent as structured_outputs: it ignores the field (only vLLM knows it; llama.cpp's and llama-cpp-python's servers ignore it silently)"
	case ResponseFormat:
		return why + "; " + who + " answered outside the constraint sent as response_format json_schema: it does not apply it"
	case JSONObject:
		return why + " (the schema was in the prompt, with response_format json_object: the server does not constrain to it)"
	}
	return why + " (structured_output = \"none\": nothing constrained the answer)"
}
