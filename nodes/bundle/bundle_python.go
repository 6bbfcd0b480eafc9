package bundle

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/discovery"
	"github.com/lacuna-dev/lacuna/nodes/pyenv"
	"github.com/lacuna-dev/lacuna/runners/pyapi"
	rpyenv "github.com/lacuna-dev/lacuna/runners/pyenv"
	"github.com/lacuna-dev/lacuna/runners/pypi"
	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// pySurfaceLimits bound one run of the surface helper on one package of
// v_new (the same bound as surface_diff's).
var pySurfaceLimits = sandbox.Limits{Wall: 10 * time.Minute, Memory: 8 << 30, Output: 256 << 20}

// pyExamplesVersion is the version of how a Python bundle gathers and ties
// E (beside the node's Version, which the Go and Python bundles share):
// 2 adds the sdist's tests (pySdistTests).
const pyExamplesVersion = "2"

// resolvePython pins what pyenv.Resolve pins (interpreter, installer,
// sandbox) and the digests of the three helpers the bundle runs (surface,
// M_code, examples).
func resolvePython(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	p, err := pyenv.Resolve(ctx, r, pySurfaceLimits)
	if err != nil {
		return nil, err
	}
	for k, src := range map[string]string{"helper.surface": pyapi.HelperSource(), "helper.code": pyapi.CodeHelperSource(),
		"helper.examples": pyapi.ExamplesHelperSource(), "helper.tests": pyapi.TestsHelperSource()} {
		p.Identity[k] = fmt.Sprintf("%016x", xxhash.Sum64String(src))
	}
	p.Identity["python.examples"] = pyExamplesVersion
	return p, nil
}

// droppedExample is one example not kept, in the node's "examples"
// report.
type droppedExample struct {
	API    string `json:"api,omitempty"`
	Name   string `json:"name"`
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// examplesReport is the node's "examples" report: the verdicts by status
// and every example not kept with why.
type examplesReport struct {
	Verdicts map[string]int   `json:"verdicts"`
	Dropped  []droppedExample `json:"dropped"`
}

// runPython builds the bundles of the kept Python APIs, one library
// version at a time, in v_new's environment (the cached one surface_diff
// recorded in v_new_env, rebuilt from its kept lock when it was deleted:
// pyenv.Python.Open). A library whose surface cannot be had is left out
// with the reason in the note; the others go on. An environment that
// cannot be had fails the node (pyenv.EnvGone when its lock is gone too).
func (t bundle) runPython(ctx context.Context, r nodes.Run, c *config, apis []discovery.APIRow) error {
	p, err := pyenv.From(r)
	if err != nil {
		return err
	}
	type libKey struct{ lib, version, env string }
	groups := map[libKey][]discovery.APIRow{}
	var order []libKey
	for _, a := range apis {
		if !a.Keep {
			continue
		}
		if a.VNewEnv == "" {
			return fmt.Errorf("%s: API %s has no v_new_env: the apis input is not a surface_diff with ecosystem = \"python\"", a.Library, a.ID)
		}
		k := libKey{a.Library, a.VNew, a.VNewEnv}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], a)
	}
	var out []Row
	var notes []string
	rep := examplesReport{Verdicts: map[string]int{}, Dropped: []droppedExample{}}
	for i, k := range order {
		r.Status("%s %s (library %d of %d)", k.lib, k.version, i+1, len(order))
		rows, note, err := buildPython(ctx, r, c, p, groups[k], &rep)
		if err != nil {
			return err
		}
		out = append(out, rows...)
		notes = append(notes, note)
	}
	r.Report("examples", rep)
	r.Note("%s", strings.Join(notes, "; "))
	return t.Write(r, out)
}

// buildPython builds the bundles of one library version's kept APIs. It
// returns an error when ctx ends or when v_new's environment cannot be
// had (pyenv.Python.Open: storing no bundles would be a cached empty
// result that never heals).
func buildPython(ctx context.Context, r nodes.Run, c *config, p *pyenv.Python, kept []discovery.APIRow, rep *examplesReport) ([]Row, string, error) {
	lib, version := kept[0].Library, kept[0].VNew
	failed := func(why string) ([]Row, string, error) {
		r.Logf("%s==%s: no bundles: %s", lib, version, why)
		return nil, fmt.Sprintf("%s %s: %d kept, no bundles (%s)", lib, version, len(kept), why), nil
	}
	env, err := p.Open(ctx, r, kept[0].VNewEnv, lib, version, c.APIs.Node)
	if err != nil {
		return nil, "", err
	}
	site, err := sitePackages(env)
	if err != nil {
		return failed(err.Error())
	}
	lic := pyapi.License{SPDX: "NONE"}
	if info, err := pyapi.DistInfo([]string{site}, lib, ""); err != nil {
		r.Logf("%s==%s: %v", lib, version, err)
	} else if lic, err = pyapi.ReadLicense(info); err != nil {
		r.Logf("%s==%s: %v", lib, version, err)
		lic = pyapi.License{SPDX: "NONE"}
	}

	// The surface of v_new again, for what the rows do not carry
	// (parameters, defaults, the docstring's examples, source files).
	byID := map[string]pyapi.API{}
	var pkgs []string
	seen := map[string]bool{}
	for _, a := range kept {
		top, _, _ := strings.Cut(a.Package, ".")
		if !seen[top] {
			seen[top] = true
			pkgs = append(pkgs, top)
		}
	}
	noSurface := map[string]string{}
	for _, pkg := range pkgs {
		s, err := listSurface(ctx, p, env, pkg)
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		if err != nil {
			noSurface[pkg] = err.Error()
			r.Logf("%s==%s: package %s not listed: %v", lib, version, pkg, err)
			continue
		}
		for _, a := range s.APIs {
			byID[a.ID] = a
		}
	}
	var surf []pyapi.API
	for _, a := range kept {
		if s, ok := byID[a.ID]; ok {
			surf = append(surf, s)
		}
	}

	codes, codeErrs, err := pyapi.APICode(ctx, env.Python(), []string{site}, surf, c.maxCode())
	if err != nil {
		return nil, "", err
	}
	exs, byAPI, err := pyExamples(ctx, r, env, site, pkgs, surf)
	if err != nil {
		return nil, "", err
	}
	if c.kinds()[KindTest] {
		tests, err := pySdistTests(ctx, r, p, env, lib, version, surf)
		if err != nil {
			return nil, "", err
		}
		exs = tieTests(exs, byAPI, tests, surf, c.maxMined())
	}
	verdicts, err := runExamples(ctx, r, c, p, env, exs)
	if err != nil {
		return nil, "", fmt.Errorf("%s %s: %w", lib, version, err)
	}
	statuses, checked := map[string]int{}, 0
	for i, e := range exs {
		v := verdicts[i]
		statuses[v.Status]++
		if v.OutputChecked() {
			checked++
		}
		rep.Verdicts[v.Status]++
		if !v.Valid() {
			why := v.Error
			if why == "" && v.Got != "" {
				why = "printed " + strings.TrimSpace(v.Got)
			}
			rep.Dropped = append(rep.Dropped, droppedExample{API: e.APIID, Name: e.Name, Status: v.Status, Reason: why})
		}
	}

	var rows []Row
	noCode, noExample, withValid, unlisted := 0, 0, 0, 0
	for _, a := range kept {
		s, ok := byID[a.ID]
		if !ok {
			unlisted++
			r.Logf("drop %s: not in v_new's surface now (%s)", a.ID, noSurface[strings.SplitN(a.Package, ".", 2)[0]])
			continue
		}
		row := pyBundleRow(a, s, lic)
		for _, i := range byAPI[a.ID] {
			e, v := exs[i], verdicts[i]
			file := e.File
			if file == "" {
				file = s.File
			}
			kind, out := KindExample, e.Output // a docstring's
			switch {
			case e.Origin == pyapi.OriginTest:
				// A mined program states no output: Output is what its
				// validating run printed, as a Go test's.
				kind, out = KindTest, printed(v)
			case e.Module == "":
				kind = KindReadme // a documentation file's
			}
			row.Examples = append(row.Examples, Example{Name: e.Name, Kind: kind, File: file, Code: e.Code, Output: out,
				Status: v.Status, Valid: v.Valid(), Got: v.Got, Error: v.Error, Module: e.Module, Steps: stepsJSON(e.Steps)})
			if v.Valid() {
				row.ValidExamples++
			}
		}
		if code := codes[a.ID]; code != nil {
			row.MCode, row.MCodeTruncated = code.Source, code.Truncated
			row.MCodeHelpers = append(row.MCodeHelpers, code.Helpers...)
			row.MCodeOmitted = append(row.MCodeOmitted, code.Omitted...)
		}
		if row.ValidExamples > 0 {
			withValid++
		}
		switch {
		case row.MCode == "" && orTrue(c.RequireCode):
			noCode++
			r.Logf("drop %s: no M_code: %v", a.ID, codeErrs[a.ID])
		case row.ValidExamples == 0 && orTrue(c.RequireExample):
			noExample++
		default:
			rows = append(rows, row)
		}
	}
	r.Logf("%s==%s (environment %.12s, licence %s): %d kept APIs, %d examples for them (%s); %d APIs with a validated example; dropped %d not listed, %d without M_code, %d without a valid example; %d bundles",
		lib, version, env.Digest(), lic.SPDX, len(kept), len(exs), countList(statuses), withValid, unlisted, noCode, noExample, len(rows))
	note := fmt.Sprintf("%s %s: %d kept, %d with validated examples, %d bundles", lib, version, len(kept), withValid, len(rows))
	if len(exs) > 0 {
		note += fmt.Sprintf(" (examples: %s; %d passed with output checked)", countList(statuses), checked)
	}
	return rows, note, nil
}

// pyBundleRow is the bundle of kept API a, whose v_new surface entry is s,
// without E and M_code.
func pyBundleRow(a discovery.APIRow, s pyapi.API, lic pyapi.License) Row {
	sig := pyapi.Signature(s)
	return Row{
		Library: a.Library, Ecosystem: "python", Module: a.Module, Version: a.VNew, APIID: a.ID,
		ImportPath: importModule(a.Path, s.QualName()), Qualified: a.Path,
		Kind: a.Kind, Family: a.Family, FamilyRep: a.FamilyRep,
		Signature: sig.Signature, Params: toPyParams(sig.Params), Results: toPyParams(sig.Results),
		Examples: []Example{}, MCodeHelpers: []string{}, MCodeOmitted: []string{},
		MProse: pyapi.Prose(s), MProseTier: "doc",
		License: lic.SPDX, LicenseFile: lic.File, Copyleft: lic.Copyleft, VNewEnv: a.VNewEnv,
	}
}

// stepsJSON is an example's steps as Example.Steps holds them.
func stepsJSON(steps []pyapi.Step) string {
	type step struct {
		Source string `json:"source"`
		Want   string `json:"want"`
	}
	out := make([]step, len(steps))
	for i, s := range steps {
		out[i] = step{s.Source, s.Want}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// importModule is the module a user imports the API at canonical path
// path from: the path less as many trailing components as its qualified
// name has (pyshapes.Point.dist, Point.dist → pyshapes).
func importModule(path, qualname string) string {
	parts := strings.Split(path, ".")
	n := len(parts) - len(strings.Split(qualname, "."))
	if n < 1 {
		n = 1
	}
	return strings.Join(parts[:n], ".")
}

func toPyParams(ps []pyapi.SParam) []Param {
	out := make([]Param, len(ps))
	for i, p := range ps {
		out[i] = Param{Name: p.Name, Type: p.Type, Variadic: p.Variadic, Doc: p.Doc, Kind: p.Kind}
		if p.HasDefault {
			d := p.Default
			out[i].Default = &d
		}
	}
	return out
}

// pyExamples are the examples of the kept APIs surf: each one's doctests,
// and the doctests of the documentation files shipped in its packages,
// tied to every kept API whose name they call. byAPI maps an API's ID to
// the indexes of its examples in exs.
func pyExamples(ctx context.Context, r nodes.Run, env *rpyenv.Env, site string, pkgs []string, surf []pyapi.API) (exs []pyapi.Example, byAPI map[string][]int, err error) {
	byAPI = map[string][]int{}
	docs, skipped, err := pyapi.Doctests(ctx, env.Python(), surf)
	if err != nil {
		return nil, nil, err
	}
	for name, why := range skipped {
		r.Logf("doctest of %s not parsed: %s", name, why)
	}
	for _, e := range docs {
		byAPI[e.APIID] = append(byAPI[e.APIID], len(exs))
		exs = append(exs, e)
	}
	byName := map[string][]string{}
	for _, a := range surf {
		byName[a.Name] = append(byName[a.Name], a.ID)
	}
	for _, pkg := range pkgs {
		dir := filepath.Join(site, pkg)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		files, skipped, err := pyapi.DocFileExamples(ctx, env.Python(), dir)
		if err != nil {
			return nil, nil, err
		}
		for name, why := range skipped {
			r.Logf("documentation file %s/%s not parsed: %s", pkg, name, why)
		}
		for _, e := range files {
			e.File = pkg + "/" + e.File
			var ids []string
			for _, call := range e.Calls {
				ids = append(ids, byName[call]...)
			}
			if len(ids) == 0 {
				continue
			}
			sort.Strings(ids)
			for j, id := range ids {
				if j == 0 || id != ids[j-1] {
					byAPI[id] = append(byAPI[id], len(exs))
				}
			}
			exs = append(exs, e)
		}
	}
	return exs, byAPI, nil
}

// pySdistTests are the test functions of lib==version's source
// distribution that refer to a kept API of surf by name, made standalone
// programs (pyapi.TestExamples), File relative to the sdist's root. The
// sdist is the one the index lists for the release (pypi.SdistFile),
// checked against the index's sha256 and kept in the store's "pysdist"
// cache under that digest; a release without one (wheels only) has no
// test examples, logged. An index that cannot be read, or a download that
// fails, fails the node: a bundle without the tests it would have had must
// not be cached.
func pySdistTests(ctx context.Context, r nodes.Run, p *pyenv.Python, env *rpyenv.Env, lib, version string, surf []pyapi.API) ([]pyapi.Example, error) {
	ix, err := pypi.NewIndex(p.Index)
	if err != nil {
		return nil, err
	}
	proj, err := ix.Project(ctx, lib)
	if err != nil {
		return nil, fmt.Errorf("%s==%s: source distribution: %w", lib, version, err)
	}
	f, err := pypi.SdistFile(proj, version)
	if errors.Is(err, pypi.ErrNotFound) {
		r.Logf("%s==%s: no test examples: %v", lib, version, err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data, err := cachedSdist(ctx, r, ix, f)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "lacuna-sdist-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	root, err := pypi.Unpack(f.Filename, data, tmp, 0)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var names []string
	for _, a := range surf {
		if !seen[a.Name] {
			seen[a.Name] = true
			names = append(names, a.Name)
		}
	}
	start := time.Now()
	tests, skipped, err := pyapi.TestExamples(ctx, env.Python(), root, names)
	if err != nil {
		return nil, err
	}
	r.Logf("%s==%s: %d test functions of %s (sha256 %.12s) made standalone programs in %.1fs; not standalone: %s",
		lib, version, len(tests), f.Filename, f.Hashes["sha256"], time.Since(start).Seconds(), countList(skipped))
	return tests, nil
}

// cachedSdist is file f of the index, from the store's "pysdist" cache
// when it holds it with the index's digest, else downloaded (and checked)
// into it.
func cachedSdist(ctx context.Context, r nodes.Run, ix *pypi.Index, f pypi.File) ([]byte, error) {
	dir, err := r.CacheDir("pysdist")
	if err != nil {
		return nil, err
	}
	sum := strings.ToLower(f.Hashes["sha256"])
	path := ""
	if len(sum) == 64 && !strings.ContainsAny(sum, "./") {
		path = filepath.Join(dir, sum)
		if b, err := os.ReadFile(path); err == nil && fmt.Sprintf("%x", sha256.Sum256(b)) == sum {
			return b, nil
		}
	}
	b, err := ix.Download(ctx, f)
	if err != nil || path == "" {
		return b, err
	}
	tmp, err := os.CreateTemp(dir, ".download-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	return b, os.Rename(tmp.Name(), path)
}

// tieTests appends to exs the tests that exercise a kept API of surf, and
// their indexes to byAPI: at most max per API, the shortest programs
// first. A test exercises an API whose name its program uses (calls,
// loads, reads as an attribute); for a method or property, the program
// must use its class's name too (x.sort() alone is no call of
// GenerateJsonSchema.sort).
func tieTests(exs []pyapi.Example, byAPI map[string][]int, tests []pyapi.Example, surf []pyapi.API, max int) []pyapi.Example {
	uses := make([]map[string]bool, len(tests))
	for i, t := range tests {
		uses[i] = map[string]bool{}
		for _, c := range t.Calls {
			uses[i][c] = true
		}
	}
	order := make([]int, len(tests))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool { return len(tests[order[x]].Code) < len(tests[order[y]].Code) })
	at := map[int]int{} // tests → exs
	for _, a := range surf {
		owner, _, _ := strings.Cut(a.QualName(), ".")
		member := owner != a.QualName()
		n := 0
		for _, i := range order {
			if n == max {
				break
			}
			if !uses[i][a.Name] || member && !uses[i][owner] {
				continue
			}
			k, ok := at[i]
			if !ok {
				k = len(exs)
				at[i] = k
				exs = append(exs, tests[i])
			}
			byAPI[a.ID] = append(byAPI[a.ID], k)
			n++
		}
	}
	return exs
}

// printed is what an example's steps printed, in order.
func printed(v pyapi.Verdict) string {
	var b strings.Builder
	for _, s := range v.Steps {
		b.WriteString(s.Got)
	}
	return b.String()
}

// runExamples runs each example in its own sandbox against env (read
// only), under the example timeout.
func runExamples(ctx context.Context, r nodes.Run, c *config, p *pyenv.Python, env *rpyenv.Env, exs []pyapi.Example) ([]pyapi.Verdict, error) {
	out := make([]pyapi.Verdict, len(exs))
	if len(exs) == 0 {
		return out, nil
	}
	if p.Unsandboxed != "" {
		// Examples are code from the package's documentation: they run in
		// the sandbox or not at all, and a bundle without them has no E
		// to validate, so the node fails rather than store empty bundles
		// (LACUNA_PY_UNSANDBOXED=1 covers listing the surface only).
		return nil, fmt.Errorf("its %d examples can only run in the sandbox, which cannot mount the environment here (%s); "+
			"LACUNA_PY_UNSANDBOXED=1 lets surface_diff list APIs outside it, never run examples: use a store and interpreter the sandbox can mount (e.g. LACUNA_STORE under /var/tmp, LACUNA_PYTHON=/usr/bin/python3)",
			len(exs), p.Unsandboxed)
	}
	x := &pyapi.Executor{Sandbox: p.Sandbox, Python: env.Python(), ReadOnly: p.Mounts(env),
		Limits: sandbox.Limits{Wall: c.timeout(), Memory: 4 << 30}}
	start := time.Now()
	work := nodes.WorkOf(r)
	work.Grow("examples", len(exs))
	for i, e := range exs {
		v, err := x.Run(ctx, e)
		if err != nil {
			return nil, err
		}
		out[i] = v
		work.Add(1)
	}
	r.Logf("validated %d examples in %.1fs (isolation: %s)", len(exs), time.Since(start).Seconds(), p.Sandbox.Isolation())
	return out, nil
}

// listSurface runs the surface helper on pkg in env's interpreter inside
// the sandbox, under the surface's limits.
func listSurface(ctx context.Context, p *pyenv.Python, env *rpyenv.Env, pkg string) (*pyapi.PackageSurface, error) {
	q := *p
	q.Limits = pySurfaceLimits
	res, err := q.RunPython(ctx, env, pyapi.HelperArgs(nil, pkg)...)
	if err != nil {
		return nil, err
	}
	s, err := pyapi.ParseOutput(pkg, res.Stdout)
	if err != nil {
		return nil, fmt.Errorf("%w (exit status %d, signal %q, timed out %v)", err, res.ExitCode, res.Signal, res.TimedOut)
	}
	return s, nil
}

// sitePackages is env's site-packages directory.
func sitePackages(env *rpyenv.Env) (string, error) {
	m, err := filepath.Glob(filepath.Join(env.Dir, "lib", "python*", "site-packages"))
	if err != nil || len(m) != 1 {
		return "", fmt.Errorf("environment %.12s: no single site-packages directory (%v)", env.Digest(), m)
	}
	return m[0], nil
}

// countList is "failed 1, passed 2": the counts by key, sorted.
func countList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var st []string
	for _, k := range keys {
		st = append(st, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(st, ", ")
}
