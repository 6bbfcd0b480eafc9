package toolsense

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"github.com/cespare/xxhash/v2"
)

// The MCQ and QA prompts (seed 002 Appendix K.3, Figures 17–20, with the
// format instructions and the retry feedback written out) and the probing
// evaluation's, as text/template files. Their bytes are in the key of
// every node that uses them (probePromptDigest).
//
//go:embed prompts/mcq_*.txt prompts/qa_*.txt
var probePromptFS embed.FS

// probePrompts are the parsed templates by file name (without .txt).
var probePrompts = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	entries, err := probePromptFS.ReadDir("prompts")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".txt")
		if !ok || !(strings.HasPrefix(name, "mcq_") || strings.HasPrefix(name, "qa_")) {
			continue
		}
		b, err := probePromptFS.ReadFile("prompts/" + e.Name())
		if err != nil {
			panic(err)
		}
		// An embedded template that does not parse is a build defect,
		// caught by every test of the package.
		out[name] = template.Must(template.New(e.Name()).Option("missingkey=error").Parse(string(b)))
	}
	return out
}()

// renderProbePrompt executes the prompt file name (e.g. "mcq_generate")
// with data.
func renderProbePrompt(name string, data any) (string, error) {
	t, ok := probePrompts[name]
	if !ok {
		return "", fmt.Errorf("no prompt %s.txt", name)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("prompt %s.txt: %w", name, err)
	}
	return b.String(), nil
}

// probePromptDigest is the digest of the named prompt files' bytes, for a
// node's identity: editing a prompt recomputes the nodes that use it.
func probePromptDigest(names ...string) string {
	h := xxhash.New()
	for _, name := range names {
		b, err := probePromptFS.ReadFile("prompts/" + name + ".txt")
		if err != nil {
			panic(err) // names are the package's constants
		}
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
		h.Write(b)
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// probeDescription is what the generator and the judge see of a tool: its
// names and descriptions, missing ones left out.
func probeDescription(t CatalogRow) string {
	var lines []string
	for _, f := range []struct{ label, v string }{
		{"Tool name", t.ToolTitle}, {"API name", t.APITitle},
		{"Tool description", t.ToolDescription}, {"API description", t.APIDescription},
	} {
		if f.v != "" {
			lines = append(lines, f.label+": "+f.v)
		}
	}
	return strings.Join(lines, "\n")
}

// probeToolJSON is a catalog row as the released benchmarks write a tool
// object: the five fields in their order, a missing one as "None", no
// HTML escaping (tool names hold "&&").
func probeToolJSON(t CatalogRow) string {
	none := func(s string) string {
		if s == "" {
			return "None"
		}
		return s
	}
	return probeMarshal(struct {
		ToolName        string `json:"tool_name"`
		ToolTitle       string `json:"tool_title"`
		ToolDescription string `json:"tool_description"`
		APITitle        string `json:"api_title"`
		APIDescription  string `json:"api_description"`
	}{t.ToolName, none(t.ToolTitle), none(t.ToolDescription), none(t.APITitle), none(t.APIDescription)})
}

// probeMarshal is json.Marshal without HTML escaping and without the
// trailing newline; v must be encodable.
func probeMarshal(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
