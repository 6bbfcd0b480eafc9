package report

import (
	"bytes"
	"encoding/csv"
	"math"
	"strconv"
	"strings"
)

// A Table is written as Markdown (tables/ID.md) and CSV (tables/ID.csv)
// and shown in the HTML page. In Markdown and HTML a value with an
// interval reads "v [lo, hi]"; CSV gives the value, _lo and _hi columns,
// unrounded.
type Table struct {
	// ID names its files.
	ID      string
	Title   string
	Caption string
	Columns []Column
	Rows    [][]Cell
	// Sources are the addresses of the nodes whose artifacts it reads.
	Sources []string
}

// A Column is one column of a Table.
type Column struct {
	// Name is the CSV header (and the stem of its _lo and _hi columns).
	Name string
	// Title is the Markdown and HTML header; Name when empty.
	Title string
	// Decimals is how many decimals Markdown and HTML show (default 2).
	Decimals int
}

func (c Column) title() string {
	if c.Title != "" {
		return c.Title
	}
	return c.Name
}

func (c Column) decimals() int {
	if c.Decimals == 0 {
		return 2
	}
	return c.Decimals
}

// A Cell is text, a number, a number with its interval, or empty (a null
// or a value the artifact does not define: "–" in Markdown and HTML,
// empty in CSV).
type Cell struct {
	Text   string
	Num    float64
	IsNum  bool
	Lo, Hi float64
	HasCI  bool
}

func textCell(s string) Cell { return Cell{Text: s} }

func numCell(v float64) Cell {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Cell{}
	}
	return Cell{Num: v, IsNum: true}
}

func intCell(n int) Cell { return Cell{Num: float64(n), IsNum: true} }

// ciCell is v with [lo, hi]; an interval with a NaN bound is left out.
func ciCell(v, lo, hi float64) Cell {
	c := numCell(v)
	if c.IsNum && !math.IsNaN(lo) && !math.IsNaN(hi) && !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
		c.Lo, c.Hi, c.HasCI = lo, hi, true
	}
	return c
}

// fmtNum formats v rounded to dec decimals, without trailing zeros.
func fmtNum(v float64, dec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	p := math.Pow(10, float64(dec))
	r := math.Round(v*p) / p
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// rawNum formats v exactly, for CSV.
func rawNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// display is the cell as Markdown and HTML show it.
func (c Cell) display(dec int) string {
	switch {
	case c.HasCI:
		return fmtNum(c.Num, dec) + " [" + fmtNum(c.Lo, dec) + ", " + fmtNum(c.Hi, dec) + "]"
	case c.IsNum:
		return fmtNum(c.Num, dec)
	case c.Text == "":
		return "–"
	}
	return c.Text
}

// hasCI reports whether any cell of column i has an interval.
func (t *Table) hasCI(i int) bool {
	for _, r := range t.Rows {
		if i < len(r) && r[i].HasCI {
			return true
		}
	}
	return false
}

// cells are the row's cells, padded to the columns.
func (t *Table) cells(r []Cell) []Cell {
	out := make([]Cell, len(t.Columns))
	copy(out, r)
	return out
}

// Markdown writes the table as a GitHub-flavoured Markdown table under its
// title and caption.
func (t *Table) Markdown() []byte {
	var b strings.Builder
	b.WriteString("### " + t.Title + "\n\n")
	if t.Caption != "" {
		b.WriteString(t.Caption + "\n\n")
	}
	esc := func(s string) string {
		s = strings.ReplaceAll(s, "|", `\|`)
		return strings.ReplaceAll(s, "\n", " ")
	}
	b.WriteString("|")
	for _, c := range t.Columns {
		b.WriteString(" " + esc(c.title()) + " |")
	}
	b.WriteString("\n|")
	for range t.Columns {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString("|")
		for i, c := range t.cells(r) {
			b.WriteString(" " + esc(c.display(t.Columns[i].decimals())) + " |")
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// CSV writes the table with a header row; a column with intervals gets
// NAME_lo and NAME_hi after it. Numbers are unrounded.
func (t *Table) CSV() ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	ci := make([]bool, len(t.Columns))
	var head []string
	for i, c := range t.Columns {
		ci[i] = t.hasCI(i)
		head = append(head, c.Name)
		if ci[i] {
			head = append(head, c.Name+"_lo", c.Name+"_hi")
		}
	}
	if err := w.Write(head); err != nil {
		return nil, err
	}
	for _, r := range t.Rows {
		var line []string
		for i, c := range t.cells(r) {
			if c.IsNum {
				line = append(line, rawNum(c.Num))
			} else {
				line = append(line, c.Text)
			}
			if ci[i] {
				if c.HasCI {
					line = append(line, rawNum(c.Lo), rawNum(c.Hi))
				} else {
					line = append(line, "", "")
				}
			}
		}
		if err := w.Write(line); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return buf.Bytes(), w.Error()
}
