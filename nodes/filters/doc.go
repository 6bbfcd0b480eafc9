// Package filters holds NovelAPIBench's task filters (paper §3.3), one
// node type each: c1 (the reference passes its own harness and every
// Calibration mutant fails it: the harness audit), c2 (the model under
// test fails without the bundle: the API is novel to it) and c3 (a strong
// model solves it with the bundle: the task is solvable). Each keeps every
// task row with keep and reason, so a dropped task says why; a `filter`
// node with where = row.keep keeps the rest.
package filters
