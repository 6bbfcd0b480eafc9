package discovery

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/pyenv"
	"github.com/lacuna-dev/lacuna/runners/pyapi"
	rpyenv "github.com/lacuna-dev/lacuna/runners/pyenv"
	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// pySurfaceLimits bound one run of the surface helper on one package: the
// whole import of a large library (every module, each bounded by the
// helper's own module timeout) and its JSON.
var pySurfaceLimits = sandbox.Limits{Wall: 10 * time.Minute, Memory: 8 << 30, Output: 256 << 20}

// resolvePythonSurface pins what pyenv.Resolve pins (the interpreter, the
// installer, the index without its credentials, the sandbox) and the
// helper's source. The rows also depend on the two environments' locks
// (v_new_env, v_new_hash), which the key cannot hold: they follow from
// the releases in the input (version_resolve's rows), and nodes.Resolve
// gives no access to inputs (the engine calls Resolve when it plans too,
// before upstream has run). The key holds the input's digest instead, and
// each lock is resolved as of its release's day from the pinned index,
// interpreter and installer; an index that later changes the files of a
// past day changes the locks without changing the key (the rows' v_new_env
// shows it).
func resolvePythonSurface(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	p, err := pyenv.Resolve(ctx, r, pySurfaceLimits)
	if err != nil {
		return nil, err
	}
	p.Identity["helper"] = fmt.Sprintf("%016x", xxhash.Sum64String(pyapi.HelperSource()))
	return p, nil
}

// runPython diffs each Python library of versions. A library whose
// environments cannot be made for a reason that would recur, or a package
// the helper cannot list, is one row with the reason; the other libraries
// and packages go on. A transient failure fails the node (diffPython).
func (t surfaceDiff) runPython(ctx context.Context, r nodes.Run, c *surfaceDiffConfig, versions []VersionRow) error {
	p, err := pyenv.From(r)
	if err != nil {
		return err
	}
	var rows []APIRow
	var notes []string
	envs := map[string]string{}
	for i, v := range versions {
		if v.Ecosystem != "python" {
			return fmt.Errorf("%s: ecosystem %q in the input of a surface_diff with ecosystem = \"python\"", v.Library, v.Ecosystem)
		}
		lib, note, err := diffPython(ctx, r, p, v, c.minDocWords(), envs)
		if err != nil {
			return err
		}
		rows = append(rows, lib...)
		notes = append(notes, note)
		r.Progress(int64(i+1), int64(len(versions)))
	}
	r.Report("environments", envs)
	r.Note("%s", strings.Join(notes, "; "))
	return t.Write(r, rows)
}

// diffPython is one library's rows and note. It returns an error when
// ctx ends, and when a release's environment could not be made for a
// transient reason (rpyenv.ErrUnavailable: the index or file host
// unreachable, timed out or answering 5xx or 429, the installer killed):
// the node then fails and nothing is stored, so a re-run retries. A
// failure that would recur (no installable file, a build that fails, a
// 404, a dependency conflict) is a row, stored with the rest.
func diffPython(ctx context.Context, r nodes.Run, p *pyenv.Python, v VersionRow, minWords int, envs map[string]string) ([]APIRow, string, error) {
	failed := func(kind, pkg, why string) APIRow {
		return APIRow{Library: v.Library, Module: v.VNewModule, VOld: v.VOld, VNew: v.VNew, Package: pkg, Kind: kind, Reasons: why}
	}
	var env [2]*rpyenv.Env
	for i, rel := range []struct {
		version string
		time    time.Time
	}{{v.VOld, v.VOldTime}, {v.VNew, v.VNewTime}} {
		start := time.Now()
		e, err := p.Environment(ctx, v.Library, rel.version, rel.time)
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		if errors.Is(err, rpyenv.ErrUnavailable) {
			return nil, "", fmt.Errorf("no environment for %s==%s: %w", v.Library, rel.version, err)
		}
		if err != nil {
			r.Logf("%s %s: no environment: %v", v.Library, rel.version, err)
			return []APIRow{failed("library", "", fmt.Sprintf("no environment for %s==%s: %v", v.Library, rel.version, err))},
				fmt.Sprintf("%s %s→%s: no environment for %s", v.Library, v.VOld, v.VNew, rel.version), nil
		}
		r.Logf("%s==%s: environment %s (%d distributions, %s, as of %s) in %s", v.Library, rel.version, e.Digest()[:12],
			len(e.Lock.Packages), e.Lock.Installer, rpyenv.ExcludeNewerFor(rel.time).Format(time.RFC3339), time.Since(start).Round(time.Millisecond))
		envs[v.Library+"=="+rel.version] = e.Digest()
		env[i] = e
	}
	var rows []APIRow
	var surf [2]*pyapi.PackageSurface
	pkgs := map[string]bool{}
	var lists [2][]string
	for i, e := range env {
		ps, err := topLevel(e, v.Library)
		if err != nil {
			return []APIRow{failed("library", "", err.Error())}, fmt.Sprintf("%s %s→%s: %v", v.Library, v.VOld, v.VNew, err), nil
		}
		lists[i] = ps
		for _, pkg := range ps {
			pkgs[pkg] = true
		}
	}
	// A package whose helper fails in either version is left out of both
	// surfaces: its row says why.
	byVersion := [2]map[string]*pyapi.PackageSurface{{}, {}}
	names := make([]string, 0, len(pkgs))
	for pkg := range pkgs {
		names = append(names, pkg)
	}
	sort.Strings(names)
	skip := map[string]bool{}
	for i, e := range env {
		for _, pkg := range lists[i] {
			var siblings []string
			for _, o := range lists[i] {
				if o != pkg {
					siblings = append(siblings, o)
				}
			}
			s, err := surface(ctx, p, e, pkg, siblings)
			if ctx.Err() != nil {
				return nil, "", ctx.Err()
			}
			if err != nil {
				ver := []string{v.VOld, v.VNew}[i]
				r.Logf("%s==%s: package %s not listed: %v", v.Library, ver, pkg, err)
				rows = append(rows, failed("package", pkg, fmt.Sprintf("package %s of %s==%s could not be listed: %v", pkg, v.Library, ver, err)))
				skip[pkg] = true
				continue
			}
			for _, m := range s.ImportErrors() {
				r.Logf("%s==%s: module %s fails to import: %s", v.Library, []string{v.VOld, v.VNew}[i], m.Name, m.Error)
			}
			byVersion[i][pkg] = s
		}
	}
	for i := range surf {
		var parts []*pyapi.PackageSurface
		for _, pkg := range names {
			if s, ok := byVersion[i][pkg]; ok && !skip[pkg] {
				parts = append(parts, s)
			}
		}
		surf[i] = mergeSurfaces(parts)
	}
	hash := "sha256:" + strings.Join(rootHashes(env[1].Lock, v.Library), ",sha256:")
	changes := pyapi.Diff(surf[0], surf[1])
	novel, kept := 0, 0
	lib := make([]APIRow, len(changes))
	for j, ch := range changes {
		lib[j] = pyRow(v, hash, env[1].Digest(), ch, pyapi.Filter(ch, minWords))
		if lib[j].Novel {
			novel++
		}
		if lib[j].Keep {
			kept++
		}
	}
	r.Logf("%s %s → %s: %d APIs in %s, %d in %s (packages %s); %d novel, %d kept",
		v.Library, v.VOld, v.VNew, len(surf[0].APIs), v.VOld, len(surf[1].APIs), v.VNew, strings.Join(names, ", "), novel, kept)
	logDrops(r, lib)
	rows = append(rows, lib...)
	note := fmt.Sprintf("%s %s→%s: %d APIs, %d novel, %d kept", v.Library, v.VOld, v.VNew, len(surf[1].APIs), novel, kept)
	if len(skip) > 0 {
		note += fmt.Sprintf(" (%d packages not listed)", len(skip))
	}
	return rows, note, nil
}

// surface runs the helper on pkg in env's interpreter inside the sandbox;
// siblings are the distribution's other top-level packages, whose objects
// pkg re-exports count as the distribution's (attrs.define is attr's).
func surface(ctx context.Context, p *pyenv.Python, env *rpyenv.Env, pkg string, siblings []string) (*pyapi.PackageSurface, error) {
	res, err := p.RunPython(ctx, env, pyapi.HelperArgs(nil, pkg, pyapi.WithSiblings(siblings...))...)
	if err != nil {
		return nil, err
	}
	s, err := pyapi.ParseOutput(pkg, res.Stdout)
	var unfinished *pyapi.UnfinishedError
	if errors.As(err, &unfinished) {
		switch {
		case res.TimedOut:
			unfinished.Cause = fmt.Errorf("killed after %s (the sandbox's wall clock)", p.Limits.Wall)
		case res.Signal != "":
			unfinished.Cause = fmt.Errorf("killed by %s", res.Signal)
		case res.ExitCode != 0:
			unfinished.Cause = fmt.Errorf("exit status %d", res.ExitCode)
		}
		unfinished.Stderr = lastLines(string(res.Stderr), 5)
	}
	return s, err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// mergeSurfaces joins the surfaces of one distribution's packages: an
// object two of them export (attrs re-exporting attr's) is one API with
// the union of its paths.
func mergeSurfaces(parts []*pyapi.PackageSurface) *pyapi.PackageSurface {
	out := &pyapi.PackageSurface{}
	at := map[string]int{}
	for _, s := range parts {
		out.Modules = append(out.Modules, s.Modules...)
		for _, a := range s.APIs {
			i, ok := at[a.ID]
			if !ok {
				at[a.ID] = len(out.APIs)
				out.APIs = append(out.APIs, a)
				continue
			}
			m := &out.APIs[i]
			m.Paths = union(m.Paths, a.Paths)
			m.UnlistedPaths = union(m.UnlistedPaths, a.UnlistedPaths)
			m.Path, m.Private = pyapi.Canonical(*m)
		}
	}
	sort.Slice(out.APIs, func(i, j int) bool { return out.APIs[i].ID < out.APIs[j].ID })
	return out
}

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// rootHashes are the sha256 of the files the lock installs the release
// from.
func rootHashes(l *rpyenv.Lock, name string) []string {
	for _, p := range l.Packages {
		if p.Name == rpyenv.Normalize(name) {
			hs := append([]string(nil), p.SHA256...)
			sort.Strings(hs)
			return hs
		}
	}
	return nil
}

// topLevel lists the importable top-level packages and modules the
// distribution name installed in env: its top_level.txt when it has one,
// else the first components of the files its RECORD lists. Private names
// (a leading underscore) are left out.
func topLevel(env *rpyenv.Env, name string) ([]string, error) {
	infos, err := filepath.Glob(filepath.Join(env.Dir, "lib", "python*", "site-packages", "*.dist-info"))
	if err != nil {
		return nil, err
	}
	var info string
	for _, d := range infos {
		dist, _, _ := strings.Cut(strings.TrimSuffix(filepath.Base(d), ".dist-info"), "-")
		if rpyenv.Normalize(dist) == rpyenv.Normalize(name) {
			info = d
			break
		}
	}
	if info == "" {
		return nil, fmt.Errorf("%s: no .dist-info in its environment", name)
	}
	found := map[string]bool{}
	if f, err := os.Open(filepath.Join(info, "top_level.txt")); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" && !strings.Contains(l, "/") {
				found[l] = true
			}
		}
		f.Close()
	} else {
		f, err := os.Open(filepath.Join(info, "RECORD"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer f.Close()
		rd := csv.NewReader(f)
		rd.FieldsPerRecord = -1
		for {
			rec, err := rd.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: RECORD: %w", name, err)
			}
			first, rest, nested := strings.Cut(rec[0], "/")
			switch {
			case strings.HasSuffix(first, ".dist-info") || strings.HasSuffix(first, ".data") || first == ".." || first == "__pycache__":
			case nested && strings.HasSuffix(rest, ".py"):
				found[first] = true
			case !nested && strings.HasSuffix(first, ".py"):
				found[strings.TrimSuffix(first, ".py")] = true
			}
		}
	}
	var out []string
	for p := range found {
		if !strings.HasPrefix(p, "_") {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: installs no public Python package or module", name)
	}
	return out, nil
}

// pyRow maps a Python change onto the shared row: api_id is the
// identity (defining module:qualname), package the defining module,
// receiver the enclosing class of a method, kind Python's (function,
// class, method, classmethod, staticmethod, property); internal is
// "private", no_body "no retrievable Python source"; doc is the docstring
// the thin-doc filter judged (its own, else one inherited from the
// library). Generated, alias and alias_of do not apply (aliases are paths
// of one API); each API is its own family.
func pyRow(v VersionRow, hash, env string, ch pyapi.Change, f pyapi.Filters) APIRow {
	a := ch.API
	doc := a.Doc
	if doc == "" && !a.StdlibDoc {
		doc = a.InheritedDoc
	}
	receiver := ""
	if q := a.QualName(); strings.Contains(q, ".") && a.Kind != "class" && a.Kind != "function" {
		receiver = q[:strings.LastIndex(q, ".")]
	}
	row := APIRow{
		Library: v.Library, Module: v.VNewModule, VOld: v.VOld, VNew: v.VNew, VNewHash: hash,
		ID: a.ID, Package: a.Module(), Receiver: receiver, Name: a.Name, Kind: a.Kind,
		Signature: a.Signature, Doc: doc, File: a.File, Line: int32(a.Line),
		Novel: ch.Novel, SameAs: ch.SameAs, How: ch.How,
		Internal: f.Private, Deprecated: f.Deprecated, NoBody: f.NoSource, ThinDoc: f.ThinDoc,
		Family: a.ID, FamilyKnown: !ch.Novel, FamilyRep: f.Keep,
		Keep: f.Keep, Reasons: strings.Join(f.Reasons, "; "),
		Path: a.Path, Paths: strings.Join(a.Paths, " "), OldPath: ch.OldPath, OldSignature: ch.OldSignature,
		StdlibDoc: f.StdlibDoc, ImportError: f.ImportError, Uncertain: f.Uncertain, VNewEnv: env,
	}
	if ch.Novel {
		row.FamilyNovel = 1
	}
	return row
}
