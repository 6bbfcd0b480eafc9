package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	_ "github.com/lacuna-dev/lacuna/nodes/generic"
)

// loadAndExpand runs both phases, as every command does.
func loadAndExpand(name string, src []byte, opts Options) (*Graph, hcl.Diagnostics) {
	return ExpandSource(name, src, "testdata", opts)
}

// Each file in testdata/bad starts with a line
//
//	# expect: [LINE:COL] SUMMARY | DETAIL PART | ...
//
// naming one diagnostic that must be reported (ONLY among the detail parts
// means it must be the only one).
func TestMalformedPipelinesGiveDiagnostics(t *testing.T) {
	files, _ := filepath.Glob("testdata/bad/*.hcl")
	if len(files) < 30 {
		t.Fatalf("corpus has %d cases, want at least 30", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".hcl"), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(src), "\n")
			spec, ok := strings.CutPrefix(first, "# expect: ")
			if !ok {
				t.Fatalf("%s: first line must be '# expect: ...'", f)
			}
			parts := strings.Split(spec, " | ")
			head := strings.TrimSpace(parts[0])
			line, col := 0, 0
			if n, _ := fmt.Sscanf(head, "%d:%d", &line, &col); n == 2 {
				head = strings.TrimSpace(head[strings.Index(head, " ")+1:])
			}
			_, diags := loadAndExpand(f, src, Options{})
			if !diags.HasErrors() {
				t.Fatalf("no error reported")
			}
			only := false
			var found *hcl.Diagnostic
			for _, d := range diags {
				if !strings.Contains(d.Summary, head) {
					continue
				}
				if line > 0 && (d.Subject == nil || d.Subject.Start.Line != line || d.Subject.Start.Column != col) {
					continue
				}
				match := true
				for _, p := range parts[1:] {
					p = strings.TrimSpace(p)
					if p == "ONLY" {
						only = true
						continue
					}
					match = match && strings.Contains(d.Detail, p)
				}
				if match {
					found = d
					break
				}
			}
			if found == nil {
				t.Fatalf("want %q at %d:%d; got:\n%s", spec, line, col, diagText(diags))
			}
			if found.Subject != nil && found.Subject.Filename != f {
				t.Errorf("diagnostic names file %q, want %q", found.Subject.Filename, f)
			}
			if only && len(diags) != 1 {
				t.Errorf("want exactly one diagnostic, got:\n%s", diagText(diags))
			}
		})
	}
}

func diagText(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		at := "-"
		if d.Subject != nil {
			at = fmt.Sprintf("%d:%d", d.Subject.Start.Line, d.Subject.Start.Column)
		}
		fmt.Fprintf(&b, "  %s %s: %s\n", at, d.Summary, d.Detail)
	}
	return b.String()
}

func TestForEachExpandsInstances(t *testing.T) {
	src := `
locals { tiers = ["easy", "medium", "hard"] }
node "import" "probe" {
  for_each = { mcq = "m.jsonl", qa = "q.jsonl" }
  path     = each.value
}
node "sample" "grid" {
  for_each = setproduct(local.tiers, [1, 2])
  input    = node.import.probe["mcq"]
  n        = each.value[1]
  seed     = 3
}
node "concat" "by_splat" { inputs = node.sample.grid[*] }
node "concat" "by_values" { inputs = values(node.sample.grid) }
node "concat" "by_for" {
  inputs = [for k, v in node.sample.grid : v if startswith(k, "easy")]
}
node "concat" "by_map" { inputs = node.import.probe }
`
	g, diags := loadAndExpand("t.hcl", []byte(src), Options{})
	if diags.HasErrors() {
		t.Fatal(diagText(diags))
	}
	want := []string{
		`node.import.probe["mcq"]`, `node.import.probe["qa"]`,
		`node.sample.grid["easy,1"]`, `node.sample.grid["easy,2"]`, `node.sample.grid["hard,2"]`,
	}
	for _, w := range want {
		if _, ok := g.Lookup(w); !ok {
			t.Errorf("no instance %s", w)
		}
	}
	count := func(addr string) int {
		i, ok := g.Lookup(addr)
		if !ok {
			t.Fatalf("no %s", addr)
		}
		return len(i.Inputs)
	}
	for addr, n := range map[string]int{"node.concat.by_splat": 6, "node.concat.by_values": 6, "node.concat.by_for": 2, "node.concat.by_map": 2} {
		if got := count(addr); got != n {
			t.Errorf("%s has %d inputs, want %d", addr, got, n)
		}
	}
	// Instances come after their inputs.
	seen := map[*Instance]bool{}
	for _, i := range g.Instances {
		for _, in := range i.Inputs {
			if !seen[in] {
				t.Errorf("%s listed before its input %s", i.Addr, in.Addr)
			}
		}
		seen[i] = true
	}
}

func TestVariablesFromFlagsAndFiles(t *testing.T) {
	src := `
variable "n" { type = number }
variable "name" { default = "x" }
variable "tiers" {
  type    = list(string)
  default = ["easy"]
}
node "import" "a" {
  for_each = toset(var.tiers)
  path     = "${var.name}-${each.key}.jsonl"
}
node "sample" "s" {
  input = node.import.a[var.tiers[0]]
  n     = var.n
}
`
	dir := t.TempDir()
	vf := filepath.Join(dir, "vars.hcl")
	os.WriteFile(vf, []byte("tiers = [\"hard\", \"easy\"]\nname = \"file\"\n"), 0o644)
	g, diags := loadAndExpand("v.hcl", []byte(src), Options{Vars: map[string]string{"n": "7", "name": "flag"}, VarFiles: []string{vf}})
	if diags.HasErrors() {
		t.Fatal(diagText(diags))
	}
	i, ok := g.Lookup(`node.import.a["hard"]`)
	if !ok {
		t.Fatal("var-file list not applied")
	}
	// --var name=flag beats the var-file's name; the var-file's tiers beat
	// the default.
	if path := reflect.ValueOf(i.Config).Elem().FieldByName("Path").String(); path != "flag-hard.jsonl" {
		t.Errorf("import path %q, want flag-hard.jsonl", path)
	}
	if _, ok := g.Lookup(`node.import.a["easy"]`); !ok {
		t.Error("second tier from the var-file missing")
	}
	s, _ := g.Lookup("node.sample.s")
	if s.Inputs[0].Addr != `node.import.a["hard"]` {
		t.Errorf("sample input %s", s.Inputs[0].Addr)
	}
	_, diags = loadAndExpand("v.hcl", []byte(src), Options{Vars: map[string]string{"n": "seven"}})
	if !diags.HasErrors() || !strings.Contains(diagText(diags), "--var n") {
		t.Errorf("want an error for a non-number --var, got:\n%s", diagText(diags))
	}
	_, diags = loadAndExpand("v.hcl", []byte(src), Options{Vars: map[string]string{"n": "1", "m": "2"}})
	if !strings.Contains(diagText(diags), `declares no variable "m"`) {
		t.Errorf("want undeclared --var error, got:\n%s", diagText(diags))
	}
}

func TestLoadDirectoryReadsEveryFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.hcl"), []byte(`node "import" "a" { path = "x.jsonl" }`), 0o644)
	os.WriteFile(filepath.Join(dir, "b.hcl"), []byte(`node "sample" "b" {
  input = node.import.a
  n = 1
}`), 0o644)
	cfg, diags := Load(dir)
	if diags.HasErrors() {
		t.Fatal(diagText(diags))
	}
	g, diags := Expand(cfg, Options{})
	if diags.HasErrors() || len(g.Instances) != 2 {
		t.Fatalf("got %d instances: %s", len(g.Instances), diagText(diags))
	}
}

// slowByDesign are the files of testdata/bad that take seconds to load
// (they expand toward the instance limit). FuzzLoad leaves them out of its
// seeds: under -fuzz, an input that takes more than 10 s is reported as a
// hang, and every mutation of such a seed is as slow. The properties
// FuzzLoad checks are checked on them by TestMalformedPipelinesGiveDiagnostics
// and TestChunkedParseMatchesWholeFileParse, which read every file.
var slowByDesign = map[string]bool{"for_each_too_many.hcl": true}

// FuzzLoad feeds arbitrary bytes through both loading phases: whatever the
// input, the result is a graph or diagnostics, never a panic, and parsing
// in chunks gives the same result as parsing the whole file.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("testdata/bad/*.hcl")
	for _, p := range files {
		if slowByDesign[filepath.Base(p)] {
			continue
		}
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	ok, _ := os.ReadFile("../pipelines/examples/toolsense_data.hcl")
	f.Add(ok)
	f.Fuzz(func(t *testing.T, src []byte) {
		g, diags := loadAndExpand("fuzz.hcl", src, Options{})
		if g == nil && !diags.HasErrors() {
			t.Fatal("no graph and no error")
		}
		// Parsing in chunks must not change anything.
		if whole, chunked := shape(t, "fuzz.hcl", src), withChunks(t, "fuzz.hcl", src); whole != chunked {
			t.Fatalf("chunked parse differs\nwhole:\n%s\nchunked:\n%s", whole, chunked)
		}
	})
}
