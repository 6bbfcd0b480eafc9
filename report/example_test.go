package report_test

import (
	"os"

	"github.com/lacuna-dev/lacuna/report"
)

// A table as its Markdown and CSV files hold it: the value with its
// interval in Markdown, the bounds as columns of their own in CSV, a
// missing value "–" and empty.
func ExampleTable_Markdown() {
	t := report.Table{
		Title:   "Table 1 (metrics.table)",
		Columns: []report.Column{{Name: "cell"}, {Name: "pass_at_1", Title: "pass@1"}},
		Rows: [][]report.Cell{
			{{Text: "baseline"}, {Num: 0, IsNum: true, Lo: 0, Hi: 27.75, HasCI: true}},
			{{Text: "S"}, {Num: 40, IsNum: true, Lo: 16.82, Hi: 68.73, HasCI: true}},
			{{Text: "Full"}, {}},
		},
	}
	os.Stdout.Write(t.Markdown())
	csv, _ := t.CSV()
	os.Stdout.Write(csv)
	// Output:
	// ### Table 1 (metrics.table)
	//
	// | cell | pass@1 |
	// |---|---|
	// | baseline | 0 [0, 27.75] |
	// | S | 40 [16.82, 68.73] |
	// | Full | – |
	// cell,pass_at_1,pass_at_1_lo,pass_at_1_hi
	// baseline,0,0,27.75
	// S,40,16.82,68.73
	// Full,,,
}
