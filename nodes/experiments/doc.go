// Package experiments holds NovelAPIBench's knowledge-injection runs over
// the knowledge cells (paper §4): generate (a model's answers to tasks in
// one cell of novelapibench/cells, through the store's call cache), with
// its retrieval-augmented arms (BM25 or dense retrieval over the bundle
// pool, chunked by the model's tokenizer). The answers are run by
// nodes/tasks' solve and classified by nodes/judge.
package experiments
