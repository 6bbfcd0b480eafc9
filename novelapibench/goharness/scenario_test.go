package goharness

import (
	"reflect"
	"strings"
	"testing"
)

func TestTaskFromScenarioCutsTheMarkedSpan(t *testing.T) {
	clamp := Target{ID: "example.com/shapes.Clamp", Package: "example.com/shapes", Name: "Clamp", Module: "example.com/shapes"}
	scenario := `package main

import (
	"fmt"

	"example.com/shapes"
)

// label names a reading.
func label(v int) string { return fmt.Sprintf("reading %d", v) }

func main() {
	raw := []int{-5, 3, 42}
	var out []int
	// <MASK>
	for _, v := range raw {
		out = append(out, shapes.Clamp(v, 0, 10))
	}
	// </MASK>
	total := shapes.Area(2, 3)
	fmt.Println(label(len(out)), out, total)
}
`
	task, err := TaskFromScenario(scenario, Medium, clamp)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(task.Mask, "for _, v := range raw {") || !strings.HasSuffix(task.Mask, "}") || strings.Contains(task.Mask, "MASK") {
		t.Errorf("mask %q", task.Mask)
	}
	if !strings.Contains(task.Before, "var out []int") || strings.Contains(task.Before, "MASK") || !strings.Contains(task.After, "fmt.Println") {
		t.Errorf("before %q after %q", task.Before, task.After)
	}
	if !reflect.DeepEqual(task.Keep, []string{"raw", "out"}) || !reflect.DeepEqual(task.Aux, []string{"Area"}) || !strings.Contains(task.Decls, "func label") {
		t.Errorf("keep %v aux %v decls %q", task.Keep, task.Aux, task.Decls)
	}
	ctx := task.Context()
	if !strings.Contains(ctx, "<MASK>") || strings.Contains(ctx, "Clamp") {
		t.Errorf("context:\n%s", ctx)
	}
	// The reference is the scenario again, markers aside.
	if got := task.Program(task.ReferenceAnswer()); !strings.Contains(got, "shapes.Clamp(v, 0, 10)") || !strings.Contains(got, `"example.com/shapes"`) {
		t.Errorf("reference program:\n%s", got)
	}

	refused := map[string]string{
		"no markers":        strings.NewReplacer("\t// <MASK>\n", "", "\t// </MASK>\n", "").Replace(scenario),
		"closed first":      strings.NewReplacer("// <MASK>", "// </MASK>", "// </MASK>", "// <MASK>").Replace(scenario),
		"inside a block":    strings.Replace(strings.Replace(scenario, "\t// <MASK>\n\tfor", "\tfor", 1), "{\n\t\tout =", "{\n\t// <MASK>\n\t\tout =", 1),
		"span without call": strings.Replace(scenario, "shapes.Clamp(v, 0, 10)", "v", 1),
		"context names it":  strings.Replace(scenario, "total := shapes.Area(2, 3)", "total := shapes.Clamp(2, 0, 3)", 1),
		"not Go":            strings.Replace(scenario, "func main() {", "func main() {{", 1),
		"returns":           strings.Replace(scenario, "\t// </MASK>", "\treturn\n\t// </MASK>", 1),
		"package":           strings.Replace(scenario, "package main", "package shapes_test", 1),
	}
	for name, src := range refused {
		if _, err := TaskFromScenario(src, Medium, clamp); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
