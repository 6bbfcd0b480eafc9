package generic_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"

	_ "github.com/lacuna-dev/lacuna/nodes/generic"
)

type outcome struct {
	results map[string]*engine.Result
	store   *artifacts.Store
	err     error
}

// rows decodes an instance's output into maps.
func (o outcome) rows(t *testing.T, addr string) []map[string]any {
	t.Helper()
	r, ok := o.results[addr]
	if !ok || r.State == "failed" || r.State == "skipped" {
		t.Fatalf("%s: %+v (run error %v)", addr, r, o.err)
	}
	rd, err := o.store.Open(r.Output)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, row := range rd.Rows() {
		var v any
		if err := rd.Schema().Reconstruct(&v, row); err != nil {
			t.Fatal(err)
		}
		out = append(out, v.(map[string]any))
	}
	return out
}

func run(t *testing.T, dir, src string) outcome {
	t.Helper()
	g, diags := engine.ExpandSource(filepath.Join(dir, "p.hcl"), []byte(src), dir, engine.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	st, err := artifacts.Open(filepath.Join(dir, ".lacuna"))
	if err != nil {
		t.Fatal(err)
	}
	x := &engine.Executor{Store: st, Jobs: 2, KeepGoing: true}
	res, _, err := x.Run(context.Background(), g, nil)
	o := outcome{results: map[string]*engine.Result{}, store: st, err: err}
	for i, r := range res {
		o.results[i.Addr] = r
	}
	return o
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestImportInfersColumnTypes(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.jsonl", `{"id": 1, "score": 0.5, "ok": true, "name": "x", "tags": ["a"], "mixed": 1}
{"id": 2, "score": 2, "ok": false, "name": "y", "tags": [], "mixed": "one", "late": "z"}

{"id": 3, "score": null, "name": "w", "tags": ["b", "c"], "mixed": {"k": 1}}
`)
	write(t, dir, "b.csv", "id,score,name\n1,0.5,x\n2,,\"y, with comma\"\n")
	o := run(t, dir, `
node "import" "j" { path = "a.jsonl" }
node "import" "c" { path = "b.csv" }
node "import" "declared" {
  path    = "a.jsonl"
  columns = { id = "string", score = "double" }
}
`)
	rd, _ := o.store.Open(o.results["node.import.j"].Output)
	schema := rd.Schema().String()
	for _, want := range []string{"optional int64 id", "optional double score", "optional boolean ok", "optional binary name (STRING)", "optional binary tags (JSON)", "optional binary mixed (JSON)", "optional binary late (STRING)"} {
		if !strings.Contains(schema, want) {
			t.Errorf("schema lacks %q:\n%s", want, schema)
		}
	}
	rows := o.rows(t, "node.import.j")
	if len(rows) != 3 || rows[2]["score"] != nil || rows[1]["late"] != "z" || rows[0]["late"] != nil {
		t.Errorf("jsonl rows: %v", rows)
	}
	if tags := rows[2]["tags"].([]any); len(tags) != 2 || tags[1] != "c" {
		t.Errorf("json column: %v", rows[2]["tags"])
	}
	csvRows := o.rows(t, "node.import.c")
	if csvRows[1]["name"] != "y, with comma" || csvRows[1]["score"] != nil || csvRows[0]["id"] != int64(1) {
		t.Errorf("csv rows: %v", csvRows)
	}
	decl := o.rows(t, "node.import.declared")
	if len(decl[0]) != 2 || decl[0]["id"] != "1" {
		t.Errorf("declared columns: %v", decl[0])
	}
}

func TestImportParquetKeepsRows(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.jsonl", "{\"x\": 1, \"y\": [1, 2]}\n{\"x\": 2, \"y\": null}\n")
	o := run(t, dir, `node "import" "a" { path = "a.jsonl" }`)
	src := o.store.ObjectPath(o.results["node.import.a"].Output.Digest)
	b, _ := os.ReadFile(src)
	write(t, dir, "copy.parquet", string(b))
	o2 := run(t, dir, `node "import" "p" { path = "copy.parquet" }`)
	if o2.results["node.import.p"].Output.Digest != o.results["node.import.a"].Output.Digest {
		t.Error("re-importing an artifact's Parquet changed its content digest")
	}
}

func TestImportOfUnchangedRowsCutsOffDownstream(t *testing.T) {
	dir := t.TempDir()
	src := `
node "import" "a" { path = "a.jsonl" }
node "sample" "s" {
  input = node.import.a
  n     = 1
}
`
	write(t, dir, "a.jsonl", `{"x": 1}`+"\n"+`{"x": 2}`+"\n")
	run(t, dir, src)
	// Same records, other bytes: import re-runs, sample does not.
	write(t, dir, "a.jsonl", `{ "x" : 1 }`+"\n\n"+`{"x":2}`+"\n")
	o := run(t, dir, src)
	if o.results["node.import.a"].State != "done" || o.results["node.sample.s"].State != "cached" {
		t.Errorf("import %s, sample %s; want done, cached", o.results["node.import.a"].State, o.results["node.sample.s"].State)
	}
	write(t, dir, "a.jsonl", `{"x": 3}`+"\n")
	o = run(t, dir, src)
	if o.results["node.sample.s"].State != "done" {
		t.Error("changed data did not re-run the sample")
	}
}

// sharedData finds a file of the shared data, which lives in a shared/
// directory beside the repository (CI checks the repository out as
// <parent>/main with <parent>/shared beside it). Where it is absent the test
// skips, except under CI (CI=true), where a skip would hide that the test
// never runs.
func sharedData(t *testing.T, rel string) string {
	t.Helper()
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			t.Fatal("no go.mod above the package directory")
		}
		root = parent
	}
	p := filepath.Join(filepath.Dir(root), "shared", rel)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("shared data missing in CI: %v", err)
		}
		t.Skip("shared data not present:", err)
	}
	return p
}

func TestStratifiedSampleOnToolSense(t *testing.T) {
	abs := sharedData(t, "data/toolsense/toolsense-realistic-retrieval.jsonl")
	dir := t.TempDir()
	o := run(t, dir, `
node "import" "rr" { path = "`+abs+`" }
node "sample" "per_tier" {
  for_each = { a = 1, b = 2 }
  input    = node.import.rr
  by       = "complexity"
  n        = 10
  seed     = each.value
}
node "sample" "again" {
  input = node.import.rr
  by    = "complexity"
  n     = 10
  seed  = 1
}
node "sample" "fraction" {
  input    = node.import.rr
  fraction = 0.1
  seed     = 1
}
node "filter" "tier" {
  for_each = toset(["easy", "medium", "hard"])
  input    = node.import.rr
  where    = row.complexity == each.value && length(row.analyzed_tools) == 14
}
node "concat" "tiers" {
  inputs        = values(node.filter.tier)
  source_column = "from"
}
`)
	if o.err != nil {
		t.Fatal(o.err)
	}
	tiers := map[string]int{}
	for _, r := range o.rows(t, `node.sample.per_tier["a"]`) {
		tiers[r["complexity"].(string)]++
	}
	if tiers["easy"] != 10 || tiers["medium"] != 10 || tiers["hard"] != 10 {
		t.Errorf("stratified counts %v", tiers)
	}
	a, b := o.results[`node.sample.per_tier["a"]`].Output.Digest, o.results[`node.sample.per_tier["b"]`].Output.Digest
	if a == b {
		t.Error("different seeds drew the same sample")
	}
	if o.results["node.sample.again"].Output.Digest != a {
		t.Error("the same seed drew a different sample")
	}
	if n := len(o.rows(t, "node.sample.fraction")); n != 50 {
		t.Errorf("fraction 0.1 of 500 gave %d rows", n)
	}
	counts := map[string]int{}
	for _, k := range []string{"easy", "medium", "hard"} {
		counts[k] = len(o.rows(t, `node.filter.tier["`+k+`"]`))
	}
	if counts["easy"] != 167 || counts["medium"] != 167 || counts["hard"] != 166 {
		t.Errorf("tier filters %v, want the released 167/167/166", counts)
	}
	all := o.rows(t, "node.concat.tiers")
	from := map[string]bool{}
	for _, r := range all {
		from[r["from"].(string)] = true
	}
	if len(all) != 500 || len(from) != 3 || !from[`node.filter.tier["hard"]`] {
		t.Errorf("concat: %d rows from %v", len(all), keys(from))
	}
	if q := all[0]["tool"].(map[string]any)["tool_name"]; q == nil {
		t.Error("JSON column lost through source_column")
	}
}

func TestNodeErrorsNameTheProblem(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.jsonl", `{"x": 1, "tier": "easy"}`+"\n")
	write(t, dir, "b.jsonl", `{"y": "other"}`+"\n")
	write(t, dir, "c.jsonl", `{"m": {"k": 1}}`+"\n")
	// not_bool's where is over a JSON column, whose type is known only
	// row by row: where = row.x would be refused when the pipeline
	// loads (a number for every row).
	o := run(t, dir, `
node "import" "a" { path = "a.jsonl" }
node "import" "b" { path = "b.jsonl" }
node "import" "c" { path = "c.jsonl" }
node "import" "missing" { path = "nope.jsonl" }
node "sample" "by_missing" {
  input = node.import.a
  n     = 1
  by    = "tiers"
}
node "filter" "not_bool" {
  input = node.import.c
  where = row.m
}
node "concat" "mismatch" { inputs = [node.import.a, node.import.b] }
`)
	want := map[string]string{
		"node.import.missing":    "nope.jsonl",
		"node.sample.by_missing": `no column "tiers"; the input has columns tier, x`,
		"node.filter.not_bool":   "p.hcl:13:11: where must be true or false, got object",
		"node.concat.mismatch":   "node.import.b has a different schema from node.import.a",
	}
	for addr, msg := range want {
		r := o.results[addr]
		if r == nil || r.Err == nil || !strings.Contains(r.Err.Error(), msg) {
			t.Errorf("%s: want error containing %q, got %+v", addr, msg, r)
		}
	}
}

func TestFilterSeesVariables(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.jsonl", "{\"n\": 1}\n{\"n\": 5}\n{\"n\": 9}\n")
	src := func(min int) string {
		return `
variable "min" { default = ` + string(rune('0'+min)) + ` }
node "import" "a" { path = "a.jsonl" }
node "filter" "big" {
  input = node.import.a
  where = row.n >= var.min
}
`
	}
	if n := len(run(t, dir, src(4)).rows(t, "node.filter.big")); n != 2 {
		t.Errorf("min 4 kept %d", n)
	}
	o := run(t, dir, src(6))
	if o.results["node.filter.big"].State != "done" {
		t.Error("changing a variable the filter reads did not re-run it")
	}
	if n := len(o.rows(t, "node.filter.big")); n != 1 {
		t.Errorf("min 6 kept %d", n)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestConcatReusesRowsOfUnchangedInputs(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a", "b", "c"} {
		write(t, dir, f+".jsonl", `{"v": "`+f+`1"}`+"\n"+`{"v": "`+f+`2"}`+"\n")
	}
	src := `
node "import" "part" {
  for_each = toset(["a", "b", "c"])
  path     = "${each.key}.jsonl"
}
node "concat" "all" { inputs = values(node.import.part) }
`
	run(t, dir, src)
	write(t, dir, "b.jsonl", `{"v": "b9"}`+"\n")
	o := run(t, dir, src)
	a, err := o.store.GetAction(o.results["node.concat.all"].Key)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.Logs, "reused the rows of 2 unchanged inputs from the previous output; read 1") {
		t.Errorf("concat log: %q", a.Logs)
	}
	got := o.rows(t, "node.concat.all")
	var vals []string
	for _, r := range got {
		vals = append(vals, r["v"].(string))
	}
	if strings.Join(vals, ",") != "a1,a2,b9,c1,c2" {
		t.Errorf("rows %v", vals)
	}
	// The same inputs from scratch give the same artifact.
	fresh := t.TempDir()
	for _, f := range []string{"a", "b", "c"} {
		b, _ := os.ReadFile(filepath.Join(dir, f+".jsonl"))
		write(t, fresh, f+".jsonl", string(b))
	}
	if d := run(t, fresh, src).results["node.concat.all"].Output.Digest; d != o.results["node.concat.all"].Output.Digest {
		t.Errorf("incremental concat %s, from scratch %s", o.results["node.concat.all"].Output.Digest, d)
	}
}
