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
//   - Input: the spy hands the harness the arguments (the receiver
//     first) of the solver's calls of the target, rendered by value (a
//     function as "func", a value holding addresses by its type, what a
//     pointer to plain data points to); Check requires them to be, as a
//     set, the reference's: exactly, or with slices' elements in any
//     order where the reference's runs varied in order (nothing is
//     asserted where they varied more, or past 64 distinct tuples or
//     10,000 calls). A call on made-up data whose result coincides, or a
//     guard call on a tiny input of its own, fails the input layer. A
//     whole program's calls may include more (its context's).
//   - Attribution is by substitution: the scenario runs once more with
//     the solver's calls of the target substituted: the target runs,
//     then its results are replaced by other well-formed values of the
//     same type and shape derived from them (numbers one more, booleans
//     flipped, letters and digits shifted, element by element; a
//     sequence yields such values; errors, channels and objects behind
//     pointers kept; a result that is its input changed in place); a
//     target that returns nothing but errors runs on substituted copies
//     of its arguments instead. Derive records what the reference
//     computes from the substituted results (Expectation.Substituted;
//     Dependent names what changed), and Check requires a solution
//     under the same substitution to compute the same: a value
//     hard-coded after a call, recomputed another way beside it, or
//     gated by a guard on the result does not follow, and defensive
//     code (a panic or exit on an empty result, indexing it to log it)
//     does not die, since no value is zeroed. A run that panics where the
//     reference's substituted run panicked is compared on what it
//     recorded before. A task where nothing asserted depends on the
//     target is dropped by C1. In a whole program, only the calls on the
//     data the reference's span passed are substituted
//     (SubstitutionFor): its other calls are its context's.
//   - A second input (PerturbBefore) changes every literal of the context
//     before the span; the reference's results there are asserted too, so
//     a solution right by accident on one input, or one that ignores the
//     input, fails. A whole program whose main begins with the task's
//     context (Task.WithContext) gets it too; one that built its data
//     its own way does not (its calls' data is still checked). A whole
//     program that is the task's own program with the span written in
//     (the same declarations, the context's statements before and after:
//     Task.AsSpan) is run as that span, with every check a span gets.
//     A whole program's variable initialisers run before its main, under
//     the scenario's clock as the scenario does.
//   - Expectations (Derive) come from up to a hundred runs of the
//     reference (ten at least; more while within 2 s: a two-entry map
//     iterates in its rarer order one time in eight): only what every run
//     agrees on is asserted exactly; values that differ only in
//     order (map iteration) are compared as multisets (slices' elements,
//     output lines); values that vary otherwise, or hold addresses, keep
//     only their type and shape. Callbacks are "at least one".
//   - Isolation and integrity (RunUnits, Channel): harnesses compile in
//     one batched build; each variant of each (the task's data,
//     substituted, the second input) runs in a sandboxed process of its
//     own from the shared test binary, so no sample's crash, exit, hang,
//     leftover goroutines or global state reaches another, and nothing a
//     run leaves in its process or sandbox (an environment variable, a
//     file, a counter) tells a later variant that it is one: the variant
//     reaches the process with its key, on the descriptor it closes
//     before any solution code runs. Under bubblewrap a supervisor
//     (internal/supervisor) starts a binary's processes one at a time,
//     32 units to a sandbox, and resets the sandbox in between; nothing
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
// Known limits: a solution that reads its own process's memory (through
// /proc/self/mem, at an address it would have to find without a symbol
// table: harness binaries are stripped, and unsafe, syscall, debug/* and
// the like are refused) could recover the key and sign a forged record,
// or read which variant it runs in. Nothing short of a second process
// holding the key would stop that; it takes deliberate attack code, not
// the code a model writes for a task. A solution that calls the target
// on the task's data piece by piece (once per element where the
// reference passes the slice) fails the input layer though it is right.
package goharness
