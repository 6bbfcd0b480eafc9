package engine

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A million levels of nesting is reported as one diagnostic at the first
// opener past MaxNesting, before the parser could exhaust the stack.
func TestDeepNestingIsADiagnosticNotACrash(t *testing.T) {
	const n = 1_000_000
	cases := map[string]string{
		"brackets":       "locals {\n  x = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n}\n",
		"parentheses":    "locals {\n  x = " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) + "\n}\n",
		"braces":         "locals {\n  x = " + strings.Repeat("{a=", n) + "1" + strings.Repeat("}", n) + "\n}\n",
		"unclosed":       "locals {\n  x = " + strings.Repeat("[", n) + "\n}\n",
		"unary":          "locals {\n  x = " + strings.Repeat("!", n) + "true\n}\n",
		"negation":       "locals {\n  x = " + strings.Repeat("- ", n) + "1\n}\n",
		"interpolations": "locals {\n  x = " + strings.Repeat(`"${`, n) + "1" + strings.Repeat(`}"`, n) + "\n}\n",
		"heredoc":        "locals {\n  x = <<EOT\n${" + strings.Repeat("[", n) + "\nEOT\n}\n",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			_, diags := LoadSource("deep.hcl", []byte(src), "testdata")
			if len(diags) != 1 || diags[0].Summary != "Expression nested too deeply" {
				t.Fatalf("got %s", diagText(diags))
			}
			if s := diags[0].Subject; s == nil || s.Filename != "deep.hcl" || s.Start.Line < 2 {
				t.Errorf("subject %v", s)
			}
		})
	}
}

// What looks like nesting but is not (text in strings, comments and
// heredocs) or stays within the limit passes the check.
func TestNestingCheckIgnoresTextAndAllowsTheLimit(t *testing.T) {
	deep := strings.Repeat("[", MaxNesting-1) + strings.Repeat("]", MaxNesting-1)
	cases := map[string]string{
		"at the limit":    "x = " + deep,
		"in a string":     `x = "` + strings.Repeat("[(", 1000) + `"`,
		"escaped quote":   `x = "\"[[[[" ` + "\ny = 1",
		"literal ${":      `x = "` + strings.Repeat("$${", 1000) + `"`,
		"in comments":     "# " + strings.Repeat("[", 1000) + "\n// " + strings.Repeat("(", 1000) + "\n/* " + strings.Repeat("{", 1000) + " */\nx = 1",
		"in a heredoc":    "x = <<EOT\n" + strings.Repeat("[", 1000) + "\nEOT\ny = 1",
		"minus in maths":  "x = " + strings.Repeat("1 - ", 1000) + "1",
		"negative number": "x = [" + strings.Repeat("-1e-5, ", 1000) + "]",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			if d := checkNesting([]byte(src), "ok.hcl"); d != nil {
				t.Errorf("%s: %s", d.Subject, d.Detail)
			}
		})
	}
	if d := checkNesting([]byte("x = [["+deep+"]]"), "over.hcl"); d == nil || d.Subject.Start.Column != 4+MaxNesting+1 {
		t.Errorf("one past the limit: %v", d)
	}
}

func BenchmarkNestingCheck(b *testing.B) {
	src := []byte(strings.Repeat(`node "import" "a" { path = "x.jsonl" columns = { a = "string" } }`+"\n", 20000))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		checkNesting(src, "big.hcl")
	}
}

// file() reads regular files of bounded size only; everything else is an
// error naming the file, returned at once (a FIFO without a writer would
// block a reader forever, /dev/zero never ends).
func TestFileFunctionRefusesWhatItCannotBound(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(dir, "big.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(MaxFileSize + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	big.Close()
	os.WriteFile(filepath.Join(dir, "latin1.txt"), []byte("caf\xe9"), 0o644)
	os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("hello"), 0o644)
	cases := []struct{ path, want string }{
		{"fifo", "fifo is a named pipe (FIFO); only regular files can be read"},
		{"/dev/zero", "/dev/zero is a device"},
		{".", "is a directory"},
		{"big.txt", "more than the limit of 67108864"},
		{"latin1.txt", "latin1.txt is not valid UTF-8"},
		{"missing.txt", "no such file"},
		{"ok.txt", ""},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			src := "locals {\n  x = file(\"" + c.path + "\")\n}\nnode \"import\" \"a\" {\n  path = \"${local.x}.jsonl\"\n}\n"
			_, diags := ExpandSource(filepath.Join(dir, "p.hcl"), []byte(src), dir, Options{})
			if c.want == "" {
				if diags.HasErrors() {
					t.Fatal(diagText(diags))
				}
				return
			}
			if len(diags) != 1 || !strings.Contains(diags[0].Detail, c.want) || diags[0].Subject.Start.Line != 2 {
				t.Fatalf("want one error containing %q at line 2, got:\n%s", c.want, diagText(diags))
			}
		})
	}
}
