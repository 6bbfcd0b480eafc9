// Package goharness is NovelAPIBench's own logic for Go: tasks cut from
// examples, the execute-then-assert harness, the target-API spy, the
// calibration mutants a harness must reject and the judge's deterministic
// rules. It builds on the Go runners (goapi for source, gotool for running
// programs) and lives outside runners because it is the benchmark, not a
// way of executing work.
package goharness
