package main

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
)

type metricsRow struct {
	Model      string   `parquet:"model"`
	Cell       string   `parquet:"cell"`
	Difficulty string   `parquet:"difficulty"`
	Library    string   `parquet:"library"`
	Tasks      int64    `parquet:"tasks"`
	PassAt1    *float64 `parquet:"pass_at_1,optional"`
	PassAt1Lo  *float64 `parquet:"pass_at_1_lo,optional"`
}

type plainRow struct {
	ID   int64  `parquet:"id"`
	Text string `parquet:"text"`
}

type plainRow2 struct {
	ID    int64   `parquet:"id"`
	Text  string  `parquet:"text"`
	Score float64 `parquet:"score"`
}

func f64(v float64) *float64 { return &v }

func side(r *artifacts.Reader, typ string) *diffSide {
	return &diffSide{Ref: string(r.Object.Digest), Digest: r.Object.Digest, Type: typ, Node: r.Meta()[artifacts.MetaNode], reader: r}
}

// TestDiffComparesRowsBySchemaKeyAndWholeRows: diff reports schema
// changes, and rows added, removed and changed, matched by --key, the
// type's natural key, or whole rows.
func TestDiffComparesRowsBySchemaKeyAndWholeRows(t *testing.T) {
	st := tempStore(t)
	a := writeArtifact(t, st, "node.import.a", "import", "1000000000000001", []plainRow{{1, "one"}, {2, "two"}, {3, "three"}, {3, "three"}})
	b := writeArtifact(t, st, "node.import.b", "import", "1000000000000002", []plainRow2{{1, "one", 0.5}, {2, "TWO", 1}, {4, "four", 2}, {3, "three", 3}})
	for _, tc := range []struct {
		name           string
		key            []string
		keyFrom        string
		added, removed int
		changed, same  int
		changedColumns string
		schemaAdded    string
		err            string
	}{
		{name: "whole rows over the common columns", keyFrom: "whole rows", added: 2, removed: 2, same: 2, schemaAdded: "score"},
		{name: "a key with duplicates", key: []string{"id"}, err: `--key id does not identify A's rows: id=3 is there twice`},
		{name: "a key only one side has", key: []string{"score"}, err: `--key score: both artifacts must have the column`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := compare(side(a, "import"), side(b, "import"), diffOptions{key: tc.key, sample: 1})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := res.Counts
			if res.KeyFrom != tc.keyFrom || c.Added != tc.added || c.Removed != tc.removed || c.Changed != tc.changed || c.Same != tc.same {
				t.Errorf("key from %q, counts %+v", res.KeyFrom, c)
			}
			if len(res.Schema.Added) != 1 || res.Schema.Added[0].Name != tc.schemaAdded || res.Same {
				t.Errorf("schema %+v, same %v", res.Schema, res.Same)
			}
			if len(res.Added) != 1 || len(res.Removed) != 1 { // --sample 1
				t.Errorf("samples: %d added, %d removed", len(res.Added), len(res.Removed))
			}
		})
	}

	// Keyed: a row whose key both have and whose values differ changed.
	a2 := writeArtifact(t, st, "node.import.c", "import", "1000000000000003", []plainRow{{1, "one"}, {2, "two"}, {3, "three"}})
	res, err := compare(side(a2, "import"), side(b, "import"), diffOptions{key: []string{"id"}, sample: 5})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Counts; c.Added != 1 || c.Removed != 0 || c.Changed != 1 || c.Same != 2 || res.KeyFrom != "--key" {
		t.Errorf("keyed counts %+v from %s", c, res.KeyFrom)
	}
	if len(res.Changed) != 1 || res.Changed[0].Key["id"] != int64(2) || res.Changed[0].Columns["text"] != [2]any{"two", "TWO"} {
		t.Errorf("changed %+v", res.Changed)
	}
	var out bytes.Buffer
	printDiff(&out, res)
	for _, w := range []string{"schema:\n  + score  DOUBLE required\n", "rows matched by id (--key): 1 added, 0 removed, 1 changed, 2 same", "  + id=4 text=four\n", "  ~ id=2\n      text: two → TWO\n", "note: columns only one side has are left out"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("diff output lacks %q:\n%s", w, out.String())
		}
	}

	// The same artifact: nothing differs.
	if res, err := compare(side(a2, "import"), side(a2, "import"), diffOptions{sample: 5}); err != nil || !res.Same || res.Counts.Same != 3 {
		t.Errorf("an artifact against itself: %+v %v", res, err)
	}
}

// TestDiffPutsMetricsSideBySide: two metrics artifacts are matched by
// the type's natural key and every metric is printed with A, B and the
// delta; --where-a/--where-b compare two models' rows of one table.
func TestDiffPutsMetricsSideBySide(t *testing.T) {
	st := tempStore(t)
	rowsA := []metricsRow{
		{"qwen", "base", "all", "all", 10, f64(40), f64(30)},
		{"qwen", "full", "all", "all", 10, f64(70), f64(60)},
		{"llama", "base", "all", "all", 10, f64(20), f64(10)},
		{"llama", "full", "all", "all", 10, nil, nil},
	}
	rowsB := []metricsRow{
		{"qwen", "base", "all", "all", 12, f64(45), f64(35)},
		{"qwen", "full", "all", "all", 10, f64(70), f64(60)},
	}
	a := writeArtifact(t, st, "node.metrics.table", "metrics", "2000000000000001", rowsA)
	b := writeArtifact(t, st, "node.metrics.table", "metrics", "2000000000000002", rowsB)
	res, err := compare(side(a, "metrics"), side(b, "metrics"), diffOptions{sample: 5})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Key, ",") != "model,cell,difficulty,library" || res.KeyFrom != "natural key of metrics" {
		t.Errorf("key %v from %s", res.Key, res.KeyFrom)
	}
	if c := res.Counts; c.Removed != 2 || c.Changed != 1 || c.Same != 1 || c.Added != 0 {
		t.Errorf("counts %+v", c)
	}
	// tasks and pass_at_1 for both keys B has; pass_at_1_lo left out.
	got := map[string]metricDelta{}
	for _, m := range res.Metrics {
		got[m.Key["cell"].(string)+"/"+m.Metric] = m
		if m.Metric == "pass_at_1_lo" {
			t.Errorf("metrics include a confidence bound: %+v", m)
		}
	}
	if len(res.Metrics) != 4 || *got["base/pass_at_1"].Delta != 5 || *got["base/tasks"].Delta != 2 || *got["full/pass_at_1"].Delta != 0 {
		t.Errorf("metrics %+v", res.Metrics)
	}
	var out bytes.Buffer
	printDiff(&out, res)
	if !regexp.MustCompile(`\n  qwen\s+base\s+all\s+all\s+pass_at_1\s+40\s+45\s+\+5\n`).MatchString(out.String()) {
		t.Errorf("metrics table:\n%s", out.String())
	}

	// Two models' rows of one table: the key loses model.
	res, err = compare(side(a, "metrics"), side(a, "metrics"), diffOptions{sample: 5, whereA: []string{"model=qwen"}, whereB: []string{"model=llama"}, columns: []string{"pass_at_1"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Key, ",") != "cell,difficulty,library" || len(res.Metrics) != 2 {
		t.Fatalf("qwen vs llama: key %v, metrics %+v", res.Key, res.Metrics)
	}
	for _, m := range res.Metrics {
		switch m.Key["cell"] {
		case "base":
			if *m.A != 40 || *m.B != 20 || *m.Delta != -20 {
				t.Errorf("base: %+v", m)
			}
		case "full":
			if *m.A != 70 || m.B != nil || m.Delta != nil {
				t.Errorf("full (llama's is null): %+v", m)
			}
		}
	}
	b2, err := json.Marshal(res)
	if err != nil || !bytes.Contains(b2, []byte(`"metric":"pass_at_1","a":70,"b":null,"delta":null`)) {
		t.Errorf("json: %s %v", b2, err)
	}
	if _, err := compare(side(a, "metrics"), side(b, "metrics"), diffOptions{columns: []string{"model"}}); err == nil {
		t.Error("--columns of a text column is accepted")
	}
	if number(math.NaN()) != nil || number(int64(3)) == nil || *number(int32(2)) != 2 {
		t.Error("number")
	}
}

// TestDiffCommandTakesAddressesAndPrefixes: lacuna diff compares two
// node instances of a pipeline, or two digests' prefixes, in text and
// JSON; --exit-code exits 1 when they differ.
func TestDiffCommandTakesAddressesAndPrefixes(t *testing.T) {
	dir := benchDAG(t, 2)
	lacuna(t, dir, "run", "pipeline.hcl")
	d := digests(t, dir)
	r := lacuna(t, dir, "diff", "pipeline.hcl", "node.sample.s0", "node.sample.s1", "--key", "id")
	if r.code != 0 || !strings.Contains(r.stdout, "A  node.sample.s0 (sample)  "+d["node.sample.s0"]) || !strings.Contains(r.stdout, "rows matched by id (--key): ") {
		t.Errorf("diff of two addresses: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = lacuna(t, dir, "diff", d["node.sample.s0"][:8], d["node.concat.all"][:6], "--json", "--exit-code")
	var res struct {
		Sides  []diffSide
		Same   bool
		Counts diffCounts
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 1 || res.Same || res.Counts.Same != 5 || res.Counts.Added != 5 || res.Sides[1].Node != "node.concat.all" {
		t.Errorf("diff --json --exit-code of s0 and all: exit %d, %+v, %v\n%s", r.code, res, err, r.stderr)
	}
	if r := lacuna(t, dir, "diff", d["node.sample.s0"], d["node.sample.s0"], "--exit-code"); r.code != 0 || !strings.Contains(r.stdout, "same artifact") {
		t.Errorf("diff of an artifact with itself: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := lacuna(t, dir, "diff", "node.sample.s0"); r.code != 2 {
		t.Errorf("diff with one argument: %d", r.code)
	}
}
