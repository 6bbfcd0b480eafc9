package tasks_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/novelapibench/goharness"

	_ "github.com/lacuna-dev/lacuna/nodes/bundle"
	_ "github.com/lacuna-dev/lacuna/nodes/generic"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
)

func TestTasksAreCutFromValidatedExamplesAndObserved(t *testing.T) {
	run := taskstest.Run(t, "", "")
	byTask := taskstest.ReadTasks(t, run)
	levels := map[string][]string{}
	count := map[string]int{}
	for _, task := range byTask {
		levels[task.Qualified] = append(levels[task.Qualified], task.Difficulty)
		count[task.Difficulty]++
		target := task.Qualified[strings.LastIndex(task.Qualified, ".")+1:]
		if strings.Contains(task.Description, target) {
			t.Errorf("%s: description names the target: %q", taskstest.Name(task), task.Description)
		}
		if task.Expect == "" || task.Harness == "" || task.ObserveError != "" {
			t.Errorf("%s: not observed (harness %d bytes): %s", taskstest.Name(task), len(task.Harness), task.ObserveError)
		}
		_, span := goharness.SplitAnswer(task.Mask)
		if !strings.Contains(task.Context, "<MASK>") || !strings.Contains(task.Reference, span) {
			t.Errorf("%s: context %q, mask %q", taskstest.Name(task), task.Context, task.Mask)
		}
		// The solver writes the target's import unless the context's own
		// code uses the package.
		if !strings.Contains(task.Context, "shapes.") && strings.Contains(task.Context, `"example.com/shapes"`) {
			t.Errorf("%s: the context imports the target's package it does not use:\n%s", taskstest.Name(task), task.Context)
		}
	}
	if got := fmt.Sprint(count); got != "map[easy:6 medium:3]" {
		t.Errorf("tasks by difficulty %s, want easy 6, medium 3", got)
	}
	for api, want := range map[string]string{"shapes.Stack.Push": "easy,medium", "shapes.Clamp": "easy"} {
		got := levels[api]
		sort.Strings(got)
		if strings.Join(got, ",") != want {
			t.Errorf("%s: levels %v, want %s", api, got, want)
		}
	}
}
