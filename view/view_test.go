package view_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/annotations"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/view"

	_ "github.com/lacuna-dev/lacuna/nodes/generic"
	_ "github.com/lacuna-dev/lacuna/nodes/toolsense"
)

// pipeline is a ToolSense slice: the first rows of the released RRB (one
// query given markup), its catalog, BM25 and its evaluation (whose Rf@k
// columns are NaN: JSON must still come out).
const pipeline = `
node "import" "rrb" { path = "rrb.jsonl" }
node "catalog" "rrb" { from_rrb = node.import.rrb }
node "retrieve" "bm25" {
  catalog   = node.catalog.rrb
  queries   = node.import.rrb
  retriever = "bm25"
  k         = 5
}
node "retrieve" "top" {
  for_each  = { k3 = 3 }
  catalog   = node.catalog.rrb
  queries   = node.import.rrb
  retriever = "bm25"
  k         = each.value
}
node "import" "broken" { path = "broken.jsonl" }
node "retrieval_eval" "rrb" {
  retrieved = [node.retrieve.bm25]
  k         = [1, 5]
  bootstrap = 0
}
`

const markup = `<script>alert(1)</script><img src=x onerror=alert(2)>`

// fixture runs the pipeline in dir and returns a viewer of it on
// 127.0.0.1, its store and the sample_id of the query with markup.
type fixture struct {
	srv      *httptest.Server
	view     *view.Server
	store    *artifacts.Store
	file     string
	xss      string
	digests  map[string]artifacts.Digest
	firstIDs []string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	src := filepath.Join("..", "..", "shared", "data", "toolsense", "toolsense-realistic-retrieval.jsonl")
	in, err := os.Open(src)
	if err != nil {
		msg := "ToolSense data is not at ../shared/data/toolsense beside the repository: " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	defer in.Close()
	dir := t.TempDir()
	f := &fixture{file: filepath.Join(dir, "p.hcl"), digests: map[string]artifacts.Digest{}}
	var out strings.Builder
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 0; n < 30 && sc.Scan(); n++ {
		var row map[string]any
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		id := row["sample_id"].(string)
		f.firstIDs = append(f.firstIDs, id)
		if n == 3 {
			row["query"] = row["query"].(string) + " " + markup
			f.xss = id
		}
		b, _ := json.Marshal(row)
		out.Write(append(b, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, "rrb.jsonl"), []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.jsonl"), []byte("{\"a\": 1}\n{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.file, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	g, diags := engine.ExpandSource(f.file, []byte(pipeline), dir, engine.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if f.store, err = artifacts.Open(filepath.Join(dir, ".lacuna")); err != nil {
		t.Fatal(err)
	}
	x := &engine.Executor{Store: f.store, Pipeline: f.file, Environ: os.Environ(), KeepGoing: true}
	res, _, err := x.Run(context.Background(), g, nil)
	if err != nil && !strings.Contains(err.Error(), "failed") {
		t.Fatal(err)
	}
	for i, r := range res {
		if (r.Err != nil) != (i.Addr == "node.import.broken") {
			t.Fatalf("%s: %v", i.Addr, r.Err)
		}
		f.digests[i.Addr] = r.Output.Digest
	}
	plan := func(ctx context.Context) ([]view.Node, error) {
		entries, err := x.Plan(ctx, g, nil)
		if err != nil {
			return nil, err
		}
		var out []view.Node
		for _, e := range entries {
			vn := view.Node{Addr: e.Node, Type: e.Type, Status: e.Status, Reason: e.Reason, Key: e.Key}
			i, _ := g.Lookup(e.Node)
			for _, in := range i.Inputs {
				vn.Inputs = append(vn.Inputs, in.Addr)
			}
			out = append(out, vn)
		}
		return out, nil
	}
	if f.view, err = view.New(view.Config{Store: f.store, Pipeline: f.file, Plan: plan, Annotator: "tester"}); err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(f.view)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type artifactPage struct {
	Total, Matched, Page, Pages, PerPage int
	Rows                                 []struct {
		Index int
		Row   map[string]any
	}
}

func TestArtifactPagesFiltersAndSorts(t *testing.T) {
	f := newFixture(t)
	art := "/artifact/" + string(f.digests["node.import.rrb"])
	tests := []struct {
		name  string
		query string
		check func(t *testing.T, p artifactPage)
	}{
		{"first page", "n=7", func(t *testing.T, p artifactPage) {
			if p.Total != 30 || p.Matched != 30 || p.Pages != 5 || len(p.Rows) != 7 || p.Rows[0].Index != 0 {
				t.Errorf("%+v", p)
			}
		}},
		{"last page is short", "n=7&p=5", func(t *testing.T, p artifactPage) {
			if p.Page != 5 || len(p.Rows) != 2 || p.Rows[0].Index != 28 {
				t.Errorf("page %d: %d rows from %d", p.Page, len(p.Rows), p.Rows[0].Index)
			}
		}},
		{"a page past the end is the last", "n=7&p=99", func(t *testing.T, p artifactPage) {
			if p.Page != 5 {
				t.Errorf("page %d", p.Page)
			}
		}},
		{"page size is bounded", "n=100000", func(t *testing.T, p artifactPage) {
			if p.PerPage != 500 {
				t.Errorf("per page %d", p.PerPage)
			}
		}},
		{"equals", "w=complexity%3Deasy", func(t *testing.T, p artifactPage) {
			for _, r := range p.Rows {
				if r.Row["complexity"] != "easy" {
					t.Errorf("row %d is %v", r.Index, r.Row["complexity"])
				}
			}
			if p.Matched == 0 || p.Matched == 30 {
				t.Errorf("matched %d", p.Matched)
			}
		}},
		{"two filters hold both", "w=complexity%3Deasy&w=sample_id%3D" + url.QueryEscape(f.firstIDs[0]), func(t *testing.T, p artifactPage) {
			if p.Matched > 1 {
				t.Errorf("matched %d", p.Matched)
			}
		}},
		{"contains ignores case", "w=query~" + url.QueryEscape("<SCRIPT>ALERT(1)"), func(t *testing.T, p artifactPage) {
			if p.Matched != 1 || p.Rows[0].Row["sample_id"] != f.xss {
				t.Errorf("matched %d", p.Matched)
			}
		}},
		{"the form's fields add a filter", "fc=complexity&fo=%3D&fv=hard", func(t *testing.T, p artifactPage) {
			for _, r := range p.Rows {
				if r.Row["complexity"] != "hard" {
					t.Errorf("row %d is %v", r.Index, r.Row["complexity"])
				}
			}
		}},
		{"sort descending", "sort=sample_id&desc=1&n=500", func(t *testing.T, p artifactPage) {
			for i := 1; i < len(p.Rows); i++ {
				if p.Rows[i].Row["sample_id"].(string) > p.Rows[i-1].Row["sample_id"].(string) {
					t.Fatalf("not descending at %d", i)
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := f.get(t, art+"?"+tc.query+"&format=json")
			if code != 200 {
				t.Fatalf("%d %s", code, body)
			}
			var p artifactPage
			if err := json.Unmarshal([]byte(body), &p); err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
		})
	}
	// Numbers sort as numbers: retrieval_eval's k.
	code, body := f.get(t, "/artifact/"+string(f.digests["node.retrieval_eval.rrb"])+"?sort=k&desc=1&format=json")
	if code != 200 {
		t.Fatalf("retrieval_eval (NaN columns) as JSON: %d %s", code, body)
	}
	var p artifactPage
	json.Unmarshal([]byte(body), &p)
	if len(p.Rows) == 0 || p.Rows[0].Row["k"] != float64(5) || p.Rows[0].Row["rf_at_k"] != nil {
		t.Errorf("first row by k descending: %v (want k 5, rf_at_k null for NaN)", p.Rows[0].Row)
	}
}

func TestBadRequestsAreClearErrors(t *testing.T) {
	f := newFixture(t)
	art := "/artifact/" + string(f.digests["node.import.rrb"])
	tests := []struct {
		path string
		code int
		want string
	}{
		{art + "?w=nosuch%3Dx", 400, "no column"},
		{art + "?w=noop", 400, "COLUMN=VALUE"},
		{art + "?sort=nosuch", 400, "no column"},
		{"/artifact/0123456789abcdef", 404, "0123456789abcdef"},
		{"/artifact/not-a-digest", 404, "not an artifact digest"},
		{"/row/" + string(f.digests["node.import.rrb"]) + "/30", 404, "has no row 30"},
		{"/node?addr=node.nope", 404, "no node"},
		{"/query?retrieve=node.import.rrb&sample=x", 404, "no retrieve node"},
		{"/query?retrieve=node.retrieve.bm25&sample=nope", 404, "no query"},
		{"/sample?judge=node.retrieve.bm25", 404, "no judge node"},
		{"/compare?a=node.import.rrb&b=node.catalog.rrb", 400, "two judge nodes"},
	}
	for _, tc := range tests {
		code, body := f.get(t, tc.path)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s: %d, want %d with %q:\n%s", tc.path, code, tc.code, tc.want, body)
		}
	}
}

func TestRowTextIsEscapedEverywhere(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{
		"/artifact/" + string(f.digests["node.import.rrb"]) + "?n=500",
		"/row/" + string(f.digests["node.import.rrb"]) + "/3",
		"/query?retrieve=node.retrieve.bm25&sample=" + url.QueryEscape(f.xss),
	} {
		code, body := f.get(t, path)
		if code != 200 {
			t.Fatalf("GET %s: %d", path, code)
		}
		if strings.Contains(body, "<script") || strings.Contains(body, "<img") {
			t.Errorf("GET %s serves the row's markup as markup", path)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;") {
			t.Errorf("GET %s does not show the row's markup as text", path)
		}
	}
	resp, err := http.Get(f.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q: scripts must not run at all", csp)
	}
}

func TestQueryMarksGoldTools(t *testing.T) {
	f := newFixture(t)
	for _, id := range f.firstIDs[:10] {
		code, body := f.get(t, "/query?retrieve=node.retrieve.bm25&sample="+url.QueryEscape(id)+"&format=json")
		if code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		var q struct {
			FirstGold int
			Ranked    []struct {
				Rank  int
				Name  string
				Gold  bool
				Title string
			}
			Gold []struct {
				Name string
				Rank int
			}
		}
		json.Unmarshal([]byte(body), &q)
		if len(q.Ranked) != 5 || len(q.Gold) == 0 {
			t.Fatalf("%s: %d ranked, %d gold", id, len(q.Ranked), len(q.Gold))
		}
		first := 0
		for _, r := range q.Ranked {
			gold := false
			for _, g := range q.Gold {
				gold = gold || g.Name == r.Name
			}
			if r.Gold != gold {
				t.Errorf("%s rank %d %s: marked gold %v, is gold %v", id, r.Rank, r.Name, r.Gold, gold)
			}
			if gold && first == 0 {
				first = r.Rank
			}
			if r.Title == "" {
				t.Errorf("%s rank %d %s: no catalog title", id, r.Rank, r.Name)
			}
		}
		if first != q.FirstGold {
			t.Errorf("%s: first gold %d, page says %d", id, first, q.FirstGold)
		}
	}
}

// storeFiles lists the store's files with their sizes and times.
func storeFiles(root string) string {
	var b strings.Builder
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			fmt.Fprintln(&b, p, info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	return b.String()
}

func TestReadsWriteNothing(t *testing.T) {
	f := newFixture(t)
	before := storeFiles(f.store.Root())
	for _, p := range []string{"/", "/?format=json", "/node?addr=node.retrieve.bm25", "/artifact/" + string(f.digests["node.retrieve.bm25"]) + "?sort=query",
		"/row/" + string(f.digests["node.catalog.rrb"]) + "/0", "/query?retrieve=node.retrieve.bm25&sample=" + url.QueryEscape(f.xss),
		"/compare?a=node.retrieve.bm25&b=node.retrieve.bm25", "/annotations", "/static/style.css"} {
		if code, body := f.get(t, p); code != 200 {
			t.Errorf("GET %s: %d %s", p, code, body)
		}
	}
	if after := storeFiles(f.store.Root()); after != before {
		t.Errorf("GETs changed the store:\nbefore\n%s\nafter\n%s", before, after)
	}
}

func TestAnnotatePostIsGuarded(t *testing.T) {
	f := newFixture(t)
	_, page := f.get(t, "/query?retrieve=node.retrieve.bm25&sample="+url.QueryEscape(f.xss))
	m := regexp.MustCompile(`name="token" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil || m[1] != f.view.Token() {
		t.Fatalf("the query page's form has no token (%v)", m)
	}
	good := url.Values{"token": {m[1]}, "kind": {"rrb_item"}, "node": {"node.import.rrb"}, "item": {annotations.RRBItem(f.xss)},
		"label": {"invalid"}, "annotator": {"ann"}, "note": {"the answer tool does not " + markup}, "back": {"/query?retrieve=node.retrieve.bm25"}}
	edit := func(k, v string) url.Values {
		c := url.Values{}
		for key, vs := range good {
			c[key] = vs
		}
		c.Set(k, v)
		return c
	}
	tests := []struct {
		name              string
		form              url.Values
		origin, referer   string
		secFetch, host    string
		code              int
		location, message string
	}{
		{"no origin or referer", good, "", "", "", "", 403, "", "refused"},
		{"another site", good, "http://evil.example", "", "", "", 403, "", "refused"},
		{"a cross-site fetch", good, f.srv.URL, "", "cross-site", "", 403, "", "refused"},
		{"no token", edit("token", ""), f.srv.URL, "", "", "", 403, "", "refused"},
		{"wrong token", edit("token", strings.Repeat("0", 32)), f.srv.URL, "", "", "", 403, "", "refused"},
		{"a DNS-rebound host", good, "http://attacker.example:80", "", "", "attacker.example:80", 421, "", "127.0.0.1"},
		{"unknown node", edit("node", "node.nope"), f.srv.URL, "", "", "", 400, "", "no node"},
		{"unknown row", edit("item", annotations.RRBItem("nope")), f.srv.URL, "", "", "", 400, "", "has no row"},
		{"not an RRB node", edit("node", "node.catalog.rrb"), f.srv.URL, "", "", "", 400, "", "no RRB rows"},
		{"not a verdict", edit("label", "meh"), f.srv.URL, "", "", "", 400, "", "not an RRB verdict"},
		{"a failure class on a non-judge", edit("kind", "failure_class"), f.srv.URL, "", "", "", 400, "", "judge node"},
		{"no annotator", edit("annotator", " "), f.srv.URL, "", "", "", 400, "", "annotator"},
		{"an off-site back link stays here", edit("back", "//evil.example/x"), "", f.srv.URL + "/query", "same-origin", "", 303, "/#labels", ""},
		{"the page's own form", good, f.srv.URL, "", "same-origin", "", 303, "/query?retrieve=node.retrieve.bm25#labels", ""},
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", f.srv.URL+"/annotate", strings.NewReader(tc.form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range map[string]string{"Origin": tc.origin, "Referer": tc.referer, "Sec-Fetch-Site": tc.secFetch} {
				if v != "" {
					req.Header.Set(k, v)
				}
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.message) || resp.Header.Get("Location") != tc.location {
				t.Errorf("%d (Location %q) %s; want %d (Location %q) with %q", resp.StatusCode, resp.Header.Get("Location"), body, tc.code, tc.location, tc.message)
			}
		})
	}
	labels, err := annotations.Load(f.store, f.file)
	if err != nil {
		t.Fatal(err)
	}
	if len(labels) != 1 || labels[0].Label != "invalid" || labels[0].Note != "the answer tool does not "+markup {
		t.Fatalf("after the accepted POSTs (one label, saved twice): %+v", labels)
	}
	// The label shows on the query page and the annotations page,
	// escaped; an import has no judge verdicts to compare with.
	for _, p := range []string{"/query?retrieve=node.retrieve.bm25&sample=" + url.QueryEscape(f.xss), "/annotations"} {
		_, body := f.get(t, p)
		if !strings.Contains(body, "the answer tool does not &lt;script&gt;") || strings.Contains(body, "<script") {
			t.Errorf("GET %s: the label's note is missing or not escaped", p)
		}
	}
	_, body := f.get(t, "/query?retrieve=node.retrieve.bm25&sample="+url.QueryEscape(f.xss))
	if !strings.Contains(body, "this node&#39;s rows carry no judge verdict") {
		t.Errorf("the query page does not say the imported RRB has no judge verdicts")
	}
}

func TestDAGShowsStateAndProvenance(t *testing.T) {
	f := newFixture(t)
	var dag struct {
		Nodes []struct {
			Addr, Type, State string
			Inputs            []string
			Rows              int64
			Digest            artifacts.Digest
		}
	}
	_, body := f.get(t, "/?format=json")
	if err := json.Unmarshal([]byte(body), &dag); err != nil {
		t.Fatal(err)
	}
	if len(dag.Nodes) != 6 {
		t.Fatalf("%d nodes", len(dag.Nodes))
	}
	for _, n := range dag.Nodes {
		if n.Addr == "node.import.broken" {
			if n.State != "failed" || n.Digest != "" {
				t.Errorf("%s: %s %s, want failed with no output", n.Addr, n.State, n.Digest)
			}
			continue
		}
		if n.State != "done" || n.Digest != f.digests[n.Addr] {
			t.Errorf("%s: %s %s, want done %s", n.Addr, n.State, n.Digest, f.digests[n.Addr])
		}
	}
	_, body = f.get(t, "/node?addr=node.retrieve.bm25")
	for _, want := range []string{"retrieve (logic version", "input catalog", "input queries", string(f.digests["node.catalog.rrb"]), "Run log"} {
		if !strings.Contains(body, want) {
			t.Errorf("the node page lacks %q", want)
		}
	}
	_, body = f.get(t, "/node?addr=node.import.broken")
	for _, want := range []string{`<span class="state failed" id="state">failed</span>`, "Failure", "broken.jsonl"} {
		if !strings.Contains(body, want) {
			t.Errorf("the failed node's page lacks %q", want)
		}
	}
	// Side by side of a retrieve node with itself: every query agrees.
	var cmp struct{ Both, Agree int }
	_, body = f.get(t, "/compare?a=node.retrieve.bm25&b=node.retrieve.bm25&format=json")
	json.Unmarshal([]byte(body), &cmp)
	if cmp.Both != 30 || cmp.Agree != 30 {
		t.Errorf("bm25 vs itself: %+v", cmp)
	}
}

func TestOnlyLoopbackHostsAreServed(t *testing.T) {
	f := newFixture(t)
	for host, want := range map[string]int{"127.0.0.1:1": 200, "localhost:1": 200, "[::1]:1": 200, "example.com": 421, "10.0.0.1:80": 421, "127.0.0.1.nip.io": 421} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		f.view.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
	}
}

// TestEveryLinkWorks follows every link of the viewer's pages from the
// DAG (on this site, breadth first, up to 300 pages): each must answer
// 200 (a link built with its address escaped twice would not).
func TestEveryLinkWorks(t *testing.T) {
	f := newFixture(t)
	href := regexp.MustCompile(`href="([^"#]*)`)
	seen := map[string]bool{"/": true}
	queue := []string{"/"}
	for len(queue) > 0 && len(seen) < 300 {
		p := queue[0]
		queue = queue[1:]
		code, body := f.get(t, p)
		if code != 200 {
			t.Errorf("GET %s: %d\n%s", p, code, body)
			continue
		}
		for _, m := range href.FindAllStringSubmatch(body, -1) {
			link := strings.ReplaceAll(m[1], "&amp;", "&")
			if strings.HasPrefix(link, "?") {
				link = strings.SplitN(p, "?", 2)[0] + link
			}
			if !strings.HasPrefix(link, "/") || seen[link] {
				continue
			}
			seen[link] = true
			queue = append(queue, link)
		}
	}
	for _, want := range []string{"/node?addr=node.retrieve.bm25", "/node?addr=node.retrieve.top%5B%22k3%22%5D", "/query?"} {
		found := false
		for l := range seen {
			found = found || strings.HasPrefix(strings.ToLower(l), strings.ToLower(want))
		}
		if !found {
			t.Errorf("no page links to %s", want)
		}
	}
}
