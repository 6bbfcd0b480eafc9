package metrics

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/lacuna-dev/lacuna/analysis"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/judge"
	"github.com/lacuna-dev/lacuna/novelapibench/goharness"
	"github.com/parquet-go/parquet-go"
)

func init() { nodes.Register(metricsType{}) }

// metricsConfig:
//
//	node "metrics" "x" {
//	  judged    = [node.judge.a, node.judge.b]
//	  k         = [1, 5]   # pass@k columns (pass@1 is always there)
//	  bootstrap = 1000     # resamples for the CIs (0: none)
//	  seed      = 1
//	}
type metricsConfig struct {
	// Judged are judge outputs, or any tables with their columns: task_id,
	// passed and class, and optionally kind, model, cell, library,
	// difficulty, api_called, param_corr and sem. Where there is a kind
	// column, only its "model" rows count: calibration rows (the reference
	// and the mutants, whose judge the calibration report measures) are
	// skipped, and an input of nothing else is an error. Rows of class
	// NotRun (judge.ClassNotRun) count only in not_run.
	Judged    []nodes.Ref `hcl:"judged"`
	K         []int       `hcl:"k,optional"`
	Bootstrap *int        `hcl:"bootstrap,optional"`
	Seed      *int64      `hcl:"seed,optional"`
}

// Defaults of the metrics node.
const (
	defaultBootstrap = 1000
	defaultSeed      = 1
	ciLevel          = 0.95
	// All stands for every value of a pooled level (a row over all
	// difficulties, all libraries).
	All = "all"
)

func (c *metricsConfig) ks() []int {
	ks := []int{1}
	if c.K == nil {
		ks = append(ks, 5)
	}
	for _, k := range c.K {
		if !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	return ks
}

func (c *metricsConfig) bootstrap() int {
	if c.Bootstrap == nil {
		return defaultBootstrap
	}
	return *c.Bootstrap
}

func (c *metricsConfig) seed() uint64 {
	if c.Seed == nil {
		return defaultSeed
	}
	return uint64(*c.Seed)
}

type metricsType struct{ nodes.Dynamic[metricsConfig] }

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = metricsType{}
	_ nodes.Documented = metricsType{}
	_ nodes.Validator  = metricsType{}
)

func (metricsType) Name() string    { return "metrics" }
func (metricsType) Version() string { return "5" }
func (metricsType) Doc() string {
	return "NovelAPIBench's metrics (seed Table 1, Appendix E) from judge outputs: one row per model × cell × difficulty × library " +
		"and pooled rows (\"all\") per model × cell, model × cell × difficulty and model × cell × library, with tasks, samples, pass@1, " +
		"pass@k (Chen et al.'s unbiased estimator), API_acc, Param_corr, Sem, the failure composition over OK and the six classes, " +
		"every metric followed by its 95% percentile bootstrap CI resampling tasks (seeded; columns METRIC_lo and METRIC_hi, null " +
		"where the metric is). Values are percentages rounded to 0.01; every metric is a mean over the group's tasks of the task's " +
		"value, so each task weighs the same. Only a model's samples count: rows whose kind is not \"model\" (the calibration " +
		"samples a judge also classifies) are skipped, and an input holding nothing else is an error. Samples of class NotRun (a Python " +
		"sample solve never ran: the task has no harness, or the sandbox cannot mount its environment) are left out of every metric, tasks " +
		"and samples included, and counted in not_run; a group of only such samples has its metrics null."
}

func (metricsType) Validate(cfg any) error {
	c := cfg.(*metricsConfig)
	if len(c.Judged) == 0 {
		return nodes.Errorf("judged", "No judge outputs", "judged needs at least one node, e.g. [node.judge.qwen].")
	}
	for _, k := range c.K {
		if k < 1 {
			return nodes.Errorf("k", "Invalid k", "pass@k needs k ≥ 1, not %d.", k)
		}
	}
	if c.Bootstrap != nil && *c.Bootstrap < 0 {
		return nodes.Errorf("bootstrap", "Invalid bootstrap", "bootstrap is a number of resamples (0 for no CIs), not %d.", *c.Bootstrap)
	}
	return nil
}

func (metricsType) Schema() nodes.Schema {
	return nodes.Schema{
		Dynamic: "pass_at_K, pass_at_K_lo and pass_at_K_hi columns for each k",
		Derive: func(cfg any, _ func(nodes.Ref) *parquet.Schema) *parquet.Schema {
			return parquet.SchemaOf(reflect.New(metricsRowType(cfg.(*metricsConfig).ks())).Interface())
		},
	}
}

// A metrics row's columns, in order: headCols, countCol, then each of
// metricCols followed by its CI's _lo and _hi. tasks and samples are those
// the metrics are computed over; not_run counts the group's NotRun
// samples, which no metric counts (a task with only such samples is not
// among tasks).
var (
	headCols = []string{"model", "cell", "difficulty", "library"}
	countCol = []string{"tasks", "samples", "not_run"}
)

// compositionCols name the composition columns of OK and the six failure
// classes, in the paper's order.
var compositionCols = []struct{ class, col string }{
	{goharness.ClassOK, "ok"},
	{goharness.ClassWrongSyntax, "wrong_syntax"},
	{goharness.ClassWrongAPISelection, "wrong_api_selection"},
	{goharness.ClassWrongImport, "wrong_import"},
	{goharness.ClassWrongParam, "wrong_param"},
	{goharness.ClassWrongShapeDtype, "wrong_shape_dtype"},
	{goharness.ClassWrongLogic, "wrong_logic"},
}

// metricCol is one percentage column of a metrics row: its point value
// and its CI, each nil where undefined (pass@k with a task of fewer than
// k samples, Param_corr or Sem without a defined value, a CI without
// resamples). The name is also the CI's bootstrap stream's, except
// pass@K's ("pass@K").
type metricCol struct {
	name  string
	value func(*groupMetrics) (*float64, *analysis.CI)
}

// metricCols are the percentage columns for these ks, in order: pass@1,
// the other pass@k, API_acc, Param_corr, Sem, the composition and
// unclassified.
func metricCols(ks []int) []metricCol {
	var cols []metricCol
	for _, k := range ks {
		cols = append(cols, metricCol{"pass_at_" + strconv.Itoa(k), func(m *groupMetrics) (*float64, *analysis.CI) { return m.PassAt[k], m.PassAtCI[k] }})
	}
	cols = append(cols,
		metricCol{"api_acc", func(m *groupMetrics) (*float64, *analysis.CI) { return m.APIAcc, m.APIAccCI }},
		metricCol{"param_corr", func(m *groupMetrics) (*float64, *analysis.CI) { return m.ParamCorr, m.ParamCorrCI }},
		metricCol{"sem", func(m *groupMetrics) (*float64, *analysis.CI) { return m.Sem, m.SemCI }})
	for _, c := range compositionCols {
		cols = append(cols, metricCol{c.col, func(m *groupMetrics) (*float64, *analysis.CI) {
			if m.Tasks == 0 {
				return nil, nil // only NotRun samples: no composition
			}
			return pct(m.Composition[c.class]), m.CompositionCI[c.class]
		}})
	}
	return append(cols, metricCol{"unclassified", func(m *groupMetrics) (*float64, *analysis.CI) {
		if m.Tasks == 0 {
			return nil, nil
		}
		return pct(m.Unclassified), m.UnclassifiedCI
	}})
}

// metricsRowType is the row struct for these ks, built at run time so that
// the columns keep their order (a parquet group would sort them).
func metricsRowType(ks []int) reflect.Type {
	var fields []reflect.StructField
	add := func(name string, t reflect.Type, opt bool) {
		tag := name
		if opt {
			tag += ",optional"
		}
		fields = append(fields, reflect.StructField{Name: "F" + strconv.Itoa(len(fields)), Type: t, Tag: reflect.StructTag(`parquet:"` + tag + `"`)})
	}
	str, i64, pf := reflect.TypeOf(""), reflect.TypeOf(int64(0)), reflect.TypeOf((*float64)(nil))
	for _, c := range headCols {
		add(c, str, false)
	}
	for _, c := range countCol {
		add(c, i64, false)
	}
	for _, c := range metricCols(ks) {
		add(c.name, pf, true)
		add(c.name+"_lo", pf, true)
		add(c.name+"_hi", pf, true)
	}
	return reflect.StructOf(fields)
}

// judgedRow is what metrics read of a judge row.
type judgedRow struct {
	task, model, cell, library, difficulty, class string
	passed, apiCalled                             bool
	paramCorr, sem                                *float64 // nil: undefined
}

func (t metricsType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	var rows []judgedRow
	skipped := 0
	for _, ref := range c.Judged {
		in, n, err := readJudged(r, ref)
		if err != nil {
			return err
		}
		rows = append(rows, in...)
		skipped += n
	}
	groups := groups(rows)
	ks := c.ks()
	rt := metricsRowType(ks)
	w, err := r.Output(parquet.SchemaOf(reflect.New(rt).Interface()))
	if err != nil {
		return err
	}
	cols := metricCols(ks)
	var table []groupMetrics
	for _, g := range groups {
		m := compute(g, ks, c.bootstrap(), c.seed())
		table = append(table, m)
		v := reflect.New(rt).Elem()
		i := 0
		set := func(x any) {
			if p, ok := x.(*float64); ok && p == nil {
				i++
				return
			}
			v.Field(i).Set(reflect.ValueOf(x))
			i++
		}
		for _, s := range []string{m.Model, m.Cell, m.Difficulty, m.Library} {
			set(s)
		}
		set(int64(m.Tasks))
		set(int64(m.Samples))
		set(int64(m.NotRun))
		for _, c := range cols {
			p, ci := c.value(&m)
			lo, hi := ciBounds(ci)
			set(p)
			set(lo)
			set(hi)
		}
		if err := w.Write(v.Addr().Interface()); err != nil {
			return err
		}
	}
	for _, line := range tableOne(table, ks) {
		r.Logf("%s", line)
	}
	notRun := 0
	pairs := map[string]bool{} // model × cell pairs with a sample that ran
	for _, j := range rows {
		if j.class == judge.ClassNotRun {
			notRun++
			continue
		}
		pairs[j.model+"\x00"+j.cell] = true
	}
	note := fmt.Sprintf("%d groups over %d samples, %d model × cell pairs", len(table), len(rows)-notRun, len(pairs))
	if notRun > 0 {
		note += fmt.Sprintf("; %d samples not run (NotRun), left out", notRun)
	}
	if skipped > 0 {
		note += fmt.Sprintf("; %d calibration rows skipped", skipped)
	}
	r.Note("%s", note)
	return nil
}

// readJudged reads the columns metrics need from any table that has them,
// skipping the rows whose kind (where the table has a kind column) is not
// "model"; skipped counts them. An input with rows, none of them a
// model's, is an error: metrics of calibration samples measure the
// harness and the judge, not a model.
func readJudged(r nodes.Run, ref nodes.Ref) (out []judgedRow, skipped int, err error) {
	in, err := r.Input(ref)
	if err != nil {
		return nil, 0, err
	}
	_, hasKind := in.Schema().Lookup("kind")
	for i, row := range in.Rows() {
		var v any
		if err := in.Schema().Reconstruct(&v, row); err != nil {
			return nil, 0, err
		}
		m, _ := v.(map[string]any)
		if kind, _ := m["kind"].(string); hasKind && kind != "model" {
			skipped++
			continue
		}
		j := judgedRow{}
		var ok1, ok2, ok3 bool
		j.task, ok1 = m["task_id"].(string)
		j.passed, ok2 = m["passed"].(bool)
		j.class, ok3 = m["class"].(string)
		if !ok1 || !ok2 || !ok3 {
			return nil, 0, fmt.Errorf("%s row %d: needs task_id (string), passed (bool) and class (string)", ref, i)
		}
		j.model, _ = m["model"].(string)
		j.cell, _ = m["cell"].(string)
		j.library, _ = m["library"].(string)
		j.difficulty, _ = m["difficulty"].(string)
		j.apiCalled, _ = m["api_called"].(bool)
		if x, ok := number(m["param_corr"]); ok {
			j.paramCorr = &x
		}
		if x, ok := number(m["sem"]); ok {
			j.sem = &x
		}
		out = append(out, j)
	}
	if len(out) == 0 && skipped > 0 {
		return nil, 0, fmt.Errorf("%s: its %d rows are calibration samples (kind reference or a mutant), none a model's (kind model): "+
			"metrics measure a model's samples; the judge's calibration report measures these", ref, skipped)
	}
	return out, skipped, nil
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case *float64:
		if x != nil {
			return *x, true
		}
	}
	return 0, false
}

// group is the judge rows of one model × cell × difficulty × library,
// where difficulty, library or both may be All.
type group struct {
	Model, Cell, Difficulty, Library string
	rows                             []judgedRow
}

// groups makes the full groups and the pooled ones, ordered by model and
// cell as first seen, then the pooled row (all, all), the difficulties
// (easy, medium, hard, then others) over all libraries, the libraries over
// all difficulties, and the full groups.
func groups(rows []judgedRow) []group {
	type key struct{ model, cell, diff, lib string }
	idx := map[key]int{}
	var gs []group
	add := func(k key, j judgedRow) {
		i, ok := idx[k]
		if !ok {
			i = len(gs)
			idx[k] = i
			gs = append(gs, group{Model: k.model, Cell: k.cell, Difficulty: k.diff, Library: k.lib})
		}
		gs[i].rows = append(gs[i].rows, j)
	}
	var models, cells []string
	for _, j := range rows {
		if !slices.Contains(models, j.model) {
			models = append(models, j.model)
		}
		if !slices.Contains(cells, j.cell) {
			cells = append(cells, j.cell)
		}
		add(key{j.model, j.cell, All, All}, j)
		add(key{j.model, j.cell, j.difficulty, All}, j)
		add(key{j.model, j.cell, All, j.library}, j)
		add(key{j.model, j.cell, j.difficulty, j.library}, j)
	}
	level := func(d string) int {
		if i := slices.Index([]string{goharness.Easy, goharness.Medium, goharness.Hard}, d); i >= 0 {
			return i
		}
		return 3
	}
	rank := func(g group) int {
		switch {
		case g.Difficulty == All && g.Library == All:
			return 0
		case g.Library == All:
			return 1
		case g.Difficulty == All:
			return 2
		}
		return 3
	}
	slices.SortStableFunc(gs, func(a, b group) int {
		if d := slices.Index(models, a.Model) - slices.Index(models, b.Model); d != 0 {
			return d
		}
		if d := slices.Index(cells, a.Cell) - slices.Index(cells, b.Cell); d != 0 {
			return d
		}
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		if d := level(a.Difficulty) - level(b.Difficulty); d != 0 {
			return d
		}
		if c := strings.Compare(a.Difficulty, b.Difficulty); c != 0 {
			return c
		}
		return strings.Compare(a.Library, b.Library)
	})
	// A level with only one value pools to the same rows: keep them
	// anyway, so every table has the same shape.
	return gs
}

// groupMetrics is one group's row. Percentages are rounded to 0.01; nil is
// undefined.
type groupMetrics struct {
	Model, Cell, Difficulty, Library string
	Tasks, Samples, NotRun           int
	PassAt                           map[int]*float64
	PassAtCI                         map[int]*analysis.CI
	APIAcc, ParamCorr, Sem           *float64
	APIAccCI, ParamCorrCI, SemCI     *analysis.CI
	// Composition is the mean over tasks of the fraction of each class
	// (OK and the six) among the task's samples; Unclassified of anything
	// else (needs_llm from an old judge).
	Composition    map[string]float64
	CompositionCI  map[string]*analysis.CI
	Unclassified   float64
	UnclassifiedCI *analysis.CI
}

// ciBounds are an interval's bounds as percentages; nil without one.
func ciBounds(c *analysis.CI) (lo, hi *float64) {
	if c == nil {
		return nil, nil
	}
	return pct(c.Lo), pct(c.Hi)
}

// compute computes a group's metrics. Every metric is the mean over the
// group's tasks of a per-task value, so that every task weighs the same
// whatever its number of samples (with equal samples per task, as in a
// sweep, the same as over samples):
//
//   - pass@k: the task's analysis.PassAtK(n, c, k); null when a task has
//     fewer than k samples;
//   - API_acc: the fraction of the task's samples whose code calls the
//     target (api_called);
//   - Param_corr: the mean param_corr of the task's samples that have
//     one (null where the reference has no call of the target to compare
//     with), over the tasks with any; null when none has;
//   - Sem: the mean score of the task's samples that have one, over the
//     tasks with any; null when none has;
//   - composition: the fraction of the task's samples in each class.
//
// NotRun samples are counted (NotRun) and left out of all of these: a
// task, and Samples, count only the samples that ran.
//
// Every metric's CI is analysis.Bootstrap over the per-task values its
// point estimate averages (Param_corr's and Sem's: the tasks with a
// defined value) with b resamples, seed and a stream derived from the
// group's name and the metric's (adding groups or metrics leaves the
// others' CIs as they were); nil where the metric is.
func compute(g group, ks []int, b int, seed uint64) groupMetrics {
	type acc struct {
		n, c, api, corrN, semN int
		corr, sem              float64
		classes                map[string]int
	}
	var order []string
	per := map[string]*acc{}
	notRun := 0
	for _, j := range g.rows {
		if j.class == judge.ClassNotRun {
			notRun++
			continue
		}
		a := per[j.task]
		if a == nil {
			a = &acc{classes: map[string]int{}}
			per[j.task] = a
			order = append(order, j.task)
		}
		a.n++
		if j.passed {
			a.c++
		}
		if j.apiCalled {
			a.api++
		}
		if j.paramCorr != nil {
			a.corr += *j.paramCorr
			a.corrN++
		}
		if j.sem != nil {
			a.sem += *j.sem
			a.semN++
		}
		a.classes[j.class]++
	}
	m := groupMetrics{Model: g.Model, Cell: g.Cell, Difficulty: g.Difficulty, Library: g.Library, Tasks: len(order), Samples: len(g.rows) - notRun, NotRun: notRun,
		PassAt: map[int]*float64{}, Composition: map[string]float64{}}
	var pass1, api, corr, sems, unclassified []float64
	classes := map[string][]float64{}
	for _, id := range order {
		a := per[id]
		n := float64(a.n)
		pass1 = append(pass1, float64(a.c)/n)
		api = append(api, float64(a.api)/n)
		if a.corrN > 0 {
			corr = append(corr, a.corr/float64(a.corrN))
		}
		if a.semN > 0 {
			sems = append(sems, a.sem/float64(a.semN))
		}
		other := a.n
		for _, c := range compositionCols {
			m.Composition[c.class] += float64(a.classes[c.class]) / n / float64(len(order))
			classes[c.class] = append(classes[c.class], float64(a.classes[c.class])/n)
			other -= a.classes[c.class]
		}
		m.Unclassified += float64(other) / n / float64(len(order))
		unclassified = append(unclassified, float64(other)/n)
	}
	name := strings.Join([]string{g.Model, g.Cell, g.Difficulty, g.Library}, "\x00")
	ci := func(vals []float64, metric string) *analysis.CI {
		c, ok := analysis.Bootstrap(vals, b, ciLevel, seed, analysis.StreamOf(name+"\x00"+metric))
		if !ok {
			return nil
		}
		return &c
	}
	m.PassAtCI = map[int]*analysis.CI{1: ci(pass1, "pass@1")}
	for _, k := range ks {
		var vals []float64
		for _, id := range order {
			v, ok := analysis.PassAtK(per[id].n, per[id].c, k)
			if !ok {
				vals = nil
				break
			}
			vals = append(vals, v)
		}
		if vals != nil {
			m.PassAt[k] = pct(analysis.Mean(vals))
			if k > 1 {
				m.PassAtCI[k] = ci(vals, "pass@"+strconv.Itoa(k))
			}
		}
	}
	m.APIAcc, m.ParamCorr = pct(analysis.Mean(api)), pct(analysis.Mean(corr))
	if len(sems) > 0 {
		m.Sem = pct(analysis.Mean(sems))
	}
	m.APIAccCI, m.ParamCorrCI, m.SemCI = ci(api, "api_acc"), ci(corr, "param_corr"), ci(sems, "sem")
	m.CompositionCI = map[string]*analysis.CI{}
	for _, c := range compositionCols {
		m.CompositionCI[c.class] = ci(classes[c.class], c.col)
	}
	m.UnclassifiedCI = ci(unclassified, "unclassified")
	return m
}

// pct is a fraction as a percentage rounded to 0.01; nil for NaN.
func pct(x float64) *float64 {
	if math.IsNaN(x) {
		return nil
	}
	v := math.Round(x*10000) / 100
	return &v
}

// tableOne renders the pooled rows (difficulty and library all) like the
// paper's Table 1: one line per model × cell.
func tableOne(ms []groupMetrics, ks []int) []string {
	head := []string{"model", "cell", "tasks", "n", "pass@1"}
	for _, k := range ks[1:] {
		head = append(head, "pass@"+strconv.Itoa(k))
	}
	head = append(head, "API_acc", "Param_corr", "Sem", "OK/Syn/API/Imp/Par/Shp/Log", "not_run")
	rows := [][]string{head}
	f := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatFloat(*p, 'f', 1, 64)
	}
	for _, m := range ms {
		if m.Difficulty != All || m.Library != All {
			continue
		}
		line := []string{m.Model, m.Cell, strconv.Itoa(m.Tasks), strconv.Itoa(m.Samples), f(m.PassAt[1])}
		for _, k := range ks[1:] {
			line = append(line, f(m.PassAt[k]))
		}
		var comp []string
		for _, c := range compositionCols {
			comp = append(comp, strconv.Itoa(int(math.Round(100*m.Composition[c.class]))))
		}
		if m.Tasks == 0 {
			comp = []string{"-"}
		}
		line = append(line, f(m.APIAcc), f(m.ParamCorr), f(m.Sem), strings.Join(comp, "/"), strconv.Itoa(m.NotRun))
		rows = append(rows, line)
	}
	width := make([]int, len(head))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var out []string
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			fmt.Fprintf(&b, "%-*s", width[i], c)
		}
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	return out
}
