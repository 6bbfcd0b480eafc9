package view

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/lacuna-dev/lacuna/annotations"
)

// RRBVerdicts are the labels a person gives an RRB item.
var RRBVerdicts = []string{"valid", "invalid"}

type rankedTool struct {
	Rank        int
	Name        string
	Score       float64
	Gold        bool
	Title       string
	Description string
}

type goldRank struct {
	Name string
	Rank int // 1-based; 0 when not in the top k
}

type otherRanking struct {
	Retrieve, Retriever string
	FirstGold           int
	Link                string
}

type queryData struct {
	Retrieve, SampleID, Query, Tier, Retriever string
	K                                          int
	Ranked                                     []rankedTool
	Gold                                       []goldRank
	FirstGold                                  int
	NotInCatalog                               int64
	RRBNode, RRBType                           string
	Item                                       string
	RRBFields                                  []rowField
	Others                                     []otherRanking
	Labels                                     []annotations.Label
	Verdicts                                   []string
	Annotator, Back                            string
	Kappa                                      kappaView
	Missing                                    []string
}

func (s *Server) handleQuery(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := queryData{Retrieve: q.Get("retrieve"), SampleID: q.Get("sample"), Verdicts: RRBVerdicts, Annotator: s.cfg.Annotator, Back: r.URL.RequestURI()}
	d.Item = annotations.RRBItem(d.SampleID)
	nodes, by, err := s.plan(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	n, ok := by[d.Retrieve]
	if !ok || n.Type != "retrieve" {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("no retrieve node %q in this pipeline", d.Retrieve))
		return
	}
	a, rs, err := s.nodeRecords(n)
	if err != nil {
		s.fail(w, r, http.StatusNotFound, err)
		return
	}
	row, _ := rs.find("sample_id", d.SampleID)
	if row == nil {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("%s has no query %q", d.Retrieve, d.SampleID))
		return
	}
	d.Query, d.Tier, d.Retriever = str(row, "query"), str(row, "tier"), str(row, "retriever")
	if v, ok := row["answers_not_in_catalog"].(int64); ok {
		d.NotInCatalog = v
	}
	answers := strs(row["answers"])
	ranked := strs(row["ranked"])
	scores, _ := row["scores"].([]any)
	d.K = len(ranked)
	catalog := map[string]map[string]any{}
	if cin, _, ok := s.lineage(a, "catalog", by); ok {
		if crs, err := s.records(cin.Digest); err == nil {
			for _, c := range crs.Rows {
				catalog[str(c, "tool_name")] = c
			}
		} else {
			d.Missing = append(d.Missing, "the catalog: "+err.Error())
		}
	}
	for i, name := range ranked {
		t := rankedTool{Rank: i + 1, Name: name, Gold: slices.Contains(answers, name)}
		if i < len(scores) {
			t.Score, _ = num(scores[i])
		}
		if c := catalog[name]; c != nil {
			t.Title = str(c, "tool_title") + " · " + str(c, "api_title")
			t.Description = str(c, "api_description")
			if t.Description == "" || t.Description == "None" {
				t.Description = str(c, "tool_description")
			}
		}
		if t.Gold && d.FirstGold == 0 {
			d.FirstGold = i + 1
		}
		d.Ranked = append(d.Ranked, t)
	}
	for _, g := range answers {
		d.Gold = append(d.Gold, goldRank{Name: g, Rank: slices.Index(ranked, g) + 1})
	}
	if qin, _, ok := s.lineage(a, "queries", by); ok {
		d.RRBNode = qin.Node
		d.RRBType = by[qin.Node].Type
		if qrs, err := s.records(qin.Digest); err == nil {
			if qrow, _ := qrs.find("sample_id", d.SampleID); qrow != nil {
				for _, c := range []string{"complexity", "tool", "seed", "attempt", "judge_reason"} {
					if slices.Contains(qrs.Columns, c) {
						d.RRBFields = append(d.RRBFields, rowField{Name: c, Text: str(qrow, c)})
					}
				}
			}
		}
	}
	for _, addr := range byType(nodes, "retrieve") {
		if addr == d.Retrieve {
			continue
		}
		_, ors, err := s.nodeRecords(by[addr])
		if err != nil {
			continue
		}
		if orow, _ := ors.find("sample_id", d.SampleID); orow != nil {
			d.Others = append(d.Others, otherRanking{Retrieve: addr, Retriever: str(orow, "retriever"),
				FirstGold: firstGold(strs(orow["ranked"]), strs(orow["answers"])),
				Link:      "/query?" + url.Values{"retrieve": {addr}, "sample": {d.SampleID}}.Encode()})
		}
	}
	labels, err := annotations.Load(s.cfg.Store, s.cfg.Pipeline)
	if err != nil {
		d.Missing = append(d.Missing, "the labels: "+err.Error())
	}
	for _, l := range labels {
		if l.Kind == annotations.KindRRBItem && l.Node == d.RRBNode && l.Item == d.Item {
			d.Labels = append(d.Labels, l)
		}
	}
	d.Kappa = rrbKappa(labels, d.RRBNode, d.RRBType)
	s.render(w, r, "query", "query "+d.SampleID, d)
}

// firstGold is the 1-based rank of the first answer in ranked, 0 when
// none is there.
func firstGold(ranked, answers []string) int {
	for i, t := range ranked {
		if slices.Contains(answers, t) {
			return i + 1
		}
	}
	return 0
}
