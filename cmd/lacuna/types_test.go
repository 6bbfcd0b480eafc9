package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestValidateChecksWhereAgainstTheInputColumns: `lacuna validate` fails
// on a where that names a column the input's declared schema does not
// have, at file:line:col with a suggestion, and passes the corrected one.
func TestValidateChecksWhereAgainstTheInputColumns(t *testing.T) {
	const src = `library "lo" {
  ecosystem = "go"
  name      = "github.com/samber/lo"
}
node "version_resolve" "lo" {
  library = library.lo
  cutoff  = "2024-09-19"
}
node "surface_diff" "lo" { versions = node.version_resolve.lo }
node "filter" "named" {
  input = node.surface_diff.lo
  where = WHERE
}
`
	for _, c := range []struct {
		where    string
		code     int
		inStderr []string
	}{
		{`row.nmae == "x"`, 1, []string{"p.hcl:12:11: error: Unknown column", `Did you mean "name"?`}},
		{`row.name`, 1, []string{"p.hcl:12:11: error: Predicate is not true or false"}},
		{`row.name == "x" && row.novel`, 0, nil},
	} {
		t.Run(c.where, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "p.hcl"), []byte(strings.Replace(src, "WHERE", c.where, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			r := lacuna(t, dir, "validate", "p.hcl")
			if r.code != c.code {
				t.Fatalf("validate exited %d, want %d\n%s%s", r.code, c.code, r.stdout, r.stderr)
			}
			for _, want := range c.inStderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
				}
			}
		})
	}
}

// TestTypesListsOutputColumnsAndHidesRemovedAttributes: `lacuna types`
// prints each type's attributes and output columns (or where a dynamic
// schema comes from), the same in --json, and never the removed filter
// attributes check and samples.
func TestTypesListsOutputColumnsAndHidesRemovedAttributes(t *testing.T) {
	r := lacuna(t, t.TempDir(), "types")
	if r.code != 0 {
		t.Fatalf("types exited %d: %s", r.code, r.stderr)
	}
	sections := map[string]string{}
	names := regexp.MustCompile(`(?m)^(\S+) \(logic version`).FindAllStringSubmatchIndex(r.stdout, -1)
	for i, m := range names {
		end := len(r.stdout)
		if i+1 < len(names) {
			end = names[i+1][0]
		}
		sections[r.stdout[m[2]:m[3]]] = r.stdout[m[0]:end]
	}
	for typ, wants := range map[string][]string{
		"judge":  {"output columns:", "class", "STRING", "required"},
		"c1":     {"audit_survivors", "LIST<STRING>"},
		"filter": {"output: same as input", "where"},
		"sample": {"output: same as input"},
		"import": {"output: inferred from the file"},
	} {
		for _, w := range wants {
			if !strings.Contains(sections[typ], w) {
				t.Errorf("types: %s section does not say %q:\n%s", typ, w, sections[typ])
			}
		}
	}
	if regexp.MustCompile(`(?m)^\s+(check|samples)\s`).MatchString(sections["filter"]) {
		t.Errorf("types lists filter's removed attributes:\n%s", sections["filter"])
	}

	r = lacuna(t, t.TempDir(), "types", "--json")
	if r.code != 0 {
		t.Fatalf("types --json exited %d: %s", r.code, r.stderr)
	}
	var infos []typeInfo
	if err := json.Unmarshal([]byte(r.stdout), &infos); err != nil {
		t.Fatal(err)
	}
	byName := map[string]typeInfo{}
	for _, ti := range infos {
		byName[ti.Name] = ti
	}
	if len(byName) != len(sections) {
		t.Errorf("--json lists %d types, the text %d", len(byName), len(sections))
	}
	var attrs []string
	for _, a := range byName["filter"].Attributes {
		attrs = append(attrs, a.Name)
	}
	if strings.Join(attrs, ",") != "input,where" || byName["filter"].Schema != "same as input" {
		t.Errorf("filter: attributes %v, schema %q", attrs, byName["filter"].Schema)
	}
	found := false
	for _, c := range byName["judge"].Columns {
		found = found || c.Name == "rule" && c.Type == "STRING" && c.Repetition == "required"
	}
	if !found || byName["judge"].Schema != "" {
		t.Errorf("judge: columns %+v, schema %q", byName["judge"].Columns, byName["judge"].Schema)
	}
	for _, ti := range infos {
		if ti.Schema == "not declared" {
			t.Errorf("node type %s declares no output schema", ti.Name)
		}
	}
}

// TestTypesPrintsOneTypesReference: `lacuna types TYPE` prints that
// type's reference alone (inputs apart from the other attributes, output
// columns); an unknown type is an error naming the closest one.
func TestTypesPrintsOneTypesReference(t *testing.T) {
	dir := t.TempDir()
	r := lacuna(t, dir, "types", "judge")
	if r.code != 0 {
		t.Fatalf("types judge: %d %s", r.code, r.stderr)
	}
	if n := regexp.MustCompile(`(?m)^\S+ \(logic version`).FindAllString(r.stdout, -1); len(n) != 1 || !strings.HasPrefix(r.stdout, "judge (logic version") {
		t.Errorf("types judge prints %d types:\n%s", len(n), r.stdout)
	}
	for _, w := range []string{"\n  inputs:\n", "\n  attributes:\n", "\n  output columns:\n", "task_id", "STRING"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("types judge lacks %q:\n%s", w, r.stdout)
		}
	}
	if r := lacuna(t, dir, "types", "judeg"); r.code != 1 || !strings.Contains(r.stderr, `no node type "judeg"; did you mean "judge"?`) {
		t.Errorf("types judeg: %d %s", r.code, r.stderr)
	}
	r = lacuna(t, dir, "types", "filter", "--markdown")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "## filter\n\nLogic version ") || !strings.Contains(r.stdout, "**Inputs**\n\n| Name | Required | Type |\n|---|---|---|\n| `input` | required | artifact |") {
		t.Errorf("types filter --markdown:\n%s%s", r.stdout, r.stderr)
	}
}

// TestNodeTypesDocIsTypesMarkdown: docs/node-types.md is the output of
// `lacuna types --markdown`, so the reference in docs/ is the one the
// binary carries.
func TestNodeTypesDocIsTypesMarkdown(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "node-types.md"))
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("no docs/node-types.md")
	}
	if err != nil {
		t.Fatal(err)
	}
	r := lacuna(t, t.TempDir(), "types", "--markdown")
	if r.code != 0 {
		t.Fatalf("types --markdown: %d %s", r.code, r.stderr)
	}
	if r.stdout != string(doc) {
		t.Errorf("docs/node-types.md is not the output of `lacuna types --markdown`: regenerate it with\n  go run ./cmd/lacuna types --markdown > docs/node-types.md")
	}
	for _, name := range []string{"import", "judge", "metrics"} {
		if !strings.Contains(r.stdout, "\n## "+name+"\n") {
			t.Errorf("the reference has no section for %s", name)
		}
	}
}
