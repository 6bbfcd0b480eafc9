package pyapi

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
)

//go:embed tests.py
var testsHelper string

// TestsHelperSource is the embedded helper TestExamples runs; callers
// that cache examples put its digest in their key.
func TestsHelperSource() string { return testsHelper }

// OriginTest is an example made from a test function of a source
// distribution's test suite (TestExamples): a standalone script whose
// steps state no output, valid when it runs to its end (its asserts
// held). Executor.Run runs it as a fenced block.
const OriginTest = "test"

// TestExamples makes the test functions under root (an unpacked source
// distribution) that refer to one of names standalone programs, by the
// embedded helper as a subprocess of python (parsing only: nothing of
// the library or its tests is imported or run): a pytest function's body,
// or a unittest.TestCase method's with its self.assert* calls made plain
// asserts and setUp's attributes made names, after parametrize's first
// case and the fixtures it can inline, preceded by what the program uses
// of its files' module level (imports pruned to the names used). Each
// Example is OriginTest, named by its pytest node id
// ("tests/test_more.py::ChunkedTests::test_even"), File its test file;
// Calls are every name the program loads or reads as an attribute (what
// ties it to APIs, more than the names it calls: a class used as an
// annotation). notStandalone counts the tests that refer to names but
// could not be made standalone, by reason ("fixture", "self used
// otherwise", "relative import", ...).
func TestExamples(ctx context.Context, python, root string, names []string) (examples []Example, notStandalone map[string]int, err error) {
	names = append([]string(nil), names...)
	sort.Strings(names)
	in, err := json.Marshal(struct {
		Root  string   `json:"root"`
		Names []string `json:"names"`
	}{root, names})
	if err != nil {
		return nil, nil, err
	}
	out, err := runHelperInput(ctx, python, []string{"-I", "-S", "-B", "-X", "utf8", "-c", testsHelper}, in)
	if err != nil {
		return nil, nil, fmt.Errorf("test examples in %s: %w", root, err)
	}
	var res struct {
		Examples []struct {
			Name  string   `json:"name"`
			File  string   `json:"file"`
			Code  string   `json:"code"`
			Steps []Step   `json:"steps"`
			Refs  []string `json:"refs"`
		} `json:"examples"`
		Skipped map[string]int `json:"skipped"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, nil, fmt.Errorf("test examples in %s: helper output: %w", root, err)
	}
	for _, r := range res.Examples {
		e := newExample(r.Name, r.Steps)
		e.Origin, e.File, e.Text, e.Code, e.Calls = OriginTest, r.File, r.Code, r.Code, r.Refs
		examples = append(examples, e)
	}
	if res.Skipped == nil {
		res.Skipped = map[string]int{}
	}
	return examples, res.Skipped, nil
}
