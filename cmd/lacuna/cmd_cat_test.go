package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/bench/dag"
)

type timedRow struct {
	Name  string      `parquet:"name"`
	At    time.Time   `parquet:"at,timestamp(millisecond)"`
	Micro *time.Time  `parquet:"micro,optional,timestamp(microsecond)"`
	Day   int32       `parquet:"day,date"` // days since 1970-01-01
	Seen  []time.Time `parquet:"seen,list"`
	Inner struct {
		When time.Time `parquet:"when,timestamp(nanosecond)"`
	} `parquet:"inner"`
}

// TestCatPrintsTimesAsRFC3339InEveryFormat: timestamps (any unit, in
// lists and groups too) print as RFC 3339 in UTC and dates as
// YYYY-MM-DD, never as the integers Parquet stores.
func TestCatPrintsTimesAsRFC3339InEveryFormat(t *testing.T) {
	st := tempStore(t)
	micro := time.UnixMicro(1700000000000001)
	row := timedRow{Name: "a", At: time.UnixMilli(1700000000123), Micro: &micro, Day: int32(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC).Unix() / 86400), Seen: []time.Time{time.UnixMilli(0)}}
	row.Inner.When = time.Unix(1, 5)
	r := writeArtifact(t, st, "node.x.a", "x", "0123456789abcdef", []timedRow{row, {Name: "b", At: time.UnixMilli(1700000000000)}})
	wants := []string{"2023-11-14T22:13:20.123Z", "2023-11-14T22:13:20.000001Z", "2024-02-29", "1970-01-01T00:00:00Z", "1970-01-01T00:00:01.000000005Z", "2023-11-14T22:13:20Z"}
	for _, format := range []string{"table", "record", "csv", "jsonl"} {
		var out bytes.Buffer
		if err := (&catPrinter{w: &out, view: catView{format: format, limit: 10}}).print("", r); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		for _, w := range wants {
			if format == "table" && w == "1970-01-01T00:00:01.000000005Z" {
				w = `{"when":"1970-01-01T00:00:01.000000005Z` // the group, as JSON in one (clipped) cell
			}
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: no %s in\n%s", format, w, out.String())
			}
		}
		if strings.Contains(out.String(), "1700000000") {
			t.Errorf("%s prints epoch integers:\n%s", format, out.String())
		}
	}
	// --where compares with what is printed.
	var out bytes.Buffer
	if err := (&catPrinter{w: &out, view: catView{format: "csv", limit: 10, where: []string{"at=2023-11-14T22:13:20Z"}}}).print("", r); err != nil || strings.Count(out.String(), "\n") != 2 {
		t.Errorf("--where at=RFC 3339: %v %q", err, out.String())
	}
}

// TestCatJSONPrintsJSONLines: --json prints one JSON object a row, as
// --format jsonl, and refuses another --format.
func TestCatJSONPrintsJSONLines(t *testing.T) {
	dir := benchDAG(t, 2)
	lacuna(t, dir, "run", "pipeline.hcl")
	r := lacuna(t, dir, "cat", "pipeline.hcl", "node.sample.s1", "--json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 5 {
		t.Fatalf("cat --json: exit %d, %d lines:\n%s%s", r.code, len(lines), r.stdout, r.stderr)
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["text"] == nil {
			t.Errorf("not a JSON row: %q (%v)", l, err)
		}
	}
	if !strings.HasPrefix(lines[0], `{"group":`) {
		t.Errorf("members are not in column order: %s", lines[0])
	}
	if r := lacuna(t, dir, "cat", "pipeline.hcl", "node.sample.s1", "--json", "--format", "csv"); r.code != 2 || !strings.Contains(r.stderr, "--json prints JSON Lines") {
		t.Errorf("cat --json --format csv: %d %s", r.code, r.stderr)
	}
	if r := lacuna(t, dir, "cat", "pipeline.hcl", "node.sample.s1", "--json", "--format", "jsonl"); r.code != 0 {
		t.Errorf("cat --json --format jsonl: %d %s", r.code, r.stderr)
	}
}

// TestCatLabelsForEachInstancesAndReportsMissingOnes: cat of a for_each
// node labels every instance (a header line, or a _node column) and
// goes on past one with no artifact, reporting it on stderr and exiting
// 1.
func TestCatLabelsForEachInstancesAndReportsMissingOnes(t *testing.T) {
	dir := t.TempDir()
	if err := dag.Write(dir, 3, dag.ForEach); err != nil {
		t.Fatal(err)
	}
	if r := lacuna(t, dir, "run", "pipeline.hcl", "--target", `node.sample.s["0"]`, "--target", `node.sample.s["2"]`); r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	for _, tc := range []struct {
		format string
		want   []string
	}{
		{"table", []string{"── node.sample.s[\"0\"] (5 rows) ──\ngroup  id", "── node.sample.s[\"2\"] (5 rows) ──\ngroup  id"}},
		{"record", []string{"══ node.sample.s[\"0\"] (5 rows) ══\n── row 1 ──", "══ node.sample.s[\"2\"] (5 rows) ══"}},
		{"csv", []string{"_node,group,id,text\n\"node.sample.s[\"\"0\"\"]\",g", "\n\"node.sample.s[\"\"2\"\"]\",g"}},
		{"jsonl", []string{`{"_node":"node.sample.s[\"0\"]","group":`, `{"_node":"node.sample.s[\"2\"]","group":`}},
	} {
		r := lacuna(t, dir, "cat", "pipeline.hcl", "node.sample.s", "--format", tc.format, "--limit", "2")
		if r.code != 1 {
			t.Errorf("%s: exit %d, want 1 (an instance has no artifact)", tc.format, r.code)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%s: stdout lacks %q:\n%s", tc.format, w, r.stdout)
			}
		}
		if strings.Contains(r.stdout, `s["1"]`) || !strings.Contains(r.stderr, `node.sample.s["1"]: not computed`) || !strings.Contains(r.stderr, "1 of 3 instances of node.sample.s have no artifact") {
			t.Errorf("%s: the missing instance is not reported on stderr:\n%s", tc.format, r.stderr)
		}
	}
	// One instance: no label.
	if r := lacuna(t, dir, "cat", "pipeline.hcl", `node.sample.s["0"]`, "--format", "csv"); r.code != 0 || !strings.HasPrefix(r.stdout, "group,id,text\n") {
		t.Errorf("cat of one instance: %d %q %s", r.code, r.stdout, r.stderr)
	}
	lacuna(t, dir, "run", "pipeline.hcl")
	if r := lacuna(t, dir, "cat", "pipeline.hcl", "node.sample.s", "--format", "jsonl"); r.code != 0 || strings.Count(r.stdout, "\n") != 15 {
		t.Errorf("cat of every instance computed: %d, %d lines, %s", r.code, strings.Count(r.stdout, "\n"), r.stderr)
	}
}
