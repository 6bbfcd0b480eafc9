package bundle_test

import (
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/bundle"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
)

const pipeline = nodetest.ShapesHead + `node "surface_diff" "shapes" {
  versions = node.version_resolve.shapes
}
node "bundle" "shapes" {
  apis = node.surface_diff.shapes
  EXTRA
}
`

func runPipeline(t *testing.T, dir, extra string) *nodetest.Result {
	t.Helper()
	return nodetest.Run(t, dir, strings.Replace(pipeline, "EXTRA", extra, 1))
}

func TestBundlesOfTheKeptAPIsOnAnOfflineProxy(t *testing.T) {
	nodetest.OfflineShapes(t)
	dir := t.TempDir()
	run := runPipeline(t, dir, "")

	// What surface_diff keeps is tested beside it (nodes/discovery).
	bundles := nodetest.Read[bundle.Row](t, run, "node.bundle.shapes")
	got := map[string]bundle.Row{}
	for _, b := range bundles {
		got[b.Qualified] = b
	}
	// Kept APIs with M_code and a validated example; Stack.Pop's example
	// prints something else than it claims, ScaleErr's needs an unexported
	// name, Number and Stack have no example.
	if len(got) != 6 || got["shapes.TotalArea"].APIID == "" || got["shapes.Scale"].APIID == "" || got["shapes.Clamp"].APIID == "" || got["shapes.Stack.Push"].APIID == "" || got["shapes.Stack.Len"].APIID == "" || got["shapes.Apply"].APIID == "" {
		t.Fatalf("bundles %v, want Scale, Clamp, Stack.Push, Stack.Len, Apply, TotalArea", keys(got))
	}
	s := got["shapes.Scale"]
	if len(s.Params) != 2 || s.Params[0].Name != "xs" || s.TypeParams != "[T Number]" || len(s.Results) != 1 {
		t.Errorf("S of Scale: %+v %q %+v", s.Params, s.TypeParams, s.Results)
	}
	if len(s.Examples) == 0 || s.Examples[0].Name != "ExampleScale" || s.Examples[0].Kind != bundle.KindExample || !s.Examples[0].Valid || s.Examples[0].Output != "[2 4 6]\n" || !strings.Contains(s.Examples[0].Code, "package main") {
		t.Errorf("E of Scale: %+v", s.Examples)
	}
	if !strings.Contains(s.MCode, "func mulAll") || strings.Contains(s.MCode, "Scale multiplies") || len(s.MCodeHelpers) != 1 {
		t.Errorf("M_code of Scale:\n%s", s.MCode)
	}
	if s.MProse == "" || s.MProseTier != "doc" || s.License != "MIT" || s.Copyleft {
		t.Errorf("M_prose %q (%s), licence %s copyleft %v", s.MProse, s.MProseTier, s.License, s.Copyleft)
	}
	if c := got["shapes.Clamp"]; !strings.Contains(c.Examples[0].Code, "func describe") {
		t.Errorf("Clamp's example lost its helper:\n%s", c.Examples[0].Code)
	}
	// E's other kinds, each validated: the README's block, with what it
	// printed; tests made standalone (a subtest run in place, a check
	// turned into log.Fatalf); another API's Example function calling the
	// API; a benchmark's loop run once. A test that hands its T to a
	// helper is not an example, nor are TestClamp's or BenchmarkApply's
	// programs Scale's.
	for _, tc := range []struct {
		api   string
		kinds []string // "kind name status" in the row's order
		code  map[string]string
	}{
		{"shapes.Scale", []string{"example ExampleScale passed", "readme README.md:5 passed", "test TestScaleKeepsItsInput passed"},
			map[string]string{"TestScaleKeepsItsInput": `log.Fatalf("Scale(%v, 3) = %v", xs, got)`}},
		{"shapes.Clamp", []string{"example ExampleClamp passed", "test TestClamp passed"},
			map[string]string{"TestClamp": "func() {"}},
		{"shapes.Apply", []string{"example ExampleApply passed", "benchmark BenchmarkApply passed"},
			map[string]string{"BenchmarkApply": "shapes.Apply(xs, inc)"}},
		// Stack.Pop's Example prints something else than it claims: as
		// Push's other example it fails there too. Shortest first.
		{"shapes.Stack.Push", []string{"example ExampleStack_Push passed", "other_example ExampleStack_Pop failed", "other_example ExampleStack_Len passed"}, nil},
		{"shapes.Stack.Len", []string{"example ExampleStack_Len passed", "other_example ExampleStack_Push passed"}, nil},
	} {
		var kinds []string
		for _, e := range got[tc.api].Examples {
			kinds = append(kinds, e.Kind+" "+e.Name+" "+e.Status)
			if want, ok := tc.code[e.Name]; ok && !strings.Contains(e.Code, want) {
				t.Errorf("%s: %s lacks %q:\n%s", tc.api, e.Name, want, e.Code)
			}
			if e.Name == "README.md:5" && (e.File != "README.md" || e.Output != "[3 4]\n") {
				t.Errorf("%s: README block in %q printed %q, want [3 4]", tc.api, e.File, e.Output)
			}
		}
		if strings.Join(kinds, "; ") != strings.Join(tc.kinds, "; ") {
			t.Errorf("%s examples:\n%s\nwant\n%s", tc.api, strings.Join(kinds, "\n"), strings.Join(tc.kinds, "\n"))
		}
	}
	notes := run.Notes(engine.EventDone)
	if n := notes["node.bundle.shapes"]; !strings.Contains(n, "12 kept, 6 with validated examples, 6 bundles") {
		t.Errorf("bundle note %q", n)
	}

	// A second run computes nothing and still reports.
	again := runPipeline(t, dir, "")
	for addr, r := range again.Nodes {
		if r.State != "cached" {
			t.Errorf("second run: %s %s", addr, r.State)
		}
	}
	if n := again.Notes(engine.EventCached)["node.bundle.shapes"]; n != notes["node.bundle.shapes"] {
		t.Errorf("cached note %q", n)
	}
}

func TestBundleMinesOnlyTheKindsAsked(t *testing.T) {
	nodetest.OfflineShapes(t)
	run := runPipeline(t, t.TempDir(), `example_kinds = ["example", "readme"]`)
	for _, b := range nodetest.Read[bundle.Row](t, run, "node.bundle.shapes") {
		for _, e := range b.Examples {
			if e.Kind != bundle.KindExample && e.Kind != bundle.KindReadme {
				t.Errorf("%s: %s of kind %s", b.Qualified, e.Name, e.Kind)
			}
		}
	}
}

func TestBundleRefusesAnUnknownExampleKind(t *testing.T) {
	nodetest.OfflineShapes(t)
	_, diags := engine.ExpandSource("p.hcl", []byte(strings.Replace(pipeline, "EXTRA", `example_kinds = ["examples"]`, 1)), t.TempDir(), engine.Options{})
	// The attribute is on line 19 of the pipeline.
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "Unknown example kind") || !strings.Contains(diags.Error(), "p.hcl:19,") {
		t.Errorf("diagnostics %v, want an error at example_kinds", diags)
	}
}

func TestBundleKeepsAPIsWithoutExamplesWhenAsked(t *testing.T) {
	nodetest.OfflineShapes(t)
	run := runPipeline(t, t.TempDir(), "require_example = false")
	got := map[string]bundle.Row{}
	for _, b := range nodetest.Read[bundle.Row](t, run, "node.bundle.shapes") {
		got[b.Qualified] = b
	}
	if len(got) != 12 {
		t.Errorf("%d bundles %v, want the 12 kept APIs", len(got), keys(got))
	}
	pop := got["shapes.Stack.Pop"]
	if len(pop.Examples) != 1 || pop.Examples[0].Status != "failed" || strings.TrimSpace(pop.Examples[0].Got) != "7 true" || pop.ValidExamples != 0 {
		t.Errorf("Stack.Pop example: %+v", pop.Examples)
	}
	if !strings.Contains(pop.MCode, "func (s *Stack[T]) top()") {
		t.Errorf("Stack.Pop M_code lacks its helper:\n%s", pop.MCode)
	}
	if e := got["shapes.ScaleErr"].Examples; len(e) != 1 || e[0].Status != "not_standalone" {
		t.Errorf("ScaleErr example: %+v", e)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
