// Package metrics holds NovelAPIBench's metrics node type (paper §E):
// pass@k, API_acc, Param_corr, Sem and the failure composition per model,
// cell, library and difficulty, with confidence intervals, the rows of the
// paper's tables.
package metrics
