// Package judge holds NovelAPIBench's failure-taxonomy node type (paper
// §3.5): judge classifies every solved sample into the six classes (and
// OK), by the deterministic fast path of novelapibench/goharness and
// pyharness, then a judge model or the fallback rules for what the fast
// path leaves; on calibration samples it reports how often each path
// agrees with the class a mutant has by construction.
package judge
