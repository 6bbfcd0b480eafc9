package tasks

import (
	"context"
	"fmt"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
)

func init() { nodes.Register(judgeType{}) }

// judgeConfig:
//
//	node "judge" "qwen" { tasks = node.tasks.lo  samples = node.solve.qwen }
//
//lint:ignore U1000 used as nodes.Static's type argument (staticcheck misses that use)
type judgeConfig struct {
	Tasks   nodes.Ref `hcl:"tasks"`
	Samples nodes.Ref `hcl:"samples"`
}

// JudgeRow is a sample's failure class. Rule names the deterministic rule
// that fired; Class needs_llm waits for the LLM judge.
type JudgeRow struct {
	TaskID   string `parquet:"task_id"`
	SampleID string `parquet:"sample_id"`
	Kind     string `parquet:"kind"`
	APIID    string `parquet:"api_id"`
	Passed   bool   `parquet:"passed"`
	Class    string `parquet:"class"` // OK, WrongSyntax, WrongAPISelection, WrongImport, needs_llm
	Rule     string `parquet:"rule"`
}

type judgeType struct {
	nodes.Static[judgeConfig, JudgeRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = judgeType{}
	_ nodes.Documented = judgeType{}
)

func (judgeType) Name() string    { return "judge" }
func (judgeType) Version() string { return "4" }
func (judgeType) Doc() string {
	return "Classifies samples into the failure taxonomy by deterministic rules (OK, WrongSyntax, WrongAPISelection, " +
		"WrongImport); the rest are needs_llm until the LLM judge."
}

func (t judgeType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	tasks, err := readTasks(r, c.Tasks)
	if err != nil {
		return err
	}
	in, err := r.Input(c.Samples)
	if err != nil {
		return err
	}
	samples, err := artifacts.ReadAll[SampleRow](in)
	if err != nil {
		return err
	}
	byID := map[string]Row{}
	for _, t := range tasks {
		byID[t.TaskID] = t
	}
	out := make([]JudgeRow, 0, len(samples))
	confusion := map[string]map[string]int{}
	kinds := map[string]int{}
	for _, s := range samples {
		t, ok := byID[s.TaskID]
		if !ok {
			return fmt.Errorf("sample %s/%s: no such task", s.TaskID, s.SampleID)
		}
		ran := s.CompileError == "" && s.Observation != ""
		class, rule := goharness.Judge(goharness.Sample{Program: s.Program, Solution: s.Solution, Passed: s.Passed, CompileError: s.CompileError, Ran: ran, Direct: s.SpyDirect}, target(t), t.PkgName)
		out = append(out, JudgeRow{TaskID: s.TaskID, SampleID: s.SampleID, Kind: s.Kind, APIID: s.APIID, Passed: s.Passed, Class: class, Rule: rule})
		if confusion[s.Kind] == nil {
			confusion[s.Kind] = map[string]int{}
		}
		confusion[s.Kind][class]++
		kinds[class]++
	}
	// The confusion table of sample kind against class, for the log.
	classes := sortedKeys(kinds)
	r.Logf("%-10s %s", "kind", strings.Join(classes, "  "))
	for _, k := range sortedKeys(confusion) {
		var cells []string
		for _, cl := range classes {
			cells = append(cells, fmt.Sprintf("%*d", len(cl), confusion[k][cl]))
		}
		r.Logf("%-10s %s", k, strings.Join(cells, "  "))
	}
	var parts []string
	for _, cl := range classes {
		parts = append(parts, fmt.Sprintf("%s %d", cl, kinds[cl]))
	}
	r.Note("%d samples: %s", len(out), strings.Join(parts, ", "))
	return t.Write(r, out)
}
