package llm

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// requestPhrases are what a server's error message says when the request
// itself is at fault, whatever status it answers with: llama-cpp-python's
// server answers a response_format it does not take with HTTP 500 and
// pydantic's validation error, older llama.cpp servers with HTTP 500
// "response_format type must be one of ...". Matched in lower case.
var requestPhrases = []string{
	"literal_error", "validation error", "input should be", "must be one of",
	"not supported", "unsupported", "invalid_request", "invalid request",
	"unrecognized request argument", "unknown field", "'loc': ('body'",
	"response_format", "json_schema", "failed to parse grammar",
}

// aboutRequest says whether an error answer with this status and body is
// about the request rather than the server's state: every 4xx but 429
// (and 408, a timeout), and a 5xx whose message reads as a refusal of the
// request (requestPhrases). Another try of such a request gets the same
// answer.
func aboutRequest(status int, body string) bool {
	switch {
	case status == http.StatusTooManyRequests, status == http.StatusRequestTimeout:
		return false
	case status/100 == 4:
		return true
	case status/100 != 5:
		return false
	}
	low := strings.ToLower(errorMessage(body))
	for _, p := range requestPhrases {
		if strings.Contains(low, p) {
			return true
		}
	}
	return false
}

// errorMessage is the message of an OpenAI-style error body
// ({"error": {"message": ...}}, or FastAPI's {"detail": ...}), else the
// body itself.
func errorMessage(body string) string {
	var e struct {
		Error  json.RawMessage `json:"error"`
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal([]byte(body), &e) != nil {
		return body
	}
	var inner struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	var s string
	switch {
	case json.Unmarshal(e.Error, &inner) == nil && inner.Message != "":
		return inner.Message + " (" + inner.Type + ")"
	case json.Unmarshal(e.Error, &s) == nil && s != "":
		return s
	case len(e.Detail) > 0:
		if json.Unmarshal(e.Detail, &s) == nil {
			return s
		}
		return string(e.Detail)
	}
	return body
}

// Refused reports whether err is, or wraps, an answer by which the server
// refused the request itself (StatusError.Refused): another try, or a
// re-run, gets the same answer.
func Refused(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Refused
}
