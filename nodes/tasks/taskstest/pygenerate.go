package taskstest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// Scenario is one task of a scripted generator answer.
type Scenario struct{ Difficulty, Description, Program string }

// AnswerJSON is a generator answer holding ts, as the schema asks.
func AnswerJSON(ts ...Scenario) string {
	var out struct {
		Tasks []map[string]string `json:"tasks"`
	}
	for _, t := range ts {
		out.Tasks = append(out.Tasks, map[string]string{"difficulty": t.Difficulty, "description": t.Description, "program": t.Program})
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return string(b)
}

// PyGraded are the scripted model's graded answers for the Python
// fixture (PyStats; pipelines' fixture is the same without Pair), by the
// API the prompt is about. scale and Pair give three good tasks; clamp's
// hard task names the API in its description; ordered's medium span never
// calls it; box's medium reference fails before its call (a KeyError) and
// its hard script marks no span, so box falls back to PyVariants.
var PyGraded = map[string]string{
	"pystats.scale": AnswerJSON(
		Scenario{"easy", "Set doubled to the prices, each multiplied by the library's default factor.",
			"from pystats import scale\n\nprices = [3, 7, 12]\n# <MASK>\ndoubled = scale(prices)\n# </MASK>\nprint(doubled)\n"},
		Scenario{"medium", "Collect the length of every word of words into a list lengths, then set tripled to those lengths multiplied by 3 with the library.",
			"from pystats import scale\n\nwords = ['go', 'spy', 'harness']\n# <MASK>\nlengths = []\nfor w in words:\n    lengths.append(len(w))\ntripled = scale(lengths, 3)\n# </MASK>\nprint(tripled)\n"},
		Scenario{"hard", "Sort readings from the smallest to the largest with the library (ranked), set scaled to ranked with every number multiplied by 10, and grand to the library's sum of scaled.",
			"import pystats\n\nreadings = [4, 1, 3]\n# <MASK>\nranked = pystats.ordered(readings)\nscaled = pystats.scale(ranked, 10)\ngrand = pystats.total(scaled)\n# </MASK>\nprint(scaled, grand)\n"},
	),
	"pystats.clamp": AnswerJSON(
		Scenario{"easy", "Set level to volume limited to the closed range from 0 to 100.",
			"import pystats\n\nvolume = 73\n# <MASK>\nlevel = pystats.clamp(volume, 0, 100)\n# </MASK>\nprint('level', level)\n"},
		Scenario{"medium", "Build the list safe from raw: every value limited to the closed range from 0 to 10, in order.",
			"from pystats import clamp\n\nraw = [-5, 3, 42, 8]\n# <MASK>\nsafe = []\nfor v in raw:\n    safe.append(clamp(v, 0, 10))\n# </MASK>\nprint(safe)\n"},
		Scenario{"hard", "Use pystats.clamp to bound every reading before adding them up with the library.",
			"import pystats\n\nreadings = [4, 40]\n# <MASK>\nbounded = [pystats.clamp(r, 0, 10) for r in readings]\nsummed = pystats.total(bounded)\n# </MASK>\nprint(summed)\n"},
	),
	"pystats.ordered": AnswerJSON(
		Scenario{"easy", "Set ranking to scores from the largest to the smallest.",
			"from pystats import ordered\n\nscores = [30, 10, 20]\n# <MASK>\nranking = ordered(scores, reverse=True)\n# </MASK>\nprint(ranking)\n"},
		Scenario{"medium", "Keep the even numbers of nums and set top to them in increasing order.",
			"from pystats import ordered\n\nnums = [5, 2, 9, 4]\n# <MASK>\nevens = [n for n in nums if n % 2 == 0]\ntop = sorted(evens)\n# </MASK>\nprint(top)\n"},
		Scenario{"hard", "Set ranked to data from the smallest to the largest and summed to the library's sum of ranked.",
			"import pystats\n\ndata = [3, 1, 2]\n# <MASK>\nranked = pystats.ordered(data)\nsummed = pystats.total(ranked)\n# </MASK>\nprint(ranked, summed)\n"},
	),
	"pystats.box": AnswerJSON(
		Scenario{"easy", "Set packed to item wrapped in a list of one item with the library.",
			"from pystats import box\n\nitem = 7\n# <MASK>\npacked = box(item)\n# </MASK>\nprint(packed)\n"},
		Scenario{"medium", "Wrap the count of key b of counts with the library into packed.",
			"from pystats import box\n\ncounts = {'a': 2}\n# <MASK>\npacked = box(counts['b'])\n# </MASK>\nprint(packed)\n"},
		Scenario{"hard", "Wrap every total of the library in a list.",
			"import pystats\n\nxs = [1, 2]\nwrapped = pystats.box(pystats.total(xs))\nprint(wrapped)\n"},
	),
	"pystats.Pair": AnswerJSON(
		Scenario{"easy", "Set p to a pair object of the library holding left first and right second.",
			"from pystats import Pair\n\nleft = 1\nright = 2\n# <MASK>\np = Pair(left, right)\n# </MASK>\nprint(p)\n"},
		Scenario{"medium", "Set pairs to a list holding, for every name of names in order, a pair object of the library of its index and the name.",
			"from pystats import Pair\n\nnames = ['x', 'y', 'z']\n# <MASK>\npairs = []\nfor i, n in enumerate(names):\n    pairs.append(Pair(i, n))\n# </MASK>\nprint(pairs)\n"},
		Scenario{"hard", "Set p to a pair object of the library holding a and b, and s to the library's sum of its first and second values.",
			"import pystats\n\na = 2\nb = 5\n# <MASK>\np = pystats.Pair(a, b)\ns = pystats.add(p.a, p.b)\n# </MASK>\nprint(p, s)\n"},
	),
}

// PyVariants are the easy-variant answers: only box's is asked.
var PyVariants = map[string]string{
	"pystats.box": AnswerJSON(
		Scenario{"easy", "Set wrapped to the text letters wrapped in a list of one item with the library.",
			"from pystats import box\n\nletters = 'xyz'\n# <MASK>\nwrapped = box(letters)\n# </MASK>\nprint(wrapped)\n"},
		Scenario{"easy", "Set boxes to a list of every number from 0 below n, each wrapped in a list of one item with the library.",
			"from pystats import box\n\nn = 4\n# <MASK>\nboxes = [box(i) for i in range(n)]\n# </MASK>\nprint(boxes)\n"},
		Scenario{"easy", "Wrap value in a list of one item with the library and set inner to that list's only item.",
			"from pystats import box\n\nvalue = 2.5\n# <MASK>\ninner = box(value)[0]\n# </MASK>\nprint(inner)\n"},
	),
}

// GeneratorServer answers the llm generator's prompts from graded and
// variants, by the API the prompt names ("The API: NAME ("); a prompt
// about another API, or for easy variants of an API without them, fails
// the test.
func GeneratorServer(t *testing.T, graded, variants map[string]string) *llmtest.Server {
	srv := llmtest.New(llmtest.Config{Models: []string{"test-model"}, Script: []llmtest.Rule{{Reply: func(q llmtest.Request) string {
		text := q.Text()
		for api := range graded {
			if !strings.Contains(text, "The API: "+api+" (") {
				continue
			}
			if strings.Contains(text, "Write three easy tasks about") {
				if a, ok := variants[api]; ok {
					return a
				}
				t.Errorf("%s: asked for easy variants", api)
				return `{"tasks": []}`
			}
			return graded[api]
		}
		t.Errorf("a prompt about no scripted API:\n%s", text)
		return "?"
	}}}})
	t.Cleanup(srv.Close)
	return srv
}

// PyLLMTasksPipeline is PyTasksPipeline with the llm generator asking the
// model served at url.
func PyLLMTasksPipeline(url string) string {
	const node = "node \"tasks\" \"stats\" {\n  bundles   = node.bundle.stats\n  ecosystem = \"python\"\n}\n"
	if !strings.Contains(PyTasksPipeline, node) {
		panic("taskstest: PyTasksPipeline has no tasks node to change")
	}
	return ModelBlock(url) + strings.Replace(PyTasksPipeline, node,
		"node \"tasks\" \"stats\" {\n  bundles   = node.bundle.stats\n  ecosystem = \"python\"\n  generator = \"llm\"\n  model     = model.coder\n}\n", 1)
}
