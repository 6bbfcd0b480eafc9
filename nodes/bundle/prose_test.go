package bundle_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/bundle"
	"github.com/lacuna-dev/lacuna/nodes/experiments"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
	"github.com/lacuna-dev/lacuna/runners/modfetch/proxytest"

	_ "github.com/lacuna-dev/lacuna/nodes/tasks" // the tasks node
)

func TestCitationFindsTheSignsOfAPublication(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"Distance as in doi:10.1145/362686.362692.", "DOI 10.1145/362686.362692"},
		{"See https://doi.org/10.1007/978-3-540-24777-7_23 for the proof.", "DOI 10.1007/978-3-540-24777-7_23"},
		{"Attention (arXiv:1706.03762).", "arXiv 1706.03762"},
		{"LoRA, https://arxiv.org/abs/2106.09685v2", "arXiv 2106.09685v2"},
		{"From arXiv:hep-th/9901001.", "arXiv hep-th/9901001"},
		{"Parameters\n----------\nx : int\n\nReferences\n----------\nKnuth, The Art of Computer Programming.", "references section"},
		{"Sorts in place.\n\n# References\n\nThe paper.", "references section"},
		{"Sorts in place.\n\n.. [1] D. Knuth, TAOCP vol. 3", "references section"},
		{"The estimator of Flajolet et al. (2007).", `"et al."`},
		{"As Smith et al showed.", `"et al."`},
		{"The index defined by Jaccard (1901).", "Jaccard (1901)"},
		{"Counts as Flajolet and  Martin (1985) do.", "Flajolet and Martin (1985)"},
		{"Reservoir sampling (Vitter, 1985) of k items.", "(Vitter, 1985)"},
		{"The method of Müller (2003b).", "Müller (2003b)"},
		// Not citations.
		{"Scale multiplies every element of xs by the factor k.", ""},
		{"Since Go 1.21 (2023) the order is stable.", ""},
		{"Waits the timeout (1500) milliseconds.", ""},
		{"Returns the year (2019) of the date.", ""},
		{"A metal alloy, et cetera.", ""},
		{"References: see the package documentation.", ""},
		{"Version 10.2 of the format.", ""},
	} {
		if got := bundle.Citation(tc.doc); got != tc.want {
			t.Errorf("Citation(%q) = %q, want %q", tc.doc, got, tc.want)
		}
	}
}

func TestProseTierRule(t *testing.T) {
	const clamp = "func Clamp(v, lo, hi int) int {\n\tif v < lo {\n\t\treturn lo\n\t}\n\tif v > hi {\n\t\treturn hi\n\t}\n\treturn v\n}"
	const errs = `func Load(p string) (*T, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	t, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return t, nil
}`
	const wrapper = "func Sort(xs []int) { sortRange(xs, 0, len(xs)) }\n\n" +
		"func sortRange(xs []int, lo, hi int) {\n\tif hi-lo < 2 {\n\t\treturn\n\t}\n\tfor i := lo; i < hi; i++ {\n\t\tif xs[i] < xs[lo] && i > lo || i == hi {\n\t\t\tswap(xs, i, lo)\n\t\t}\n\t}\n}"
	long := "func Fill(xs []int) {\n" + strings.Repeat("\txs[0]++\n", 25) + "}"
	literal := "func Table() []string {\n\treturn []string{\n" + strings.Repeat("\t\t\"x\",\n", 25) + "\t}\n}"
	const loop = "func Sum(xs []int) (n int) {\n\tfor _, x := range xs {\n\t\tif x > 0 && x < 10 {\n\t\t\tn += x\n\t\t}\n\t}\n\treturn\n}"
	const oneLoop = "func Sum(xs []int) (n int) {\n\tfor _, x := range xs {\n\t\tif x > 0 && x < 10 {\n\t\t\tn += x\n\t\t}\n\t}\n}"
	const pyBranchy = `def pick(xs, key=None):
    # if this comment counted, so would "if" in strings
    msg = "if or and for"
    for x in xs:
        if key and key(x):
            return x
        elif x is None or x == 0:
            continue
    return None`
	const pyWrapper = "@cache\ndef total(\n    xs,\n    start=0,\n):\n    return _sum(xs, start)\n\ndef _sum(xs, start):\n    if not xs:\n        return start\n    while xs:\n        start += xs.pop()\n    return start if start else 0\n"
	const pyOneLine = "def ident(x): return x\n"
	const pyMatch = "def kind(x):\n    match x:\n        case 0:\n            return 'zero'\n        case _:\n            return 'other'\n"
	for _, tc := range []struct {
		name            string
		row             bundle.Row
		branches, lines int
		tier, evidence  string
	}{
		{"citation wins over a complex body", bundle.Row{MProse: "The index of Jaccard (1901).", MCode: clamp}, 1, 1, "paper", "Jaccard (1901)"},
		{"two ifs below the default", bundle.Row{MProse: "Clamp limits v.", MCode: clamp}, 3, 25, "doc", "2 branches, 9 code lines"},
		{"two ifs at a threshold of two", bundle.Row{MProse: "Clamp limits v.", MCode: clamp}, 2, 25, "source", "2 branches, 9 code lines"},
		{"err checks are not branches", bundle.Row{MProse: "Load reads p.", MCode: errs}, 2, 25, "doc", "0 branches, 14 code lines"},
		{"many lines", bundle.Row{MProse: "Fill fills.", MCode: long}, 3, 25, "source", "0 branches, 27 code lines"},
		{"one long simple statement is a wrapper", bundle.Row{MProse: "Table lists.", MCode: literal}, 3, 25, "doc", "wrapper: at most one simple statement; 0 branches, 29 code lines"},
		{"a wrapper stays doc", bundle.Row{MProse: "Sort sorts xs.", MCode: wrapper}, 3, 25, "doc", "wrapper: at most one simple statement; 5 branches, 11 code lines"},
		{"a loop and a return", bundle.Row{MProse: "Sum adds.", MCode: loop}, 3, 25, "source", "3 branches, 8 code lines"},
		{"one loop is no wrapper", bundle.Row{MProse: "Sum adds.", MCode: oneLoop}, 3, 25, "source", "3 branches, 7 code lines"},
		{"no docstring", bundle.Row{MProse: " ", MCode: "func F() {}"}, 3, 25, "source", "no docstring"},
		{"python branches outside strings and comments", bundle.Row{Ecosystem: "python", MProse: "Pick one.", MCode: pyBranchy}, 3, 25, "source", "5 branches, 8 code lines"},
		{"python wrapper with a decorator and a long header", bundle.Row{Ecosystem: "python", MProse: "Total.", MCode: pyWrapper}, 3, 25, "doc", "wrapper: at most one simple statement; 3 branches, 12 code lines"},
		{"python one-line def", bundle.Row{Ecosystem: "python", MProse: "Ident.", MCode: pyOneLine}, 1, 1, "doc", "wrapper: at most one simple statement; 0 branches, 1 code lines"},
		{"python match cases", bundle.Row{Ecosystem: "python", MProse: "Kind.", MCode: pyMatch}, 2, 25, "source", "2 branches, 6 code lines"},
	} {
		tier, ev := bundle.ProseTier(tc.row, tc.branches, tc.lines)
		if tier != tc.tier || ev != tc.evidence {
			t.Errorf("%s: %s (%s), want %s (%s)", tc.name, tier, ev, tc.tier, tc.evidence)
		}
	}
}

// The fixture module example.com/cite: v1.1.0 adds Jaccard, whose doc
// cites a publication.
var citeFiles = map[string]map[string]string{
	"v1.0.0": {"cite.go": `// Package cite is a test fixture whose new API cites a publication.
package cite

// Words splits the text s into its whitespace-separated words.
func Words(s string) []string { return nil }
`},
	"v1.1.0": {"cite.go": `// Package cite is a test fixture whose new API cites a publication.
package cite

// Words splits the text s into its whitespace-separated words.
func Words(s string) []string { return nil }

// Jaccard returns the similarity of two sets of words: the size of their
// intersection over the size of their union, as defined by Jaccard (1901).
// Two empty sets are identical.
func Jaccard(a, b []string) float64 {
	in := map[string]bool{}
	for _, s := range a {
		in[s] = true
	}
	both, all := 0, len(in)
	seen := map[string]bool{}
	for _, s := range b {
		if seen[s] {
			continue
		}
		seen[s] = true
		if in[s] {
			both++
		} else {
			all++
		}
	}
	if all == 0 {
		return 1
	}
	return float64(both) / float64(all)
}
`},
}

// offlineShapesAndCite serves the shapes fixture and example.com/cite
// from one file:// proxy.
func offlineShapesAndCite(t *testing.T) {
	nodetest.OfflineShapes(t) // the skip, the build cache
	proxy := t.TempDir()
	if err := proxytest.WriteShapes(proxy); err != nil {
		t.Fatal(err)
	}
	const gomod = "module example.com/cite\n\ngo 1.21\n"
	for v, files := range citeFiles {
		files["go.mod"] = gomod
		if _, err := proxytest.WriteZip(proxy, "example.com/cite", v, files); err != nil {
			t.Fatal(err)
		}
	}
	if err := proxytest.Write(proxy, "example.com/cite", map[string]string{"v1.0.0": "2024-01-10", "v1.1.0": "2024-09-01"}, gomod); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOPROXY", "file://"+proxy)
}

// proseModel scripts the prose answers by API: the M_prose it writes
// names the API and the prompt's tier, and each asked parameter gets
// "NAME of API."; shapes.Stack.Push answers junk until told why, and
// shapes.Stack.Len always answers a key it was not asked for. Any other
// prompt (generate's) gets a Go program. It records the prose prompts.
type proseModel struct {
	mu      sync.Mutex
	prompts map[string][]string // API → its prompts, in order
}

var (
	proseAPILine  = regexp.MustCompile(`(?m)^API: (\S+) \(`)
	proseParamAsk = regexp.MustCompile(`does not describe (?:this parameter|these parameters): ([^.]+)\.`)
)

func promptTier(text string) string {
	switch {
	case strings.Contains(text, "Its docstring cites a publication"):
		return "paper"
	case strings.Contains(text, "from the signature and the implementation above, how the API works"):
		return "source"
	case strings.Contains(text, "a gloss of the docstring"):
		return "doc"
	case strings.Contains(text, "completing the parameter documentation"):
		return "backfill"
	}
	return ""
}

func (m *proseModel) reply(q llmtest.Request) string {
	text := q.Text()
	api := proseAPILine.FindStringSubmatch(text)
	if api == nil {
		return "```go\npackage main\n\nfunc main() {}\n```"
	}
	m.mu.Lock()
	if m.prompts == nil {
		m.prompts = map[string][]string{}
	}
	m.prompts[api[1]] = append(m.prompts[api[1]], text)
	m.mu.Unlock()
	retry := strings.Contains(text, "Your previous answer was unusable")
	switch {
	case api[1] == "shapes.Stack.Push" && !retry:
		return "Sure! Push adds a value."
	case api[1] == "shapes.Stack.Len":
		return `{"m_prose": "Len counts.", "summary": "short"}`
	}
	ans := map[string]any{}
	if tier := promptTier(text); tier != "backfill" {
		ans["m_prose"] = proseOf(api[1], tier)
	}
	if ask := proseParamAsk.FindStringSubmatch(text); ask != nil {
		ps := map[string]string{}
		for _, p := range strings.Split(ask[1], ", ") {
			ps[p] = p + " of " + api[1] + "."
		}
		ans["params"] = ps
	}
	b, _ := json.Marshal(ans)
	return "```json\n" + string(b) + "\n```"
}

func proseOf(api, tier string) string { return fmt.Sprintf("The %s prose of %s.", tier, api) }

const prosePipeline = nodetest.ShapesHead + `
model "gen" {
  id          = "example/gen"
  endpoint    = "URL"
  served_name = "gen"
  concurrency = 4
}
library "cite" {
  ecosystem = "go"
  name      = "example.com/cite"
}
node "version_resolve" "cite" {
  library = library.cite
  cutoff  = model.m.cutoff
}
node "surface_diff" "shapes" { versions = node.version_resolve.shapes }
node "surface_diff" "cite" { versions = node.version_resolve.cite }
node "bundle" "shapes" { apis = node.surface_diff.shapes }
node "bundle" "cite" {
  apis            = node.surface_diff.cite
  require_example = false
}
node "prose" "shapes" {
  bundles         = node.bundle.shapes
  model           = model.gen
  source_branches = 2
  retries         = RETRIES
}
node "prose" "verbatim" {
  bundles         = node.bundle.shapes
  model           = model.gen
  doc_tier        = "verbatim"
  source_branches = 2
  retries         = 1
}
node "prose" "cite" {
  bundles = node.bundle.cite
  model   = model.gen
}
node "tasks" "shapes" { bundles = node.bundle.shapes }
node "tasks" "prose" { bundles = node.prose.shapes }
node "generate" "prose" {
  tasks   = node.tasks.shapes
  bundles = node.prose.shapes
  model   = model.gen
  cell    = "S+M_prose"
}
node "generate" "bundle" {
  tasks   = node.tasks.shapes
  bundles = node.bundle.shapes
  model   = model.gen
  cell    = "S+M_prose"
}
`

// TestProseWritesTiersAndBackfillsParameters: the tier rule picks paper
// for the citing API, source for the branchy one and doc for the rest;
// the model's prose and parameter descriptions land in the rows exactly;
// an unusable answer is asked again with the reason, and one still
// unusable after the last retry keeps the docstring with the reason;
// tasks and generate read the rows as bundles, and generate's rows carry
// the tier. A second run is cached; a plan counts the calls, and a rerun
// with one more retry makes only the new call.
func TestProseWritesTiersAndBackfillsParameters(t *testing.T) {
	offlineShapesAndCite(t)
	model := &proseModel{}
	srv := llmtest.New(llmtest.Config{Models: []string{"gen"}, Script: []llmtest.Rule{{Reply: model.reply}}})
	defer srv.Close()
	src := func(retries int) string {
		return strings.NewReplacer("URL", srv.URL(), "RETRIES", fmt.Sprint(retries)).Replace(prosePipeline)
	}
	dir := t.TempDir()
	run := nodetest.Run(t, dir, src(1))

	bundles := map[string]bundle.Row{}
	for _, b := range nodetest.Read[bundle.Row](t, run, "node.bundle.shapes") {
		bundles[b.Qualified] = b
	}
	rows := map[string]bundle.ProseRow{}
	for _, r := range nodetest.Read[bundle.ProseRow](t, run, "node.prose.shapes") {
		rows[r.Qualified] = r
	}
	for _, r := range nodetest.Read[bundle.ProseRow](t, run, "node.prose.cite") {
		rows[r.Qualified] = r
	}
	type want struct {
		rule, tier, by string
		backfilled     []string
		attempts       int32
		err            string
	}
	wants := map[string]want{
		"cite.Jaccard":      {"paper", "paper", "llm", []string{"a", "b"}, 1, ""},
		"shapes.Clamp":      {"source", "source", "llm", []string{"v"}, 1, ""},
		"shapes.Scale":      {"doc", "doc", "llm", []string{"k"}, 1, ""},
		"shapes.Apply":      {"doc", "doc", "llm", []string{"f"}, 1, ""},
		"shapes.TotalArea":  {"doc", "doc", "llm", []string{}, 1, ""},
		"shapes.Stack.Push": {"doc", "doc", "llm", []string{"v"}, 2, ""},
		"shapes.Stack.Len":  {"doc", "doc", "docstring", []string{}, 2, `no usable answer in 2 attempts: the answer has a key "summary" that was not asked for`},
	}
	if len(rows) != len(wants) {
		t.Fatalf("%d prose rows, want %d", len(rows), len(wants))
	}
	for api, w := range wants {
		r := rows[api]
		got := want{r.MProseRule, r.MProseTier, r.MProseBy, r.SBackfilled, r.Attempts, r.ProseError}
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("%s: %+v, want %+v (evidence %q)", api, got, w, r.MProseEvidence)
		}
		wantProse := proseOf(api, w.tier)
		if w.by == "docstring" {
			wantProse = r.Docstring
		}
		if r.MProse != wantProse || r.Docstring == "" {
			t.Errorf("%s: m_prose %q, want %q (docstring %q)", api, r.MProse, wantProse, r.Docstring)
		}
		for _, p := range r.Params {
			if slices.Contains(w.backfilled, p.Name) && p.Doc != p.Name+" of "+api+"." {
				t.Errorf("%s: parameter %s has doc %q", api, p.Name, p.Doc)
			}
		}
		if b, ok := bundles[api]; ok { // the rest of the row is the bundle's
			if r.Docstring != b.MProse || b.MCode == "" {
				t.Errorf("%s: docstring %q, want the bundle's M_prose %q", api, r.Docstring, b.MProse)
			}
			b.MProse, b.MProseTier = r.MProse, r.MProseTier
			b.Params = slices.Clone(b.Params)
			for i := range b.Params {
				if slices.Contains(w.backfilled, b.Params[i].Name) {
					b.Params[i].Doc = r.Params[i].Doc
				}
			}
			if fmt.Sprint(b) != fmt.Sprint(r.Row) {
				t.Errorf("%s: the row differs from its bundle beyond M_prose and S:\n%+v\n%+v", api, r.Row, b)
			}
		}
	}
	if ev := rows["cite.Jaccard"].MProseEvidence; ev != "Jaccard (1901)" {
		t.Errorf("Jaccard's evidence %q", ev)
	}
	if ev := rows["shapes.Clamp"].MProseEvidence; ev != "2 branches, 9 code lines" {
		t.Errorf("Clamp's evidence %q", ev)
	}
	// Each tier's prompt shows what the tier is grounded in.
	jp := model.prompts["cite.Jaccard"][0]
	if !strings.Contains(jp, "Jaccard (1901)") || !strings.Contains(jp, "func Jaccard(a, b []string) float64 {") || !strings.Contains(jp, "these parameters: a, b.") {
		t.Errorf("paper prompt:\n%s", jp)
	}
	cp := model.prompts["shapes.Clamp"][0]
	if promptTier(cp) != "source" || strings.Contains(cp, "Clamp limits the value") || !strings.Contains(cp, "if v < lo") {
		t.Errorf("source prompt shows the docstring or lacks the code:\n%s", cp)
	}
	// (node.prose.verbatim asks backfill prompts of the same APIs.)
	byTier := func(api, tier string) (out []string) {
		for _, p := range model.prompts[api] {
			if promptTier(p) == tier {
				out = append(out, p)
			}
		}
		return out
	}
	if pp := byTier("shapes.Stack.Push", "doc"); len(pp) != 2 || strings.Contains(pp[0], "unusable") ||
		!strings.Contains(pp[1], "Your previous answer was unusable: the answer is not one JSON object.") {
		t.Errorf("Push's prompts: %q", pp)
	}
	// doc_tier = "verbatim": the docstring stays; undocumented parameters
	// are still backfilled (backfill.txt), and the source tier is the
	// same call as node.prose.shapes' (replayed from the call cache).
	for _, r := range nodetest.Read[bundle.ProseRow](t, run, "node.prose.verbatim") {
		switch r.Qualified {
		case "shapes.Clamp":
			if r.MProse != proseOf(r.Qualified, "source") || r.MProseBy != "llm" {
				t.Errorf("verbatim Clamp: %q by %s", r.MProse, r.MProseBy)
			}
		case "shapes.Stack.Len", "shapes.TotalArea":
			if r.MProse != r.Docstring || r.Attempts != 0 || r.ProseError != "" || len(r.SBackfilled) != 0 {
				t.Errorf("verbatim %s made calls: %+v", r.Qualified, r)
			}
		default:
			if r.MProse != r.Docstring || r.MProseTier != "doc" || r.MProseBy != "docstring" || len(r.SBackfilled) != 1 || r.ProseError != "" {
				t.Errorf("verbatim %s: %q (%s by %s), backfilled %v, error %q", r.Qualified, r.MProse, r.MProseTier, r.MProseBy, r.SBackfilled, r.ProseError)
			}
		}
	}
	if bp := byTier("shapes.Scale", "backfill"); len(bp) != 1 || !strings.Contains(bp[0], "this parameter: k. For it, write one sentence") || strings.Contains(bp[0], "Write M_prose") {
		t.Errorf("Scale's backfill prompts: %q", bp)
	}
	notes := run.Notes(engine.EventDone)
	// 8 calls; Clamp's is node.prose.verbatim's too, so whichever node
	// asks it second replays it.
	const note = "6 bundles: tier paper 0, source 1, doc 5; M_prose by the model 5, docstring 1 (1 after unusable answers); 4 parameters backfilled in 4 APIs; "
	if n := notes["node.prose.shapes"]; n != note+"8 calls made, 0 cached" && n != note+"7 calls made, 1 cached" {
		t.Errorf("prose note %q", n)
	}

	// ReadRows reads prose rows as bundle rows; ReadOriginalRows undoes
	// them into the bundle's.
	rd, err := run.Store.Open(run.Nodes["node.prose.shapes"].Output)
	if err != nil {
		t.Fatal(err)
	}
	asRows, err := bundle.ReadRows(rd)
	if err != nil || len(asRows) != len(bundles) || asRows[0].MProse != rows[asRows[0].Qualified].MProse {
		t.Fatalf("ReadRows: %d rows, %v", len(asRows), err)
	}
	original, err := bundle.ReadOriginalRows(rd)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range original {
		if fmt.Sprint(o) != fmt.Sprint(bundles[o.Qualified]) {
			t.Errorf("ReadOriginalRows, %s:\n%+v\nwant\n%+v", o.Qualified, o, bundles[o.Qualified])
		}
	}

	// generate reads prose rows as bundles; its rows carry the tier.
	sawProse := false
	for _, g := range nodetest.Read[experiments.GenerateRow](t, run, "node.generate.prose") {
		b := bundles[apiOf(g.APIID, bundles)]
		w := wants[b.Qualified]
		if g.MProseTier != w.tier {
			t.Errorf("generate over prose, %s: tier %q, want %q", g.TaskID, g.MProseTier, w.tier)
		}
		if w.by == "llm" {
			sawProse = true
			if !strings.Contains(g.Prompt, proseOf(b.Qualified, w.tier)) {
				t.Errorf("generate over prose, %s: the prompt lacks the prose:\n%s", g.TaskID, g.Prompt)
			}
		}
	}
	if !sawProse {
		t.Error("no generate row over a model-written M_prose")
	}
	plain := nodetest.Read[experiments.GenerateRow](t, run, "node.generate.bundle")
	if len(plain) == 0 {
		t.Error("no generate rows over the bundle")
	}
	for _, g := range plain {
		if g.MProseTier != "doc" {
			t.Errorf("generate over bundle, %s: tier %q", g.TaskID, g.MProseTier)
		}
	}

	// The example cutter reads a prose node's rows as the bundle node
	// wrote them: the same tasks, byte for byte.
	fromBundle, fromProse := nodetest.Read[tasks.Row](t, run, "node.tasks.shapes"), nodetest.Read[tasks.Row](t, run, "node.tasks.prose")
	if len(fromBundle) == 0 || !reflect.DeepEqual(fromBundle, fromProse) {
		t.Errorf("tasks over prose rows differ from tasks over the bundle: %d and %d tasks", len(fromBundle), len(fromProse))
	}

	// Nothing is asked again.
	asked := srv.Stats().Requests
	again := nodetest.Run(t, dir, src(1))
	for addr, r := range again.Nodes {
		if r.State != "cached" {
			t.Errorf("second run: %s %s", addr, r.State)
		}
	}
	if n := srv.Stats().Requests; n != asked {
		t.Errorf("second run made %d requests", n-asked)
	}

	// One more retry: a new key; the plan replays the cache up to Len's
	// third attempt, and the run makes only that call.
	planned := false
	for _, e := range nodetest.Plan(t, dir, src(2)) {
		if e.Node != "node.prose.shapes" {
			continue
		}
		planned = true
		if e.Status != engine.PlanRun || len(e.Calls) != 1 || e.Calls[0].Calls != 9 || e.Calls[0].Cached != 8 || e.Calls[0].Model != "example/gen" {
			t.Errorf("plan: %+v", e)
		}
	}
	if !planned {
		t.Error("the plan has no node.prose.shapes")
	}
	third := nodetest.Run(t, dir, src(2))
	if n := third.Notes(engine.EventDone)["node.prose.shapes"]; !strings.Contains(n, "1 calls made, 8 cached") || !strings.Contains(n, "docstring 1 (1 after") {
		t.Errorf("rerun note %q", n)
	}
	if n := srv.Stats().Requests; n != asked+1 {
		t.Errorf("rerun made %d requests, want 1", n-asked)
	}
}

// apiOf finds the qualified name of the bundle of API id.
func apiOf(id string, bundles map[string]bundle.Row) string {
	for q, b := range bundles {
		if b.APIID == id {
			return q
		}
	}
	return ""
}
