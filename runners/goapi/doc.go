// Package goapi analyses the source of a Go module version: its exported
// API surface, the diff of two surfaces (moves and aliases reconciled),
// the parsed packages a knowledge bundle quotes (signatures, M_code with
// helpers inlined), usage examples made standalone programs (Example
// functions; tests, benchmarks and README blocks mined for E), which of
// the module's APIs a program calls (Checker, type-checking against the
// module's and the standard library's source), and the module's licence.
// It reads source trees only: it never fetches, builds or runs.
package goapi
