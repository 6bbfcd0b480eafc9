package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Index is report.json: what the report holds and where, every path
// relative to the report's directory.
type Index struct {
	Title string `json:"title"`
	// HTML is the page: index.html.
	HTML     string         `json:"html"`
	Sections []IndexSection `json:"sections"`
	Tables   []IndexTable   `json:"tables"`
	Figures  []IndexFigure  `json:"figures"`
	// Artifacts are the artifacts read, with their content digests.
	Artifacts []ArtifactRef `json:"artifacts"`
	// NotComputed are the instances the report would read that have no
	// artifact yet.
	NotComputed []Pending `json:"not_computed"`
}

// IndexSection is one section of the page, by its anchor.
type IndexSection struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Tables  []string `json:"tables"`
	Figures []string `json:"figures"`
	// NotComputed are the addresses of its nodes with no artifact yet.
	NotComputed []string `json:"not_computed,omitempty"`
}

// IndexTable is one table's files.
type IndexTable struct {
	ID       string   `json:"id"`
	Title    string   `json:"title"`
	Section  string   `json:"section"`
	Markdown string   `json:"markdown"`
	CSV      string   `json:"csv"`
	Rows     int      `json:"rows"`
	Sources  []string `json:"sources"`
}

// IndexFigure is one figure's files.
type IndexFigure struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Section string   `json:"section"`
	SVG     string   `json:"svg"`
	PNG     string   `json:"png"`
	Series  []string `json:"series"`
	Sources []string `json:"sources"`
}

// Files the report writes in its directory.
const (
	indexHTML = "index.html"
	indexJSON = "report.json"
	figureDir = "figures"
	tableDir  = "tables"
)

// Write writes the report into dir: index.html, figures/ID.svg and .png,
// tables/ID.md and .csv, and report.json, and returns the index. dir is
// created if needed; a directory that already holds files must hold a
// report (its report.json), whose files Write replaces, so that stale
// figures do not survive; any other non-empty directory is refused. The
// same report writes the same bytes.
func (r *Report) Write(dir string) (*Index, error) {
	if err := prepare(dir); err != nil {
		return nil, err
	}
	idx := &Index{Title: r.Title, HTML: indexHTML, Artifacts: r.Artifacts, NotComputed: r.NotComputed}
	if idx.Artifacts == nil {
		idx.Artifacts = []ArtifactRef{}
	}
	if idx.NotComputed == nil {
		idx.NotComputed = []Pending{}
	}
	svgs := map[string]template.HTML{}
	for _, s := range r.Sections {
		is := IndexSection{ID: s.ID, Title: s.Title, Tables: []string{}, Figures: []string{}}
		for _, m := range s.Missing {
			is.NotComputed = append(is.NotComputed, m.Node)
		}
		for _, bl := range s.Blocks {
			switch {
			case bl.Table != nil:
				t := bl.Table
				md := filepath.ToSlash(filepath.Join(tableDir, t.ID+".md"))
				csvPath := filepath.ToSlash(filepath.Join(tableDir, t.ID+".csv"))
				csvData, err := t.CSV()
				if err != nil {
					return nil, fmt.Errorf("table %s: %w", t.ID, err)
				}
				if err := writeFile(dir, md, t.Markdown()); err != nil {
					return nil, err
				}
				if err := writeFile(dir, csvPath, csvData); err != nil {
					return nil, err
				}
				is.Tables = append(is.Tables, t.ID)
				idx.Tables = append(idx.Tables, IndexTable{ID: t.ID, Title: t.Title, Section: s.ID, Markdown: md, CSV: csvPath, Rows: len(t.Rows), Sources: nonNil(t.Sources)})
			case bl.Figure != nil:
				f := bl.Figure
				svgPath := filepath.ToSlash(filepath.Join(figureDir, f.ID+".svg"))
				pngPath := filepath.ToSlash(filepath.Join(figureDir, f.ID+".png"))
				svg, err := f.render("svg")
				if err != nil {
					return nil, fmt.Errorf("figure %s: %w", f.ID, err)
				}
				png, err := f.render("png")
				if err != nil {
					return nil, fmt.Errorf("figure %s: %w", f.ID, err)
				}
				if err := writeFile(dir, svgPath, svg); err != nil {
					return nil, err
				}
				if err := writeFile(dir, pngPath, png); err != nil {
					return nil, err
				}
				svgs[f.ID] = inlineSVG(svg)
				is.Figures = append(is.Figures, f.ID)
				idx.Figures = append(idx.Figures, IndexFigure{ID: f.ID, Title: f.Title, Section: s.ID, SVG: svgPath, PNG: pngPath, Series: nonNil(f.Series), Sources: nonNil(f.Sources)})
			}
		}
		idx.Sections = append(idx.Sections, is)
	}
	if idx.Sections == nil {
		idx.Sections = []IndexSection{}
	}
	if idx.Tables == nil {
		idx.Tables = []IndexTable{}
	}
	if idx.Figures == nil {
		idx.Figures = []IndexFigure{}
	}
	var page bytes.Buffer
	if err := pageTemplate.Execute(&page, pageData{Report: r, SVG: svgs}); err != nil {
		return nil, err
	}
	if err := writeFile(dir, indexHTML, page.Bytes()); err != nil {
		return nil, err
	}
	js, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeFile(dir, indexJSON, append(js, '\n')); err != nil {
		return nil, err
	}
	return idx, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// prepare makes dir ready: created, or emptied of a previous report's
// files.
func prepare(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	case len(entries) == 0:
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, indexJSON)); err != nil {
		return fmt.Errorf("%s is not empty and holds no report (%s): give an empty or new directory", dir, indexJSON)
	}
	for _, name := range []string{figureDir, tableDir, indexHTML, indexJSON} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes dir/rel through a temporary name, so that an
// interrupted write leaves no half-written file under the real one.
func writeFile(dir, rel string, data []byte) error {
	path := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// inlineSVG is an SVG file's markup for an HTML page: without its XML
// declaration and generator comment.
func inlineSVG(svg []byte) template.HTML {
	s := string(svg)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return template.HTML(s) // gonum's vgsvg escapes the text it draws
}

type pageData struct {
	*Report
	SVG map[string]template.HTML
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"cell": func(t *Table, row []Cell, i int) string {
		cells := t.cells(row)
		return cells[i].display(t.Columns[i].decimals())
	},
	"numeric": func(t *Table, row []Cell, i int) bool {
		return t.cells(row)[i].IsNum
	},
	"csvPath": func(id string) string { return tableDir + "/" + id + ".csv" },
	"mdPath":  func(id string) string { return tableDir + "/" + id + ".md" },
	"svgPath": func(id string) string { return figureDir + "/" + id + ".svg" },
	"pngPath": func(id string) string { return figureDir + "/" + id + ".png" },
	"short":   short,
}).Parse(pageHTML))

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lacuna report: {{.Title}}</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; } h2 { font-size: 1.3em; border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; } h3 { font-size: 1.05em; }
nav ul { columns: 2; } p.files, figcaption, p.caption { color: #555; font-size: .9em; }
table { border-collapse: collapse; margin: .5em 0 .3em; font-size: .88em; }
th, td { border: 1px solid #ddd; padding: .25em .55em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th { background: #f3f5f8; } tr:nth-child(even) td { background: #fafbfc; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
.missing { background: #fff8e1; border-left: 4px solid #f0b400; padding: .4em .8em; }
code { background: #f3f3f3; padding: 0 .2em; }
</style>
</head>
<body>
<h1>lacuna report: {{.Title}}</h1>
<p>Every number below is read from an artifact in the store, or computed from its rows where the text says so;
each table's and figure's sources are the nodes it names, and <code>report.json</code> lists the artifacts' content digests.
Tables are also in <code>tables/</code> (Markdown and CSV: the CSV holds unrounded values and each interval's bounds as columns), figures in <code>figures/</code> (SVG and PNG).</p>
{{if .Sections}}<nav><ul>{{range .Sections}}<li><a href="#{{.ID}}">{{.Title}}</a></li>{{end}}<li><a href="#artifacts">Artifacts read</a></li></ul></nav>
{{else}}<p class="missing">No node of a type this report reads (metrics, judge, c1, tasks, surface_diff, retrieval_eval, probe_metrics, ...) is in this pipeline.</p>
{{end}}{{$root := .}}{{range .Sections}}<section id="{{.ID}}">
<h2>{{.Title}}</h2>
{{if .Missing}}<div class="missing"><p>Not computed: run <code>{{$root.Run}}</code>.</p><ul>{{range .Missing}}<li><code>{{.Node}}</code>{{if .Reason}}: {{.Reason}}{{end}}</li>{{end}}</ul></div>
{{end}}{{range .Blocks}}{{if .Text}}<p>{{.Text}}</p>
{{end}}{{with .Table}}<h3 id="table-{{.ID}}">{{.Title}}</h3>
{{if .Caption}}<p class="caption">{{.Caption}}</p>
{{end}}{{$t := .}}<table>
<thead><tr>{{range .Columns}}<th>{{.Title}}{{if not .Title}}{{.Name}}{{end}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}{{$row := .}}<tr>{{range $i, $c := $t.Columns}}<td{{if numeric $t $row $i}} class="num"{{end}}>{{cell $t $row $i}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
<p class="files"><a href="{{mdPath .ID}}">{{mdPath .ID}}</a> · <a href="{{csvPath .ID}}">{{csvPath .ID}}</a> · from {{range $i, $s := .Sources}}{{if $i}}, {{end}}<code>{{$s}}</code>{{end}}</p>
{{end}}{{with .Figure}}<figure id="figure-{{.ID}}">
{{index $root.SVG .ID}}
<figcaption><strong>{{.Title}}.</strong> {{.Caption}} <a href="{{svgPath .ID}}">{{svgPath .ID}}</a> · <a href="{{pngPath .ID}}">{{pngPath .ID}}</a></figcaption>
</figure>
{{end}}{{end}}</section>
{{end}}<section id="artifacts">
<h2>Artifacts read</h2>
{{if .Artifacts}}<table>
<thead><tr><th>node</th><th>type</th><th>content digest</th><th>rows</th></tr></thead>
<tbody>
{{range .Artifacts}}<tr><td><code>{{.Node}}</code>{{if .LastKnown}} (last known){{end}}</td><td>{{.Type}}</td><td><code>{{.Digest}}</code></td><td class="num">{{.Rows}}</td></tr>
{{end}}</tbody>
</table>
{{else}}<p>None.</p>
{{end}}{{if .NotComputed}}<div class="missing"><p>Not computed: run <code>{{.Run}}</code>.</p><ul>{{range .NotComputed}}<li><code>{{.Node}}</code> ({{.Type}}){{if .Reason}}: {{.Reason}}{{end}}</li>{{end}}</ul></div>
{{end}}</section>
</body>
</html>
`
