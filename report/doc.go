// Package report builds a self-contained report of a pipeline's results
// from the artifacts its nodes computed: tables (Markdown and CSV), figures
// (SVG and PNG from one gonum plot each), an HTML page that inlines them,
// and an index (report.json) naming every section, table, figure and the
// artifact digests they were read from.
//
// The report finds its inputs by node type, never by a pipeline's node
// names, so it reads any pipeline: NovelAPIBench's metrics (Table 1, the
// failure composition, the difficulty, library and retriever breakdowns),
// judge rows (the calibration confusion matrix and agreement), and the
// model-free stages (version_resolve, surface_diff, bundle, tasks, c1);
// ToolSense's retrieval_eval (Rc@k per tier, Rf@k and IS@k) and
// probe_metrics (accuracy and positional bias). A section appears when the
// pipeline has a node of its type; a node not computed yet is listed as
// such, never filled in. Every number shown is read from an artifact's rows
// or computed from them, and each section says which, and how its
// intervals were obtained.
//
// Build reads; Report.Write writes. Output depends only on the artifacts
// and the Input, so building and writing twice gives identical files.
// Neither prints nor reads the environment.
package report
