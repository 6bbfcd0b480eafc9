package view

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lacuna-dev/lacuna/artifacts"
)

// dagNode is a node on the DAG page.
type dagNode struct {
	Node
	State  string // done, failed, will run, blocked, error
	Class  string // the CSS class of the state
	Rows   int64
	Digest artifacts.Digest
	Note   string
	Layer  int
	X, Y   int // the box's position in the drawing
	Label  string
}

type dagEdge struct{ X1, Y1, X2, Y2, MX int }

type dagData struct {
	Nodes    []dagNode
	Edges    []dagEdge `json:"-"`
	Width    int       `json:"-"`
	Height   int       `json:"-"`
	Counts   map[string]int
	Judges   []string
	Retrieve []string
}

// Drawing geometry of the DAG (pixels).
const (
	boxW, boxH = 200, 40
	colGap     = 36
	labelRunes = 30 // of an address in its box; the box's title has it whole
	rowGap     = 16
	margin     = 10
)

// state says in words what a node's plan entry and store records mean.
func (s *Server) state(n Node, snap *artifacts.Snapshot) (state, class string) {
	switch n.Status {
	case StatusCached:
		if n.LastKnown {
			return "done (last known)", "done"
		}
		return "done", "done"
	case StatusBlocked:
		return "blocked", "blocked"
	case StatusError:
		return "error", "failed"
	}
	if n.Key != "" {
		if _, err := s.cfg.Store.GetFailure(n.Key); err == nil {
			return "failed", "failed"
		}
	}
	if e, ok := snap.Nodes[n.Addr]; ok && e.Failed {
		return "failed", "failed"
	}
	return "will run", "pending"
}

func (s *Server) handleDAG(w http.ResponseWriter, r *http.Request) {
	nodes, _, err := s.plan(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	snap, _ := s.cfg.Store.LoadSnapshot(s.cfg.Pipeline)
	d := dagData{Counts: map[string]int{}, Judges: byType(nodes, "judge"), Retrieve: byType(nodes, "retrieve")}
	layer := map[string]int{}
	perLayer := map[int]int{}
	for _, n := range nodes { // topological order: inputs first
		l := 0
		for _, in := range n.Inputs {
			l = max(l, layer[in]+1)
		}
		layer[n.Addr] = l
		dn := dagNode{Node: n, Layer: l, Label: strings.TrimPrefix(n.Addr, "node.")}
		if rs := []rune(dn.Label); len(rs) > labelRunes {
			dn.Label = string(rs[:labelRunes-1]) + "…"
		}
		dn.State, dn.Class = s.state(n, snap)
		if a, obj := s.output(n); a != nil {
			dn.Rows, dn.Digest, dn.Note = obj.Rows, obj.Digest, a.Note
		} else if e, ok := snap.Nodes[n.Addr]; ok {
			dn.Note = e.Note
		}
		dn.X = margin + l*(boxW+colGap)
		dn.Y = margin + perLayer[l]*(boxH+rowGap)
		perLayer[l]++
		d.Width = max(d.Width, dn.X+boxW+margin)
		d.Height = max(d.Height, dn.Y+boxH+margin)
		d.Counts[dn.Class]++
		d.Nodes = append(d.Nodes, dn)
	}
	pos := map[string]dagNode{}
	for _, n := range d.Nodes {
		pos[n.Addr] = n
	}
	for _, n := range d.Nodes {
		for _, in := range n.Inputs {
			p, ok := pos[in]
			if !ok {
				continue
			}
			e := dagEdge{X1: p.X + boxW, Y1: p.Y + boxH/2, X2: n.X, Y2: n.Y + boxH/2}
			e.MX = (e.X1 + e.X2) / 2
			d.Edges = append(d.Edges, e)
		}
	}
	s.render(w, r, "dag", "pipeline", d)
}

// nodeData is the node page.
type nodeData struct {
	Node       Node
	State      string
	Class      string
	Dependants []string
	// Action is the current action entry (the output is current), or
	// with Stale the one the last run recorded.
	Action   *artifacts.Action
	Stale    bool
	Config   string
	Identity [][2]string
	Reports  [][2]string
	Failure  *artifacts.Failure
	Events   []runEvent
	Drill    string // a link to the node's drill-down list, when it has one
}

// runEvent is one line of a run log (runs/*.jsonl) about the node.
type runEvent struct {
	Run     string    `json:"run"`
	Event   string    `json:"event"`
	Time    time.Time `json:"time"`
	Node    string    `json:"node"`
	Key     string    `json:"key"`
	Digest  string    `json:"digest"`
	Rows    int64     `json:"rows"`
	Done    int64     `json:"done"`
	Total   int64     `json:"total"`
	Seconds float64   `json:"seconds"`
	Error   string    `json:"error"`
	Cause   string    `json:"cause"`
	Message string    `json:"message"`
}

func (s *Server) handleNode(w http.ResponseWriter, r *http.Request) {
	addr := r.URL.Query().Get("addr")
	nodes, by, err := s.plan(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	n, ok := by[addr]
	if !ok {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("no node %q in this pipeline", addr))
		return
	}
	snap, _ := s.cfg.Store.LoadSnapshot(s.cfg.Pipeline)
	d := nodeData{Node: n}
	d.State, d.Class = s.state(n, snap)
	for _, o := range nodes {
		if slices.Contains(o.Inputs, addr) {
			d.Dependants = append(d.Dependants, o.Addr)
		}
	}
	if a, _ := s.output(n); a != nil {
		d.Action = a
	} else if e, ok := snap.Nodes[addr]; ok && e.Key != "" {
		if a, err := s.cfg.Store.GetAction(e.Key); err == nil {
			d.Action, d.Stale = a, true
		}
	}
	if d.Action != nil {
		var b bytes.Buffer
		if json.Indent(&b, d.Action.Config, "", "  ") == nil {
			d.Config = b.String()
		} else {
			d.Config = string(d.Action.Config)
		}
		for _, k := range slices.Sorted(maps.Keys(d.Action.Identity)) {
			d.Identity = append(d.Identity, [2]string{k, d.Action.Identity[k]})
		}
		for _, k := range slices.Sorted(maps.Keys(d.Action.Reports)) {
			var b bytes.Buffer
			if json.Indent(&b, d.Action.Reports[k], "", "  ") != nil {
				b.Reset()
				b.Write(d.Action.Reports[k])
			}
			d.Reports = append(d.Reports, [2]string{k, b.String()})
		}
	}
	for _, k := range []artifacts.Digest{n.Key, snap.Nodes[addr].Key} {
		if k == "" {
			continue
		}
		if f, err := s.cfg.Store.GetFailure(k); err == nil {
			d.Failure = f
			break
		}
	}
	d.Events = s.runEvents(addr, 200)
	switch n.Type {
	case "judge", "retrieve":
		if d.Action != nil && !d.Stale {
			d.Drill = "/artifact/" + string(d.Action.Output.Digest) + "?addr=" + urlQuery(addr)
		}
	}
	s.render(w, r, "node", addr, d)
}

// runEvents returns the events about addr in the store's run logs, the
// newest first, at most max. The logs are the store's, shared by every
// pipeline using it: a log whose start event names another pipeline
// (lacuna writes the pipeline's path there) is not this one's, even where
// the other pipeline has a node of the same address.
func (s *Server) runEvents(addr string, max int) []runEvent {
	// A line about the node holds its address as JSON encodes it: with
	// or without <, > and & escaped (the run log escapes them).
	var keys [][]byte
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		enc.Encode(addr)
		keys = append(keys, bytes.TrimSpace(b.Bytes()))
	}
	logs, _ := filepath.Glob(filepath.Join(s.cfg.Store.Root(), "runs", "*.jsonl"))
	sort.Sort(sort.Reverse(sort.StringSlice(logs)))
	var out []runEvent
	for _, p := range logs {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		var mine []runEvent
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for first := true; sc.Scan(); first = false {
			line := sc.Bytes()
			if first {
				var start runEvent
				if json.Unmarshal(line, &start) == nil && start.Event == "start" && start.Message != "" && start.Message != s.cfg.Pipeline {
					break // another pipeline's run
				}
			}
			if !bytes.Contains(line, keys[0]) && !bytes.Contains(line, keys[1]) {
				continue
			}
			var e runEvent
			if json.Unmarshal(line, &e) != nil || e.Node != addr {
				continue
			}
			e.Run = strings.TrimSuffix(filepath.Base(p), ".jsonl")
			mine = append(mine, e)
		}
		f.Close()
		slices.Reverse(mine) // the newest first, as the runs
		out = append(out, mine...)
		if len(out) >= max {
			return out[:max]
		}
	}
	return out
}
