// Package discovery holds NovelAPIBench stage 1 and 2 node types: which
// library versions a model can and cannot know (version_resolve), and what
// changed between them.
package discovery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/goenv"
	"github.com/lacuna-dev/lacuna/nodes/pyenv"
	"github.com/lacuna-dev/lacuna/runners/modfetch"
	"github.com/lacuna-dev/lacuna/runners/pypi"
	"github.com/zclconf/go-cty/cty"
)

func init() { nodes.Register(versionResolve{}) }

// versionResolveConfig:
//
//	node "version_resolve" "lo" { library = library.lo  cutoff = model.qwen.cutoff }
type versionResolveConfig struct {
	Library cty.Value `hcl:"library"`
	// Cutoff is the model's training cutoff, YYYY-MM-DD; releases during
	// that day count as known.
	Cutoff string `hcl:"cutoff"`
	// New is "latest" (default) or "first_after".
	New        string `hcl:"new,optional"`
	Prerelease bool   `hcl:"prerelease,optional"`
	// Retracted keeps retracted Go versions (Go only).
	Retracted bool `hcl:"retracted,optional"`
	// FollowMajor lets v_new come from the successor major version, a
	// module of its own in Go (example.com/m/v2). Go only.
	FollowMajor bool `hcl:"follow_major,optional"`
	// Yanked keeps Python releases whose files are all yanked (PEP 592).
	// Python only.
	Yanked bool `hcl:"yanked,optional"`
}

// VersionRow is version_resolve's output: one row per library. It holds no
// cutoff on purpose: two models whose cutoffs pick the same versions then
// produce the same artifact, and nothing below version_resolve recomputes.
// The cutoff is in the action's provenance (lacuna show).
type VersionRow struct {
	Library   string    `parquet:"library"`
	Ecosystem string    `parquet:"ecosystem"`
	VOld      string    `parquet:"v_old"`
	VOldTime  time.Time `parquet:"v_old_time,timestamp(millisecond)"`
	VNew      string    `parquet:"v_new"`
	VNewTime  time.Time `parquet:"v_new_time,timestamp(millisecond)"`
	// VNewModule is what v_new belongs to: for Go the module, the library
	// or its successor major version (library/v2) with follow_major; for
	// Python the project's normalised name (PEP 503).
	VNewModule string `parquet:"v_new_module"`
	Why        string `parquet:"why"`
}

type versionResolve struct {
	nodes.Static[versionResolveConfig, VersionRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = versionResolve{}
	_ nodes.Documented = versionResolve{}
	_ nodes.Validator  = versionResolve{}
	_ nodes.Resolver   = versionResolve{}
)

func (versionResolve) Name() string    { return "version_resolve" }
func (versionResolve) Version() string { return "2" }
func (versionResolve) Doc() string {
	return "Picks v_old (newest release at or before the cutoff) and v_new (newest, or first, release after it) " +
		"through the Go module proxy (GOPROXY) or, for ecosystem \"python\", the PEP 691 index pip uses " +
		"(PIP_INDEX_URL, UV_INDEX_URL, UV_DEFAULT_INDEX, else pypi.org) dated by PEP 700 upload times; " +
		"pre-releases and retracted (Go) or yanked (Python) versions are skipped unless asked."
}

type library struct{ name, ecosystem string }

func libraryOf(v cty.Value) (library, error) {
	if v.IsNull() || !v.Type().IsObjectType() || !v.Type().HasAttribute("name") || !v.Type().HasAttribute("ecosystem") {
		return library{}, nodes.Errorf("library", "Not a library", "library must refer to a library block: library = library.NAME.")
	}
	name, eco := v.GetAttr("name"), v.GetAttr("ecosystem")
	if name.IsNull() || eco.IsNull() || name.Type() != cty.String || eco.Type() != cty.String {
		return library{}, nodes.Errorf("library", "Incomplete library", "the library needs a name and an ecosystem.")
	}
	return library{name.AsString(), eco.AsString()}, nil
}

func cutoffOf(s string) (time.Time, error) {
	d, err := time.Parse("2006-01-02", s)
	if err != nil {
		return time.Time{}, nodes.Errorf("cutoff", "Invalid cutoff", "%q is not a date like 2024-06-01.", s)
	}
	return d.Add(24*time.Hour - time.Nanosecond), nil
}

func (versionResolve) Validate(cfg any) error {
	c := cfg.(*versionResolveConfig)
	lib, err := libraryOf(c.Library)
	if err != nil {
		return err
	}
	switch lib.ecosystem {
	case "go":
		if c.Yanked {
			return nodes.Errorf("yanked", "Not for Go", "yanked applies to Python releases; Go modules retract versions (retracted = true).")
		}
	case "python":
		if c.Retracted {
			return nodes.Errorf("retracted", "Not for Python", "Python releases are yanked, not retracted: use yanked = true.")
		}
		if c.FollowMajor {
			return nodes.Errorf("follow_major", "Not for Python", "follow_major is for Go, whose major versions are modules of their own; a Python project's major versions are releases of the same project.")
		}
		if _, err := pypi.Normalize(lib.name); err != nil {
			return nodes.Errorf("library", "Invalid Python project name", "%v.", err)
		}
	default:
		return nodes.Errorf("library", "Ecosystem not supported yet", "version_resolve handles ecosystems \"go\" and \"python\"; %q arrives in a later release.", lib.ecosystem)
	}
	if c.New != "" && c.New != "latest" && c.New != "first_after" {
		return nodes.Errorf("new", "Invalid choice of v_new", "new must be \"latest\" or \"first_after\", not %q.", c.New)
	}
	_, err = cutoffOf(c.Cutoff)
	return err
}

// Resolve lists the module's versions through the proxy (and, with
// follow_major, its successors'), once: the lists are pinned. A release
// published after the last run changes the key (v_new may move), an
// unchanged list keeps it cached, and Run resolves from exactly these
// lists. Release times and go.mod files are immutable per version, so Run
// may fetch those. A Python library's project page is pinned instead
// (resolvePython).
func (versionResolve) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	c := r.Config().(*versionResolveConfig)
	lib, err := libraryOf(c.Library)
	if err != nil {
		return nil, err
	}
	if lib.ecosystem == "python" {
		return resolvePython(ctx, r, lib)
	}
	p, err := modfetch.NewProxy(goenv.Env(r))
	if err != nil {
		return nil, err
	}
	src := &pinnedLists{Source: p, lists: map[string][]string{}}
	vs, err := p.List(ctx, lib.name)
	if err != nil {
		return nil, fmt.Errorf("list versions of %s: %w", lib.name, err)
	}
	src.lists[lib.name] = vs
	id := map[string]string{"versions": fmt.Sprintf("%016x", xxhash.Sum64String(strings.Join(vs, "\n")))}
	if c.FollowMajor {
		// The successors' lists too: a v2 release moves v_new.
		var all []string
		for next := modfetch.NextMajor(lib.name); next != ""; next = modfetch.NextMajor(next) {
			svs, err := p.List(ctx, next)
			if errors.Is(err, modfetch.ErrNotFound) {
				src.missing = append(src.missing, next)
				break
			}
			if err != nil {
				return nil, fmt.Errorf("list versions of %s: %w", next, err)
			}
			src.lists[next] = svs
			all = append(all, next+"@"+strings.Join(svs, ","))
		}
		id["successors"] = fmt.Sprintf("%016x", xxhash.Sum64String(strings.Join(all, "\n")))
	}
	return &nodes.Pinned{Identity: id, Value: src}, nil
}

// pinnedLists is the proxy as Resolve saw it: List answers from the lists
// Resolve fetched (the ones in the key), never the network.
type pinnedLists struct {
	modfetch.Source
	lists   map[string][]string
	missing []string // modules Resolve found absent
}

func (p *pinnedLists) List(_ context.Context, mod string) ([]string, error) {
	if vs, ok := p.lists[mod]; ok {
		return vs, nil
	}
	for _, m := range p.missing {
		if m == mod {
			return nil, fmt.Errorf("%s: %w", mod, modfetch.ErrNotFound)
		}
	}
	return nil, fmt.Errorf("version list of %s was not pinned when the node was resolved", mod)
}

func (t versionResolve) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	lib, err := libraryOf(c.Library)
	if err != nil {
		return err
	}
	cutoff, err := cutoffOf(c.Cutoff)
	if err != nil {
		return err
	}
	if lib.ecosystem == "python" {
		return t.runPython(ctx, r, c, lib, cutoff)
	}
	p, ok := r.Pinned().(*pinnedLists)
	if !ok {
		return fmt.Errorf("%s: the version lists were not resolved", r.Node())
	}
	res, err := modfetch.Resolve(ctx, p, lib.name, cutoff, modfetch.ResolveOptions{New: c.New, Prerelease: c.Prerelease, Retracted: c.Retracted, FollowMajor: c.FollowMajor})
	if err != nil {
		return err
	}
	r.Logf("%s at cutoff %s: %s (%d .info requests)", lib.name, c.Cutoff, res.Why, res.Requests)
	newName := res.New.Version
	if res.NewModule != lib.name {
		newName = res.NewModule + "@" + newName
	}
	r.Note("%s %s (%s) → %s (%s)", short(lib.name), res.Old.Version, res.Old.Time.UTC().Format("2006-01-02"), newName, res.New.Time.UTC().Format("2006-01-02"))
	return t.Write(r, []VersionRow{{
		Library: lib.name, Ecosystem: lib.ecosystem,
		VOld: res.Old.Version, VOldTime: res.Old.Time.UTC(),
		VNew: res.New.Version, VNewTime: res.New.Time.UTC(), VNewModule: res.NewModule,
		Why: res.Why,
	}})
}

// pinnedProject is the project page as Resolve read it: Run resolves from
// it, never from a second fetch.
type pinnedProject struct {
	index   *pypi.Index
	project *pypi.Project
}

// resolvePython reads the project's page once. The key holds a digest of
// every release as it dates it (version, first upload, file count,
// yanked, why it is unusable): a new release, a yank or a late file
// changes the key; an unchanged page keeps it cached. The index URL is
// not in the key: two indexes that date the same releases alike give the
// same rows.
func resolvePython(ctx context.Context, r nodes.Resolve, lib library) (*nodes.Pinned, error) {
	idx, err := pypi.NewIndex(pyenv.Index(r.Getenv))
	if err != nil {
		return nil, err
	}
	p, err := idx.Project(ctx, lib.name)
	if err != nil {
		return nil, fmt.Errorf("list releases of %s: %w", lib.name, err)
	}
	var b strings.Builder
	for _, rel := range pypi.Releases(p) {
		fmt.Fprintf(&b, "%s|%s|%d|%v|%s\n", rel.Listed, rel.Time.UTC().Format(time.RFC3339Nano), rel.Files, rel.Yanked, rel.Skip)
	}
	id := map[string]string{"releases": fmt.Sprintf("%016x", xxhash.Sum64String(b.String()))}
	return &nodes.Pinned{Identity: id, Value: &pinnedProject{index: idx, project: p}}, nil
}

func (t versionResolve) runPython(ctx context.Context, r nodes.Run, c *versionResolveConfig, lib library, cutoff time.Time) error {
	pp, ok := r.Pinned().(*pinnedProject)
	if !ok {
		return fmt.Errorf("%s: the project page was not resolved", r.Node())
	}
	res, err := pypi.ResolveProject(pp.project, cutoff, pypi.ResolveOptions{New: c.New, Prerelease: c.Prerelease, Yanked: c.Yanked})
	if err != nil {
		return err
	}
	r.Logf("%s at cutoff %s on %s: %s", lib.name, c.Cutoff, pp.index.URL(), res.Why)
	// The JSON API is a second account of the same uploads; it informs
	// the log, not the row (the key does not cover it).
	switch d, err := pp.index.CrossCheck(ctx, pp.project); {
	case err != nil:
		r.Logf("cross-check with the JSON API not done: %v", err)
	case len(d) == 0:
		r.Logf("the JSON API agrees on all %d releases", len(res.Releases))
	default:
		for i, x := range d {
			if i == 10 {
				r.Logf("… %d more disagreements with the JSON API", len(d)-10)
				break
			}
			r.Logf("JSON API disagrees on %s: %s", x.Version, x.What)
			if x.Version == res.Old.Listed || x.Version == res.New.Listed {
				r.Note("%s %s: the JSON API disagrees (%s)", lib.name, x.Version, x.What)
			}
		}
	}
	r.Note("%s %s (%s) → %s (%s)", lib.name, res.Old.Listed, res.Old.Time.UTC().Format("2006-01-02"), res.New.Listed, res.New.Time.UTC().Format("2006-01-02"))
	return t.Write(r, []VersionRow{{
		Library: lib.name, Ecosystem: lib.ecosystem,
		VOld: res.Old.Listed, VOldTime: res.Old.Time.UTC(),
		VNew: res.New.Listed, VNewTime: res.New.Time.UTC(), VNewModule: res.Project,
		Why: res.Why,
	}})
}
