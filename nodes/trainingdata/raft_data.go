package trainingdata

import (
	"context"
	"fmt"
	"strings"

	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/bundle"
	"github.com/lacuna-dev/lacuna/novelapibench/cells"
)

func init() { nodes.Register(raftDataType{}) }

// RAFT's recipe (Zhang et al. 2024, "RAFT: Adapting Language Model to
// Domain Specific RAG"): P = 0.8 of the questions keep the oracle
// document, among distractors.
const (
	defaultDistractors    = 3
	defaultOracleFraction = 0.8
	// CompletionReference is the one completion lacuna has: the task's
	// reference answer (RAFT's chain-of-thought answers citing the oracle
	// would need a model to write them).
	CompletionReference = "reference"
)

// raftConfig:
//
//	node "raft_data" "full" {
//	  split           = node.task_split.study
//	  bundles         = [node.bundle.lo, node.bundle.mo]  # the oracles and the distractors
//	  distractors     = 3
//	  oracle_fraction = 0.8
//	  seed            = 0
//	}
type raftConfig struct {
	Split   nodes.Ref   `hcl:"split"`
	Which   string      `hcl:"which,optional"`
	Bundles []nodes.Ref `hcl:"bundles"`
	// Distractors is k, the distractor documents beside the oracle
	// (default 3); a row without the oracle has k+1 distractors, so that
	// the number of documents does not tell whether the oracle is there.
	Distractors *int `hcl:"distractors,optional"`
	// OracleFraction is RAFT's P, the share of rows whose documents
	// include the oracle (default 0.8).
	OracleFraction *float64 `hcl:"oracle_fraction,optional"`
	// Completion is what is learnt: "reference" (the only one, and the
	// default).
	Completion string `hcl:"completion,optional"`
	Seed       int64  `hcl:"seed,optional"`
	// Cell (default "Full": each document is a bundle rendered as the
	// cell's parts), Templates, System, MaxExamples and MaxExampleBytes
	// are generate's (promptConfig).
	Cell            string  `hcl:"cell,optional"`
	Templates       string  `hcl:"templates,optional"`
	System          *string `hcl:"system,optional"`
	MaxExamples     *int    `hcl:"max_examples,optional"`
	MaxExampleBytes *int    `hcl:"max_example_bytes,optional"`
}

func (c *raftConfig) prompt() *promptConfig {
	return &promptConfig{Cell: c.Cell, Templates: c.Templates, System: c.System, MaxExamples: c.MaxExamples, MaxExampleBytes: c.MaxExampleBytes}
}

func (c *raftConfig) which() string {
	if c.Which == "" {
		return SetTrain
	}
	return c.Which
}

// RAFTRow is an SFT pair whose prompt shows documents: the oracle (the
// task's API's bundle) and distractors (other APIs' bundles), or
// distractors alone.
type RAFTRow struct {
	SFTRow
	OraclePresent bool `parquet:"oracle_present"`
	// Documents are the api_ids of the bundles shown, in the prompt's
	// order.
	Documents []string `parquet:"documents,list"`
}

type raftDataType struct {
	nodes.Static[raftConfig, RAFTRow]
}

// Compile-time checks: a typo in an optional method must not drop it.
var (
	_ nodes.Typed      = raftDataType{}
	_ nodes.Documented = raftDataType{}
	_ nodes.Validator  = raftDataType{}
	_ nodes.Resolver   = raftDataType{}
)

func (raftDataType) Name() string    { return "raft_data" }
func (raftDataType) Version() string { return "1" }
func (raftDataType) Doc() string {
	return "RAFT training pairs (Zhang et al. 2024) of the tasks in set `which` (default \"train\") of a task_split: sft_data's " +
		"columns, with the prompt's knowledge a list of documents, each an API's bundle rendered as `cell`'s parts (default " +
		"\"Full\") and joined by blank lines as the retrieval arms of generate join their chunks. oracle_fraction (RAFT's P, " +
		"0.8) of the rows, drawn by a hash of seed and task id, show the oracle (the task's own bundle, less the example the task " +
		"was cut from) and `distractors` (k, 3) other APIs' bundles; the others show k+1 distractors and no oracle, so the number " +
		"of documents does not give it away. Distractors are drawn from the task's library first, then from the other libraries " +
		"of bundles, and the documents are shuffled, all by seeded hashes; no document shows the example the task was cut from. " +
		"Columns oracle_present and documents (api_ids in prompt order) say what a row shows. Unlike RAFT, whose answers are " +
		"chain-of-thought quoting the oracle, completion is the task's reference answer (completion = \"reference\", the only " +
		"kind): lacuna has no chain-of-thought answers."
}

func (raftDataType) Validate(cfg any) error {
	c := cfg.(*raftConfig)
	if err := validWhich(c.which()); err != nil {
		return err
	}
	cell, err := c.prompt().validate(c.Bundles, true)
	if err != nil {
		return err
	}
	switch {
	case len(cell.Parts) == 0:
		return nodes.Errorf("cell", "No documents", "cell %s shows no part of a bundle: RAFT's documents need a cell with parts (default \"Full\").", cell.Name)
	case c.Distractors != nil && *c.Distractors < 1:
		return nodes.Errorf("distractors", "Invalid distractors", "distractors must be at least 1.")
	case c.OracleFraction != nil && !(*c.OracleFraction >= 0 && *c.OracleFraction <= 1):
		return nodes.Errorf("oracle_fraction", "Invalid oracle_fraction", "oracle_fraction must be between 0 and 1; got %g.", *c.OracleFraction)
	case c.Completion != "" && c.Completion != CompletionReference:
		return nodes.Errorf("completion", "Unknown completion", "completion must be %q (the task's reference answer): lacuna has no chain-of-thought answers, not %q.", CompletionReference, c.Completion)
	}
	return nil
}

func (raftDataType) Resolve(_ context.Context, r nodes.Resolve) (*nodes.Pinned, error) {
	return resolvePrompts(r, r.Config().(*raftConfig).prompt())
}

func (t raftDataType) Run(ctx context.Context, r nodes.Run) error {
	c := t.Config(r)
	pc := c.prompt()
	prompts := r.Pinned().(*cells.Prompts)
	tks, err := readSet(r, c.Split, c.which())
	if err != nil {
		return err
	}
	pool, err := readBundles(r, c.Bundles, false)
	if err != nil {
		return err
	}
	if len(pool.order) < 2 {
		return nodes.Errorf("bundles", "No distractors", "the bundles hold %d API: RAFT needs other APIs' bundles as distractors.", len(pool.order))
	}
	k := orInt(c.Distractors, defaultDistractors)
	ids := make([]string, len(tks))
	for i, task := range tks {
		ids[i] = task.TaskID
	}
	withOracle := map[string]bool{}
	for _, id := range rank(c.Seed, "oracle", ids)[:roundHalfUp(orFloat(c.OracleFraction, defaultOracleFraction), len(ids))] {
		withOracle[id] = true
	}
	rows := make([]RAFTRow, len(tks))
	short, present := 0, 0
	for i, task := range tks {
		if err := ctx.Err(); err != nil {
			return err
		}
		oracle, err := pool.of(task)
		if err != nil {
			return err
		}
		want := k + 1
		var docs []bundle.Row
		if withOracle[task.TaskID] {
			docs, want = []bundle.Row{oracle}, k
			present++
		}
		dis := distractors(c.Seed, task.TaskID, oracle, pool, want)
		if len(dis) < want {
			short++
		}
		docs = append(docs, dis...)
		byID := map[string]bundle.Row{}
		var docIDs []string
		for _, d := range docs {
			byID[d.APIID] = d
			docIDs = append(docIDs, d.APIID)
		}
		docIDs = rank(c.Seed, "order\x00"+task.TaskID, docIDs)
		texts := make([]string, len(docIDs))
		for j, id := range docIDs {
			// No document shows the example the task was cut from:
			// another API's bundle may hold it too (an Example of an API
			// that calls this one).
			if texts[j], err = prompts.Knowledge(cellBundle(byID[id], task.Example, pc.exampleLimits())); err != nil {
				return fmt.Errorf("task %s: document %s: %w", task.TaskID, id, err)
			}
		}
		m, err := messages(prompts, pc, task, strings.Join(texts, "\n\n"))
		if err != nil {
			return fmt.Errorf("task %s: %w", task.TaskID, err)
		}
		rows[i] = RAFTRow{
			SFTRow: SFTRow{TaskID: task.TaskID, Split: c.which(), Library: task.Library, APIID: task.APIID, Qualified: task.Qualified,
				Difficulty: task.Difficulty, Cell: prompts.Cell().Name, System: m.System, Prompt: m.User, Completion: Completion(task)},
			OraclePresent: withOracle[task.TaskID],
			Documents:     docIDs,
		}
	}
	note := fmt.Sprintf("%d RAFT pairs (set %s, cell %s): %d with the oracle and %d distractors, %d with %d distractors alone", len(rows), c.which(), prompts.Cell().Name, present, k, len(rows)-present, k+1)
	if short > 0 {
		note += fmt.Sprintf("; warning: %d rows have fewer distractors (the bundles hold %d APIs)", short, len(pool.order))
		r.Logf("warning: %d rows have fewer distractors than asked: the bundles hold %d APIs", short, len(pool.order))
	}
	r.Note("%s", note)
	return t.Write(r, rows)
}

// distractors are n bundles other than the oracle's API for task id: the
// oracle's library's first, then the other libraries', each in an order
// drawn by the seed and the task.
func distractors(seed int64, taskID string, oracle bundle.Row, pool *bundlePool, n int) []bundle.Row {
	var same, other []string
	for _, b := range pool.order {
		switch {
		case b.APIID == oracle.APIID:
		case b.Library == oracle.Library:
			same = append(same, b.APIID)
		default:
			other = append(other, b.APIID)
		}
	}
	purpose := "distractor\x00" + taskID
	ids := append(rank(seed, purpose, same), rank(seed, purpose, other)...)
	out := make([]bundle.Row, 0, n)
	for _, id := range ids[:min(n, len(ids))] {
		out = append(out, pool.byID[id])
	}
	return out
}
