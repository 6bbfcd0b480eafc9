package metrics_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/analysis"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"

	_ "github.com/lacuna-dev/lacuna/nodes/generic"
)

// judged is a hand-built judge table: model m, cell base with task t1
// (easy, library a, 5 samples, one without a param_corr) and t2 (medium,
// library b, 4 samples, one left unclassified, none with a param_corr: its
// reference has no call of the target), cell S with t1 (2 samples); a
// sample of t1 never run (NotRun), which no metric counts; two
// Calibration rows (kind reference and perturb) that metrics skip.
const judged = `{"task_id":"t1","kind":"model","model":"m","cell":"base","difficulty":"easy","library":"a","passed":true,"class":"OK","api_called":true,"param_corr":1.0,"sem":1.0}
{"task_id":"t1","kind":"model","model":"m","cell":"base","difficulty":"easy","library":"a","passed":true,"class":"OK","api_called":true,"param_corr":1.0,"sem":0.5}
{"task_id":"t1","kind":"model","model":"m","cell":"base","difficulty":"easy","library":"a","passed":false,"class":"WrongParam","api_called":true,"param_corr":0.5,"sem":0.0}
{"task_id":"t1","kind":"model","model":"m","cell":"base","difficulty":"easy","library":"a","passed":false,"class":"WrongLogic","api_called":true,"param_corr":null,"sem":null}
{"task_id":"t1","kind":"model","model":"m","cell":"base","difficulty":"easy","library":"a","passed":false,"class":"WrongAPISelection","api_called":false,"param_corr":0.0,"sem":null}
{"task_id":"t2","kind":"model","model":"m","cell":"base","difficulty":"medium","library":"b","passed":true,"class":"OK","api_called":true,"param_corr":null,"sem":null}
{"task_id":"t2","kind":"model","model":"m","cell":"base","difficulty":"medium","library":"b","passed":false,"class":"WrongSyntax","api_called":false,"param_corr":null,"sem":null}
{"task_id":"t2","kind":"model","model":"m","cell":"base","difficulty":"medium","library":"b","passed":false,"class":"WrongImport","api_called":false,"param_corr":null,"sem":null}
{"task_id":"t2","kind":"model","model":"m","cell":"base","difficulty":"medium","library":"b","passed":false,"class":"needs_llm","api_called":false,"param_corr":null,"sem":null}
{"task_id":"t1","kind":"model","model":"m","cell":"S","difficulty":"easy","library":"a","passed":false,"class":"WrongShapeDtype","api_called":true,"param_corr":1.0,"sem":null}
{"task_id":"t1","kind":"model","model":"m","cell":"S","difficulty":"easy","library":"a","passed":false,"class":"WrongShapeDtype","api_called":true,"param_corr":0.5,"sem":null}
{"task_id":"t1","kind":"model","model":"m","cell":"base","difficulty":"easy","library":"a","passed":false,"class":"NotRun","api_called":false,"param_corr":null,"sem":null}
{"task_id":"t1","kind":"reference","model":"m","cell":"base","difficulty":"easy","library":"a","passed":true,"class":"OK","api_called":true,"param_corr":1.0,"sem":null}
{"task_id":"t2","kind":"perturb","model":"","cell":"","difficulty":"medium","library":"b","passed":false,"class":"WrongParam","api_called":true,"param_corr":0.5,"sem":null}
`

// A second judge output: another model, one passing sample, no kind column
// (every row counts); a third model whose only sample never ran.
const judged2 = `{"task_id":"t1","model":"m2","cell":"base","difficulty":"easy","library":"a","passed":true,"class":"OK","api_called":true,"param_corr":1.0}
{"task_id":"t1","model":"m3","cell":"base","difficulty":"easy","library":"a","passed":false,"class":"NotRun","api_called":false,"param_corr":null}
`

// readMetrics reads a metrics output as rows of column → printed value
// ("null" for null), keyed model/cell/difficulty/library, with its columns
// and its rows' keys in order.
func readMetrics(t *testing.T, run *nodetest.Result, addr string) (rows map[string]map[string]string, cols, order []string) {
	t.Helper()
	rd, err := run.Store.Open(run.Nodes[addr].Output)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rd.Schema().Fields() {
		cols = append(cols, f.Name())
	}
	rows = map[string]map[string]string{}
	for _, row := range rd.Rows() {
		var v any
		if err := rd.Schema().Reconstruct(&v, row); err != nil {
			t.Fatal(err)
		}
		m := v.(map[string]any)
		rec := map[string]string{}
		for k, x := range m {
			if x == nil {
				rec[k] = "null"
			} else {
				rec[k] = fmt.Sprint(x)
			}
		}
		key := strings.Join([]string{rec["model"], rec["cell"], rec["difficulty"], rec["library"]}, "/")
		rows[key] = rec
		order = append(order, key)
	}
	return rows, cols, order
}

func TestMetricsOnAHandBuiltJudgeTable(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"judged.jsonl": judged, "judged2.jsonl": judged2} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := nodetest.Run(t, dir, `
node "import" "a" { path = "judged.jsonl" }
node "import" "b" { path = "judged2.jsonl" }
node "metrics" "x" {
  judged      = [node.import.a, node.import.b]
  k           = [1, 2, 5]
  pass_at_1   = "sampled"
  composition = "all_samples"
  ci          = "bootstrap"
  bootstrap   = 1000
  seed        = 1
}
node "metrics" "noci" {
  judged      = [node.import.a]
  k           = [1, 5]
  pass_at_1   = "sampled"
  composition = "all_samples"
  ci          = "none"
}
`)
	rows, colList, orderList := readMetrics(t, run, "node.metrics.x")
	// Every metric is followed by its CI's bounds and its number of
	// tasks. The sampled definitions (lacuna's before version 6) name
	// themselves: pass_at_1_sampled, samples_*.
	cols := strings.Join(colList, ",")
	wantCols := "model,cell,difficulty,library,tasks,samples,greedy,failures,not_run,pass_at_1_sampled,pass_at_1_sampled_lo,pass_at_1_sampled_hi,pass_at_1_sampled_n," +
		"pass_at_2,pass_at_2_lo,pass_at_2_hi,pass_at_2_n,pass_at_5,pass_at_5_lo,pass_at_5_hi,pass_at_5_n," +
		"api_acc,api_acc_lo,api_acc_hi,api_acc_n,param_corr,param_corr_lo,param_corr_hi,param_corr_n,sem,sem_lo,sem_hi,sem_n," +
		"samples_ok,samples_ok_lo,samples_ok_hi,samples_ok_n,samples_wrong_syntax,samples_wrong_syntax_lo,samples_wrong_syntax_hi,samples_wrong_syntax_n," +
		"samples_wrong_api_selection,samples_wrong_api_selection_lo,samples_wrong_api_selection_hi,samples_wrong_api_selection_n," +
		"samples_wrong_import,samples_wrong_import_lo,samples_wrong_import_hi,samples_wrong_import_n,samples_wrong_param,samples_wrong_param_lo,samples_wrong_param_hi,samples_wrong_param_n," +
		"samples_wrong_shape_dtype,samples_wrong_shape_dtype_lo,samples_wrong_shape_dtype_hi,samples_wrong_shape_dtype_n,samples_wrong_logic,samples_wrong_logic_lo,samples_wrong_logic_hi,samples_wrong_logic_n," +
		"samples_unclassified,samples_unclassified_lo,samples_unclassified_hi,samples_unclassified_n"
	if cols != wantCols {
		t.Errorf("columns\n %s\nwant\n %s", cols, wantCols)
	}
	order := strings.Join(orderList, " ")
	wantOrder := "m/base/all/all m/base/easy/all m/base/medium/all m/base/all/a m/base/all/b m/base/easy/a m/base/medium/b " +
		"m/S/all/all m/S/easy/all m/S/all/a m/S/easy/a m2/base/all/all m2/base/easy/all m2/base/all/a m2/base/easy/a " +
		"m3/base/all/all m3/base/easy/all m3/base/all/a m3/base/easy/a"
	if order != wantOrder {
		t.Errorf("rows\n %s\nwant\n %s", order, wantOrder)
	}
	// Every task weighs the same: t1 and t2 of cell base.
	//   pass@1 = (2/5 + 1/4)/2; pass@2 = (1-C(3,2)/C(5,2) + 1-C(3,2)/C(4,2))/2 = (0.7+0.5)/2;
	//   pass@5 is undefined for t2 (4 samples); API_acc = (4/5 + 1/4)/2;
	//   Param_corr = t1's 2.5/4 (t2 has none, like Sem); Sem = t1's (1+0.5+0)/3.
	// A group of one task has a CI of that task's value; with two tasks
	// (t1 and t2 of cell base) and 1000 resamples, the 2.5% and 97.5%
	// quantiles are the lower and the higher task's value: t1's and t2's
	// pass@2 are 70 and 50, their composition (OK, Syn, API, Imp, Par, Shp,
	// Log, unclassified) 40/0/20/0/20/0/20/0 and 25/25/0/25/0/0/0/25.
	// A CI is null where its metric is.
	want := map[string]string{
		"m/base/all/all": "tasks=2 samples=9 greedy=0 failures=6 not_run=1 pass_at_1_sampled_n=2 pass_at_5_n=0 param_corr_n=1 sem_n=1 samples_ok_n=2 pass_at_1_sampled=32.5 pass_at_1_sampled_lo=25 pass_at_1_sampled_hi=40 pass_at_2=60 pass_at_2_lo=50 pass_at_2_hi=70 " +
			"pass_at_5=null pass_at_5_lo=null pass_at_5_hi=null " +
			"api_acc=52.5 api_acc_lo=25 api_acc_hi=80 param_corr=62.5 param_corr_lo=62.5 param_corr_hi=62.5 sem=50 sem_lo=50 sem_hi=50 " +
			"samples_ok=32.5 samples_ok_lo=25 samples_ok_hi=40 samples_wrong_syntax=12.5 samples_wrong_syntax_lo=0 samples_wrong_syntax_hi=25 " +
			"samples_wrong_api_selection=10 samples_wrong_api_selection_lo=0 samples_wrong_api_selection_hi=20 samples_wrong_import=12.5 samples_wrong_import_lo=0 samples_wrong_import_hi=25 " +
			"samples_wrong_param=10 samples_wrong_param_lo=0 samples_wrong_param_hi=20 samples_wrong_shape_dtype=0 samples_wrong_shape_dtype_lo=0 samples_wrong_shape_dtype_hi=0 " +
			"samples_wrong_logic=10 samples_wrong_logic_lo=0 samples_wrong_logic_hi=20 samples_unclassified=12.5 samples_unclassified_lo=0 samples_unclassified_hi=25",
		"m/base/easy/all": "tasks=1 samples=5 not_run=1 pass_at_1_sampled=40 pass_at_1_sampled_lo=40 pass_at_1_sampled_hi=40 pass_at_2=70 pass_at_2_lo=70 pass_at_2_hi=70 " +
			"pass_at_5=100 pass_at_5_lo=100 pass_at_5_hi=100 api_acc=80 param_corr=62.5 sem=50 sem_lo=50 sem_hi=50 " +
			"samples_ok=40 samples_ok_lo=40 samples_ok_hi=40 samples_wrong_api_selection=20 samples_wrong_api_selection_lo=20 samples_wrong_api_selection_hi=20 samples_wrong_param=20 samples_wrong_param_lo=20 " +
			"samples_wrong_logic=20 samples_wrong_logic_hi=20 samples_unclassified=0 samples_unclassified_lo=0 samples_unclassified_hi=0",
		"m/base/all/a": "tasks=1 samples=5 not_run=1 pass_at_1_sampled=40 pass_at_2=70 pass_at_5=100",
		"m/base/medium/b": "tasks=1 samples=4 not_run=0 pass_at_1_sampled=25 pass_at_2=50 pass_at_2_lo=50 pass_at_2_hi=50 pass_at_5=null pass_at_5_lo=null pass_at_5_hi=null " +
			"api_acc=25 param_corr=null param_corr_lo=null sem=null sem_lo=null sem_hi=null samples_ok=25 samples_ok_lo=25 samples_ok_hi=25 " +
			"samples_unclassified=25 samples_unclassified_lo=25 samples_unclassified_hi=25",
		"m/S/all/all": "tasks=1 samples=2 pass_at_1_sampled=0 pass_at_2=0 pass_at_2_lo=0 pass_at_2_hi=0 pass_at_5=null api_acc=100 " +
			"param_corr=75 param_corr_lo=75 param_corr_hi=75 sem=null sem_lo=null sem_hi=null samples_ok=0 samples_ok_lo=0 samples_ok_hi=0 " +
			"samples_wrong_shape_dtype=100 samples_wrong_shape_dtype_lo=100 samples_wrong_shape_dtype_hi=100",
		"m2/base/all/all": "tasks=1 samples=1 pass_at_1_sampled=100 pass_at_2=null pass_at_2_lo=null pass_at_2_hi=null pass_at_5=null " +
			"api_acc=100 param_corr=100 sem=null sem_hi=null samples_ok=100 samples_ok_lo=100 samples_ok_hi=100",
		// Only a sample never run: nothing to measure.
		"m3/base/easy/a": "tasks=0 samples=0 not_run=1 pass_at_1_sampled=null pass_at_1_sampled_lo=null pass_at_5=null api_acc=null api_acc_hi=null param_corr=null " +
			"sem=null samples_ok=null samples_ok_lo=null samples_wrong_logic=null samples_unclassified=null samples_unclassified_hi=null",
	}
	for key, fields := range want {
		row, ok := rows[key]
		if !ok {
			t.Errorf("no row %s", key)
			continue
		}
		for _, f := range strings.Fields(fields) {
			col, val, _ := strings.Cut(f, "=")
			if row[col] != val {
				t.Errorf("%s: %s = %s, want %s", key, col, row[col], val)
			}
		}
	}
	noci, _, _ := readMetrics(t, run, "node.metrics.noci")
	if r := noci["m/base/easy/all"]; r["pass_at_1_sampled_lo"] != "null" || r["api_acc_hi"] != "null" || r["pass_at_5_lo"] != "null" || r["sem_lo"] != "null" ||
		r["samples_ok_hi"] != "null" || r["samples_unclassified_lo"] != "null" || r["pass_at_1_sampled"] != "40" || r["pass_at_5"] != "100" || r["sem"] != "50" {
		t.Errorf("ci = none: %v", r)
	}
	if _, ok := noci["m/base/all/all"]["pass_at_2"]; ok {
		t.Error("k unset: want pass@1 and pass@5 only")
	}
	if note := run.Notes("done")["node.metrics.x"]; !strings.Contains(note, "19 groups over 12 samples, 3 model × cell pairs; 2 samples not run (NotRun), left out") || !strings.Contains(note, "2 calibration rows skipped") {
		t.Errorf("note %q", note)
	}
	// The log's Table-1 view: one line per model × cell, pooled.
	a, err := run.Store.GetAction(run.Nodes["node.metrics.x"].Key)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"model  cell  tasks  pass@1(sampled)  pass@2  pass@5  API_acc  Param_corr  Sem   OK/Syn/API/Imp/Par/Shp/Log/Other  not_run",
		"m      base  2      32.5             60.0    -       52.5     62.5        50.0  33/13/10/13/10/0/10/13            1",
		"m2     base  1      100.0            -       -       100.0    100.0       -     100/0/0/0/0/0/0/0                 0",
		"m3     base  0      -                -       -       -        -           -     -/-/-/-/-/-/-/-                   1",
	} {
		if !strings.Contains(a.Logs, line) {
			t.Errorf("log lacks %q:\n%s", line, a.Logs)
		}
	}
}

// Metrics of calibration samples alone (a judge of solve's calibration
// runs) measure the harness and the judge, not a model: an error.
func TestMetricsRejectAnInputOfCalibrationRowsOnly(t *testing.T) {
	dir := t.TempDir()
	calib := `{"task_id":"t1","kind":"reference","model":"","cell":"","passed":true,"class":"OK"}
{"task_id":"t1","kind":"null","model":"","cell":"","passed":false,"class":"WrongAPISelection"}
`
	if err := os.WriteFile(filepath.Join(dir, "calib.jsonl"), []byte(calib), 0o644); err != nil {
		t.Fatal(err)
	}
	run := nodetest.RunErr(t, dir, `
node "import" "calib" { path = "calib.jsonl" }
node "metrics" "x" { greedy = [node.import.calib] }
`)
	err := run.Nodes["node.metrics.x"].Err
	if err == nil || !strings.Contains(err.Error(), "node.import.calib: its 2 rows are calibration samples") {
		t.Errorf("error %v", err)
	}
}

func TestMetricsAndJudgeConfigErrorsNameTheAttribute(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"k below 1", `node "metrics" "x" {
  greedy = [node.import.a]
  judged = [node.import.a]
  k      = [0]
}`, "p.hcl:4,12-15: Invalid k"},
		{"k without sampled runs", `node "metrics" "x" {
  greedy = [node.import.a]
  k      = [5]
}`, "p.hcl:3,12-15: No sampled runs"},
		{"negative bootstrap", `node "metrics" "x" {
  greedy    = [node.import.a]
  ci        = "bootstrap"
  bootstrap = -1
}`, "p.hcl:4,15-17: Invalid bootstrap"},
		{"bootstrap with the score interval", `node "metrics" "x" {
  greedy    = [node.import.a]
  bootstrap = 1000
}`, "p.hcl:3,15-19: Bootstrap unused"},
		{"an unknown ci", `node "metrics" "x" {
  greedy = [node.import.a]
  ci     = "bca"
}`, "p.hcl:3,12-17: Invalid ci"},
		{"no greedy samples", `node "metrics" "x" {
  greedy = []
}`, "p.hcl:2,12-14: No greedy samples"},
		{"sampled pass@1 without sampled runs", `node "metrics" "x" {
  greedy    = [node.import.a]
  pass_at_1 = "sampled"
}`, "p.hcl:1,1-19: No judge outputs"},
		{"sampled pass@1 with greedy samples", `node "metrics" "x" {
  greedy    = [node.import.a]
  judged    = [node.import.a]
  pass_at_1 = "sampled"
}`, "p.hcl:2,15-30: Greedy samples unused"},
		{"an unknown pass@1", `node "metrics" "x" {
  greedy    = [node.import.a]
  pass_at_1 = "best"
}`, "p.hcl:3,15-21: Invalid pass_at_1"},
		{"an unknown composition", `node "metrics" "x" {
  greedy      = [node.import.a]
  composition = "failures"
}`, "p.hcl:3,17-27: Invalid composition"},
		{"sem without a model", `node "judge" "x" {
  tasks   = node.import.a
  samples = node.import.a
  sem     = true
}`, "p.hcl:4,13-17: Sem needs a judge model"},
		{"a judge model that is the model under test", `node "judge" "x" {
  tasks      = node.import.a
  samples    = node.import.a
  model      = model.q
  under_test = model.q
}
model "q" { id = "qwen" }`, "p.hcl:4,16-23: Judge model is the model under test; the judge model and the model under test are both qwen"},
		{"an unknown on_judge_error", `node "judge" "x" {
  tasks          = node.import.a
  samples        = node.import.a
  on_judge_error = "retry"
}`, "p.hcl:4,20-27: Invalid on_judge_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := tc.src + "\nnode \"import\" \"a\" { path = \"a.jsonl\" }\n"
			_, diags := engine.ExpandSource(filepath.Join(dir, "p.hcl"), []byte(src), dir, engine.Options{})
			if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.want) {
				t.Errorf("diagnostics %q, want %q", diags.Error(), tc.want)
			}
		})
	}
}

// The bootstrap CIs of version 3 (pass@1, API_acc, Param_corr) keep their values
// under ci = "bootstrap":
// each metric's resamples come from its own stream, so adding CIs of
// other metrics leaves them as they were. Six tasks of 3 to 7 samples
// give means on a fine grid and 100 resamples leave the quantiles
// sensitive to the draws, so another stream would move them; the values
// are version 3's output on this table.
func TestMetricsKeepTheCIsOfEarlierVersions(t *testing.T) {
	var b strings.Builder
	for i, task := range []struct{ n, passed, api int }{{3, 1, 2}, {7, 3, 4}, {5, 0, 1}, {6, 2, 3}, {4, 4, 4}, {7, 6, 2}} {
		for s := range task.n {
			fmt.Fprintf(&b, `{"task_id":"t%d","model":"m","cell":"c","difficulty":"easy","library":"a","passed":%t,"class":"OK","api_called":%t,"param_corr":%g}`+"\n",
				i, s < task.passed, s < task.api, float64(s*s)/50)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "judged.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run := nodetest.Run(t, dir, `
node "import" "a" { path = "judged.jsonl" }
node "metrics" "x" {
  judged    = [node.import.a]
  k         = [1, 2]
  pass_at_1 = "sampled"
  ci        = "bootstrap"
  bootstrap = 100
}
`)
	rows, _, _ := readMetrics(t, run, "node.metrics.x")
	row := rows["m/c/all/all"]
	for col, want := range map[string]string{
		"pass_at_1_sampled_lo": "27.36", "pass_at_1_sampled_hi": "79.86",
		"api_acc_lo": "31.87", "api_acc_hi": "75.29",
		"param_corr_lo": "9.22", "param_corr_hi": "20.17",
	} {
		if row[col] != want {
			t.Errorf("%s = %s, want %s", col, row[col], want)
		}
	}
}

// greedyTable is one greedy (T = 0) sample per task of model m, cell c,
// library a: t1 and t5 pass, t2 and t3 fail with WrongParam, t4 with
// WrongAPISelection (it never calls the target, and its reference has no
// call to compare arguments with).
const greedyTable = `{"task_id":"t1","kind":"model","model":"m","cell":"c","difficulty":"easy","library":"a","passed":true,"class":"OK","api_called":true,"param_corr":1.0,"sem":1.0}
{"task_id":"t2","kind":"model","model":"m","cell":"c","difficulty":"easy","library":"a","passed":false,"class":"WrongParam","api_called":true,"param_corr":0.5,"sem":0.0}
{"task_id":"t3","kind":"model","model":"m","cell":"c","difficulty":"medium","library":"a","passed":false,"class":"WrongParam","api_called":true,"param_corr":0.0,"sem":0.0}
{"task_id":"t4","kind":"model","model":"m","cell":"c","difficulty":"medium","library":"a","passed":false,"class":"WrongAPISelection","api_called":false,"param_corr":null,"sem":0.0}
{"task_id":"t5","kind":"model","model":"m","cell":"c","difficulty":"hard","library":"a","passed":true,"class":"OK","api_called":true,"param_corr":1.0,"sem":1.0}
`

// sampledTable writes five sampled runs of each task, passing 3, 1, 0, 0
// and 5 of them: partial passes, so pass@2 differs from pass@1 and pass@5.
// Their classes and API calls differ from the greedy samples' on purpose:
// the paper's API_acc, Param_corr, Sem and composition read the pass@1
// (greedy) samples only.
func sampledTable() string {
	var b strings.Builder
	for i, passed := range []int{3, 1, 0, 0, 5} {
		for s := range 5 {
			class := "WrongLogic"
			if s < passed {
				class = "OK"
			}
			fmt.Fprintf(&b, `{"task_id":"t%d","kind":"model","model":"m","cell":"c","difficulty":"easy","library":"a","passed":%t,"class":%q,"api_called":false,"param_corr":0.0,"sem":0.0}`+"\n",
				i+1, s < passed, class)
		}
	}
	return b.String()
}

// wilson is Wilson's score interval for x successes in n trials at 95%,
// as percentages rounded like the metrics: what analysis.MeanCI gives on
// 0/1 values.
func wilson(x, n int) (lo, hi string) {
	z := 1.959963984540054
	p, nn := float64(x)/float64(n), float64(n)
	center := (p + z*z/(2*nn)) / (1 + z*z/nn)
	half := z / (1 + z*z/nn) * math.Sqrt(p*(1-p)/nn+z*z/(4*nn*nn))
	r := func(v float64) string { return fmt.Sprint(math.Round(math.Max(0, math.Min(1, v))*10000) / 100) }
	return r(center - half), r(center + half)
}

// TestMetricsFollowThePapersDefinitions checks the defaults against hand
// computation: pass@1 from the greedy samples, pass@k (Chen et al.) from
// the sampled runs with partial passes, API_acc, Param_corr and Sem from
// the greedy samples, the composition over the pass@1 failures, and
// every CI the score interval with its n.
func TestMetricsFollowThePapersDefinitions(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"greedy.jsonl": greedyTable, "sampled.jsonl": sampledTable()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := nodetest.Run(t, dir, `
node "import" "greedy" { path = "greedy.jsonl" }
node "import" "sampled" { path = "sampled.jsonl" }
node "metrics" "x" {
  greedy = [node.import.greedy]
  judged = [node.import.sampled]
  k      = [2, 5]
}
`)
	rows, colList, _ := readMetrics(t, run, "node.metrics.x")
	wantCols := "model,cell,difficulty,library,tasks,samples,greedy,failures,not_run,pass_at_1,pass_at_1_lo,pass_at_1_hi,pass_at_1_n," +
		"pass_at_2,pass_at_2_lo,pass_at_2_hi,pass_at_2_n,pass_at_5,pass_at_5_lo,pass_at_5_hi,pass_at_5_n," +
		"api_acc,api_acc_lo,api_acc_hi,api_acc_n,param_corr,param_corr_lo,param_corr_hi,param_corr_n,sem,sem_lo,sem_hi,sem_n," +
		"wrong_syntax,wrong_syntax_lo,wrong_syntax_hi,wrong_syntax_n,wrong_api_selection,wrong_api_selection_lo,wrong_api_selection_hi,wrong_api_selection_n," +
		"wrong_import,wrong_import_lo,wrong_import_hi,wrong_import_n,wrong_param,wrong_param_lo,wrong_param_hi,wrong_param_n," +
		"wrong_shape_dtype,wrong_shape_dtype_lo,wrong_shape_dtype_hi,wrong_shape_dtype_n,wrong_logic,wrong_logic_lo,wrong_logic_hi,wrong_logic_n," +
		"unclassified,unclassified_lo,unclassified_hi,unclassified_n"
	if cols := strings.Join(colList, ","); cols != wantCols {
		t.Errorf("columns\n %s\nwant\n %s", cols, wantCols)
	}
	row := rows["m/c/all/all"]
	p1lo, p1hi := wilson(2, 5)     // pass@1: t1 and t5 of 5
	apiLo, apiHi := wilson(4, 5)   // API_acc: all but t4
	parLo, parHi := wilson(2, 3)   // WrongParam: t2 and t3 of the 3 failures
	selLo, selHi := wilson(1, 3)   // WrongAPISelection: t4
	noneLo, noneHi := wilson(0, 3) // the other classes
	// pass@2 per task: 1-C(2,2)/C(5,2) = 0.9, 1-C(4,2)/C(5,2) = 0.4, 0, 0, 1.
	p2, ok := analysis.MeanCI([]float64{0.9, 0.4, 0, 0, 1}, 0.95)
	if !ok {
		t.Fatal("MeanCI")
	}
	r := func(v float64) string { return fmt.Sprint(math.Round(v*10000) / 100) }
	semLo, semHi := wilson(2, 5)
	want := map[string]string{
		"tasks": "5", "samples": "25", "greedy": "5", "failures": "3", "not_run": "0",
		"pass_at_1": "40", "pass_at_1_lo": p1lo, "pass_at_1_hi": p1hi, "pass_at_1_n": "5",
		"pass_at_2": "46", "pass_at_2_lo": r(p2.Lo), "pass_at_2_hi": r(p2.Hi), "pass_at_2_n": "5",
		"pass_at_5": "60", "pass_at_5_n": "5",
		"api_acc": "80", "api_acc_lo": apiLo, "api_acc_hi": apiHi, "api_acc_n": "5",
		"param_corr": "62.5", "param_corr_n": "4", // (1 + 0.5 + 0 + 1) / 4: t4 has none
		"sem": "40", "sem_lo": semLo, "sem_hi": semHi, "sem_n": "5",
		"wrong_param": "66.67", "wrong_param_lo": parLo, "wrong_param_hi": parHi, "wrong_param_n": "3",
		"wrong_api_selection": "33.33", "wrong_api_selection_lo": selLo, "wrong_api_selection_hi": selHi,
		"wrong_logic": "0", "wrong_logic_lo": noneLo, "wrong_logic_hi": noneHi, "wrong_logic_n": "3",
		"wrong_syntax": "0", "unclassified": "0", "unclassified_n": "3",
	}
	for col, w := range want {
		if row[col] != w {
			t.Errorf("m/c/all/all %s = %s, want %s", col, row[col], w)
		}
	}
	// The hard row: one task, passing; no failure to compose.
	if hard := rows["m/c/hard/all"]; hard["pass_at_1"] != "100" || hard["failures"] != "0" || hard["wrong_param"] != "null" || hard["wrong_param_n"] != "0" || hard["wrong_param_lo"] != "null" {
		t.Errorf("m/c/hard/all: %v", hard)
	}
}

// TestMetricsWarnWhenTheTableIsEmpty: a metrics table of no rows (C3 kept
// no task, so nothing after it had a sample; or every sample NotRun) is
// written, and the node's note and log say so as a warning: never a
// silent empty table.
func TestMetricsWarnWhenTheTableIsEmpty(t *testing.T) {
	for _, tc := range []struct {
		name, rows, why string
	}{
		{"only NotRun", `{"task_id":"t1","kind":"model","model":"m","cell":"base","difficulty":"easy","library":"a","passed":false,"class":"NotRun","api_called":false,"param_corr":null,"sem":null}` + "\n", "0 samples: every sample is NotRun"},
		{"no rows", "", "0 rows: its judged inputs hold no samples"},
		{"a table with rows", judged, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "j.jsonl"), []byte(tc.rows), 0o644); err != nil {
				t.Fatal(err)
			}
			run := nodetest.Run(t, dir, `
node "import" "j" { path = "j.jsonl" }
node "metrics" "x" { greedy = [node.import.j] }
`)
			note := run.Notes(engine.EventDone)["node.metrics.x"]
			if warned := strings.HasPrefix(note, "warning: "+tc.why); warned != (tc.why != "") || strings.Contains(note, "warning") != warned {
				t.Errorf("note %q", note)
			}
		})
	}
}
