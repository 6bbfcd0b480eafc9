package view

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lacuna-dev/lacuna/artifacts"
)

// Paging bounds of the artifact page.
const (
	defaultPerPage = 25
	maxPerPage     = 500
	shortCell      = 80 // characters of a cell shown before it folds
)

// cellView is one value as the table shows it: up to shortCell
// characters on the line, the whole value folded below when longer or
// on several lines.
type cellView struct {
	Short string
	Full  string
	Long  bool
	Null  bool
	Num   bool
}

func viewCell(v any) cellView {
	if v == nil {
		return cellView{Short: "null", Null: true}
	}
	t := text(v)
	_, isNum := num(v)
	c := cellView{Short: t, Full: t, Num: isNum}
	if utf8.RuneCountInString(t) > shortCell || strings.Contains(t, "\n") {
		c.Long = true
		line, _, _ := strings.Cut(t, "\n")
		if rs := []rune(line); len(rs) > shortCell {
			line = string(rs[:shortCell])
		}
		c.Short = line + " …"
	}
	return c
}

type artifactRow struct {
	Index int            `json:"index"`
	Row   map[string]any `json:"row"`
	Cells []cellView     `json:"-"`
	Link  string         `json:"-"`
	Drill string         `json:"drill,omitempty"`
}

type link struct{ Text, URL string }

type artifactData struct {
	Digest    artifacts.Digest
	Addr      string
	Meta      map[string]string
	Columns   []string
	Rows      []artifactRow
	Total     int
	Matched   int
	Page      int
	Pages     int
	PerPage   int
	Filters   []link // the filter and the URL without it
	Sort      string
	Desc      bool
	SortLinks []link `json:"-"`
	Prev      string `json:"-"`
	Next      string `json:"-"`
	Hidden    [][2]string
	DrillName string
}

// with returns the page's query with key set to value ("" deletes it),
// and the page reset unless key is the page.
func with(q url.Values, key, value string) string {
	c := url.Values{}
	for k, v := range q {
		c[k] = slices.Clone(v)
	}
	if value == "" {
		c.Del(key)
	} else {
		c.Set(key, value)
	}
	if key != "p" {
		c.Del("p")
	}
	c.Del("format")
	return c.Encode()
}

func urlQuery(s string) string { return url.QueryEscape(s) }

func (s *Server) handleArtifact(w http.ResponseWriter, r *http.Request) {
	d := artifacts.Digest(r.PathValue("digest"))
	q := r.URL.Query()
	rs, err := s.records(d)
	if err != nil {
		s.fail(w, r, http.StatusNotFound, err)
		return
	}
	// The filter form's fields add one condition to those in w.
	if c, v := q.Get("fc"), q.Get("fv"); c != "" {
		op := q.Get("fo")
		if op != "~" {
			op = "="
		}
		q.Add("w", c+op+v)
		q.Del("fc")
		q.Del("fo")
		q.Del("fv")
	}
	data := artifactData{Digest: d, Addr: q.Get("addr"), Meta: rs.Meta, Columns: rs.Columns, Total: len(rs.Rows), Sort: q.Get("sort"), Desc: q.Get("desc") == "1"}
	var filters []filter
	for _, f := range q["w"] {
		fl, err := parseFilter(f)
		if err == nil && !slices.Contains(rs.Columns, fl.Col) {
			err = fmt.Errorf("no column %q (columns: %s)", fl.Col, strings.Join(rs.Columns, ", "))
		}
		if err != nil {
			s.fail(w, r, http.StatusBadRequest, err)
			return
		}
		filters = append(filters, fl)
		rest := url.Values{}
		for k, v := range q {
			rest[k] = slices.Clone(v)
		}
		rest["w"] = slices.DeleteFunc(slices.Clone(q["w"]), func(x string) bool { return x == f })
		rest.Del("p")
		data.Filters = append(data.Filters, link{fl.String(), "?" + rest.Encode()})
	}
	if data.Sort != "" && !slices.Contains(rs.Columns, data.Sort) {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("sort: no column %q", data.Sort))
		return
	}
	idx := make([]int, 0, len(rs.Rows))
	for i, row := range rs.Rows {
		keep := true
		for _, f := range filters {
			keep = keep && f.keep(row)
		}
		if keep {
			idx = append(idx, i)
		}
	}
	if data.Sort != "" {
		sort.SliceStable(idx, func(a, b int) bool {
			c := compare(rs.Rows[idx[a]][data.Sort], rs.Rows[idx[b]][data.Sort])
			if data.Desc {
				return c > 0
			}
			return c < 0
		})
	}
	data.Matched = len(idx)
	data.PerPage = defaultPerPage
	if n, err := strconv.Atoi(q.Get("n")); err == nil && n > 0 {
		data.PerPage = min(n, maxPerPage)
	}
	data.Pages = max(1, (len(idx)+data.PerPage-1)/data.PerPage)
	data.Page = 1
	if p, err := strconv.Atoi(q.Get("p")); err == nil && p > 0 {
		data.Page = min(p, data.Pages)
	}
	lo := (data.Page - 1) * data.PerPage
	hi := min(lo+data.PerPage, len(idx))
	drill := s.drill(r, data.Addr, rs)
	if drill != nil {
		data.DrillName = drill.name
	}
	for _, i := range idx[lo:hi] {
		row := rs.Rows[i]
		ar := artifactRow{Index: i, Row: artifacts.JSONSafe(row).(map[string]any), Link: fmt.Sprintf("/row/%s/%d", d, i)}
		for _, c := range rs.Columns {
			ar.Cells = append(ar.Cells, viewCell(row[c]))
		}
		if drill != nil {
			ar.Drill = drill.url(row)
		}
		data.Rows = append(data.Rows, ar)
	}
	for _, c := range rs.Columns {
		desc := ""
		if data.Sort == c && !data.Desc {
			desc = "1"
		}
		v := url.Values{}
		for k, x := range q {
			v[k] = x
		}
		v.Set("sort", c)
		if desc == "" {
			v.Del("desc")
		} else {
			v.Set("desc", desc)
		}
		v.Del("p")
		v.Del("format")
		data.SortLinks = append(data.SortLinks, link{c, "?" + v.Encode()})
	}
	if data.Page > 1 {
		data.Prev = "?" + with(q, "p", strconv.Itoa(data.Page-1))
	}
	if data.Page < data.Pages {
		data.Next = "?" + with(q, "p", strconv.Itoa(data.Page+1))
	}
	for k, vs := range q {
		if k == "p" || k == "format" {
			continue
		}
		for _, v := range vs {
			data.Hidden = append(data.Hidden, [2]string{k, v})
		}
	}
	sort.Slice(data.Hidden, func(a, b int) bool { return data.Hidden[a][0] < data.Hidden[b][0] })
	title := "artifact " + string(d)
	if data.Addr != "" {
		title = data.Addr
	}
	s.render(w, r, "artifact", title, data)
}

// drillLink makes the drill-down link of a row.
type drillLink struct {
	name string
	url  func(row map[string]any) string
}

// drill returns how rows of the artifact link to a drill-down page: a
// judge node's rows to their sample, a retrieve node's to their query;
// nil for other artifacts.
func (s *Server) drill(r *http.Request, addr string, rs *records) *drillLink {
	if addr == "" {
		return nil
	}
	_, by, err := s.plan(r.Context())
	if err != nil {
		return nil
	}
	n, ok := by[addr]
	if !ok {
		return nil
	}
	switch {
	case n.Type == "judge" && rs.has("task_id", "sample_id", "model", "cell", "class"):
		return &drillLink{"sample", func(row map[string]any) string {
			return sampleURL(addr, str(row, "task_id"), str(row, "sample_id"), str(row, "model"), str(row, "cell"))
		}}
	case n.Type == "retrieve" && rs.has("sample_id", "ranked", "answers"):
		return &drillLink{"query", func(row map[string]any) string {
			return "/query?" + url.Values{"retrieve": {addr}, "sample": {str(row, "sample_id")}}.Encode()
		}}
	}
	return nil
}

func sampleURL(judge, task, sample, model, cell string) string {
	return "/sample?" + url.Values{"judge": {judge}, "task": {task}, "sample": {sample}, "model": {model}, "cell": {cell}}.Encode()
}

type rowData struct {
	Digest artifacts.Digest
	Index  int
	Fields []rowField
	Row    map[string]any
}

type rowField struct {
	Name string
	Text string
	Null bool
}

func (s *Server) handleRow(w http.ResponseWriter, r *http.Request) {
	d := artifacts.Digest(r.PathValue("digest"))
	rs, err := s.records(d)
	if err != nil {
		s.fail(w, r, http.StatusNotFound, err)
		return
	}
	i, err := strconv.Atoi(r.PathValue("index"))
	if err != nil || i < 0 || i >= len(rs.Rows) {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("artifact %s has no row %s (it has %d)", d, r.PathValue("index"), len(rs.Rows)))
		return
	}
	row := rs.Rows[i]
	data := rowData{Digest: d, Index: i, Row: artifacts.JSONSafe(row).(map[string]any)}
	for _, c := range rs.Columns {
		data.Fields = append(data.Fields, rowField{Name: c, Text: text(row[c]), Null: row[c] == nil})
	}
	s.render(w, r, "row", fmt.Sprintf("row %d of %s", i, d), data)
}
