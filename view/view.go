// Package view is lacuna's local web viewer of one pipeline's store: the
// DAG with each node's state, provenance and logs; any artifact, paged,
// filtered and sorted; the NovelAPIBench drill-down of a judged sample
// (task, bundle, the prompt of every cell, the answer, the harness's
// verdict layer by layer, the judge's class and rationale); a ToolSense
// query's ranked tools with the gold marked; two judge or retrieve nodes
// side by side; and people's labels (package annotations) with Cohen's κ
// against the judge.
//
// A Server is an http.Handler. Pages are HTML rendered on the server
// (html/template: every value from the store is escaped, since rows hold
// model output and code) with an embedded style sheet and no script;
// every page is also JSON with ?format=json. It only reads the store,
// except for one handler: POST /annotate saves labels through
// annotations.Add, and only with the form's token (a random value of
// this Server) from a page of the same origin. A read can still move a
// corrupt object to quarantine/, as every read of the store does.
//
// The Server answers only requests whose Host is a loopback address or
// localhost (a web page elsewhere cannot reach it by DNS rebinding); the
// caller binds it to a loopback address (cmd/lacuna: lacuna view).
//
// A Server is safe for concurrent use: handlers share only the store
// (itself safe), the configuration (read-only) and a bounded cache of
// decoded artifacts behind a mutex.
package view

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
)

// Node is one node instance of the pipeline as the viewer shows it: what
// the CLI's plan says of it now.
type Node struct {
	Addr   string
	Type   string
	Inputs []string // the addresses of its inputs
	// Status is the plan's: cached (its output is current), run (it
	// would run: never ran, or an input, its config or identity
	// changed), blocked (an input cannot be computed) or error (its key
	// cannot be computed).
	Status string
	Reason string
	Key    artifacts.Digest // its current action key, when known
	// LastKnown is set when the status stands on last-known results
	// (a model server down: the key could not be computed now).
	LastKnown bool
}

// Plan statuses (as engine.PlanEntry's).
const (
	StatusCached  = "cached"
	StatusRun     = "run"
	StatusBlocked = "blocked"
	StatusError   = "error"
)

// Config is what a Server shows.
type Config struct {
	Store *artifacts.Store
	// Pipeline is the pipeline's name in the store: what names/ and
	// annotations/ are keyed by (lacuna: the pipeline file's absolute
	// path).
	Pipeline string
	// Plan returns the pipeline's nodes in topological order with their
	// current state. The Server calls it for every page that needs it
	// (so a run in another terminal shows on reload); it must be safe
	// for concurrent calls.
	Plan func(ctx context.Context) ([]Node, error)
	// Annotator is the name the annotation forms start with (the person
	// may change it).
	Annotator string
	// Token is the annotation forms' anti-forgery token; New draws a
	// random one when empty.
	Token string
}

// Server serves the viewer. Make it with New.
type Server struct {
	cfg   Config
	mux   *http.ServeMux
	pages map[string]*template.Template
	cache *recordCache
}

//go:embed templates/*.html static/*
var files embed.FS

// New makes a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Plan == nil {
		return nil, errors.New("view: Config needs a Store and a Plan")
	}
	if cfg.Token == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		cfg.Token = hex.EncodeToString(b)
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), pages: map[string]*template.Template{}, cache: newRecordCache(8)}
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(files, n)
		if err != nil {
			return nil, err
		}
		s.pages[base] = t
	}
	static, _ := fs.Sub(files, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.handleDAG)
	s.mux.HandleFunc("GET /node", s.handleNode)
	s.mux.HandleFunc("GET /artifact/{digest}", s.handleArtifact)
	s.mux.HandleFunc("GET /row/{digest}/{index}", s.handleRow)
	s.mux.HandleFunc("GET /sample", s.handleSample)
	s.mux.HandleFunc("GET /query", s.handleQuery)
	s.mux.HandleFunc("GET /compare", s.handleCompare)
	s.mux.HandleFunc("GET /annotations", s.handleAnnotations)
	s.mux.HandleFunc("POST /annotate", s.handleAnnotate)
	return s, nil
}

// Token is the anti-forgery token the annotation forms carry.
func (s *Server) Token() string { return s.cfg.Token }

// ServeHTTP answers requests to a loopback or localhost Host only, with
// headers that keep pages from being framed or sniffed and scripts from
// running at all.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !loopbackHost(r.Host) {
		http.Error(w, "lacuna view answers only requests to 127.0.0.1, ::1 or localhost", http.StatusMisdirectedRequest)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	s.mux.ServeHTTP(w, r)
}

// loopbackHost reports whether a Host header names this machine by a
// loopback address or localhost.
func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether a POST comes from a page of this server:
// its Origin (or, without one, its Referer) names the request's Host,
// and Sec-Fetch-Site, when the browser sends it, says same-origin.
func sameOrigin(r *http.Request) bool {
	if sfs := r.Header.Get("Sec-Fetch-Site"); sfs != "" && sfs != "same-origin" && sfs != "none" {
		return false
	}
	src := r.Header.Get("Origin")
	if src == "" {
		src = r.Header.Get("Referer")
	}
	if src == "" {
		return false
	}
	u, err := url.Parse(src)
	return err == nil && u.Scheme == "http" && u.Host == r.Host
}

func (s *Server) checkToken(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) == 1
}

// page is what every template gets.
type page struct {
	Title    string
	Pipeline string
	Token    string
	Data     any
}

// render writes data as the named page, or as JSON with ?format=json.
func (s *Server) render(w http.ResponseWriter, r *http.Request, name, title string, data any) {
	if r.URL.Query().Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(artifacts.JSONSafe(data)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
		return
	}
	t := s.pages[name]
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", page{Title: title, Pipeline: s.cfg.Pipeline, Token: s.cfg.Token, Data: data}); err != nil {
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(b.String()))
}

// fail answers an error as a page (or JSON) with its status.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	w.WriteHeader(code)
	if r.URL.Query().Get("format") == "json" {
		json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	t := s.pages["error"]
	t.ExecuteTemplate(w, "layout", page{Title: http.StatusText(code), Pipeline: s.cfg.Pipeline, Data: err.Error()})
}

// plan returns the nodes, by address too.
func (s *Server) plan(ctx context.Context) ([]Node, map[string]Node, error) {
	nodes, err := s.cfg.Plan(ctx)
	if err != nil {
		return nil, nil, err
	}
	by := make(map[string]Node, len(nodes))
	for _, n := range nodes {
		by[n.Addr] = n
	}
	return nodes, by, nil
}

// output is a node's current output object and action, when it is
// cached; else the zero values.
func (s *Server) output(n Node) (*artifacts.Action, artifacts.Object) {
	if n.Status != StatusCached || n.Key == "" {
		return nil, artifacts.Object{}
	}
	a, err := s.cfg.Store.GetAction(n.Key)
	if err != nil {
		return nil, artifacts.Object{}
	}
	return a, a.Output
}

// nodeRecords returns the rows of a node's current output.
func (s *Server) nodeRecords(n Node) (*artifacts.Action, *records, error) {
	a, obj := s.output(n)
	if a == nil {
		return nil, nil, fmt.Errorf("%s has no current output (plan: %s %s)", n.Addr, n.Status, n.Reason)
	}
	rs, err := s.records(obj.Digest)
	return a, rs, err
}

// inputOf returns the input of action a that came through attribute
// name (the first, for a list).
func inputOf(a *artifacts.Action, name string) (artifacts.Input, bool) {
	for _, in := range a.Inputs {
		if in.Name == name {
			return in, true
		}
	}
	return artifacts.Input{}, false
}

// byType returns the addresses of the nodes of a type, sorted.
func byType(nodes []Node, typ string) []string {
	var out []string
	for _, n := range nodes {
		if n.Type == typ {
			out = append(out, n.Addr)
		}
	}
	sort.Strings(out)
	return out
}

// back is a same-site path to return to after a POST: a path of this
// server, never another site.
func back(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(v, "//") {
		return "/"
	}
	return u.RequestURI()
}
