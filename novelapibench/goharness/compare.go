package goharness

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/novelapibench/calls"
)

// How an expected value is compared.
const (
	// ModeExact: the same type, length, nil-ness and %#v rendering.
	ModeExact = "exact"
	// ModeUnordered: the same elements (a slice's, or the output's lines)
	// in any order: the reference's runs gave them in different orders
	// (map iteration).
	ModeUnordered = "unordered"
	// ModeShape: type, length and nil-ness only: the value holds
	// addresses, or it varied from run to run beyond order.
	ModeShape = "shape"
	// ModeType: the type only: even the length varied.
	ModeType = "type"
)

// Expected is one value a harness asserts.
type Expected struct {
	Mode  string   `json:"mode"`
	Type  string   `json:"type"`
	Len   int      `json:"len"`
	Nil   bool     `json:"nil"`
	Value string   `json:"value,omitempty"` // ModeExact
	Elems []string `json:"elems,omitempty"` // ModeUnordered, sorted
}

// OutputKey names the printed output among an Expectation's items.
const OutputKey = "output"

// Expectation is what a task's harness asserts, derived from the
// reference's observations (Derive): only what was stable across its
// runs, compared order-free where only the order varied.
type Expectation struct {
	Runs   int                 `json:"runs"` // the reference's runs it was derived from
	Probes map[string]Expected `json:"probes"`
	// Output is what the reference printed; OutputMode is ModeExact,
	// ModeUnordered (the same lines in another order) or "" (varied:
	// not asserted).
	Output     string `json:"output"`
	OutputMode string `json:"output_mode"`
	// Callbacks: the target called back into the functions it was given
	// in every run: a solution's must, at least once.
	Callbacks bool  `json:"callbacks,omitempty"`
	Leftover  int64 `json:"leftover,omitempty"`
	// Unstable names the probes (and OutputKey) not asserted because they
	// varied between the reference's runs beyond order.
	Unstable []string `json:"unstable,omitempty"`
	// Args are the argument tuples the reference's calls of the target
	// received (Observation.Args), compared as a set: under ArgsMode
	// ModeExact as rendered, ModeUnordered with slices' elements sorted
	// (the reference's varied only in order); "" asserts nothing (they
	// varied more, or there were too many). A solution's calls must
	// receive the task's data: no call on other data, none missing.
	Args     []string `json:"args,omitempty"`
	ArgsMode string   `json:"args_mode,omitempty"`
	// ArgsMore allows calls on other data besides: a whole program's calls
	// include those the task's context made, which the reference's span
	// did not (WithProbes).
	ArgsMore bool `json:"args_more,omitempty"`
	// Substituted is what the reference computed with its calls of the
	// target substituted (their results replaced by other values of the
	// same type and shape, derived from them; see Spy): a solution under
	// the same substitution must compute the same. Derived from runs
	// that may stop early (a panic on a substituted value): then only
	// what they recorded is asserted.
	Substituted *Expectation `json:"substituted,omitempty"`
	// Dependent names the asserted items (probes, OutputKey) the
	// substitution changed: the values computed through the target. A
	// task with none is dropped by C1.
	Dependent []string `json:"dependent,omitempty"`
	// Panicked: the runs (substituted ones) panicked; a solution's
	// panicking there is not a failure by itself.
	Panicked bool `json:"panicked,omitempty"`
	// Perturbed is the expectation on the task's second input, when one
	// was derived and it changes what is asserted.
	Perturbed *Expectation `json:"perturbed,omitempty"`
}

// Derive builds the expectation from a reference's record: its runs
// must all end cleanly; the substituted runs give what a solution must
// compute from substituted results, and which items depend on the target
// (dropped when they timed out); the perturbed runs give the second
// input's expectation (dropped when they fail or change nothing
// asserted).
func Derive(rec *Record) (*Expectation, error) {
	e, err := derive(rec.Normal, false)
	if err != nil {
		return nil, err
	}
	e.Runs = max(e.Runs, rec.Runs)
	if sub, err := derive(rec.Substituted, true); err == nil {
		s0 := &rec.Substituted[0]
		for _, k := range e.items() {
			// An item the substituted runs did not record (they stopped
			// before setting it) or that varied between them shows nothing.
			_, recorded := sub.Probes[k]
			if k == OutputKey {
				// What a run that stopped early printed shows nothing of
				// what the rest would have.
				recorded = sub.OutputMode != "" && sub.hasEnd()
			}
			if recorded && !e.matches(k, s0) {
				e.Dependent = append(e.Dependent, k)
			}
		}
		if len(e.Dependent) > 0 {
			e.Substituted = sub
		}
	}
	if p, err := derive(rec.Perturbed, false); err == nil {
		for _, k := range e.items() {
			if !e.matches(k, &rec.Perturbed[0]) {
				e.Perturbed = p
				break
			}
		}
	}
	return e, nil
}

// derive is the expectation of a variant's runs. Loose runs (the
// substituted ones) may panic, stop early or not call the target: what
// they recorded is what is asserted.
func derive(runs []Observation, loose bool) (*Expectation, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("no run")
	}
	for k, o := range runs {
		switch {
		case o.TimedOut:
			return nil, fmt.Errorf("run %d of %d timed out", k+1, len(runs))
		case o.Lost != "":
			return nil, fmt.Errorf("run %d of %d: %s", k+1, len(runs), firstLine(o.Lost))
		case loose:
		case o.Panic != "":
			return nil, fmt.Errorf("run %d of %d panicked: %s", k+1, len(runs), firstLine(o.Panic))
		case o.Direct == 0:
			return nil, fmt.Errorf("run %d of %d never calls the target from the span", k+1, len(runs))
		}
	}
	e := &Expectation{Runs: len(runs), Probes: map[string]Expected{}, Callbacks: !loose}
	for name := range runs[0].Probes {
		vals := make([]Probe, 0, len(runs))
		for _, o := range runs {
			if p, ok := o.Probes[name]; ok {
				vals = append(vals, p)
			}
		}
		if x, ok := expectedOf(vals, len(runs)); ok {
			e.Probes[name] = x
		} else {
			e.Unstable = append(e.Unstable, name)
		}
	}
	e.Output, e.OutputMode = runs[0].Output, ModeExact
	for _, o := range runs[1:] {
		switch {
		case o.Output == e.Output:
		case slices.Equal(sortedLines(o.Output), sortedLines(e.Output)):
			e.OutputMode = ModeUnordered
		default:
			e.OutputMode = ""
		}
		if e.OutputMode == "" {
			e.Unstable = append(e.Unstable, OutputKey)
			break
		}
	}
	for _, o := range runs {
		e.Panicked = e.Panicked || o.Panic != ""
		e.Callbacks = e.Callbacks && o.Callbacks > 0
		e.Leftover = max(e.Leftover, o.Leftover)
	}
	e.Args, e.ArgsMode = runs[0].Args, ModeExact
	for _, o := range runs {
		switch {
		case o.ArgsCut || len(o.Args) == 0:
			e.ArgsMode = ""
		case e.ArgsMode == ModeExact && slices.Equal(o.Args, e.Args):
		case slices.Equal(o.ArgsFree, runs[0].ArgsFree):
			e.ArgsMode = ModeUnordered
		default:
			e.ArgsMode = ""
		}
		if e.ArgsMode == "" {
			e.Args = nil
			break
		}
	}
	if e.ArgsMode == ModeUnordered {
		e.Args = runs[0].ArgsFree
	}
	sort.Strings(e.Unstable)
	return e, nil
}

// expectedOf is what can be asserted of a probe's values over n runs.
func expectedOf(vals []Probe, n int) (Expected, bool) {
	if len(vals) != n {
		return Expected{}, false // set in some runs only
	}
	v0 := vals[0]
	x := Expected{Mode: ModeExact, Type: v0.Type, Len: v0.Len, Nil: v0.Nil, Value: v0.Value}
	for _, v := range vals {
		switch {
		case v.Type != x.Type:
			return Expected{}, false
		case v.Len != x.Len || v.Nil != x.Nil:
			x.Mode = ModeType
		case x.Mode == ModeType:
		case v.Addr:
			x.Mode = ModeShape
		case x.Mode == ModeExact && v.Value != x.Value:
			x.Mode = ModeUnordered
		}
	}
	if x.Mode == ModeUnordered {
		x.Elems = sortedCopy(v0.Elems)
		for _, v := range vals {
			if v.Elems == nil || !slices.Equal(sortedCopy(v.Elems), x.Elems) {
				x.Mode, x.Elems = ModeShape, nil
				break
			}
		}
	}
	if x.Mode != ModeExact {
		x.Value = ""
	}
	if x.Mode == ModeType {
		x.Len, x.Nil = 0, false
	}
	return x, true
}

// hasEnd says the reference's runs reached the end marker (the context's
// own code may return before it).
func (e *Expectation) hasEnd() bool {
	_, ok := e.Probes[EndProbe]
	return ok
}

// items are the asserted items: probe names, then OutputKey.
func (e *Expectation) items() []string {
	ks := make([]string, 0, len(e.Probes)+1)
	for k := range e.Probes {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	if e.OutputMode != "" {
		ks = append(ks, OutputKey)
	}
	return ks
}

// matches reports whether o meets the expectation on item k.
func (e *Expectation) matches(k string, o *Observation) bool {
	if k == OutputKey {
		switch e.OutputMode {
		case ModeExact:
			return o.Output == e.Output
		case ModeUnordered:
			return slices.Equal(sortedLines(o.Output), sortedLines(e.Output))
		}
		return true
	}
	p, ok := o.Probes[k]
	x := e.Probes[k]
	p = x.view(p)
	return ok && x.shapeMatches(p) && x.valueMatches(p)
}

// view is what of p is compared with x: what p points to when x is its
// element type (the solution built a *T where the reference has a T).
func (x Expected) view(p Probe) Probe {
	if p.Type != x.Type && p.Type == "*"+x.Type && p.Elem != nil {
		return *p.Elem
	}
	return p
}

func (x Expected) shapeMatches(p Probe) bool {
	if x.Mode == ModeType {
		return p.Type == x.Type
	}
	return p.Type == x.Type && p.Len == x.Len && p.Nil == x.Nil
}

func (x Expected) valueMatches(p Probe) bool {
	switch x.Mode {
	case ModeExact:
		return p.Value == x.Value
	case ModeUnordered:
		return p.Elems != nil && slices.Equal(sortedCopy(p.Elems), x.Elems)
	}
	return true
}

// WithProbes is the expectation for a whole-program solution, which
// rewrote the context: the named probes (those its main declares), each
// as the reference had it at the end of main (where a whole program's
// probes are read), and the end marker, on the task's data, under
// substitution and on the second input (which only a program that begins
// with the task's context gets: Task.WithContext).
func (e *Expectation) WithProbes(names []string) *Expectation {
	if e == nil {
		return nil
	}
	c := *e
	c.Probes = map[string]Expected{}
	from := map[string]string{OutputKey: OutputKey} // item in e → item in c
	for _, n := range append(names, EndProbe) {
		for _, k := range []string{n, EndPrefix + n} {
			if p, ok := e.Probes[k]; ok {
				c.Probes[n] = p
				from[k] = n
			}
		}
	}
	for k, n := range from {
		if k == n && from[EndPrefix+n] != "" {
			delete(from, k) // its value at the end of main replaces it
		}
	}
	c.Dependent = nil
	for _, k := range e.Dependent {
		if n, ok := from[k]; ok {
			c.Dependent = append(c.Dependent, n)
		}
	}
	c.ArgsMore = true
	c.Substituted = e.Substituted.WithProbes(names)
	c.Perturbed = e.Perturbed.WithProbes(names)
	return &c
}

// SubstitutionFor sets, for a whole-program solution of a task with
// expectation e, which of its calls of the target are substituted: those
// on the data the reference's span passed (its calls include those the
// task's context made, which the reference's substituted run left
// alone). Nothing changes when e asserts no arguments.
func (e *Expectation) SubstitutionFor(u *UnitSpec) {
	if e == nil || e.ArgsMode == "" {
		return
	}
	u.SubstituteOnly, u.SubstituteFree = append([]string{}, e.Args...), e.ArgsMode == ModeUnordered
}

// Failure is one reason a solution fails its harness.
type Failure struct {
	// Layer is runtime, spy, structural, comparative, behavioural,
	// attribution or perturbed.
	Layer   string `json:"layer"`
	Message string `json:"message"`
}

// Check compares a solution's record with the task's expectation, outside
// the process that ran it. No failures means the solution passes.
func Check(e *Expectation, rec *Record) []Failure {
	var fs []Failure
	add := func(layer, format string, args ...any) {
		fs = append(fs, Failure{layer, fmt.Sprintf(format, args...)})
	}
	if len(rec.Normal) == 0 {
		add("runtime", "the scenario did not run")
		return fs
	}
	o := &rec.Normal[0]
	fs = append(fs, e.check(o, "", "")...)
	if o.Direct == 0 {
		add("spy", "the solution's code never calls the target (%d calls from elsewhere, %d from the library itself)", o.Context, o.Indirect)
	}
	if e.Callbacks && o.Callbacks == 0 {
		add("behavioural", "the target never called back into the functions the solution gave it (the reference's did in every run)")
	}
	if len(fs) > 0 {
		return fs
	}
	// Attribution: with the target's results substituted, the solution
	// must compute what the reference computed from them.
	if e.Substituted != nil {
		if len(rec.Substituted) == 0 {
			add("attribution", "the scenario did not run with the target's results substituted")
		} else {
			fs = append(fs, e.Substituted.check(&rec.Substituted[0], "with the target's results replaced by other values of the same shape: ", "attribution")...)
		}
	}
	if e.Perturbed != nil {
		if len(rec.Perturbed) == 0 {
			add("perturbed", "the scenario on the second input did not run")
		} else {
			fs = append(fs, e.Perturbed.check(&rec.Perturbed[0], "on the second input: ", "perturbed")...)
		}
	}
	return fs
}

// check is the runtime, structural, comparative and input layers for
// one observation; prefix says which variant, reported in its own layer
// (the normal one: "", "").
func (e *Expectation) check(o *Observation, prefix, variant string) []Failure {
	var fs []Failure
	add := func(layer, format string, args ...any) {
		if variant != "" {
			layer = variant
		}
		fs = append(fs, Failure{layer, prefix + fmt.Sprintf(format, args...)})
	}
	if o.Lost != "" {
		add("runtime", "%s", o.Lost)
		return fs
	}
	if o.TimedOut {
		add("runtime", "timed out")
		return fs
	}
	if o.Panic != "" && !e.Panicked {
		add("runtime", "panic: %s", o.Panic)
	}
	if o.Leftover > e.Leftover {
		add("runtime", "the solution left %d goroutines running after the scenario (the reference left %d)", o.Leftover, e.Leftover)
	}
	if msg := e.checkArgs(o); msg != "" {
		add("input", "%s", msg)
	}
	if _, ended := o.Probes[EndProbe]; !ended && e.hasEnd() {
		// What it did not compute follows from that.
		if o.Panic == "" {
			add("runtime", "the code after the solution did not run to its end")
		}
		return fs
	}
	for _, name := range e.items() {
		if name == OutputKey {
			if !e.matches(name, o) {
				add("comparative", "printed %q, want %q%s", cut(o.Output, 400), cut(e.Output, 400), map[bool]string{true: " (lines in any order)"}[e.OutputMode == ModeUnordered])
			}
			continue
		}
		w := e.Probes[name]
		g, ok := o.Probes[name]
		g = w.view(g)
		switch {
		case !ok:
			add("structural", "%s was not set", name)
		case !w.shapeMatches(g):
			add("structural", "%s is %s (len %d, nil %v), want %s (len %d, nil %v)", name, g.Type, g.Len, g.Nil, w.Type, w.Len, w.Nil)
		case !w.valueMatches(g):
			want := w.Value
			if w.Mode == ModeUnordered {
				want = "the elements " + strings.Join(w.Elems, ", ") + " in any order"
			}
			add("comparative", "%s = %s, want %s", name, cut(g.Value, 400), cut(want, 400))
		}
	}
	return fs
}

// checkArgs compares the arguments of a solution's calls of the target
// with the reference's ("" when they agree or nothing is asserted).
func (e *Expectation) checkArgs(o *Observation) string {
	if e.ArgsMode == "" || o.Direct == 0 {
		return ""
	}
	got := o.Args
	if e.ArgsMode == ModeUnordered {
		got = o.ArgsFree
	}
	if o.ArgsCut {
		return fmt.Sprintf("the target was called with more than 64 different arguments or 10,000 times; the reference's calls received %s", calls.Show(e.Args))
	}
	return calls.Diff(e.Args, got, e.ArgsMore)
}

// Layers lists the layers of failures, first seen first.
func Layers(fs []Failure) []string {
	out := []string{}
	for _, f := range fs {
		if !slices.Contains(out, f.Layer) {
			out = append(out, f.Layer)
		}
	}
	return out
}

func sortedLines(s string) []string {
	return sortedCopy(strings.Split(strings.TrimRight(s, "\n"), "\n"))
}

func sortedCopy(s []string) []string {
	if s == nil {
		return nil
	}
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
