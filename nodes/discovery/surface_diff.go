package discovery

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/goenv"
	"github.com/lacuna-dev/lacuna/runners/goapi"
)

func init() { nodes.Register(surfaceDiff{}) }

// surfaceDiffConfig:
//
//	node "surface_diff" "lo" { versions = node.version_resolve.lo }
type surfaceDiffConfig struct {
	Versions nodes.Ref `hcl:"versions"`
	// Ecosystem is "go" (default) or "python": the libraries the versions
	// input holds. It decides what Resolve pins (the Go module cache, or
	// the interpreter, installer and sandbox of nodes/pyenv).
	Ecosystem string `hcl:"ecosystem,optional"`
	// MinDocWords: a doc comment of fewer words is "thin" (default 5).
	MinDocWords *int `hcl:"min_doc_words,optional"`
}

func (c *surfaceDiffConfig) minDocWords() int {
	if c.MinDocWords == nil {
		return 5
	}
	return *c.MinDocWords
}

// APIRow is one exported API of v_new, with whether it is novel and why it
// would be filtered out. Keep is true when it is novel and no filter
// applies; Reasons lists every reason it is not kept.
//
// Go and Python rows share the columns where the concepts agree (see
// pyRow for the mapping); the columns after Reasons are Python's and empty
// in Go rows. A Python library, or one of its packages, that could not be
// analysed at all (no environment, the helper died) is one row with an
// empty api_id, kind "library" or "package", and the reason.
type APIRow struct {
	Library     string `parquet:"library"`
	Module      string `parquet:"module"` // the module of v_new: the library, or its successor major version
	VOld        string `parquet:"v_old"`
	VNew        string `parquet:"v_new"`
	VNewHash    string `parquet:"v_new_hash"` // h1: checksum of the v_new module zip
	ID          string `parquet:"api_id"`
	Package     string `parquet:"package"`
	Receiver    string `parquet:"receiver"`
	Name        string `parquet:"name"`
	Kind        string `parquet:"kind"`
	Signature   string `parquet:"signature"`
	TypeParams  string `parquet:"type_params"`
	Doc         string `parquet:"doc"`
	File        string `parquet:"file"`
	Line        int32  `parquet:"line"`
	AliasOf     string `parquet:"alias_of"`
	Novel       bool   `parquet:"novel"`
	SameAs      string `parquet:"same_as"`
	How         string `parquet:"how"`
	Internal    bool   `parquet:"internal"`
	Deprecated  bool   `parquet:"deprecated"`
	NoBody      bool   `parquet:"no_body"`
	ThinDoc     bool   `parquet:"thin_doc"`
	Generated   bool   `parquet:"generated"`
	Alias       bool   `parquet:"alias"`
	Family      string `parquet:"family"`
	FamilyNovel int32  `parquet:"family_novel"`
	FamilyKnown bool   `parquet:"family_known"`
	FamilyRep   bool   `parquet:"family_rep"` // the kept member later stages keep when deduplicating
	Keep        bool   `parquet:"keep"`
	Reasons     string `parquet:"reasons"`
	// Path is the canonical public path of a Python API (shapes.Point.norm);
	// Paths every path it is exported at (re-exports, aliases), space
	// separated.
	Path  string `parquet:"path"`
	Paths string `parquet:"paths"`
	// OldPath is the old canonical path when it moved (canonical-path
	// drift), OldSignature the old signature when it changed.
	OldPath      string `parquet:"old_path"`
	OldSignature string `parquet:"old_signature"`
	// StdlibDoc: no docstring of its own, the inherited one is the
	// standard library's. ImportError: its module fails to import in v_new
	// (read from the syntax tree). Uncertain: its module failed to import
	// in v_old, so it may have been reachable there unseen.
	StdlibDoc   bool `parquet:"stdlib_doc"`
	ImportError bool `parquet:"import_error"`
	Uncertain   bool `parquet:"uncertain"`
	// VNewEnv is the lock digest of v_new's environment (runners/pyenv):
	// later stages get the same environment from the cache by it.
	VNewEnv string `parquet:"v_new_env"`
}

type surfaceDiff struct {
	nodes.Static[surfaceDiffConfig, APIRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = surfaceDiff{}
	_ nodes.Documented = surfaceDiff{}
	_ nodes.Validator  = surfaceDiff{}
	_ nodes.Resolver   = surfaceDiff{}
)

func (surfaceDiff) Name() string    { return "surface_diff" }
func (surfaceDiff) Version() string { return "5" } // 5: Python: sibling packages' re-exports, Enum classes' own files
func (surfaceDiff) Doc() string {
	return "Downloads v_old and v_new (checksums verified against the checksum database), diffs their exported API " +
		"on identity (moves and aliases reconciled) and emits every v_new API with novel, filter columns, reasons and a family. " +
		"With ecosystem = \"python\": installs both releases into environments of their own release day (uv, else pip), " +
		"lists their API with an embedded inspect/ast helper run in the sandbox, and applies the paper's filters " +
		"(private, deprecated, no source, thin or stdlib-inherited docstring)."
}

func (surfaceDiff) Validate(cfg any) error {
	c := cfg.(*surfaceDiffConfig)
	if c.Ecosystem != "" && c.Ecosystem != "go" && c.Ecosystem != "python" {
		return nodes.Errorf("ecosystem", "Ecosystem not supported", "surface_diff handles ecosystems \"go\" (default) and \"python\", not %q.", c.Ecosystem)
	}
	if c.minDocWords() < 0 {
		return nodes.Errorf("min_doc_words", "Invalid threshold", "min_doc_words must be 0 or more.")
	}
	return nil
}

// Resolve prepares the verified module cache. Downloads are checked
// against the checksum database, so the modules' content is fixed by their
// versions (in the input) and adds nothing to the key.
// For Python the interpreter, the installer, the helper's source and the
// sandbox are pinned (pyenv.Resolve); each environment is resolved in Run
// as of its release's day, from the releases the input holds.
func (surfaceDiff) Resolve(ctx context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	if r.Config().(*surfaceDiffConfig).Ecosystem == "python" {
		return resolvePythonSurface(ctx, r)
	}
	return goenv.Resolve(ctx, r, goenv.Fetch)
}

func (t surfaceDiff) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	in, err := r.Input(c.Versions)
	if err != nil {
		return err
	}
	versions, err := artifacts.ReadAll[VersionRow](in)
	if err != nil {
		return err
	}
	if c.Ecosystem == "python" {
		return t.runPython(ctx, r, c, versions)
	}
	g, err := goenv.From(r)
	if err != nil {
		return err
	}
	fetcher := g.Fetcher
	var rows []APIRow
	var notes []string
	for i, v := range versions {
		if v.Ecosystem != "go" {
			return fmt.Errorf("%s: ecosystem %q: set ecosystem = %q on surface_diff", v.Library, v.Ecosystem, v.Ecosystem)
		}
		old, err := fetcher.Download(ctx, v.Library, v.VOld)
		if err != nil {
			return err
		}
		newMod := v.VNewModule
		if newMod == "" {
			newMod = v.Library
		}
		cur, err := fetcher.Download(ctx, newMod, v.VNew)
		if err != nil {
			return err
		}
		so, err := goapi.Surface(old.Dir)
		if err != nil {
			return fmt.Errorf("%s@%s: %w", v.Library, v.VOld, err)
		}
		sn, err := goapi.Surface(cur.Dir)
		if err != nil {
			return fmt.Errorf("%s@%s: %w", v.Library, v.VNew, err)
		}
		changes := goapi.DiffModules(so, sn, v.Library, newMod)
		lib := make([]APIRow, len(changes))
		for j, ch := range changes {
			lib[j] = apiRow(v, newMod, cur.Hash, ch, c.minDocWords())
		}
		reps := goapi.FamilyRepresentatives(changes, func(j int) bool { return lib[j].Keep })
		novel, kept := 0, 0
		for j := range lib {
			lib[j].FamilyRep = reps[j]
			if lib[j].Novel {
				novel++
			}
			if lib[j].Keep {
				kept++
			}
		}
		r.Logf("%s %s → %s %s: %d APIs in %s (%s), %d in %s (%s); %d novel, %d kept, %d families kept",
			v.Library, v.VOld, newMod, v.VNew, len(so), v.VOld, old.Verified, len(sn), v.VNew, cur.Verified, novel, kept, len(reps))
		logDrops(r, lib)
		notes = append(notes, fmt.Sprintf("%s %s→%s: %d APIs, %d novel, %d kept", short(v.Library), v.VOld, v.VNew, len(sn), novel, kept))
		rows = append(rows, lib...)
		r.Progress(int64(i+1), int64(len(versions)))
	}
	r.Note("%s", strings.Join(notes, "; "))
	return t.Write(r, rows)
}

func apiRow(v VersionRow, module, hash string, ch goapi.Change, minWords int) APIRow {
	a := ch.API
	row := APIRow{
		Library: v.Library, Module: module, VOld: v.VOld, VNew: v.VNew, VNewHash: hash,
		ID: a.ID, Package: a.Package, Receiver: a.Receiver, Name: a.Name, Kind: a.Kind,
		Signature: a.Signature, TypeParams: a.TypeParams, Doc: a.Doc, File: a.File, Line: int32(a.Line),
		AliasOf: a.AliasOf, Novel: ch.Novel, SameAs: ch.SameAs, How: ch.How,
		Internal: a.Internal, Deprecated: a.Deprecated, NoBody: a.NoBody, Generated: a.Generated,
		ThinDoc: len(strings.Fields(a.Doc)) < minWords, Alias: a.Alias != "",
		Family: ch.Family, FamilyNovel: int32(ch.FamilyNovel), FamilyKnown: ch.FamilyKnown,
	}
	var why []string
	if !row.Novel {
		why = append(why, "not novel: "+ch.How)
	}
	if row.Internal {
		why = append(why, "internal, testdata, example or cmd package")
	}
	if row.Deprecated {
		why = append(why, "deprecated")
	}
	if row.NoBody {
		why = append(why, "no Go body")
	}
	if row.Generated {
		why = append(why, "generated code")
	}
	if row.Alias {
		why = append(why, "alias of "+a.Alias)
	}
	if row.ThinDoc {
		why = append(why, fmt.Sprintf("thin doc (%d words < %d)", len(strings.Fields(a.Doc)), minWords))
	}
	row.Reasons = strings.Join(why, "; ")
	row.Keep = len(why) == 0
	return row
}

// logDrops logs how many novel APIs each filter removed.
func logDrops(r nodes.Run, rows []APIRow) {
	counts := map[string]int{}
	for _, row := range rows {
		if !row.Novel {
			continue
		}
		for _, why := range strings.Split(row.Reasons, "; ") {
			if why == "" {
				continue
			}
			if i := strings.Index(why, " ("); i > 0 {
				why = why[:i]
			}
			if strings.HasPrefix(why, "alias of ") {
				why = "alias"
			}
			counts[why]++
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r.Logf("  novel but filtered: %-45s %d", k, counts[k])
	}
}

// short is a module path's last element, for notes: github.com/samber/lo → lo.
func short(mod string) string {
	return mod[strings.LastIndex(mod, "/")+1:]
}
