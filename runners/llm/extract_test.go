package llm_test

import (
	"testing"

	"github.com/lacuna-dev/lacuna/runners/llm"
)

func TestAnswerJSONDropsThinkBlocksAndAWholeAnswerFence(t *testing.T) {
	const v = `{"class": "OK", "why": "passes"}`
	for _, tc := range []struct {
		name, text, want string
	}{
		{"bare JSON", v, v},
		{"bare JSON with blank lines", "\n\n" + v + "\n", v},
		{"R1 think block then JSON", "<think>\nThe spy saw the call.\n</think>\n\n" + v, v},
		{"R1 opening tag in the prompt", "The spy saw the call.\n</think>\n" + v, v},
		{"R1 think block then a json fence", "<think>The spy saw the call.</think>\n\n```json\n" + v + "\n```", v},
		{"json fence", "```json\n" + v + "\n```", v},
		{"JSON fence in capitals, CRLF", "```JSON\r\n" + v + "\r\n```\r\n", v},
		{"untagged fence", "```\n" + v + "\n```", v},
		{"a fence on one line", "```json " + v + "```", v},
		{"an untagged fence on one line", "```" + v + "```", v},
		{"tilde fence", "~~~json\n" + v + "\n~~~", v},
		{"multi-line JSON in a fence", "```json\n{\n  \"class\": \"OK\"\n}\n```", "{\n  \"class\": \"OK\"\n}"},
		{"a string answer", `"OK"`, `"OK"`},
		{"prose before the fence stays", "Here:\n```json\n" + v + "\n```", "Here:\n```json\n" + v + "\n```"},
		{"two fences stay", "```json\n{}\n```\n```json\n{}\n```", "```json\n{}\n```\n```json\n{}\n```"},
		{"a go fence stays", "```go\nx := 1\n```", "```go\nx := 1\n```"},
		{"an unclosed fence stays", "```json\n{\"class\":", "```json\n{\"class\":"},
		{"all thinking", "<think>cut at max_tokens", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := llm.AnswerJSON(tc.text); got != tc.want {
				t.Errorf("AnswerJSON(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestStripThink(t *testing.T) {
	for _, tc := range []struct {
		name, text, answer, thinking string
	}{
		{"no think block", "Use lo.Map.", "Use lo.Map.", ""},
		{"R1 block before the answer",
			"<think>\nThe user wants a sum. lo.Sum exists since v1.20.\n</think>\n\nHere is the code:\n```go\nlo.Sum(xs)\n```",
			"Here is the code:\n```go\nlo.Sum(xs)\n```", "The user wants a sum. lo.Sum exists since v1.20."},
		{"opening tag in the prompt (R1 chat template)",
			"Okay, so I need to call zerolog.\n</think>\n\n```go\nlog.Info().Msg(\"x\")\n```",
			"```go\nlog.Info().Msg(\"x\")\n```", "Okay, so I need to call zerolog."},
		{"unclosed block (cut at max_tokens)",
			"<think>\nLet me recall the gonum API. mat.NewDense takes rows, cols",
			"", "Let me recall the gonum API. mat.NewDense takes rows, cols"},
		{"two blocks", "<think>a</think>first <think>b</think>second", "first second", "a\n\nb"},
		{"answer before an unclosed block", "Answer: 42\n<think>wait, let me check", "Answer: 42", "wait, let me check"},
		{"empty block", "<think></think>\nDone.", "Done.", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, th := llm.StripThink(tc.text)
			if a != tc.answer || th != tc.thinking {
				t.Errorf("StripThink = %q, %q\nwant %q, %q", a, th, tc.answer, tc.thinking)
			}
		})
	}
}

func TestExtractCode(t *testing.T) {
	for _, tc := range []struct {
		name, answer, lang, code, how string
	}{
		{"one go fence in prose",
			"Sure! Here's how to use `lo.Uniq`:\n\n```go\npackage main\n\nimport \"github.com/samber/lo\"\n\nfunc Dedup(xs []int) []int {\n\treturn lo.Uniq(xs)\n}\n```\n\nThis removes duplicates while keeping order.",
			"go", "package main\n\nimport \"github.com/samber/lo\"\n\nfunc Dedup(xs []int) []int {\n\treturn lo.Uniq(xs)\n}", "fence:go"},
		{"golang tag counts as go",
			"```golang\nfunc F() {}\n```", "go", "func F() {}", "fence:go"},
		{"py tag counts as python, a shell block ignored",
			"```sh\npip install py-stats\n```\n```py\nfrom pystats import scale\nreturn scale(xs)\n```", "python", "from pystats import scale\nreturn scale(xs)", "fence:python"},
		{"go fence preferred over untagged and shell",
			"Install it:\n```bash\ngo get github.com/rs/zerolog\n```\nOutput:\n```\n{\"level\":\"info\"}\n```\nCode:\n```go\nlog.Info().Msg(\"hi\")\n```",
			"go", "log.Info().Msg(\"hi\")", "fence:go"},
		{"untagged fence when nothing is tagged",
			"The solution is:\n\n```\nfunc Sum(xs []float64) float64 {\n\treturn floats.Sum(xs)\n}\n```",
			"go", "func Sum(xs []float64) float64 {\n\treturn floats.Sum(xs)\n}", "fence"},
		{"imports and body in two fences are joined",
			"First the imports:\n\n```go\nimport (\n\t\"fmt\"\n\n\t\"github.com/samber/lo\"\n)\n```\n\nThen the function:\n\n```go\nfunc Show(xs []int) {\n\tfmt.Println(lo.Max(xs))\n}\n```",
			"go", "import (\n\t\"fmt\"\n\n\t\"github.com/samber/lo\"\n)\n\nfunc Show(xs []int) {\n\tfmt.Println(lo.Max(xs))\n}", "fences:2"},
		{"header with package joins a body without one",
			"```go\npackage solution\n\nimport \"gonum.org/v1/gonum/stat\"\n```\n```go\nfunc Mean(xs []float64) float64 { return stat.Mean(xs, nil) }\n```",
			"go", "package solution\n\nimport \"gonum.org/v1/gonum/stat\"\n\nfunc Mean(xs []float64) float64 { return stat.Mean(xs, nil) }", "fences:2"},
		{"imports go after the body's package clause",
			"```go\nimport \"strings\"\n```\n```go\npackage main\n\nfunc Up(s string) string { return strings.ToUpper(s) }\n```",
			"go", "package main\n\nimport \"strings\"\n\nfunc Up(s string) string { return strings.ToUpper(s) }", "fences:2"},
		{"the longest of several full blocks, usage example ignored",
			"```go\npackage main\n\nimport \"github.com/samber/lo\"\n\nfunc Chunk(xs []int) [][]int {\n\t// split in twos\n\treturn lo.Chunk(xs, 2)\n}\n```\n\nUsage:\n\n```go\nChunk([]int{1, 2, 3})\n```",
			"go", "package main\n\nimport \"github.com/samber/lo\"\n\nfunc Chunk(xs []int) [][]int {\n\t// split in twos\n\treturn lo.Chunk(xs, 2)\n}", "fence:go"},
		{"a body with its own imports is not joined",
			"```go\nimport \"os\"\n```\n```go\nimport \"fmt\"\n\nfunc main() { fmt.Println() }\n```",
			"go", "import \"fmt\"\n\nfunc main() { fmt.Println() }", "fence:go"},
		{"unclosed fence (cut at max_tokens) runs to the end",
			"Here:\n```go\nfunc Long() {\n\tfor {\n", "go", "func Long() {\n\tfor {", "fence:go"},
		{"no fence: the whole answer",
			"  func F() int { return 1 }\n", "go", "func F() int { return 1 }", "whole"},
		{"only another language's fence: the whole answer",
			"Run:\n```sh\ngo test ./...\n```", "go", "Run:\n```sh\ngo test ./...\n```", "whole"},
		{"tildes and indented fences",
			"Answer:\n  ~~~go\n  func T() {}\n  ~~~\n", "go", "func T() {}", "fence:go"},
		{"longer fence holds a shorter one",
			"````go\nconst doc = `\n```\n`\n````", "go", "const doc = `\n```\n`", "fence:go"},
		{"python", "```python\nimport numpy as np\nnp.sum([1])\n```", "python", "import numpy as np\nnp.sum([1])", "fence:python"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, how := llm.ExtractCode(tc.answer, tc.lang)
			if code != tc.code || how != tc.how {
				t.Errorf("ExtractCode = %q (%s)\nwant %q (%s)", code, how, tc.code, tc.how)
			}
		})
	}
}
