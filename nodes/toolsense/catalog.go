package toolsense

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/internal/regfile"
	"github.com/lacuna-dev/lacuna/nodes"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

func init() { nodes.Register(catalogType{}) }

// catalogConfig:
//
//	node "catalog" "tools" { path = "tools.jsonl" }
//	node "catalog" "rrb"   { from_rrb = node.import.retrieval }
type catalogConfig struct {
	// Path is a JSONL file of tool objects, relative to the pipeline.
	Path string `hcl:"path,optional" path:"file"`
	// FromRRB is an imported realistic-retrieval table: the catalog is the
	// union of its rows' analyzed_tools and answer tools.
	FromRRB nodes.Ref `hcl:"from_rrb,optional"`
}

type catalogType struct {
	nodes.Static[catalogConfig, CatalogRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = catalogType{}
	_ nodes.Documented = catalogType{}
	_ nodes.Validator  = catalogType{}
	_ nodes.Resolver   = catalogType{}
)

func (catalogType) Name() string    { return "catalog" }
func (catalogType) Version() string { return "1" }
func (catalogType) Doc() string {
	return "A ToolSense / ToolGen tool catalog keyed byte-exactly by tool_name (\"<tool_title>&&<api_title>\"), from a JSONL " +
		"file of tool objects (`path`, its content digest in the key) or as the union, in first-occurrence order, of the " +
		"analyzed_tools and answer tools of an imported realistic-retrieval table (`from_rrb`; the released RRB gives 4,901 " +
		"tools). A field that is absent, null, \"None\" or empty is an empty string named in `missing`; the note counts empty " +
		"descriptions. service is tool_title, or tool_name up to its first \"&&\" (the API part may contain \"&&\"). A repeated " +
		"tool_name with the same content is kept once (counted in the note); with different content, a tool_name without \"&&\" " +
		"and invalid UTF-8 are errors naming the line(s)."
}

func (catalogType) Validate(cfg any) error {
	c := cfg.(*catalogConfig)
	if (c.Path == "") == (c.FromRRB.Node == "") {
		return nodes.Errorf("", "Missing or conflicting catalog source", "set exactly one of path (a JSONL file of tools) or from_rrb (an imported RRB table).")
	}
	return nil
}

// Resolve pins the file's bytes (path mode): their digest is in the key
// and Run reads these bytes, never the file again.
func (catalogType) Resolve(_ context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	c := r.Config().(*catalogConfig)
	if c.Path == "" {
		return &nodes.Pinned{}, nil
	}
	p := c.Path
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.Dir(), p)
	}
	f, err := regfile.Open(p)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", c.Path, err)
	}
	return &nodes.Pinned{Identity: map[string]string{"file": fmt.Sprintf("%016x", xxhash.Sum64(b))}, Value: b}, nil
}

func (t catalogType) Run(_ context.Context, r nodes.Run) error {
	c := t.Config(r)
	var srcs []ts.Source
	var err error
	if c.Path != "" {
		b, ok := r.Pinned().([]byte)
		if !ok {
			return fmt.Errorf("catalog %s: the file was not resolved", c.Path)
		}
		srcs, err = ts.ReadToolsJSONL(c.Path, b)
	} else {
		srcs, err = rrbTools(r, c.FromRRB)
	}
	if err != nil {
		return err
	}
	rows, st, err := ts.BuildCatalog(srcs)
	if err != nil {
		return err
	}
	r.Note("%d tools, %d services; %d with an empty or missing description; %d repeated tool objects kept once", st.Tools, st.Services, st.EmptyDescriptions, st.Repeats)
	return t.Write(r, rows)
}

// rrbTools lists each RRB row's analyzed_tools, then its answer tools.
func rrbTools(r nodes.Run, ref nodes.Ref) ([]ts.Source, error) {
	in, err := r.Input(ref)
	if err != nil {
		return nil, err
	}
	cols, err := columns(in, "sample_id", "analyzed_tools", "tool")
	if err != nil {
		return nil, fmt.Errorf("from_rrb %s: %w", ref, err)
	}
	var out []ts.Source
	for i, v := range cols {
		for j, name := range []string{"analyzed_tools", "tool"} {
			where := fmt.Sprintf("%s row %d (sample_id %s) %s", ref, i+1, text(v[0]), name)
			raw := text(v[j+1])
			if !utf8.ValidString(raw) {
				return nil, fmt.Errorf("%s: invalid UTF-8", where)
			}
			tools, err := ts.DecodeTools([]byte(raw))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			for _, t := range tools {
				out = append(out, ts.Source{Tool: t, Where: where})
			}
		}
	}
	return out, nil
}
