package engine

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// A model's endpoint is checked when the pipeline loads (validate, plan,
// run), at the attribute: what cannot be an OpenAI-compatible base URL is
// an error, a base URL without /v1 a warning (some providers serve the
// API elsewhere).
func TestModelEndpointIsCheckedAtLoad(t *testing.T) {
	cases := []struct {
		endpoint string
		severity hcl.DiagnosticSeverity // 0: no diagnostic
		detail   string
	}{
		{"http://127.0.0.1:8000/v1", 0, ""},
		{"https://api.openai.com/v1/", 0, ""},
		{"http://user:secret@gpu7:8000/v1", 0, ""},
		{"", 0, ""}, // no endpoint (a serve block, or none yet)
		{"not-a-url", hcl.DiagError, `"not-a-url" has no scheme`},
		{"127.0.0.1:8000/v1", hcl.DiagError, "has no scheme"},
		{"localhost:8000/v1", hcl.DiagError, "has no scheme"},
		{"ftp://host/v1", hcl.DiagError, "is not an http or https URL"},
		{"http:///v1", hcl.DiagError, "names no host"},
		{"http://:8000/v1", hcl.DiagError, "names no host"},
		{" http://127.0.0.1:8000/v1", hcl.DiagError, "has spaces around it"},
		{"http://h/v1?key=1", hcl.DiagError, "has a query or fragment"},
		{"http://h:8000/v1/chat/completions", hcl.DiagError, "drop /chat/completions (lacuna appends it)"},
		{"http://h:8000/v1/models", hcl.DiagError, "drop /models"},
		{"http://127.0.0.1:8000", hcl.DiagWarning, `"http://127.0.0.1:8000" does not end in /v1`},
		{"https://generativelanguage.googleapis.com/v1beta/openai", hcl.DiagWarning, "works as written"},
	}
	for _, c := range cases {
		src := "model \"m\" {\n  id       = \"org/m\"\n  endpoint = \"" + c.endpoint + "\"\n}\n"
		_, diags := ExpandSource("p.hcl", []byte(src), t.TempDir(), Options{})
		if c.severity == 0 {
			if len(diags) > 0 {
				t.Errorf("%q: %s", c.endpoint, diagText(diags))
			}
			continue
		}
		if len(diags) != 1 {
			t.Errorf("%q: want one diagnostic, got:\n%s", c.endpoint, diagText(diags))
			continue
		}
		d := diags[0]
		if d.Severity != c.severity || !strings.Contains(d.Detail, c.detail) || d.Subject == nil || d.Subject.Start.Line != 3 || d.Subject.Start.Column != 14 {
			t.Errorf("%q: got %s, want severity %v at 3:14 with %q", c.endpoint, diagText(diags), c.severity, c.detail)
		}
		if !strings.Contains(d.Detail, "endpoint must be an absolute http(s) URL ending in /v1, e.g. http://127.0.0.1:8000/v1") {
			t.Errorf("%q: no hint in %q", c.endpoint, d.Detail)
		}
	}
}
