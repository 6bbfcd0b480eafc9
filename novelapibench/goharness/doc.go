// Package goharness is NovelAPIBench's own logic for Go: tasks cut from
// examples, the execute-then-assert harness, the target-API spy, the
// calibration mutants a harness must reject (and the class each stands
// for), and the judge: its deterministic rules, its fallback, the LLM
// judge's prompts and schemas, and the call structure and argument match
// (ParamCorr) read from a solution's syntax tree. It builds on the Go runners (goapi for source, gotool for running
// programs) and lives outside runners because it is the benchmark, not a
// way of executing work.
//
// # What a verdict rests on
//
// A solution passes only when its own code calls the target and the
// values the harness checks were computed through that call. The pieces,
// in the order a solution meets them:
//
//   - The answer (SplitAnswer, AsProgram) is the import lines the solver
//     wrote and a span of statements, or a whole program. The context
//     imports only what its own code uses, so the solver writes the
//     target's import (a wrong one is a WrongImport). CheckSpan and
//     CheckDecls refuse code that could leave the scenario early (goto;
//     return, except where the expectation holds the end marker, which a
//     run that returns early then misses: CheckSpanFor), declare code
//     outside it (init, closing the function) or name the harness's
//     internals (any identifier starting with lacuna); CheckImports
//     refuses packages that reach memory, code or runtime internals
//     (unsafe, syscall, debug/*, ...), routes to the key.
//   - The spy (NewSpy) instruments the target. A call counts as the
//     solver's (Observation.Direct) only when its caller's file and line
//     are the solution's: calls from the task's own code, from the
//     module, or from another goroutine's code elsewhere do not. Only
//     calls into functions the solver passed count as callbacks.
//   - Attribution is counterfactual: the scenario runs once more with the
//     solver's calls of the target answered with the zero values of its
//     results, its body not run (a function result becomes one that does
//     nothing, a channel a closed one: code using them runs on instead of
//     panicking, which would hide whether it used them). Derive names the
//     reference's asserted values that this changes
//     (Expectation.Dependent); Check requires a
//     solution's run to change every one of them, and a run that stops
//     early (a panic on a zero result the code then discarded) changes
//     nothing: missing is not changed. A value hard-coded after
//     a throwaway call, or recomputed another way beside a discarded call,
//     does not change, and fails the attribution layer. A task where
//     nothing asserted depends on the target is dropped by C1.
//   - A second input (PerturbBefore) changes every literal of the context
//     before the span; the reference's results there are asserted too, so
//     a solution right by accident on one input, or one that ignores the
//     input, fails.
//   - Expectations (Derive) come from up to a hundred runs of the
//     reference (ten at least; more while within 2 s: a two-entry map
//     iterates in its rarer order one time in eight): only what every run
//     agrees on is asserted exactly; values that differ only in
//     order (map iteration) are compared as multisets (slices' elements,
//     output lines); values that vary otherwise, or hold addresses, keep
//     only their type and shape. Callbacks are "at least one".
//   - Isolation and integrity (RunUnits, Channel): harnesses compile in
//     one batched build; each runs in a sandboxed process of its own from
//     the shared test binary, so no sample's crash, exit, hang, leftover
//     goroutines or global state reaches another. Under bubblewrap a
//     supervisor (internal/supervisor) starts a binary's harnesses one at
//     a time, 32 to a sandbox, and resets the sandbox in between; nothing
//     but the harness holds its descriptors. The process asserts
//     nothing: it writes one record, signed with HMAC-SHA256 under a fresh
//     key it reads from descriptor 7 and closes while the package
//     initialises (before any solution code runs), to descriptor 8. What
//     it prints never decides anything; a record that fails
//     authentication is tampering; no record is a crash, whose output is
//     kept as the reason. Check compares the record with the expectation
//     in lacuna's own process: the expected values are never in the
//     binary the solution runs in.
//
// Known limit: a solution that reads its own process's memory (through
// /proc/self/mem, at an address it found in the binary's symbol table)
// could recover the key and sign a forged record. Nothing short of a
// second process holding the key would stop that; it takes deliberate
// attack code, not the code a model writes for a task.
package goharness
