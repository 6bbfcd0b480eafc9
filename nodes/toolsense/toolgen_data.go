package toolsense

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

func init() { nodes.Register(toolgenDataType{}) }

// toolgenDataConfig:
//
//	node "toolgen_data" "tg5fm_memorization" {
//	  stage          = 1
//	  configuration  = "TG-5FM"              # TG | TG-SP | TG-3FM | TG-H | TG-5FM
//	  catalog        = node.catalog.tools
//	  negatives      = node.neighbors.mcts   # MCTS (TG-3FM, TG-5FM): a pool for every tool
//	  mcts_negatives = 4
//	  seed           = 1
//	}
//	node "toolgen_data" "tg5fm_retrieval" {
//	  stage         = 2
//	  configuration = "TG-5FM"
//	  catalog       = node.catalog.tools
//	  queries       = node.import.train      # query + gold tool columns
//	}
type toolgenDataConfig struct {
	// Stage is 1 (memorization) or 2 (retrieval).
	Stage         int       `hcl:"stage"`
	Configuration string    `hcl:"configuration"`
	Catalog       nodes.Ref `hcl:"catalog"`
	// Negatives is a neighbors node over the catalog: each tool's pool,
	// nearest first, gives its MCTS hard negatives (stage 1).
	Negatives     nodes.Ref `hcl:"negatives,optional"`
	MCTSNegatives *int      `hcl:"mcts_negatives,optional"`
	Seed          *int64    `hcl:"seed,optional"`
	// Queries is the Stage 2 training split: a table with a query column
	// and a gold tool column (an RRB table, an import of one, or any
	// table with those columns).
	Queries     nodes.Ref `hcl:"queries,optional"`
	QueryColumn string    `hcl:"query_column,optional"`
	ToolColumn  string    `hcl:"tool_column,optional"`
	IDColumn    string    `hcl:"id_column,optional"`
	// UnknownTools is what a gold tool outside the catalog does: "error"
	// (default) or "skip" (dropped, counted in the note).
	UnknownTools string  `hcl:"unknown_tools,optional"`
	TokenOpen    *string `hcl:"token_open,optional"`
	TokenClose   *string `hcl:"token_close,optional"`
}

// The defaults of toolgen_data's Stage 2 columns: the released RRB's.
const (
	defaultQueryColumn = "query"
	defaultToolColumn  = "tool"
	defaultIDColumn    = "sample_id"
)

func (c *toolgenDataConfig) queryColumn() string { return cmpOr(c.QueryColumn, defaultQueryColumn) }
func (c *toolgenDataConfig) toolColumn() string  { return cmpOr(c.ToolColumn, defaultToolColumn) }
func (c *toolgenDataConfig) idColumn() string    { return cmpOr(c.IDColumn, defaultIDColumn) }
func (c *toolgenDataConfig) unknownTools() string {
	return cmpOr(c.UnknownTools, "error")
}

func (c *toolgenDataConfig) mctsNegatives() int {
	if c.MCTSNegatives == nil {
		return ts.DefaultMCTSNegatives
	}
	return *c.MCTSNegatives
}

func (c *toolgenDataConfig) seed() uint64 {
	if c.Seed == nil {
		return 1
	}
	return uint64(*c.Seed)
}

func (c *toolgenDataConfig) spelling() (open, close string) {
	open, close = ts.DefaultTokenOpen, ts.DefaultTokenClose
	if c.TokenOpen != nil {
		open = *c.TokenOpen
	}
	if c.TokenClose != nil {
		close = *c.TokenClose
	}
	return open, close
}

// data is the format writer of the node's configuration; Validate has
// checked the name.
func (c *toolgenDataConfig) data() ts.ToolGenData {
	cfg, _ := ts.LookupToolGenConfig(c.Configuration)
	open, close := c.spelling()
	return ts.ToolGenData{Config: cfg, Open: open, Close: close, Negatives: c.mctsNegatives(), Seed: c.seed()}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ToolGenRow is one ToolGen training example, what a trainer reads as
// (prompt, completion): the user turn and the assistant's answer.
type ToolGenRow struct {
	// Stage is 1 (memorization) or 2 (retrieval).
	Stage int64 `parquet:"stage"`
	// Format is one of ts.FormatDescTok, FormatTokDesc, FormatDescAPITok,
	// FormatDescAPITokEndpointTok, FormatMCTS (stage 1) or FormatQueryTok
	// (stage 2).
	Format     string `parquet:"format"`
	Prompt     string `parquet:"prompt"`
	Completion string `parquet:"completion"`
	ToolName   string `parquet:"tool_name"`
	// Token is the tool's whole token sequence (flat <<API&&ENDPOINT>>,
	// hierarchical <<API>><<ENDPOINT>>); Tokens the vocabulary entries it
	// is made of (one, or the API's and the endpoint's).
	Token  string   `parquet:"token"`
	Tokens []string `parquet:"tokens,list"`
	// SampleID is the Stage 2 row the example comes from (its id column,
	// or "row N", 1-based); empty in Stage 1.
	SampleID string `parquet:"sample_id"`
}

// NewTokens is the virtual tokens to add to a model's vocabulary before
// training on rows: the distinct Tokens entries in order of first
// appearance. Over a stage 1 output it is the whole catalog's (every tool
// has a desc->tok row), in catalog order: the JSON list a trainer's
// --new-tokens takes.
func NewTokens(rows []ToolGenRow) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rows {
		for _, tok := range r.Tokens {
			if !seen[tok] {
				seen[tok] = true
				out = append(out, tok)
			}
		}
	}
	return out
}

type toolgenDataType struct {
	nodes.Static[toolgenDataConfig, ToolGenRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = toolgenDataType{}
	_ nodes.Documented = toolgenDataType{}
	_ nodes.Validator  = toolgenDataType{}
	_ nodes.Resolver   = toolgenDataType{}
)

func (toolgenDataType) Name() string    { return "toolgen_data" }
func (toolgenDataType) Version() string { return "1" }
func (toolgenDataType) Doc() string {
	return "ToolGen-style training data (seed 002 §4.1, Table 1, Appendices B, C, E and K) as (prompt, completion) rows, one " +
		"`stage` per node: 1, memorization (tool ↔ virtual token) over a `catalog`; 2, retrieval (query → tool token) from " +
		"a training split `queries`. `configuration` is Table 1's: TG (flat tokens <<API&&ENDPOINT>>, desc->tok only, no " +
		"system prompt), TG-SP (TG with the task prompts), TG-3FM (TG-SP plus tok->desc and mcts), TG-H (TG-SP with " +
		"hierarchical tokens <<API>><<ENDPOINT>>), TG-5FM (hierarchical; desc->tok, desc->api_tok, " +
		"desc+api_tok->endpoint_tok, tok->desc, mcts). With the system prompt each example's prompt is the paper's user-turn " +
		"prompt (K.1 Figures 11–15 in stage 1, K.2 Figure 16 in stage 2: retrieve_parametric's prompt \"k2\"); without it " +
		"(TG) a stage 1 prompt is the tool's JSON information alone and a stage 2 prompt the bare query (prompt \"none\"). " +
		"The tool's information is the JSON of its tool_title, tool_description, api_title and api_description (missing " +
		"ones left out); its description, tool_description and api_description joined (a tool without one gets no tok->desc " +
		"and no mcts row, counted in the note). Tokens are spelled as retrieve_parametric spells them (token_open, " +
		"token_close; hierarchical parts from the titles, or tool_name cut at its first \"&&\"). mcts (Appendix B): the " +
		"description and mcts_negatives + 1 token options (default 4 negatives, the paper's K), one per line: the tool's and " +
		"the nearest distinct ones of its pool in `negatives` (a neighbors node over the catalog with k ≥ mcts_negatives; " +
		"every catalog tool must have a pool), in an order drawn from `seed` (default 1) and the tool's name alone. Stage 1 " +
		"rows are in catalog order, each tool's formats in the configuration's order. Stage 2 (Appendices C.2, E): one row " +
		"per gold tool of each input row, in input order, from `query_column` (default query) and `tool_column` (default " +
		"tool: a JSON tool object or list of them as the released RRB writes it, a JSON list of tool names, or one tool " +
		"name); sample_id from `id_column` (default sample_id, or \"row N\" when the input has no such column). A gold " +
		"tool outside the catalog is an error, or dropped and counted with unknown_tools = \"skip\". Columns: stage, " +
		"format, prompt, completion (what the trainer reads), tool_name, token (the tool's whole sequence), tokens (its " +
		"vocabulary entries), sample_id. The tokens to add to the vocabulary are the distinct `tokens` of the stage 1 " +
		"rows in order of appearance (every tool has a desc->tok row): NewTokens. The memorization prompts' digest (and, " +
		"with the system prompt, K.2's) is in the key."
}

func (toolgenDataType) Validate(cfg any) error {
	c := cfg.(*toolgenDataConfig)
	tg, ok := ts.LookupToolGenConfig(c.Configuration)
	if !ok {
		return nodes.Errorf("configuration", "Unknown configuration", "%q: use one of %s (seed 002 Table 1).", c.Configuration, strings.Join(ts.ToolGenConfigNames(), ", "))
	}
	mcts := tg.Has(ts.FormatMCTS)
	switch c.Stage {
	case 1:
		for _, a := range []struct {
			set  bool
			attr string
		}{{c.Queries.Node != "", "queries"}, {c.QueryColumn != "", "query_column"}, {c.ToolColumn != "", "tool_column"},
			{c.IDColumn != "", "id_column"}, {c.UnknownTools != "", "unknown_tools"}} {
			if a.set {
				return nodes.Errorf(a.attr, a.attr+" is for stage 2", "stage 1 (memorization) reads only the catalog and, for MCTS, negatives.")
			}
		}
		switch {
		case mcts && c.Negatives.Node == "":
			return nodes.Errorf("negatives", "Hard negatives needed", "%s's MCTS format (Appendix B) asks for each tool's hard negatives: set negatives = node.neighbors.NAME, a neighbors node over the catalog with k ≥ %d.", c.Configuration, c.mctsNegatives())
		case !mcts && c.Negatives.Node != "":
			return nodes.Errorf("negatives", "negatives is for MCTS", "%s has no MCTS format (only TG-3FM and TG-5FM do); remove negatives.", c.Configuration)
		case !mcts && c.MCTSNegatives != nil:
			return nodes.Errorf("mcts_negatives", "mcts_negatives is for MCTS", "%s has no MCTS format (only TG-3FM and TG-5FM do).", c.Configuration)
		case !mcts && c.Seed != nil:
			return nodes.Errorf("seed", "seed is for MCTS", "the seed orders MCTS options; %s has no MCTS format and nothing else is drawn.", c.Configuration)
		case c.mctsNegatives() < 1:
			return nodes.Errorf("mcts_negatives", "Invalid mcts_negatives", "mcts_negatives is the hard negatives per MCTS item, at least 1 (the paper: 4); got %d.", c.mctsNegatives())
		}
	case 2:
		for _, a := range []struct {
			set  bool
			attr string
		}{{c.Negatives.Node != "", "negatives"}, {c.MCTSNegatives != nil, "mcts_negatives"}, {c.Seed != nil, "seed"}} {
			if a.set {
				return nodes.Errorf(a.attr, a.attr+" is for stage 1", "stage 2 (retrieval) has no MCTS items and draws nothing.")
			}
		}
		if c.Queries.Node == "" {
			return nodes.Errorf("queries", "Training split needed", "stage 2 trains on (query, gold tool) pairs: set queries to a table with %q and %q columns (query_column, tool_column).", c.queryColumn(), c.toolColumn())
		}
		if u := c.unknownTools(); u != "error" && u != "skip" {
			return nodes.Errorf("unknown_tools", "Unknown unknown_tools", "%q: use \"error\" or \"skip\".", c.UnknownTools)
		}
	default:
		return nodes.Errorf("stage", "Unknown stage", "stage is 1 (memorization) or 2 (retrieval); got %d.", c.Stage)
	}
	if open, close := c.spelling(); open == "" || close == "" {
		attr := "token_open"
		if open != "" {
			attr = "token_close"
		}
		return nodes.Errorf(attr, "Empty token spelling", "token_open and token_close must not be empty: retrieve_parametric finds tokens by them.")
	}
	return nil
}

// Resolve pins nothing outside but the prompts: their digests are the
// identity (the K.1 memorization prompts in stage 1, K.2's in stage 2
// with the system prompt), so editing one recomputes these nodes.
func (toolgenDataType) Resolve(_ context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	c := r.Config().(*toolgenDataConfig)
	id := map[string]string{}
	if c.Stage == 1 {
		id["prompts"] = ts.ToolGenPromptDigest()
	} else if c.data().Config.SystemPrompt {
		id["prompt"] = ts.RetrievalPromptDigest()
	}
	return &nodes.Pinned{Identity: id}, nil
}

func (t toolgenDataType) Run(_ context.Context, r nodes.Run) error {
	c := t.Config(r)
	in, err := r.Input(c.Catalog)
	if err != nil {
		return err
	}
	tools, err := artifacts.ReadAll[CatalogRow](in)
	if err != nil {
		return fmt.Errorf("catalog %s: %w", c.Catalog, err)
	}
	if len(tools) == 0 {
		return nodes.Errorf("catalog", "Empty catalog", "catalog %s has no tools.", c.Catalog)
	}
	ix, err := toolIndex(tools)
	if err != nil {
		return err
	}
	d := c.data()
	if _, err := d.Vocabulary(tools); err != nil {
		return nodes.Errorf("configuration", "Tool without API and endpoint", "%s has hierarchical tokens: %v", c.Configuration, err)
	}
	var rows []ToolGenRow
	if c.Stage == 1 {
		rows, err = t.memorization(r, c, d, tools, ix)
	} else {
		rows, err = t.retrieval(r, c, d, tools, ix)
	}
	if err != nil {
		return err
	}
	return t.Write(r, rows)
}

// memorization writes every tool's stage 1 rows.
func (toolgenDataType) memorization(r nodes.Run, c *toolgenDataConfig, d ts.ToolGenData, tools []CatalogRow, ix map[string]int) ([]ToolGenRow, error) {
	var pools map[string][]CatalogRow
	if d.Config.Has(ts.FormatMCTS) {
		var err error
		if pools, err = readPools(r, c, tools, ix); err != nil {
			return nil, err
		}
	}
	counts := map[string]int{}
	skipped := map[string]int{}
	var rows []ToolGenRow
	for i, tool := range tools {
		exs, skip, err := d.Memorization(tool, pools[tool.ToolName])
		if err != nil {
			return nil, nodes.Errorf("negatives", "Cannot write an MCTS item", "%v (negatives %s: give the neighbors node k ≥ mcts_negatives = %d)", err, c.Negatives, d.Negatives)
		}
		for _, f := range skip {
			skipped[f]++
		}
		for _, ex := range exs {
			counts[ex.Format]++
			rows = append(rows, row(1, ex, ""))
		}
		r.Progress(int64(i+1), int64(len(tools)))
	}
	var parts []string
	for _, f := range d.Config.Formats {
		parts = append(parts, fmt.Sprintf("%d %s", counts[f], f))
	}
	var skips []string
	for _, f := range d.Config.Formats {
		if skipped[f] > 0 {
			skips = append(skips, fmt.Sprintf("%d %s", skipped[f], f))
		}
	}
	skipNote := "none skipped"
	if len(skips) > 0 {
		skipNote = "skipped for tools without a description: " + strings.Join(skips, ", ")
	}
	r.Report("formats", counts)
	r.Note("stage 1, %s (%s tokens, %s): %d tools, %d rows (%s); %s; %d vocabulary tokens",
		c.Configuration, d.Config.TokenFormat, promptNote(d.Config), len(tools), len(rows), strings.Join(parts, ", "), skipNote, len(NewTokens(rows)))
	return rows, nil
}

// readPools maps each catalog tool to its hard negatives, nearest first:
// its pool in the negatives node, less the tool itself. A pool of a tool
// outside the catalog, a negative outside it, or a catalog tool without a
// pool is an error.
func readPools(r nodes.Run, c *toolgenDataConfig, tools []CatalogRow, ix map[string]int) (map[string][]CatalogRow, error) {
	in, err := r.Input(c.Negatives)
	if err != nil {
		return nil, err
	}
	prs, err := artifacts.ReadAll[NeighborsRow](in)
	if err != nil {
		return nil, nodes.Errorf("negatives", "Not a neighbors output", "negatives %s: %v", c.Negatives, err)
	}
	pools := make(map[string][]CatalogRow, len(prs))
	for _, p := range prs {
		if _, ok := ix[p.Seed]; !ok {
			return nil, nodes.Errorf("negatives", "Pool of another catalog", "negatives %s has a pool for %q, which is not in catalog %s: build the neighbors node over the same catalog.", c.Negatives, p.Seed, c.Catalog)
		}
		var negs []CatalogRow
		for _, name := range p.Pool {
			j, ok := ix[name]
			if !ok {
				return nil, nodes.Errorf("negatives", "Pool of another catalog", "negatives %s: the pool of %q holds %q, which is not in catalog %s.", c.Negatives, p.Seed, name, c.Catalog)
			}
			if name != p.Seed {
				negs = append(negs, tools[j])
			}
		}
		pools[p.Seed] = negs
	}
	var missing []string
	for _, t := range tools {
		if _, ok := pools[t.ToolName]; !ok {
			missing = append(missing, t.ToolName)
		}
	}
	if len(missing) > 0 {
		return nil, nodes.Errorf("negatives", "Tools without a pool", "%d of the catalog's %d tools have no pool in negatives %s (first: %q): MCTS writes an item for every tool; build the neighbors node over every tool (no seeds).", len(missing), len(tools), c.Negatives, missing[:min(3, len(missing))])
	}
	return pools, nil
}

// retrieval writes one stage 2 row per gold tool of each input row.
func (toolgenDataType) retrieval(r nodes.Run, c *toolgenDataConfig, d ts.ToolGenData, tools []CatalogRow, ix map[string]int) ([]ToolGenRow, error) {
	qin, err := r.Input(c.Queries)
	if err != nil {
		return nil, err
	}
	// Each column is read alone, so that a missing one is an error at
	// the attribute naming it.
	read := func(attr, name string) ([]string, error) {
		vals, err := columns(qin, name)
		if err != nil {
			return nil, nodes.Errorf(attr, "Missing column", "queries %s: %v", c.Queries, err)
		}
		out := make([]string, len(vals))
		for i, v := range vals {
			out[i] = text(v[0])
		}
		return out, nil
	}
	queries, err := read("query_column", c.queryColumn())
	if err != nil {
		return nil, err
	}
	golds, err := read("tool_column", c.toolColumn())
	if err != nil {
		return nil, err
	}
	var ids []string
	if _, ok := qin.Schema().Lookup(c.idColumn()); ok || c.IDColumn != "" {
		if ids, err = read("id_column", c.idColumn()); err != nil {
			return nil, err
		}
	}
	var rows []ToolGenRow
	var unknown []string
	unknownRows := 0
	multi := 0
	for i, query := range queries {
		id := fmt.Sprintf("row %d", i+1)
		if ids != nil {
			id = ids[i]
		}
		where := fmt.Sprintf("queries %s row %d (sample_id %s)", c.Queries, i+1, id)
		if strings.TrimSpace(query) == "" {
			return nil, nodes.Errorf("query_column", "Empty query", "%s: column %q is empty.", where, c.queryColumn())
		}
		gold, err := ts.GoldToolNames(golds[i])
		if err != nil {
			return nil, nodes.Errorf("tool_column", "Unreadable gold tools", "%s, column %q: %v", where, c.toolColumn(), err)
		}
		if len(gold) > 1 {
			multi++
		}
		missed := false
		for _, name := range gold {
			j, ok := ix[name]
			if !ok {
				unknown = append(unknown, name)
				missed = true
				continue
			}
			ex, err := d.Retrieval(query, tools[j])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			rows = append(rows, row(2, ex, id))
		}
		if missed {
			unknownRows++
		}
	}
	if len(unknown) > 0 && c.unknownTools() == "error" {
		return nil, nodes.Errorf("queries", "Gold tools outside the catalog", "%d gold tools of %d rows of queries %s are not in catalog %s (first: %q): a tool's token must be in the vocabulary Stage 1 trained; use the same catalog, or unknown_tools = \"skip\" to drop them.", len(unknown), unknownRows, c.Queries, c.Catalog, unknown[:min(3, len(unknown))])
	}
	if len(rows) == 0 {
		return nil, nodes.Errorf("queries", "No training pairs", "queries %s gives no (query, gold tool) pair in catalog %s.", c.Queries, c.Catalog)
	}
	distinct := map[string]bool{}
	for _, row := range rows {
		distinct[row.ToolName] = true
	}
	r.Note("stage 2, %s (%s tokens, %s): %d rows of queries (%d with several gold tools), %d pairs over %d tools; %d gold tools outside the catalog dropped",
		c.Configuration, d.Config.TokenFormat, promptNote(d.Config), len(queries), multi, len(rows), len(distinct), len(unknown))
	return rows, nil
}

func row(stage int64, ex ts.ToolGenExample, sampleID string) ToolGenRow {
	return ToolGenRow{Stage: stage, Format: ex.Format, Prompt: ex.Prompt, Completion: ex.Completion, ToolName: ex.ToolName,
		Token: ex.Token, Tokens: slices.Clone(ex.Tokens), SampleID: sampleID}
}

// promptNote says how a configuration's prompts are written.
func promptNote(c ts.ToolGenConfig) string {
	if c.SystemPrompt {
		return "with the task prompts; query it with prompt \"k2\""
	}
	return "no system prompt; query it with prompt \"none\""
}
