package cells

import (
	"strings"
	"testing"
)

func TestSelectExamplesRule(t *testing.T) {
	ex := func(name, kind string, size int) Example {
		return Example{Name: name, Kind: kind, Code: name + strings.Repeat("x", size)}
	}
	own := ex("ExampleMap", "example", 100)
	second := ex("ExampleMap_second", "example", 300)
	readme := ex("README.md:9", "readme", 50)
	other := ex("ExampleFilter", "other_example", 20)
	test := ex("TestMap", "test", 10)
	bench := ex("BenchmarkMap", "benchmark", 5)
	big := ex("TestHuge", "test", 5000)
	all := []Example{own, second, readme, other, test, bench, big}
	names := func(es []Example) string {
		var out []string
		for _, e := range es {
			out = append(out, e.Name)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		name   string
		all    []Example
		source string
		lim    ExampleLimits
		want   string
	}{
		{"the source never, the API's own first", all, "ExampleMap", DefaultExampleLimits, "ExampleMap_second,README.md:9"},
		{"kinds in order: example, readme, other, test, benchmark", all, "ExampleMap", ExampleLimits{Max: 10, Bytes: 5000}, "ExampleMap_second,README.md:9,ExampleFilter,TestMap,BenchmarkMap"},
		{"shortest first within a kind", all, "", ExampleLimits{Max: 2, Bytes: 10000}, "ExampleMap,ExampleMap_second"},
		{"nothing but the source: empty", []Example{own}, "ExampleMap", DefaultExampleLimits, ""},
		{"the same program under another name is the source too", []Example{own, {Name: "ExampleMap_copy", Kind: "other_example", Code: own.Code}, test}, "ExampleMap", DefaultExampleLimits, "TestMap"},
		{"one too big for the bytes left is passed over", []Example{big, test}, "", ExampleLimits{Max: 2, Bytes: 4000}, "TestMap"},
		{"a legacy row's kind is example's", []Example{{Name: "ExampleOld", Code: "old"}, test}, "", ExampleLimits{Max: 1}, "ExampleOld"},
		{"a program is shown once", []Example{test, {Name: "TestMapAgain", Kind: "test", Code: test.Code}}, "", DefaultExampleLimits, "TestMap"},
	} {
		if got := names(SelectExamples(tc.all, tc.source, tc.lim)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
