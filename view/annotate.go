package view

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/annotations"
)

// kappaView is Cohen's κ of people's labels against a judge (or of two
// people), with what it stands on.
type kappaView struct {
	Of    string   // what is compared
	Kappa *float64 // nil when undefined (no pairs, or one class only)
	N     int      // pairs
	Agree int      // pairs that agree
	Note  string   // why κ is undefined
	// NoJudge says the rows carry no judge verdict to compare with.
	NoJudge bool
}

// Text is κ in words: "κ = 0.40 over 10 labels (7 agree)".
func (k kappaView) Text() string {
	if k.NoJudge {
		return "κ: none (" + k.Note + ")"
	}
	if k.N == 0 {
		return "κ: no labels yet"
	}
	agree := fmt.Sprintf("%d of %d agree", k.Agree, k.N)
	if k.Kappa == nil {
		return fmt.Sprintf("κ undefined over %d labels (%s; %s)", k.N, agree, k.Note)
	}
	return fmt.Sprintf("κ = %.2f over %d labels (%s)", *k.Kappa, k.N, agree)
}

func newKappa(of string, a, b []string) kappaView {
	k, n := annotations.Kappa(a, b)
	v := kappaView{Of: of, N: n}
	for i := range min(len(a), len(b)) {
		if a[i] != "" && b[i] != "" && a[i] == b[i] {
			v.Agree++
		}
	}
	if math.IsNaN(k) {
		v.Note = "both sides used a single class"
	} else {
		v.Kappa = &k
	}
	return v
}

// judgeKappa is κ of the failure-class labels of judge node addr
// against its classes (rows: its output).
func judgeKappa(labels []annotations.Label, addr string, rows *records) kappaView {
	class := map[string]string{}
	for _, r := range rows.Rows {
		class[annotations.JudgeItem(str(r, "task_id"), str(r, "sample_id"), str(r, "model"), str(r, "cell"))] = str(r, "class")
	}
	var human, judge []string
	for _, l := range labels {
		if l.Kind != annotations.KindFailureClass || l.Node != addr {
			continue
		}
		if c, ok := class[l.Item]; ok {
			human, judge = append(human, l.Label), append(judge, c)
		}
	}
	return newKappa("people vs the judge, "+addr, human, judge)
}

// rrbKappa is κ of the verdicts people gave the items of RRB node addr
// against its generator's judge, which accepted every row an rrb_generate
// node kept ("valid"). A released RRB (an import) has no judge verdicts.
func rrbKappa(labels []annotations.Label, addr, typ string) kappaView {
	var human, judge []string
	for _, l := range labels {
		if l.Kind == annotations.KindRRBItem && l.Node == addr {
			human, judge = append(human, l.Label), append(judge, "valid")
		}
	}
	if typ != "rrb_generate" {
		return kappaView{Of: "people vs the RRB judge, " + addr, NoJudge: true, Note: "this node's rows carry no judge verdict"}
	}
	return newKappa("people vs the RRB judge (every kept row: valid), "+addr, human, judge)
}

// annotatorKappas is κ between every two annotators over the rows both
// labelled.
func annotatorKappas(labels []annotations.Label) []kappaView {
	type row struct{ kind, node, item string }
	by := map[string]map[row]string{}
	for _, l := range labels {
		if by[l.Annotator] == nil {
			by[l.Annotator] = map[row]string{}
		}
		by[l.Annotator][row{l.Kind, l.Node, l.Item}] = l.Label
	}
	var names []string
	for n := range by {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []kappaView
	for i, a := range names {
		for _, b := range names[i+1:] {
			var xs, ys []string
			var keys []row
			for k := range by[a] {
				if _, ok := by[b][k]; ok {
					keys = append(keys, k)
				}
			}
			sort.Slice(keys, func(i, j int) bool {
				return keys[i].kind+keys[i].node+keys[i].item < keys[j].kind+keys[j].node+keys[j].item
			})
			for _, k := range keys {
				xs, ys = append(xs, by[a][k]), append(ys, by[b][k])
			}
			if len(keys) > 0 {
				out = append(out, newKappa(a+" vs "+b, xs, ys))
			}
		}
	}
	return out
}

type annotationsData struct {
	Labels  []annotations.Label
	History []annotations.Save
	Kappas  []kappaView
	Error   string
}

func (s *Server) handleAnnotations(w http.ResponseWriter, r *http.Request) {
	var d annotationsData
	labels, err := annotations.Load(s.cfg.Store, s.cfg.Pipeline)
	if err != nil {
		d.Error = err.Error()
	}
	d.Labels = labels
	if h, err := annotations.History(s.cfg.Store, s.cfg.Pipeline); err == nil {
		slices.Reverse(h)
		d.History = h
	}
	nodes, by, err := s.plan(r.Context())
	if err == nil {
		for _, addr := range byType(nodes, "judge") {
			if !slices.ContainsFunc(labels, func(l annotations.Label) bool { return l.Node == addr }) {
				continue
			}
			if _, rs, err := s.nodeRecords(by[addr]); err == nil {
				d.Kappas = append(d.Kappas, judgeKappa(labels, addr, rs))
			}
		}
		seen := map[string]bool{}
		for _, l := range labels {
			if l.Kind == annotations.KindRRBItem && !seen[l.Node] {
				seen[l.Node] = true
				d.Kappas = append(d.Kappas, rrbKappa(labels, l.Node, by[l.Node].Type))
			}
		}
	}
	d.Kappas = append(d.Kappas, annotatorKappas(labels)...)
	s.render(w, r, "annotations", "annotations", d)
}

// errForbidden is a POST that did not come from this viewer's own page.
var errForbidden = errors.New("refused: an annotation is saved only from this viewer's own page (same origin, with its form's token)")

// handleAnnotate saves one label (POST only: the viewer's one write).
// The request must come from a page of this server (Origin or Referer,
// and Sec-Fetch-Site) and carry the form's token; the labelled row must
// exist in the node's current output.
func (s *Server) handleAnnotate(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		s.fail(w, r, http.StatusForbidden, errForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	if !s.checkToken(r.PostForm.Get("token")) {
		s.fail(w, r, http.StatusForbidden, errForbidden)
		return
	}
	f := r.PostForm
	l := annotations.Label{Kind: f.Get("kind"), Node: f.Get("node"), Item: f.Get("item"), Label: f.Get("label"),
		Annotator: strings.TrimSpace(f.Get("annotator")), Note: strings.TrimSpace(f.Get("note"))}
	if err := s.checkLabel(r, l); err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	if _, err := annotations.Add(s.cfg.Store, s.cfg.Pipeline, l); err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	http.Redirect(w, r, back(f.Get("back"))+"#labels", http.StatusSeeOther)
}

// checkLabel accepts a label of a row that exists: a judge node's
// sample with a failure class, or an RRB node's item with a verdict.
func (s *Server) checkLabel(r *http.Request, l annotations.Label) error {
	if l.Annotator == "" {
		return errors.New("give your name as annotator: labels are compared person by person")
	}
	_, by, err := s.plan(r.Context())
	if err != nil {
		return err
	}
	n, ok := by[l.Node]
	if !ok {
		return fmt.Errorf("no node %q in this pipeline", l.Node)
	}
	_, rs, err := s.nodeRecords(n)
	if err != nil {
		return err
	}
	switch l.Kind {
	case annotations.KindFailureClass:
		if n.Type != "judge" {
			return fmt.Errorf("a failure class labels a judge node's sample, not a %s node's row", n.Type)
		}
		if !slices.Contains(FailureClasses, l.Label) {
			return fmt.Errorf("%q is not a failure class (%s)", l.Label, strings.Join(FailureClasses, ", "))
		}
		for _, row := range rs.Rows {
			if annotations.JudgeItem(str(row, "task_id"), str(row, "sample_id"), str(row, "model"), str(row, "cell")) == l.Item {
				return nil
			}
		}
	case annotations.KindRRBItem:
		if !slices.Contains(RRBVerdicts, l.Label) {
			return fmt.Errorf("%q is not an RRB verdict (%s)", l.Label, strings.Join(RRBVerdicts, ", "))
		}
		if !rs.has("sample_id", "query") {
			return fmt.Errorf("%s has no RRB rows (sample_id, query)", l.Node)
		}
		for _, row := range rs.Rows {
			if annotations.RRBItem(str(row, "sample_id")) == l.Item {
				return nil
			}
		}
	default:
		return fmt.Errorf("kind %q is neither %q nor %q", l.Kind, annotations.KindFailureClass, annotations.KindRRBItem)
	}
	return fmt.Errorf("%s has no row %s", l.Node, l.Item)
}
