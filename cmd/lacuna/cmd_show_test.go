package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
)

// TestShowPrintsTheContentsOfReportLists: a report's list of records
// (per-model usage, per-arm results) prints each record's members, not
// "{}" for each.
func TestShowPrintsTheContentsOfReportLists(t *testing.T) {
	for _, tc := range []struct {
		name, report string
		want         []string
	}{
		{"a member that is a list of records",
			`{"calls":3,"per_model":[{"model":"qwen","calls":2},{"model":"llama","calls":1,"retries":{"timeout":1}}]}`,
			[]string{"    calls      3\n", "    per_model\n      [0]\n        model  qwen\n        calls  2\n      [1]\n        model    llama\n        calls    1\n        retries\n          timeout  1\n"}},
		{"a report that is a list of records",
			`[{"arm":"sft","acc":0.5},{"arm":"raft","acc":0.25}]`,
			[]string{"    [0]\n      arm  sft\n      acc  0.5\n    [1]\n      arm  raft\n      acc  0.25\n"}},
		{"a record among scalars",
			`{"mixed":[1,{"a":2,"b":"x"}]}`,
			[]string{"    mixed\n      [0]\n        1\n      [1]\n        a  2\n        b  x\n"}},
		{"a list of lists of scalars stays on its line",
			`{"pairs":[[1,2],[3,4]]}`,
			[]string{"    pairs  [[1, 2], [3, 4]]\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			printReport(&out, json.RawMessage(tc.report), "    ")
			if strings.Contains(out.String(), "{}") {
				t.Errorf("a record printed empty:\n%s", out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("report printed\n%s\nwant it to contain\n%s", out.String(), w)
				}
			}
		})
	}
}

type showRow struct {
	Name  string            `parquet:"name"`
	At    time.Time         `parquet:"at,timestamp(millisecond)"`
	Score *float64          `parquet:"score,optional"`
	Tags  []string          `parquet:"tags,list"`
	Meta  struct{ K int64 } `parquet:"meta"`
}

// TestShowPrintsAColumnListAndRFC3339Times: show's schema is a column
// list (name, type, required/nullable/repeated, a group's fields below
// it), not Parquet's message syntax, and its times are RFC 3339 in UTC.
func TestShowPrintsAColumnListAndRFC3339Times(t *testing.T) {
	st := tempStore(t)
	r := writeArtifact(t, st, "node.x.a", "x", "0123456789abcdef", []showRow{{Name: "a", At: time.UnixMilli(1700000000123)}})
	started := time.Date(2024, 5, 6, 9, 8, 7, 0, time.FixedZone("CEST", 2*3600))
	a := &artifacts.Action{Key: "0123456789abcdef", Type: "x", Version: "1", Config: json.RawMessage(`{}`), Started: started, Host: "h", Tool: "t"}
	var out bytes.Buffer
	printShow(&out, map[string]any{"node": "node.x.a", "action": a, "object": r.Object, "columns": nodes.Columns(r.Schema())})
	got := out.String()
	for _, re := range []string{
		`computed  2024-05-06T07:08:07Z on h`,
		`columns   5\n`,
		`\n    name +STRING +required\n`,
		`\n    at +TIMESTAMP\(MILLIS, UTC\) +required\n`,
		`\n    score +DOUBLE +nullable\n`,
		`\n    tags +LIST<STRING> +required\n`,
		`\n    meta +GROUP +required\n      K +INT64 +required\n`,
	} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("show output does not match %q:\n%s", re, got)
		}
	}
	if strings.Contains(got, "message") || strings.Contains(got, "isAdjustedToUTC") {
		t.Errorf("show prints Parquet's schema syntax:\n%s", got)
	}
}

// TestLookupDigestResolvesPrefixes: an action key, a content digest or
// any unique prefix of 4 or more hex digits names one thing; a shorter,
// ambiguous or unknown prefix is a clear error.
func TestLookupDigestResolvesPrefixes(t *testing.T) {
	st := tempStore(t)
	r1 := writeArtifact(t, st, "node.x.one", "x", "abcd000000000001", []showRow{{Name: "one"}})
	writeArtifact(t, st, "node.x.two", "x", "abcd000000000002", []showRow{{Name: "two"}})
	if err := st.PutFailure(&artifacts.Failure{Key: "fa11000000000003", Node: "node.x.three", Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	digest := string(r1.Object.Digest)
	for _, tc := range []struct {
		ref      string
		node     string // the subject's node; "" when an error is wanted
		action   bool   // the subject carries the action
		usage    bool   // the error is a usage error
		errMatch string
	}{
		{ref: "abcd000000000001", node: "node.x.one", action: true},
		{ref: "abcd000000000002", node: "node.x.two", action: true},
		{ref: "ABCD000000000002", node: "node.x.two", action: true},
		{ref: "fa11", node: "node.x.three"},
		{ref: digest[:8], node: "node.x.one", action: true}, // a content digest as plan prints it: its writer's provenance
		{ref: digest, node: "node.x.one", action: true},
		{ref: "abcd", errMatch: `digest prefix abcd is ambiguous: 2 names .* begin with it; give more digits:\n  abcd000000000001  action key of node.x.one\n  abcd000000000002  action key of node.x.two`},
		{ref: "abc", usage: true, errMatch: `too short: give at least 4 hex digits`},
		{ref: "abcd0000000000011", usage: true, errMatch: `not a digest`},
		{ref: "0000", errMatch: `no action key or content digest in .* begins with 0000`},
	} {
		s, err := lookupDigest(st, tc.ref)
		if tc.node != "" {
			if err != nil || s.node != tc.node || (s.action != nil) != tc.action {
				t.Errorf("%s: subject %+v, %v; want node %s (action %v)", tc.ref, s, err, tc.node, tc.action)
			}
			continue
		}
		var ue usageError
		if err == nil || !regexp.MustCompile(tc.errMatch).MatchString(err.Error()) || errors.As(err, &ue) != tc.usage {
			t.Errorf("%s: error %v (usage error: %v), want one matching %q (usage error: %v)", tc.ref, err, errors.As(err, &ue), tc.errMatch, tc.usage)
		}
	}
}

// TestShowAndCatAcceptTheDigestsThatPlanAndRunPrint: the 8-digit digests
// of plan and run's output work in show and cat, with or without the
// pipeline.
func TestShowAndCatAcceptTheDigestsThatPlanAndRunPrint(t *testing.T) {
	dir := benchDAG(t, 2)
	lacuna(t, dir, "run", "pipeline.hcl")
	plan := lacuna(t, dir, "plan", "pipeline.hcl").stdout
	m := regexp.MustCompile(`cached\s+node\.sample\.s1\s+([0-9a-f]{8}), 5 rows`).FindStringSubmatch(plan)
	if m == nil {
		t.Fatalf("plan prints no short digest for node.sample.s1:\n%s", plan)
	}
	for _, args := range [][]string{{"show", m[1]}, {"show", m[1][:4]}, {"show", "pipeline.hcl", m[1]}, {"cat", m[1], "--format", "csv"}} {
		r := lacuna(t, dir, args...)
		if r.code != 0 {
			t.Errorf("%v: exit %d: %s", args, r.code, r.stderr)
			continue
		}
		if args[0] == "show" && !strings.Contains(r.stdout, "node.sample.s1") {
			t.Errorf("%v does not name the node that made it:\n%s", args, r.stdout)
		}
		if args[0] == "cat" && strings.Count(r.stdout, "\n") != 6 {
			t.Errorf("%v: %q", args, r.stdout)
		}
	}
	if r := lacuna(t, dir, "show", "123"); r.code != 2 || !strings.Contains(r.stderr, "too short") {
		t.Errorf("show 123: %d %s", r.code, r.stderr)
	}
	if r := lacuna(t, dir, "show", "ffff0000"); r.code != 1 || !strings.Contains(r.stderr, "begins with ffff0000") {
		t.Errorf("show of an unknown prefix: %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}
