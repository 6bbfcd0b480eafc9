package goharness

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/goapi"
	"github.com/lacuna-dev/lacuna/runners/modfetch/proxytest"
)

func fixtureExample(t *testing.T, name string) goapi.Example {
	t.Helper()
	exs, err := goapi.Examples(fixtureNew)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range exs {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no %s", name)
	return goapi.Example{}
}

func TestTasksFromExampleGradeTheScaffolding(t *testing.T) {
	push := Target{ID: "example.com/shapes.Stack.Push", Package: "example.com/shapes", Receiver: "Stack", Name: "Push"}
	tasks, skipped, err := TasksFromExample(fixtureExample(t, "ExampleStack_Push"), push)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 2 || tasks[0].Difficulty != Easy || tasks[1].Difficulty != Medium || skipped[Hard] == "" {
		t.Fatalf("tasks %+v skipped %v", tasks, skipped)
	}
	if tasks[0].Mask != `s.Push("a")` || !strings.Contains(tasks[0].Before, "var s shapes.Stack[string]") {
		t.Errorf("easy: before %q mask %q", tasks[0].Before, tasks[0].Mask)
	}
	if !strings.HasPrefix(tasks[1].Mask, "var s shapes.Stack[string]") || !reflect.DeepEqual(tasks[1].Probes, []string{"s"}) {
		t.Errorf("medium: mask %q probes %v", tasks[1].Mask, tasks[1].Probes)
	}
	if !strings.Contains(tasks[0].Context(), "<MASK>") || strings.Contains(tasks[0].Context(), `s.Push("a")`) {
		t.Errorf("context:\n%s", tasks[0].Context())
	}
	d, ok := Describe(tasks[0], push, "Push puts the value v on top of the stack.")
	if !ok || strings.Contains(d, "Push") || !strings.Contains(d, "puts the value v on top of the stack") {
		t.Errorf("description %q ok=%v", d, ok)
	}
	if _, ok := Describe(Task{Difficulty: Easy, Output: "Push done\n"}, push, ""); ok {
		t.Error("a description whose expected output names the API must be refused")
	}
}

var fixtureNew = proxytest.Shapes("v1.1.0")

// sharedBuildCache is the user's own GOCACHE: tests then do not rebuild
// the standard library in a fresh cache.
func sharedBuildCache(t testing.TB) string {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return t.TempDir()
	}
	return strings.TrimSpace(string(out))
}
