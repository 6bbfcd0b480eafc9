package metrics

import (
	"cmp"
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
//	  greedy = [node.judge.greedy]  # one T = 0 sample per task: pass@1, API_acc, Param_corr, Sem, composition
//	  judged = [node.judge.sweep]   # n samples per task at T > 0: pass@k
//	  k      = [5]                  # pass@k columns from judged (Chen et al.)
//	}
type metricsConfig struct {
	// Greedy are judge outputs (or tables with their columns, as Judged)
	// of a greedy generation: temperature 0, one sample per task. The
	// paper's pass@1 (seed §E.2: deterministic decoding) is the fraction
	// of tasks whose greedy sample passes; API_acc, Param_corr, Sem and
	// the failure composition are read from the same samples.
	Greedy []nodes.Ref `hcl:"greedy,optional"`
	// Judged are judge outputs, or any tables with their columns: task_id,
	// passed and class, and optionally kind, model, cell, library,
	// difficulty, api_called, param_corr and sem, of a sampled generation
	// (n samples per task at T > 0; the paper's n = 20, T = 0.8): pass@k
	// for each k of K. Where there is a kind column, only its "model" rows
	// count: calibration rows (the reference and the mutants, whose judge
	// the calibration report measures) are skipped, and an input of
	// nothing else is an error. Rows of class NotRun (judge.ClassNotRun)
	// count only in not_run.
	Judged []nodes.Ref `hcl:"judged,optional"`
	// K are the pass@k of the sampled runs (default [5] when Judged is
	// set): column pass_at_K, and pass_at_1_sampled for k = 1 (c/n).
	K []int `hcl:"k,optional"`
	// PassAt1 is "greedy" (default; the paper's) or "sampled": pass@1 as
	// c/n over the sampled runs (column pass_at_1_sampled), which then
	// also give API_acc, Param_corr, Sem and the composition (lacuna's
	// definition before version 6).
	PassAt1 string `hcl:"pass_at_1,optional"`
	// Composition is "pass1_failures" (default; the paper's: each class's
	// share of the pass@1 failures, columns wrong_*) or "all_samples" (each
	// class's share, OK included, of all the pass@1 samples, columns
	// samples_ok, samples_wrong_*: lacuna's definition before version 6).
	Composition string `hcl:"composition,optional"`
	// CI is "score" (default: analysis.MeanCI, a score interval that
	// keeps its coverage on small groups), "bootstrap" (analysis.Bootstrap,
	// percentile, resampling tasks Bootstrap times with Seed: narrow on
	// groups of 10-30 tasks) or "none".
	CI        string `hcl:"ci,optional"`
	Bootstrap *int   `hcl:"bootstrap,optional"`
	Seed      *int64 `hcl:"seed,optional"`
}

// Defaults and values of the metrics node.
const (
	defaultBootstrap = 1000
	defaultSeed      = 1
	ciLevel          = 0.95
	// All stands for every value of a pooled level (a row over all
	// difficulties, all libraries).
	All = "all"

	Greedy        = "greedy"
	Sampled       = "sampled"
	Pass1Failures = "pass1_failures"
	AllSamples    = "all_samples"
	CIScore       = "score"
	CIBootstrap   = "bootstrap"
	CINone        = "none"
)

func (c *metricsConfig) passAt1() string     { return cmp.Or(c.PassAt1, Greedy) }
func (c *metricsConfig) composition() string { return cmp.Or(c.Composition, Pass1Failures) }
func (c *metricsConfig) ci() string          { return cmp.Or(c.CI, CIScore) }

// ks are the pass@k of the sampled runs, in order, without repeats.
func (c *metricsConfig) ks() []int {
	if len(c.Judged) == 0 {
		return nil
	}
	if c.K == nil {
		return []int{5}
	}
	var ks []int
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
func (metricsType) Version() string { return "6" }
func (metricsType) Doc() string {
	return "NovelAPIBench's metrics as the paper defines them (seed Table 1, Appendix E) from judge outputs: one row per model × cell × " +
		"difficulty × library and pooled rows (\"all\") per model × cell, model × cell × difficulty and model × cell × library. " +
		"pass@1 is the share of tasks whose greedy (T = 0) sample passes (greedy = [...]); pass@k (k = [5]) is Chen et al.'s unbiased " +
		"estimator over the sampled runs (judged = [...]; the paper's n = 20 at T = 0.8); API_acc, Param_corr and Sem are read from the " +
		"pass@1 samples; the composition is each failure class's share of the pass@1 failures. pass_at_1 = \"sampled\" (c/n, column " +
		"pass_at_1_sampled) and composition = \"all_samples\" (columns samples_ok, samples_wrong_*) give lacuna's earlier definitions. " +
		"Every metric is a mean over the group's tasks of the task's value, so each task weighs the same, and is followed by its 95% CI " +
		"(METRIC_lo, METRIC_hi: the score interval analysis.MeanCI by default, which keeps its coverage on 10-30 tasks; ci = \"bootstrap\" " +
		"for the percentile bootstrap) and the number of tasks it averages (METRIC_n). Values are percentages rounded to 0.01. Only a " +
		"model's samples count: rows whose kind is not \"model\" are skipped, and an input holding nothing else is an error. Samples of " +
		"class NotRun (never run) are left out of every metric and counted in not_run."
}

func (metricsType) Validate(cfg any) error {
	c := cfg.(*metricsConfig)
	switch c.passAt1() {
	case Greedy:
		if len(c.Greedy) == 0 {
			return nodes.Errorf("greedy", "No greedy samples",
				"pass@1 is the paper's greedy decoding: set greedy = [node.judge.X], the judge of a generate with temperature = 0 and samples = 1, "+
					"or pass_at_1 = %q for c/n over the sampled runs.", Sampled)
		}
	case Sampled:
		if len(c.Judged) == 0 {
			return nodes.Errorf("judged", "No judge outputs", "pass_at_1 = %q needs judged = [node.judge.X], the judge of the sampled runs.", Sampled)
		}
		if len(c.Greedy) > 0 {
			return nodes.Errorf("greedy", "Greedy samples unused", "pass_at_1 = %q reads the sampled runs only: drop greedy, or drop pass_at_1 for the paper's greedy pass@1.", Sampled)
		}
	default:
		return nodes.Errorf("pass_at_1", "Invalid pass_at_1", "pass_at_1 is %q (the paper's) or %q, not %q.", Greedy, Sampled, c.PassAt1)
	}
	if c.Composition != "" && c.Composition != Pass1Failures && c.Composition != AllSamples {
		return nodes.Errorf("composition", "Invalid composition", "composition is %q (the paper's) or %q, not %q.", Pass1Failures, AllSamples, c.Composition)
	}
	if c.K != nil && len(c.Judged) == 0 {
		return nodes.Errorf("k", "No sampled runs", "pass@k reads the sampled runs: set judged = [node.judge.X].")
	}
	for _, k := range c.K {
		if k < 1 {
			return nodes.Errorf("k", "Invalid k", "pass@k needs k ≥ 1, not %d.", k)
		}
	}
	switch c.ci() {
	case CIBootstrap:
		if c.Bootstrap != nil && *c.Bootstrap < 1 {
			return nodes.Errorf("bootstrap", "Invalid bootstrap", "bootstrap is a number of resamples (at least 1; ci = %q for no CIs), not %d.", CINone, *c.Bootstrap)
		}
	case CIScore, CINone:
		if c.Bootstrap != nil {
			return nodes.Errorf("bootstrap", "Bootstrap unused", "bootstrap is the resample count of ci = %q; the default CI is the score interval (analysis.MeanCI), which keeps its coverage on small groups.", CIBootstrap)
		}
		if c.Seed != nil {
			return nodes.Errorf("seed", "Seed unused", "seed is the resampling seed of ci = %q.", CIBootstrap)
		}
	default:
		return nodes.Errorf("ci", "Invalid ci", "ci is %q (default), %q or %q, not %q.", CIScore, CIBootstrap, CINone, c.CI)
	}
	return nil
}

func (metricsType) Schema() nodes.Schema {
	return nodes.Schema{
		Dynamic: "pass_at_K (and its _lo, _hi, _n) for each k; wrong_* or samples_* per composition",
		Derive: func(cfg any, _ func(nodes.Ref) *parquet.Schema) *parquet.Schema {
			return parquet.SchemaOf(reflect.New(metricsRowType(cfg.(*metricsConfig))).Interface())
		},
	}
}

// A metrics row's columns, in order: headCols, countCols, then each of
// metricCols followed by its CI's _lo and _hi and the number of tasks it
// averages (_n). tasks counts the tasks with a sample that ran; samples
// and greedy the sampled and greedy samples that ran; failures the pass@1
// samples that failed; not_run the group's NotRun samples, which no metric
// counts.
var (
	headCols  = []string{"model", "cell", "difficulty", "library"}
	countCols = []string{"tasks", "samples", "greedy", "failures", "not_run"}
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

// unclassified is the composition's column for any other class (needs_llm
// from an old judge).
const unclassified = "unclassified"

// metricCol is one percentage column of a metrics row: its per-task
// values, whose mean is the point value and whose interval the CI (nil
// where no task has one: pass@k with a task of fewer than k samples,
// Param_corr or Sem without a defined value). The name is also the CI's
// bootstrap stream's.
type metricCol struct {
	name   string
	values func(*groupMetrics) []float64
}

// passAtName is the column of pass@k over the sampled runs.
func passAtName(k int) string {
	if k == 1 {
		return "pass_at_1_sampled"
	}
	return "pass_at_" + strconv.Itoa(k)
}

// metricCols are the percentage columns of c, in order: pass@1, the
// other pass@k, API_acc, Param_corr, Sem, the composition and
// unclassified.
func metricCols(c *metricsConfig) []metricCol {
	var cols []metricCol
	if c.passAt1() == Greedy {
		cols = append(cols, metricCol{"pass_at_1", func(m *groupMetrics) []float64 { return m.pass1 }})
	}
	ks := c.ks()
	if c.passAt1() == Sampled && !slices.Contains(ks, 1) {
		ks = append([]int{1}, ks...)
	}
	for _, k := range ks {
		cols = append(cols, metricCol{passAtName(k), func(m *groupMetrics) []float64 { return m.passAt[k] }})
	}
	cols = append(cols,
		metricCol{"api_acc", func(m *groupMetrics) []float64 { return m.api }},
		metricCol{"param_corr", func(m *groupMetrics) []float64 { return m.corr }},
		metricCol{"sem", func(m *groupMetrics) []float64 { return m.sem }})
	prefix := ""
	if c.composition() == AllSamples {
		prefix = "samples_"
	}
	for _, cc := range compositionCols {
		if cc.class == goharness.ClassOK && c.composition() == Pass1Failures {
			continue // the share of OK among failures is 0
		}
		cols = append(cols, metricCol{prefix + cc.col, func(m *groupMetrics) []float64 { return m.classes[cc.class] }})
	}
	return append(cols, metricCol{prefix + unclassified, func(m *groupMetrics) []float64 { return m.classes[unclassified] }})
}

// metricsRowType is the row struct for c, built at run time so that the
// columns keep their order (a parquet group would sort them).
func metricsRowType(c *metricsConfig) reflect.Type {
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
	for _, c := range countCols {
		add(c, i64, false)
	}
	for _, c := range metricCols(c) {
		add(c.name, pf, true)
		add(c.name+"_lo", pf, true)
		add(c.name+"_hi", pf, true)
		add(c.name+"_n", i64, false)
	}
	return reflect.StructOf(fields)
}

// judgedRow is what metrics read of a judge row.
type judgedRow struct {
	task, model, cell, library, difficulty, class string
	passed, apiCalled                             bool
	paramCorr, sem                                *float64 // nil: undefined
	greedy                                        bool     // from Greedy, not Judged
}

func (t metricsType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	var rows []judgedRow
	skipped := 0
	for _, in := range []struct {
		refs   []nodes.Ref
		greedy bool
	}{{c.Greedy, true}, {c.Judged, false}} {
		for _, ref := range in.refs {
			got, n, err := readJudged(r, ref, in.greedy)
			if err != nil {
				return err
			}
			rows = append(rows, got...)
			skipped += n
		}
	}
	rt := metricsRowType(c)
	w, err := r.Output(parquet.SchemaOf(reflect.New(rt).Interface()))
	if err != nil {
		return err
	}
	cols := metricCols(c)
	var table []tableRow
	for _, g := range groups(rows) {
		m := compute(g, c)
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
		for _, s := range []string{g.Model, g.Cell, g.Difficulty, g.Library} {
			set(s)
		}
		for _, n := range []int{m.tasks, m.samples, m.greedy, m.failures, m.notRun} {
			set(int64(n))
		}
		tr := tableRow{group: g, metrics: m, values: map[string]*float64{}}
		name := strings.Join([]string{g.Model, g.Cell, g.Difficulty, g.Library}, "\x00")
		for _, col := range cols {
			vals := col.values(&m)
			var point *float64
			if len(vals) > 0 {
				point = pct(analysis.Mean(vals))
			}
			lo, hi := ciBounds(interval(c, vals, name+"\x00"+streamName(col.name)))
			set(point)
			set(lo)
			set(hi)
			set(int64(len(vals)))
			tr.values[col.name] = point
		}
		table = append(table, tr)
		if err := w.Write(v.Addr().Interface()); err != nil {
			return err
		}
	}
	for _, line := range tableOne(table, cols) {
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
	if len(rows) == notRun {
		// An empty table is a result, but never a silent one: a weak
		// strong model makes C3 keep no task, and every node after it
		// runs on nothing.
		why := "0 rows: its judged inputs hold no samples: the filters before them kept no task (C1, C2, or C3 when its strong model solved none) or limit left none"
		if len(rows) > 0 {
			why = "0 samples: every sample is NotRun, no metric has a value"
		}
		r.Logf("warning: %s", why)
		note = "warning: " + why + "; " + note
	}
	if notRun > 0 {
		note += fmt.Sprintf("; %d samples not run (NotRun), left out", notRun)
	}
	if skipped > 0 {
		note += fmt.Sprintf("; %d calibration rows skipped", skipped)
	}
	r.Note("%s", note)
	return nil
}

// streamName is a column's bootstrap stream name: version 5's (pass@K,
// the composition without the samples_ prefix), so ci = "bootstrap" gives
// the intervals it gave.
func streamName(col string) string {
	col = strings.TrimPrefix(col, "samples_")
	if k, ok := strings.CutPrefix(col, "pass_at_"); ok {
		return "pass@" + strings.TrimSuffix(k, "_sampled")
	}
	return col
}

// interval is the CI of c's kind over a metric's per-task values; nil for
// none (ci = "none", no values). stream names the group and the metric:
// the bootstrap's draws come from a stream of its own, so adding groups or
// metrics leaves the others' intervals as they were.
func interval(c *metricsConfig, vals []float64, stream string) *analysis.CI {
	var ci analysis.CI
	ok := false
	switch c.ci() {
	case CIScore:
		ci, ok = analysis.MeanCI(vals, ciLevel)
	case CIBootstrap:
		ci, ok = analysis.Bootstrap(vals, c.bootstrap(), ciLevel, c.seed(), analysis.StreamOf(stream))
	}
	if !ok {
		return nil
	}
	return &ci
}

// readJudged reads the columns metrics need from any table that has them,
// skipping the rows whose kind (where the table has a kind column) is not
// "model"; skipped counts them. An input with rows, none of them a
// model's, is an error: metrics of calibration samples measure the
// harness and the judge, not a model.
func readJudged(r nodes.Run, ref nodes.Ref, greedy bool) (out []judgedRow, skipped int, err error) {
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
		j := judgedRow{greedy: greedy}
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

// groupMetrics is what a group's metrics are computed from: the counts
// and, for every metric, its per-task values (nil where no task has one).
type groupMetrics struct {
	tasks, samples, greedy, failures, notRun int
	pass1                                    []float64         // greedy: 1 when the task's greedy sample passes
	passAt                                   map[int][]float64 // k → the task's pass@k over the sampled runs
	api, corr, sem                           []float64
	classes                                  map[string][]float64 // class (or unclassified) → the task's share
}

// ciBounds are an interval's bounds as percentages; nil without one.
func ciBounds(c *analysis.CI) (lo, hi *float64) {
	if c == nil {
		return nil, nil
	}
	return pct(c.Lo), pct(c.Hi)
}

// compute computes a group's per-task values. Every metric is the mean
// over the group's tasks of a per-task value, so that every task weighs
// the same whatever its number of samples:
//
//   - pass@1 (greedy): the share of the task's greedy samples that pass
//     (one sample per task: 0 or 1);
//   - pass@k over the sampled runs: analysis.PassAtK(n, c, k) (k = 1:
//     c/n); no values when a task has fewer than k samples;
//   - API_acc: the share of the task's pass@1 samples (the greedy ones;
//     the sampled ones with pass_at_1 = "sampled") whose code calls the
//     target (api_called);
//   - Param_corr: the mean param_corr of the task's pass@1 samples that
//     have one (none where the reference has no call of the target to
//     compare with), over the tasks with any;
//   - Sem: the mean score of the task's pass@1 samples that have one,
//     over the tasks with any;
//   - composition "pass1_failures": over the tasks with a failing pass@1
//     sample, each class's share of the task's failing pass@1 samples
//     (with one greedy sample a task, the share of the failed tasks in
//     the class); "all_samples": over all tasks, each class's share, OK
//     included, of the task's pass@1 samples.
//
// NotRun samples are counted (notRun) and left out of all of these: a
// task, samples and greedy count only the samples that ran.
func compute(g group, c *metricsConfig) groupMetrics {
	type acc struct {
		n, c                 int // sampled runs, passing
		n1, c1, api          int // pass@1 samples, passing, calling the target
		corr, sem            float64
		corrN, semN          int
		classes, failClasses map[string]int
	}
	var order []string
	per := map[string]*acc{}
	m := groupMetrics{passAt: map[int][]float64{}, classes: map[string][]float64{}}
	pass1Greedy := c.passAt1() == Greedy
	for _, j := range g.rows {
		if j.class == judge.ClassNotRun {
			m.notRun++
			continue
		}
		a := per[j.task]
		if a == nil {
			a = &acc{classes: map[string]int{}, failClasses: map[string]int{}}
			per[j.task] = a
			order = append(order, j.task)
		}
		if j.greedy {
			m.greedy++
		} else {
			m.samples++
			a.n++
			if j.passed {
				a.c++
			}
		}
		if j.greedy != pass1Greedy {
			continue
		}
		a.n1++
		class := j.class
		if !slices.ContainsFunc(compositionCols, func(cc struct{ class, col string }) bool { return cc.class == class }) {
			class = unclassified
		}
		a.classes[class]++
		if j.passed {
			a.c1++
		} else {
			a.failClasses[class]++
			m.failures++
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
	}
	m.tasks = len(order)
	shares := func(counts map[string]int, n int) {
		for _, cc := range compositionCols {
			m.classes[cc.class] = append(m.classes[cc.class], float64(counts[cc.class])/float64(n))
		}
		m.classes[unclassified] = append(m.classes[unclassified], float64(counts[unclassified])/float64(n))
	}
	for _, id := range order {
		a := per[id]
		if a.n1 > 0 {
			n1 := float64(a.n1)
			if pass1Greedy {
				m.pass1 = append(m.pass1, float64(a.c1)/n1)
			}
			m.api = append(m.api, float64(a.api)/n1)
			if a.corrN > 0 {
				m.corr = append(m.corr, a.corr/float64(a.corrN))
			}
			if a.semN > 0 {
				m.sem = append(m.sem, a.sem/float64(a.semN))
			}
			switch {
			case c.composition() == AllSamples:
				shares(a.classes, a.n1)
			case a.n1 > a.c1:
				shares(a.failClasses, a.n1-a.c1)
			}
		}
	}
	ks := c.ks()
	if !pass1Greedy && !slices.Contains(ks, 1) {
		ks = append([]int{1}, ks...)
	}
	for _, k := range ks {
		var vals []float64
		for _, id := range order {
			if per[id].n == 0 {
				continue // a task with greedy samples only
			}
			v, ok := analysis.PassAtK(per[id].n, per[id].c, k)
			if !ok {
				vals = nil
				break
			}
			vals = append(vals, v)
		}
		m.passAt[k] = vals
	}
	return m
}

// tableRow is a group with its point values by column, for tableOne.
type tableRow struct {
	group   group
	metrics groupMetrics
	values  map[string]*float64
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
// paper's Table 1: one line per model × cell, the composition as its
// columns' percentages joined by "/".
func tableOne(rows []tableRow, cols []metricCol) []string {
	head := []string{"model", "cell", "tasks"}
	var metric, comp, comps []string
	label := map[string]string{"api_acc": "API_acc", "param_corr": "Param_corr", "sem": "Sem", "pass_at_1_sampled": "pass@1(sampled)",
		"ok": "OK", "wrong_syntax": "Syn", "wrong_api_selection": "API", "wrong_import": "Imp", "wrong_param": "Par",
		"wrong_shape_dtype": "Shp", "wrong_logic": "Log", unclassified: "Other"}
	for _, c := range cols {
		short := strings.TrimPrefix(c.name, "samples_")
		switch {
		case strings.HasPrefix(c.name, "pass_at_"), c.name == "api_acc", c.name == "param_corr", c.name == "sem":
			metric = append(metric, c.name)
			head = append(head, cmp.Or(label[c.name], strings.Replace(c.name, "pass_at_", "pass@", 1)))
		default:
			comp = append(comp, c.name)
			comps = append(comps, label[short])
		}
	}
	compHead := strings.Join(comps, "/")
	if !strings.HasPrefix(comp[0], "samples_") {
		compHead = "failures " + compHead
	}
	head = append(head, compHead, "not_run")
	lines := [][]string{head}
	f := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatFloat(*p, 'f', 1, 64)
	}
	for _, r := range rows {
		if r.group.Difficulty != All || r.group.Library != All {
			continue
		}
		line := []string{r.group.Model, r.group.Cell, strconv.Itoa(r.metrics.tasks)}
		for _, name := range metric {
			line = append(line, f(r.values[name]))
		}
		var parts []string
		for _, c := range comp {
			if p := r.values[c]; p != nil {
				parts = append(parts, strconv.Itoa(int(math.Round(*p))))
			} else {
				parts = append(parts, "-")
			}
		}
		line = append(line, strings.Join(parts, "/"), strconv.Itoa(r.metrics.notRun))
		lines = append(lines, line)
	}
	width := make([]int, len(head))
	for _, r := range lines {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var out []string
	for _, r := range lines {
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
