package goharness

import (
	"strings"
	"testing"
)

func TestCheckDeclsRefusesInitAndHarnessNames(t *testing.T) {
	for _, tc := range []struct{ decls, want string }{
		{"func double(x int) int { return x * 2 }\n\ntype pair struct{ a, b int }", ""},
		{"func init() { go func() {}() }", "declares init"},
		{"var x = lacunaUserCallbacks", "names lacunaUserCallbacks"},
		{"func (p pair) init() {}\n\ntype pair struct{}", ""},
	} {
		if err := CheckDecls(tc.decls); tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckDecls(%q): %v, want %q", tc.decls, err, tc.want)
		}
	}
}

func TestCheckSpanRefusesWhatCouldSkipOrForgeTheChecks(t *testing.T) {
	for _, tc := range []struct {
		name, span, want string
	}{
		{"statements", "x := lo.Map(xs, f)\nfmt.Println(x)", ""},
		{"a return inside a function literal", "f := func() int { return 1 }\n_ = f()", ""},
		{"an if with a block", "if len(xs) > 0 {\n\tx = xs[0]\n}", ""},
		{"early return", "x := 1\nreturn\n_ = x", "returns from the scenario"},
		{"return inside if", "if true {\n\treturn\n}", "returns from the scenario"},
		{"goto", "goto end\nend:\n", "uses goto"},
		{"closes main to declare init", "x := 1\n_ = x\n}\nfunc init() {\n\tprintln(1)", "declares code outside the span"},
		{"does not parse", "x := := 1", "does not parse"},
		{"the probe function", `lacunaProbe("x", 1)`, "names lacunaProbe"},
		{"the spy's counters", "shapes.LacunaSpyScale.Direct.Add(1)", "names LacunaSpyScale"},
		{"the harness's imports", "lacunaos.Exit(0)", "names lacunaos"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckSpan(tc.span)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("CheckSpan: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCheckImportsRefusesWhatReachesTheHarness(t *testing.T) {
	for _, c := range []struct {
		imports []string
		refused string
	}{
		{[]string{`fmt "fmt"`, `shapes "example.com/shapes"`}, ""},
		{[]string{`reflect "reflect"`, `runtime "runtime"`, `exec "os/exec"`}, ""},
		{[]string{`unsafe "unsafe"`}, "unsafe"},
		{[]string{`fmt "fmt"`, `syscall "syscall"`}, "syscall"},
		{[]string{`elf "debug/elf"`}, "debug/elf"},
		{[]string{`gosym "debug/gosym"`}, "debug/gosym"},
		{[]string{`debug "runtime/debug"`}, "runtime/debug"},
		{[]string{`plugin "plugin"`}, "plugin"},
		{[]string{`unix "golang.org/x/sys/unix"`}, "golang.org/x/sys/unix"},
		{[]string{`u "unsafe"`}, "unsafe"},                 // renamed
		{[]string{"u `unsafe`"}, "unsafe"},                 // a raw string path
		{[]string{`debugger "example.com/debug/elf"`}, ""}, // a module's own package
	} {
		err := CheckImports(c.imports)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%v: refused: %v", c.imports, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), `"`+c.refused+`"`)):
			t.Errorf("%v: %v, want %q refused", c.imports, err, c.refused)
		}
	}
}

func TestCheckSpanForAllowsAReturnOnlyWhereTheEndMarkerIsExpected(t *testing.T) {
	span := "x := 1\nif x < 0 {\n\treturn\n}\nfmt.Println(x)"
	withEnd := &Expectation{Probes: map[string]Expected{EndProbe: {}}}
	for _, c := range []struct {
		name string
		e    *Expectation
		ok   bool
	}{
		{"observing the reference", nil, false},
		{"an expectation without the end marker", &Expectation{Probes: map[string]Expected{}}, false},
		{"an expectation with the end marker", withEnd, true},
	} {
		err := CheckSpanFor(span, c.e)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want allowed %v", c.name, err, c.ok)
		}
	}
	if err := CheckSpanFor("goto end\nend:", withEnd); err == nil {
		t.Error("goto allowed with the end marker")
	}
	if err := CheckSpan(span); err == nil {
		t.Error("CheckSpan allowed a return")
	}
}
