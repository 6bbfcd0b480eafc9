// Package bundle holds the NovelAPIBench stage 2 node: the knowledge bundle
// of every novel API (S, E, M_prose, M_code), the material every later
// stage (tasks, RAG cells, SFT data, judges) draws from.
package bundle

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/discovery"
	"github.com/lacuna-dev/lacuna/nodes/goenv"
	"github.com/lacuna-dev/lacuna/runners/goapi"
	"github.com/lacuna-dev/lacuna/runners/gotool"
	"github.com/lacuna-dev/lacuna/runners/modfetch"
)

func init() { nodes.Register(bundle{}) }

// config:
//
//	node "bundle" "lo" { apis = node.surface_diff.lo }
type config struct {
	APIs nodes.Ref `hcl:"apis"`
	// Ecosystem is "go" (default) or "python": the libraries the apis
	// input holds (a surface_diff of the same ecosystem). It decides what
	// Resolve pins: the Go toolchain and sandbox, or the interpreter,
	// installer, helpers and sandbox of nodes/pyenv.
	Ecosystem string `hcl:"ecosystem,optional"`
	// MaxCodeBytes bounds M_code, helpers included (default 8000).
	MaxCodeBytes *int `hcl:"max_code_bytes,optional"`
	// RequireCode and RequireExample are the paper's rule: an API
	// without M_code or without a valid example is dropped (both default
	// true).
	RequireCode    *bool `hcl:"require_code,optional"`
	RequireExample *bool `hcl:"require_example,optional"`
	// ExampleTimeout bounds one example test binary, or one Python
	// example's interpreter (default "60s").
	ExampleTimeout string `hcl:"example_timeout,optional"`
	// ExampleKinds are where E's examples come from (unset or empty: all
	// of them): "example" the API's own Example functions, "other_example"
	// the Example functions of other APIs that call it, "test" and
	// "benchmark" the module's test and benchmark functions that call it
	// made standalone programs, "readme" the fenced Go blocks of the
	// module's Markdown files that call it (goapi.MineTests, MineDocs).
	ExampleKinds []string `hcl:"example_kinds,optional"`
	// MaxMined bounds the examples of each kind but "example" an API
	// keeps, the shortest programs first (default 3): a prompt shows two
	// at most (generate's max_examples), and some fail validation.
	MaxMined *int `hcl:"max_mined,optional"`
}

// Kinds of E's examples (Example.Kind): where each comes from.
const (
	KindExample      = goapi.KindExample      // the API's own: a Go Example function, a Python docstring's doctest
	KindReadme       = goapi.KindReadme       // a documentation file's: a README's Go block, a Python documentation file's doctest
	KindOtherExample = goapi.KindOtherExample // another API's Example function that calls it
	KindTest         = goapi.KindTest         // a test function that calls it, made standalone (Python: from the release's sdist)
	KindBenchmark    = goapi.KindBenchmark    // a benchmark function that calls it, made standalone
)

// exampleKinds are E's kinds, in the order a bundle row lists them.
var exampleKinds = []string{KindExample, KindReadme, KindOtherExample, KindTest, KindBenchmark}

func (c *config) kinds() map[string]bool {
	out := map[string]bool{}
	if len(c.ExampleKinds) == 0 {
		for _, k := range exampleKinds {
			out[k] = true
		}
		return out
	}
	for _, k := range c.ExampleKinds {
		out[k] = true
	}
	return out
}

func (c *config) maxMined() int {
	if c.MaxMined == nil {
		return 3
	}
	return *c.MaxMined
}

func (c *config) maxCode() int {
	if c.MaxCodeBytes == nil {
		return 8000
	}
	return *c.MaxCodeBytes
}

func orTrue(b *bool) bool { return b == nil || *b }

func (c *config) timeout() time.Duration {
	d, err := time.ParseDuration(c.ExampleTimeout)
	if err != nil || d <= 0 {
		return 60 * time.Second
	}
	return d
}

// Param is a parameter or result in S. Kind and Default are Python's
// (empty and null in Go rows): Kind is how it is passed
// (positional_only, positional_or_keyword, var_positional, keyword_only,
// var_keyword; "" for a result), Default its default as written in the
// source, null when it has none.
type Param struct {
	Name     string  `parquet:"name"`
	Type     string  `parquet:"type"`
	Variadic bool    `parquet:"variadic"`
	Doc      string  `parquet:"doc"` // what the doc comment says of it ("" when nothing)
	Kind     string  `parquet:"kind"`
	Default  *string `parquet:"default,optional"`
}

// Example is one E entry: a standalone program and what validating it in
// the sandbox found.
type Example struct {
	Name string `parquet:"name"`
	// Kind is where it comes from (config.ExampleKinds): example,
	// other_example, test, benchmark, readme; File the file it is in.
	Kind      string `parquet:"kind"`
	File      string `parquet:"file"`
	Code      string `parquet:"code"`   // the standalone program ("" when it could not be made standalone)
	Output    string `parquet:"output"` // the expected output; for a mined kind (test, benchmark, readme), what the validating run printed
	Unordered bool   `parquet:"unordered"`
	Status    string `parquet:"status"` // passed, failed, no_output, compile_error, runtime_error, timeout, not_standalone; Python: crashed, not_run
	// Valid: an Example function ran in the sandbox and printed its
	// Output; a mined one ran to its end (exit 0, no panic, its checks
	// held).
	Valid bool   `parquet:"valid"`
	Got   string `parquet:"got"` // the output, when it differs
	Error string `parquet:"error"`
	// Python: Module is the module whose globals a docstring's example
	// runs in ("" for a documentation file's); Steps are its ">>>" steps
	// as JSON ([{"source", "want"}]), what the tasks node cuts from.
	Module string `parquet:"module"`
	Steps  string `parquet:"steps"`
}

// Row is one knowledge bundle. A Python row (bundle_python.go) fills the
// same columns: import_path is the public module to import the API from,
// qualified_name its canonical path (pyshapes.Point.dist), kind Python's,
// s_signature the declaration ("def perimeter(w: float, h: float) ->
// float"), s_type_params empty; its examples are doctests.
type Row struct {
	Library    string `parquet:"library"`
	Ecosystem  string `parquet:"ecosystem"` // go or python
	Module     string `parquet:"module"`    // the module of Version (a successor major version's path with follow_major)
	Version    string `parquet:"version"`
	APIID      string `parquet:"api_id"`
	ImportPath string `parquet:"import_path"`
	Qualified  string `parquet:"qualified_name"` // lo.Map, lo.Set.Add
	Kind       string `parquet:"kind"`
	Family     string `parquet:"family"`
	FamilyRep  bool   `parquet:"family_rep"`
	// S
	Signature  string  `parquet:"s_signature"`
	TypeParams string  `parquet:"s_type_params"`
	Params     []Param `parquet:"s_params,list"`
	Results    []Param `parquet:"s_results,list"`
	// E
	Examples      []Example `parquet:"e_examples,list"`
	ValidExamples int32     `parquet:"e_valid"`
	// M_prose: tier "doc" is the doc comment itself; the LLM tiers
	// (paper-grounded, source-grounded) write other tiers.
	MProse     string `parquet:"m_prose"`
	MProseTier string `parquet:"m_prose_tier"`
	// M_code
	MCode          string   `parquet:"m_code"`
	MCodeHelpers   []string `parquet:"m_code_helpers,list"`
	MCodeOmitted   []string `parquet:"m_code_omitted,list"`
	MCodeTruncated bool     `parquet:"m_code_truncated"`
	License        string   `parquet:"m_code_license"` // SPDX id of the module's licence
	LicenseFile    string   `parquet:"m_code_license_file"`
	Copyleft       bool     `parquet:"copyleft"`
	// VNewEnv is, for Python, the lock digest of v_new's environment (the
	// apis row's v_new_env): where the tasks node runs the examples.
	VNewEnv string `parquet:"v_new_env"`
}

type bundle struct{ nodes.Static[config, Row] }

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = bundle{}
	_ nodes.Documented = bundle{}
	_ nodes.Validator  = bundle{}
	_ nodes.Resolver   = bundle{}
)

func (bundle) Name() string    { return "bundle" }
func (bundle) Version() string { return "7" }
func (bundle) Doc() string {
	return "Builds the knowledge bundle of every kept API: S (signature, parameters), E (examples made standalone and " +
		"validated in the sandbox: the API's Example functions, other APIs' Example functions that call it, the module's " +
		"tests and benchmarks that call it and its README's Go blocks, each row's kind saying which), M_prose (doc tier), " +
		"M_code (source with helpers inlined) and the module's licence. " +
		"With ecosystem = \"python\": from v_new's environment, S with kinds and defaults, E the doctests of the docstring " +
		"and of the shipped documentation files and the release sdist's tests that use it (made standalone, kind test), run in the sandbox, M_code from the syntax tree, the licence from the metadata."
}

func (bundle) Validate(cfg any) error {
	c := cfg.(*config)
	if c.Ecosystem != "" && c.Ecosystem != "go" && c.Ecosystem != "python" {
		return nodes.Errorf("ecosystem", "Ecosystem not supported", "bundle handles ecosystems \"go\" (default) and \"python\", not %q.", c.Ecosystem)
	}
	if c.maxCode() < 200 {
		return nodes.Errorf("max_code_bytes", "Bound too small", "max_code_bytes must be at least 200.")
	}
	if c.ExampleTimeout != "" {
		if d, err := time.ParseDuration(c.ExampleTimeout); err != nil || d <= 0 {
			return nodes.Errorf("example_timeout", "Invalid duration", "%q is not a duration like \"60s\".", c.ExampleTimeout)
		}
	}
	for _, k := range c.ExampleKinds {
		if !slices.Contains(exampleKinds, k) {
			return nodes.Errorf("example_kinds", "Unknown example kind", "%q is not a kind of example; the kinds are %s.", k, strings.Join(exampleKinds, ", "))
		}
	}
	if c.MaxMined != nil && *c.MaxMined < 0 {
		return nodes.Errorf("max_mined", "Invalid max_mined", "max_mined must not be negative.")
	}
	return nil
}

// Resolve pins the toolchain and the sandbox the examples are validated
// with: both are in the key. For Python: the interpreter, the installer,
// the sandbox and the helpers (resolvePython).
func (bundle) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	if r.Config().(*config).Ecosystem == "python" {
		return resolvePython(ctx, r)
	}
	return goenv.Resolve(ctx, r, goenv.Build|goenv.Sandbox)
}

func (t bundle) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	in, err := r.Input(c.APIs)
	if err != nil {
		return err
	}
	apis, err := artifacts.ReadAll[discovery.APIRow](in)
	if err != nil {
		return err
	}
	if c.Ecosystem == "python" {
		return t.runPython(ctx, r, c, apis)
	}
	type modKey struct{ lib, version, hash string }
	groups := map[modKey][]discovery.APIRow{}
	var order []modKey
	for _, a := range apis {
		if !a.Keep {
			continue
		}
		if a.VNewEnv != "" {
			return fmt.Errorf("%s: API %s is a Python library's: set ecosystem = \"python\" on bundle", a.Library, a.ID)
		}
		mod := a.Module
		if mod == "" {
			mod = a.Library
		}
		k := modKey{mod, a.VNew, a.VNewHash}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], a)
	}
	g, err := goenv.From(r)
	if err != nil {
		return err
	}
	var out []Row
	var notes []string
	for _, k := range order {
		mod, err := g.Fetcher.Download(ctx, k.lib, k.version)
		if err != nil {
			return err
		}
		if k.hash != "" && mod.Hash != k.hash {
			return fmt.Errorf("%s@%s: checksum %s differs from the %s surface_diff saw", k.lib, k.version, mod.Hash, k.hash)
		}
		rows, stats, err := buildModule(ctx, r, c, g, mod, groups[k])
		if err != nil {
			return err
		}
		out = append(out, rows...)
		notes = append(notes, stats)
	}
	r.Note("%s", strings.Join(notes, "; "))
	return t.Write(r, out)
}

// buildModule builds the bundles of one module version's kept APIs.
func buildModule(ctx context.Context, r nodes.Run, c *config, g *goenv.Go, mod *modfetch.Module, apis []discovery.APIRow) ([]Row, string, error) {
	lic := goapi.DetectLicense(mod.Dir)
	pkgs := map[string]*goapi.Package{}
	loadPkg := func(importPath string) (*goapi.Package, error) {
		if p, ok := pkgs[importPath]; ok {
			return p, nil
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(importPath, mod.Path), "/")
		p, err := goapi.LoadPackage(filepath.Join(mod.Dir, filepath.FromSlash(rel)), importPath)
		pkgs[importPath] = p
		return p, err
	}
	// E: the module's examples for the kept APIs, validated together.
	byAPI, stats, err := examples(ctx, r, c, g, mod, apis)
	if err != nil {
		return nil, "", err
	}
	var rows []Row
	noCode, noExample, withValid := 0, 0, 0
	for _, a := range apis {
		p, err := loadPkg(a.Package)
		if err != nil {
			return nil, "", err
		}
		name := a.Name
		if a.Receiver != "" {
			name = a.Receiver + "." + a.Name
		}
		row := Row{
			Library: a.Library, Ecosystem: "go", Module: mod.Path, Version: a.VNew, APIID: a.ID, ImportPath: a.Package, Qualified: path.Base(p.Name) + "." + name,
			Kind: a.Kind, Family: a.Family, FamilyRep: a.FamilyRep,
			Signature: a.Signature, TypeParams: a.TypeParams,
			Params: []Param{}, Results: []Param{}, Examples: byAPI[a.ID], MCodeHelpers: []string{}, MCodeOmitted: []string{},
			MProse: a.Doc, MProseTier: "doc",
			License: lic.SPDX, LicenseFile: lic.File, Copyleft: lic.Copyleft,
		}
		if row.Examples == nil {
			row.Examples = []Example{}
		}
		if params, results, ok := p.Signature(name); ok {
			row.Params, row.Results = toParams(params), toParams(results)
		}
		if code, err := p.Code(name, c.maxCode()); err == nil {
			row.MCode, row.MCodeTruncated = code.Source, code.Truncated
			row.MCodeHelpers = append(row.MCodeHelpers, code.Helpers...)
			row.MCodeOmitted = append(row.MCodeOmitted, code.Omitted...)
		}
		for _, e := range row.Examples {
			if e.Valid {
				row.ValidExamples++
			}
		}
		if row.ValidExamples > 0 {
			withValid++
		}
		switch {
		case row.MCode == "" && orTrue(c.RequireCode):
			noCode++
			r.Logf("drop %s: no M_code", a.ID)
		case row.ValidExamples == 0 && orTrue(c.RequireExample):
			noExample++
		default:
			rows = append(rows, row)
		}
	}
	r.Logf("%s@%s (%s, licence %s): %d kept APIs, %s; %d APIs with a validated example; dropped %d without M_code, %d without a valid example; %d bundles",
		mod.Path, mod.Version, mod.Verified, lic.SPDX, len(apis), stats, withValid, noCode, noExample, len(rows))
	short := mod.Path[strings.LastIndex(mod.Path, "/")+1:]
	return rows, fmt.Sprintf("%s %s: %d kept, %d with validated examples, %d bundles", short, mod.Version, len(apis), withValid, len(rows)), nil
}

// examples finds each kept API's examples of the kinds c asks for (see
// config.ExampleKinds), validates every program once in one batch, and
// returns them by API, in exampleKinds' order; stats says how many of
// each kind, and of them valid, for the log.
func examples(ctx context.Context, r nodes.Run, c *config, g *goenv.Go, mod *modfetch.Module, apis []discovery.APIRow) (map[string][]Example, string, error) {
	kinds := c.kinds()
	all, err := goapi.Examples(mod.Dir)
	if err != nil {
		return nil, "", err
	}
	wanted := map[string]bool{}
	names := map[string]bool{}
	for _, a := range apis {
		wanted[a.ID] = true
		if a.Kind != "type" {
			names[a.Name] = true
		}
	}
	pool := all
	if kinds[goapi.KindOtherExample] || kinds[goapi.KindTest] || kinds[goapi.KindBenchmark] || kinds[goapi.KindReadme] {
		root, err := g.Toolchain.GOROOT(ctx)
		if err != nil {
			return nil, "", err
		}
		chk, err := goapi.NewChecker(mod.Dir, root)
		if err != nil {
			return nil, "", err
		}
		start := time.Now()
		if kinds[goapi.KindOtherExample] {
			for i := range all {
				if all[i].Program != "" {
					all[i].Calls, _ = chk.Calls(all[i].Program)
				}
			}
		}
		if kinds[goapi.KindTest] || kinds[goapi.KindBenchmark] {
			tests, err := goapi.MineTests(mod.Dir, names, chk)
			if err != nil {
				return nil, "", err
			}
			for _, e := range tests {
				if kinds[e.Kind] {
					pool = append(pool, e)
				}
			}
		}
		if kinds[goapi.KindReadme] {
			docs, err := goapi.MineDocs(mod.Dir, chk)
			if err != nil {
				return nil, "", err
			}
			pool = append(pool, docs...)
		}
		r.Logf("mined %d programs besides %d Example functions of %s@%s in %.1fs", len(pool)-len(all), len(all), mod.Path, mod.Version, time.Since(start).Seconds())
	}
	// Each API's examples: its own Example functions as the module has
	// them, then of every other kind the shortest programs that call it.
	type use struct {
		ex   int // into pool
		kind string
	}
	uses := map[string][]use{}
	for _, a := range apis {
		byKind := map[string][]int{}
		for i, e := range pool {
			switch {
			case i < len(all) && e.ID == a.ID:
				if kinds[goapi.KindExample] {
					byKind[goapi.KindExample] = append(byKind[goapi.KindExample], i)
				}
			case i < len(all):
				if kinds[goapi.KindOtherExample] && e.Program != "" && slices.Contains(e.Calls, a.ID) {
					byKind[goapi.KindOtherExample] = append(byKind[goapi.KindOtherExample], i)
				}
			case slices.Contains(e.Calls, a.ID):
				byKind[e.Kind] = append(byKind[e.Kind], i)
			}
		}
		for _, k := range exampleKinds {
			idx := byKind[k]
			if k != goapi.KindExample {
				sort.SliceStable(idx, func(x, y int) bool { return len(pool[idx[x]].Program) < len(pool[idx[y]].Program) })
				idx = idx[:min(len(idx), c.maxMined())]
			}
			for _, i := range idx {
				uses[a.ID] = append(uses[a.ID], use{i, k})
			}
		}
	}
	// Validate each program once.
	at := map[int]int{} // pool → validated
	var exs []goapi.Example
	for _, a := range apis {
		for _, u := range uses[a.ID] {
			if _, ok := at[u.ex]; !ok {
				at[u.ex] = len(exs)
				exs = append(exs, pool[u.ex])
			}
		}
	}
	results, err := validate(ctx, r, c, g, mod, exs)
	if err != nil {
		return nil, "", err
	}
	byAPI := map[string][]Example{}
	count, valid := map[string]int{}, map[string]int{}
	statuses := map[string]int{}
	for i := range exs {
		statuses[results[i].Status]++
	}
	for _, a := range apis {
		for _, u := range uses[a.ID] {
			e, res := pool[u.ex], results[at[u.ex]]
			out := e.Output
			if e.Mined() {
				out = res.Output
			}
			ex := Example{
				Name: e.Name, Kind: u.kind, File: e.File, Code: e.Program, Output: out, Unordered: e.Unordered,
				Status: res.Status, Valid: res.Status == gotool.ExamplePassed, Got: res.Got, Error: res.Error,
			}
			byAPI[a.ID] = append(byAPI[a.ID], ex)
			count[u.kind]++
			if ex.Valid {
				valid[u.kind]++
			}
		}
	}
	var parts []string
	for _, k := range exampleKinds {
		if count[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d (%d valid)", k, count[k], valid[k]))
		}
	}
	stats := fmt.Sprintf("%d programs validated (%s); examples for them: %s", len(exs), countList(statuses), strings.Join(parts, ", "))
	return byAPI, stats, nil
}

// validate runs the examples in the sandbox, batched into one go test.
func validate(ctx context.Context, r nodes.Run, c *config, g *goenv.Go, mod *modfetch.Module, exs []goapi.Example) ([]gotool.ExampleResult, error) {
	if len(exs) == 0 {
		return nil, nil
	}
	ws, err := g.Workspace("bundle", c.timeout())
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	start := time.Now()
	// Each example is a test of the batch: counted as go test reports it
	// (at most once: a binary that died runs its rest again), and the
	// rest (set aside as compile errors, or not standalone) at the end.
	work := nodes.WorkOf(r)
	work.Grow("examples", len(exs))
	r.Status("%s@%s: building and running %d examples", mod.Path, mod.Version, len(exs))
	counted := 0
	onTest := func(gotool.TestResult) {
		if counted < len(exs) {
			counted++
			work.Add(1)
		}
	}
	res, err := g.Toolchain.RunExamples(ctx, mod, exs, ws.BatchOptions(gotool.TestOptions{Timeout: c.timeout(), OnTest: onTest}))
	if err != nil {
		return nil, fmt.Errorf("validate examples of %s@%s: %w", mod.Path, mod.Version, err)
	}
	work.Add(len(exs) - counted)
	r.Logf("validated %d examples of %s@%s in %.1fs (isolation: %s)", len(exs), mod.Path, mod.Version, time.Since(start).Seconds(), ws.Isolation)
	return res, nil
}

func toParams(ps []goapi.Param) []Param {
	out := make([]Param, len(ps))
	for i, p := range ps {
		out[i] = Param{Name: p.Name, Type: p.Type, Variadic: p.Variadic, Doc: p.Doc}
	}
	return out
}
