package filters_test

import (
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/filters"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks/taskstest"
)

// TestC1KeepsTasksWhoseHarnessDiscriminates: C1 keeps a task when its
// reference passes and every calibration solution fails; the two weak
// harnesses are dropped by the audit with the mutant that survived. It
// gives the same rows whether it reuses a solve node's runs or runs the
// Calibration solutions itself.
func TestC1KeepsTasksWhoseHarnessDiscriminates(t *testing.T) {
	run := taskstest.Run(t, "", taskstest.Calibration+`
node "c1" "reused" {
  tasks   = node.tasks.shapes
  samples = node.solve.calibration
}
node "c1" "own" { tasks = node.tasks.shapes }
`)
	byTask := taskstest.ReadTasks(t, run)
	for _, addr := range []string{"node.c1.reused", "node.c1.own"} {
		t.Run(addr, func(t *testing.T) {
			rows := nodetest.Read[filters.C1Row](t, run, addr)
			if len(rows) != len(byTask) {
				t.Fatalf("%d rows for %d tasks", len(rows), len(byTask))
			}
			kept := 0
			for _, c := range rows {
				n := taskstest.Name(c.Row)
				if c.Row != byTask[c.TaskID] {
					t.Errorf("%s: task columns differ from the task's", n)
				}
				if !c.C1Passed || c.C1Error != "" {
					t.Errorf("%s: reference fails C1: %s", n, c.C1Error)
				}
				if c.AuditRun < 4 {
					t.Errorf("%s: %d calibration solutions run, want at least 4", n, c.AuditRun)
				}
				if taskstest.Independent[n] {
					if c.Keep || !strings.HasPrefix(c.Reason, "no asserted value is computed through the target") {
						t.Errorf("%s (independent): keep=%v reason %q", n, c.Keep, c.Reason)
					}
					continue
				}
				if taskstest.Weak[n] {
					if c.Keep || c.Reason != "audit: the harness accepts perturb" || c.AuditKill != c.AuditRun-1 || len(c.Survivors) != 1 {
						t.Errorf("%s (weak): keep=%v reason %q killed %d/%d survivors %v", n, c.Keep, c.Reason, c.AuditKill, c.AuditRun, c.Survivors)
					}
					continue
				}
				kept++
				if !c.Keep || c.Reason != "" || c.AuditKill != c.AuditRun || c.Discrimination != 1 || len(c.Survivors) != 0 {
					t.Errorf("%s: keep=%v reason %q killed %d/%d discrimination %v", n, c.Keep, c.Reason, c.AuditKill, c.AuditRun, c.Discrimination)
				}
			}
			if kept != len(byTask)-len(taskstest.Weak)-len(taskstest.Independent) {
				t.Errorf("kept %d of %d tasks", kept, len(byTask))
			}
		})
	}
}
