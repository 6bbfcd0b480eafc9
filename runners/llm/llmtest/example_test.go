package llmtest_test

import (
	"context"
	"fmt"
	"regexp"

	"github.com/lacuna-dev/lacuna/runners/llm"
	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// A scripted model that knows one API, behind a server that fails a third
// of the requests: the client's retries hide every fault, and the server's
// counters show that each call was answered exactly once.
func Example() {
	srv := llmtest.New(llmtest.Config{
		Models: []string{"coder"},
		Script: []llmtest.Rule{
			{Regexp: regexp.MustCompile(`(?i)sum`), Answer: "```go\nfunc Sum(xs []int) int { return lo.Sum(xs) }\n```"},
			// A choice comes as response_format's string enum: the
			// answer is a JSON string.
			{Contains: "classify", Answer: `"API_misuse"`},
		},
		Default: "I do not know.",
		Faults:  llmtest.Spread(0.3, llmtest.TooMany, llmtest.ServerError, llmtest.Drop),
		Seed:    1,
		// No Retry-After: the example should not wait.
		RetryAfter: "-",
	})
	defer srv.Close()

	c := llm.New(llm.Endpoint{BaseURL: srv.URL(), ServedName: "coder"})
	ask := func(prompt string, choice ...string) *llm.Response {
		r, err := c.Do(context.Background(), llm.Call{Request: llm.Request{
			API: "chat", Messages: []llm.Message{{Role: "user", Content: prompt}}, Choice: choice}})
		if err != nil {
			panic(err)
		}
		return r
	}
	code, how := llm.ExtractCode(ask("Sum a slice with lo.").Text, "go")
	fmt.Println(how, code)
	r := ask("classify this failure", "API_misuse", "OK")
	fmt.Println(r.Text, *r.SchemaHeld)
	fmt.Println(ask("What is gonum?").Text)

	for _, call := range srv.Calls() {
		fmt.Println(call.Answers, "answer to", call.Request.Text())
	}
	// Output:
	// fence:go func Sum(xs []int) int { return lo.Sum(xs) }
	// "API_misuse" true
	// I do not know.
	// 1 answer to Sum a slice with lo.
	// 1 answer to classify this failure
	// 1 answer to What is gonum?
}
