// Package goapi analyses the source of a Go module version: its exported
// API surface, the diff of two surfaces (moves and aliases reconciled),
// the parsed packages a knowledge bundle quotes (signatures, M_code with
// helpers inlined), Example functions made standalone, and the module's
// licence. It reads source trees only: it never fetches, builds or runs.
package goapi
