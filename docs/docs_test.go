// Package docs_test checks the documentation against the repository: the
// links of README.md and docs/*.md resolve, and the command output they
// quote is what the commands print today.
//
// # Links
//
// Every Markdown link [text](target) outside code whose target is not a
// URL (scheme:...) must name an existing file or directory, relative to
// the file holding the link; a #fragment must be the anchor of a heading
// of the target Markdown file (or of the same file, for a bare #fragment),
// computed as GitHub computes it: the heading's text lower-cased, every
// character that is not a letter, a digit, a space, '-' or '_' dropped,
// spaces made '-', and "-1", "-2", ... appended to repeats.
//
// # Command blocks
//
// An HTML comment on the line just before a fenced block marks the block
// as a command's output:
//
//	<!-- cmd: bin/lacuna validate pipelines/examples/toolsense_data.hcl -->
//	```
//	$ bin/lacuna validate pipelines/examples/toolsense_data.hcl
//	pipelines/examples/toolsense_data.hcl is valid: 7 nodes, ...
//	```
//
// The command is split into words as a POSIX shell would split plain
// words and '...' or "..." quotes (no variables, pipes, redirections or
// globs); its first word must be bin/lacuna or lacuna, which runs the
// lacuna this test builds from the working tree. It runs in the
// repository's root with LACUNA_STORE set to a store of its own for each
// Markdown file (the file's blocks run in order, so a later block sees
// what an earlier one computed) and no other LACUNA_* variable; it must
// exit 0, or with the status N that "cmd exit=N:" names. The block's first
// line may repeat the command after "$ "; the rest is what the command
// prints, stdout and stderr together, compared after this normalisation,
// applied to both sides:
//
//   - trailing spaces of each line and trailing empty lines are dropped;
//   - a duration (0.03s, 385ms, 2m03s, 1h2m5s, 12µs) becomes <dur>;
//   - a timestamp (2026-11-28 18:14:53Z, 2026-11-28T18:14:53.5+01:00)
//     becomes <time>;
//   - a line of the block that is only "..." stands for any number of
//     lines (none included).
//
// Command blocks need the lacuna build and the released ToolSense data
// beside the repository (../shared/data/toolsense); with -short, or
// without the data, they are skipped (failed under CI=true).
package docs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
)

// root is the repository's root, seen from this package's directory.
const root = ".."

// markdownFiles lists README.md and docs/*.md, relative to root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{} // file -> its anchors, read on demand
	anchorsOf := func(file string) (map[string]bool, error) {
		if a, ok := anchors[file]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(b))
		anchors[file] = a
		return a, nil
	}
	for _, file := range markdownFiles(t) {
		for _, l := range links(readDoc(t, file)) {
			target, fragment, _ := strings.Cut(l.target, "#")
			resolved := file
			if target != "" {
				resolved = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), target)))
				if strings.HasPrefix(resolved, "../") {
					t.Errorf("%s:%d: link %q leaves the repository", file, l.line, l.target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, resolved)); err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", file, l.line, l.target, resolved)
					continue
				}
			}
			if fragment == "" || !strings.HasSuffix(resolved, ".md") {
				continue
			}
			a, err := anchorsOf(resolved)
			if err != nil {
				t.Errorf("%s:%d: link %q: %v", file, l.line, l.target, err)
				continue
			}
			if !a[fragment] {
				t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", file, l.line, l.target, resolved, fragment)
			}
		}
	}
}

type link struct {
	target string
	line   int
}

var (
	linkRe       = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	inlineCodeRe = regexp.MustCompile("`+[^`]*`+")
	schemeRe     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// links returns the relative link targets of a Markdown text, leaving out
// fenced blocks, inline code and URLs.
func links(text string) []link {
	var out []link
	var f fence
	for i, line := range strings.Split(text, "\n") {
		if f.step(line) || f.open > 0 {
			continue
		}
		line = inlineCodeRe.ReplaceAllString(line, "")
		for _, m := range linkRe.FindAllStringSubmatch(line, -1) {
			if schemeRe.MatchString(m[1]) {
				continue
			}
			out = append(out, link{m[1], i + 1})
		}
	}
	return out
}

// A fence follows a Markdown text's fenced code blocks, line by line: a
// block opens with three or more backticks and closes with a line of at
// least as many backticks and nothing else.
type fence struct {
	open int // the opening fence's length; 0 outside a block
}

// step reads the next line and reports whether it opens or closes a block.
func (f *fence) step(line string) bool {
	t := strings.TrimLeft(line, " ")
	n := len(t) - len(strings.TrimLeft(t, "`"))
	switch {
	case f.open == 0 && n >= 3:
		f.open = n
		return true
	case f.open > 0 && n >= f.open && strings.TrimSpace(t[n:]) == "":
		f.open = 0
		return true
	}
	return false
}

// headingAnchors returns the anchors GitHub gives the ATX headings of a
// Markdown text (fenced blocks excluded).
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	var f fence
	for _, line := range strings.Split(text, "\n") {
		if f.step(line) || f.open > 0 || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimLeft(line, "#")
		if title != "" && title[0] != ' ' {
			continue // #hashtag, not a heading
		}
		a := anchor(title)
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(title)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestAnchorsAreGitHubs(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"## NovelAPIBench for Go: stages 1-2", "novelapibench-for-go-stages-1-2"},
		{"## NovelAPIBench with a model: C2, C3, the cell sweep", "novelapibench-with-a-model-c2-c3-the-cell-sweep"},
		{"### `lacuna run` and keys", "lacuna-run-and-keys"},
		{"## Terms", "terms"},
	} {
		if got := headingAnchors(tc.heading); !got[tc.want] {
			t.Errorf("%q: anchors %v, want %q", tc.heading, got, tc.want)
		}
	}
	if got := headingAnchors("# A\n## A\n```\n# not\n```\n## A\n````\n```\n# nor\n```\n````\n"); !got["a"] || !got["a-1"] || !got["a-2"] || got["not"] || got["nor"] {
		t.Errorf("repeats and fences: %v", got)
	}
}

func TestCommandBlocksAreFound(t *testing.T) {
	text := "<!-- cmd: lacuna validate p.hcl -->\n```\n$ lacuna validate p.hcl\nok\n```\n" +
		"````\n<!-- cmd: lacuna run p.hcl -->\n```\nquoted, not run\n```\n````\n" +
		"<!-- cmd exit=1: lacuna plan p.hcl -->\n```text\nerror\n\n```\n"
	bs, err := cmdBlocks("x.md", text)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs[0].command != "lacuna validate p.hcl" || strings.Join(bs[0].want, "|") != "ok" ||
		bs[1].command != "lacuna plan p.hcl" || bs[1].exit != 1 || strings.Join(bs[1].want, "|") != "error|" {
		t.Errorf("blocks: %+v", bs)
	}
	for _, bad := range []string{
		"<!-- cmd: lacuna x -->\ntext\n",
		"<!-- cmd: lacuna x -->\n```\n$ lacuna y\n```\n",
		"<!-- cmd: lacuna x -->\n```\nnever closed\n",
		"<!-- cmd lacuna x -->\n```\n```\n",
	} {
		if _, err := cmdBlocks("x.md", bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// A cmdBlock is a fenced block whose output a command must reproduce.
type cmdBlock struct {
	file    string
	line    int // the marker's line
	command string
	exit    int
	want    []string
}

var markerRe = regexp.MustCompile(`^<!-- cmd(?: exit=(\d+))?: (.+?) -->\s*$`)

// cmdBlocks finds the marked blocks of a Markdown text.
func cmdBlocks(file, text string) ([]cmdBlock, error) {
	lines := strings.Split(text, "\n")
	var out []cmdBlock
	var f fence
	for i := 0; i < len(lines); i++ {
		if f.step(lines[i]) || f.open > 0 {
			continue // a marker inside a block is an example of one
		}
		m := markerRe.FindStringSubmatch(lines[i])
		if m == nil {
			if strings.HasPrefix(strings.TrimSpace(lines[i]), "<!-- cmd") {
				return nil, fmt.Errorf("%s:%d: malformed command marker (want <!-- cmd: COMMAND --> or <!-- cmd exit=N: COMMAND -->)", file, i+1)
			}
			continue
		}
		b := cmdBlock{file: file, line: i + 1, command: m[2]}
		if m[1] != "" {
			b.exit, _ = strconv.Atoi(m[1])
		}
		if i+1 >= len(lines) || !f.step(lines[i+1]) {
			return nil, fmt.Errorf("%s:%d: a command marker must be followed by a fenced block", file, i+1)
		}
		j := i + 2
		for ; j < len(lines) && !f.step(lines[j]); j++ {
			b.want = append(b.want, lines[j])
		}
		if j == len(lines) {
			return nil, fmt.Errorf("%s:%d: the block is never closed", file, i+1)
		}
		if len(b.want) > 0 && strings.HasPrefix(b.want[0], "$ ") {
			if shown := strings.TrimSpace(strings.TrimPrefix(b.want[0], "$ ")); shown != b.command {
				return nil, fmt.Errorf("%s:%d: the block shows %q, the marker runs %q", file, i+1, shown, b.command)
			}
			b.want = b.want[1:]
		}
		out = append(out, b)
		i = j
	}
	return out, nil
}

// words splits a command line as a shell splits plain words and quotes.
func words(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'' || c == '"':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unclosed %c in %q", c, s)
			}
			quoted := s[i+1 : i+1+end]
			if c == '"' && strings.ContainsAny(quoted, "$`\\") {
				return nil, fmt.Errorf("%q: only plain text inside double quotes", s)
			}
			cur.WriteString(quoted)
			inWord = true
			i += end + 1
		case strings.IndexByte("|&;<>()$`\\*?[]{}~#", c) >= 0:
			return nil, fmt.Errorf("%q: %c is not supported (no shell runs the command)", s, c)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

func TestWords(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want: words joined by |, or "error"
	}{
		{`bin/lacuna validate p.hcl`, "bin/lacuna|validate|p.hcl"},
		{`lacuna cat p.hcl 'node.x.y["a b"]' --where k=5`, `lacuna|cat|p.hcl|node.x.y["a b"]|--where|k=5`},
		{`lacuna run --var "per_tier=30"`, "lacuna|run|--var|per_tier=30"},
		{`lacuna run p.hcl | head`, "error"},
		{`lacuna run $X`, "error"},
		{`lacuna 'open`, "error"},
	} {
		w, err := words(tc.in)
		got := strings.Join(w, "|")
		if err != nil {
			got = "error"
		}
		if got != tc.want {
			t.Errorf("words(%q) = %q (%v), want %q", tc.in, got, err, tc.want)
		}
	}
}

var (
	durationRe  = regexp.MustCompile(`\b(?:\d+h)?(?:\d+m)?\d+(?:\.\d+)?(?:ns|µs|us|ms|s|m|h)\b`)
	timestampRe = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?`)
)

// normalise applies the documented normalisation to one side's lines.
func normalise(lines []string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		l = timestampRe.ReplaceAllString(l, "<time>")
		l = durationRe.ReplaceAllString(l, "<dur>")
		out = append(out, strings.TrimRight(l, " \t\r"))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// matches reports whether got fits want, where a want line "..." stands
// for any number of lines.
func matches(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for k := 0; k <= len(got); k++ {
			if matches(want[1:], got[k:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && want[0] == got[0] && matches(want[1:], got[1:])
}

func TestNormaliseAndMatch(t *testing.T) {
	for _, tc := range []struct {
		want, got string
		ok        bool
	}{
		{"[1/10] done  x  496 rows  0.03s", "[1/10] done  x  496 rows  1.12s  ", true},
		{"10 executed; 2,821 rows written in 385ms", "10 executed; 2,821 rows written in 2m03s", true},
		{"computed  2026-01-02 03:04:05Z on vm", "computed  2026-11-28 18:14:53Z on vm", true},
		{"cached  node.import.retrieval  e77cdd0a, 500 rows", "cached  node.import.retrieval  e77cdd0b, 500 rows", false},
		{"running 10 nodes\n...\n10 executed", "running 10 nodes\na\nb\n10 executed\n\n", true},
		{"a\n...\nb", "a\nb", true},
		{"a\n...\nb", "a\nc", false},
		{"500 rows", "501 rows", false},
	} {
		if got := matches(normalise(strings.Split(tc.want, "\n")), normalise(strings.Split(tc.got, "\n"))); got != tc.ok {
			t.Errorf("want %q, got %q: matched %v, expected %v", tc.want, tc.got, got, tc.ok)
		}
	}
}

func TestCommandBlocksPrintWhatTheDocsSay(t *testing.T) {
	var blocks []cmdBlock
	for _, file := range markdownFiles(t) {
		bs, err := cmdBlocks(file, readDoc(t, file))
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
	}
	if len(blocks) == 0 {
		t.Fatal("no <!-- cmd: ... --> block in README.md or docs/*.md")
	}
	for _, b := range blocks { // checked before anything runs, even with -short
		if w, err := words(b.command); err != nil {
			t.Fatalf("%s:%d: %v", b.file, b.line, err)
		} else if w[0] != "bin/lacuna" && w[0] != "lacuna" {
			t.Fatalf("%s:%d: %q: a command block runs bin/lacuna or lacuna", b.file, b.line, b.command)
		}
	}
	if testing.Short() {
		t.Skip("-short: the command blocks are not run")
	}
	if _, err := os.Stat(filepath.Join(root, "..", "shared", "data", "toolsense")); err != nil {
		msg := "ToolSense data is not at ../shared/data/toolsense beside the repository: " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	bin := filepath.Join(t.TempDir(), "lacuna")
	build := exec.Command("go", "build", "-o", bin, "./cmd/lacuna")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/lacuna: %v\n%s", err, out)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LACUNA_") {
			env = append(env, kv)
		}
	}
	stores := map[string]string{}
	for _, b := range blocks {
		store, ok := stores[b.file]
		if !ok {
			store = t.TempDir()
			stores[b.file] = store
		}
		w, _ := words(b.command)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, bin, w[1:]...)
		cmd.Dir = root
		cmd.Env = append(env[:len(env):len(env)], "LACUNA_STORE="+store)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		cancel()
		code := 0
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			code = exitErr.ExitCode()
		} else if err != nil {
			t.Errorf("%s:%d: %s: %v", b.file, b.line, b.command, err)
			continue
		}
		if code != b.exit {
			t.Errorf("%s:%d: %s exited %d, want %d; it printed:\n%s", b.file, b.line, b.command, code, b.exit, out.String())
			continue
		}
		got := normalise(strings.Split(out.String(), "\n"))
		if want := normalise(b.want); !matches(want, got) {
			t.Errorf("%s:%d: %s printed (normalised):\n%s\nthe docs say:\n%s", b.file, b.line, b.command,
				strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
