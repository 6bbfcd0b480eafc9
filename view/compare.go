package view

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
)

type compareRow struct {
	Key          string
	What         string // the task or query
	A, B         string
	ALink, BLink string
	Differ       bool
}

type pairCount struct {
	A, B  string
	Count int
}

type compareData struct {
	A, B             string
	Kind             string // judge or retrieve
	Judges, Retrieve []string
	Rows             []compareRow
	Both, Agree      int
	OnlyA, OnlyB     int
	SummaryA         string
	SummaryB         string
	Pairs            []pairCount // how often A said x where B said y (judge: classes)
}

func (s *Server) handleCompare(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	nodes, by, err := s.plan(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	d := compareData{A: q.Get("a"), B: q.Get("b"), Judges: byType(nodes, "judge"), Retrieve: byType(nodes, "retrieve")}
	if d.A == "" && d.B == "" {
		s.render(w, r, "compare", "side by side", d)
		return
	}
	na, okA := by[d.A]
	nb, okB := by[d.B]
	if !okA || !okB {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("compare: %q or %q is not a node of this pipeline", d.A, d.B))
		return
	}
	if na.Type != nb.Type || (na.Type != "judge" && na.Type != "retrieve") {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("compare takes two judge nodes (models or cells) or two retrieve nodes, not %s and %s", na.Type, nb.Type))
		return
	}
	d.Kind = na.Type
	_, ra, err := s.nodeRecords(na)
	if err == nil {
		var rb *records
		if _, rb, err = s.nodeRecords(nb); err == nil {
			if d.Kind == "judge" {
				compareJudges(&d, ra, rb)
			} else {
				compareRetrieve(&d, ra, rb)
			}
		}
	}
	if err != nil {
		s.fail(w, r, http.StatusNotFound, err)
		return
	}
	s.render(w, r, "compare", d.A+" vs "+d.B, d)
}

// compareJudges pairs two judge nodes' samples by task and sample number
// (a cell's "S#0" with another's "baseline#0"; the models' alike).
func compareJudges(d *compareData, ra, rb *records) {
	key := func(row map[string]any) string {
		return str(row, "task_id") + " " + sampleSuffix(str(row, "sample_id"))
	}
	bRows := map[string]map[string]any{}
	for _, row := range rb.Rows {
		bRows[key(row)] = row
	}
	pairs := map[[2]string]int{}
	passA, passB, seen := 0, 0, map[string]bool{}
	for _, x := range ra.Rows {
		k := key(x)
		y, ok := bRows[k]
		if !ok {
			d.OnlyA++
			continue
		}
		seen[k] = true
		cx, cy := str(x, "class"), str(y, "class")
		d.Both++
		if cx == cy {
			d.Agree++
		}
		if x["passed"] == true {
			passA++
		}
		if y["passed"] == true {
			passB++
		}
		pairs[[2]string{cx, cy}]++
		d.Rows = append(d.Rows, compareRow{Key: k, What: str(x, "task_id") + " (" + str(x, "difficulty") + ")",
			A: verdict(x), B: verdict(y), Differ: cx != cy,
			ALink: sampleURL(d.A, str(x, "task_id"), str(x, "sample_id"), str(x, "model"), str(x, "cell")),
			BLink: sampleURL(d.B, str(y, "task_id"), str(y, "sample_id"), str(y, "model"), str(y, "cell"))})
	}
	d.OnlyB = len(rb.Rows) - len(seen)
	for p, n := range pairs {
		d.Pairs = append(d.Pairs, pairCount{p[0], p[1], n})
	}
	sort.Slice(d.Pairs, func(i, j int) bool {
		if d.Pairs[i].Count != d.Pairs[j].Count {
			return d.Pairs[i].Count > d.Pairs[j].Count
		}
		return d.Pairs[i].A+d.Pairs[i].B < d.Pairs[j].A+d.Pairs[j].B
	})
	if d.Both > 0 {
		d.SummaryA = fmt.Sprintf("%d of %d passed", passA, d.Both)
		d.SummaryB = fmt.Sprintf("%d of %d passed", passB, d.Both)
	}
}

func verdict(row map[string]any) string {
	v := str(row, "class")
	if row["passed"] == true {
		v += " (passed)"
	}
	return v
}

// compareRetrieve pairs two retrieve nodes' rankings by query: the rank
// of the first gold tool in each.
func compareRetrieve(d *compareData, ra, rb *records) {
	bRows := map[string]map[string]any{}
	for _, row := range rb.Rows {
		bRows[str(row, "sample_id")] = row
	}
	hitA, hitB, seen := 0, 0, map[string]bool{}
	rank := func(n int) string {
		if n == 0 {
			return "–"
		}
		return strconv.Itoa(n)
	}
	for _, x := range ra.Rows {
		k := str(x, "sample_id")
		y, ok := bRows[k]
		if !ok {
			d.OnlyA++
			continue
		}
		seen[k] = true
		d.Both++
		fa := firstGold(strs(x["ranked"]), strs(x["answers"]))
		fb := firstGold(strs(y["ranked"]), strs(y["answers"]))
		if fa == fb {
			d.Agree++
		}
		if fa > 0 {
			hitA++
		}
		if fb > 0 {
			hitB++
		}
		d.Rows = append(d.Rows, compareRow{Key: k, What: str(x, "query"), A: rank(fa), B: rank(fb), Differ: fa != fb,
			ALink: "/query?" + url.Values{"retrieve": {d.A}, "sample": {k}}.Encode(),
			BLink: "/query?" + url.Values{"retrieve": {d.B}, "sample": {k}}.Encode()})
	}
	d.OnlyB = len(rb.Rows) - len(seen)
	if d.Both > 0 {
		d.SummaryA = fmt.Sprintf("a gold tool in the top k for %d of %d queries", hitA, d.Both)
		d.SummaryB = fmt.Sprintf("a gold tool in the top k for %d of %d queries", hitB, d.Both)
	}
}
