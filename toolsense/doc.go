// Package toolsense holds ToolSense's own logic (seed 002), the parts
// that need no pipeline engine: the tool catalog's data model and how it
// is read from the released files (Tool, CatalogRow, ReadRRB, DocText),
// the stratified draw of seed tools (StratifiedSeeds), the Realistic
// Retrieval Benchmark's tiers, prompts and validators (ValidateRRB,
// CheckRRBAnswer, ParseRRBVerdicts), the MCQ and QA probes' prompts,
// item formats, validators and answer parsers (ValidateProbeItem,
// ParseMCQAnswer, ParseQAAnswer), and ToolGen's virtual tool tokens with
// the constrained beam search over them (ToolTokens, ReadTokenIDs, Trie,
// Search).
//
// The prompts are text/template files under prompts/, embedded in the
// binary; the digests of their bytes (ProbePromptDigest,
// RRBPromptDigest, RetrievalPromptDigest) are what the ToolSense nodes
// put in their keys, so editing a prompt recomputes the nodes using it.
//
// The node types that run these steps inside a pipeline (catalog,
// neighbors, rrb_generate, mcq_generate, qa_generate, probe_eval,
// probe_metrics, retrieve, retrieve_parametric, retrieval_eval) are in
// nodes/toolsense. Everything here is a pure function of its arguments,
// safe for concurrent use; nothing reads the store or makes a call.
package toolsense
