package metrics_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
  judged    = [node.import.a, node.import.b]
  k         = [1, 2, 5]
  bootstrap = 1000
  seed      = 1
}
node "metrics" "noci" {
  judged    = [node.import.a]
  bootstrap = 0
}
`)
	rows, colList, orderList := readMetrics(t, run, "node.metrics.x")
	// Every metric is followed by its CI's bounds.
	cols := strings.Join(colList, ",")
	wantCols := "model,cell,difficulty,library,tasks,samples,not_run,pass_at_1,pass_at_1_lo,pass_at_1_hi," +
		"pass_at_2,pass_at_2_lo,pass_at_2_hi,pass_at_5,pass_at_5_lo,pass_at_5_hi," +
		"api_acc,api_acc_lo,api_acc_hi,param_corr,param_corr_lo,param_corr_hi,sem,sem_lo,sem_hi," +
		"ok,ok_lo,ok_hi,wrong_syntax,wrong_syntax_lo,wrong_syntax_hi,wrong_api_selection,wrong_api_selection_lo,wrong_api_selection_hi," +
		"wrong_import,wrong_import_lo,wrong_import_hi,wrong_param,wrong_param_lo,wrong_param_hi," +
		"wrong_shape_dtype,wrong_shape_dtype_lo,wrong_shape_dtype_hi,wrong_logic,wrong_logic_lo,wrong_logic_hi," +
		"unclassified,unclassified_lo,unclassified_hi"
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
		"m/base/all/all": "tasks=2 samples=9 not_run=1 pass_at_1=32.5 pass_at_1_lo=25 pass_at_1_hi=40 pass_at_2=60 pass_at_2_lo=50 pass_at_2_hi=70 " +
			"pass_at_5=null pass_at_5_lo=null pass_at_5_hi=null " +
			"api_acc=52.5 api_acc_lo=25 api_acc_hi=80 param_corr=62.5 param_corr_lo=62.5 param_corr_hi=62.5 sem=50 sem_lo=50 sem_hi=50 " +
			"ok=32.5 ok_lo=25 ok_hi=40 wrong_syntax=12.5 wrong_syntax_lo=0 wrong_syntax_hi=25 " +
			"wrong_api_selection=10 wrong_api_selection_lo=0 wrong_api_selection_hi=20 wrong_import=12.5 wrong_import_lo=0 wrong_import_hi=25 " +
			"wrong_param=10 wrong_param_lo=0 wrong_param_hi=20 wrong_shape_dtype=0 wrong_shape_dtype_lo=0 wrong_shape_dtype_hi=0 " +
			"wrong_logic=10 wrong_logic_lo=0 wrong_logic_hi=20 unclassified=12.5 unclassified_lo=0 unclassified_hi=25",
		"m/base/easy/all": "tasks=1 samples=5 not_run=1 pass_at_1=40 pass_at_1_lo=40 pass_at_1_hi=40 pass_at_2=70 pass_at_2_lo=70 pass_at_2_hi=70 " +
			"pass_at_5=100 pass_at_5_lo=100 pass_at_5_hi=100 api_acc=80 param_corr=62.5 sem=50 sem_lo=50 sem_hi=50 " +
			"ok=40 ok_lo=40 ok_hi=40 wrong_api_selection=20 wrong_api_selection_lo=20 wrong_api_selection_hi=20 wrong_param=20 wrong_param_lo=20 " +
			"wrong_logic=20 wrong_logic_hi=20 unclassified=0 unclassified_lo=0 unclassified_hi=0",
		"m/base/all/a": "tasks=1 samples=5 not_run=1 pass_at_1=40 pass_at_2=70 pass_at_5=100",
		"m/base/medium/b": "tasks=1 samples=4 not_run=0 pass_at_1=25 pass_at_2=50 pass_at_2_lo=50 pass_at_2_hi=50 pass_at_5=null pass_at_5_lo=null pass_at_5_hi=null " +
			"api_acc=25 param_corr=null param_corr_lo=null sem=null sem_lo=null sem_hi=null ok=25 ok_lo=25 ok_hi=25 " +
			"unclassified=25 unclassified_lo=25 unclassified_hi=25",
		"m/S/all/all": "tasks=1 samples=2 pass_at_1=0 pass_at_2=0 pass_at_2_lo=0 pass_at_2_hi=0 pass_at_5=null api_acc=100 " +
			"param_corr=75 param_corr_lo=75 param_corr_hi=75 sem=null sem_lo=null sem_hi=null ok=0 ok_lo=0 ok_hi=0 " +
			"wrong_shape_dtype=100 wrong_shape_dtype_lo=100 wrong_shape_dtype_hi=100",
		"m2/base/all/all": "tasks=1 samples=1 pass_at_1=100 pass_at_2=null pass_at_2_lo=null pass_at_2_hi=null pass_at_5=null " +
			"api_acc=100 param_corr=100 sem=null sem_hi=null ok=100 ok_lo=100 ok_hi=100",
		// Only a sample never run: nothing to measure.
		"m3/base/easy/a": "tasks=0 samples=0 not_run=1 pass_at_1=null pass_at_1_lo=null pass_at_5=null api_acc=null api_acc_hi=null param_corr=null " +
			"sem=null ok=null ok_lo=null wrong_logic=null unclassified=null unclassified_hi=null",
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
	if r := noci["m/base/easy/all"]; r["pass_at_1_lo"] != "null" || r["api_acc_hi"] != "null" || r["pass_at_5_lo"] != "null" || r["sem_lo"] != "null" ||
		r["ok_hi"] != "null" || r["unclassified_lo"] != "null" || r["pass_at_1"] != "40" || r["pass_at_5"] != "100" || r["sem"] != "50" {
		t.Errorf("bootstrap = 0: %v", r)
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
		"model  cell  tasks  n  pass@1  pass@2  pass@5  API_acc  Param_corr  Sem   OK/Syn/API/Imp/Par/Shp/Log  not_run",
		"m      base  2      9  32.5    60.0    -       52.5     62.5        50.0  33/13/10/13/10/0/10         1",
		"m2     base  1      1  100.0   -       -       100.0    100.0       -     100/0/0/0/0/0/0             0",
		"m3     base  0      0  -       -       -       -        -           -     -                           1",
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
node "metrics" "x" { judged = [node.import.calib] }
`)
	err := run.Nodes["node.metrics.x"].Err
	if err == nil || !strings.Contains(err.Error(), "node.import.calib: its 2 rows are calibration samples") {
		t.Errorf("error %v", err)
	}
}

func TestMetricsAndJudgeConfigErrorsNameTheAttribute(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"k below 1", `node "metrics" "x" {
  judged = [node.import.a]
  k      = [0]
}`, "p.hcl:3,12-15: Invalid k"},
		{"negative bootstrap", `node "metrics" "x" {
  judged    = [node.import.a]
  bootstrap = -1
}`, "p.hcl:3,15-17: Invalid bootstrap"},
		{"no inputs", `node "metrics" "x" {
  judged = []
}`, "p.hcl:2,12-14: No judge outputs"},
		{"sem without a model", `node "judge" "x" {
  tasks   = node.import.a
  samples = node.import.a
  sem     = true
}`, "p.hcl:4,13-17: Sem needs a judge model"},
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

// The CIs of version 3 (pass@1, API_acc, Param_corr) keep their values:
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
  bootstrap = 100
}
`)
	rows, _, _ := readMetrics(t, run, "node.metrics.x")
	row := rows["m/c/all/all"]
	for col, want := range map[string]string{
		"pass_at_1_lo": "27.36", "pass_at_1_hi": "79.86",
		"api_acc_lo": "31.87", "api_acc_hi": "75.29",
		"param_corr_lo": "9.22", "param_corr_hi": "20.17",
	} {
		if row[col] != want {
			t.Errorf("%s = %s, want %s", col, row[col], want)
		}
	}
}
