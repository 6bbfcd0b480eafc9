package toolsense

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// toolgenTools: two services; "QR B&&image" has no description (no
// tok->desc or mcts example); "Tik&&trending&&now" has no titles, so its
// hierarchical tokens come from tool_name cut at its first "&&".
var toolgenTools = []CatalogRow{
	{ToolName: "QR A&&make", ToolTitle: "QR A", ToolDescription: "QR codes <fast> & free", APITitle: "make", APIDescription: "make a code"},
	{ToolName: "QR B&&image", ToolTitle: "QR B", APITitle: "image"},
	{ToolName: "QR B&&make", ToolTitle: "QR B", ToolDescription: "QR images", APITitle: "make", APIDescription: "a PNG"},
	{ToolName: "Tik&&trending&&now", ToolDescription: "trends"},
	{ToolName: "Weather&&now", ToolTitle: "Weather", ToolDescription: "forecasts", APITitle: "now", APIDescription: "current weather"},
}

// TestToolGenConfigsFollowTable1: each of Table 1's configurations has its
// token format, system prompt and Stage 1 formats, and asks
// retrieve_parametric for the prompt it was trained with.
func TestToolGenConfigsFollowTable1(t *testing.T) {
	for _, tc := range []struct {
		name, tokens, prompt string
		sp                   bool
		formats              []string
	}{
		{"TG", FlatTokens, "none", false, []string{FormatDescTok}},
		{"TG-SP", FlatTokens, "k2", true, []string{FormatDescTok}},
		{"TG-3FM", FlatTokens, "k2", true, []string{FormatDescTok, FormatTokDesc, FormatMCTS}},
		{"TG-H", HierarchicalTokens, "k2", true, []string{FormatDescTok}},
		{"TG-5FM", HierarchicalTokens, "k2", true, []string{FormatDescTok, FormatDescAPITok, FormatDescAPITokEndpointTok, FormatTokDesc, FormatMCTS}},
	} {
		c, ok := LookupToolGenConfig(tc.name)
		if !ok {
			t.Fatalf("no configuration %s", tc.name)
		}
		if c.TokenFormat != tc.tokens || c.SystemPrompt != tc.sp || !reflect.DeepEqual(c.Formats, tc.formats) || c.Prompt() != tc.prompt {
			t.Errorf("%s = %+v (prompt %s), want %s tokens, system prompt %v, formats %v, prompt %s", tc.name, c, c.Prompt(), tc.tokens, tc.sp, tc.formats, tc.prompt)
		}
	}
	if got := ToolGenConfigNames(); !reflect.DeepEqual(got, []string{"TG", "TG-SP", "TG-3FM", "TG-H", "TG-5FM"}) {
		t.Errorf("names %v", got)
	}
	if _, ok := LookupToolGenConfig("tg"); ok {
		t.Error("names are case-sensitive")
	}
	c, _ := LookupToolGenConfig("TG-5FM")
	c.Formats[0] = "changed"
	if again, _ := LookupToolGenConfig("TG-5FM"); again.Formats[0] != FormatDescTok {
		t.Error("a caller's change to Formats reached the table")
	}
}

// TestToolGenInfoIsCompactJSONWithoutEscapes: the tool information keeps
// <, > and & as they are, leaves out tool_name and the missing fields.
func TestToolGenInfoIsCompactJSONWithoutEscapes(t *testing.T) {
	for _, tc := range []struct {
		tool CatalogRow
		want string
	}{
		{toolgenTools[0], `{"tool_title":"QR A","tool_description":"QR codes <fast> & free","api_title":"make","api_description":"make a code"}`},
		{toolgenTools[1], `{"tool_title":"QR B","api_title":"image"}`},
		{toolgenTools[3], `{"tool_description":"trends"}`},
		{CatalogRow{ToolName: "x&&y", ToolDescription: "a \"quoted\"\nline"}, `{"tool_description":"a \"quoted\"\nline"}`},
	} {
		if got := ToolInfo(tc.tool); got != tc.want {
			t.Errorf("ToolInfo(%s) = %s, want %s", tc.tool.ToolName, got, tc.want)
		}
	}
}

// TestToolGenMemorizationWritesTheK1Prompts: each format's prompt is its
// K.1 figure filled in, and its completion the target Appendix C.1 names;
// TG's desc->tok is the tool information alone.
func TestToolGenMemorizationWritesTheK1Prompts(t *testing.T) {
	info := ToolInfo(toolgenTools[0])
	const k1 = "You will be provided with the information about the tool in the JSON format. Your task is to predict the tool that corresponds to the given tool information. You only need to predict the tool. Please don’t include any additional text in your response. The tool information is provided below:\n"
	const k1api = "You will be provided with the information about the tool in the JSON format. Your task is to identify the API this tool belongs to and produce its corresponding API token. Only respond with the API token and nothing else. The tool information is provided below:\n"
	const k1ep = "You will be provided with the information about the tool in the JSON format along with its API. Your task is to identify the Endpoint this tool belongs to within that API and produce its corresponding Endpoint token. Only respond with the Endpoint token and nothing else. The tool information and API are provided below:\nTool Information: "
	const k1rev = "You will be provided with a tool representation tokens. Your task is to describe what this tool does in plain language. Please don’t include any additional text in your response other than the description. The tool representation is provided below:\n"
	type pc struct{ format, prompt, completion string }
	for _, tc := range []struct {
		config string
		want   []pc
	}{
		{"TG", []pc{{FormatDescTok, info, "<<QR A&&make>>"}}},
		{"TG-SP", []pc{{FormatDescTok, k1 + info, "<<QR A&&make>>"}}},
		{"TG-H", []pc{{FormatDescTok, k1 + info, "<<QR A>><<make>>"}}},
		{"TG-3FM", []pc{
			{FormatDescTok, k1 + info, "<<QR A&&make>>"},
			{FormatTokDesc, k1rev + "<<QR A&&make>>", "QR codes <fast> & free make a code"},
			{FormatMCTS, "", "<<QR A&&make>>"},
		}},
		{"TG-5FM", []pc{
			{FormatDescTok, k1 + info, "<<QR A>><<make>>"},
			{FormatDescAPITok, k1api + info, "<<QR A>>"},
			{FormatDescAPITokEndpointTok, k1ep + info + "\nAPI: <<QR A>>", "<<make>>"},
			{FormatTokDesc, k1rev + "<<QR A>><<make>>", "QR codes <fast> & free make a code"},
			{FormatMCTS, "", "<<QR A>><<make>>"},
		}},
	} {
		c, _ := LookupToolGenConfig(tc.config)
		d := ToolGenData{Config: c, Open: "<<", Close: ">>", Negatives: 2, Seed: 1}
		exs, skipped, err := d.Memorization(toolgenTools[0], toolgenTools[1:])
		if err != nil || len(skipped) > 0 {
			t.Fatalf("%s: %v, skipped %v", tc.config, err, skipped)
		}
		var got []pc
		for _, ex := range exs {
			p := ex.Prompt
			if ex.Format == FormatMCTS {
				p = "" // TestToolGenMCTSOptionsAreTheNearestDistinctNegativesShuffled
			}
			got = append(got, pc{ex.Format, p, ex.Completion})
			if ex.ToolName != "QR A&&make" || ex.Token != tc.want[0].completion {
				t.Errorf("%s %s: tool %q token %q", tc.config, ex.Format, ex.ToolName, ex.Token)
			}
			if strings.Join(ex.Tokens, "") != ex.Token {
				t.Errorf("%s %s: tokens %q do not make token %q", tc.config, ex.Format, ex.Tokens, ex.Token)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.config, got, tc.want)
		}
	}
}

// TestToolGenMCTSOptionsAreTheNearestDistinctNegativesShuffled: the options
// are the tool and its first K distinct negatives (a repeat of a token, or
// of the tool's own, is passed over), one per line in the order the seed
// and the tool's name draw; the description is the tool's; a pool too
// small is an error naming the tool.
func TestToolGenMCTSOptionsAreTheNearestDistinctNegativesShuffled(t *testing.T) {
	c, _ := LookupToolGenConfig("TG-3FM")
	tool := toolgenTools[0]
	pool := []CatalogRow{toolgenTools[2], tool, toolgenTools[2], toolgenTools[4], toolgenTools[1]}
	for _, seed := range []uint64{1, 2, 3} {
		d := ToolGenData{Config: c, Open: "<<", Close: ">>", Negatives: 2, Seed: seed}
		exs, _, err := d.Memorization(tool, pool)
		if err != nil {
			t.Fatal(err)
		}
		mcts := exs[2]
		opts := []string{"<<QR A&&make>>", "<<QR B&&make>>", "<<Weather&&now>>"}
		perm := rand.New(rand.NewPCG(seed, xxhash.Sum64String(tool.ToolName))).Perm(3)
		var shown []string
		for _, j := range perm {
			shown = append(shown, opts[j])
		}
		want := "[START OF TOOL DESCRIPTION]\nQR codes <fast> & free make a code\n[END OF TOOL DESCRIPTION]\n[START OF OPTIONS]\n" +
			strings.Join(shown, "\n") + "\n[END OF OPTIONS]\nFrom the above new line-separated options, select the correct tool."
		if mcts.Format != FormatMCTS || !strings.Contains(mcts.Prompt, want) || !strings.HasPrefix(mcts.Prompt, "You will be provided with the description of a tool") {
			t.Errorf("seed %d: MCTS prompt\n%s\nwant it to hold\n%s", seed, mcts.Prompt, want)
		}
		again, _, _ := d.Memorization(tool, pool)
		if !reflect.DeepEqual(again, exs) {
			t.Errorf("seed %d: a second call differs", seed)
		}
	}
	d := ToolGenData{Config: c, Open: "<<", Close: ">>", Negatives: 4, Seed: 1}
	if _, _, err := d.Memorization(tool, pool); err == nil || !strings.Contains(err.Error(), `tool "QR A&&make": its pool has 3 distinct negatives, MCTS needs 4`) {
		t.Errorf("a small pool: %v", err)
	}
	// Over many tools the seed changes some orders.
	differ := 0
	for i := range 20 {
		anchor := CatalogRow{ToolName: "T&&" + string(rune('a'+i)), ToolDescription: "d"}
		a, _ := ToolGenData{Config: c, Open: "<<", Close: ">>", Negatives: 4, Seed: 1}.mctsOptions(anchor, "<<"+anchor.ToolName+">>", toolgenTools)
		b, _ := ToolGenData{Config: c, Open: "<<", Close: ">>", Negatives: 4, Seed: 2}.mctsOptions(anchor, "<<"+anchor.ToolName+">>", toolgenTools)
		if !slices.Equal(a, b) {
			differ++
		}
		if !slices.Contains(a, "<<"+anchor.ToolName+">>") || len(a) != 5 {
			t.Fatalf("options %v", a)
		}
	}
	if differ == 0 {
		t.Error("seeds 1 and 2 order every item's options alike")
	}
}

// TestToolGenMemorizationSkipsWhatNeedsADescription: a tool without a
// description has desc->tok (and the hierarchical steps) but no tok->desc
// and no mcts; a tool without titles splits its tool_name.
func TestToolGenMemorizationSkipsWhatNeedsADescription(t *testing.T) {
	c, _ := LookupToolGenConfig("TG-5FM")
	d := ToolGenData{Config: c, Open: "<<", Close: ">>", Negatives: 1, Seed: 1}
	exs, skipped, err := d.Memorization(toolgenTools[1], toolgenTools[:1])
	if err != nil {
		t.Fatal(err)
	}
	var formats []string
	for _, ex := range exs {
		formats = append(formats, ex.Format)
	}
	if !reflect.DeepEqual(formats, []string{FormatDescTok, FormatDescAPITok, FormatDescAPITokEndpointTok}) || !reflect.DeepEqual(skipped, []string{FormatTokDesc, FormatMCTS}) {
		t.Errorf("formats %v skipped %v", formats, skipped)
	}
	exs, _, err = d.Memorization(toolgenTools[3], toolgenTools[:1])
	if err != nil {
		t.Fatal(err)
	}
	if exs[1].Completion != "<<Tik>>" || exs[2].Completion != "<<trending&&now>>" || exs[0].Completion != "<<Tik>><<trending&&now>>" {
		t.Errorf("untitled tool: %q %q %q", exs[0].Completion, exs[1].Completion, exs[2].Completion)
	}
	_, _, err = d.Memorization(CatalogRow{ToolName: "lonely"}, nil)
	if err == nil || !strings.Contains(err.Error(), `tool "lonely" has no tool_title and api_title`) {
		t.Errorf("unsplittable tool: %v", err)
	}
}

// TestToolGenPlaceholdersAreFilledOnce: a value holding a placeholder's
// text stays as it is.
func TestToolGenPlaceholdersAreFilledOnce(t *testing.T) {
	c, _ := LookupToolGenConfig("TG-5FM")
	tool := CatalogRow{ToolName: "A&&b", ToolTitle: "A", APITitle: "b", ToolDescription: "see {tool_options} and {api_token}"}
	d := ToolGenData{Config: c, Open: "<<", Close: ">>", Negatives: 1, Seed: 1}
	exs, _, err := d.Memorization(tool, toolgenTools)
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range exs {
		if ex.Format == FormatMCTS && !strings.Contains(ex.Prompt, "see {tool_options} and {api_token}\n[END OF TOOL DESCRIPTION]") {
			t.Errorf("mcts prompt filled twice:\n%s", ex.Prompt)
		}
		if ex.Format == FormatDescAPITokEndpointTok && !strings.Contains(ex.Prompt, `"tool_description":"see {tool_options} and {api_token}"`) {
			t.Errorf("endpoint prompt filled twice:\n%s", ex.Prompt)
		}
	}
}

// TestToolGenRetrievalUsesTheEvaluationPrompt: a Stage 2 prompt is what
// retrieve_parametric sends (RetrievalPrompt with the system prompt, the
// bare query without), its completion the tool's token sequence.
func TestToolGenRetrievalUsesTheEvaluationPrompt(t *testing.T) {
	for _, tc := range []struct {
		config, prompt, completion string
	}{
		{"TG", "make me a QR code", "<<QR A&&make>>"},
		{"TG-SP", RetrievalPrompt("make me a QR code"), "<<QR A&&make>>"},
		{"TG-3FM", RetrievalPrompt("make me a QR code"), "<<QR A&&make>>"},
		{"TG-H", RetrievalPrompt("make me a QR code"), "<<QR A>><<make>>"},
		{"TG-5FM", RetrievalPrompt("make me a QR code"), "<<QR A>><<make>>"},
	} {
		c, _ := LookupToolGenConfig(tc.config)
		ex, err := ToolGenData{Config: c, Open: "<<", Close: ">>"}.Retrieval("make me a QR code", toolgenTools[0])
		if err != nil {
			t.Fatal(err)
		}
		if ex.Format != FormatQueryTok || ex.Prompt != tc.prompt || ex.Completion != tc.completion || ex.Token != tc.completion || ex.ToolName != "QR A&&make" {
			t.Errorf("%s: %+v", tc.config, ex)
		}
	}
	if !strings.HasSuffix(RetrievalPrompt("q"), "The user query is provided below:\nq") {
		t.Errorf("K.2 prompt changed: %q", RetrievalPrompt("q"))
	}
}

// TestToolGenVocabularyIsDistinctInCatalogOrder: flat, one token per tool;
// hierarchical, API tokens and endpoint tokens shared between tools once;
// another spelling throughout.
func TestToolGenVocabularyIsDistinctInCatalogOrder(t *testing.T) {
	for _, tc := range []struct {
		config, open, close string
		want                []string
	}{
		{"TG", "<<", ">>", []string{"<<QR A&&make>>", "<<QR B&&image>>", "<<QR B&&make>>", "<<Tik&&trending&&now>>", "<<Weather&&now>>"}},
		{"TG-H", "<<", ">>", []string{"<<QR A>>", "<<make>>", "<<QR B>>", "<<image>>", "<<Tik>>", "<<trending&&now>>", "<<Weather>>", "<<now>>"}},
		{"TG-SP", "[", "]", []string{"[QR A&&make]", "[QR B&&image]", "[QR B&&make]", "[Tik&&trending&&now]", "[Weather&&now]"}},
	} {
		c, _ := LookupToolGenConfig(tc.config)
		got, err := ToolGenData{Config: c, Open: tc.open, Close: tc.close}.Vocabulary(toolgenTools)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q %v, want %q", tc.config, got, err, tc.want)
		}
	}
}

// TestToolGenGoldToolNamesReadEveryShape: a tool object, a list of them,
// a list of names or one name; repeats dropped; nothing is an error.
func TestToolGenGoldToolNamesReadEveryShape(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want []string
		err  string
	}{
		{`{"tool_name": "A&&b", "tool_title": "A"}`, []string{"A&&b"}, ""},
		{` [{"tool_name": "A&&b"}, {"tool_name": "C&&d"}, {"tool_name": "A&&b"}]`, []string{"A&&b", "C&&d"}, ""},
		{`["A&&b", "C  D&&e"]`, []string{"A&&b", "C  D&&e"}, ""},
		{"Thai Drivers License OCR&&Driver's  License", []string{"Thai Drivers License OCR&&Driver's  License"}, ""},
		{"", nil, "no gold tool"},
		{"[]", nil, "no gold tool"},
		{`{"tool_name": "None"}`, nil, "gold tool 1 has no tool_name"},
		{`[1, 2]`, nil, "neither a tool object"},
		{`{"tool_name": `, nil, "neither a tool object"},
		{`[""]`, nil, "an empty tool name"},
	} {
		got, err := GoldToolNames(tc.raw)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v %v, want error %q", tc.raw, got, err, tc.err)
			}
		case err != nil || !reflect.DeepEqual(got, tc.want):
			t.Errorf("%q: %q %v, want %q", tc.raw, got, err, tc.want)
		}
	}
}

// TestToolGenPromptDigestCoversTheK1Prompts: the digest is stable and
// differs from the K.2 prompt's.
func TestToolGenPromptDigestCoversTheK1Prompts(t *testing.T) {
	if a, b := ToolGenPromptDigest(), ToolGenPromptDigest(); a != b || len(a) != 16 || a == RetrievalPromptDigest() {
		t.Errorf("digest %q, again %q", a, b)
	}
}

// A tool's desc->tok example in TG (flat tokens, no system prompt: the
// prompt is the tool's information alone) and TG-H (hierarchical tokens),
// and its Stage 2 example in TG.
func ExampleToolGenData_Memorization() {
	tool := CatalogRow{ToolName: "TikTok&&trending", ToolTitle: "TikTok", ToolDescription: "Short videos",
		APITitle: "trending", APIDescription: "Trending videos"}
	for _, name := range []string{"TG", "TG-H"} {
		c, _ := LookupToolGenConfig(name)
		d := ToolGenData{Config: c, Open: DefaultTokenOpen, Close: DefaultTokenClose}
		exs, _, _ := d.Memorization(tool, nil)
		fmt.Printf("%s %s → %s %q\n", name, exs[0].Format, exs[0].Completion, exs[0].Tokens)
		if name == "TG" {
			fmt.Println(exs[0].Prompt)
			ex, _ := d.Retrieval("what is trending?", tool)
			fmt.Printf("%s %s → %s\n", ex.Format, ex.Prompt, ex.Completion)
		}
	}
	// Output:
	// TG desc->tok → <<TikTok&&trending>> ["<<TikTok&&trending>>"]
	// {"tool_title":"TikTok","tool_description":"Short videos","api_title":"trending","api_description":"Trending videos"}
	// query->tok what is trending? → <<TikTok&&trending>>
	// TG-H desc->tok → <<TikTok>><<trending>> ["<<TikTok>>" "<<trending>>"]
}
