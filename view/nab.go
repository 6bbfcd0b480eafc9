package view

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/lacuna-dev/lacuna/annotations"
	"github.com/lacuna-dev/lacuna/artifacts"
)

// FailureClasses are the labels a person gives a judged sample: OK and
// the six failure classes of NovelAPIBench's taxonomy (nodes/judge).
var FailureClasses = []string{"OK", "WrongSyntax", "WrongAPISelection", "WrongImport", "WrongParam", "WrongShapeDtype", "WrongLogic"}

// Harness layers in the order they are applied (nodes/tasks.SampleRow,
// novelapibench/pyharness). "build" stands for the compile error column.
// A Go sample stops at the first of build, span, channel and runtime that
// fails; the later layers are one Check, all reported. A Python sample
// stops at its first failing layer.
var (
	goLayers        = []string{"build", "span", "channel", "runtime", "spy", "structural", "comparative", "behavioural", "attribution", "perturbed"}
	goStopping      = []string{"build", "span", "channel", "runtime"}
	pythonLayers    = []string{"integrity", "run", "structural", "comparative", "input", "substitution"}
	layerPassed     = "passed"
	layerFailed     = "failed"
	layerNotReached = "not reached"
)

type layerView struct {
	Name     string
	State    string
	Messages []string
}

// cellSample is one judged sample of the task: the drill-down's column
// for one cell (or model).
type cellSample struct {
	Judge, Cell, Model, SampleID string
	Link                         string
	Current                      bool
	Generate, Solve              string // the nodes it came through
	Prompt, Raw, Thinking        string
	Solution, ExtractedBy        string
	FinishReason                 string
	Retrieved                    []string
	Passed                       bool
	Layers                       []layerView
	Output, RuntimeError         string
	SpyDirect                    int64
	TimedOut                     bool
	Class, Path, Rule, Expected  string
	Item                         string
	Missing                      []string // what its lineage lacks
}

type sampleData struct {
	Judge, Task, SampleID, Model, Cell string
	Item                               string
	TaskFields                         []rowField
	BundleNode                         string
	BundleFields                       []rowField
	Samples                            []cellSample
	Labels                             []annotations.Label
	Classes                            []string
	Annotator                          string
	Back                               string
	Kappa                              kappaView
	Missing                            []string
}

// lineage finds, through a node's action entry, the artifact an input
// attribute came from and that node's own action (when the store still
// holds the action that wrote exactly that artifact).
func (s *Server) lineage(a *artifacts.Action, input string, by map[string]Node) (artifacts.Input, *artifacts.Action, bool) {
	in, ok := inputOf(a, input)
	if !ok {
		return in, nil, false
	}
	if n, ok := by[in.Node]; ok {
		if pa, obj := s.output(n); pa != nil && obj.Digest == in.Digest {
			return in, pa, true
		}
	}
	snap, _ := s.cfg.Store.LoadSnapshot(s.cfg.Pipeline)
	if e, ok := snap.Nodes[in.Node]; ok && e.Key != "" {
		if pa, err := s.cfg.Store.GetAction(e.Key); err == nil && pa.Output.Digest == in.Digest {
			return in, pa, true
		}
	}
	return in, nil, true
}

func (s *Server) handleSample(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := sampleData{Judge: q.Get("judge"), Task: q.Get("task"), SampleID: q.Get("sample"), Model: q.Get("model"), Cell: q.Get("cell"), Classes: FailureClasses, Annotator: s.cfg.Annotator}
	d.Item = annotations.JudgeItem(d.Task, d.SampleID, d.Model, d.Cell)
	d.Back = r.URL.RequestURI()
	nodes, by, err := s.plan(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	jn, ok := by[d.Judge]
	if !ok || jn.Type != "judge" {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("no judge node %q in this pipeline", d.Judge))
		return
	}
	ja, jrs, err := s.nodeRecords(jn)
	if err != nil {
		s.fail(w, r, http.StatusNotFound, err)
		return
	}
	if row, _ := jrs.find("task_id", d.Task, "sample_id", d.SampleID, "model", d.Model, "cell", d.Cell); row == nil {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("%s has no sample %s of task %s (model %q, cell %q)", d.Judge, d.SampleID, d.Task, d.Model, d.Cell))
		return
	}
	// The task and its bundle, through the judge's tasks input.
	if tin, ta, ok := s.lineage(ja, "tasks", by); ok {
		trs, err := s.records(tin.Digest)
		if err != nil {
			d.Missing = append(d.Missing, "the task: "+err.Error())
		} else if trow, _ := trs.find("task_id", d.Task); trow != nil {
			for _, c := range []string{"task_id", "library", "api_id", "qualified_name", "difficulty", "description", "context", "mask", "generator"} {
				if slices.Contains(trs.Columns, c) {
					d.TaskFields = append(d.TaskFields, rowField{Name: c, Text: str(trow, c)})
				}
			}
			if ta != nil {
				if bin, _, ok := s.lineage(ta, "bundles", by); ok {
					d.BundleNode = bin.Node
					if brs, err := s.records(bin.Digest); err == nil {
						if brow, _ := brs.find("api_id", str(trow, "api_id")); brow != nil {
							for _, c := range []string{"qualified_name", "kind", "version", "s_signature", "m_prose", "m_code", "e_examples", "e_valid"} {
								if slices.Contains(brs.Columns, c) {
									d.BundleFields = append(d.BundleFields, rowField{Name: c, Text: str(brow, c)})
								}
							}
						}
					}
				}
			} else {
				d.Missing = append(d.Missing, "the bundle: the tasks node's action is no longer in the store")
			}
		}
	}
	// Every judged sample of this task and model with the same sample
	// number, across the judge nodes (the cells side by side).
	suffix := sampleSuffix(d.SampleID)
	for _, addr := range byType(nodes, "judge") {
		n := by[addr]
		a, rs, err := s.nodeRecords(n)
		if err != nil {
			continue
		}
		for _, row := range rs.Rows {
			if str(row, "task_id") != d.Task || str(row, "model") != d.Model || sampleSuffix(str(row, "sample_id")) != suffix {
				continue
			}
			cs := s.cellSample(addr, a, row, by)
			cs.Current = addr == d.Judge && cs.SampleID == d.SampleID && cs.Cell == d.Cell
			d.Samples = append(d.Samples, cs)
		}
	}
	slices.SortStableFunc(d.Samples, func(a, b cellSample) int {
		switch {
		case a.Current:
			return -1
		case b.Current:
			return 1
		}
		return strings.Compare(a.Cell+a.Judge, b.Cell+b.Judge)
	})
	labels, err := annotations.Load(s.cfg.Store, s.cfg.Pipeline)
	if err != nil {
		d.Missing = append(d.Missing, "the labels: "+err.Error())
	}
	for _, l := range labels {
		if l.Kind == annotations.KindFailureClass && l.Node == d.Judge && l.Item == d.Item {
			d.Labels = append(d.Labels, l)
		}
	}
	d.Kappa = judgeKappa(labels, d.Judge, jrs)
	s.render(w, r, "sample", "sample "+d.SampleID+" of task "+d.Task, d)
}

// sampleSuffix is the sample number of a sample id ("S#0" → "#0"); a
// built-in solution's id ("reference") is its own.
func sampleSuffix(id string) string {
	if i := strings.LastIndex(id, "#"); i >= 0 {
		return id[i:]
	}
	return id
}

// cellSample gathers one judged sample's lineage: the judge row, the
// solve row it judged (the harness's verdict) and the generate row that
// solve ran (the prompt and the answer).
func (s *Server) cellSample(judge string, ja *artifacts.Action, row map[string]any, by map[string]Node) cellSample {
	cs := cellSample{Judge: judge, Cell: str(row, "cell"), Model: str(row, "model"), SampleID: str(row, "sample_id"),
		Class: str(row, "class"), Path: str(row, "path"), Rule: str(row, "rule"), Expected: str(row, "expected"), Passed: row["passed"] == true}
	task := str(row, "task_id")
	cs.Link = sampleURL(judge, task, cs.SampleID, cs.Model, cs.Cell)
	cs.Item = annotations.JudgeItem(task, cs.SampleID, cs.Model, cs.Cell)
	ecosystem := "go"
	if tin, _, ok := s.lineage(ja, "tasks", by); ok {
		if trs, err := s.records(tin.Digest); err == nil {
			if trow, _ := trs.find("task_id", task); trow != nil && str(trow, "ecosystem") != "" {
				ecosystem = str(trow, "ecosystem")
			}
		}
	}
	sin, sa, ok := s.lineage(ja, "samples", by)
	if !ok {
		cs.Missing = append(cs.Missing, "the judge's samples input")
		return cs
	}
	cs.Solve = sin.Node
	srs, err := s.records(sin.Digest)
	if err != nil {
		cs.Missing = append(cs.Missing, "the harness verdict: "+err.Error())
		return cs
	}
	srow, _ := srs.find("task_id", task, "sample_id", cs.SampleID, "model", cs.Model, "cell", cs.Cell)
	if srow == nil {
		cs.Missing = append(cs.Missing, "the harness verdict: no row in "+sin.Node)
		return cs
	}
	cs.Passed = srow["passed"] == true
	cs.Output, cs.RuntimeError, cs.TimedOut = str(srow, "output"), str(srow, "runtime_error"), srow["timed_out"] == true
	if v, ok := srow["spy_direct"].(int64); ok {
		cs.SpyDirect = v
	}
	cs.Layers = layers(ecosystem, srow)
	if sa == nil {
		cs.Missing = append(cs.Missing, "the prompt: the solve node's action is no longer in the store")
		return cs
	}
	gin, _, ok := s.lineage(sa, "solutions", by)
	if !ok {
		return cs // built-in solutions: no prompt
	}
	cs.Generate = gin.Node
	grs, err := s.records(gin.Digest)
	if err != nil {
		cs.Missing = append(cs.Missing, "the prompt: "+err.Error())
		return cs
	}
	grow, _ := grs.find("task_id", task, "sample_id", cs.SampleID, "model", cs.Model)
	if grow == nil {
		cs.Missing = append(cs.Missing, "the prompt: no row in "+gin.Node)
		return cs
	}
	cs.Prompt, cs.Raw, cs.Thinking = str(grow, "prompt"), str(grow, "raw"), str(grow, "thinking")
	cs.Solution, cs.ExtractedBy, cs.FinishReason = str(grow, "solution"), str(grow, "extracted_by"), str(grow, "finish_reason")
	if l, ok := grow["retrieved"].([]any); ok {
		for _, c := range l {
			if m, ok := c.(map[string]any); ok {
				cs.Retrieved = append(cs.Retrieved, str(m, "chunk_id"))
			}
		}
	}
	return cs
}

// layers is a solve row's verdict layer by layer.
func layers(ecosystem string, row map[string]any) []layerView {
	failed := strs(row["failed_layers"])
	// The failures column is one failure a line, "layer: message"; a
	// line that names no layer continues the message before it (a stack
	// trace), or starts the first failed layer's.
	msgs := map[string][]string{}
	cur := ""
	for _, line := range strings.Split(strings.TrimRight(str(row, "failures"), "\n"), "\n") {
		if l, m, ok := strings.Cut(line, ": "); ok && slices.Contains(failed, l) {
			cur = l
			msgs[l] = append(msgs[l], m)
			continue
		}
		if cur == "" {
			if len(failed) == 0 || line == "" {
				continue
			}
			cur = failed[0]
			msgs[cur] = append(msgs[cur], line)
			continue
		}
		last := len(msgs[cur]) - 1
		msgs[cur][last] += "\n" + line
	}
	order, stopping := goLayers, goStopping
	if ecosystem == "python" {
		order, stopping = pythonLayers, pythonLayers
	}
	if ce := str(row, "compile_error"); ce != "" {
		failed = append([]string{"build"}, failed...)
		msgs["build"] = append(msgs["build"], ce)
	}
	if re := str(row, "runtime_error"); re != "" && slices.Contains(failed, "runtime") && !strings.Contains(str(row, "failures"), strings.TrimSpace(re)) {
		msgs["runtime"] = append(msgs["runtime"], re)
	}
	var out []layerView
	stopped := false
	for _, l := range order {
		v := layerView{Name: l, State: layerPassed, Messages: msgs[l]}
		switch {
		case stopped:
			v.State = layerNotReached
		case slices.Contains(failed, l):
			v.State = layerFailed
			stopped = slices.Contains(stopping, l)
		}
		out = append(out, v)
	}
	for _, l := range failed { // layers this list does not know (a variant's own)
		if !slices.Contains(order, l) {
			out = append(out, layerView{Name: l, State: layerFailed, Messages: msgs[l]})
		}
	}
	return out
}
