package toolsense

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"strings"
	"text/template"

	"github.com/cespare/xxhash/v2"
)

// The MCQ and QA prompts (seed 002 Appendix K.3, Figures 17–20, with the
// format instructions and the retry feedback written out) and the probing
// evaluation's, as text/template files. Their bytes are in the key of
// every node that uses them (ProbePromptDigest).
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

// ProbePromptDigest is the digest of the named probe prompt files' bytes
// (names without .txt: "mcq_generate", "qa_judge", "mcq_eval", ...), for
// a node's identity: editing a prompt recomputes the nodes that use it.
// The digest covers each name and its bytes, not the directory the files
// are in. A name that is not a probe prompt panics: callers pass
// constants.
func ProbePromptDigest(names ...string) string {
	h := xxhash.New()
	for _, name := range names {
		b, err := probePromptFS.ReadFile("prompts/" + name + ".txt")
		if err != nil {
			panic(err) // names are the callers' constants
		}
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
		h.Write(b)
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// The prompts of RRB generation (seed 002 Appendix K.3, Figures 21 and
// 22), Go templates; their bytes are in every rrb_generate key
// (RRBPromptDigest).
var (
	//go:embed prompts/rrb_generate.txt
	rrbGeneratePrompt string
	//go:embed prompts/rrb_judge.txt
	rrbJudgePrompt string

	rrbGenerateTmpl = template.Must(template.New("rrb_generate.txt").Option("missingkey=error").Parse(rrbGeneratePrompt))
	rrbJudgeTmpl    = template.Must(template.New("rrb_judge.txt").Option("missingkey=error").Parse(rrbJudgePrompt))
)

// RRBPromptDigest is the digest of the RRB generation and judge prompts'
// bytes, for rrb_generate's identity.
func RRBPromptDigest() string {
	return fmt.Sprintf("%016x", xxhash.Sum64String(rrbGeneratePrompt+"\x00"+rrbJudgePrompt))
}

// retrievalPrompt is seed 002's Figure 16 (Appendix K.2), the Stage 2
// retrieval prompt ToolGen-style models are trained and queried with;
// {query} is replaced by the query. Its bytes are in every
// retrieve_parametric key that uses it (RetrievalPromptDigest).
//
//go:embed prompts/retrieval.txt
var retrievalPrompt string

// RetrievalPrompt is the K.2 retrieval prompt for query: the prompt's
// {query} replaced by it.
func RetrievalPrompt(query string) string {
	return strings.ReplaceAll(retrievalPrompt, "{query}", query)
}

// RetrievalPromptDigest is the digest of the retrieval prompt's bytes,
// "sha256:" and the first 8 bytes of their SHA-256 in hex.
func RetrievalPromptDigest() string {
	s := sha256.Sum256([]byte(retrievalPrompt))
	return "sha256:" + hex.EncodeToString(s[:8])
}
