// Package cells holds NovelAPIBench's knowledge cells (seed §4, Appendix
// E.1): the twelve conditions under which a model is asked to solve a task,
// each a selection of the parts of the target API's knowledge bundle that
// are prepended to the task prompt (the oracle prepend), and the prompt
// templates that render them.
//
// The parts of a bundle:
//
//   - S_name: the API's qualified name and its package's import path, no
//     parameter list (the paper's k1a_only).
//   - S: the signature, type parameters, and each parameter and result with
//     what the doc comment says of it.
//   - E: the validated examples, each program with the output it prints.
//   - M_prose: the documentation prose.
//   - M_code: the source, with the same-module helpers it uses.
//
// A cell is an ordered list of parts; baseline has none. Prompts are
// rendered by text/template files in templates/ (embedded), one for the
// system message, one for the task (the user message, which receives the
// rendered parts as .Knowledge) and one per part. A node overrides any of
// them by file name (ReadDir) and pins Prompts.Digest, the digest of exactly
// the files the cell uses, in its key: editing one template recomputes
// exactly the nodes whose cell uses it.
package cells

import (
	"fmt"
	"strings"

	"github.com/agext/levenshtein"
)

// Part is one knowledge component of a bundle.
type Part string

// The parts of a knowledge bundle.
const (
	SName  Part = "S_name"
	S      Part = "S"
	E      Part = "E"
	MProse Part = "M_prose"
	MCode  Part = "M_code"
)

// File is the name of the template that renders the part.
func (p Part) File() string { return string(p) + ".tmpl" }

// Cell is a knowledge condition: the parts of the bundle its prompts
// include, in the order they appear.
type Cell struct {
	Name  string
	Parts []Part
}

// Template files every cell uses: the system message and the task prompt.
const (
	SystemFile = "system.tmpl"
	TaskFile   = "task.tmpl"
)

// Files are the template files the cell's prompts are rendered with, in
// rendering order.
func (c Cell) Files() []string {
	out := []string{SystemFile, TaskFile}
	for _, p := range c.Parts {
		out = append(out, p.File())
	}
	return out
}

// all are the paper's twelve cells (Appendix E.1, Table 1), in its order.
var all = []Cell{
	{"baseline", nil},
	{"S_name", []Part{SName}},
	{"S", []Part{S}},
	{"E", []Part{E}},
	{"M_prose", []Part{MProse}},
	{"M_code", []Part{MCode}},
	{"S+M_prose", []Part{S, MProse}},
	{"S+E", []Part{S, E}},
	{"S+M_code", []Part{S, MCode}},
	{"S+M_prose+M_code", []Part{S, MProse, MCode}},
	{"S+E+M_code", []Part{S, E, MCode}},
	{"Full", []Part{S, E, MProse, MCode}},
}

// Names lists the cells, in the paper's order.
func Names() []string {
	out := make([]string, len(all))
	for i, c := range all {
		out[i] = c.Name
	}
	return out
}

// Lookup returns the cell with that name. The error for an unknown name
// lists the valid ones and suggests the closest.
func Lookup(name string) (Cell, error) {
	for _, c := range all {
		if c.Name == name {
			return Cell{Name: c.Name, Parts: append([]Part(nil), c.Parts...)}, nil
		}
	}
	msg := fmt.Sprintf("unknown cell %q; the cells are %s.", name, strings.Join(quote(Names()), ", "))
	if s := suggest(name, Names()); s != "" {
		msg += fmt.Sprintf(" Did you mean %q?", s)
	}
	return Cell{}, fmt.Errorf("%s", msg)
}

// suggest returns the candidate closest to given (ignoring case), or ""
// when none is close enough to be a plausible typo.
func suggest(given string, candidates []string) string {
	best, bestDist := "", 1<<30
	for _, c := range candidates {
		if d := levenshtein.Distance(strings.ToLower(given), strings.ToLower(c), nil); d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist <= 3 && bestDist < len(given) {
		return best
	}
	return ""
}

func quote(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
