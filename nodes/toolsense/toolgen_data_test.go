package toolsense_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/toolsense"
	ts "github.com/lacuna-dev/lacuna/toolsense"
)

// toolgenDataTools: three services; "Weather&&week" has no description.
const toolgenDataTools = `{"tool_name": "QR A&&make", "tool_title": "QR A", "tool_description": "qr code image", "api_title": "make", "api_description": "url to qr"}
{"tool_name": "QR B&&make", "tool_title": "QR B", "tool_description": "qr code", "api_title": "make", "api_description": "png qr"}
{"tool_name": "Weather&&now", "tool_title": "Weather", "tool_description": "weather forecast", "api_title": "now", "api_description": "rain city"}
{"tool_name": "Weather&&week", "tool_title": "Weather", "tool_description": "None", "api_title": "week", "api_description": "None"}
{"tool_name": "Stocks&&quote", "tool_title": "Stocks", "tool_description": "stock market price", "api_title": "quote", "api_description": "stock quote"}
`

// toolgenDataQueries: an easy row (one tool object), a medium one (a
// list, one tool twice), and one whose gold tool is outside the catalog.
const toolgenDataQueries = `{"sample_id": "e1", "query": "qr for my site", "complexity": "easy", "tool": {"tool_name": "QR A&&make", "tool_title": "QR A", "tool_description": "qr code image", "api_title": "make", "api_description": "url to qr"}}
{"sample_id": "m1", "query": "rain and stocks", "complexity": "medium", "tool": [{"tool_name": "Weather&&now"}, {"tool_name": "Stocks&&quote"}, {"tool_name": "Weather&&now"}]}
{"sample_id": "x1", "query": "translate this", "complexity": "easy", "tool": {"tool_name": "Translate&&text"}}
`

const toolgenDataHead = `node "catalog" "c" { path = "tools.jsonl" }
node "neighbors" "mcts" {
  catalog  = node.catalog.c
  embedder = "bm25"
  k        = 2
}
`

func toolgenDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "tools.jsonl", toolgenDataTools)
	write(t, dir, "queries.jsonl", toolgenDataQueries)
	return dir
}

func stage1Node(name, config string) string {
	neg := ""
	if config == "TG-3FM" || config == "TG-5FM" {
		neg = "negatives = node.neighbors.mcts\n  mcts_negatives = 2"
	}
	return fmt.Sprintf(`node "toolgen_data" %q {
  stage         = 1
  configuration = %q
  catalog       = node.catalog.c
  %s
}
`, name, config, neg)
}

// TestToolgenDataStage1WritesEachConfigurationsFormats: every tool gets
// each of its configuration's formats in Table 1's order (a tool without
// a description no tok->desc or mcts), the prompts and completions the
// toolsense package writes, and the rows' tokens are the catalog's
// vocabulary.
func TestToolgenDataStage1WritesEachConfigurationsFormats(t *testing.T) {
	dir := toolgenDir(t)
	src := toolgenDataHead
	configs := ts.ToolGenConfigNames()
	for _, c := range configs {
		src += stage1Node(strings.ToLower(c), c)
	}
	r := nodetest.Run(t, dir, src)
	cat := nodetest.Read[toolsense.CatalogRow](t, r, "node.catalog.c")
	pools := map[string][]toolsense.CatalogRow{}
	byName := map[string]toolsense.CatalogRow{}
	for _, tool := range cat {
		byName[tool.ToolName] = tool
	}
	for _, p := range nodetest.Read[toolsense.NeighborsRow](t, r, "node.neighbors.mcts") {
		for _, n := range p.Pool[1:] {
			pools[p.Seed] = append(pools[p.Seed], byName[n])
		}
	}
	notes := r.Notes(engine.EventDone)
	for _, name := range configs {
		addr := "node.toolgen_data." + strings.ToLower(name)
		got := nodetest.Read[toolsense.ToolGenRow](t, r, addr)
		c, _ := ts.LookupToolGenConfig(name)
		d := ts.ToolGenData{Config: c, Open: "<<", Close: ">>", Negatives: 2, Seed: 1}
		var want []toolsense.ToolGenRow
		for _, tool := range cat {
			exs, skipped, err := d.Memorization(tool, pools[tool.ToolName])
			if err != nil {
				t.Fatal(err)
			}
			if tool.ToolName == "Weather&&week" && c.Has(ts.FormatTokDesc) && len(skipped) != 2 {
				t.Errorf("%s: %s skipped %v, want tok->desc and mcts", name, tool.ToolName, skipped)
			}
			for _, ex := range exs {
				want = append(want, toolsense.ToolGenRow{Stage: 1, Format: ex.Format, Prompt: ex.Prompt, Completion: ex.Completion,
					ToolName: ex.ToolName, Token: ex.Token, Tokens: ex.Tokens, SampleID: ""})
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %d rows\n%+v\nwant %d\n%+v", name, len(got), got, len(want), want)
		}
		perTool := len(c.Formats)
		skips := 0
		if c.Has(ts.FormatMCTS) {
			skips = 2
		}
		if len(got) != len(cat)*perTool-skips {
			t.Errorf("%s: %d rows, want %d tools × %d formats - %d", name, len(got), len(cat), perTool, skips)
		}
		vocab, _ := d.Vocabulary(cat)
		if nt := toolsense.NewTokens(got); !reflect.DeepEqual(nt, vocab) {
			t.Errorf("%s: NewTokens %q, want the catalog's vocabulary %q", name, nt, vocab)
		}
		wantContains(t, notes[addr], fmt.Sprintf("stage 1, %s (%s tokens", name, c.TokenFormat), fmt.Sprintf("%d tools", len(cat)))
	}
	wantContains(t, notes["node.toolgen_data.tg-5fm"], "1 tok->desc, 1 mcts", "8 vocabulary tokens")
	wantContains(t, notes["node.toolgen_data.tg"], "none skipped", `query it with prompt "none"`)
}

// TestToolgenDataStage2ExpandsGoldToolsWithTheEvaluationPrompt: one row
// per distinct gold tool, prompts as retrieve_parametric asks (K.2, or the
// bare query for TG), sample ids from the input; a gold tool outside the
// catalog fails the node unless unknown_tools = "skip".
func TestToolgenDataStage2ExpandsGoldToolsWithTheEvaluationPrompt(t *testing.T) {
	dir := toolgenDir(t)
	src := `node "catalog" "c" { path = "tools.jsonl" }
node "import" "train" { path = "queries.jsonl" }
`
	for _, c := range []string{"TG", "TG-5FM"} {
		src += fmt.Sprintf(`node "toolgen_data" %q {
  stage         = 2
  configuration = %q
  catalog       = node.catalog.c
  queries       = node.import.train
  unknown_tools = "skip"
}
`, strings.ToLower(c), c)
	}
	r := nodetest.Run(t, dir, src)
	type pair struct{ id, prompt, completion, tool string }
	for _, tc := range []struct {
		config string
		want   []pair
	}{
		{"TG", []pair{
			{"e1", "qr for my site", "<<QR A&&make>>", "QR A&&make"},
			{"m1", "rain and stocks", "<<Weather&&now>>", "Weather&&now"},
			{"m1", "rain and stocks", "<<Stocks&&quote>>", "Stocks&&quote"},
		}},
		{"TG-5FM", []pair{
			{"e1", ts.RetrievalPrompt("qr for my site"), "<<QR A>><<make>>", "QR A&&make"},
			{"m1", ts.RetrievalPrompt("rain and stocks"), "<<Weather>><<now>>", "Weather&&now"},
			{"m1", ts.RetrievalPrompt("rain and stocks"), "<<Stocks>><<quote>>", "Stocks&&quote"},
		}},
	} {
		addr := "node.toolgen_data." + strings.ToLower(tc.config)
		rows := nodetest.Read[toolsense.ToolGenRow](t, r, addr)
		var got []pair
		for _, row := range rows {
			got = append(got, pair{row.SampleID, row.Prompt, row.Completion, row.ToolName})
			if row.Stage != 2 || row.Format != ts.FormatQueryTok || row.Token != row.Completion || strings.Join(row.Tokens, "") != row.Token {
				t.Errorf("%s: row %+v", tc.config, row)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.config, got, tc.want)
		}
		wantContains(t, r.Notes(engine.EventDone)[addr], "3 rows of queries (1 with several gold tools), 3 pairs over 3 tools; 1 gold tools outside the catalog dropped")
	}

	r = nodetest.RunErr(t, dir, strings.Replace(src, `unknown_tools = "skip"`, "", 1))
	wantContains(t, nodeErr(t, r, "node.toolgen_data.tg"), "p.hcl:", "Gold tools outside the catalog", `1 gold tools of 1 rows of queries node.import.train are not in catalog node.catalog.c (first: ["Translate&&text"])`)
}

// TestToolgenDataStage2ReadsAGenericTable: other column names, gold tools
// as plain names or a list of names, no id column (rows numbered).
func TestToolgenDataStage2ReadsAGenericTable(t *testing.T) {
	dir := toolgenDir(t)
	write(t, dir, "generic.jsonl", `{"question": "stock price now", "gold": "Stocks&&quote"}
{"question": "qr codes", "gold": "[\"QR B&&make\", \"QR A&&make\"]"}
`)
	src := `node "catalog" "c" { path = "tools.jsonl" }
node "import" "g" { path = "generic.jsonl" }
node "toolgen_data" "s2" {
  stage         = 2
  configuration = "TG-SP"
  catalog       = node.catalog.c
  queries       = node.import.g
  query_column  = "question"
  tool_column   = "gold"
}
`
	r := nodetest.Run(t, dir, src)
	var got []string
	for _, row := range nodetest.Read[toolsense.ToolGenRow](t, r, "node.toolgen_data.s2") {
		got = append(got, row.SampleID+" "+row.Completion)
	}
	if want := []string{"row 1 <<Stocks&&quote>>", "row 2 <<QR B&&make>>", "row 2 <<QR A&&make>>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
	r = nodetest.RunErr(t, dir, strings.Replace(src, `tool_column   = "gold"`, `tool_column   = "answer"`, 1))
	wantContains(t, nodeErr(t, r, "node.toolgen_data.s2"), "p.hcl:9:", "Missing column", `no top-level column "answer"`)
	r = nodetest.RunErr(t, dir, strings.Replace(src, `tool_column   = "gold"`, "tool_column = \"gold\"\n  id_column = \"id\"", 1))
	wantContains(t, nodeErr(t, r, "node.toolgen_data.s2"), "p.hcl:10:", `no top-level column "id"`)
}

// TestToolgenDataRefusesBadConfig: each misuse is an error at its
// attribute, before anything runs.
func TestToolgenDataRefusesBadConfig(t *testing.T) {
	head := "node \"catalog\" \"c\" { path = \"tools.jsonl\" }\nnode \"import\" \"q\" { path = \"q.jsonl\" }\n" +
		"node \"neighbors\" \"n\" {\n  catalog = node.catalog.c\n  embedder = \"bm25\"\n}\nnode \"toolgen_data\" \"d\" {\n  catalog = node.catalog.c\n"
	for _, tc := range []struct{ body, want string }{
		{"stage = 1\nconfiguration = \"TG-4FM\"", `Unknown configuration; "TG-4FM": use one of TG, TG-SP, TG-3FM, TG-H, TG-5FM`},
		{"stage = 3\nconfiguration = \"TG\"", "Unknown stage"},
		{"stage = 1\nconfiguration = \"TG-3FM\"", "Hard negatives needed"},
		{"stage = 1\nconfiguration = \"TG\"\nnegatives = node.neighbors.n", "negatives is for MCTS"},
		{"stage = 1\nconfiguration = \"TG-H\"\nseed = 2", "seed is for MCTS"},
		{"stage = 1\nconfiguration = \"TG-SP\"\nmcts_negatives = 2", "mcts_negatives is for MCTS"},
		{"stage = 1\nconfiguration = \"TG-5FM\"\nnegatives = node.neighbors.n\nmcts_negatives = 0", "Invalid mcts_negatives"},
		{"stage = 1\nconfiguration = \"TG\"\nqueries = node.import.q", "queries is for stage 2"},
		{"stage = 1\nconfiguration = \"TG\"\nquery_column = \"q\"", "query_column is for stage 2"},
		{"stage = 2\nconfiguration = \"TG\"", "Training split needed"},
		{"stage = 2\nconfiguration = \"TG\"\nqueries = node.import.q\nnegatives = node.neighbors.n", "negatives is for stage 1"},
		{"stage = 2\nconfiguration = \"TG\"\nqueries = node.import.q\nseed = 1", "seed is for stage 1"},
		{"stage = 2\nconfiguration = \"TG\"\nqueries = node.import.q\nunknown_tools = \"keep\"", "Unknown unknown_tools"},
		{"stage = 2\nconfiguration = \"TG\"\nqueries = node.import.q\ntoken_close = \"\"", "Empty token spelling"},
	} {
		wantContains(t, configErr(t, head+tc.body+"\n}\n"), tc.want, "p.hcl:")
	}
}

// TestToolgenDataMCTSNeedsAPoolForEveryTool: negatives drawn for some
// tools only, or smaller than mcts_negatives, fail the node at negatives.
func TestToolgenDataMCTSNeedsAPoolForEveryTool(t *testing.T) {
	dir := toolgenDir(t)
	src := `node "catalog" "c" { path = "tools.jsonl" }
node "neighbors" "some" {
  catalog  = node.catalog.c
  embedder = "bm25"
  k        = 2
  seeds    = 3
}
node "toolgen_data" "d" {
  stage         = 1
  configuration = "TG-3FM"
  catalog       = node.catalog.c
  negatives     = node.neighbors.some
}
`
	r := nodetest.RunErr(t, dir, src)
	wantContains(t, nodeErr(t, r, "node.toolgen_data.d"), "p.hcl:12:", "Tools without a pool", "2 of the catalog's 5 tools have no pool in negatives node.neighbors.some")
	r = nodetest.RunErr(t, dir, strings.Replace(src, "seeds    = 3", "", 1))
	wantContains(t, nodeErr(t, r, "node.toolgen_data.d"), "p.hcl:12:", "Cannot write an MCTS item", "its pool has 2 distinct negatives, MCTS needs 4", "k ≥ mcts_negatives = 4")
}

// toolgenReleasedRRB is the released RRB file beside the repository,
// skipping the test without it (failing it in CI).
func toolgenReleasedRRB(t *testing.T) string {
	path, err := filepath.Abs("../../../shared/data/toolsense/toolsense-realistic-retrieval.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		msg := "ToolSense data is not at ../shared/data/toolsense beside the repository: " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// TestToolgenDataOnTheReleasedRRB: over the released RRB's 4,901-tool
// catalog, TG-5FM's Stage 1 gives every tool its hierarchical tokens and
// five formats (less those needing a description), and Stage 2 read from
// the released rows (as a stand-in for a training split of the same
// shape) gives one pair per gold tool, every one in the catalog.
func TestToolgenDataOnTheReleasedRRB(t *testing.T) {
	path := toolgenReleasedRRB(t)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pairs, queries := 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var row struct{ Tool json.RawMessage }
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		names, err := ts.GoldToolNames(string(row.Tool))
		if err != nil {
			t.Fatal(err)
		}
		pairs += len(names)
		queries++
	}
	dir := t.TempDir()
	r := nodetest.Run(t, dir, fmt.Sprintf(`node "import" "rrb" { path = %q }
node "catalog" "rrb" { from_rrb = node.import.rrb }
node "neighbors" "mcts" {
  catalog  = node.catalog.rrb
  embedder = "bm25"
  k        = 4
}
node "toolgen_data" "s1" {
  stage         = 1
  configuration = "TG-5FM"
  catalog       = node.catalog.rrb
  negatives     = node.neighbors.mcts
}
node "toolgen_data" "s2" {
  stage         = 2
  configuration = "TG-5FM"
  catalog       = node.catalog.rrb
  queries       = node.import.rrb
}
`, path))
	cat := nodetest.Read[toolsense.CatalogRow](t, r, "node.catalog.rrb")
	if len(cat) != 4901 {
		t.Fatalf("%d tools, want the released 4,901", len(cat))
	}
	s1 := nodetest.Read[toolsense.ToolGenRow](t, r, "node.toolgen_data.s1")
	counts := map[string]int{}
	for _, row := range s1 {
		counts[row.Format]++
		if len(row.Tokens) != 2 || row.Token != row.Tokens[0]+row.Tokens[1] {
			t.Fatalf("row %+v: not two hierarchical tokens", row)
		}
	}
	noDesc := 0
	for _, tool := range cat {
		if ts.Description(tool) == "" {
			noDesc++
		}
	}
	for _, f := range []string{ts.FormatDescTok, ts.FormatDescAPITok, ts.FormatDescAPITokEndpointTok} {
		if counts[f] != len(cat) {
			t.Errorf("%d %s rows, want one per tool (%d)", counts[f], f, len(cat))
		}
	}
	for _, f := range []string{ts.FormatTokDesc, ts.FormatMCTS} {
		if counts[f] != len(cat)-noDesc {
			t.Errorf("%d %s rows, want one per tool with a description (%d)", counts[f], f, len(cat)-noDesc)
		}
	}
	c, _ := ts.LookupToolGenConfig("TG-5FM")
	vocab, err := ts.ToolGenData{Config: c, Open: "<<", Close: ">>"}.Vocabulary(cat)
	if err != nil {
		t.Fatal(err)
	}
	if nt := toolsense.NewTokens(s1); !slices.Equal(nt, vocab) {
		t.Errorf("NewTokens gives %d tokens, want the catalog's %d", len(nt), len(vocab))
	}
	s2 := nodetest.Read[toolsense.ToolGenRow](t, r, "node.toolgen_data.s2")
	if len(s2) != pairs {
		t.Errorf("%d stage 2 rows, want one per gold tool of the %d rows (%d)", len(s2), queries, pairs)
	}
	t.Logf("released RRB: %d tools (%d without a description), %d stage 1 rows, %d vocabulary tokens, %d stage 2 pairs from %d queries",
		len(cat), noDesc, len(s1), len(vocab), len(s2), queries)
}
