package goharness

import (
	"reflect"
	"strings"
	"testing"
)

func TestAsProgramReadsAWholeProgram(t *testing.T) {
	task := Task{Difficulty: "easy", Probes: []string{"out", "n"}, Output: "[2 4 6]\n"}
	prog, span, ok := task.AsProgram(`package main

import (
	"fmt"

	sh "example.com/shapes"
)

// double is the solver's helper.
func double(x int) int { return x * 2 }

func main() {
	out := sh.Scale([]int{1, 2, 3}, 2)
	fmt.Println(out)
}
`)
	if !ok {
		t.Fatal("a whole program was not recognised")
	}
	if want := []string{`fmt "fmt"`, `sh "example.com/shapes"`}; !reflect.DeepEqual(prog.OwnImports, want) || prog.Imports != nil {
		t.Errorf("imports %q (example imports %q), want %q", prog.OwnImports, prog.Imports, want)
	}
	if !strings.Contains(prog.Decls, "func double(x int) int") || !strings.Contains(prog.Decls, "// double is") {
		t.Errorf("decls %q", prog.Decls)
	}
	if !strings.Contains(span, "sh.Scale([]int{1, 2, 3}, 2)") || strings.Contains(span, "func main") {
		t.Errorf("span %q", span)
	}
	if !reflect.DeepEqual(prog.Probes, []string{"out"}) {
		t.Errorf("probes %v, want only the one main declares", prog.Probes)
	}
	if prog.Before != "" || prog.After != "" || prog.Output != task.Output {
		t.Errorf("task %+v", prog)
	}
	for _, notProgram := range []string{"out := sh.Scale(xs, 2)", "package shapes\n\nfunc main() {}\n", "package main\n\nfunc helper() {}\n"} {
		if _, _, ok := task.AsProgram(notProgram); ok {
			t.Errorf("%q read as a whole program", notProgram)
		}
	}
	o := (&Observation{Output: "x", Probes: map[string]Probe{"out": {Type: "[]int"}, "n": {Type: "int"}, EndProbe: {Type: "bool"}}}).WithProbes(prog.Probes)
	if len(o.Probes) != 2 || o.Output != "x" {
		t.Errorf("WithProbes kept %v", o.Probes)
	}
}
