package toolsense

import (
	"context"
	"fmt"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/runners/bm25"
)

func init() { nodes.Register(retrieveType{}) }

// retrieveConfig:
//
//	node "retrieve" "bm25" {
//	  catalog   = node.catalog.rrb
//	  queries   = node.import.retrieval
//	  retriever = "bm25"
//	  k         = 50
//	}
type retrieveConfig struct {
	Catalog nodes.Ref `hcl:"catalog"`
	// Queries is an RRB table: sample_id, query, tool (an answer tool
	// object or a list of them) and complexity.
	Queries   nodes.Ref `hcl:"queries"`
	Retriever string    `hcl:"retriever"`
	K         *int      `hcl:"k,optional"`
}

const defaultK = 50

func (c *retrieveConfig) k() int {
	if c.K == nil {
		return defaultK
	}
	return *c.K
}

// RetrieveRow is one query's ranking.
type RetrieveRow struct {
	SampleID  string `parquet:"sample_id"`
	Tier      string `parquet:"tier"`
	Query     string `parquet:"query"`
	Retriever string `parquet:"retriever"`
	// Answers are the query's answer tool_names, as the RRB row gives them.
	Answers []string `parquet:"answers,list"`
	// AnswersNotInCatalog counts the answers the catalog lacks: such a
	// query stays in the output (and in the evaluation, where those
	// answers can never be retrieved) and is counted in the note.
	AnswersNotInCatalog int64 `parquet:"answers_not_in_catalog"`
	// Ranked are the top k tool_names, best first; Scores theirs.
	Ranked []string  `parquet:"ranked,list"`
	Scores []float64 `parquet:"scores,list"`
}

type retrieveType struct {
	nodes.Static[retrieveConfig, RetrieveRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = retrieveType{}
	_ nodes.Documented = retrieveType{}
	_ nodes.Validator  = retrieveType{}
)

func (retrieveType) Name() string    { return "retrieve" }
func (retrieveType) Version() string { return "1" }
func (retrieveType) Doc() string {
	return "Ranks a catalog's tools for each query of an RRB table (sample_id, query, tool, complexity) and keeps the top `k` " +
		"(default 50) with their scores. retriever = \"bm25\": BM25Okapi with rank_bm25's defaults (runners/bm25) over " +
		"DocText(tool) = tool_title, api_title, tool_description, api_description joined by spaces (missing fields skipped), " +
		"tokenized by bm25.Tokenize; ties go to the earlier catalog position. Rows whose answers are not all in the catalog " +
		"are kept with answers_not_in_catalog set and counted in the note."
}

func (retrieveType) Validate(cfg any) error {
	c := cfg.(*retrieveConfig)
	switch c.Retriever {
	case "bm25":
	case "dense":
		return nodes.Errorf("retriever", "Retriever not available yet", "dense retrieval is not built yet; use retriever = \"bm25\".")
	default:
		return nodes.Errorf("retriever", "Unknown retriever", "%q is not a retriever; use \"bm25\" (dense and model retrieval are not built yet).", c.Retriever)
	}
	if c.k() < 1 {
		return nodes.Errorf("k", "Invalid k", "k is the number of tools kept per query, at least 1; got %d.", c.k())
	}
	return nil
}

// DocText is the text BM25 indexes for a tool: tool_title, api_title,
// tool_description and api_description joined by single spaces, missing
// (empty) fields skipped.
func DocText(t CatalogRow) string {
	var parts []string
	for _, f := range []string{t.ToolTitle, t.APITitle, t.ToolDescription, t.APIDescription} {
		if f != "" {
			parts = append(parts, f)
		}
	}
	return strings.Join(parts, " ")
}

func (t retrieveType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	cin, err := r.Input(c.Catalog)
	if err != nil {
		return err
	}
	tools, err := artifacts.ReadAll[CatalogRow](cin)
	if err != nil {
		return fmt.Errorf("catalog %s: %w", c.Catalog, err)
	}
	if len(tools) == 0 {
		return fmt.Errorf("catalog %s has no tools", c.Catalog)
	}
	qin, err := r.Input(c.Queries)
	if err != nil {
		return err
	}
	cols, err := columns(qin, "sample_id", "query", "tool", "complexity")
	if err != nil {
		return fmt.Errorf("queries %s: %w", c.Queries, err)
	}
	inCatalog := map[string]bool{}
	docs := make([][]string, len(tools))
	for i, tool := range tools {
		inCatalog[tool.ToolName] = true
		docs[i] = bm25.Tokenize(DocText(tool))
	}
	ix := bm25.New(docs, bm25.Options{})
	rows := make([]RetrieveRow, len(cols))
	flagged := 0
	for i, v := range cols {
		if err := ctx.Err(); err != nil {
			return err
		}
		row := RetrieveRow{SampleID: text(v[0]), Query: text(v[1]), Tier: text(v[3]), Retriever: c.Retriever, Answers: []string{}}
		ts, err := decodeTools([]byte(text(v[2])))
		if err != nil {
			return fmt.Errorf("queries %s row %d (sample_id %s) tool: %w", c.Queries, i+1, row.SampleID, err)
		}
		for _, tool := range ts {
			if tool.ToolName == nil || *tool.ToolName == "" || *tool.ToolName == "None" {
				return fmt.Errorf("queries %s row %d (sample_id %s): an answer tool has no tool_name", c.Queries, i+1, row.SampleID)
			}
			row.Answers = append(row.Answers, *tool.ToolName)
			if !inCatalog[*tool.ToolName] {
				row.AnswersNotInCatalog++
			}
		}
		if row.AnswersNotInCatalog > 0 {
			flagged++
		}
		hits := ix.Top(bm25.Tokenize(row.Query), c.k())
		row.Ranked = make([]string, len(hits))
		row.Scores = make([]float64, len(hits))
		for j, h := range hits {
			row.Ranked[j], row.Scores[j] = tools[h.Doc].ToolName, h.Score
		}
		rows[i] = row
		r.Progress(int64(i+1), int64(len(cols)))
	}
	r.Note("%d queries over %d tools, top %d by %s; %d queries with answers not in the catalog (kept, flagged)", len(rows), len(tools), c.k(), c.Retriever, flagged)
	return t.Write(r, rows)
}
